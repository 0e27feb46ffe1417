use std::os::unix::fs::PermissionsExt;

use crate::common::*;

fn json_of(cmd: assert_cmd::Command) -> serde_json::Value {
    let run = finish(cmd);
    assert_eq!(run.code, 0, "{run:?}");
    run.json
}

#[test]
fn sqlite_only_without_db_the_first_write_creates_dot_questions_here() {
    crate::sqlite_only!();
    let dir = tempfile::tempdir().unwrap();
    let mut list = bare_command(dir.path());
    list.arg("list");
    assert_eq!(json_of(list)["count"], 0);
    assert!(
        !dir.path().join(".questions").exists(),
        "reads create nothing"
    );

    let mut log = bare_command(dir.path());
    log.args(["log", "--stage", "s", "--question", "q"]);
    json_of(log);
    let ledger = dir.path().join(".questions/ledger.db");
    assert!(ledger.is_file());
    let mode = std::fs::metadata(&ledger).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a new ledger is private to its owner");
    let folder = dir.path().join(".questions");
    let mode = std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the default folder is private to its owner");
    assert_eq!(
        std::fs::read_to_string(folder.join(".gitignore")).unwrap(),
        "*\n",
        "the ledger is never committed by accident"
    );
}

#[test]
fn sqlite_only_the_nearest_dot_questions_upwards_is_used() {
    crate::sqlite_only!();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".questions")).unwrap();
    let deep = dir.path().join("a/b/c");
    std::fs::create_dir_all(&deep).unwrap();
    let mut log = bare_command(&deep);
    log.args(["log", "--stage", "s", "--question", "q"]);
    json_of(log);
    assert!(dir.path().join(".questions/ledger.db").is_file());
    assert!(!deep.join(".questions").exists());
}

#[test]
fn sqlite_only_questions_db_is_used_and_db_overrides_it_before_or_after_the_command() {
    crate::sqlite_only!();
    let dir = tempfile::tempdir().unwrap();
    let from_env = dir.path().join("env.db");
    let from_flag = dir.path().join("flag.db");

    let mut log = bare_command(dir.path());
    log.env("QUESTIONS_DB", &from_env)
        .args(["log", "--stage", "s", "--question", "env"]);
    json_of(log);
    assert!(from_env.is_file());

    let mut log = bare_command(dir.path());
    log.env("QUESTIONS_DB", &from_env)
        .args(["log", "--stage", "s", "--question", "flag", "--db"])
        .arg(&from_flag);
    json_of(log);

    let mut list = bare_command(dir.path());
    list.env("QUESTIONS_DB", &from_env)
        .arg("--db")
        .arg(&from_flag)
        .arg("list");
    let out = json_of(list);
    assert_eq!(out["count"], 1);
    assert_eq!(out["questions"][0]["question"], "flag");
}

#[test]
fn sqlite_only_a_missing_folder_for_an_explicit_path_is_an_io_error() {
    crate::sqlite_only!();
    let dir = tempfile::tempdir().unwrap();
    let mut log = bare_command(dir.path());
    log.arg("--db")
        .arg(dir.path().join("no/such/dir/ledger.db"))
        .args(["log", "--stage", "s", "--question", "q"]);
    let run = finish(log);
    assert_eq!((run.code, run.error_code()), (1, "io_error"));
    assert!(!dir.path().join("no").exists());
}

#[test]
fn sqlite_only_an_empty_db_is_a_usage_error() {
    crate::sqlite_only!();
    let dir = tempfile::tempdir().unwrap();
    let mut list = bare_command(dir.path());
    list.args(["--db", "", "list"]);
    let run = finish(list);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
}

/// Names in `dir`: what a call left behind.
fn left_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn sqlite_memory_and_uri_forms_are_usage_errors_and_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    for db in [
        ":memory:",
        "file::memory:",
        "file:x.db?mode=memory",
        "file:ledger.db",
        " FILE:ledger.db",
    ] {
        for args in [vec!["log", "--stage", "s", "--question", "q"], vec!["list"]] {
            let mut cmd = bare_command(dir.path());
            cmd.arg("--db").arg(db).args(&args);
            let run = finish(cmd);
            assert_eq!((run.code, run.error_code()), (2, "usage"), "{db} {args:?}");
            let mut cmd = bare_command(dir.path());
            cmd.env("QUESTIONS_DB", db).args(&args);
            let run = finish(cmd);
            assert_eq!((run.code, run.error_code()), (2, "usage"), "{db} {args:?}");
        }
    }
    assert_eq!(left_in(dir.path()), Vec::<String>::new());
}

