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
fn sqlite_only_an_old_ledger_upgrades_with_nothing_lost_and_ids_continuing() {
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
fn sqlite_only_a_ledger_from_a_newer_questions_is_refused_untouched() {
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
fn sqlite_only_an_old_ledger_in_rollback_mode_refused_as_newer_keeps_its_header() {
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

/// A ledger as version 3 of the schema left it: the same questions as `l`'s, and the
/// history as V3 stored it, the whole question before and after every change.
fn version_3_copy_of(l: &Ledger, path: &std::path::Path, history: &[serde_json::Value]) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE refinery_schema_history (version INT4 PRIMARY KEY, name VARCHAR(255),
           applied_on VARCHAR(255), checksum VARCHAR(255));",
    )
    .unwrap();
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/migrations/sqlite");
    for (version, name) in [
        (1, "questions_table"),
        (2, "structured_questions"),
        (3, "history"),
    ] {
        let sql = std::fs::read_to_string(dir.join(format!("V{version}__{name}.sql"))).unwrap();
        conn.execute_batch(&sql).unwrap();
        let checksum = refinery::Migration::unapplied(&format!("V{version}__{name}"), &sql)
            .unwrap()
            .checksum();
        conn.execute(
            "INSERT INTO refinery_schema_history VALUES (?1, ?2, '2026-01-01T00:00:00Z', ?3)",
            rusqlite::params![version, name, checksum.to_string()],
        )
        .unwrap();
    }
    conn.execute("ATTACH ?1 AS live", [l.path.to_str().unwrap()])
        .unwrap();
    conn.execute_batch(
        "INSERT INTO questions SELECT id, stage, group_name, question, proposed, required,
           status, answer, created_at, answered_at, updated_at, header, context, options,
           multi_select, allow_freeform, selected, was_custom, skip_reason, source
         FROM live.questions;
         UPDATE questions SET updated_at = created_at WHERE updated_at IS NULL;
         UPDATE sqlite_sequence SET seq = (SELECT seq FROM live.sqlite_sequence
           WHERE name = 'questions') WHERE name = 'questions';",
    )
    .unwrap();
    for e in history {
        let text = |v: &serde_json::Value| (!v.is_null()).then(|| v.to_string());
        conn.execute(
            "INSERT INTO question_events (at, event, question_id, stage, before, after)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                e["at"].as_str().unwrap(),
                e["event"].as_str().unwrap(),
                e["question_id"].as_i64().unwrap(),
                e["stage"].as_str().unwrap(),
                text(&e["before"]),
                text(&e["after"]),
            ],
        )
        .unwrap();
    }
}

/// History events as version 3 knew them: no seq, who or channel, and questions without
/// the keys of §8.
fn as_version_3(mut events: serde_json::Value) -> serde_json::Value {
    for e in events.as_array_mut().unwrap() {
        let e = e.as_object_mut().unwrap();
        for key in ["seq", "answered_by", "channel"] {
            e.remove(key);
        }
        for side in ["before", "after"] {
            if let Some(q) = e.get_mut(side).and_then(|q| q.as_object_mut()) {
                for key in [
                    "answered_by",
                    "channel",
                    "expires_at",
                    "on_expiry",
                    "decline_reason",
                    "logged_by",
                ] {
                    q.remove(key);
                }
            }
        }
    }
    events
}

