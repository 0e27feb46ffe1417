//! `questions mcp`, driven by a real MCP client (rmcp's client side) that spawns the
//! binary as a child process, as an agent's host does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProgressNotificationParam, ProtocolVersion, Request,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, ServiceExt,
};
use serde_json::{json, Value};

use crate::common::*;

/// How the test person answers a form: from its requested schema, an action and content.
type Person = Arc<dyn Fn(&Value) -> (ElicitationAction, Option<Value>) + Send + Sync>;

/// The protocol's two eras: a session opened by `initialize` (2025-11-25, where the
/// server asks the client to show a form), and stateless MCP (2026-07-28, opened by
/// `server/discover`, where a form is an "input required" result the client answers by
/// calling again).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Era {
    Session,
    Stateless,
}

const ERAS: [Era; 2] = [Era::Session, Era::Stateless];

/// What the test person does with a page the client opens for them (URL mode).
type InboxPerson = Arc<dyn Fn(&str) -> ElicitationAction + Send + Sync>;

#[derive(Clone)]
struct Client {
    name: String,
    era: Era,
    /// Declares the Tasks extension.
    tasks: bool,
    /// Declares the MCP Apps extension (shows `ui://` resources).
    apps: bool,
    /// Opens URLs for the person (URL-mode elicitation): what the person does there.
    inbox_person: Option<InboxPerson>,
    urls: Arc<Mutex<Vec<String>>>,
    /// More arguments for `questions mcp`.
    server_args: Vec<String>,
    /// More environment for `questions mcp`.
    server_env: Vec<(String, String)>,
    person: Option<Person>,
    forms: Arc<Mutex<Vec<Value>>>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl Client {
    fn new(name: &str) -> Client {
        Client {
            name: name.to_string(),
            era: Era::Session,
            tasks: false,
            apps: false,
            inbox_person: None,
            urls: Arc::default(),
            server_args: Vec::new(),
            server_env: Vec::new(),
            person: None,
            forms: Arc::default(),
            progress: Arc::default(),
        }
    }

    /// A client that shows forms, answered by `person`.
    fn with_person(
        name: &str,
        person: impl Fn(&Value) -> (ElicitationAction, Option<Value>) + Send + Sync + 'static,
    ) -> Client {
        Client {
            person: Some(Arc::new(person)),
            ..Client::new(name)
        }
    }

    fn with_tasks(mut self) -> Client {
        self.tasks = true;
        self
    }

    fn with_apps(mut self) -> Client {
        self.apps = true;
        self
    }

    fn in_era(mut self, era: Era) -> Client {
        self.era = era;
        self
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = match self.person {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::default(),
        };
        if self.inbox_person.is_some() {
            let mut elicitation = rmcp::model::ElicitationCapability::new()
                .with_url(rmcp::model::UrlElicitationCapability::new());
            if self.person.is_some() {
                elicitation =
                    elicitation.with_form(rmcp::model::FormElicitationCapability::default());
            }
            capabilities.elicitation = Some(elicitation);
        }
        if self.tasks {
            let tasks = ClientCapabilities::builder().enable_tasks().build();
            capabilities.extensions = tasks.extensions;
        }
        if self.apps {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    "io.modelcontextprotocol/ui".into(),
                    serde_json::Map::default(),
                );
        }
        ClientConfig::new(capabilities, Implementation::new(&self.name, "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let requested_schema = match request {
            ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            } => requested_schema,
            ElicitRequestParams::UrlElicitationParams { url, .. } => {
                self.urls.lock().unwrap().push(url.clone());
                let person = self
                    .inbox_person
                    .as_ref()
                    .expect("a URL sent to a client that opens none");
                return Ok(ElicitResult::new(person(&url)));
            }
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        };
        let schema = serde_json::to_value(&requested_schema).unwrap();
        self.forms.lock().unwrap().push(schema.clone());
        let person = self
            .person
            .as_ref()
            .expect("a form sent to a client without forms");
        let (action, content) = person(&schema);
        let mut result = ElicitResult::new(action);
        if let Some(content) = content {
            result = result.with_content(content);
        }
        Ok(result)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

/// A connected client, with the output schema of each tool the server listed.
struct Session {
    service: RunningService<RoleClient, Client>,
    client: Client,
    output_schemas: HashMap<String, Value>,
    pid: Option<u32>,
}

fn server_command(ledger: &Ledger) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("--db")
        .arg(ledger.db())
        .arg("mcp")
        .current_dir(ledger.dir.path())
        .env_remove("QUESTIONS_DB")
        .env_remove("QUESTIONS_USER")
        .env("QUESTIONS_NOW", NOW);
    cmd
}

async fn connect(ledger: &Ledger, client: Client) -> Session {
    let mut cmd = server_command(ledger);
    cmd.args(&client.server_args)
        .envs(client.server_env.iter().map(|(k, v)| (k, v)));
    let transport = TokioChildProcess::new(cmd).expect("spawn questions mcp");
    let pid = transport.id();
    let service = match client.era {
        Era::Session => client.clone().serve(transport).await,
        Era::Stateless => {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            client
                .clone()
                .serve_with_lifecycle(transport, lifecycle)
                .await
        }
    }
    .expect("initialize");
    let negotiated = service.peer().peer_info().unwrap().protocol_version.clone();
    let expected = match client.era {
        Era::Session => ProtocolVersion::V_2025_11_25,
        Era::Stateless => ProtocolVersion::V_2026_07_28,
    };
    assert_eq!(negotiated, expected, "{:?}", client.era);
    let tools = service.list_all_tools().await.expect("tools/list");
    // No number format of Rust's (`uint32`, `int64`, …), which JSON Schema does not define
    // and hosts warn of.
    let listed = serde_json::to_string(&tools).unwrap();
    for format in ["int", "uint", "float", "double"] {
        assert!(
            !listed.contains(&format!("\"format\":\"{format}")),
            "a tool schema names a Rust number format: {listed}"
        );
    }
    let output_schemas = tools
        .iter()
        .map(|t| {
            let schema = t
                .output_schema
                .as_ref()
                .expect("every tool has an output schema");
            (t.name.to_string(), Value::Object((**schema).clone()))
        })
        .collect();
    Session {
        service,
        client,
        output_schemas,
        pid,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs a test's client side, with a limit so that a hang fails instead of stalling.
fn run<F: std::future::Future<Output = ()>>(test: F) {
    runtime().block_on(async {
        tokio::time::timeout(Duration::from_mins(3), test)
            .await
            .expect("the test finished in time");
    });
}

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().expect("arguments object").clone())
}

fn assert_valid(schema: &Value, doc: &Value, what: &str) {
    let validator = jsonschema::validator_for(schema)
        .unwrap_or_else(|e| panic!("{what}: the schema does not compile: {e}\n{schema:#}"));
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} rejects:\n{doc:#}\n{}",
        errors.join("\n")
    );
}

/// The procedure a tool's documents name, success or failure: the command's, for a tool
/// that returns a command's document, else the tool's own name.
fn procedure_of(tool: &str) -> &str {
    match tool {
        "check_gate" => "check",
        "list_questions" => "list",
        "get_answers" => "answers",
        "record_answers" => "import",
        other => other,
    }
}

/// A success of `tool` is in the contract's envelope: `ok` and `procedure` first; `ok` is
/// false only for a gate that fails.
fn assert_enveloped(tool: &str, doc: &Value) {
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap_or_else(|| panic!("{tool}: not an object: {doc}"))
        .keys()
        .take(2)
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["ok", "procedure"], "{tool}: {doc}");
    assert_eq!(doc["procedure"], procedure_of(tool), "{tool}: {doc}");
    if tool != "check_gate" {
        assert_eq!(doc["ok"], true, "{tool}: {doc}");
    }
}

