//! The tools: their inputs and outputs (with JSON Schemas), and how each one maps to the
//! operations. A file per tool (its input, its result, its router); here the server, the
//! router that joins theirs, and what they share: the envelope, the schemas, the readers
//! of arguments, and the waits and tasks of `ask_questions` and `wait_for_answers`.

mod answer_in_app;
mod ask_questions;
mod check_gate;
mod get_answers;
mod list_questions;
mod open_inbox;
mod record_answers;
mod vote;
mod wait_for_answers;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    DetailedTask, GetTaskParams, GetTaskResult, Implementation, JsonObject, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, ErrorData as McpError, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::inbox::Inbox;
use super::rounds::Rounds;
use super::tasks;
use super::{blocking, MOST_WAIT};
use questions_core::clock;
use questions_core::error::{Error, Result};
use questions_core::model::{Channel, Question, Status, Vocabulary};
use questions_core::ops::{self, Caller, Location, Principal, Procedure, Reply, Request};

/// The tools that record a person's answers or votes: not listed to an agent token's
/// session.
const ANSWERING: [&str; 2] = ["vote", "record_answers"];

#[derive(Clone)]
pub(crate) struct Server {
    location: Location,
    tool_router: ToolRouter<Server>,
    /// The user this server was configured with (`--by`, `QUESTIONS_USER`, else the
    /// operating-system user): who asks for the approvals it logs, and whose votes it
    /// casts unless `votes` is false (`mcp --no-votes`).
    user: Option<String>,
    votes: bool,
    /// The forms of stateless sessions: their sealed request states.
    rounds: Rounds,
    /// A running inbox to send the person to (URL-mode elicitation).
    inbox: Inbox,
    /// Served over HTTP (`serve`'s `/mcp`): every call acts for the token its request
    /// carried, and a call that carries none is refused.
    remote: bool,
}

/// What `serve` puts in a request beside its token's holder: called once for each tool
/// call the door refused the holder (`forbidden`), so that a token refused too often is
/// cut off as on the ledger's API, and cannot fill the history.
#[cfg(feature = "serve")]
#[derive(Clone)]
pub(crate) struct Refused(pub(crate) Arc<dyn Fn() + Send + Sync>);

/// A tool's arguments, read by us rather than by the SDK: arguments that do not fit are
/// a tool error carrying the contract's failure document (the SDK would answer with a
/// protocol error), and the schema the client sees is `T`'s.
pub(super) struct Input<T>(std::result::Result<T, String>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Input<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(Input(
            serde_json::from_value(value).map_err(|e| e.to_string()),
        ))
    }
}

impl<T: JsonSchema> JsonSchema for Input<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

impl<T> Input<T> {
    fn read(self) -> Result<T> {
        self.0.map_err(|e| {
            Error::usage(format!(
                "the tool's arguments do not fit its input schema: {e}"
            ))
        })
    }
}

/// A value of one of the core's vocabularies, by its name: the names it takes, its
/// schema's `enum` and its error are the core's (`Vocabulary`), not listed again here.
#[derive(Debug, Clone, Copy)]
pub(super) struct Named<T>(T);

impl<'de, T: Vocabulary> Deserialize<'de> for Named<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        T::parse(&name)
            .map(Named)
            .ok_or_else(|| serde::de::Error::custom(T::not_one(&name)))
    }
}

impl<T: Vocabulary> JsonSchema for Named<T> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(T::WHAT)
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "enum": T::names() })
    }
}

/// Where a question stands, for an agent to branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum State {
    Answered,
    Skipped,
    Declined,
    /// Its time ran out: still pending (kept), or settled by the expiry rule, not a person.
    Expired,
    Pending,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Outcome {
    status: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    selected: Vec<String>,
    /// Why it was skipped or declined.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl Outcome {
    fn of(q: &Question, now: &str) -> Outcome {
        let expired = q.state.channel == Some(Channel::Expiry) || q.is_expired(now);
        let status = match q.state.status {
            _ if expired => State::Expired,
            Status::Answered => State::Answered,
            Status::Skipped => State::Skipped,
            Status::Declined => State::Declined,
            Status::Pending => State::Pending,
        };
        Outcome {
            status,
            answer: q.state.answer.clone(),
            selected: q.state.selected.clone(),
            reason: q
                .state
                .skip_reason
                .clone()
                .or_else(|| q.state.decline_reason.clone()),
        }
    }
}

