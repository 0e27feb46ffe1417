//! `schema/*.json` for what the program prints, generated from the types that print it
//! (schemars, from the core's `schema` feature): a test writes nothing and fails when a
//! committed file differs from what the types give; `QUESTIONS_WRITE_SCHEMAS=1 cargo test
//! schema::` writes them anew. The schemas of what the program reads (the formats of other
//! tools: `ask-user.json`, `import-*.json`, `open-questions.json`, `pi-pending.json`, …)
//! and of the payloads it renders for them (`render.json`, `ask-user-question.json`,
//! `vscode-ask-questions.json`, `elicitation-form.json`) follow those tools' own
//! definitions, which no type of ours holds: they stay written by hand, and the suite
//! checks real input and output against them (tests/cli/schema.rs).

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use questions_core::model::Question;
use questions_core::ops::{self, Procedure};

/// A document of `T`, or `T` in the envelope (§2) of the procedure that prints it.
struct Document {
    file: &'static str,
    title: &'static str,
    schema: Value,
}

fn of<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12().for_serialize();
    settings.inline_subschemas = false;
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// `T` with no definitions of its own, every type in place: a file other schemas (and
/// the MCP tools' output schemas) put in place of a reference to it.
fn whole<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12().for_serialize();
    settings.inline_subschemas = true;
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// `T`'s keys after `"ok"` and `"procedure"`. `ok` is always true but for a verdict of
/// its own that did not pass (a gate: `verdict`).
fn enveloped<T: JsonSchema>(procedure: Procedure, verdict: bool) -> Value {
    let mut inner = of::<T>();
    let own = inner.as_object_mut().expect("an object schema");
    let mut properties = Map::new();
    properties.insert(
        "ok".into(),
        if verdict {
            json!({"type": "boolean"})
        } else {
            json!({"const": true})
        },
    );
    properties.insert("procedure".into(), json!({"const": procedure.as_str()}));
    if let Some(Value::Object(rest)) = own.remove("properties") {
        properties.extend(rest);
    }
    let mut required = vec![json!("ok"), json!("procedure")];
    if let Some(Value::Array(rest)) = own.remove("required") {
        required.extend(rest);
    }
    let mut schema = json!({
        "type": "object",
        "required": required,
        "properties": properties,
    });
    if let Some(defs) = own.remove("$defs") {
        schema["$defs"] = defs;
    }
    schema
}

fn documents() -> Vec<Document> {
    use Procedure as P;
    let changed = |procedure: Procedure, title| Document {
        file: procedure.as_str(),
        title,
        schema: enveloped::<ops::Recorded>(procedure, false),
    };
    vec![
        Document {
            file: "question",
            title: "A question, as every command prints it",
            schema: whole::<Question>(),
        },
        Document {
            file: "event",
            title:
                "One line of `events` (and the body `watch --format json` posts): a history event",
            schema: whole::<ops::LedgerEvent<'static>>(),
        },
        Document {
            file: "error",
            title: "Any failure",
            schema: whole::<ops::Failure>(),
        },
        Document {
            file: "log",
            title: "Output of log",
            schema: enveloped::<ops::Logged>(P::Log, false),
        },
        changed(P::Answer, "Output of answer"),
        changed(P::Skip, "Output of skip"),
        changed(P::Decline, "Output of decline"),
        changed(P::Approve, "Output of approve"),
        changed(P::Reject, "Output of reject"),
        changed(P::Vote, "Output of the MCP tool vote"),
        Document {
            file: "list",
            title: "Output of list (--format json)",
            schema: enveloped::<ops::Listed>(P::List, false),
        },
        Document {
            file: "check",
            title: "Output of check: exit 0 with gate pass, exit 1 with gate fail",
            schema: enveloped::<ops::GateReport>(P::Check, true),
        },
        Document {
            file: "answers",
            title: "Output of answers: what a re-invoked subagent needs",
            schema: enveloped::<ops::AnswersReport>(P::Answers, false),
        },
        Document {
            file: "clear",
            title: "Output of clear",
            schema: enveloped::<ops::Cleared>(P::Clear, false),
        },
        Document {
            file: "reset",
            title: "Output of reset",
            schema: enveloped::<ops::Reset>(P::Reset, false),
        },
        Document {
            file: "history",
            title: "Output of history",
            schema: enveloped::<ops::History>(P::History, false),
        },
        Document {
            file: "ingest",
            title: "Output of ingest",
            schema: enveloped::<ops::Ingested>(P::Ingest, false),
        },
        Document {
            file: "import",
            title: "Output of import",
            schema: enveloped::<ops::Imported>(P::Import, false),
        },
        Document {
            file: "accept-defaults",
            title: "Output of accept-defaults",
            schema: enveloped::<ops::Defaulted>(P::AcceptDefaults, false),
        },
        Document {
            file: "info",
            title: "Output of info",
            schema: enveloped::<ops::Info>(P::Info, false),
        },
        Document {
            file: "group",
            title: "Output of group create|add|remove",
            schema: enveloped::<ops::GroupChanged>(P::Group, false),
        },
        Document {
            file: "watch",
            title: "Output of watch, when it stops (--timeout)",
            schema: enveloped::<crate::watch::Watched>(P::Watch, false),
        },
    ]
}

