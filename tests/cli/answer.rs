use crate::common::*;

#[test]
fn answer_records_the_answer() {
    let l = Ledger::new();
    let id = l.log("intake", "Goal?");
    let out = l.ok(["answer", "--id", &id.to_string(), "--answer", "A dashboard"]);
    assert_eq!(out["procedure"], "answer");
    let q = &out["question"];
    assert_eq!(q["status"], "answered");
    assert_eq!(q["answer"], "A dashboard");
    assert_eq!(q["answered_at"], NOW);
    assert_eq!(q["was_custom"], serde_json::Value::Null);
    assert_eq!(l.question(id)["answer"], "A dashboard");
}

#[test]
fn a_bad_id_is_a_usage_error_and_an_unknown_one_not_found() {
    let l = Ledger::new();
    l.log("s", "q");
    for args in [
        vec!["answer", "--id", "--answer", "x"],
        vec!["answer", "--answer", "x"],
        vec!["answer", "--id", "0", "--answer", "x"],
        vec!["answer", "--id", "-3", "--answer", "x"],
        vec!["answer", "--id", "abc", "--answer", "x"],
        vec!["answer", "--id", "1"],
    ] {
        let run = l.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "usage");
    }
    // Question 1 must not have been answered by `--id` with no value.
    assert_eq!(l.question(1)["status"], "pending");
    let run = l.run(["answer", "--id", "99", "--answer", "x"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.error_code(), "not_found");
}

#[test]
fn a_second_answer_conflicts_unless_forced_and_the_first_stays_in_history() {
    let l = Ledger::new();
    let id = l.log("s", "q").to_string();
    l.ok(["answer", "--id", &id, "--answer", "first"]);
    let run = l.run(["answer", "--id", &id, "--answer", "second"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.error_code(), "conflict");
    assert!(
        run.json["error"].as_str().unwrap().contains("first"),
        "{run:?}"
    );
    assert_eq!(l.question(id.parse().unwrap())["answer"], "first");

    let forced = l.ok(["answer", "--id", &id, "--answer", "second", "--force"]);
    assert_eq!(forced["question"]["answer"], "second");
    let events = l.ok(["history", "--id", &id])["events"].clone();
    let last = events.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "reanswered");
    assert_eq!(last["before"]["answer"], "first");
    assert_eq!(last["after"]["answer"], "second");
}

#[test]
fn an_empty_answer_is_invalid() {
    let l = Ledger::new();
    let id = l.log("s", "q").to_string();
    for empty in ["", "   ", "\n"] {
        let run = l.run(["answer", "--id", &id, "--answer", empty]);
        assert_eq!(run.code, 1, "{empty:?}: {run:?}");
        assert_eq!(run.error_code(), "invalid_answer");
    }
    assert_eq!(l.question(1)["status"], "pending");
}

#[test]
fn an_answer_may_start_with_a_dash_when_written_with_equals() {
    let l = Ledger::new();
    let id = l.log("s", "Offset?").to_string();
    let out = l.ok(["answer", "--id", &id, "--answer=-5 days"]);
    assert_eq!(out["question"]["answer"], "-5 days");
}

#[test]
fn a_skipped_question_can_be_answered() {
    let l = Ledger::new();
    let id = l.log("s", "q").to_string();
    l.ok(["skip", "--id", &id, "--reason", "later"]);
    let out = l.ok(["answer", "--id", &id, "--answer", "now"]);
    assert_eq!(out["question"]["status"], "answered");
    assert_eq!(out["question"]["skip_reason"], serde_json::Value::Null);
}

#[test]
fn option_labels_select_and_other_text_is_custom() {
    let l = Ledger::new();
    let id = l
        .log_with(
            "s",
            "DB?",
            &["--option", "PostgreSQL (Recommended)", "--option", "SQLite"],
        )
        .to_string();
    let out = l.ok([
        "answer",
        "--id",
        &id,
        "--answer",
        " postgresql (recommended) ",
    ]);
    assert_eq!(out["question"]["answer"], "PostgreSQL");
    assert_eq!(
        out["question"]["selected"],
        serde_json::json!(["PostgreSQL"])
    );
    assert_eq!(out["question"]["was_custom"], false);

    let out = l.ok(["answer", "--id", &id, "--answer", "MySQL", "--force"]);
    assert_eq!(out["question"]["answer"], "MySQL");
    assert_eq!(out["question"]["selected"], serde_json::json!([]));
    assert_eq!(out["question"]["was_custom"], true);

    let out = l.ok(["answer", "--id", &id, "--select", "sqlite", "--force"]);
    assert_eq!(out["question"]["answer"], "SQLite");
}

#[test]
fn option_rules_refuse_what_the_question_does_not_take() {
    let l = Ledger::new();
    let strict = l
        .log_with(
            "s",
            "DB?",
            &["--option", "A", "--option", "B", "--no-freeform"],
        )
        .to_string();
    let plain = l.log("s", "Free?").to_string();
    for args in [
        vec!["answer", "--id", &strict, "--answer", "C"],
        vec!["answer", "--id", &strict, "--select", "Z"],
        vec!["answer", "--id", &strict, "--select", "A", "--select", "B"],
        vec!["answer", "--id", &plain, "--select", "A"],
    ] {
        let run = l.run(&args);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "invalid_answer");
    }
    assert_eq!(l.ok(["list", "--status", "answered"])["count"], 0);
}

#[test]
fn multi_select_joins_the_labels_then_custom_text() {
    let l = Ledger::new();
    let id = l
        .log_with(
            "s",
            "Features?",
            &[
                "--option",
                "Auth",
                "--option",
                "Search",
                "--option",
                "Feeds",
                "--multi-select",
            ],
        )
        .to_string();
    let out = l.ok([
        "answer", "--id", &id, "--select", "feeds", "--select", "Auth", "--answer", "Export",
    ]);
    let q = &out["question"];
    assert_eq!(q["selected"], serde_json::json!(["Feeds", "Auth"]));
    assert_eq!(q["answer"], "Feeds, Auth, Export");
    assert_eq!(q["was_custom"], true);
}
