//! Text flags take any text, including text that starts with '-', and a usage error names
//! the flag at fault and the command's usage line.

use crate::common::*;

#[test]
fn every_text_flag_takes_a_value_starting_with_a_hyphen() {
    let l = Ledger::new();
    let logged = l.ok([
        "log",
        "--stage",
        "-s",
        "--question",
        "-1 day or -2 days?",
        "--group",
        "-g",
        "--proposed",
        "-1 day",
        "--header",
        "--h",
        "--context",
        "- a list\n- of things",
        "--option",
        "-1 day",
        "--option",
        "- React",
    ]);
    let q = &logged["question"];
    assert_eq!(q["stage"], "-s");
    assert_eq!(q["question"], "-1 day or -2 days?");
    assert_eq!(q["group_name"], "-g");
    assert_eq!(q["proposed"], "-1 day");
    assert_eq!(q["header"], "--h");
    assert_eq!(q["context"], "- a list\n- of things");
    assert_eq!(q["options"][1]["label"], "- React");
    let id = logged["question_id"].to_string();

    let answered = l.ok(["answer", "--id", &id, "--select", "- React"]);
    assert_eq!(answered["question"]["answer"], "- React");
    let answered = l.ok(["answer", "--id", &id, "--answer", "-5", "--force"]);
    assert_eq!(answered["question"]["answer"], "-5");
    let skipped = l.ok(["skip", "--id", &id, "--reason", "-not now", "--force"]);
    assert_eq!(skipped["question"]["skip_reason"], "-not now");

    let free = l.log("-s", "Which stack?");
    let answered = l.ok([
        "answer",
        "--id",
        &free.to_string(),
        "--answer",
        "- React\n- Azure",
    ]);
    assert_eq!(answered["question"]["answer"], "- React\n- Azure");

    assert_eq!(l.ok(["list", "--stage", "-s", "--group", "-g"])["count"], 1);
    assert_eq!(l.ok(["check", "--stage", "-s"])["gate"], "pass");
    assert_eq!(l.ok(["answers", "--stage", "-s"])["gate"], "pass");
    assert_eq!(l.ok(["clear", "--stage", "-s"])["deleted"], 2);
}

#[test]
fn a_missing_required_flag_is_named_with_the_usage_line() {
    let l = Ledger::new();
    let run = l.run(["log", "--stage", "s"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    let message = run.json["error"].as_str().unwrap();
    assert!(message.contains("--question"), "{message}");
    assert!(message.contains("usage: questions log"), "{message}");

    let run = l.run(["answer", "--id", "1"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    let message = run.json["error"].as_str().unwrap();
    assert!(
        message.contains("--answer") && message.contains("--select"),
        "{message}"
    );
    assert!(message.contains("usage: questions answer"), "{message}");

    let run = l.run(["log", "--question", "q"]);
    let message = run.json["error"].as_str().unwrap();
    assert!(message.contains("--stage"), "{message}");
    l.assert_not_created();
}

#[test]
fn a_wrong_value_is_named_with_its_flag_and_the_usage_line() {
    let l = Ledger::new();
    let run = l.run([
        "log",
        "--stage",
        "s",
        "--question",
        "q",
        "--required",
        "maybe",
    ]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    let message = run.json["error"].as_str().unwrap();
    assert!(
        message.contains("--required") && message.contains("maybe"),
        "{message}"
    );
    assert!(message.contains("usage: questions log"), "{message}");

    let run = l.run(["answer", "--id", "-5", "--answer", "x"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    assert!(
        run.json["error"].as_str().unwrap().contains("--id"),
        "{run:?}"
    );
}

#[test]
fn a_flag_value_with_escape_sequences_does_not_reach_stderr_raw() {
    let l = Ledger::new();
    let run = l.run([
        "log",
        "--stage",
        "s",
        "--question",
        "q",
        "--required",
        "\u{1b}]0;owned\u{7}\u{1b}[31mred",
    ]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(!run.stderr.contains('\u{7}'), "{:?}", run.stderr);
}