/// By question id.
type Outcomes = BTreeMap<String, Outcome>;

fn outcomes(questions: &[Question]) -> Outcomes {
    let now = clock::now();
    questions
        .iter()
        .map(|q| (q.id.to_string(), Outcome::of(q, &now)))
        .collect()
}

/// The contract's failure document as a tool error; the message goes to stderr too.
/// A tool's failure. Its `procedure` is the one its success would name: the command whose
/// document a tool returns (`check`, `list`, `answers`, `import`), else the tool's own name
/// (`ask_questions`, `wait_for_answers`), so one call never names two procedures.
fn failure(procedure: Procedure, err: &Error) -> CallToolResult {
    // The log names the tool that was called, which the person reading it knows.
    let tool = match procedure {
        Procedure::Check => "check_gate",
        Procedure::List => "list_questions",
        Procedure::Answers => "get_answers",
        Procedure::Import => "record_answers",
        other => other.as_str(),
    };
    crate::output::note(&format!("{tool}: error: {}", err.message));
    let body = ops::failure(Some(procedure), err);
    CallToolResult::structured_error(serde_json::to_value(body).unwrap_or(Value::Null))
}

/// A result in the contract's envelope (see `ops::document`), as a JSON value: the
/// structured content of a tool's success, and the template a task completes from.
fn enveloped(ok: bool, procedure: Procedure, result: &impl Serialize) -> Result<Value> {
    match serde_json::to_value(ops::document(ok, procedure, result)) {
        Ok(body @ Value::Object(_)) => Ok(body),
        Ok(other) => Err(Error::db(format!("not a document: {other}"))),
        Err(e) => Err(Error::db(e.to_string())),
    }
}

/// A tool's result in the contract's envelope.
fn document(ok: bool, procedure: Procedure, result: &impl Serialize) -> Result<CallToolResult> {
    enveloped(ok, procedure, result).map(CallToolResult::structured)
}

/// The success of a tool that may also answer with a task or an "input required" result:
/// complete, in the envelope, `ok` true.
fn complete(procedure: Procedure, result: &impl Serialize) -> Result<CallToolResponse> {
    document(true, procedure, result).map(CallToolResponse::Complete)
}

/// The output schema of a tool whose result is a type of its own: `T`'s, in the envelope
/// (`ok` and `procedure` first and required), as the command schemas in schema/ have them.
fn enveloped_schema<T: JsonSchema + std::any::Any>(procedure: Procedure) -> Arc<JsonObject> {
    let own = schema_for_output::<T>();
    let mut schema = JsonObject::new();
    for (key, value) in own.iter() {
        let value = match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => {
                let mut all = JsonObject::new();
                all.insert("ok".into(), json!({"const": true}));
                all.insert("procedure".into(), json!({"const": procedure.as_str()}));
                all.extend(properties.clone());
                Value::Object(all)
            }
            ("required", Value::Array(required)) => {
                let mut all = vec![json!("ok"), json!("procedure")];
                all.extend(required.iter().cloned());
                Value::Array(all)
            }
            _ => value.clone(),
        };
        schema.insert(key.clone(), value);
    }
    Arc::new(schema)
}

/// A schema without the `format`s schemars gives Rust's number types (`uint32`, `int64`,
/// `double`, …): JSON Schema defines none of them, and hosts that check formats warn of
/// each one in every run (Gemini CLI did, 40 times a headless run). The type and its
/// `minimum` say what a client needs to know.
fn plain_numbers(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                let numeric = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                    matches!(
                        f,
                        "int8"
                            | "int16"
                            | "int32"
                            | "int64"
                            | "uint"
                            | "uint8"
                            | "uint16"
                            | "uint32"
                            | "uint64"
                            | "int"
                            | "float"
                            | "double"
                    )
                });
                if numeric {
                    map.remove("format");
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = Value::Object((**schema).clone());
    strip(&mut value);
    match value {
        Value::Object(map) => Arc::new(map),
        _ => schema.clone(),
    }
}

