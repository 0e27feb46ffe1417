//! Small holes: each input here was once accepted wrongly or answered with a poor message.

use crate::common::*;

#[test]
fn durations_and_seconds_out_of_range_are_usage_errors_that_say_so() {
    let l = Ledger::new();
    let far = l.run([
        "log",
        "--stage",
        "s",
        "--question",
        "Q?",
        "--expires-in",
        "3000000d",
    ]);
    assert_eq!((far.code, far.error_code()), (2, "usage"), "{far:?}");
    assert!(
        far.json["error"].as_str().unwrap().contains("9999"),
        "{far:?}"
    );
    for (args, words) in [
        (
            vec![
                "log",
                "--stage",
                "s",
                "--question",
                "Q?",
                "--expires-in",
                "-1h",
            ],
            "duration",
        ),
        (
            vec!["check", "--stage", "s", "--wait", "--timeout", "-1"],
            "seconds",
        ),
        (vec!["events", "--follow", "--timeout", "-1"], "seconds"),
    ] {
        let run = l.run(&args);
        assert_eq!((run.code, run.error_code()), (2, "usage"), "{args:?}");
        let message = run.json["error"].as_str().unwrap();
        assert!(message.contains(words), "{args:?}: {message}");
        assert!(!message.contains("unexpected argument"), "{message}");
    }
    l.assert_not_created();
}

#[test]
fn a_default_that_answer_would_refuse_is_refused_at_log() {
    let l = Ledger::new();
    let run = l.run([
        "log",
        "--stage",
        "s",
        "--question",
        "Which?",
        "--option",
        "A",
        "--option",
        "B",
        "--no-freeform",
        "--proposed",
        "C",
        "--expires-in",
        "1h",
        "--on-expiry",
        "default",
    ]);
    assert_eq!((run.code, run.error_code()), (2, "usage"), "{run:?}");
    l.assert_not_created();
    let ok = l.run([
        "log",
        "--stage",
        "s",
        "--question",
        "Which?",
        "--option",
        "A",
        "--option",
        "B",
        "--no-freeform",
        "--proposed",
        "B",
        "--expires-in",
        "1h",
        "--on-expiry",
        "default",
    ]);
    assert_eq!(ok.code, 0, "{ok:?}");
}

#[test]
fn list_takes_declined_as_the_web_and_mcp_do() {
    let l = Ledger::new();
    let id = l.log("s", "Q?");
    l.log("s", "R?");
    l.ok(["decline", "--id", &id.to_string(), "--reason", "unclear"]);
    let out = l.ok(["list", "--status", "declined"]);
    assert_eq!(out["count"], 1);
    assert_eq!(out["questions"][0]["id"], id);
}

