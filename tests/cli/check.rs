use serde_json::Value;
use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn the_gate_fails_on_pending_required_questions_and_passes_once_answered() {
    let l = Ledger::new();
    let goal = l.log("intake", "Goal?");
    let opt = l.log_with("intake", "Nice to have?", &["--required", "false"]);
    l.log("design", "Elsewhere?");

    let run = l.run(["check", "--stage", "intake"]);
    assert_eq!(run.code, 1, "{run:?}");
    let out = &run.json;
    assert_eq!(out["ok"], false);
    assert_eq!(out["procedure"], "check");
    assert_eq!(out["gate"], "fail");
    assert_eq!(out["stage"], "intake");
    assert_eq!(out["total"], 2);
    assert_eq!(out["pending_count"], 1);
    assert_eq!(out["pending"][0]["id"], goal);
    assert_eq!(out["optional_pending"], 1);
    assert!(
        run.stderr.contains("pending"),
        "a person reading CI logs is told why"
    );

    l.ok(["answer", "--id", &goal.to_string(), "--answer", "A blog"]);
    let pass = l.ok(["check", "--stage", "intake"]);
    assert_eq!(pass["gate"], "pass");
    assert_eq!(pass["pending_count"], 0);
    assert_eq!(pass["pending"], serde_json::json!([]));
    assert_eq!(pass["optional_pending"], 1);
    let _ = opt;
}

#[test]
fn a_stage_with_no_questions_passes() {
    let l = Ledger::new();
    let out = l.ok(["check", "--stage", "empty"]);
    assert_eq!(out["gate"], "pass");
    assert_eq!(out["total"], 0);
    l.assert_not_created();
    l.log("other", "q");
    assert_eq!(l.ok(["check", "--stage", "empty"])["gate"], "pass");
}

#[test]
fn ids_narrow_the_gate() {
    let l = Ledger::new();
    let a = l.log("intake", "a");
    let b = l.log("intake", "b");
    l.ok(["answer", "--id", &a.to_string(), "--answer", "x"]);
    let out = l.ok(["check", "--stage", "intake", "--ids", &a.to_string()]);
    assert_eq!(out["total"], 1);
    let run = l.run([
        "check",
        "--stage",
        "intake",
        "--ids",
        &format!(" {a}, {b} "),
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json["pending_count"], 1);
    // --ids alone gates those questions, whatever their stage.
    let run = l.run(["check", "--ids", &b.to_string()]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json["pending"][0]["id"], b);
}

#[test]
fn an_unknown_id_or_one_outside_the_stage_never_passes() {
    let l = Ledger::new();
    let a = l.log("intake", "a");
    let other = l.log("design", "b");
    l.ok(["answer", "--id", &a.to_string(), "--answer", "x"]);
    l.ok(["answer", "--id", &other.to_string(), "--answer", "x"]);
    for ids in [format!("{a},999"), format!("{other}")] {
        let run = l.run(["check", "--stage", "intake", "--ids", &ids]);
        assert_eq!(run.code, 1, "{ids}: {run:?}");
        assert_eq!(run.error_code(), "not_found");
    }
    let missing = Ledger::new();
    let run = missing.run(["check", "--ids", "1"]);
    assert_eq!((run.code, run.error_code()), (1, "not_found"));
}

#[test]
fn check_needs_a_stage_or_ids_and_well_formed_ids() {
    let l = Ledger::new();
    for args in [
        vec!["check"],
        vec!["check", "--ids", ""],
        vec!["check", "--ids", "1,,2"],
        vec!["check", "--ids", "a,b"],
        vec!["check", "--ids", "0"],
        vec!["check", "--ids", "-1"],
        vec!["check", "--stage", ""],
        vec!["check", "--stage", "s", "--timeout", "5"],
        vec!["check", "--stage", "s", "--wait", "--timeout", "soon"],
    ] {
        let run = l.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "usage");
        assert_eq!(run.json["procedure"], "check");
    }
}