/// The output schema of a tool that returns a command's document: the command's own
/// schema in schema/, with the question schema it refers to put in place.
fn command_schema(name: &str) -> Arc<JsonObject> {
    let text = match name {
        "check" => include_str!("../../../schema/check.json"),
        "list" => include_str!("../../../schema/list.json"),
        "answers" => include_str!("../../../schema/answers.json"),
        "import" => include_str!("../../../schema/import.json"),
        "vote" => include_str!("../../../schema/vote.json"),
        _ => unreachable!("no schema named {name}"),
    };
    let question: Value =
        serde_json::from_str(include_str!("../../../schema/question.json")).expect("question.json");
    let mut schema: Value = serde_json::from_str(text).expect("a command schema");
    inline_refs(&mut schema, &question);
    match schema {
        Value::Object(mut object) => {
            object.remove("$schema");
            object.remove("title");
            Arc::new(object)
        }
        _ => unreachable!("a command schema is an object"),
    }
}

/// A tool's output schema that also admits the failure document: a failed call's
/// structured content is that document (contract §2), and clients built on the
/// TypeScript SDK check structured content against the output schema even on a tool
/// error, where a schema of successes alone would replace the message with theirs.
fn or_failure(success: &JsonObject) -> Arc<JsonObject> {
    let mut success = success.clone();
    // References are to the root's definitions: they stay at the root.
    let defs = success.remove("$defs");
    success.remove("$schema");
    let mut failure: Value =
        serde_json::from_str(include_str!("../../../schema/error.json")).expect("error.json");
    let question: Value =
        serde_json::from_str(include_str!("../../../schema/question.json")).expect("question.json");
    inline_refs(&mut failure, &question);
    let Value::Object(mut failure) = failure else {
        unreachable!("error.json is an object")
    };
    failure.remove("$schema");
    failure.remove("title");
    let mut both = JsonObject::new();
    both.insert("type".into(), Value::String("object".into()));
    both.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(success), Value::Object(failure)]),
    );
    if let Some(defs) = defs {
        both.insert("$defs".into(), defs);
    }
    Arc::new(both)
}

fn inline_refs(value: &mut Value, question: &Value) {
    match value {
        Value::Object(object) => {
            if object.get("$ref").and_then(Value::as_str) == Some("question.json") {
                let mut inlined = question.clone();
                if let Value::Object(q) = &mut inlined {
                    q.remove("$schema");
                    q.remove("$id");
                }
                *value = inlined;
                return;
            }
            for v in object.values_mut() {
                inline_refs(v, question);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| inline_refs(v, question)),
        _ => {}
    }
}

/// A list of ids, or that list written as text (JSON, or ids separated by commas), as
/// clients that send every argument as a string do.
fn ids_or_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Vec<i64>>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(t)) => {
            let t = t.trim();
            let list = t
                .strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .unwrap_or(t);
            questions_core::model::parse_ids(list)
                .map(Some)
                .or_else(|_| {
                    if list.trim().is_empty() {
                        Ok(Some(Vec::new()))
                    } else {
                        Err(format!("\"{t}\" is not a list of ids"))
                    }
                })
                .map_err(serde::de::Error::custom)
        }
        // One id, as a client that reads "7" as a number sends it.
        Some(Value::Number(n)) => n
            .as_i64()
            .map(|id| Some(vec![id]))
            .ok_or_else(|| serde::de::Error::custom(format!("{n} is not an id"))),
        Some(other) => serde_json::from_value(other)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// A number, or a number written as text (some clients send every argument they cannot
/// type as a string); null is absent.
fn number_or_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<f64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(t)) if t.trim().is_empty() => Ok(None),
        Some(Value::String(t)) => t
            .trim()
            .parse::<f64>()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("\"{t}\" is not a number"))),
        Some(other) => Err(serde::de::Error::custom(format!("{other} is not a number"))),
    }
}

fn seconds(value: Option<f64>, default: Duration, name: &str) -> Result<Duration> {
    match value {
        None => Ok(default),
        // Longer waits are capped; beyond a year the number is a mistake, not a wait.
        Some(s) if s.is_finite() && (0.0..=31_536_000.0).contains(&s) => {
            Ok(Duration::from_secs_f64(s.min(MOST_WAIT.as_secs_f64())))
        }
        Some(s) => Err(Error::usage(format!(
            "{name} must be a number of seconds, 0 or more (at most 50 are waited); got {s}"
        ))),
    }
}

fn non_blank(text: &str, what: &str) -> Result<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(Error::usage(format!("{what} is empty: give it a text")));
    }
    Ok(trimmed.to_string())
}

/// The client's name, from the session's handshake or, on a stateless session, from the
/// request's own metadata.
fn client_name(context: &RequestContext<RoleServer>) -> String {
    context
        .client_info()
        .map(|info| info.name.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "client".to_string())
}

