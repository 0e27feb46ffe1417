//! What only the PostgreSQL engine has: connections that fail.

use crate::common::*;

fn with_database(url: &str, db: &str) -> String {
    format!("{}/{db}", url.rsplit_once('/').unwrap().0)
}

#[test]
fn connection_failures_name_the_server_and_the_cause_but_not_the_password() {
    let Some(admin) = postgres_server() else {
        return; // runs in the PostgreSQL pass
    };
    let wrong_password = admin.replacen("questions-test", "not-the-password", 1);
    let port = admin
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let down = admin.replacen(&format!(":{port}/"), ":1/", 1);
    for (url, cause) in [
        (with_database(&admin, "no_such_database"), "does not exist"),
        (
            with_database(&wrong_password, "postgres"),
            "password authentication failed",
        ),
        (down, "refused"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = bare_command(dir.path());
        cmd.args(["--db", &url, "list"]);
        let run = finish(cmd);
        assert_eq!((run.code, run.error_code()), (1, "db_error"), "{url}");
        let message = run.json["error"].as_str().unwrap();
        assert!(message.contains("127.0.0.1"), "{message}");
        assert!(message.contains(cause), "{cause} not in: {message}");
        assert!(
            !message.contains("questions-test") && !message.contains("not-the-password"),
            "{message}"
        );
        assert!(!run.stderr.contains("not-the-password"));
    }
}

#[test]
fn postgresql_scheme_and_questions_db_name_the_database_too() {
    let Some(_) = postgres_server() else {
        return;
    };
    let l = Ledger::new();
    let url = l
        .url
        .clone()
        .unwrap()
        .replacen("postgres://", "postgresql://", 1);
    let mut cmd = bare_command(l.dir.path());
    cmd.env("QUESTIONS_DB", &url)
        .args(["log", "--stage", "s", "--question", "shared?"]);
    assert_eq!(finish(cmd).code, 0);
    assert_eq!(l.all().len(), 1);
    assert!(
        !l.path.exists() && !l.dir.path().join(".questions").exists(),
        "no file was written"
    );
}