#[test]
fn wait_times_out_with_timed_out() {
    let l = Ledger::new();
    l.log("release", "Ship?");
    let started = Instant::now();
    let run = l.run(["check", "--stage", "release", "--wait", "--timeout", "0.5"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.json["gate"], "fail");
    assert_eq!(run.json["timed_out"], true);
    assert!(started.elapsed() >= Duration::from_millis(500));
}

#[test]
fn wait_returns_when_another_process_answers() {
    let l = Ledger::new();
    let id = l.log("release", "Ship?");
    let wait = Pause::new(l.dir.path(), "wait");
    let mut waiter = std::process::Command::new(BIN)
        .env("QUESTIONS_TEST_PAUSE", &wait.env)
        .args(["--db"])
        .arg(l.db())
        .args(["check", "--stage", "release", "--wait", "--timeout", "60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // It has found the gate closed and waits for a change.
    wait.reached();
    wait.release();
    assert!(
        waiter.try_wait().unwrap().is_none(),
        "the waiter must still be waiting"
    );
    l.ok(["answer", "--id", &id.to_string(), "--answer", "yes"]);
    let started = Instant::now();
    let out = waiter.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["gate"], "pass");
}

#[test]
fn a_stage_stored_with_spaces_by_the_old_script_still_gates() {
    let l = Ledger::new();
    l.log("intake", "Goal?");
    assert!(!l.sql_is_refused(
        "INSERT INTO questions (stage, question, required, status, created_at) \
         VALUES (' intake ', 'Deadline?', true, 'pending', '2026-01-02T03:04:05.000Z'), \
                ('intake  ', 'Budget?', true, 'answered', '2026-01-02T03:04:05.000Z')"
    ));
    let run = l.run(["check", "--stage", "intake"]);
    assert_eq!((run.code, run.json["gate"].as_str()), (1, Some("fail")));
    assert_eq!(run.json["total"], 3);
    assert_eq!(run.json["pending_count"], 2);
    let run = l.run(["check", "--stage", "intake", "--ids", "2"]);
    assert_eq!(
        (run.code, run.json["pending_count"].as_i64()),
        (1, Some(1)),
        "{run:?}"
    );
    assert_eq!(l.ok(["list", "--stage", "intake"])["count"], 3);
    // The same question logged again is the row already there.
    let again = l.ok(["log", "--stage", "intake", "--question", "Deadline?"]);
    assert_eq!(
        (again["created"].as_bool(), again["question_id"].as_i64()),
        (Some(false), Some(2))
    );
    l.ok(["answer", "--id", "1", "--answer", "A blog"]);
    l.ok(["skip", "--id", "2"]);
    assert_eq!(l.ok(["check", "--stage", "intake"])["gate"], "pass");
    assert_eq!(l.ok(["clear", "--stage", "intake"])["deleted"], 3);
    assert_eq!(l.ok(["list"])["count"], 0);
    let events = l.ok(["history", "--stage", "intake"])["events"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        events >= 5,
        "the spaced rows' events are in the stage's history too"
    );
}

#[test]
fn a_stage_that_never_held_a_question_passes_but_says_so_and_strict_refuses_it() {
    let l = Ledger::new();
    l.log("intake", "Goal?");
    l.log("design", "Database?");
    l.log("gone", "Cleared?");
    l.ok(["clear", "--stage", "gone"]);

    // A typo: the gate passes as the protocol says, but nobody is fooled.
    let typo = l.run(["check", "--stage", "intkae"]);
    assert_eq!(typo.code, 0, "{typo:?}");
    assert_eq!(typo.json["gate"], "pass");
    assert_eq!(typo.json["known_stage"], false);
    assert!(
        typo.stderr.contains("did you mean 'intake'"),
        "{}",
        typo.stderr
    );
    assert!(
        typo.stderr.contains("never held a question"),
        "{}",
        typo.stderr
    );
    assert!(typo.stderr.contains(&l.shown()), "{}", typo.stderr);
    assert_eq!(typo.json["nearest_stages"], serde_json::json!(["intake"]));

    let strict = l.run(["check", "--stage", "intkae", "--strict"]);
    assert_eq!(
        (strict.code, strict.error_code()),
        (1, "not_found"),
        "{strict:?}"
    );
    assert!(strict.json["error"]
        .as_str()
        .unwrap()
        .contains("did you mean 'intake'"));

    // Known stages: one holding questions, and one whose questions were all cleared.
    for stage in ["intake", "gone"] {
        let run = l.run(["check", "--stage", stage, "--strict"]);
        assert_eq!(run.json["known_stage"], true, "{stage}: {run:?}");
        assert!(
            !run.stderr.contains("never held"),
            "{stage}: {}",
            run.stderr
        );
    }
    // Nothing near (a new stage checked before anything is logged into it, as uwf does
    // at every step): the document says so, and stderr stays quiet.
    let far = l.run(["check", "--stage", "zzzzzzzz"]);
    assert_eq!(far.json["known_stage"], false);
    assert_eq!(far.stderr, "");
    // Three edits away is not near.
    let three = l.run(["check", "--stage", "inXXXe"]);
    assert_eq!(three.stderr, "");
    // --ids alone names no stage: nothing to know.
    let ids = l.run(["check", "--ids", "1"]);
    assert!(ids.json.get("known_stage").is_none(), "{ids:?}");
}

/// A gate that waits fails closed: a typo, or a gate that runs before the agent logged
/// its question, must not let a deployment through at once.
#[test]
fn a_wait_on_a_stage_that_never_held_a_question_fails_closed() {
    let l = Ledger::new();
    l.log("release", "Ship?");

    let run = l.run(["check", "--stage", "relaese", "--wait", "--timeout", "0.3"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.json["ok"], false);
    assert_eq!(run.json["gate"], "fail");
    assert_eq!(run.json["known_stage"], false);
    assert_eq!(run.json["timed_out"], true);
    assert_eq!(run.json["total"], 0);
    crate::schema::assert_valid("check", &run.json);
    assert!(
        run.stderr.contains("never held a question"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("did you mean 'release'"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("--allow-unknown-stage"),
        "{}",
        run.stderr
    );
    // Far from every known name, it fails the same and says so too.
    let far = l.run(["check", "--stage", "zzzzzzzz", "--wait", "--timeout", "0"]);
    assert_eq!((far.code, far.json["gate"].as_str()), (1, Some("fail")));
    assert!(
        far.stderr.contains("never held a question"),
        "{}",
        far.stderr
    );

    // Asked for, the immediate pass of a look.
    let allowed = l.run([
        "check",
        "--stage",
        "relaese",
        "--wait",
        "--timeout",
        "30",
        "--allow-unknown-stage",
    ]);
    assert_eq!(allowed.code, 0, "{allowed:?}");
    assert_eq!(allowed.json["gate"], "pass");
    assert_eq!(allowed.json["known_stage"], false);
    // A look without --wait is unchanged, and --strict still refuses at once.
    assert_eq!(l.run(["check", "--stage", "relaese"]).code, 0);
    let strict = l.run(["check", "--stage", "relaese", "--strict", "--wait"]);
    assert_eq!((strict.code, strict.error_code()), (1, "not_found"));
    // The flag means something only to a wait, and never beside --strict.
    for args in [
        vec!["check", "--stage", "x", "--allow-unknown-stage"],
        vec![
            "check",
            "--stage",
            "x",
            "--wait",
            "--strict",
            "--allow-unknown-stage",
        ],
    ] {
        let run = l.run(&args);
        assert_eq!((run.code, run.error_code()), (2, "usage"), "{args:?}");
    }
}

#[test]
fn a_wait_on_a_stage_not_logged_yet_passes_once_its_questions_are_settled() {
    let l = Ledger::new();
    l.log("intake", "Goal?");
    let wait = Pause::new(l.dir.path(), "wait");
    let waiter = std::process::Command::new(BIN)
        .env("QUESTIONS_TEST_PAUSE", &wait.env)
        .env_remove("QUESTIONS_DB")
        .args(["--db"])
        .arg(l.db())
        .args(["check", "--stage", "release", "--wait", "--timeout", "60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // It found the stage empty and waits, rather than passing.
    wait.reached();
    let id = l.log("release", "Ship?");
    // It read the stage again: one question, pending; it waits on.
    wait.go_round();
    wait.release();
    l.ok(["answer", "--id", &id.to_string(), "--answer", "yes"]);
    let out = waiter.wait_with_output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{json}");
    assert_eq!(json["gate"], "pass");
    assert_eq!(json["total"], 1, "{json}");
    assert_eq!(json["known_stage"], true, "{json}");
}

/// A waiting check whose read meets a table another session locked ends on its own
/// `--timeout` (exit 1, not passed), not after the statement bound of a minute: waiting
/// for a lock is not waiting for an answer. The test gives it 20 s, five times its own.
#[test]
#[cfg(feature = "postgres")]
fn postgres_only_a_waiting_check_behind_a_locked_table_ends_on_its_timeout() {
    crate::postgres_only!();
    let l = Ledger::new();
    l.log("g", "Ship it?");
    let url = l.url.clone().expect("a PostgreSQL ledger");
    let mut locker = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut tx = locker.transaction().unwrap();
    tx.batch_execute("LOCK TABLE questions IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let started = Instant::now();
    let run = l.run(["check", "--stage", "g", "--wait", "--timeout", "4"]);
    let took = started.elapsed();
    tx.rollback().unwrap();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(took < Duration::from_secs(20), "took {took:?}: {run:?}");
    assert!(run.stderr.contains("lock"), "{run:?}");
}

#[test]
fn a_wait_on_ids_ends_when_they_are_declined_and_a_stage_wait_goes_on() {
    let l = Ledger::new();
    let declined = l.log("release", "Ship on Friday?");
    let other = l.log("release", "Which changelog?");
    // The named question is waited for while pending; declined, the wait ends: only an
    // answer forced over the decline could change what was asked by these ids.
    let wait = Pause::new(l.dir.path(), "wait");
    let waiter = std::process::Command::new(BIN)
        .env("QUESTIONS_TEST_PAUSE", &wait.env)
        .env_remove("QUESTIONS_DB")
        .args(["--db"])
        .arg(l.db())
        .args([
            "check",
            "--ids",
            &declined.to_string(),
            "--wait",
            "--timeout",
            "60",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait.reached();
    l.ok([
        "decline",
        "--id",
        &declined.to_string(),
        "--reason",
        "not on a Friday",
    ]);
    wait.release();
    let out = waiter.wait_with_output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{doc}");
    assert_eq!(doc["gate"], "fail");
    assert_eq!(doc["timed_out"], Value::Null, "{doc}");
    assert_eq!(doc["declined"][0]["reason"], "not on a Friday");
    // A stage's wait goes on: its questions may be asked again under new ids. Answered
    // but still declined, it times out.
    l.ok([
        "answer",
        "--id",
        &other.to_string(),
        "--answer",
        "the short one",
    ]);
    let run = l.run(["check", "--stage", "release", "--wait", "--timeout", "0.5"]);
    assert_eq!(run.json["timed_out"], true, "{run:?}");
}
