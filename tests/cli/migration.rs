//! Ledgers written by questions.mjs open and upgrade in place; newer ones are refused.

use rusqlite::Connection;

use crate::common::*;

/// The table questions.mjs creates, with no migration history, filled as it fills it.
fn old_ledger(l: &Ledger) {
    let conn = Connection::open(&l.path).unwrap();
    conn.execute_batch(
        "CREATE TABLE questions (
           id INTEGER PRIMARY KEY AUTOINCREMENT, stage TEXT NOT NULL, group_name TEXT,
           question TEXT NOT NULL, proposed TEXT, required INTEGER NOT NULL DEFAULT 1,
           status TEXT NOT NULL DEFAULT 'pending', answer TEXT, created_at TEXT NOT NULL,
           answered_at TEXT);
         INSERT INTO questions (stage, group_name, question, proposed, required, status, answer, created_at, answered_at)
           VALUES ('intake', 'Goal', 'What is the goal?', 'A blog', 1, 'answered', 'A dashboard',
                   '2026-01-02T03:04:05.678Z', '2026-01-02T04:00:00.000Z');
         INSERT INTO questions (stage, group_name, question, proposed, required, status, created_at)
           VALUES ('intake', 'Risk', 'Risk level?', 'medium', 0, 'pending', '2026-01-02T03:04:06.000Z');
         INSERT INTO questions (stage, question, required, status, created_at)
           VALUES ('intake', 'Deadline?', 1, 'pending', '2026-01-02T03:04:07.000Z');
         INSERT INTO questions (stage, question, required, status, created_at)
           VALUES ('design', 'Gone?', 1, 'pending', '2026-01-02T03:04:08.000Z');
         DELETE FROM questions WHERE id = 4;",
    )
    .unwrap();
}

#[test]
fn an_old_ledger_upgrades_with_nothing_lost_and_ids_continuing() {
    crate::sqlite_only!();
    let l = Ledger::new();
    old_ledger(&l);

    let list = l.ok(["list"]);
    assert_eq!(list["count"], 3);
    let q = &list["questions"];
    assert_eq!(q[0]["id"], 1);
    assert_eq!(q[0]["answer"], "A dashboard");
    assert_eq!(q[0]["status"], "answered");
    assert_eq!(q[0]["created_at"], "2026-01-02T03:04:05.678Z");
    assert_eq!(q[0]["answered_at"], "2026-01-02T04:00:00.000Z");
    assert_eq!(q[0]["updated_at"], "2026-01-02T04:00:00.000Z");
    assert_eq!(q[0]["source"], "cli");
    assert_eq!(q[1]["required"], false);
    assert_eq!(q[1]["proposed"], "medium");
    assert_eq!(q[2]["group_name"], serde_json::Value::Null);

    let run = l.run(["check", "--stage", "intake"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json["pending"][0]["id"], 3);

    // The deleted row's id 4 is not reused: ids continue where the old ledger stopped.
    assert_eq!(l.log("intake", "New?"), 5);
    l.ok(["answer", "--id", "3", "--answer", "Friday"]);
    l.ok(["answer", "--id", "5", "--answer", "Yes"]);
    assert_eq!(l.ok(["check", "--stage", "intake"])["gate"], "pass");

    // The old script's own statements still work on the upgraded table.
    let conn = Connection::open(&l.path).unwrap();
    conn.execute(
        "INSERT INTO questions (stage, group_name, question, proposed, required, created_at) VALUES ('intake', NULL, 'Old?', NULL, 1, '2026-01-03T00:00:00.000Z')",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE questions SET status = 'answered', answer = 'by mjs', answered_at = '2026-01-03T00:00:01.000Z' WHERE question = 'Old?'",
        [],
    )
    .unwrap();
    let versions: i64 = conn
        .query_row("SELECT COUNT(*) FROM refinery_schema_history", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(versions >= 3);
    drop(conn);
    let old = l.ok(["list", "--stage", "intake", "--status", "answered"]);
    let by_mjs = old["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["question"] == "Old?")
        .unwrap()
        .clone();
    assert_eq!(by_mjs["answer"], "by mjs");
    assert_eq!(by_mjs["id"], 6);
}

#[test]
fn a_ledger_from_a_newer_questions_is_refused_untouched() {
    crate::sqlite_only!();
    let l = Ledger::new();
    l.log("s", "q");
    {
        let conn = Connection::open(&l.path).unwrap();
        conn.execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (9999, 'from_the_future', '2030-01-01T00:00:00Z', '1')",
            [],
        )
        .unwrap();
    }
    let before = l.bytes();
    for args in [
        vec!["log", "--stage", "s", "--question", "new"],
        vec!["list"],
        vec!["check", "--stage", "s"],
        vec!["answer", "--id", "1", "--answer", "x"],
    ] {
        let run = l.run(&args);
        assert_eq!(
            (run.code, run.error_code()),
            (1, "schema_too_new"),
            "{args:?}"
        );
        assert!(run.json["error"].as_str().unwrap().contains("newer"));
    }
    assert!(l.bytes() == before, "the ledger changed");
}

#[test]
fn an_old_ledger_in_rollback_mode_refused_as_newer_keeps_its_header() {
    crate::sqlite_only!();
    let l = Ledger::new();
    old_ledger(&l);
    {
        let conn = Connection::open(&l.path).unwrap();
        conn.execute_batch(
            "CREATE TABLE refinery_schema_history (version INT4 PRIMARY KEY, name VARCHAR(255), applied_on VARCHAR(255), checksum VARCHAR(255));
             INSERT INTO refinery_schema_history VALUES (9999, 'future', '2030-01-01T00:00:00Z', '1');",
        )
        .unwrap();
    }
    let before = l.bytes();
    let run = l.run(["list"]);
    assert_eq!(run.error_code(), "schema_too_new");
    assert!(l.bytes() == before, "not even the journal mode may change");
}
