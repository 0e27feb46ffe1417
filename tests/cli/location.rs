use std::os::unix::fs::PermissionsExt;

use crate::common::*;

fn json_of(cmd: assert_cmd::Command) -> serde_json::Value {
    let run = finish(cmd);
    assert_eq!(run.code, 0, "{run:?}");
    run.json
}

#[test]
fn without_db_the_first_write_creates_dot_questions_here() {
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
}

#[test]
fn the_nearest_dot_questions_upwards_is_used() {
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
fn questions_db_is_used_and_db_overrides_it_before_or_after_the_command() {
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
fn a_missing_folder_for_an_explicit_path_is_an_io_error() {
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
fn an_empty_db_is_a_usage_error() {
    crate::sqlite_only!();
    let dir = tempfile::tempdir().unwrap();
    let mut list = bare_command(dir.path());
    list.args(["--db", "", "list"]);
    let run = finish(list);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
}