fn schema_file(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

impl Session {
    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        self.service
            .call_tool(params(tool, args))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"))
    }

    /// A call that must succeed: its structured content, checked against the tool's
    /// output schema, and the same document in its text content.
    async fn ok(&self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args).await;
        assert_ne!(result.is_error, Some(true), "{tool} failed: {result:?}");
        let doc = result
            .structured_content
            .clone()
            .expect("structuredContent");
        assert_valid(&self.output_schemas[tool], &doc, tool);
        assert_enveloped(tool, &doc);
        let text = result.content[0]
            .as_text()
            .expect("a text block")
            .text
            .clone();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), doc);
        doc
    }

    /// A call that must fail: the failure document (checked against schema/error.json).
    async fn fails(&self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args).await;
        assert_eq!(result.is_error, Some(true), "{tool} succeeded: {result:?}");
        let doc = result
            .structured_content
            .clone()
            .expect("structuredContent");
        crate::schema::assert_valid("error", &doc);
        // Clients on the TypeScript SDK check a tool error's structured content against
        // the tool's output schema too: it must admit the failure document.
        if let Some(schema) = self.output_schemas.get(tool) {
            assert_valid(schema, &doc, &format!("{tool}'s output schema"));
        }
        assert_eq!(doc["ok"], false);
        // The procedure its success would name: the command's, for a command's document.
        assert_eq!(doc["procedure"], procedure_of(tool));
        doc
    }
}

fn id_list(v: &Value) -> Vec<i64> {
    ids(v)
}

#[test]
fn every_tool_works_and_the_cli_sees_the_same_ledger() {
    let ledger = Ledger::new();
    run(async {
        let s = connect(&ledger, Client::new("test-client")).await;
        let asked = s
            .ok(
                "ask_questions",
                json!({"stage": "intake", "questions": [
                    {"question": "Which database?", "group": "Storage",
                     "options": ["PostgreSQL (Recommended)", {"label": "SQLite", "description": "one file"}],
                     "allow_freeform": false},
                    {"question": "Project name?", "proposed": "ledger", "required": false}
                ]}),
            )
            .await;
        let q = id_list(&asked["question_ids"]);
        assert_eq!(q.len(), 2);
        assert_eq!(id_list(&asked["created_ids"]), q);
        assert_eq!(asked["elicitation"], "unsupported");
        assert_eq!(asked["outcomes"][q[0].to_string()]["status"], "pending");

        // The same questions again are the ones on record.
        let again = s
            .ok(
                "ask_questions",
                json!({"stage": "intake", "questions": [
                    {"question": "Which database?", "group": "Storage", "options": ["PostgreSQL", "SQLite"]}
                ]}),
            )
            .await;
        assert_eq!(id_list(&again["question_ids"]), vec![q[0]]);
        assert!(id_list(&again["created_ids"]).is_empty());

        let gate = s.ok("check_gate", json!({"stage": "intake"})).await;
        assert_eq!(gate["procedure"], "check");
        assert_eq!(gate["gate"], "fail");
        assert_eq!(gate["ok"], false);
        assert_eq!(gate["pending_count"], 1);
        assert_eq!(gate["optional_pending"], 1);

        let listed = s
            .ok(
                "list_questions",
                json!({"stage": "intake", "status": "pending"}),
            )
            .await;
        assert_eq!(listed["count"], 2);
        assert_eq!(listed["questions"][0]["source"], "ask-user");
        assert_eq!(listed["questions"][0]["proposed"], "PostgreSQL");

        let recorded = s
            .ok(
                "record_answers",
                json!({"stage": "intake", "answers": {q[0].to_string(): "sqlite"}}),
            )
            .await;
        assert_eq!(recorded["procedure"], "import");
        assert_eq!(id_list(&recorded["answered_ids"]), vec![q[0]]);

        let waited = s
            .ok(
                "wait_for_answers",
                json!({"ids": [q[0]], "timeout_seconds": 5}),
            )
            .await;
        assert_eq!(waited["settled"], true);
        let outcome = &waited["outcomes"][q[0].to_string()];
        assert_eq!(outcome["status"], "answered");
        assert_eq!(outcome["answer"], "SQLite");
        assert_eq!(outcome["selected"], json!(["SQLite"]));

        let answers = s.ok("get_answers", json!({"stage": "intake"})).await;
        assert_eq!(answers["procedure"], "answers");
        assert_eq!(answers["answered"]["Storage"], "SQLite");
        assert_eq!(answers["answered"]["Project name?"], "ledger");

        let gate = s.ok("check_gate", json!({"stage": "intake"})).await;
        assert_eq!(gate["gate"], "pass");
        assert_eq!(gate["ok"], true);

        // A skip recorded through the tool, seen as a typed outcome.
        s.ok(
            "record_answers",
            json!({"stage": "intake", "answers": {q[1].to_string(): {"skip": true, "reason": "later"}}}),
        )
        .await;
        let waited = s
            .ok(
                "wait_for_answers",
                json!({"stage": "intake", "timeout_seconds": 1}),
            )
            .await;
        assert_eq!(waited["outcomes"][q[1].to_string()]["status"], "skipped");
        assert_eq!(waited["outcomes"][q[1].to_string()]["reason"], "later");
        s.service.cancel().await.unwrap();
    });
    // The command line reads the same ledger, and names who answered through what.
    let q = ledger.question(1);
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(q["channel"], "mcp");
    assert_eq!(q["answered_by"], "mcp:test-client");
}

/// The test person: picks the second option of a single-select, the first two of a
/// multi-select, and types into a text field.
fn fill(schema: &Value) -> Value {
    let mut content = serde_json::Map::new();
    for (key, p) in schema["properties"].as_object().unwrap() {
        if key.ends_with("_own") {
            // Their own words are left empty: the choice is the answer.
            continue;
        }
        let value = if let Some(one_of) = p["oneOf"].as_array() {
            one_of[1]["const"].clone()
        } else if p["type"] == "array" {
            json!(p["items"]["enum"].as_array().unwrap()[..2])
        } else {
            json!(format!("typed for {key}"))
        };
        content.insert(key.clone(), value);
    }
    Value::Object(content)
}

/// Every form the server sent is one the protocol allows.
fn assert_forms_valid(forms: &[Value]) {
    assert!(!forms.is_empty(), "no form was sent");
    let restricted = schema_file("elicitation-form");
    for form in forms {
        assert_valid(&restricted, form, "elicitation-form.json");
        let props = form["properties"].as_object().unwrap();
        for name in form["required"].as_array().unwrap_or(&Vec::new()) {
            assert!(
                props.contains_key(name.as_str().unwrap()),
                "required {name} is no property"
            );
        }
    }
}

fn three_questions() -> Value {
    json!({"stage": "design", "questions": [
        {"question": "Which database?", "header": "Database",
         "options": [{"label": "PostgreSQL", "recommended": true}, {"label": "SQLite", "description": "one file"}]},
        {"question": "Which platforms?", "options": ["Linux", "macOS", "Windows"], "multi_select": true,
         "proposed": "Linux, macOS"},
        {"question": "Project name?", "proposed": "ledger", "required": false, "context": "shown in the UI"}
    ]})
}

#[test]
fn a_form_accepted_by_the_person_records_the_answers() {
    for era in ERAS {
        a_form_accepted_in(era);
    }
}

fn a_form_accepted_in(era: Era) {
    let ledger = Ledger::new();
    run(async {
        let client = Client::with_person("form-client", |schema| {
            (ElicitationAction::Accept, Some(fill(schema)))
        })
        .in_era(era);
        let s = connect(&ledger, client).await;
        let asked = s.ok("ask_questions", three_questions()).await;
        assert_eq!(asked["elicitation"], "accepted");
        let q = id_list(&asked["question_ids"]);
        let o = &asked["outcomes"];
        assert_eq!(o[q[0].to_string()]["status"], "answered");
        assert_eq!(o[q[0].to_string()]["answer"], "SQLite");
        assert_eq!(o[q[1].to_string()]["selected"], json!(["Linux", "macOS"]));
        assert_eq!(
            o[q[2].to_string()]["answer"],
            format!("typed for q{}", q[2])
        );

        let forms = s.client.forms.lock().unwrap().clone();
        assert_forms_valid(&forms);
        let form = &forms[0];
        let single = &form["properties"][format!("q{}", q[0])];
        assert_eq!(single["title"], "Database");
        // Nothing is chosen or filled in for the person; the proposal is shown.
        assert!(single.get("default").is_none(), "{single}");
        assert_eq!(
            single["oneOf"][1],
            json!({"const": "SQLite", "title": "SQLite — one file"})
        );
        let multi = &form["properties"][format!("q{}", q[1])];
        assert_eq!(multi["type"], "array");
        assert_eq!(multi["items"]["enum"], json!(["Linux", "macOS", "Windows"]));
        assert!(multi.get("default").is_none(), "{multi}");
        assert!(multi["description"]
            .as_str()
            .unwrap()
            .ends_with("Proposed: Linux, macOS"));
        let text = &form["properties"][format!("q{}", q[2])];
        assert_eq!(text["type"], "string");
        assert!(text.get("default").is_none(), "{text}");
        assert_eq!(text["description"], "shown in the UI\n\nProposed: ledger");
        // A question with options that takes free text has a field for it beside the
        // choice, so neither is forced on the person.
        assert_eq!(
            form["properties"][format!("q{}_own", q[0])]["type"],
            "string"
        );
        assert_eq!(form["required"], json!([]));

        // Answered questions are not put to the person again.
        let again = s.ok("ask_questions", three_questions()).await;
        assert_eq!(again["elicitation"], "nothing_pending");
        assert_eq!(s.client.forms.lock().unwrap().len(), 1);
        s.service.cancel().await.unwrap();
    });
    for q in ledger.all() {
        assert_eq!(q["status"], "answered");
        assert_eq!(q["channel"], "mcp");
        assert_eq!(q["answered_by"], "mcp:form-client");
    }
}