/// The same as `version_3_copy_of`, in a PostgreSQL database.
fn version_3_copy_in_postgres(
    url: &str,
    questions: &[serde_json::Value],
    history: &[serde_json::Value],
) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .batch_execute(
            "CREATE TABLE refinery_schema_history (version INT4 PRIMARY KEY,
               name VARCHAR(255), applied_on VARCHAR(255), checksum VARCHAR(255));",
        )
        .unwrap();
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/migrations/postgres");
    for (version, name) in [
        (1, "questions_table"),
        (2, "structured_questions"),
        (3, "history"),
    ] {
        let sql = std::fs::read_to_string(dir.join(format!("V{version}__{name}.sql"))).unwrap();
        client.batch_execute(&sql).unwrap();
        let checksum = refinery::Migration::unapplied(&format!("V{version}__{name}"), &sql)
            .unwrap()
            .checksum();
        client
            .execute(
                "INSERT INTO refinery_schema_history VALUES ($1, $2, '2026-01-01T00:00:00Z', $3)",
                &[&version, &name, &checksum.to_string()],
            )
            .unwrap();
    }
    for q in questions {
        let text = |k: &str| q[k].as_str().map(str::to_string);
        client
            .execute(
                "INSERT INTO questions (id, stage, group_name, question, proposed, required,
                   status, answer, created_at, answered_at, updated_at, header, context,
                   options, multi_select, allow_freeform, selected, was_custom, skip_reason,
                   source)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                   $16, $17, $18, $19, $20)",
                &[
                    &q["id"].as_i64().unwrap(),
                    &text("stage"),
                    &text("group_name"),
                    &text("question"),
                    &text("proposed"),
                    &q["required"].as_bool().unwrap(),
                    &text("status"),
                    &text("answer"),
                    &text("created_at"),
                    &text("answered_at"),
                    &text("updated_at"),
                    &text("header"),
                    &text("context"),
                    &q["options"].to_string(),
                    &q["multi_select"].as_bool().unwrap(),
                    &q["allow_freeform"].as_bool().unwrap(),
                    &q["selected"].to_string(),
                    &q["was_custom"].as_bool(),
                    &text("skip_reason"),
                    &text("source"),
                ],
            )
            .unwrap();
    }
    client
        .batch_execute("SELECT setval('questions_id_seq', 3)")
        .unwrap();
    for e in history {
        let text = |v: &serde_json::Value| (!v.is_null()).then(|| v.to_string());
        client
            .execute(
                "INSERT INTO question_events (at, event, question_id, stage, before, after)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &e["at"].as_str().unwrap(),
                    &e["event"].as_str().unwrap(),
                    &e["question_id"].as_i64().unwrap(),
                    &e["stage"].as_str().unwrap(),
                    &text(&e["before"]),
                    &text(&e["after"]),
                ],
            )
            .unwrap();
    }
}

#[test]
fn a_version_3_history_is_stored_compactly_and_reads_back_the_same() {
    let l = Ledger::new();
    let goal = l.log("s", "Goal?").to_string();
    let risk = l
        .log_with("s", "Risk?", &["--option", "Low", "--option", "High"])
        .to_string();
    l.log("gone", "Cleared?");
    l.ok(["answer", "--id", &goal, "--answer", "A blog"]);
    l.ok([
        "answer",
        "--id",
        &goal,
        "--answer",
        "A dashboard",
        "--force",
    ]);
    l.ok(["skip", "--id", &risk, "--reason", "later"]);
    l.ok(["answer", "--id", &risk, "--select", "High"]);
    l.ok(["clear", "--stage", "gone"]);
    let stages = ["s", "gone"];
    // Version 3 recorded neither who nor through what, nor a seq: as that version
    // wrote them, with those left out.
    let expected: Vec<serde_json::Value> = stages
        .iter()
        .map(|s| as_version_3(l.ok(["history", "--stage", s])["events"].clone()))
        .collect();
    // Each stage's events in their order; that is all `history --stage` shows.
    let all: Vec<serde_json::Value> = expected
        .iter()
        .flat_map(|e| e.as_array().unwrap().clone())
        .collect();
    assert_eq!(all.len(), 3 + 4 + 1);

    // The old ledger: a file beside this one, or a second database.
    let old_db = Ledger::new();
    let old: std::ffi::OsString = match &old_db.url {
        None => {
            let path = l.dir.path().join("v3.db");
            version_3_copy_of(&l, &path, &all);
            path.into()
        }
        Some(url) => {
            let questions: Vec<serde_json::Value> = l.all();
            version_3_copy_in_postgres(url, &questions, &all);
            url.into()
        }
    };
    let history = |stage: &str| {
        let mut cmd = bare_command(l.dir.path());
        cmd.arg("--db")
            .arg(&old)
            .args(["history", "--stage", stage]);
        let run = finish(cmd);
        assert_eq!(run.code, 0, "{run:?}");
        run.json["events"].clone()
    };
    assert_eq!(as_version_3(history("s")), expected[0]);
    assert_eq!(as_version_3(history("gone")), expected[1]);

    // Migrated in place: a `logged` event holds nothing, a change only status and answer.
    let stored = |sql: &str| -> String {
        match &old_db.url {
            None => Connection::open(l.dir.path().join("v3.db"))
                .unwrap()
                .query_row(sql, [], |r| r.get::<_, String>(0))
                .unwrap(),
            Some(url) => postgres::Client::connect(url, postgres::NoTls)
                .unwrap()
                .query_one(sql, &[])
                .unwrap()
                .get::<_, String>(0),
        }
    };
    let logged = stored(
        "SELECT CAST(COUNT(*) AS TEXT) FROM question_events WHERE event = 'logged'
         AND (at <> '' OR before IS NOT NULL OR after IS NOT NULL)",
    );
    assert_eq!(logged, "0");
    let change = stored("SELECT after FROM question_events WHERE event = 'reanswered'");
    assert!(!change.contains("Goal?"), "{change}");
    assert!(change.contains("A dashboard"), "{change}");
    // And it goes on working: ids continue after the copied ones.
    let mut cmd = bare_command(l.dir.path());
    cmd.arg("--db")
        .arg(&old)
        .args(["log", "--stage", "s", "--question", "After?"]);
    assert_eq!(finish(cmd).json["question_id"], 4);
}

