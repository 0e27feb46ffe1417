use crate::common::*;

#[test]
fn skip_unblocks_the_gate_and_keeps_the_reason() {
    let l = Ledger::new();
    let id = l.log("s", "q").to_string();
    assert_eq!(l.run(["check", "--stage", "s"]).code, 1);
    let out = l.ok(["skip", "--id", &id, "--reason", "not needed"]);
    assert_eq!(out["procedure"], "skip");
    assert_eq!(out["question"]["status"], "skipped");
    assert_eq!(out["question"]["skip_reason"], "not needed");
    assert_eq!(l.run(["check", "--stage", "s"]).code, 0);
}

#[test]
fn skipping_an_answer_conflicts_unless_forced() {
    let l = Ledger::new();
    let id = l.log("s", "q").to_string();
    l.ok(["answer", "--id", &id, "--answer", "kept"]);
    let run = l.run(["skip", "--id", &id]);
    assert_eq!(run.code, 1);
    assert_eq!(run.error_code(), "conflict");
    assert!(run.json["error"].as_str().unwrap().contains("kept"));
    assert_eq!(l.question(1)["answer"], "kept");

    let out = l.ok(["skip", "--id", &id, "--force"]);
    assert_eq!(out["question"]["status"], "skipped");
    assert_eq!(out["question"]["answer"], serde_json::Value::Null);
    let events = l.ok(["history", "--id", &id])["events"].clone();
    let last = events.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "skipped");
    assert_eq!(last["before"]["answer"], "kept");
}

#[test]
fn skipping_a_skipped_question_succeeds_unchanged() {
    let l = Ledger::new();
    let id = l.log("s", "q").to_string();
    let first = l.ok(["skip", "--id", &id, "--reason", "one"]);
    let again = l.ok(["skip", "--id", &id, "--reason", "two"]);
    assert_eq!(again["question"], first["question"]);
    let events = l.ok(["history", "--id", &id])["events"].clone();
    assert_eq!(
        events.as_array().unwrap().len(),
        2,
        "logged + one skip: {events}"
    );
}

#[test]
fn skip_needs_a_known_id() {
    let l = Ledger::new();
    l.log("s", "q");
    let run = l.run(["skip", "--id", "5"]);
    assert_eq!((run.code, run.error_code()), (1, "not_found"));
    let run = l.run(["skip", "--id"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
}