#[test]
fn the_form_takes_the_person_s_own_words_beside_a_choice() {
    for era in ERAS {
        own_words_in(era);
    }
}

fn own_words_in(era: Era) {
    let ledger = Ledger::new();
    run(async {
        let client = Client::with_person("form-client", |schema| {
            let mut content = fill(schema);
            let own: Vec<String> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| k.ends_with("_own"))
                .cloned()
                .collect();
            // The single choice's field, then the multi-select's.
            content[&own[0]] = json!("MariaDB, which ops knows");
            content[&own[1]] = json!("FreeBSD");
            (ElicitationAction::Accept, Some(content))
        })
        .in_era(era);
        let s = connect(&ledger, client).await;
        let asked = s.ok("ask_questions", three_questions()).await;
        assert_eq!(asked["elicitation"], "accepted");
        let q = id_list(&asked["question_ids"]);
        let o = &asked["outcomes"];
        // Their words stand in for a single choice...
        assert_eq!(o[q[0].to_string()]["answer"], "MariaDB, which ops knows");
        // ...and join the options chosen on a multi-select.
        assert_eq!(o[q[1].to_string()]["answer"], "Linux, macOS, FreeBSD");
        assert_eq!(o[q[1].to_string()]["selected"], json!(["Linux", "macOS"]));
        let form = s.client.forms.lock().unwrap()[0].clone();
        let own = &form["properties"][format!("q{}_own", q[0])];
        assert_eq!(own["title"], "Database: in your own words");
        // A question without options has one text field, not two.
        assert!(form["properties"].get(format!("q{}_own", q[2])).is_none());
        s.service.cancel().await.unwrap();
    });
    assert_eq!(ledger.all()[0]["was_custom"], true);
}

#[test]
fn a_declined_or_cancelled_form_leaves_the_questions_pending_and_says_which() {
    let ledger = Ledger::new();
    run(async {
        for (action, said, era) in [
            (ElicitationAction::Decline, "declined", Era::Session),
            (ElicitationAction::Cancel, "cancelled", Era::Session),
            (ElicitationAction::Decline, "declined", Era::Stateless),
            (ElicitationAction::Cancel, "cancelled", Era::Stateless),
        ] {
            let client =
                Client::with_person("form-client", move |_| (action.clone(), None)).in_era(era);
            let s = connect(&ledger, client).await;
            let asked = s.ok("ask_questions", three_questions()).await;
            assert_eq!(asked["elicitation"], said);
            // Who declined cannot be told (a headless host declines every form): the agent
            // is told it is not the person's answer, and how to go on.
            let note = asked["elicitation_note"].as_str().unwrap_or_default();
            assert!(
                note.contains("nothing was recorded") && note.contains("wait_for_answers"),
                "{asked}"
            );
            if said == "declined" {
                assert!(note.contains("not the person's refusal"), "{note}");
            }
            for (_, outcome) in asked["outcomes"].as_object().unwrap() {
                assert_eq!(outcome["status"], "pending");
            }
            assert_forms_valid(&s.client.forms.lock().unwrap());
            s.service.cancel().await.unwrap();
        }
        // elicit: false sends no form, even to a client that can show one.
        let client = Client::with_person("form-client", |_| panic!("no form was wanted"));
        let s = connect(&ledger, client).await;
        let asked = s
            .ok(
                "ask_questions",
                json!({"stage": "design", "questions": [{"question": "Which database?", "header": "Database"}], "elicit": false}),
            )
            .await;
        assert_eq!(asked["elicitation"], "not_requested");
        s.service.cancel().await.unwrap();
    });
    assert!(ledger.all().iter().all(|q| q["status"] == "pending"));
}

#[test]
fn a_client_that_times_out_loses_nothing_and_the_next_wait_sees_a_cli_answer() {
    let ledger = Ledger::new();
    // The server's waits announce each time they wait (and never stop there).
    let wait = Pause::new(ledger.dir.path(), "wait");
    wait.release();
    run(async {
        let client = Client {
            server_env: vec![("QUESTIONS_TEST_PAUSE".into(), wait.env.clone())],
            ..Client::new("impatient")
        };
        let s = connect(&ledger, client).await;
        let asked = s
            .ok(
                "ask_questions",
                json!({"stage": "release", "questions": [{"question": "Ship it?"}]}),
            )
            .await;
        let id = id_list(&asked["question_ids"])[0];

        // The client gives up on a wait before the server does.
        let request = ClientRequest::CallToolRequest(Request::new(params(
            "wait_for_answers",
            json!({"ids": [id], "timeout_seconds": 30}),
        )));
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(Duration::from_millis(800));
        let handle = s
            .service
            .send_request_with_option(request, options)
            .await
            .unwrap();
        let gave_up = handle.await_response().await;
        assert!(
            matches!(gave_up, Err(rmcp::ServiceError::Timeout { .. })),
            "{gave_up:?}"
        );

        // A person answers on the command line; the next wait returns it at once.
        let db = ledger.db();
        let dir = ledger.dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let mut cmd = bare_command(&dir);
            cmd.arg("--db")
                .arg(db)
                .args(["answer", "--id", &id.to_string(), "--answer", "Yes"]);
            let run = finish(cmd);
            assert_eq!(run.code, 0, "{run:?}");
        })
        .await
        .unwrap();
        let started = Instant::now();
        let waited = s
            .ok(
                "wait_for_answers",
                json!({"ids": [id], "timeout_seconds": 20}),
            )
            .await;
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(waited["outcomes"][id.to_string()]["status"], "answered");
        assert_eq!(waited["outcomes"][id.to_string()]["answer"], "Yes");

        // A wait under way sees an answer given meanwhile, and tells progress while it waits.
        let second = s
            .ok(
                "ask_questions",
                json!({"stage": "release", "questions": [{"question": "Tag it?"}]}),
            )
            .await;
        let id2 = id_list(&second["question_ids"])[0];
        let db = ledger.db();
        let dir = ledger.dir.path().to_path_buf();
        // The earlier waits have ended: the next arrival is this wait's, once it has read
        // the stage with the question pending.
        wait.forget();
        let answerer = tokio::spawn(async move {
            tokio::task::spawn_blocking(move || {
                wait.reached();
                let mut cmd = bare_command(&dir);
                cmd.arg("--db").arg(db).args([
                    "skip",
                    "--id",
                    &id2.to_string(),
                    "--reason",
                    "no tags",
                ]);
                assert_eq!(finish(cmd).code, 0);
            })
            .await
            .unwrap();
        });
        let started = Instant::now();
        let waited = s
            .ok(
                "wait_for_answers",
                json!({"stage": "release", "timeout_seconds": 40}),
            )
            .await;
        answerer.await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(waited["settled"], true);
        assert_eq!(waited["outcomes"][id2.to_string()]["status"], "skipped");
        let progress = s.client.progress.lock().unwrap().clone();
        assert!(!progress.is_empty(), "no progress notification");
        // The stage's two questions, counted as they settle: one of two told while it
        // waited, before the skip.
        assert!(
            progress
                .iter()
                .any(|p| (p.progress - 1.0).abs() < f64::EPSILON && p.total == Some(2.0)),
            "{progress:?}"
        );
        s.service.cancel().await.unwrap();
    });
}

