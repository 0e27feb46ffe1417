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
const TAB: &str = "\t";

fn spawn(l: &Ledger, stage: &str) -> PtySession {
    let mut cmd = Command::new(BIN);
    cmd.arg("--db")
        .arg(l.db())
        .args(["ask", "--stage", stage, "--json"]);
    in_pty(cmd)
}

fn in_pty(mut cmd: Command) -> PtySession {
    cmd.env("TERM", "xterm")
        .env("QUESTIONS_NOW", NOW)
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
    // The cursor starts on "leave it pending": nothing is chosen for the person. Below
    // it, the proposal (the recommended option), then the options.
    p.exp_string("Accept the proposal: PostgreSQL").unwrap();
    keys(&mut p, DOWN);
    keys(&mut p, DOWN);
    keys(&mut p, DOWN);
    keys(&mut p, ENTER); // PostgreSQL, chosen as an option
    p.exp_string("Which environments?").unwrap();
    keys(&mut p, " "); // prod
    keys(&mut p, DOWN);
    keys(&mut p, DOWN);
    keys(&mut p, " "); // preview
    keys(&mut p, ENTER);
    p.exp_string("What should we call it?").unwrap();
    keys(&mut p, TAB); // fills in the proposal, taken as it is
    keys(&mut p, ENTER);
    p.exp_string("Anything else?").unwrap();
    keys(&mut p, DOWN);
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
    // Taking the proposal is recorded as that, by the person.
    let taken = l.ok(["history", "--id", "3"])["events"][1].clone();
    assert_eq!(taken["event"], "defaulted");
    assert_eq!(taken["channel"], "ask");
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
    keys(&mut p, DOWN);
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
    keys(&mut p, DOWN);
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
    // A session of its own has no controlling terminal, wherever the suite runs.
    let out = Command::new("setsid")
        .arg(BIN)
        .arg("--db")
        .arg(l.db())
        .args(["ask", "--stage", "s"])
        .env_remove("QUESTIONS_DB")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error_code"], "usage");
    let message = json["error"].as_str().unwrap();
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
    // Leave, SQLite, PostgreSQL, Other, then Decline.
    for _ in 0..4 {
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

#[test]
fn ask_prompts_on_the_terminal_with_its_json_redirected_to_a_file() {
    let l = Ledger::new();
    let db = l.log_with(
        "s",
        "Which database?",
        &["--option", "SQLite", "--option", "PostgreSQL"],
    );
    let out = l.dir.path().join("answers.json");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"exec "$0" --db "$1" ask --stage s > "$2""#)
        .arg(BIN)
        .arg(l.db())
        .arg(&out);
    let mut p = in_pty(cmd);
    p.exp_string("Which database?").unwrap();
    keys(&mut p, DOWN);
    keys(&mut p, ENTER); // SQLite
    p.exp_string("Record 1 answer(s) now?").unwrap();
    keys(&mut p, ENTER);
    assert_eq!(exit_code(&mut p), 0);
    // The JSON went to the file, whole, and not to the terminal.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(json["ok"], true);
    assert_eq!(json["procedure"], "ask");
    assert_eq!(json["answered_ids"], serde_json::json!([db]));
    assert_eq!(l.question(db)["answer"], "SQLite");
}

#[test]
fn on_a_terminal_ask_shows_deadlines_and_ends_with_a_summary_not_json() {
    let l = Ledger::new();
    let beta = l.log_with(
        "s",
        "Ship the beta on Friday?",
        &[
            "--option",
            "Yes",
            "--option",
            "No",
            "--proposed",
            "No",
            "--expires-in",
            "2h",
            "--on-expiry",
            "default",
        ],
    );
    let name = l.log("s", "What should we call it?");
    let mut cmd = Command::new(BIN);
    cmd.arg("--db").arg(l.db()).args(["ask", "--stage", "s"]);
    let mut p = in_pty(cmd);
    p.exp_string("Time left: in 2 h 0 min: answered ").unwrap();
    p.exp_string("No").unwrap();
    p.exp_string(" unless you answer").unwrap();
    p.exp_string("Accept the proposal: No").unwrap();
    keys(&mut p, DOWN);
    keys(&mut p, ENTER); // the proposal, taken by its own entry
    p.exp_string("What should we call it?").unwrap();
    keys(&mut p, ENTER); // an empty answer leaves it pending
    p.exp_string("Record 1 answer(s) now?").unwrap();
    keys(&mut p, ENTER);
    // rexpect reads bytes one char each: the summary's UTF-8 is put back together.
    let summary = p.exp_eof().unwrap();
    let summary = String::from_utf8_lossy(&summary.chars().map(|c| c as u8).collect::<Vec<u8>>())
        .into_owned();
    assert!(
        summary.contains(&format!("#{beta} Ship the beta on Friday? → “No”")),
        "{summary}"
    );
    assert!(summary.contains("Still pending:"), "{summary}");
    assert!(
        summary.contains(&format!("#{name} What should we call it? (required)")),
        "{summary}"
    );
    assert!(
        summary.contains("The gate of stage 's' is shut: 1 required question(s) pending"),
        "{summary}"
    );
    assert!(
        !summary.contains("\"procedure\""),
        "JSON on the terminal: {summary}"
    );
    assert_eq!(l.question(name)["status"], "pending");
    let taken = l.ok(["history", "--id", &beta.to_string()])["events"][1].clone();
    assert_eq!(taken["event"], "defaulted");
}

#[test]
fn a_question_without_a_title_is_headed_without_a_dangling_dot() {
    let l = Ledger::new();
    l.log_with(
        "design",
        "What should we call it?",
        &["--required", "false"],
    );
    let mut p = spawn(&l, "design");
    // (rexpect reads bytes one by one, so the dot after it is not matched here.)
    p.exp_string("[1/1] design ").unwrap();
    keys(&mut p, ESC);
    keys(&mut p, "y");
    keys(&mut p, ENTER);
    let _ = p.process_mut().exit();
}

/// `ask` over https://: a person's token shows the server's pending questions and records
/// the answers as its person, all at once (channel `api`, as every change a token makes);
/// an agent's token is refused them and nothing is recorded.
#[test]
#[cfg(all(feature = "serve", feature = "remote"))]
fn over_https_a_person_token_records_its_answers_and_an_agent_token_none() {
    let l = Ledger::new();
    let token = |args: &[&str]| {
        let mut all = vec!["token", "create"];
        all.extend_from_slice(args);
        l.ok(all)["token"].as_str().unwrap().to_string()
    };
    let dana = token(&["dana-phone", "--person", "dana"]);
    let agent = token(&["ci-runner", "--agent"]);
    let name = l.log("s", "What should we call it?");
    let s = crate::serve::Served::start(&l, &[]);
    let over = |token: &str| {
        let mut cmd = Command::new(BIN);
        cmd.args(["--db", &s.base(), "ask", "--stage", "s", "--json"])
            .env("QUESTIONS_TOKEN", token)
            .env_remove("QUESTIONS_TOKEN_FILE")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy");
        let mut p = in_pty(cmd);
        p.exp_string("What should we call it?").unwrap();
        keys(&mut p, "orders");
        keys(&mut p, ENTER);
        p.exp_string("Record 1 answer(s) now?").unwrap();
        keys(&mut p, ENTER);
        exit_code(&mut p)
    };
    assert_eq!(over(&agent), 2, "an agent token may not answer");
    assert_eq!(l.question(name)["status"], "pending");
    assert_eq!(over(&dana), 0);
    let q = l.question(name);
    assert_eq!(
        (&q["answer"], &q["answered_by"], &q["channel"]),
        (
            &serde_json::json!("orders"),
            &serde_json::json!("dana"),
            &serde_json::json!("api")
        ),
        "{q}"
    );
}
