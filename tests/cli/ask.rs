//! `ask` through a real pseudo-terminal: keys in, ledger state out.

use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

use rexpect::process::WaitStatus;
use rexpect::session::PtySession;

use crate::common::*;

const DOWN: &str = "\u{1b}[B";
const ENTER: &str = "\r";
const ESC: &str = "\u{1b}";

fn spawn(l: &Ledger, stage: &str) -> PtySession {
    let mut cmd = Command::new(BIN);
    cmd.arg("--db")
        .arg(l.db())
        .args(["ask", "--stage", stage])
        .env("TERM", "xterm")
        .env_remove("QUESTIONS_DB");
    rexpect::session::spawn_command(cmd, Some(15_000)).expect("spawn in a pty")
}

/// Sends keys with a pause, as a person would: crossterm reads a lone Esc only when
/// nothing follows it at once.
fn keys(p: &mut PtySession, keys: &str) {
    p.send(keys).unwrap();
    p.flush().unwrap();
    sleep(Duration::from_millis(150));
}

fn exit_code(p: &mut PtySession) -> i32 {
    p.exp_eof().unwrap();
    match p.process_mut().wait().unwrap() {
        WaitStatus::Exited(_, code) => code,
        other => panic!("ask did not exit normally: {other:?}"),
    }
}

#[test]
fn ask_records_options_other_text_and_multi_select_after_confirming() {
    let l = Ledger::new();
    l.log_with(
        "s",
        "Which database?",
        &["--option", "SQLite", "--option", "PostgreSQL (Recommended)"],
    );
    l.log_with(
        "s",
        "Which environments?",
        &[
            "--option",
            "prod",
            "--option",
            "staging",
            "--option",
            "preview",
            "--multi-select",
        ],
    );
    l.log_with("s", "What should we call it?", &["--proposed", "orders"]);
    l.log_with(
        "s",
        "Anything else?",
        &["--option", "No", "--option", "Yes"],
    );

    let mut p = spawn(&l, "s");
    p.exp_string("Which database?").unwrap();
    keys(&mut p, ENTER); // the recommended option is preselected
    p.exp_string("Which environments?").unwrap();
    keys(&mut p, " "); // prod
    keys(&mut p, DOWN);
    keys(&mut p, DOWN);
    keys(&mut p, " "); // preview
    keys(&mut p, ENTER);
    p.exp_string("What should we call it?").unwrap();
    keys(&mut p, ENTER); // accept the proposed value
    p.exp_string("Anything else?").unwrap();
    keys(&mut p, DOWN);
    keys(&mut p, DOWN); // Other
    keys(&mut p, ENTER);
    p.exp_string("Your answer").unwrap();
    keys(&mut p, "Ship it on Friday");
    keys(&mut p, ENTER);
    p.exp_string("Record 4 answer(s) now?").unwrap();
    keys(&mut p, ENTER);
    assert_eq!(exit_code(&mut p), 0);

    assert_eq!(l.question(1)["answer"], "PostgreSQL");
    assert_eq!(
        l.question(2)["selected"],
        serde_json::json!(["prod", "preview"])
    );
    assert_eq!(l.question(3)["answer"], "orders");
    assert_eq!(l.question(4)["answer"], "Ship it on Friday");
    assert_eq!(l.question(4)["was_custom"], true);
    assert_eq!(l.ok(["check", "--stage", "s"])["gate"], "pass");
}

#[test]
fn esc_asks_before_discarding_and_a_cancel_records_nothing() {
    let l = Ledger::new();
    l.log_with("s", "First?", &["--option", "A", "--option", "B"]);
    l.log_with("s", "Second?", &["--option", "C", "--option", "D"]);
    let mut p = spawn(&l, "s");
    p.exp_string("First?").unwrap();
    keys(&mut p, ENTER);
    p.exp_string("Second?").unwrap();
    keys(&mut p, ESC);
    p.exp_string("Discard the 1 answer(s) given so far?")
        .unwrap();
    keys(&mut p, "y");
    keys(&mut p, ENTER);
    assert_eq!(exit_code(&mut p), 1);
    assert_eq!(l.ok(["list", "--status", "answered"])["count"], 0);
}

#[test]
fn escape_sequences_in_questions_never_reach_the_terminal() {
    let l = Ledger::new();
    l.log_with(
        "s",
        "Evil\u{1b}]0;owned\u{7} title\u{1b}[2J?",
        &[
            "--option",
            "Fine\u{1b}[31m",
            "--context",
            "ctx\u{1b}[1mbold",
        ],
    );
    let mut p = spawn(&l, "s");
    let mut shown = p.exp_string("Fine").unwrap();
    keys(&mut p, ENTER);
    shown.push_str(&p.exp_string("Record").unwrap());
    keys(&mut p, ENTER);
    assert_eq!(exit_code(&mut p), 0);
    assert!(
        !shown.contains("owned"),
        "an OSC title sequence got through: {shown:?}"
    );
    assert!(
        !shown.contains("\u{1b}]"),
        "an OSC sequence got through: {shown:?}"
    );
    assert!(
        !shown.contains("\u{1b}[2J"),
        "a clear-screen got through: {shown:?}"
    );
    assert!(
        !shown.contains("\u{1b}[1mbold"),
        "styling from the ledger got through: {shown:?}"
    );
    assert!(shown.contains("Evil title?"), "{shown:?}");
    assert!(shown.contains("ctxbold"), "{shown:?}");
    // What is recorded is the option as logged; only the display was cleaned.
    assert_eq!(l.question(1)["answer"], "Fine\u{1b}[31m");
}

#[test]
fn without_a_terminal_ask_points_to_render_and_import() {
    let l = Ledger::new();
    l.log("s", "q");
    let run = l.run_stdin(["ask", "--stage", "s"], "");
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    let message = run.json["error"].as_str().unwrap();
    assert!(
        message.contains("render") && message.contains("import"),
        "{message}"
    );
}

#[test]
fn a_person_can_decline_in_ask_with_a_reason() {
    let l = Ledger::new();
    let db = l.log_with(
        "s",
        "Which database?",
        &["--option", "SQLite", "--option", "PostgreSQL"],
    );
    let name = l.log("s", "What should we call it?");

    let mut p = spawn(&l, "s");
    p.exp_string("Which database?").unwrap();
    // SQLite, PostgreSQL, Other, then Decline.
    for _ in 0..3 {
        keys(&mut p, DOWN);
    }
    keys(&mut p, ENTER);
    p.exp_string("Why won't you answer it as asked?").unwrap();
    keys(&mut p, "we have not picked a host yet");
    keys(&mut p, ENTER);
    p.exp_string("What should we call it?").unwrap();
    keys(&mut p, "/decline naming is marketing's call");
    keys(&mut p, ENTER);
    p.exp_string("Record 0 answer(s) and 2 decline(s) now?")
        .unwrap();
    keys(&mut p, ENTER);
    assert_eq!(exit_code(&mut p), 0);

    for (id, reason) in [
        (db, "we have not picked a host yet"),
        (name, "naming is marketing's call"),
    ] {
        let q = l.question(id);
        assert_eq!(q["status"], "declined", "{q}");
        assert_eq!(q["decline_reason"], reason);
        assert_eq!(q["channel"], "ask");
    }
}