#[test]
fn a_wait_that_runs_out_returns_the_pending_outcomes() {
    let ledger = Ledger::new();
    let id = ledger.log("intake", "Goal?");
    run(async {
        let s = connect(&ledger, Client::new("waiter")).await;
        let started = Instant::now();
        let waited = s
            .ok(
                "wait_for_answers",
                json!({"stage": "intake", "timeout_seconds": 1.5}),
            )
            .await;
        assert!(started.elapsed() >= Duration::from_millis(1400));
        assert_eq!(waited["timed_out"], true);
        assert_eq!(waited["settled"], false);
        assert_eq!(waited["outcomes"][id.to_string()]["status"], "pending");
        s.service.cancel().await.unwrap();
    });
}

#[test]
fn a_killed_server_loses_nothing_and_a_new_one_goes_on() {
    let ledger = Ledger::new();
    run(async {
        let s = connect(&ledger, Client::new("first")).await;
        let asked = s
            .ok(
                "ask_questions",
                json!({"stage": "intake", "questions": [{"question": "Goal?"}, {"question": "Budget?"}]}),
            )
            .await;
        let q = id_list(&asked["question_ids"]);
        s.ok(
            "record_answers",
            json!({"stage": "intake", "answers": {q[0].to_string(): "A blog"}}),
        )
        .await;
        let pid = s.pid.expect("the server's pid");
        let killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        drop(s);

        let s = connect(&ledger, Client::new("second")).await;
        let waited = s
            .ok(
                "wait_for_answers",
                json!({"ids": q.clone(), "timeout_seconds": 0}),
            )
            .await;
        assert_eq!(waited["outcomes"][q[0].to_string()]["answer"], "A blog");
        assert_eq!(waited["outcomes"][q[1].to_string()]["status"], "pending");
        s.ok(
            "record_answers",
            json!({"stage": "intake", "answers": {q[1].to_string(): "Small"}}),
        )
        .await;
        let gate = s.ok("check_gate", json!({"stage": "intake"})).await;
        assert_eq!(gate["gate"], "pass");
        s.service.cancel().await.unwrap();
    });
    assert_eq!(ledger.question(2)["answered_by"], "mcp:second");
}

#[test]
fn bad_input_is_a_tool_error_with_the_failure_document_and_the_server_keeps_serving() {
    for era in ERAS {
        bad_input_in(era);
    }
}

fn bad_input_in(era: Era) {
    let ledger = Ledger::new();
    let closed = ledger.log_with(
        "intake",
        "DB?",
        &["--option", "A", "--option", "B", "--no-freeform"],
    );
    run(async {
        let s = connect(&ledger, Client::new("careless").in_era(era)).await;
        let missing = s.fails("ask_questions", json!({"stage": "intake"})).await;
        assert_eq!(missing["error_code"], "usage");
        assert!(
            missing["error"].as_str().unwrap().contains("questions"),
            "{missing}"
        );

        let typo = s
            .fails(
                "ask_questions",
                json!({"stage": "intake", "questions": [{"queston": "Goal?"}]}),
            )
            .await;
        assert_eq!(typo["error_code"], "usage");
        assert!(
            typo["error"].as_str().unwrap().contains("queston"),
            "{typo}"
        );

        // An approval's policy is refused in the tool's own terms: an agent has no flags.
        let quorum = s
            .fails(
                "ask_questions",
                json!({"stage": "intake", "questions": [{"question": "Ship?",
                    "approval": {"approvers": ["alice"], "min": 2}}]}),
            )
            .await;
        assert_eq!(quorum["error_code"], "usage");
        let words = quorum["error"].as_str().unwrap();
        assert!(words.contains("min of 2 can never be reached"), "{quorum}");
        assert!(
            !words.contains("--"),
            "an agent is told of a flag: {quorum}"
        );

        let blank = s
            .fails(
                "ask_questions",
                json!({"stage": "intake", "questions": [{"question": "Goal?"}, {"question": "  "}]}),
            )
            .await;
        assert_eq!(blank["error_code"], "usage");
        assert!(
            blank["error"].as_str().unwrap().contains("questions[1]"),
            "{blank}"
        );

        let neither = s.fails("wait_for_answers", json!({})).await;
        assert_eq!(neither["error_code"], "usage");

        let unknown = s
            .fails(
                "wait_for_answers",
                json!({"ids": [999], "timeout_seconds": 1}),
            )
            .await;
        assert_eq!(unknown["error_code"], "not_found");

        let wrong = s
            .fails(
                "record_answers",
                json!({"stage": "intake", "answers": {closed.to_string(): "C"}}),
            )
            .await;
        assert_eq!(wrong["error_code"], "invalid_answer");

        let negative = s
            .fails(
                "ask_questions",
                json!({"stage": "intake", "questions": [{"question": "Goal?"}], "wait_seconds": -1}),
            )
            .await;
        assert_eq!(negative["error_code"], "usage");

        // Numbers far out of range are tool errors, not a panic without a response.
        for (tool, args) in [
            (
                "wait_for_answers",
                json!({"ids": [closed], "timeout_seconds": 1e20}),
            ),
            (
                "ask_questions",
                json!({"stage": "intake", "questions": [{"question": "Goal?"}], "wait_seconds": 1e20}),
            ),
            (
                "wait_for_answers",
                json!({"ids": [closed], "timeout_seconds": "soon"}),
            ),
        ] {
            let far = s.fails(tool, args).await;
            assert_eq!(far["error_code"], "usage", "{far}");
        }
        // A number written as text, as some clients send it, is a number.
        let text = s
            .ok(
                "wait_for_answers",
                json!({"ids": [closed], "timeout_seconds": "0"}),
            )
            .await;
        assert_eq!(text["timed_out"], true);
        // Nothing to wait for is an error, never `settled`.
        let none = s.fails("wait_for_answers", json!({"ids": []})).await;
        assert_eq!(none["error_code"], "usage");
        let never = s
            .fails(
                "wait_for_answers",
                json!({"stage": "never-held", "timeout_seconds": 1}),
            )
            .await;
        assert_eq!(never["error_code"], "not_found");

        // Nothing of the failed calls was logged, and the server still answers.
        let listed = s.ok("list_questions", json!({})).await;
        assert_eq!(listed["count"], 1);
        s.service.cancel().await.unwrap();
    });
}

#[test]
fn eight_clients_at_once_lose_nothing() {
    let ledger = Ledger::new();
    run(async {
        let mut clients = Vec::new();
        for n in 0..8 {
            clients.push(connect(&ledger, Client::new(&format!("agent-{n}"))).await);
        }
        let mut tasks = Vec::new();
        for (n, s) in clients.into_iter().enumerate() {
            tasks.push(tokio::spawn(async move {
                let stage = format!("stage-{n}");
                let questions: Vec<Value> = (0..5)
                    .map(|k| json!({"question": format!("Question {k} of agent {n}?")}))
                    .collect();
                let asked = s
                    .ok(
                        "ask_questions",
                        json!({"stage": stage, "questions": questions}),
                    )
                    .await;
                let shared = s
                    .ok(
                        "ask_questions",
                        json!({"stage": "shared", "questions": [{"question": "Which license?"}]}),
                    )
                    .await;
                let mut answers = serde_json::Map::new();
                for id in id_list(&asked["question_ids"]) {
                    answers.insert(id.to_string(), json!(format!("answer {id} by {n}")));
                }
                s.ok(
                    "record_answers",
                    json!({"stage": stage, "answers": answers}),
                )
                .await;
                let gate = s.ok("check_gate", json!({"stage": stage})).await;
                assert_eq!(gate["gate"], "pass");
                s.service.cancel().await.unwrap();
                id_list(&shared["question_ids"])[0]
            }));
        }
        let mut shared = Vec::new();
        for t in tasks {
            shared.push(t.await.unwrap());
        }
        shared.dedup();
        assert_eq!(
            shared.len(),
            1,
            "the shared question was logged more than once"
        );
    });
    let all = ledger.all();
    assert_eq!(all.len(), 8 * 5 + 1);
    let answered: Vec<&Value> = all.iter().filter(|q| q["status"] == "answered").collect();
    assert_eq!(answered.len(), 8 * 5);
    for q in answered {
        let id = q["id"].as_i64().unwrap();
        assert!(q["answer"]
            .as_str()
            .unwrap()
            .starts_with(&format!("answer {id} by ")));
    }
}

