use crate::common::*;

#[test]
fn a_messy_uwf_block_is_logged_and_a_rerun_logs_nothing_new() {
    let l = Ledger::new();
    let text = fixture("uwf_messy.txt");
    let out = l.ok_stdin(["ingest", "--stage", "intake"], text.clone());
    assert_eq!(out["procedure"], "ingest");
    assert_eq!(out["format"], "uwf");
    assert_eq!(out["found"], true);
    assert_eq!(ids(&out["question_ids"]), vec![1, 2, 3, 4]);
    assert_eq!(ids(&out["created_ids"]), vec![1, 2, 3, 4]);
    let qs = out["questions"].as_array().unwrap();
    assert_eq!(qs[0]["group_name"], "Goal");
    assert_eq!(qs[0]["proposed"], "Build a blog platform");
    assert_eq!(
        qs[1]["question"],
        "Are there any technical constraints\n(language, framework, budget, timeline)?"
    );
    assert_eq!(qs[1]["required"], false);
    assert_eq!(qs[2]["group_name"], "Constraints");
    assert_eq!(qs[2]["required"], true, "a missing Required: means true");
    assert_eq!(qs[3]["group_name"], "Success metrics");
    assert!(qs
        .iter()
        .all(|q| q["source"] == "uwf" && q["stage"] == "intake"));

    // A re-run subagent re-emits its questions: one row each, still.
    let again = l.ok_stdin(["ingest", "--stage", "intake"], text.replace('\n', "\r\n"));
    assert_eq!(ids(&again["question_ids"]), vec![1, 2, 3, 4]);
    assert_eq!(ids(&again["created_ids"]), Vec::<i64>::new());
    assert_eq!(l.all().len(), 4);
}