/// The person behind the client: `mcp:<client name>`.
fn caller(context: &RequestContext<RoleServer>) -> Caller {
    Caller {
        by: Some(format!("mcp:{}", client_name(context))),
        channel: Channel::Mcp,
    }
}

/// Whether the client declares the Tasks extension on a 2026-07-28 session: a wait then
/// outlives the call. A task is a result of that revision (`resultType`); a client of an
/// earlier one that declares the extension anyway (the TypeScript SDK does, and then reads
/// only the older revision's tasks) gets the tool's own result, as every other client.
fn takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
        && context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// When a task's wait ends: after the seconds asked for, uncapped (a task outlives a
/// call), else never.
fn task_deadline(value: Option<f64>) -> Result<Option<String>> {
    match value {
        None => Ok(None),
        Some(s) if s.is_finite() && (0.0..=31_536_000.0).contains(&s) => Ok(Some(clock::after(
            &clock::now(),
            Duration::from_secs_f64(s),
        ))),
        Some(s) => Err(Error::usage(format!(
            "a number of seconds, 0 or more, is needed; got {s}"
        ))),
    }
}

fn unknown_task(id: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "no task '{id}' in this ledger: it was never started here, or the ledger was reset"
        ),
        None,
    )
}

impl Server {
    /// The user this server acts for, and whether it casts that user's votes.
    pub(super) fn with_user(mut self, user: Option<String>, votes: bool) -> Server {
        self.user = user;
        self.votes = votes;
        self
    }

    /// The inbox a client that opens URLs sends the person to.
    pub(super) fn with_inbox(mut self, inbox: Inbox) -> Server {
        self.inbox = inbox;
        self
    }

    pub(super) fn new(location: Location) -> Result<Server> {
        let mut tool_router = Self::ask_questions_router()
            + Self::wait_for_answers_router()
            + Self::check_gate_router()
            + Self::list_questions_router()
            + Self::get_answers_router()
            + Self::record_answers_router()
            + Self::vote_router()
            + Self::open_inbox_router()
            + Self::answer_in_app_router();
        super::app::mark_tools(&mut tool_router);
        for route in tool_router.map.values_mut() {
            if let Some(schema) = &route.attr.output_schema {
                route.attr.output_schema = Some(plain_numbers(&or_failure(schema)));
            }
            route.attr.input_schema = plain_numbers(&route.attr.input_schema);
        }
        Ok(Server {
            location,
            tool_router,
            user: None,
            votes: false,
            rounds: Rounds::new()?,
            inbox: Inbox::default(),
            remote: false,
        })
    }

    /// A server whose calls act for the token each HTTP request carried (see `principal`).
    #[cfg(feature = "serve")]
    pub(super) fn remote(mut self) -> Server {
        self.remote = true;
        self
    }

    /// Who a call acts for: over HTTP, the holder of the token its request carried (the
    /// route authenticated it and put it in the request); on stdio, the client, with
    /// direct access to the ledger as `mcp:<client name>`.
    pub(super) fn principal(&self, context: &RequestContext<RoleServer>) -> Result<Principal> {
        #[cfg(feature = "serve")]
        if let Some(who) = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
        {
            return Ok(who.clone());
        }
        if self.remote {
            return Err(Error::new(
                questions_core::error::ErrorCode::Unauthorized,
                ops::UNAUTHORIZED,
            ));
        }
        Ok(Principal::Direct(caller(context)))
    }

    /// Refuses an agent token's session the in-chat inbox, which shows every stage's
    /// questions for a person to answer.
    pub(super) fn person_only(&self, context: &RequestContext<RoleServer>) -> Result<()> {
        if self.principal(context)?.answers() {
            return Ok(());
        }
        Err(Error::new(
            questions_core::error::ErrorCode::Forbidden,
            "an agent token's session has no inbox: a person answers in theirs",
        ))
    }

    /// Sends `req` through the door as `who` (see `ops::call`).
    pub(super) async fn call(&self, who: Principal, req: Request) -> Result<Reply> {
        blocking(self.location.clone(), move |ledger| {
            ops::call(ledger, &who, req)
        })
        .await
    }
}

/// A reply of another kind than its request's: never, since the door answers each request
/// with its own.
fn unexpected(reply: &Reply) -> Error {
    Error::db(format!("internal error: an unexpected reply {reply:?}"))
}