#[test]
fn the_restricted_form_schema_refuses_what_the_protocol_refuses() {
    let restricted = schema_file("elicitation-form");
    let validator = jsonschema::validator_for(&restricted).unwrap();
    let nested =
        json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}});
    assert!(!validator.is_valid(&nested));
    let reference = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}});
    assert!(!validator.is_valid(&reference));
    let fine = json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}});
    assert!(validator.is_valid(&fine));
}

/// The fenced block after `<!-- mcp-config: NAME -->` in the guide to MCP.
fn readme_block(name: &str) -> String {
    let readme = include_str!("../../docs/guide/mcp.md");
    let at = readme
        .find(&format!("<!-- mcp-config: {name} -->"))
        .unwrap_or_else(|| panic!("docs/guide/mcp.md has no '{name}' snippet"));
    let block = &readme[at..];
    let start = block.find("```").unwrap();
    let start = start + block[start..].find('\n').unwrap() + 1;
    let end = block[start..].find("```").unwrap();
    block[start..start + end].to_string()
}

/// Each host's snippet, read as that host reads it: the command and its arguments.
fn readme_commands() -> Vec<(&'static str, String, Vec<String>)> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    let claude = readme_block("claude");
    let words: Vec<String> = claude.split_whitespace().map(str::to_string).collect();
    assert_eq!(words[..4], ["claude", "mcp", "add", "questions"]);
    let after = words.iter().position(|w| w == "--").unwrap() + 1;
    let codex: toml::Table = toml::from_str(&readme_block("codex")).expect("valid TOML");
    let codex = &codex["mcp_servers"]["questions"];
    let vscode: Value = serde_json::from_str(&readme_block("vscode")).expect("valid JSON");
    let vscode = &vscode["servers"]["questions"];
    assert_eq!(vscode["type"], "stdio");
    let cursor: Value = serde_json::from_str(&readme_block("cursor")).expect("valid JSON");
    let cursor = &cursor["mcpServers"]["questions"];
    vec![
        ("claude", words[after].clone(), words[after + 1..].to_vec()),
        (
            "codex",
            codex["command"].as_str().unwrap().to_string(),
            codex["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect(),
        ),
        (
            "vscode",
            vscode["command"].as_str().unwrap().to_string(),
            strings(&vscode["args"]),
        ),
        (
            "cursor",
            cursor["command"].as_str().unwrap().to_string(),
            strings(&cursor["args"]),
        ),
    ]
}

#[test]
fn every_readme_host_snippet_starts_a_server_on_its_ledger() {
    let ledger = Ledger::new();
    ledger.log("intake", "Goal?");
    run(async {
        for (host, command, args) in readme_commands() {
            assert_eq!(command, "questions", "{host}");
            assert_eq!(
                args[args.len().saturating_sub(2)..],
                ["mcp", "--no-votes"],
                "{host}: an agent's server refuses votes"
            );
            let db = args.iter().position(|a| a == "--db").expect("--db") + 1;
            // The snippet's own arguments, with its example path swapped for this ledger.
            let mut cmd = tokio::process::Command::new(BIN);
            for (i, arg) in args.iter().enumerate() {
                if i == db {
                    cmd.arg(ledger.db());
                } else {
                    cmd.arg(arg);
                }
            }
            cmd.current_dir(ledger.dir.path())
                .env_remove("QUESTIONS_DB");
            let transport = TokioChildProcess::new(cmd).unwrap();
            let service = Client::new(host).serve(transport).await.expect(host);
            let listed = service
                .call_tool(params("list_questions", json!({})))
                .await
                .unwrap();
            assert_eq!(listed.structured_content.unwrap()["count"], 1, "{host}");
            service.cancel().await.unwrap();
        }
    });
}

#[test]
fn sqlite_only_the_readme_transcript_is_what_the_server_says() {
    crate::sqlite_only!();
    // The same transcript in both eras of the protocol.
    let block = readme_transcript(Era::Session);
    assert_eq!(readme_transcript(Era::Stateless), block);
    readme_check(block);
}

/// The transcript of the MCP session in docs/guide/mcp.md, as rmcp's client sees it in `era`.
fn readme_transcript(era: Era) -> String {
    let ledger = Ledger::new();
    let mut transcript = String::new();
    run(async {
        let s = connect(&ledger, Client::new("readme").in_era(era)).await;
        fn step(transcript: &mut String, tool: &str, args: &Value, result: &Value) {
            transcript.push_str(&format!("→ {tool} {args}\n"));
            transcript.push_str(&format!(
                "← {}\n\n",
                serde_json::to_string_pretty(result).unwrap()
            ));
        }
        let args = json!({"stage": "intake", "questions": [
            {"question": "Which database?", "group": "Storage",
             "options": ["PostgreSQL (Recommended)", "SQLite"]},
            {"question": "Project name?", "proposed": "ledger", "required": false}]});
        let result = s.ok("ask_questions", args.clone()).await;
        step(&mut transcript, "ask_questions", &args, &result);
        let args = json!({"stage": "intake", "timeout_seconds": 1});
        let result = s.ok("wait_for_answers", args.clone()).await;
        step(&mut transcript, "wait_for_answers", &args, &result);
        let db = ledger.db();
        let dir = ledger.dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let mut cmd = bare_command(&dir);
            cmd.arg("--db")
                .arg(db)
                .args(["answer", "--id", "1", "--answer", "sqlite"]);
            assert_eq!(finish(cmd).code, 0);
        })
        .await
        .unwrap();
        transcript.push_str("$ questions answer --id 1 --answer sqlite\n\n");
        let args = json!({"ids": [1]});
        let result = s.ok("wait_for_answers", args.clone()).await;
        step(&mut transcript, "wait_for_answers", &args, &result);
        let args = json!({"stage": "intake"});
        let result = s.ok("check_gate", args.clone()).await;
        step(
            &mut transcript,
            "check_gate",
            &args,
            &json!({"ok": result["ok"], "procedure": result["procedure"], "gate": result["gate"], "pending_count": result["pending_count"], "…": "…"}),
        );
        let result = s.ok("get_answers", args.clone()).await;
        step(
            &mut transcript,
            "get_answers",
            &args,
            &json!({"ok": result["ok"], "procedure": result["procedure"], "answered": result["answered"], "…": "…"}),
        );
        s.service.cancel().await.unwrap();
    });
    format!("```text\n{}```\n", transcript.trim_end().to_string() + "\n")
}

