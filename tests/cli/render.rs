use serde_json::Value;

use crate::common::*;

fn six_questions(l: &Ledger) {
    l.log_with(
        "intake",
        "What is the goal?",
        &["--group", "Goal", "--proposed", "A blog"],
    );
    l.log_with(
        "intake",
        "How is success measured?",
        &["--group", "Success metrics"],
    );
    l.log_with(
        "intake",
        "Which database?",
        &[
            "--option",
            "SQLite",
            "--option",
            "PostgreSQL (Recommended)",
            "--header",
            "Database",
        ],
    );
    l.log("intake", "Deadline?");
    l.log("intake", "Budget?");
    l.log("intake", "Team size?");
}

#[test]
fn ask_user_batches_four_with_short_headers_and_the_recommended_option_first() {
    let l = Ledger::new();
    six_questions(&l);
    l.ok(["answer", "--id", "5", "--answer", "small"]);
    l.log("other", "Not this stage?");
    let out = l.ok(["render", "--stage", "intake"]);
    assert_eq!(out["format"], "ask-user");
    let batches = out["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 2);
    assert_eq!(ids(&batches[0]["question_ids"]), vec![1, 2, 3, 4]);
    assert_eq!(
        ids(&batches[1]["question_ids"]),
        vec![6],
        "answered and other stages left out"
    );
    let qs = batches[0]["payload"]["questions"].as_array().unwrap();
    for q in qs {
        assert!(q["header"].as_str().unwrap().chars().count() <= 12, "{q}");
        for key in ["question", "header", "options", "multiSelect"] {
            assert!(q.get(key).is_some(), "{key} missing in {q}");
        }
    }
    assert_eq!(qs[1]["header"], "Success met…");
    assert!(out["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("Success metrics")));
    assert_eq!(qs[2]["options"][0]["label"], "PostgreSQL (Recommended)");
    assert_eq!(qs[2]["options"][1]["label"], "SQLite");
    assert_eq!(qs[0]["options"][0]["label"], "A blog (Recommended)");
}

#[test]
fn vscode_gets_one_call_with_unique_headers() {
    let l = Ledger::new();
    l.log_with("s", "First?", &["--header", "Scope"]);
    l.log_with("s", "Second?", &["--header", "Scope"]);
    l.log_with(
        "s",
        "Strict?",
        &["--option", "A", "--option", "B", "--no-freeform"],
    );
    let out = l.ok(["render", "--stage", "s", "--format", "vscode"]);
    let batches = out["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 1);
    let qs = batches[0]["payload"]["questions"].as_array().unwrap();
    assert_eq!(qs[0]["header"], "Scope #1");
    assert_eq!(qs[1]["header"], "Scope #2");
    assert_eq!(qs[2]["allowFreeformInput"], false);
}

#[test]
fn pi_pending_is_written_private() {
    use std::os::unix::fs::PermissionsExt;
    let l = Ledger::new();
    six_questions(&l);
    let out_path = l.dir.path().join("pending-questions.json");
    let out = l.ok([
        "render",
        "--stage",
        "intake",
        "--format",
        "pi-pending",
        "--out",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(out["out"], out_path.display().to_string());
    let mode = std::fs::metadata(&out_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let qs = file["questions"].as_array().unwrap();
    assert_eq!(qs.len(), 6);
    assert_eq!(qs[0]["id"], 1);
    assert_eq!(qs[0]["answer"], Value::Null);
    assert_eq!(qs[2]["options"][0], "PostgreSQL (Recommended)");
}

#[test]
fn uwf_and_open_questions_text_ingests_back_to_the_same_questions() {
    for format in ["uwf", "open-questions"] {
        let l = Ledger::new();
        six_questions(&l);
        l.log_with(
            "intake",
            "Optional?",
            &["--required", "false", "--group", "Goal"],
        );
        let text = l
            .run(["render", "--stage", "intake", "--format", format])
            .stdout;
        let back = l.ok_stdin(
            ["ingest", "--stage", "intake", "--format", format],
            text.clone(),
        );
        let mut got = ids(&back["question_ids"]);
        got.sort_unstable();
        assert_eq!(got, vec![1, 2, 3, 4, 5, 6, 7], "{format}:\n{text}");
        assert_eq!(
            ids(&back["created_ids"]),
            Vec::<i64>::new(),
            "{format}:\n{text}"
        );
        // Into a fresh ledger, the same questions come out.
        let fresh = Ledger::new();
        let copy = fresh.ok_stdin(["ingest", "--stage", "intake"], text.clone());
        let originals = l.all();
        for q in copy["questions"].as_array().unwrap() {
            let original = originals
                .iter()
                .find(|x| x["question"] == q["question"])
                .unwrap();
            for key in ["question", "group_name", "required"] {
                assert_eq!(q[key], original[key], "{format} {key}");
            }
            if format == "open-questions" {
                let labels = |v: &serde_json::Value| -> Vec<(String, bool)> {
                    v["options"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|o| {
                            (
                                o["label"].as_str().unwrap().to_string(),
                                o["recommended"].as_bool().unwrap(),
                            )
                        })
                        .collect()
                };
                let mut got = labels(q);
                let mut want = labels(original);
                got.sort();
                want.sort();
                assert_eq!(got, want, "options");
                assert_eq!(q["multi_select"], original["multi_select"]);
            }
            // A recommended option stands for the proposed value where none was given.
            if original["proposed"] != serde_json::Value::Null {
                assert_eq!(q["proposed"], original["proposed"], "{format} proposed");
            }
        }
        assert_eq!(copy["questions"].as_array().unwrap().len(), 7);
    }
}

#[test]
fn markdown_is_an_open_questions_section() {
    let l = Ledger::new();
    six_questions(&l);
    let md = l
        .run(["render", "--stage", "intake", "--format", "markdown"])
        .stdout;
    assert!(md.starts_with("## Open questions\n"), "{md}");
    assert!(
        md.contains("**#3 Database** Which database? _(required)_"),
        "{md}"
    );
    assert!(md.contains("  - [ ] PostgreSQL (Recommended)"), "{md}");
    l.log("intake", "Colour\u{1b}[31m in text\u{1b}[0m?");
    let md = l
        .run(["render", "--stage", "intake", "--format", "markdown"])
        .stdout;
    assert!(md.contains("Colour in text?"), "{md}");
    assert!(
        !md.contains('\u{1b}') && !md.contains("[31m"),
        "an escape sequence got through: {md}"
    );
}

#[test]
fn render_ids_must_be_in_the_stage() {
    let l = Ledger::new();
    l.log("a", "q");
    l.log("b", "q");
    let run = l.run(["render", "--stage", "a", "--ids", "2"]);
    assert_eq!((run.code, run.error_code()), (1, "not_found"));
    let out = l.ok(["render", "--stage", "a", "--ids", "1"]);
    assert_eq!(ids(&out["batches"][0]["question_ids"]), vec![1]);
}

/// The options of one question in an ask-user payload, as (label, description).
fn labels(q: &Value) -> Vec<String> {
    q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ask_user_payloads_are_ones_ask_user_question_accepts() {
    let l = Ledger::new();
    // Free text with and without a proposed value, one option, six options, and the
    // same text twice (different groups) with the same header.
    l.log_with("s", "Goal?", &["--proposed", "A blog"]);
    l.log("s", "Deadline?");
    l.log_with("s", "Only one?", &["--option", "Yes"]);
    let mut six = vec!["--header", "Many"];
    for label in ["a", "b", "c", "d", "e", "f"] {
        six.extend(["--option", label]);
    }
    l.log_with("s", "Which letter?", &six);
    l.log_with("s", "Which DB?", &["--group", "Front", "--header", "DB"]);
    l.log_with("s", "Which DB?", &["--group", "Back", "--header", "DB"]);
    let out = l.ok(["render", "--stage", "s"]);

    let left_out = out["left_out"].as_array().unwrap();
    assert_eq!(left_out.len(), 1, "{out:#}");
    assert_eq!(left_out[0]["question_id"], 4);
    assert!(left_out[0]["reason"]
        .as_str()
        .unwrap()
        .contains("6 options"));

    let batches = out["batches"].as_array().unwrap();
    let mut shown: Vec<i64> = Vec::new();
    for b in batches {
        let qs = b["payload"]["questions"].as_array().unwrap();
        assert!((1..=4).contains(&qs.len()));
        let texts: Vec<&Value> = qs.iter().map(|q| &q["question"]).collect();
        let headers: Vec<&Value> = qs.iter().map(|q| &q["header"]).collect();
        for i in 0..qs.len() {
            assert!(!texts[..i].contains(&texts[i]), "a text twice in {b:#}");
            assert!(
                !headers[..i].contains(&headers[i]),
                "a header twice in {b:#}"
            );
            assert!((2..=4).contains(&qs[i]["options"].as_array().unwrap().len()));
        }
        shown.extend(ids(&b["question_ids"]));
    }
    shown.sort_unstable();
    assert_eq!(shown, vec![1, 2, 3, 5, 6]);
    assert_ne!(
        batches
            .iter()
            .position(|b| ids(&b["question_ids"]).contains(&5)),
        batches
            .iter()
            .position(|b| ids(&b["question_ids"]).contains(&6)),
        "the same text twice is split across batches"
    );

    let by_id = |id: i64| -> Value {
        for b in batches {
            if let Some(i) = ids(&b["question_ids"]).iter().position(|x| *x == id) {
                return b["payload"]["questions"][i].clone();
            }
        }
        panic!("question {id} not in any batch")
    };
    assert_eq!(
        labels(&by_id(1)),
        ["A blog (Recommended)", "Skip this question", "Decide later"]
    );
    assert_eq!(labels(&by_id(2)), ["Skip this question", "Decide later"]);
    assert_eq!(labels(&by_id(3)), ["Yes", "Skip this question"]);
    assert_eq!(by_id(1)["multiSelect"], false);
}

#[test]
fn a_question_with_an_option_named_like_a_made_up_one_keeps_its_own() {
    let l = Ledger::new();
    l.log_with("s", "Proceed?", &["--option", "Skip this question"]);
    let out = l.ok(["render", "--stage", "s"]);
    let q = &out["batches"][0]["payload"]["questions"][0];
    assert_eq!(labels(q), ["Skip this question", "Decide later"]);
}

#[test]
fn vscode_headers_stay_unique_when_a_header_reads_like_the_collision_form() {
    let l = Ledger::new();
    l.log_with("s", "First?", &["--header", "Scope"]);
    l.log_with("s", "Second?", &["--header", "Scope"]);
    l.log_with("s", "Third?", &["--header", "Scope #1"]);
    let out = l.ok(["render", "--stage", "s", "--format", "vscode"]);
    let qs = out["batches"][0]["payload"]["questions"]
        .as_array()
        .unwrap();
    let headers: Vec<&str> = qs.iter().map(|q| q["header"].as_str().unwrap()).collect();
    assert_eq!(headers, ["Scope #2", "Scope #1"]);
    assert_eq!(ids(&out["batches"][0]["question_ids"]), vec![2, 3]);
    assert_eq!(out["left_out"][0]["question_id"], 1);
}

mod read_back {
    //! Whatever a question holds, its `uwf` and `open-questions` renderings ingest back to
    //! the same questions, or leave it out with a warning: never a phantom question.

    use proptest::prelude::*;

    use crate::common::*;

    /// Text made of the lines that a block format could mistake for structure.
    fn awkward() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            Just("Q: another?".to_string()),
            Just("2. Q: numbered?".to_string()),
            Just("Proposed: this".to_string()),
            Just("Required: false".to_string()),
            Just("[Group]".to_string()),
            Just("QUESTIONS_NEEDED".to_string()),
            Just("```".to_string()),
            Just("~~~json".to_string()),
            Just(String::new()),
            Just("  indented".to_string()),
            Just("ends in CR\r".to_string()),
            Just("{\"openQuestions\": []}".to_string()),
            "[a-z ]{1,12}",
        ];
        proptest::collection::vec(line, 0..4).prop_map(|v| v.join("\n"))
    }

    fn left_out(stderr: &str) -> Vec<i64> {
        stderr
            .lines()
            .filter_map(|l| Some(&l[l.find("question ")? + "question ".len()..]))
            .filter(|l| l.contains(": left out:"))
            .filter_map(|l| l.split(':').next()?.parse().ok())
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn rendered_text_ingests_back_to_nothing_new(
            qs in proptest::collection::vec(
                (awkward(), proptest::option::of(awkward()), proptest::option::of(awkward()), any::<bool>()),
                1..4,
            )
        ) {
            let l = Ledger::new();
            let mut pending = Vec::new();
            for (text, group, proposed, required) in &qs {
                let question = format!("What{text}");
                let mut args = vec!["log", "--stage", "s", "--question", &question,
                                    "--required", if *required { "true" } else { "false" }];
                let group = group.as_ref().map(|g| format!("G{g}"));
                if let Some(g) = &group {
                    args.extend(["--group", g]);
                }
                let proposed = proposed.as_ref().map(|p| format!("P{p}"));
                if let Some(p) = &proposed {
                    args.extend(["--proposed", p]);
                }
                pending.push(l.ok(args)["question_id"].as_i64().unwrap());
            }
            pending.sort_unstable();
            pending.dedup();
            let before = l.all();
            for format in ["uwf", "open-questions"] {
                let run = l.run(["render", "--stage", "s", "--format", format]);
                prop_assert_eq!(run.code, 0);
                let skipped = left_out(&run.stderr);
                for (args, how) in [(vec!["ingest", "--stage", "s", "--format", format], format), (vec!["ingest", "--stage", "s"], "auto")] {
                    let back = l.run_stdin(&args, run.stdout.clone());
                    prop_assert_eq!(back.code, 0, "{} as {}:\n{}\n{:?}", format, how, run.stdout, back);
                    prop_assert_eq!(ids(&back.json["created_ids"]), Vec::<i64>::new(),
                        "{} as {}:\n{}", format, how, run.stdout);
                    let mut got = ids(&back.json["question_ids"]);
                    got.extend(&skipped);
                    got.sort_unstable();
                    prop_assert_eq!(&got, &pending, "{} as {}:\n{}\n{}", format, how, run.stdout, run.stderr);
                }
                prop_assert_eq!(l.all(), before.clone(), "{}: the ledger changed", format);
            }
        }
    }
}

#[test]
fn a_question_holding_block_syntax_reads_back_as_itself() {
    let l = Ledger::new();
    l.log_with(
        "s",
        "Which plan?\n\nQ: is this a question?\nProposed: no",
        &["--proposed", "A\n\nB"],
    );
    l.log_with("s", "Plain?", &["--proposed", "Yes\nQ: sneaky?"]);
    l.log("s", "Fine?");
    for format in ["uwf", "open-questions"] {
        let run = l.run(["render", "--stage", "s", "--format", format]);
        let back = l.ok_stdin(["ingest", "--stage", "s"], run.stdout.clone());
        assert_eq!(
            ids(&back["created_ids"]),
            Vec::<i64>::new(),
            "{format}:\n{}",
            run.stdout
        );
        assert_eq!(l.all().len(), 3, "{format}");
        assert_eq!(l.run(["check", "--stage", "s"]).json["pending_count"], 3);
        if format == "uwf" {
            assert!(
                run.stderr.contains("question 1: left out"),
                "{}",
                run.stderr
            );
            assert!(
                run.stderr
                    .contains("question 2: its proposed value is left out"),
                "{}",
                run.stderr
            );
            let mut got = ids(&back["question_ids"]);
            got.sort_unstable();
            assert_eq!(got, vec![2, 3]);
        }
    }
}

#[test]
fn sqlite_only_render_never_writes_over_the_ledger_or_its_companions() {
    crate::sqlite_only!();
    let l = Ledger::new();
    l.log("s", "Goal?");
    let dir = l.dir.path();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink(&l.path, dir.join("alias.json")).unwrap();
    std::os::unix::fs::symlink(dir, dir.join("same-dir")).unwrap();
    let before = l.bytes();
    let targets = [
        l.path.display().to_string(),
        "ledger.db".to_string(),
        "./sub/../ledger.db".to_string(),
        "ledger.db-wal".to_string(),
        format!("{}-shm", l.path.display()),
        "alias.json".to_string(),
        "same-dir/ledger.db".to_string(),
        "same-dir/ledger.db-wal".to_string(),
    ];
    for out in &targets {
        for format in ["uwf", "pi-pending", "ask-user"] {
            let run = l.run(["render", "--stage", "s", "--format", format, "--out", out]);
            assert_eq!((run.code, run.error_code()), (2, "usage"), "{out} {format}");
            assert!(run.json["error"].as_str().unwrap().contains("--out"));
        }
    }
    assert_eq!(l.bytes(), before);
    assert!(dir.join("alias.json").is_symlink());
    assert!(!dir.join("ledger.db-wal").exists() || dir.join("ledger.db-wal").is_file());
    // Any other file is fine.
    l.ok([
        "render",
        "--stage",
        "s",
        "--format",
        "uwf",
        "--out",
        "questions.txt",
    ]);
    assert!(dir.join("questions.txt").is_file());
}

#[test]
fn headers_that_shorten_alike_get_a_suffix_and_the_batches_stay_full() {
    let l = Ledger::new();
    for n in 1..=6 {
        l.log_with(
            "s",
            &format!("Question number {n}?"),
            &["--header", &format!("Deployment target {n}")],
        );
    }
    let out = l.ok(["render", "--stage", "s"]);
    let batches = out["batches"].as_array().unwrap();
    let sizes: Vec<usize> = batches
        .iter()
        .map(|b| b["question_ids"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![4, 2], "{out}");
    for batch in batches {
        let headers: Vec<&str> = batch["payload"]["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["header"].as_str().unwrap())
            .collect();
        let mut unique = headers.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), headers.len(), "{headers:?}");
        assert!(
            headers.iter().all(|h| h.chars().count() <= 12),
            "{headers:?}"
        );
    }
    let warnings = out["warnings"].to_string();
    assert!(warnings.contains("is shared in its batch"), "{warnings}");
}