impl Server {
    /// The named questions as they stand; a stage that holds none is not found.
    async fn named(
        &self,
        who: Principal,
        stage: Option<String>,
        ids: Option<Vec<i64>>,
    ) -> Result<Vec<Question>> {
        let shown = stage.clone().unwrap_or_default();
        let reply = self.call(who, Request::Named { stage, ids }).await?;
        let Reply::Named(found) = reply else {
            return Err(unexpected(&reply));
        };
        if found.questions.is_empty() {
            return Err(Error::not_found(format!(
                "stage '{shown}' holds no question to wait for; ask_questions logs them"
            )));
        }
        Ok(found.questions)
    }

    async fn start_task(&self, new: ops::NewTask) -> Result<CallToolResponse> {
        let stored = blocking(self.location.clone(), move |ledger| {
            ops::start_task(ledger, new)
        })
        .await?;
        Ok(CallToolResponse::Task(CreateTaskResult::new(
            tasks::task_of(&stored),
        )))
    }

    /// A task as it stands, as `tasks/get` reports it; an unknown id is invalid params.
    async fn look_task(&self, id: String) -> std::result::Result<DetailedTask, McpError> {
        let lookup = id.clone();
        let stored = blocking(self.location.clone(), move |ledger| {
            ops::look_task(ledger, &lookup, |end| {
                tasks::result(end, |questions| {
                    serde_json::to_value(outcomes(questions)).unwrap_or_default()
                })
            })
        })
        .await
        .map_err(|e| McpError::internal_error(e.message, None))?
        .ok_or_else(|| unknown_task(&id))?;
        tasks::detailed(&stored).map_err(|e| McpError::internal_error(e.message, None))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    /// The tool's own call, and over HTTP, a refusal told to `serve` (see `Refused`).
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        #[cfg(feature = "serve")]
        let refused = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Refused>())
            .cloned();
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let response = self.tool_router.call(call).await?;
        #[cfg(feature = "serve")]
        if let (Some(refused), CallToolResponse::Complete(result)) = (refused, &response) {
            let code = result
                .structured_content
                .as_ref()
                .and_then(|body| body.get("error_code"))
                .and_then(Value::as_str);
            if result.is_error == Some(true) && code == Some("forbidden") {
                (refused.0)();
            }
        }
        Ok(response)
    }

    /// Every tool, but the in-chat inbox's for a client that shows no apps (`app::TOOLS`).
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, McpError> {
        let who = self
            .principal(&context)
            .map_err(|e| McpError::invalid_request(e.message, None))?;
        // An agent token's session is never offered a person's acts (the door refuses
        // them if called by name).
        let answers = who.answers();
        let apps = super::app::shown_by(&context) && answers;
        let tools = self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|t| apps || !super::app::TOOLS.contains(&t.name.as_ref()))
            .filter(|t| answers || !ANSWERING.contains(&t.name.as_ref()))
            .collect();
        let cache_hints = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let mut listed = ListToolsResult::with_all_items(tools);
        listed.result_type = Some(rmcp::model::ResultType::COMPLETE);
        listed.ttl_ms = cache_hints.then_some(0);
        // The list depends on what this client declares: no other client may reuse it.
        listed.cache_scope = cache_hints.then_some(rmcp::model::CacheScope::Private);
        Ok(listed)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.look_task(request.task_id).await?))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), McpError> {
        let id = request.task_id;
        let lookup = id.clone();
        blocking(self.location.clone(), move |ledger| {
            ops::cancel_task(ledger, &lookup)
        })
        .await
        .map_err(|e| McpError::internal_error(e.message, None))?
        .ok_or_else(|| unknown_task(&id))?;
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            super::app::resource(),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, McpError> {
        self.person_only(&context)
            .map_err(|e| McpError::invalid_request(e.message, None))?;
        if request.uri != super::app::URI {
            return Err(McpError::resource_not_found(
                format!(
                    "no resource '{}': this server has {}",
                    request.uri,
                    super::app::URI
                ),
                None,
            ));
        }
        let html = blocking(self.location.clone(), crate::page::app::page)
            .await
            .map_err(|e| McpError::internal_error(e.message, None))?;
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![super::app::contents(html)],
        )))
    }

    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_tasks()
            .build();
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(super::app::EXTENSION_ID.to_string(), JsonObject::new());
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("questions", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "A durable ledger of the questions that need a person's answer. Log them with ask_questions (stage + questions), then wait_for_answers or check_gate before going on; get_answers returns what the person said. Nothing is lost if a call times out: call wait_for_answers again.",
            )
    }
}