/// The file as committed: the draft, the title, every object closed to keys it does not
/// name, and a question a reference to question.json.
fn finished(document: Document) -> Value {
    let mut schema = document.schema;
    let own = schema.as_object_mut().expect("an object schema");
    own.remove("$schema");
    own.remove("title");
    let mut head = Map::new();
    head.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    head.insert("title".into(), json!(document.title));
    head.extend(std::mem::take(own));
    let mut schema = Value::Object(head);
    if document.file != "question" {
        point_at_file(&mut schema, "Question", "question.json");
    }
    prune_defs(&mut schema);
    close(&mut schema);
    schema
}

/// Every `{"$ref": "#/$defs/NAME"}` becomes `{"$ref": "FILE"}`.
fn point_at_file(value: &mut Value, name: &str, file: &str) {
    let local = format!("#/$defs/{name}");
    match value {
        Value::Object(map) => {
            if map.get("$ref").and_then(Value::as_str) == Some(local.as_str()) {
                map.insert("$ref".into(), json!(file));
            }
            for v in map.values_mut() {
                point_at_file(v, name, file);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| point_at_file(v, name, file)),
        _ => {}
    }
}

/// Takes out the `$defs` nothing refers to any more.
fn prune_defs(schema: &mut Value) {
    loop {
        let Some(Value::Object(defs)) = schema.get("$defs") else {
            return;
        };
        let names: Vec<String> = defs.keys().cloned().collect();
        let text = serde_json::to_string(&schema).expect("a schema serializes");
        let unused: Vec<String> = names
            .into_iter()
            .filter(|n| !text.contains(&format!("\"#/$defs/{n}\"")))
            .collect();
        if unused.is_empty() {
            break;
        }
        let defs = schema["$defs"].as_object_mut().expect("$defs is an object");
        for name in &unused {
            defs.remove(name);
        }
        if defs.is_empty() {
            schema
                .as_object_mut()
                .expect("an object schema")
                .remove("$defs");
        }
    }
}

/// A document the program prints has exactly the keys its schema names.
fn close(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), json!(false));
            }
            map.values_mut().for_each(close);
        }
        Value::Array(items) => items.iter_mut().for_each(close),
        _ => {}
    }
}

#[test]
fn the_committed_schemas_are_what_the_types_give() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    let write = std::env::var_os("QUESTIONS_WRITE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for document in documents() {
        let path = dir.join(format!("{}.json", document.file));
        let text = serde_json::to_string_pretty(&finished(document)).expect("serializes") + "\n";
        if write {
            std::fs::write(&path, &text).expect("schema/ is writable");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "these differ from what the types give (QUESTIONS_WRITE_SCHEMAS=1 cargo test schema:: \
         writes them): {stale:?}"
    );
}

/// `Question` prints its keys itself, in §4's order (its `Serialize`); its schema is derived
/// from its fields. A field the printer forgot, or a key it prints that no field holds,
/// makes the two disagree: every key of the schema is printed, and nothing else.
#[test]
fn a_question_prints_every_field_it_holds() {
    use questions_core::model::{Approval, State};
    let full = Question {
        harness_call: Some("claude-code:s:c".into()),
        urgent: true,
        logged_by: Some("ci-runner".into()),
        state: State {
            approval: Some(Approval::default()),
            ..State::default()
        },
        ..Question::default()
    };
    let printed: Vec<String> = match serde_json::to_value(&full).expect("serializes") {
        Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("a question prints an object, not {other}"),
    };
    let schema = whole::<Question>();
    let held: Vec<String> = schema["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .cloned()
        .collect();
    assert_eq!(printed, held);
}
