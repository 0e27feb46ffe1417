use serde_json::json;

use crate::common::*;

fn stage(l: &Ledger) {
    l.log_with(
        "s",
        "What is the goal?",
        &["--group", "Goal", "--proposed", "A blog"],
    );
    l.log_with(
        "s",
        "Which database?",
        &[
            "--header",
            "Database",
            "--option",
            "SQLite",
            "--option",
            "PostgreSQL (Recommended)",
            "--no-freeform",
        ],
    );
    l.log_with(
        "s",
        "Which environments?",
        &[
            "--header",
            "Envs",
            "--option",
            "prod",
            "--option",
            "staging",
            "--multi-select",
        ],
    );
}

#[test]
fn ask_user_answers_keyed_by_question_text_pass_the_gate() {
    let l = Ledger::new();
    stage(&l);
    // What AskUserQuestion gives back for the batch `render` printed.
    let answers = json!({"answers": {
        "What is the goal?": "A blog (Recommended)",
        "Which database?": "PostgreSQL (Recommended)",
        "Which environments?": "prod, staging",
    }});
    let out = l.ok_stdin(["import", "--stage", "s"], answers.to_string());
    assert_eq!(out["procedure"], "import");
    assert_eq!(out["format"], "ask-user");
    assert_eq!(ids(&out["answered_ids"]), vec![1, 2, 3]);
    assert_eq!(l.question(1)["answer"], "A blog");
    assert_eq!(l.question(2)["answer"], "PostgreSQL");
    assert_eq!(l.question(2)["was_custom"], false);
    assert_eq!(l.question(3)["selected"], json!(["prod", "staging"]));
    assert_eq!(l.ok(["check", "--stage", "s"])["gate"], "pass");
    let events = l.ok(["history", "--id", "2"])["events"].clone();
    assert_eq!(
        events.as_array().unwrap().last().unwrap()["event"],
        "imported"
    );
}

#[test]
fn vscode_answers_keyed_by_header_and_skips() {
    let l = Ledger::new();
    stage(&l);
    let answers = json!({"answers": {
        "Goal": {"selected": [], "freeText": "A dashboard", "skipped": false},
        "Database": {"selected": ["SQLite"], "freeText": null, "skipped": false},
        "Envs": {"selected": [], "freeText": null, "skipped": true},
    }});
    let out = l.ok_stdin(
        ["import", "--stage", "s", "--format", "vscode"],
        answers.to_string(),
    );
    assert_eq!(ids(&out["answered_ids"]), vec![1, 2]);
    assert_eq!(ids(&out["skipped_ids"]), vec![3]);
    assert_eq!(l.question(1)["answer"], "A dashboard");
    assert_eq!(l.question(3)["status"], "skipped");
}

#[test]
fn a_cancelled_pi_result_records_nothing() {
    let l = Ledger::new();
    stage(&l);
    let before = l.all();
    let run = l.run_stdin(
        ["import", "--stage", "s"],
        r#"{"answered": false, "answers": [], "cancelled": true}"#,
    );
    assert_eq!((run.code, run.error_code()), (1, "cancelled"));
    assert_eq!(l.all(), before);
    let answered = json!({"answered": true, "answers": [
        {"question": "Which database?", "answer": "SQLite", "selectedOption": "SQLite", "wasCustom": false},
        {"question": "Which environments?", "answer": ["prod"], "wasCustom": false},
    ]});
    let out = l.ok_stdin(["import", "--stage", "s"], answered.to_string());
    assert_eq!(out["format"], "pi-result");
    assert_eq!(ids(&out["answered_ids"]), vec![2, 3]);
}

#[test]
fn the_filled_pending_file_imports_and_null_stays_pending() {
    let l = Ledger::new();
    stage(&l);
    let path = l.dir.path().join("pending.json");
    l.ok([
        "render",
        "--stage",
        "s",
        "--format",
        "pi-pending",
        "--out",
        path.to_str().unwrap(),
    ]);
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    file["questions"][0]["answer"] = json!("A dashboard");
    file["questions"][1]["answer"] = json!("PostgreSQL (Recommended)");
    std::fs::write(&path, file.to_string()).unwrap();
    let out = l.ok(["import", "--stage", "s", "--file", path.to_str().unwrap()]);
    assert_eq!(out["format"], "pi-pending");
    assert_eq!(ids(&out["answered_ids"]), vec![1, 2]);
    assert_eq!(l.question(3)["status"], "pending");
}

#[test]
fn a_map_by_id_answers_selects_and_skips() {
    let l = Ledger::new();
    stage(&l);
    let map = json!({"1": "A dashboard", "2": ["SQLite"], "3": {"skip": true, "reason": "later"}});
    let out = l.ok_stdin(
        ["import", "--stage", "s", "--format", "map"],
        map.to_string(),
    );
    assert_eq!(ids(&out["answered_ids"]), vec![1, 2]);
    assert_eq!(l.question(3)["skip_reason"], "later");
}

#[test]
fn one_bad_answer_in_ten_records_none() {
    let l = Ledger::new();
    for i in 1..=10 {
        l.log_with(
            "s",
            &format!("Q{i}?"),
            &["--option", "yes", "--option", "no", "--no-freeform"],
        );
    }
    let mut map = serde_json::Map::new();
    for i in 1..=10 {
        map.insert(i.to_string(), json!(if i == 7 { "maybe" } else { "yes" }));
    }
    let run = l.run_stdin(
        ["import", "--stage", "s"],
        serde_json::Value::Object(map).to_string(),
    );
    assert_eq!((run.code, run.error_code()), (1, "invalid_answer"));
    assert!(
        run.json["error"].as_str().unwrap().contains("[\"7\"]"),
        "{run:?}"
    );
    assert_eq!(l.ok(["list", "--status", "answered"])["count"], 0);
}