fn readme_check(block: String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide/mcp.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (open, close) = ("<!-- mcp-transcript -->\n", "<!-- /mcp-transcript -->");
    let start = readme.find(open).unwrap() + open.len();
    let end = readme.find(close).unwrap();
    if std::env::var_os("QUESTIONS_WRITE_README").is_some() {
        let updated = format!("{}{block}{}", &readme[..start], &readme[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        readme[start..end],
        block,
        "docs/guide/mcp.md's MCP transcript is stale: run QUESTIONS_WRITE_README=1 cargo test --test cli readme_transcript"
    );
}

#[test]
fn a_line_that_is_not_json_gets_a_parse_error_and_the_session_goes_on() {
    use std::io::{BufRead, BufReader, Write};
    let ledger = Ledger::new();
    let mut child = std::process::Command::new(BIN)
        .current_dir(ledger.dir.path())
        .arg("--db")
        .arg(ledger.db())
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |line: &str| writeln!(stdin, "{line}").unwrap();
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["id"], 1);
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send("{not json");
    let error: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let listed: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(listed["id"], 2);
    assert!(listed["result"]["tools"].as_array().unwrap().len() >= 6);
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_form_accepted_after_one_question_was_answered_elsewhere_records_the_others() {
    for era in ERAS {
        late_form_in(era);
    }
}

fn late_form_in(era: Era) {
    let ledger = Ledger::new();
    let db = ledger.db();
    let dir = ledger.dir.path().to_path_buf();
    run(async {
        let client = Client::with_person("late-client", move |schema| {
            // While the form is open, someone answers the first question at the CLI.
            let first = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .trim_start_matches('q')
                .to_string();
            let out = std::process::Command::new(BIN)
                .current_dir(&dir)
                .arg("--db")
                .arg(&db)
                .args(["answer", "--id", &first, "--answer", "PostgreSQL"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            (ElicitationAction::Accept, Some(fill(schema)))
        })
        .in_era(era);
        let s = connect(&ledger, client).await;
        let asked = s.ok("ask_questions", three_questions()).await;
        assert_eq!(asked["elicitation"], "accepted");
        let q = id_list(&asked["question_ids"]);
        // The one answered elsewhere is reported and keeps its answer; the others are in.
        assert_eq!(asked["not_recorded"][0]["question_id"], q[0], "{asked}");
        let o = &asked["outcomes"];
        assert_eq!(o[q[0].to_string()]["answer"], "PostgreSQL");
        assert_eq!(o[q[1].to_string()]["status"], "answered");
        assert_eq!(o[q[2].to_string()]["status"], "answered");
        s.service.cancel().await.unwrap();
    });
}

/// On a stateless session the form is an "input required" result whose `requestState`
/// the client echoes: one altered, issued for other questions, or used twice records
/// nothing; the genuine one records the person's answer once.
#[test]
fn a_forged_replayed_or_misbound_request_state_is_refused() {
    use rmcp::model::CallToolResponse;
    let ledger = Ledger::new();
    run(async {
        let client = Client::new("mrtr-client").in_era(Era::Stateless);
        let client = Client {
            person: Some(Arc::new(|_: &Value| (ElicitationAction::Accept, None))),
            ..client
        };
        let s = connect(&ledger, client).await;
        let ask = json!({"stage": "design", "questions": [{"question": "Which database?"}]});
        let first = s
            .service
            .call_tool_once(params("ask_questions", ask.clone()))
            .await
            .unwrap();
        let CallToolResponse::InputRequired(required) = first else {
            panic!("a stateless session gets an input-required result: {first:?}");
        };
        let state = required.request_state.clone().expect("a requestState");
        let form =
            serde_json::to_value(&required.input_requests.as_ref().unwrap()["form"]).unwrap();
        assert_eq!(form["method"], "elicitation/create");
        let id = form["params"]["requestedSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let reply = |answer: &str| {
            let mut replies = rmcp::model::InputResponses::new();
            replies.insert(
                "form".to_string(),
                json!({"action": "accept", "content": {id.clone(): answer}}),
            );
            replies
        };
        let again = |args: Value, state: String, answer: &str| {
            let mut p = params("ask_questions", args);
            p.request_state = Some(state);
            p.input_responses = Some(reply(answer));
            p
        };
        let refused = |result: CallToolResponse, code: &str| {
            let CallToolResponse::Complete(result) = result else {
                panic!("not a final result: {result:?}");
            };
            assert_eq!(result.is_error, Some(true), "{result:?}");
            let doc = result.structured_content.unwrap();
            assert_eq!(doc["error_code"], code, "{doc}");
            crate::schema::assert_valid("error", &doc);
        };

        // Altered: one character of the signed state changed.
        let mut forged = state.clone().into_bytes();
        let at = forged.len() / 2;
        forged[at] = if forged[at] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(forged).unwrap();
        let result = s
            .service
            .call_tool_once(again(ask.clone(), forged.clone(), "MariaDB"))
            .await
            .unwrap();
        refused(result, "usage");
        // Altered, with arguments that name a question not logged yet.
        let other = json!({"stage": "design", "questions": [{"question": "Which cache?"}]});
        let result = s
            .service
            .call_tool_once(again(other.clone(), forged, "MariaDB"))
            .await
            .unwrap();
        refused(result, "usage");
        // Issued for other questions than these arguments log.
        let result = s
            .service
            .call_tool_once(again(other, state.clone(), "MariaDB"))
            .await
            .unwrap();
        refused(result, "usage");
        // Refused before anything was written: the ledger holds the first call's question
        // alone, still pending.
        let all = ledger.all();
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0]["status"], "pending");

        // The genuine state, with the person's reply: recorded.
        let result = s
            .service
            .call_tool_once(again(ask.clone(), state.clone(), "SQLite"))
            .await
            .unwrap();
        let CallToolResponse::Complete(done) = result else {
            panic!("{result:?}");
        };
        let doc = done.structured_content.unwrap();
        assert_eq!(doc["elicitation"], "accepted", "{doc}");
        assert_eq!(doc["created_ids"], json!([1]), "{doc}");

        // The same state again: refused, and the answer stays the person's.
        let result = s
            .service
            .call_tool_once(again(ask.clone(), state.clone(), "MariaDB"))
            .await
            .unwrap();
        refused(result, "conflict");
        let q = &ledger.all()[0];
        assert_eq!(q["answer"], "SQLite");
        assert_eq!(q["answered_by"], "mcp:mrtr-client");

        // Stale: issued for a ledger that a reset has since replaced. Refused, and the new
        // ledger gets no question from it.
        ledger.ok(["reset", "--yes"]);
        let result = s
            .service
            .call_tool_once(again(ask.clone(), state, "MariaDB"))
            .await
            .unwrap();
        refused(result, "usage");
        assert_eq!(ledger.all(), Vec::<Value>::new());
        s.service.cancel().await.unwrap();
    });
}

/// A wait whose ledger is reset and made anew under it ends with a conflict, even where
/// nothing woke it for the reset (PostgreSQL notes a connection's ledger at its first
/// wait, by then the new one): the new ledger's question 1, answered, is not the question
/// waited for.
#[test]
fn wait_for_answers_ends_when_its_ledger_is_reset_and_made_anew() {
    let ledger = Ledger::new();
    let id = ledger.log("s", "Ship the release?");
    let wait = Pause::new(ledger.dir.path(), "wait");
    let (db, dir) = (ledger.db(), ledger.dir.path().to_path_buf());
    run(async {
        let client = Client {
            server_env: vec![("QUESTIONS_TEST_PAUSE".into(), wait.env.clone())],
            ..Client::new("waiter")
        };
        let s = connect(&ledger, client).await;
        let call = s.call(
            "wait_for_answers",
            json!({"ids": [id], "timeout_seconds": 30}),
        );
        // While it waits: the ledger is reset, and a new question 1 logged and answered.
        let meanwhile = tokio::task::spawn_blocking(move || {
            wait.reached();
            for args in [
                &["reset", "--yes"][..],
                &["log", "--stage", "s", "--question", "Delete production?"][..],
                &["answer", "--id", "1", "--answer", "yes"][..],
            ] {
                let mut cmd = bare_command(&dir);
                cmd.arg("--db").arg(&db).args(args);
                assert_eq!(finish(cmd).code, 0, "{args:?}");
            }
            wait.release();
        });
        let (result, meanwhile) = tokio::join!(call, meanwhile);
        meanwhile.unwrap();
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let doc = result.structured_content.unwrap();
        assert_eq!(doc["error_code"], "conflict", "{doc}");
        s.service.cancel().await.unwrap();
    });
}

/// A wait that outlives the call: a client that declares the Tasks extension gets a task,
/// kept in the ledger. The server is killed with `kill -9`, the person answers at the CLI,
/// and `tasks/get` on a new server reports the task completed with the answers. A task is a
/// result of the 2026-07-28 revision: a session of an earlier one gets the tool's result.
#[test]
fn a_task_outlives_a_killed_server_and_reports_the_answers_given_meanwhile() {
    use rmcp::model::CallToolResponse;
    task_in(Era::Stateless);
    let ledger = Ledger::new();
    run(async {
        let client = Client::new("tasker").in_era(Era::Session).with_tasks();
        let s = connect(&ledger, client).await;
        let asked = s
            .ok(
                "ask_questions",
                json!({"stage": "intake", "questions": [{"question": "Goal?"}]}),
            )
            .await;
        let waited = s
            .service
            .call_tool_once(params(
                "wait_for_answers",
                json!({"ids": asked["question_ids"].clone(), "timeout_seconds": 0}),
            ))
            .await
            .unwrap();
        let CallToolResponse::Complete(done) = waited else {
            panic!("a 2025-11-25 session gets the tool's result, not a task: {waited:?}");
        };
        let doc = done.structured_content.expect("the envelope");
        assert_eq!(doc["timed_out"], true, "{doc}");
        s.service.cancel().await.unwrap();
    });
}

fn task_in(era: Era) {
    use rmcp::model::{CallToolResponse, GetTaskParams, TaskStatus};
    let ledger = Ledger::new();
    run(async {
        let client = Client::new("tasker").in_era(era).with_tasks();
        let s = connect(&ledger, client.clone()).await;
        let asked = s
            .ok(
                "ask_questions",
                json!({"stage": "intake", "questions": [{"question": "Goal?"}, {"question": "Budget?"}]}),
            )
            .await;
        let q = id_list(&asked["question_ids"]);
        let started = s
            .service
            .call_tool_once(params("wait_for_answers", json!({"ids": q.clone()})))
            .await
            .unwrap();
        let CallToolResponse::Task(created) = started else {
            panic!("{era:?}: a client with tasks gets a task: {started:?}");
        };
        assert_eq!(created.task.status, TaskStatus::Working);
        let id = created.task.task_id.clone();
        let got = s
            .service
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .unwrap();
        assert_eq!(got.task.status(), TaskStatus::Working, "{got:?}");

        let pid = s.pid.expect("the server's pid");
        let killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        drop(s);

        let (db, dir) = (ledger.db(), ledger.dir.path().to_path_buf());
        let (a, b) = (q[0].to_string(), q[1].to_string());
        tokio::task::spawn_blocking(move || {
            for (id, answer) in [(a, "A blog"), (b, "Small")] {
                let mut cmd = bare_command(&dir);
                cmd.arg("--db")
                    .arg(&db)
                    .args(["answer", "--id", &id, "--answer", answer]);
                assert_eq!(finish(cmd).code, 0);
            }
        })
        .await
        .unwrap();

        let s = connect(&ledger, client).await;
        let got = s
            .service
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .unwrap();
        let wire = serde_json::to_value(&got).unwrap();
        assert_eq!(wire["status"], "completed", "{wire}");
        let doc = &wire["result"]["structuredContent"];
        assert_valid(
            &s.output_schemas["wait_for_answers"],
            doc,
            "the task's result",
        );
        assert_eq!(doc["settled"], true, "{doc}");
        assert_eq!(doc["outcomes"][q[0].to_string()]["answer"], "A blog");
        assert_eq!(doc["outcomes"][q[1].to_string()]["answer"], "Small");
        // The very document the tool returns when it answers at once, key for key.
        let direct = s
            .ok(
                "wait_for_answers",
                json!({"ids": q.clone(), "timeout_seconds": 0}),
            )
            .await;
        assert_eq!(doc.to_string(), direct.to_string(), "{era:?}");

        // ask_questions with a wait is a task too, whose result is ask_questions' own.
        let started = s
            .service
            .call_tool_once(params(
                "ask_questions",
                json!({"stage": "later", "questions": [{"question": "Name?"}], "wait_seconds": 3600}),
            ))
            .await
            .unwrap();
        let CallToolResponse::Task(created) = started else {
            panic!("{era:?}: {started:?}");
        };
        let (db, dir) = (ledger.db(), ledger.dir.path().to_path_buf());
        tokio::task::spawn_blocking(move || {
            let mut cmd = bare_command(&dir);
            cmd.arg("--db")
                .arg(&db)
                .args(["answer", "--id", "3", "--answer", "ledger"]);
            assert_eq!(finish(cmd).code, 0);
        })
        .await
        .unwrap();
        let got = s
            .service
            .peer()
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await
            .unwrap();
        let wire = serde_json::to_value(&got).unwrap();
        let doc = &wire["result"]["structuredContent"];
        assert_valid(&s.output_schemas["ask_questions"], doc, "the task's result");
        assert_enveloped("ask_questions", doc);
        assert_eq!(doc["created_ids"], json!([3]), "{wire}");
        assert_eq!(doc["outcomes"]["3"]["answer"], "ledger", "{wire}");

        // An unknown task is an error, and the server goes on serving.
        let unknown = s
            .service
            .peer()
            .get_task(GetTaskParams::new("no-such-task"))
            .await;
        assert!(unknown.is_err(), "{unknown:?}");
        s.ok("list_questions", json!({})).await;
        s.service.cancel().await.unwrap();
    });
}

/// With `--inbox-url` naming a running `questions serve`, a client that opens URLs sends
/// the person to the question's page in the inbox instead of showing a form; what they
/// answer there is recorded by the inbox (channel web), and the tool's wait sees it. (It
/// starts that inbox: a build with `serve` too.)
#[cfg(feature = "serve")]
#[test]
fn a_client_that_opens_urls_sends_the_person_to_the_inbox() {
    for era in ERAS {
        inbox_in(era);
    }
}

#[cfg(feature = "serve")]
fn inbox_in(era: Era) {
    let ledger = Ledger::new();
    let served = Arc::new(crate::serve::Served::start(&ledger, &["--user", "alice"]));
    let inbox = served.url.clone();
    run(async {
        let at_inbox = Arc::clone(&served);
        let client = Client {
            inbox_person: Some(Arc::new(move |url: &str| {
                // The person opens the page and answers there.
                let id: i64 = url.rsplit_once("#q-").unwrap().1.parse().unwrap();
                let (status, done) = at_inbox.api(
                    "POST",
                    &format!("/api/questions/{id}/answer"),
                    Some(json!({"answer": "Read it all: go with SQLite"})),
                );
                assert_eq!(status, 200, "{done}");
                ElicitationAction::Accept
            })),
            server_args: vec!["--inbox-url".into(), inbox.clone()],
            // It shows forms too: the inbox is preferred.
            ..Client::with_person("url-client", |_| panic!("a form instead of the inbox"))
        }
        .in_era(era);
        let s = connect(&ledger, client).await;
        let asked = s
            .ok(
                "ask_questions",
                json!({"stage": "design", "questions": [{"question": "Which database?",
                       "context": "A long story, with code."}], "wait_seconds": 5}),
            )
            .await;
        assert_eq!(asked["elicitation"], "sent_to_inbox", "{era:?}: {asked}");
        assert_eq!(asked["outcomes"]["1"]["status"], "answered", "{asked}");
        let urls = s.client.urls.lock().unwrap().clone();
        assert_eq!(urls, vec![format!("{inbox}#q-1")]);
        s.service.cancel().await.unwrap();
    });
    let q = ledger.question(1);
    assert_eq!(q["channel"], "web");
    assert_eq!(q["answered_by"], "alice");
}

/// The inbox inside the chat (MCP Apps): `open_inbox` names a `ui://` resource, which is
/// the inbox's page made whole (style and the app's script inlined, nothing fetched from a
/// server), and what the person does in it comes back through `answer_in_app`, hidden from
/// the model, recorded with channel `mcp-app` and refused when the page is stale.
#[test]
fn the_inbox_inside_the_chat_is_a_ui_resource_answered_through_a_tool() {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents};
    let ledger = Ledger::new();
    let id = ledger.log_with(
        "design",
        "Which database?",
        &["--option", "PostgreSQL", "--option", "SQLite"],
    );
    let other = ledger.log("design", "Project name?");
    run(async {
        let s = connect(&ledger, Client::new("app-host").with_apps()).await;
        let tools = s.service.list_all_tools().await.unwrap();
        let meta = |name: &str| {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            serde_json::to_value(&tool.meta).unwrap()
        };
        assert_eq!(
            meta("open_inbox")["ui"]["resourceUri"],
            "ui://questions/inbox"
        );
        assert_eq!(meta("answer_in_app")["ui"]["visibility"], json!(["app"]));

        let resources = s.service.list_all_resources().await.unwrap();
        assert_eq!(resources.len(), 1);
        assert_eq!(resources[0].uri, "ui://questions/inbox");
        assert_eq!(
            resources[0].mime_type.as_deref(),
            Some("text/html;profile=mcp-app")
        );
        let shown = s.ok("open_inbox", json!({})).await;
        assert_eq!(shown["pending_count"], 2);

        let read = s
            .service
            .read_resource(ReadResourceRequestParams::new("ui://questions/inbox"))
            .await
            .unwrap();
        let ResourceContents::TextResourceContents {
            text, mime_type, ..
        } = &read.contents[0]
        else {
            panic!("{read:?}");
        };
        assert_eq!(mime_type.as_deref(), Some("text/html;profile=mcp-app"));
        assert!(text.contains("Which database?") && text.contains("Project name?"));
        assert!(text.contains("<style>") && text.contains("ui/initialize"));
        assert!(!text.contains("/assets/"), "the app fetches nothing");
        // The fingerprint the page's form sends back with the answer.
        let at = text.find(&format!("id=\"q-{id}\"")).unwrap();
        let from = text[at..].find("name=\"fingerprint\" value=\"").unwrap() + at + 26;
        let fingerprint = text[from..from + text[from..].find('"').unwrap()].to_string();

        let done = s
            .ok(
                "answer_in_app",
                json!({"id": id, "action": "answer", "select": ["SQLite"], "fingerprint": fingerprint}),
            )
            .await;
        assert_eq!(done["status"], "answered", "{done}");
        assert_eq!(done["channel"], "mcp-app");
        // A page showing another question under that id is refused.
        let stale = s
            .fails(
                "answer_in_app",
                json!({"id": other, "action": "answer", "answer": "ledger", "fingerprint": "0000"}),
            )
            .await;
        assert_eq!(stale["error_code"], "conflict", "{stale}");
        let declined = s
            .fails("answer_in_app", json!({"id": other, "action": "decline"}))
            .await;
        // The model's refusal, with the code it has on every front end.
        assert_eq!(declined["error_code"], "invalid_answer", "{declined}");
        s.service.cancel().await.unwrap();
    });
    let q = ledger.question(id);
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(q["channel"], "mcp-app");
    assert_eq!(q["answered_by"], "mcp:app-host");
    assert_eq!(ledger.question(other)["status"], "pending");
}

/// A host that does not show MCP Apps also ignores a tool's `visibility` and hands every
/// tool to the model: such a client is not offered the in-chat inbox's tools, and a call
/// of them anyway records nothing (the model cannot make "a person's click").
#[test]
fn a_client_without_mcp_apps_is_neither_offered_nor_answered_the_in_chat_inbox_tools() {
    let ledger = Ledger::new();
    let id = ledger.log("design", "Project name?");
    run(async {
        let s = connect(&ledger, Client::new("headless-host")).await;
        let tools = s.service.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert!(names.contains(&"ask_questions"), "{names:?}");
        for app_only in ["open_inbox", "answer_in_app"] {
            assert!(!names.contains(&app_only), "{app_only} offered: {names:?}");
        }
        let made_up = s
            .fails(
                "answer_in_app",
                json!({"id": id, "action": "answer", "answer": "orders"}),
            )
            .await;
        assert_eq!(made_up["error_code"], "forbidden", "{made_up}");
        assert!(
            made_up["error"].as_str().unwrap().contains("MCP Apps"),
            "{made_up}"
        );
        let shown = s.fails("open_inbox", json!({})).await;
        assert_eq!(shown["error_code"], "forbidden", "{shown}");
        s.service.cancel().await.unwrap();
    });
    assert_eq!(ledger.question(id)["status"], "pending");
    assert!(ledger.question(id)["channel"].is_null());
}

/// Chromium's: skipped with the browser tests where it is not installed (and in a build
/// without `serve`, whose browser harness they share).
#[cfg(feature = "serve")]
mod browser {
    use super::*;

    /// The in-chat inbox in a real host: headless Chromium runs the MCP Apps extension's own
    /// host library (AppBridge, from npm), which shows the app's resource in a sandboxed frame;
    /// its tool calls are relayed to `questions mcp` by this client. A click in the frame
    /// records the answer, with channel `mcp-app`, within a second.
    #[test]
    fn a_click_in_the_app_s_frame_records_the_answer() {
        use fantoccini::Locator;
        use rmcp::model::{ReadResourceRequestParams, ResourceContents};
        let Some(bundle) =
            crate::mcp_clients::client(crate::mcp_clients::clients().join("apps-host.bundle.js"))
        else {
            return;
        };
        if !crate::browser::chromium_here() {
            return;
        }
        let ledger = Ledger::new();
        let id = ledger.log_with(
            "design",
            "Which database?",
            &["--option", "PostgreSQL", "--option", "SQLite"],
        );
        let host = ledger.dir.path().join("host.html");
        std::fs::write(
            &host,
            format!(
                "<!doctype html><html><body><script>{}</script></body></html>",
                std::fs::read_to_string(bundle).unwrap()
            ),
        )
        .unwrap();
        let l = &ledger;
        crate::browser::with_browser(true, |c| async move {
            let s = connect(l, Client::new("apps-host").with_apps()).await;
            let read = s
                .service
                .read_resource(ReadResourceRequestParams::new("ui://questions/inbox"))
                .await
                .unwrap();
            let ResourceContents::TextResourceContents { text: html, .. } = &read.contents[0]
            else {
                panic!("{read:?}");
            };
            c.goto(&format!("file://{}", host.display())).await.unwrap();
            c.execute(
                "window.startHost(arguments[0]); return true;",
                vec![json!(html)],
            )
            .await
            .unwrap();
            crate::browser::eventually(Duration::from_secs(10), "the app initializes", || async {
                c.execute("return window.hostReady === true;", vec![])
                    .await
                    .unwrap()
                    == json!(true)
            })
            .await;

            // The person opens the question, picks SQLite and clicks Answer, in the frame.
            c.enter_frame(0).await.unwrap();
            c.execute(
                "document.getElementById(arguments[0]).open = true; return true;",
                vec![json!(format!("q-{id}"))],
            )
            .await
            .unwrap();
            c.find(Locator::Css(&format!("label[for='q{id}o1']")))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            c.find(Locator::Css(&format!("#q-{id} form.answer button.primary")))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            let clicked = Instant::now();
            c.enter_parent_frame().await.unwrap();

            // The host hands each tool call to the client, which makes it on the server.
            let mut relayed = 0;
            let recorded = loop {
                let calls = c
                    .execute(
                        "return window.toolCalls.map(function (t) { return {name: t.name, arguments: t.arguments}; });",
                        vec![],
                    )
                    .await
                    .unwrap();
                let calls = calls.as_array().unwrap().clone();
                for (n, call) in calls.iter().enumerate().skip(relayed) {
                    assert_eq!(call["name"], "answer_in_app", "{call}");
                    let result = s
                        .call(call["name"].as_str().unwrap(), call["arguments"].clone())
                        .await;
                    let result = serde_json::to_value(&result).unwrap();
                    c.execute(
                        "window.toolCalls[arguments[0]].resolve(arguments[1]); return true;",
                        vec![json!(n), result],
                    )
                    .await
                    .unwrap();
                    relayed = n + 1;
                }
                let answered = s
                    .ok(
                        "wait_for_answers",
                        json!({"ids": [id], "timeout_seconds": 0}),
                    )
                    .await;
                if answered["settled"] == true {
                    break clicked.elapsed();
                }
                assert!(
                    clicked.elapsed() < Duration::from_secs(10),
                    "never recorded"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            eprintln!("the click was recorded after {recorded:?}");
            assert!(
                recorded < Duration::from_millis(1500),
                "recorded after {recorded:?}"
            );
            assert_eq!(relayed, 1);
            // The frame says so.
            c.enter_frame(0).await.unwrap();
            crate::browser::eventually(Duration::from_secs(5), "the frame shows it", || async {
                crate::browser::present(&c, &format!("#q-{id}.settled")).await
            })
            .await;
            c.enter_parent_frame().await.unwrap();
            s.service.cancel().await.unwrap();
        });
        let q = ledger.question(id);
        assert_eq!(q["answer"], "SQLite", "{q}");
        assert_eq!(q["channel"], "mcp-app");
        assert_eq!(q["answered_by"], "mcp:apps-host");
    }
}

#[test]
fn an_agent_logs_an_urgent_question_and_only_that_one_is_urgent() {
    let ledger = Ledger::new();
    run(async {
        let s = connect(&ledger, Client::new("test-client")).await;
        let asked = s
            .ok(
                "ask_questions",
                json!({"stage": "ops", "questions": [
                    {"question": "Prod is down: roll back?", "urgent": true},
                    {"question": "Changelog wording?"}
                ]}),
            )
            .await;
        let q = id_list(&asked["question_ids"]);
        assert_eq!(q.len(), 2);
        assert_eq!(ledger.question(q[0])["urgent"], true);
        assert!(ledger.question(q[1]).get("urgent").is_none());
    });
}