#[test]
fn the_first_open_questions_envelope_is_read_with_its_options() {
    let l = Ledger::new();
    let path = l.dir.path().join("out.md");
    std::fs::write(&path, fixture("open_questions.md")).unwrap();
    let out = l.ok([
        "ingest",
        "--stage",
        "design",
        "--file",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out["format"], "open-questions");
    let qs = out["questions"].as_array().unwrap();
    assert_eq!(qs.len(), 2);
    assert_eq!(qs[0]["header"], "Rate limit");
    assert_eq!(qs[0]["options"][0]["label"], "Token bucket per IP");
    assert_eq!(qs[0]["options"][0]["recommended"], true);
    assert_eq!(qs[0]["options"][2]["description"], "");
    assert_eq!(qs[0]["proposed"], "Token bucket per IP");
    assert_eq!(qs[1]["multi_select"], true);
    assert_eq!(qs[1]["source"], "open-questions");
}

#[test]
fn an_ask_user_call_is_read() {
    let l = Ledger::new();
    let out = l.ok_stdin(
        ["ingest", "--stage", "setup", "--format", "ask-user"],
        fixture("ask_user_call.json"),
    );
    assert_eq!(out["format"], "ask-user");
    let qs = out["questions"].as_array().unwrap();
    assert_eq!(qs[0]["header"], "Database Selection");
    assert_eq!(qs[0]["options"][0]["label"], "PostgreSQL");
    assert_eq!(qs[1]["options"], serde_json::json!([]));
    assert_eq!(qs[1]["source"], "ask-user");
}

#[test]
fn output_without_an_envelope_is_found_false_and_creates_nothing() {
    let l = Ledger::new();
    let out = l.ok_stdin(
        ["ingest", "--stage", "s"],
        "All done. ```json\n{\"summary\": \"ok\"}\n```\n",
    );
    assert_eq!(out["found"], false);
    assert_eq!(out["question_ids"], serde_json::json!([]));
    l.assert_not_created();
}

#[test]
fn a_malformed_envelope_writes_nothing_and_says_where() {
    let l = Ledger::new();
    l.log("design", "Already here?");
    let before = l.all();
    let cases = [
        (
            fixture("open_questions_bad_label.md"),
            "openQuestions[1].options[1].label",
        ),
        (
            "QUESTIONS_NEEDED\n[Goal]\nQ: Why?\nRequired: perhaps\n".to_string(),
            "line 4",
        ),
        (
            "Here:\n```json\n{\"openQuestions\": [\n  {\"question\": \"A?\",}\n]}\n```\n"
                .to_string(),
            "line 4",
        ),
        ("```json\n{\"openQuestions\": []}\n```".to_string(), "empty"),
        (
            "{\"questions\": [{\"header\": \"no question\"}]}".to_string(),
            "questions[0].question",
        ),
    ];
    for (text, place) in cases {
        let run = l.run_stdin(["ingest", "--stage", "design"], text.clone());
        assert_eq!((run.code, run.error_code()), (1, "parse_error"), "{text}");
        let message = run.json["error"].as_str().unwrap();
        assert!(message.contains(place), "{place} not in: {message}");
    }
    assert_eq!(l.all(), before, "nothing was written");
}

#[test]
fn bad_input_bytes_and_missing_files_are_clear_errors() {
    let l = Ledger::new();
    let run = l.run_stdin(
        ["ingest", "--stage", "s"],
        b"QUESTIONS_NEEDED\nQ: caf\xe9?\n".to_vec(),
    );
    assert_eq!((run.code, run.error_code()), (1, "parse_error"));
    let run = l.run(["ingest", "--stage", "s", "--file", "/no/such/file.txt"]);
    assert_eq!((run.code, run.error_code()), (1, "io_error"));
    let run = l.run(["ingest", "--stage", "s", "--format", "yaml"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    l.assert_not_created();
}

#[test]
fn no_question_is_dropped_silently() {
    let body = r#"{"openQuestions": [{"question": "Which cache?"}]}"#;
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            "QUESTIONS_NEEDED\n[Goal]\nQ: Why?\n2. Q: How?\n".into(),
            vec!["Why?", "How?"],
        ),
        ("## **QUESTIONS_NEEDED**\nQ: Why?\n".into(), vec!["Why?"]),
        ("QUESTIONS_NEEDED.\nQ: Why?\n".into(), vec!["Why?"]),
        ("> **QUESTIONS_NEEDED:**\n> Q: Why?\n".into(), vec!["Why?"]),
        ("\u{feff}QUESTIONS_NEEDED\nQ: Why?\n".into(), vec!["Why?"]),
        (
            format!("Done.\n~~~json\n{body}\n~~~\n"),
            vec!["Which cache?"],
        ),
        (format!("Done.\n````\n{body}\n````\n"), vec!["Which cache?"]),
        (
            format!("Done.\n```json title=\"x\"\n{body}\n```\n"),
            vec!["Which cache?"],
        ),
    ];
    for (text, want) in cases {
        let l = Ledger::new();
        let out = l.ok_stdin(["ingest", "--stage", "s"], text.clone());
        assert_eq!(out["found"], true, "{text:?}");
        let got: Vec<&str> = out["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["question"].as_str().unwrap())
            .collect();
        assert_eq!(got, want, "{text:?}");
    }
}

#[test]
fn input_that_tries_to_ask_but_cannot_be_read_is_a_parse_error() {
    let l = Ledger::new();
    for (text, place) in [
        ("Done.\nQUESTIONS_NEEDED: Q: Why?\n", "line 2"),
        ("Notes.\n\nQ: Why?\n", "line 3"),
        (
            "QUESTIONS_NEEDED\nQ: Why?\n\nMore prose.\nQ: How?\n",
            "line 5",
        ),
        (
            "Here {\"openQuestions\": [{\"question\": \"A?\"}]}\n",
            "line 1",
        ),
        (
            "~~~json\n{\"openQuestions\": [\n{\"question\": }]}\n~~~\n",
            "line 3",
        ),
    ] {
        let run = l.run_stdin(["ingest", "--stage", "s"], text);
        assert_eq!((run.code, run.error_code()), (1, "parse_error"), "{text:?}");
        let message = run.json["error"].as_str().unwrap();
        assert!(message.contains(place), "{text:?}: {message}");
    }
    l.assert_not_created();
}

#[test]
fn an_envelope_beyond_any_real_one_is_refused_before_anything_is_built() {
    let l = Ledger::new();
    let mut text = String::from("QUESTIONS_NEEDED\n");
    for i in 0..100_001 {
        text.push_str(&format!("Q: {i}\n"));
    }
    let run = l.run_stdin(["ingest", "--stage", "s"], text);
    assert_eq!((run.code, run.error_code()), (1, "parse_error"), "{run:?}");
    assert!(run.json["error"].as_str().unwrap().contains("split it"));
    l.assert_not_created();
}

#[test]
fn many_questions_and_their_answers_go_in_and_out_in_one_call_each() {
    let l = Ledger::new();
    // Beyond SQLite's 32 766 placeholders in one statement; PostgreSQL has no such limit,
    // and its pass keeps the round trips few.
    let n = if l.url.is_some() { 2_000 } else { 40_000 };
    let mut text = String::from("QUESTIONS_NEEDED\n");
    for i in 0..n {
        text.push_str(&format!("Q: Question {i}?\n"));
    }
    let ingested = l.ok_stdin(["ingest", "--stage", "s"], text);
    assert_eq!(ingested["created_ids"].as_array().unwrap().len(), n);
    let map: serde_json::Map<String, serde_json::Value> = (1..=n)
        .map(|id| (id.to_string(), format!("answer {id}").into()))
        .collect();
    let imported = l.ok_stdin(
        ["import", "--stage", "s", "--format", "map"],
        serde_json::Value::Object(map).to_string(),
    );
    assert_eq!(imported["answered_ids"].as_array().unwrap().len(), n);
    assert_eq!(imported["questions"].as_array().unwrap().len(), n);
    let check = l.ok(["check", "--stage", "s"]);
    assert_eq!(check["total"], n);
    assert_eq!(check["pending_count"], 0);
}

/// A question `log` refuses (a multi-select, or a question with no free-form answer,
/// without options to choose from) is refused by `ingest` with the same words, at its
/// place in the envelope, and nothing of the envelope is written; before, ingest turned
/// it silently into another question.
#[test]
fn a_question_log_refuses_is_refused_by_ingest_with_the_same_words() {
    let l = Ledger::new();
    l.log("design", "Already here?");
    let before = l.all();
    for (flag, key) in [
        ("--multi-select", "\"multiSelect\": true"),
        ("--no-freeform", "\"allowFreeformInput\": false"),
    ] {
        let logged = l.run(["log", "--stage", "design", "--question", "Which?", flag]);
        assert_eq!(logged.code, 2, "{logged:?}");
        let words = logged.json["error"].as_str().unwrap();
        // The command line's own hint (a flag to add) is not for a subagent's envelope.
        let words = words.split("; add --option").next().unwrap();
        let envelope = format!(
            "{{\"questions\": [{{\"question\": \"Fine?\"}}, {{\"question\": \"Which?\", {key}}}]}}"
        );
        let run = l.run_stdin(["ingest", "--stage", "design"], envelope.clone());
        assert_eq!(
            (run.code, run.error_code()),
            (1, "parse_error"),
            "{envelope}"
        );
        let message = run.json["error"].as_str().unwrap();
        assert_eq!(message, format!("questions[1]: {words}"), "{envelope}");
    }
    assert_eq!(l.all(), before, "nothing was written");
}
