//! Who answered and through what (§8), and a person declining to answer as asked.

use crate::common::*;
use serde_json::Value;

fn history(l: &Ledger, id: i64) -> Vec<Value> {
    l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn direct_only_every_change_records_who_made_it_and_through_what() {
    // The command line's own channel, `cli`: over https:// a person token's is `api`.
    crate::direct_only!();
    let l = Ledger::new();
    let a = l.log("s", "By flag?");
    let b = l.log("s", "By variable?");
    let c = l.log("s", "By the system?");
    let d = l.log_with("s", "Imported?", &["--option", "X", "--option", "Y"]);
    let e = l.log_with(
        "s",
        "Defaulted?",
        &["--proposed", "p", "--required", "false"],
    );
    // A question nobody has changed yet: nobody, through nothing.
    let fresh = l.question(a);
    assert_eq!(
        (fresh["answered_by"].clone(), fresh["channel"].clone()),
        (Value::Null, Value::Null)
    );

    let answered = l.ok([
        "answer",
        "--id",
        &a.to_string(),
        "--answer",
        "yes",
        "--by",
        "alice",
    ]);
    assert_eq!(answered["question"]["answered_by"], "alice");
    assert_eq!(answered["question"]["channel"], "cli");

    let mut cmd = l.command();
    cmd.env("QUESTIONS_USER", "bob")
        .args(["skip", "--id", &b.to_string()]);
    let skipped = finish(cmd);
    assert_eq!(
        skipped.json["question"]["answered_by"], "bob",
        "{skipped:?}"
    );

    let mut cmd = l.command();
    cmd.env("USER", "carol")
        .args(["decline", "--id", &c.to_string(), "--reason", "unclear"]);
    let declined = finish(cmd);
    assert_eq!(
        declined.json["question"]["answered_by"], "carol",
        "{declined:?}"
    );

    l.ok_stdin(
        ["import", "--stage", "s", "--format", "map", "--by", "dave"],
        format!("{{\"{d}\": \"X\"}}"),
    );
    assert_eq!(l.question(d)["channel"], "import");
    assert_eq!(l.question(d)["answered_by"], "dave");
    l.ok(["accept-defaults", "--stage", "s", "--by", "erin"]);
    assert_eq!(l.question(e)["channel"], "accept-defaults");

    // The history says the same, event by event, in seq order.
    let events = history(&l, a);
    assert_eq!(events[0]["event"], "logged");
    assert_eq!(events[0]["answered_by"], Value::Null);
    assert_eq!(events[1]["event"], "answered");
    assert_eq!(events[1]["answered_by"], "alice");
    assert_eq!(events[1]["channel"], "cli");
    assert!(events[1]["seq"].as_i64().unwrap() > events[0]["seq"].as_i64().unwrap());
}

#[test]
fn a_declined_question_holds_the_gate_and_says_why() {
    let l = Ledger::new();
    let goal = l.log("intake", "Which database, Postgres or MySQL?");
    l.log_with("intake", "Anything else?", &["--required", "false"]);

    let declined = l.ok([
        "decline",
        "--id",
        &goal.to_string(),
        "--reason",
        "neither: we store files",
    ]);
    assert_eq!(declined["question"]["status"], "declined");
    assert_eq!(
        declined["question"]["decline_reason"],
        "neither: we store files"
    );

    let gate = l.run(["check", "--stage", "intake"]);
    assert_eq!(
        (gate.code, gate.json["gate"].clone()),
        (1, "fail".into()),
        "{gate:?}"
    );
    assert_eq!(gate.json["declined"][0]["id"], goal);
    assert_eq!(
        gate.json["declined"][0]["reason"],
        "neither: we store files"
    );
    assert!(gate.stderr.contains("declined"), "{}", gate.stderr);

    let answers = l.ok(["answers", "--stage", "intake"]);
    let key = "Which database, Postgres or MySQL?";
    assert_eq!(
        answers["answered"][key]["declined"],
        "neither: we store files"
    );
    assert_eq!(answers["gate"], "fail");

    // Not an answer: no reason is no decline, and the answer on record needs --force.
    // A blank reason is the core's refusal, as on the web: `invalid_answer` (exit 1).
    let blank = l.run(["decline", "--id", &goal.to_string(), "--reason", " "]);
    assert_eq!(blank.code, 1, "{blank:?}");
    assert_eq!(blank.error_code(), "invalid_answer");
    // Answering it afterwards is allowed, and opens the gate.
    l.ok([
        "answer",
        "--id",
        &goal.to_string(),
        "--answer",
        "files on disk",
    ]);
    assert_eq!(l.run(["check", "--stage", "intake"]).code, 0);
    let refused = l.run([
        "decline",
        "--id",
        &goal.to_string(),
        "--reason",
        "changed my mind",
    ]);
    assert_eq!(refused.error_code(), "conflict");
    l.ok([
        "decline",
        "--id",
        &goal.to_string(),
        "--reason",
        "changed my mind",
        "--force",
    ]);
    let kinds: Vec<String> = history(&l, goal)
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["logged", "declined", "answered", "declined"]);
}

#[test]
fn asking_tools_can_decline_through_import() {
    let l = Ledger::new();
    let a = l.log("s", "First?");
    let b = l.log("s", "Second?");
    let map = l.ok_stdin(
        ["import", "--stage", "s", "--format", "map"],
        format!("{{\"{a}\": {{\"decline\": \"ask me after the demo\"}}}}"),
    );
    assert_eq!(map["declined_ids"], serde_json::json!([a]));
    assert_eq!(l.question(a)["decline_reason"], "ask me after the demo");
    assert_eq!(l.question(a)["channel"], "import");

    let pi = l.ok_stdin(
        ["import", "--stage", "s", "--format", "pi-result"],
        r#"{"answered": true, "answers": [{"question": "Second?", "cancelled": true, "reason": "not mine to say"}]}"#,
    );
    assert_eq!(pi["declined_ids"], serde_json::json!([b]));
    assert_eq!(l.question(b)["decline_reason"], "not mine to say");
}

#[test]
fn sqlite_only_a_user_without_a_name_is_recorded_by_uid_never_as_nobody() {
    crate::sqlite_only!();
    if std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_err()
    {
        return crate::common::skip("setpriv (util-linux) is not installed");
    }
    let l = Ledger::new();
    let id = l.log("s", "Q?");
    // Let an arbitrary uid, one /etc/passwd does not name, write the ledger.
    use std::os::unix::fs::PermissionsExt;
    for path in [l.dir.path().to_path_buf(), l.path.clone(), {
        let mut wal = l.path.clone().into_os_string();
        wal.push("-wal");
        wal.into()
    }] {
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777));
    }
    let shm = format!("{}-shm", l.path.display());
    let _ = std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o777));
    let out = std::process::Command::new("setpriv")
        .args(["--reuid", "54321", "--regid", "54321", "--clear-groups"])
        .arg(crate::common::BIN)
        .arg("--db")
        .arg(&l.path)
        .args(["answer", "--id", &id.to_string(), "--answer", "yes"])
        .env_remove("USER")
        .env_remove("LOGNAME")
        .env_remove("QUESTIONS_USER")
        .current_dir("/")
        .output()
        .unwrap();
    if out.status.code() != Some(0) && String::from_utf8_lossy(&out.stderr).contains("setpriv") {
        return crate::common::skip(&format!("setpriv cannot change user here: {out:?}"));
    }
    assert!(out.status.success(), "{out:?}");
    assert_eq!(l.question(id)["answered_by"], "uid:54321");
}