#[test]
fn sqlite_only_a_row_that_questions_mjs_clears_keeps_its_history() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let id = l.log("s", "Which database?");
    l.ok(["answer", "--id", &id.to_string(), "--answer", "SQLite"]);
    // questions.mjs's clear: a bare DELETE, no event.
    rusqlite::Connection::open(&l.path)
        .unwrap()
        .execute("DELETE FROM questions WHERE stage = 's'", [])
        .unwrap();
    let history = l.ok(["history", "--id", &id.to_string()]);
    let events = history["events"].as_array().unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["logged", "answered", "cleared"]);
    let cleared = &events[2];
    assert_eq!(cleared["stage"], "s");
    assert_eq!(cleared["before"]["question"], "Which database?");
    assert_eq!(cleared["before"]["answer"], "SQLite");
    // The answer's own event is whole again, from the row kept.
    assert_eq!(events[1]["after"]["question"], "Which database?");
    // questions' own clear writes one cleared event, not two.
    let other = l.log("t", "Kept?");
    l.ok(["clear", "--stage", "t"]);
    let history = l.ok(["history", "--id", &other.to_string()]);
    assert_eq!(history["events"].as_array().unwrap().len(), 2);
}

#[test]
fn sqlite_only_rows_other_tools_wrote_print_in_the_contract_s_shape() {
    crate::sqlite_only!();
    let l = Ledger::new();
    l.log("s", "Ours?");
    rusqlite::Connection::open(&l.path)
        .unwrap()
        .execute_batch(
            "INSERT INTO questions (stage, question, required, status, answer, created_at)
               VALUES ('s', 'Empty time?', 1, 'pending', NULL, '');
             INSERT INTO questions (stage, question, required, status, answer, created_at, answered_at)
               VALUES ('s', 'Epoch millis?', 1, 'answered', NULL, 1732233600000, 1732233600);",
        )
        .unwrap();
    let listed = l.ok(["list", "--stage", "s"]);
    let q = &listed["questions"];
    assert_eq!(q[1]["created_at"], "1970-01-01T00:00:00.000Z");
    assert_eq!(q[2]["created_at"], "2024-11-22T00:00:00.000Z");
    assert_eq!(q[2]["answered_at"], "2024-11-22T00:00:00.000Z");
    assert_eq!(q[2]["answer"], "");
    crate::schema::assert_valid("list", &listed);
}
