use crate::common::*;

#[test]
fn log_prints_the_whole_question_with_every_key() {
    let l = Ledger::new();
    let out = l.ok([
        "log",
        "--stage",
        "intake",
        "--group",
        "Goal",
        "--question",
        "What is the primary goal?",
        "--proposed",
        "Build a blog platform",
    ]);
    assert_eq!(out["procedure"], "log");
    assert_eq!(out["created"], true);
    let q = &out["question"];
    assert_eq!(out["question_id"], q["id"]);
    for key in question_keys() {
        assert!(q.get(&key).is_some(), "missing key {key}: {q}");
    }
    assert_eq!(q["stage"], "intake");
    assert_eq!(q["group_name"], "Goal");
    assert_eq!(q["proposed"], "Build a blog platform");
    assert_eq!(q["required"], true);
    assert_eq!(q["status"], "pending");
    assert_eq!(q["created_at"], NOW);
    assert_eq!(q["updated_at"], NOW);
    assert_eq!(q["source"], "cli");
    assert_eq!(q["options"], serde_json::json!([]));
    assert_eq!(q["allow_freeform"], true);
}

#[test]
fn the_same_question_is_logged_once() {
    let l = Ledger::new();
    let args = [
        "log",
        "--stage",
        "intake",
        "--group",
        "Goal",
        "--question",
        "Goal?",
    ];
    let first = l.ok(args);
    let again = l.ok(args);
    assert_eq!(again["created"], false);
    assert_eq!(again["question_id"], first["question_id"]);
    // Whatever its status: an answered question is returned as it is.
    let id = first["question_id"].as_i64().unwrap();
    l.ok(["answer", "--id", &id.to_string(), "--answer", "A blog"]);
    let third = l.ok(args);
    assert_eq!(third["created"], false);
    assert_eq!(third["question"]["answer"], "A blog");
    // Another group or stage is another question.
    let other = l.ok([
        "log",
        "--stage",
        "intake",
        "--group",
        "Other",
        "--question",
        "Goal?",
    ]);
    assert_eq!(other["created"], true);
    let ungrouped = l.ok(["log", "--stage", "intake", "--question", "Goal?"]);
    assert_eq!(ungrouped["created"], true);
    assert_eq!(l.ok(["list"])["count"], 3);
}

#[test]
fn allow_duplicate_forces_a_new_row() {
    let l = Ledger::new();
    let a = l.log("s", "Same?");
    let b = l.ok([
        "log",
        "--stage",
        "s",
        "--question",
        "Same?",
        "--allow-duplicate",
    ]);
    assert_eq!(b["created"], true);
    assert_ne!(b["question_id"], a);
}

#[test]
fn required_reads_every_spelling() {
    let l = Ledger::new();
    for (i, (value, expected)) in [
        ("true", true),
        ("TRUE", true),
        ("yes", true),
        ("1", true),
        ("false", false),
        ("False", false),
        ("NO", false),
        ("0", false),
    ]
    .iter()
    .enumerate()
    {
        let out = l.ok([
            "log",
            "--stage",
            "s",
            "--question",
            &format!("q{i}"),
            "--required",
            value,
        ]);
        assert_eq!(out["question"]["required"], *expected, "--required {value}");
    }
    for bad in ["maybe", "", "2"] {
        let run = l.run(["log", "--stage", "s", "--question", "x", "--required", bad]);
        assert_eq!(run.code, 2, "--required {bad:?}: {run:?}");
        assert_eq!(run.error_code(), "usage");
        assert_eq!(run.json["procedure"], "log");
    }
}

#[test]
fn blank_stage_or_question_is_a_usage_error_and_writes_nothing() {
    let l = Ledger::new();
    for args in [
        vec!["log", "--stage", "", "--question", "q"],
        vec!["log", "--stage", "  ", "--question", "q"],
        vec!["log", "--stage", "s", "--question", ""],
        vec!["log", "--stage", "s", "--question", " \t"],
        vec!["log", "--stage", "s"],
        vec!["log", "--question", "q"],
    ] {
        let run = l.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "usage");
    }
    l.assert_not_created();
}

#[test]
fn options_are_stored_with_their_flags() {
    let l = Ledger::new();
    let out = l.ok([
        "log",
        "--stage",
        "design",
        "--question",
        "Which database?",
        "--header",
        "Database",
        "--context",
        "We expect 10k users",
        "--option",
        "PostgreSQL (Recommended)",
        "--option",
        "SQLite",
        "--no-freeform",
    ]);
    let q = &out["question"];
    assert_eq!(q["header"], "Database");
    assert_eq!(q["context"], "We expect 10k users");
    assert_eq!(
        q["options"],
        serde_json::json!([
            {"label": "PostgreSQL", "description": null, "recommended": true},
            {"label": "SQLite", "description": null, "recommended": false},
        ])
    );
    assert_eq!(q["allow_freeform"], false);
    assert_eq!(q["multi_select"], false);

    let json = l.ok([
        "log",
        "--stage",
        "design",
        "--question",
        "Which features?",
        "--multi-select",
        "--options-json",
        r#"[{"label":"Auth","description":"Log in"},{"label":"Search","recommended":true}]"#,
    ]);
    let q = &json["question"];
    assert_eq!(q["multi_select"], true);
    assert_eq!(q["options"][0]["description"], "Log in");
    assert_eq!(q["options"][1]["recommended"], true);
}

#[test]
fn malformed_options_are_usage_errors() {
    let l = Ledger::new();
    for extra in [
        vec!["--options-json", "not json"],
        vec!["--options-json", r#"[{"description":"no label"}]"#],
        vec!["--options-json", r#"{"label":"not an array"}"#],
        vec!["--option", "A", "--option", "a"],
        vec!["--option", " "],
        vec!["--no-freeform"],
        vec!["--multi-select"],
    ] {
        let mut args = vec!["log", "--stage", "s", "--question", "q"];
        args.extend(extra.iter().copied());
        let run = l.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "usage");
    }
    l.assert_not_created();
}

#[test]
fn text_is_stored_as_given_including_sql_and_unicode() {
    let l = Ledger::new();
    let text = "Robert'); DROP TABLE questions;-- «ünïcødé» 🚀\nsecond line";
    let id = l.log("s", text);
    assert_eq!(l.question(id)["question"], text);
    assert_eq!(l.ok(["list"])["count"], 1);
}

#[test]
fn an_urgent_question_says_so_and_no_other_does() {
    let l = Ledger::new();
    let urgent = l.ok([
        "log",
        "--stage",
        "ops",
        "--question",
        "Prod is down: roll back?",
        "--urgent",
    ]);
    assert_eq!(urgent["question"]["urgent"], true);
    let plain = l.ok(["log", "--stage", "ops", "--question", "Changelog wording?"]);
    assert!(plain["question"].get("urgent").is_none(), "{plain}");
    let listed = l.ok(["list", "--stage", "ops"]);
    let flags: Vec<bool> = listed["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q.get("urgent") == Some(&serde_json::json!(true)))
        .collect();
    assert_eq!(flags, [true, false]);
}