#[test]
fn a_location_that_starts_like_a_postgres_url_is_refused_without_its_password() {
    let l = Ledger::new();
    for db in [
        "postgresql:/ann:s3cret@db.example/q",
        "POSTGRES:ann:s3cret@db/q",
    ] {
        let mut cmd = bare_command(l.dir.path());
        cmd.args(["--db", db, "log", "--stage", "s", "--question", "Q?"]);
        let run = finish(cmd);
        assert_eq!((run.code, run.error_code()), (2, "usage"), "{db}: {run:?}");
        assert!(!run.stdout.contains("s3cret") && !run.stderr.contains("s3cret"));
    }
    let leftovers: Vec<_> = std::fs::read_dir(l.dir.path()).unwrap().collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn sqlite_only_a_device_is_not_a_ledger_and_gets_no_companions() {
    crate::sqlite_only!();
    let l = Ledger::new();
    for companion in ["/dev/null-wal", "/dev/null-journal"] {
        let _ = std::fs::remove_file(companion);
    }
    let mut cmd = bare_command(l.dir.path());
    cmd.args([
        "--db",
        "/dev/null",
        "log",
        "--stage",
        "s",
        "--question",
        "Q?",
    ]);
    let run = finish(cmd);
    assert_eq!((run.code, run.error_code()), (1, "io_error"), "{run:?}");
    assert!(run.json["error"]
        .as_str()
        .unwrap()
        .contains("not a regular file"));
    assert!(!std::path::Path::new("/dev/null-wal").exists());
    assert!(!std::path::Path::new("/dev/null-journal").exists());
}

#[test]
fn a_webhook_url_that_cannot_work_is_a_usage_error() {
    let l = Ledger::new();
    for url in [
        "http://",
        "ftp://example.org/x",
        "https:///path",
        "example.org",
    ] {
        let run = l.run(["watch", "--name", "w", "--webhook", url, "--timeout", "1"]);
        assert_eq!((run.code, run.error_code()), (2, "usage"), "{url}: {run:?}");
    }
}

#[test]
fn an_import_that_repeats_a_key_is_refused_naming_it() {
    let l = Ledger::new();
    let id = l.log("s", "A?");
    let run = l.run_stdin(
        ["import", "--stage", "s", "--format", "map"],
        format!("{{\"{id}\": \"x\", \"{id}\": \"y\"}}"),
    );
    assert_eq!((run.code, run.error_code()), (1, "parse_error"), "{run:?}");
    assert!(run.json["error"]
        .as_str()
        .unwrap()
        .contains(&format!("\"{id}\" appears twice")));
    assert_eq!(l.question(id)["status"], "pending");
}

#[test]
fn typographic_bullets_before_q_lines_are_read() {
    let l = Ledger::new();
    let out = l.ok_stdin(
        ["ingest", "--stage", "s"],
        "QUESTIONS_NEEDED\n• Q: What?\n• Proposed: x\n· Q: Why?\n",
    );
    let texts: Vec<&str> = out["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["question"].as_str().unwrap())
        .collect();
    assert_eq!(texts, vec!["What?", "Why?"]);
    assert_eq!(out["questions"][0]["proposed"], "x");
}

#[test]
fn sqlite_only_a_symlinked_log_and_a_bad_postgres_url_say_what_is_wrong() {
    crate::sqlite_only!();
    let l = Ledger::new();
    std::os::unix::fs::symlink("/tmp/elsewhere", l.dir.path().join("ledger.db-wal")).unwrap();
    let run = l.run(["log", "--stage", "s", "--question", "Q?"]);
    assert_eq!(run.code, 1);
    assert!(
        run.json["error"]
            .as_str()
            .unwrap()
            .contains("symbolic link"),
        "{run:?}"
    );

    let mut cmd = bare_command(l.dir.path());
    cmd.args(["--db", "postgres://ann:s3cret@host:notaport/q", "list"]);
    let run = finish(cmd);
    assert_eq!((run.code, run.error_code()), (2, "usage"), "{run:?}");
    let message = run.json["error"].as_str().unwrap();
    assert!(
        message.contains("port") && !message.contains("s3cret"),
        "{message}"
    );
}

#[test]
fn sqlite_only_a_tampered_ledger_reads_what_it_can_and_names_the_damage_in_one_line() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let id = l.log("s", "Q?");
    let sql = |text: &str| {
        rusqlite::Connection::open(&l.path)
            .unwrap()
            .execute_batch(text)
            .unwrap();
    };
    // The migration history cannot be read: the questions still can, nothing is written.
    sql("DROP TABLE refinery_schema_history; CREATE TABLE refinery_schema_history (x TEXT);");
    assert_eq!(l.ok(["list"])["count"], 1);
    let run = l.run(["answer", "--id", &id.to_string(), "--answer", "x"]);
    assert_eq!((run.code, run.error_code()), (1, "db_error"));
    let message = run.json["error"].as_str().unwrap();
    assert!(
        message.contains("migration history") && !message.contains('\n'),
        "{message}"
    );
    assert!(!message.contains("SELECT"), "a statement quoted: {message}");

    // A table taken away is named as such, not as a failed statement.
    let other = Ledger::new();
    other.log("s", "Q?");
    rusqlite::Connection::open(&other.path)
        .unwrap()
        .execute_batch("DROP TABLE question_events")
        .unwrap();
    let run = other.run(["history", "--stage", "s"]);
    assert_eq!(run.code, 1);
    let message = run.json["error"].as_str().unwrap();
    assert!(
        message.contains("table question_events is missing"),
        "{message}"
    );
}