#[test]
fn unknown_keys_and_other_stages_are_errors_and_record_nothing() {
    let l = Ledger::new();
    stage(&l);
    l.log("other", "Elsewhere?");
    for (body, code) in [
        (
            json!({"answers": {"What is the goal?": "x", "Cleared meanwhile?": "y"}}),
            "not_found",
        ),
        (json!({"1": "x", "4": "y"}), "not_found"),
        (json!({"1": "x", "99": "y"}), "not_found"),
    ] {
        let run = l.run_stdin(["import", "--stage", "s"], body.to_string());
        assert_eq!((run.code, run.error_code()), (1, code), "{body}");
    }
    assert_eq!(l.ok(["list", "--status", "answered"])["count"], 0);
    let run = l.run_stdin(["import", "--stage", "s"], "not json");
    assert_eq!((run.code, run.error_code()), (1, "parse_error"));
}

#[test]
fn a_different_answer_on_record_conflicts_the_same_one_is_harmless() {
    let l = Ledger::new();
    stage(&l);
    l.ok(["answer", "--id", "1", "--answer", "A blog"]);
    let same = l.ok_stdin(
        ["import", "--stage", "s"],
        json!({"1": "A blog"}).to_string(),
    );
    assert_eq!(ids(&same["answered_ids"]), Vec::<i64>::new());
    let run = l.run_stdin(
        ["import", "--stage", "s"],
        json!({"1": "A shop", "2": "SQLite"}).to_string(),
    );
    assert_eq!((run.code, run.error_code()), (1, "conflict"));
    assert_eq!(l.question(2)["status"], "pending", "all or nothing");
    let forced = l.ok_stdin(
        ["import", "--stage", "s", "--force"],
        json!({"1": "A shop"}).to_string(),
    );
    assert_eq!(ids(&forced["answered_ids"]), vec![1]);
    let events = l.ok(["history", "--id", "1"])["events"].clone();
    let last = events.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["before"]["answer"], "A blog");
    assert_eq!(last["after"]["answer"], "A shop");
}

#[test]
fn the_options_render_made_up_import_as_what_they_stand_for() {
    let l = Ledger::new();
    l.log_with("s", "Goal?", &["--proposed", "A blog\nwith comments"]);
    l.log("s", "Deadline?");
    l.log("s", "Budget?");
    l.log_with("s", "Only one?", &["--option", "Yes"]);
    let rendered = l.ok(["render", "--stage", "s"]);
    let qs = rendered["batches"][0]["payload"]["questions"].clone();
    let label = |i: usize, j: usize| qs[i]["options"][j]["label"].as_str().unwrap().to_string();
    assert_eq!(label(0, 0), "A blog with comments (Recommended)");
    let answers = json!({"answers": {
        "Goal?": label(0, 0),
        "Deadline?": "Skip this question",
        "Budget?": "Decide later",
        "Only one?": label(3, 1),
    }});
    let out = l.ok_stdin(["import", "--stage", "s"], answers.to_string());
    assert_eq!(ids(&out["answered_ids"]), vec![1]);
    assert_eq!(ids(&out["skipped_ids"]), vec![2, 4]);
    assert_eq!(l.question(1)["answer"], "A blog\nwith comments");
    assert_eq!(l.question(2)["status"], "skipped");
    assert_eq!(l.question(3)["status"], "pending");
    assert_eq!(l.question(3)["answer"], serde_json::Value::Null);
    assert_eq!(l.question(4)["status"], "skipped");
}

#[test]
fn a_header_like_the_collision_form_is_a_header_not_an_id() {
    let l = Ledger::new();
    l.log_with("s", "Ship it?", &["--header", "Release"]);
    l.log_with("s", "Backport to 1.x?", &["--header", "Backport #1"]);
    let answers = json!({"answers": {
        "Backport #1": {"selected": [], "freeText": "yes", "skipped": false},
    }});
    let out = l.ok_stdin(
        ["import", "--stage", "s", "--format", "vscode"],
        answers.to_string(),
    );
    assert_eq!(ids(&out["answered_ids"]), vec![2]);
    assert_eq!(l.question(1)["status"], "pending");
    assert_eq!(l.run(["check", "--stage", "s"]).json["gate"], "fail");

    // `X #N` names question N only when N's header is X: here it is not.
    let run = l.run_stdin(
        ["import", "--stage", "s", "--format", "vscode"],
        json!({"answers": {"Scope #1": {"freeText": "x"}}}).to_string(),
    );
    assert_eq!((run.code, run.error_code()), (1, "not_found"));
    assert_eq!(l.question(1)["status"], "pending");

    // The form render itself wrote for a shared header reads back to its question.
    l.log_with("t", "First?", &["--header", "Scope"]);
    l.log_with("t", "Second?", &["--header", "Scope"]);
    let out = l.ok_stdin(
        ["import", "--stage", "t", "--format", "vscode"],
        json!({"answers": {"Scope #4": {"freeText": "second"}}}).to_string(),
    );
    assert_eq!(ids(&out["answered_ids"]), vec![4]);
}
