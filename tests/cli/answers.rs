use serde_json::json;

use crate::common::*;

#[test]
fn answers_are_keyed_for_the_subagent_with_proposed_fallbacks() {
    let l = Ledger::new();
    l.log_with(
        "intake",
        "What is the goal?",
        &["--group", "Goal", "--proposed", "A blog"],
    );
    l.log_with(
        "intake",
        "Risk?",
        &[
            "--group",
            "Risk tolerance",
            "--proposed",
            "medium",
            "--required",
            "false",
        ],
    );
    l.log_with("intake", "Which database?", &["--header", "Database"]);
    l.log_with("intake", "Another goal?", &["--group", "Goal"]);
    l.log("intake", "Deadline?");
    l.log("other", "Elsewhere?");
    l.ok(["answer", "--id", "1", "--answer", "A dashboard"]);
    l.ok(["answer", "--id", "3", "--answer", "SQLite"]);
    l.ok(["answer", "--id", "4", "--answer", "Speed"]);
    l.ok(["skip", "--id", "5"]);

    let out = l.ok(["answers", "--stage", "intake"]);
    assert_eq!(out["procedure"], "answers");
    assert_eq!(out["gate"], "pass");
    assert_eq!(
        out["answered"],
        json!({"Goal": "A dashboard", "Risk tolerance": "medium", "Database": "SQLite", "Goal (2)": "Speed"})
    );
    let details = out["details"].as_array().unwrap();
    assert_eq!(details.len(), 5);
    assert_eq!(details[1]["source"], "proposed");
    assert_eq!(details[4]["key"], "Deadline?");
    assert_eq!(details[4]["source"], "none");
    assert_eq!(details[4]["value"], serde_json::Value::Null);
}

#[test]
fn accept_defaults_answers_optional_questions_with_their_proposed_values() {
    let l = Ledger::new();
    l.log_with(
        "s",
        "Risk?",
        &["--proposed", "medium", "--required", "false"],
    );
    l.log_with("s", "Goal?", &["--proposed", "A blog"]);
    l.log_with("s", "No default?", &["--required", "false"]);
    let out = l.ok(["accept-defaults", "--stage", "s"]);
    assert_eq!(ids(&out["answered_ids"]), vec![1]);
    let q = l.question(1);
    assert_eq!(
        (q["answer"].as_str(), q["was_custom"].as_bool()),
        (Some("medium"), Some(false))
    );
    assert_eq!(l.question(2)["status"], "pending");
    let events = l.ok(["history", "--id", "1"])["events"].clone();
    assert_eq!(
        events.as_array().unwrap().last().unwrap()["event"],
        "defaulted"
    );

    let out = l.ok(["accept-defaults", "--stage", "s", "--include-required"]);
    assert_eq!(ids(&out["answered_ids"]), vec![2]);
    assert_eq!(l.ok(["check", "--stage", "s"])["gate"], "pass");
    assert_eq!(l.question(3)["status"], "pending");
}
