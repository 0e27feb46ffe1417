//! Real command output, validated against the JSON Schemas in schema/, so the schemas
//! cannot drift from the code.

use serde_json::{json, Value};

use crate::common::*;

struct SchemaFiles;

fn schema_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema")
}

fn load(name: &str) -> Value {
    let path = schema_dir().join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl jsonschema::Retrieve for SchemaFiles {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let file = uri.path().as_str().rsplit('/').next().unwrap_or_default();
        let name = file.trim_end_matches(".json");
        Ok(load(name))
    }
}

fn validator(name: &str) -> jsonschema::Validator {
    jsonschema::options()
        .with_base_uri(format!("https://questions.invalid/schema/{name}.json"))
        .with_retriever(SchemaFiles)
        .build(&load(name))
        .unwrap_or_else(|e| panic!("schema {name}: {e}"))
}

pub(crate) fn assert_valid(name: &str, doc: &Value) {
    let v = validator(name);
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{name}.json rejects:\n{doc:#}\n{}",
        errors.join("\n")
    );
}

fn assert_invalid(name: &str, doc: &Value) {
    assert!(
        !validator(name).is_valid(doc),
        "{name}.json accepts what it must not: {doc}"
    );
}

#[test]
fn every_command_output_matches_its_schema() {
    let l = Ledger::new();
    let log = l.ok([
        "log",
        "--stage",
        "s",
        "--question",
        "Goal?",
        "--group",
        "Goal",
        "--proposed",
        "A blog",
        "--option",
        "A blog",
        "--option",
        "A shop (Recommended)",
    ]);
    assert_valid("log", &log);
    assert_valid(
        "log",
        &l.ok([
            "log",
            "--stage",
            "s",
            "--question",
            "Goal?",
            "--group",
            "Goal",
        ]),
    );
    l.log_with(
        "s",
        "Optional?",
        &["--required", "false", "--proposed", "yes"],
    );
    l.log("s", "Deadline?");

    assert_valid("info", &l.ok(["info"]));
    let fail = l.run(["check", "--stage", "s"]);
    assert_valid("check", &fail.json);
    let timed = l.run(["check", "--stage", "s", "--wait", "--timeout", "0"]);
    assert_eq!(timed.json["timed_out"], true);
    assert_valid("check", &timed.json);

    for format in ["ask-user", "vscode"] {
        let render = l.ok(["render", "--stage", "s", "--format", format]);
        assert_valid("render", &render);
        let payload_schema = if format == "ask-user" {
            "ask-user-question"
        } else {
            "vscode-ask-questions"
        };
        for batch in render["batches"].as_array().unwrap() {
            assert_valid(payload_schema, &batch["payload"]);
        }
    }
    let pending = l.ok(["render", "--stage", "s", "--format", "pi-pending"]);
    assert_valid("render", &pending);
    assert_valid("pi-pending", &pending["payload"]);
    let out = l.dir.path().join("pending.json");
    let written = l.ok([
        "render",
        "--stage",
        "s",
        "--format",
        "pi-pending",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_valid("render", &written);
    assert_valid(
        "pi-pending",
        &serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap(),
    );

    let answer = l.ok(["answer", "--id", "1", "--select", "A shop"]);
    assert_valid("answer", &answer);
    assert_valid("skip", &l.ok(["skip", "--id", "3", "--reason", "later"]));
    let defaults = l.ok(["accept-defaults", "--stage", "s"]);
    assert_valid("accept-defaults", &defaults);
    assert_valid("check", &l.ok(["check", "--stage", "s"]));
    assert_valid("list", &l.ok(["list"]));
    for line in l.run(["list", "--format", "jsonl"]).stdout.lines() {
        assert_valid("question", &serde_json::from_str(line).unwrap());
    }
    assert_valid("answers", &l.ok(["answers", "--stage", "s"]));
    assert_valid("history", &l.ok(["history", "--stage", "s"]));

    let ingest = l.ok_stdin(["ingest", "--stage", "t"], fixture("open_questions.md"));
    assert_valid("ingest", &ingest);
    assert_valid(
        "ingest",
        &l.ok_stdin(["ingest", "--stage", "t"], "nothing to ask"),
    );
    let import = l.ok_stdin(
        ["import", "--stage", "t", "--format", "map"],
        json!({"5": "Token bucket per IP"}).to_string(),
    );
    assert_valid("import", &import);

    assert_valid("clear", &l.ok(["clear", "--stage", "t"]));
    assert_valid("history", &l.ok(["history", "--stage", "t"]));
    assert_valid("reset", &l.ok(["reset", "--yes"]));
}

#[test]
fn every_failure_matches_the_error_schema() {
    let l = Ledger::new();
    l.log("s", "q");
    for (args, stdin) in [
        (vec!["log", "--stage", ""], ""),
        (vec!["nonsense"], ""),
        (vec!["answer", "--id", "9", "--answer", "x"], ""),
        (vec!["answer", "--id", "1", "--answer", " "], ""),
        (
            vec!["ingest", "--stage", "s"],
            "QUESTIONS_NEEDED\nProposed: x\n",
        ),
        (vec!["import", "--stage", "s"], "{\"answered\": false}"),
        (vec!["check", "--ids", "7"], ""),
    ] {
        let run = l.run_stdin(&args, stdin);
        assert_ne!(run.code, 0, "{args:?}");
        assert_valid("error", &run.json);
    }
}

#[test]
fn what_we_read_matches_the_input_schemas() {
    let text = fixture("open_questions.md");
    let envelope = text
        .split("```json")
        .find(|b| b.contains("openQuestions"))
        .and_then(|b| b.split("```").next())
        .unwrap();
    assert_valid("open-questions", &serde_json::from_str(envelope).unwrap());
    assert_valid(
        "ask-user",
        &serde_json::from_str(&fixture("ask_user_call.json")).unwrap(),
    );
    assert_valid(
        "import-ask-user",
        &json!({"answers": {"Which database?": "SQLite"}}),
    );
    assert_valid(
        "import-vscode",
        &json!({"answers": {"DB": {"selected": ["SQLite"], "freeText": null, "skipped": false}}}),
    );
    assert_valid(
        "import-pi-result",
        &json!({"answered": true, "answers": [{"question": "Q?", "answer": "A", "wasCustom": true}]}),
    );
    assert_valid(
        "import-map",
        &json!({"7": "yes", "8": ["A"], "9": {"skip": true, "reason": "later"}}),
    );
}

#[test]
fn the_schemas_are_not_vacuous() {
    let l = Ledger::new();
    let mut q = l.ok(["log", "--stage", "s", "--question", "q"])["question"].clone();
    assert_valid("question", &q);
    q.as_object_mut().unwrap().remove("source");
    assert_invalid("question", &q);
    assert_invalid(
        "error",
        &json!({"ok": false, "error": "x", "error_code": "oops"}),
    );
    assert_invalid("import-map", &json!({"seven": "yes"}));
    assert_invalid(
        "ask-user-question",
        &json!({"questions": [{"question": "q", "header": "much too long a header", "options": [], "multiSelect": false}]}),
    );
    let option = json!({"label": "A", "description": ""});
    for count in [0, 1, 5] {
        let options = vec![option.clone(); count];
        assert_invalid(
            "ask-user-question",
            &json!({"questions": [{"question": "q", "header": "h", "options": options, "multiSelect": false}]}),
        );
    }
    let one =
        json!({"question": "q", "header": "h", "options": [option, option], "multiSelect": false});
    assert_invalid("ask-user-question", &json!({"questions": vec![one; 5]}));
}

mod generated {
    //! Every payload rendered from many generated ledgers satisfies its tool's schema and
    //! what the schema cannot say: texts, headers and labels unique where the tool needs.

    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::assert_valid;
    use crate::common::*;

    fn option() -> impl Strategy<Value = Value> {
        (
            prop_oneof![
                Just("A"),
                Just("B"),
                Just("Skip this question"),
                Just("Decide later"),
                Just("a long label with spaces"),
                Just("C")
            ],
            any::<bool>(),
        )
            .prop_map(|(label, recommended)| json!({"label": label, "recommended": recommended}))
    }

    fn question() -> impl Strategy<Value = Value> {
        (
            prop_oneof![
                Just("Which one?".to_string()),
                Just("Deadline?".to_string()),
                Just("Why?".to_string()),
                "[a-z]{1,8}( [a-z]{1,8})?\\?"
            ],
            proptest::option::of(prop_oneof![
                Just("Scope"),
                Just("Scope #1"),
                Just("Success metrics and more"),
                Just("Backport #2")
            ]),
            proptest::option::of(prop_oneof![Just("Goal"), Just("Risk")]),
            proptest::option::of(prop_oneof![Just("A blog"), Just("Skip this question")]),
            proptest::collection::vec(option(), 0..7),
            any::<bool>(),
        )
            .prop_map(|(text, header, group, proposed, options, multi)| {
                let mut labels: Vec<String> = Vec::new();
                let options: Vec<Value> = options
                    .into_iter()
                    .filter(|o| {
                        let l = o["label"].as_str().unwrap().to_lowercase();
                        !labels.contains(&l) && {
                            labels.push(l);
                            true
                        }
                    })
                    .collect();
                // A multi-select needs options to choose from (ingest refuses one without).
                let multi = multi && !options.is_empty();
                json!({"question": text, "header": header, "group": group,
                       "proposed": proposed, "options": options, "multiSelect": multi})
            })
    }

    fn label_key(label: &str) -> String {
        label
            .trim()
            .trim_end_matches(" (Recommended)")
            .to_lowercase()
    }

    fn unique<T: PartialEq + std::fmt::Debug>(items: &[T], what: &str) {
        for i in 0..items.len() {
            assert!(!items[..i].contains(&items[i]), "{what} repeats: {items:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

        #[test]
        fn rendered_payloads_satisfy_their_tools(qs in proptest::collection::vec(question(), 1..10)) {
            let l = Ledger::new();
            let ingested = l.ok_stdin(
                ["ingest", "--stage", "s", "--format", "ask-user"],
                json!({"questions": qs}).to_string(),
            );
            let mut pending = ids(&ingested["question_ids"]);
            pending.sort_unstable();
            pending.dedup();

            for format in ["ask-user", "vscode"] {
                let out = l.ok(["render", "--stage", "s", "--format", format]);
                assert_valid("render", &out);
                let payload_schema = if format == "ask-user" { "ask-user-question" } else { "vscode-ask-questions" };
                let mut seen: Vec<i64> = Vec::new();
                for batch in out["batches"].as_array().unwrap() {
                    let payload = &batch["payload"];
                    assert_valid(payload_schema, payload);
                    let items = payload["questions"].as_array().unwrap();
                    assert_eq!(items.len(), batch["question_ids"].as_array().unwrap().len());
                    unique(&items.iter().map(|q| q["header"].clone()).collect::<Vec<_>>(), "a header");
                    if format == "ask-user" {
                        unique(&items.iter().map(|q| q["question"].as_str().unwrap().trim().to_string()).collect::<Vec<_>>(), "a question text");
                    }
                    for q in items {
                        let labels: Vec<String> = q["options"].as_array().unwrap().iter()
                            .map(|o| label_key(o["label"].as_str().unwrap())).collect();
                        unique(&labels, "an option label");
                    }
                    seen.extend(ids(&batch["question_ids"]));
                }
                for left in out["left_out"].as_array().unwrap() {
                    seen.push(left["question_id"].as_i64().unwrap());
                }
                seen.sort_unstable();
                assert_eq!(seen, pending, "{format}: every pending question is in one batch or left out: {out:#}");
            }
            let pi = l.ok(["render", "--stage", "s", "--format", "pi-pending"]);
            assert_valid("render", &pi);
            assert_valid("pi-pending", &pi["payload"]);
        }
    }
}

#[test]
fn every_event_names_its_ledger() {
    let l = Ledger::new();
    l.log("s", "Goal?");
    let line = l.run(["events"]).stdout;
    let mut event: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_valid("event", &event);
    assert!(event["ledger"].as_str().is_some_and(|id| !id.is_empty()));
    event.as_object_mut().unwrap().remove("ledger");
    assert_invalid("event", &event);
}