const PASSWORD: &str = "s3cr3t-pw";

/// PostgreSQL locations on a closed port, in every form that names PostgreSQL.
fn closed_postgres_locations() -> Vec<String> {
    vec![
        format!("postgres://me:{PASSWORD}@127.0.0.1:1/ledger"),
        format!("POSTGRES://me:{PASSWORD}@127.0.0.1:1/ledger"),
        format!("  PostgreSQL://me:{PASSWORD}@127.0.0.1:1/ledger "),
        format!("host=127.0.0.1 port=1 dbname=ledger user=me password={PASSWORD}"),
        format!(" password={PASSWORD} host=127.0.0.1 port=1 dbname=ledger"),
        format!("host=127.0.0.1 port=oops password={PASSWORD}"),
        format!("postgres://me:{PASSWORD}@[not-a-host/ledger"),
    ]
}

#[cfg(feature = "postgres")]
#[test]
fn every_postgres_form_reaches_postgres_and_never_prints_its_password() {
    let dir = tempfile::tempdir().unwrap();
    for db in closed_postgres_locations() {
        for args in [
            vec!["log", "--stage", "s", "--question", "q"],
            vec!["list"],
            vec!["reset", "--yes"],
            vec!["reset"],
        ] {
            for via_env in [false, true] {
                let mut cmd = bare_command(dir.path());
                if via_env {
                    cmd.env("QUESTIONS_DB", &db);
                } else {
                    cmd.arg("--db").arg(&db);
                }
                cmd.args(&args);
                let run = finish(cmd);
                assert!(run.code == 1 || run.code == 2, "{db} {args:?}: {run:?}");
                let code = run.error_code();
                assert!(code == "db_error" || code == "usage", "{db}: {run:?}");
                assert!(
                    !run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD),
                    "{db} {args:?} printed the password: {run:?}"
                );
            }
        }
        let mut cmd = bare_command(dir.path());
        cmd.arg("--db").arg(&db).arg("list");
        let run = finish(cmd);
        assert_eq!(
            (run.code, run.error_code()),
            if db.contains("oops") || db.contains('[') {
                (2, "usage")
            } else {
                (1, "db_error")
            },
            "{db}: {run:?}"
        );
    }
    assert_eq!(
        left_in(dir.path()),
        Vec::<String>::new(),
        "no SQLite file named after a PostgreSQL location"
    );
}

/// A build without PostgreSQL (`--no-default-features`) refuses every form that names it,
/// as a usage error that says so: never a panic, never a SQLite file of that name.
#[cfg(not(feature = "postgres"))]
#[test]
fn without_postgres_every_postgres_form_is_a_usage_error_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    for db in closed_postgres_locations() {
        for args in [
            vec!["log", "--stage", "s", "--question", "q"],
            vec!["list"],
            vec!["info"],
            vec!["reset", "--yes"],
        ] {
            for via_env in [false, true] {
                let mut cmd = bare_command(dir.path());
                if via_env {
                    cmd.env("QUESTIONS_DB", &db);
                } else {
                    cmd.arg("--db").arg(&db);
                }
                cmd.args(&args);
                let run = finish(cmd);
                assert_eq!((run.code, run.error_code()), (2, "usage"), "{db} {args:?}");
                let error = run.json["error"].as_str().unwrap();
                assert!(
                    error.starts_with("this build of questions has no PostgreSQL support"),
                    "{db} {args:?}: {run:?}"
                );
                assert!(
                    !run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD),
                    "{db} {args:?} printed the password: {run:?}"
                );
            }
        }
    }
    assert_eq!(
        left_in(dir.path()),
        Vec::<String>::new(),
        "no SQLite file named after a PostgreSQL location"
    );
}

#[test]
fn help_never_prints_the_password_in_questions_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("postgres://me:{PASSWORD}@127.0.0.1:1/ledger");
    let names = commands();
    let mut commands: Vec<Vec<&str>> = vec![vec!["--help"], vec!["-h"]];
    for name in &names {
        commands.push(vec![name, "--help"]);
        commands.push(vec!["help", name]);
    }
    for args in commands {
        let mut cmd = bare_command(dir.path());
        cmd.env("QUESTIONS_DB", &db).args(&args);
        let run = finish(cmd);
        assert_eq!(run.code, 0, "{args:?}");
        assert!(run.stdout.contains("Usage"), "{args:?}");
        assert!(
            !run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD),
            "{args:?} printed the password"
        );
    }
}
