//! The tools: their inputs and outputs (with JSON Schemas), and how each one maps to the
//! operations.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{schema_for_output, InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult, DetailedTask,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, GetTaskParams,
    GetTaskResult, Implementation, InputRequest, InputRequiredResult, JsonObject,
    ListResourcesResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    tool, tool_handler, tool_router, ErrorData as McpError, Peer, RoleServer, ServerHandler,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::inbox::Inbox;
use super::rounds::Rounds;
use super::tasks;
use super::{blocking, form, MOST_WAIT};
use questions_core::clock;
use questions_core::error::{Error, Result};
use questions_core::formats::answers::ImportFormat;
use questions_core::model::{
    Channel, Draft, NewQuestion, Question, QuestionOption, Source, Status, Vocabulary,
};
use questions_core::ops::{self, Caller, CheckRequest, Procedure, Wait};
use questions_core::ops::{Filter, Location};

/// The key of the form among an "input required" result's requests (and of the person's
/// reply among the client's responses).
const FORM_KEY: &str = "form";

/// How often a wait tells the client it is still waiting, when nothing changes.
const HEARTBEAT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct Server {
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
}

/// A tool's arguments, read by us rather than by the SDK: arguments that do not fit are
/// a tool error carrying the contract's failure document (the SDK would answer with a
/// protocol error), and the schema the client sees is `T`'s.
pub struct Input<T>(std::result::Result<T, String>);

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

/// One question to log, as `log` takes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewItem {
    /// The question text.
    question: String,
    /// A short label (ask tools show at most 12 characters).
    header: Option<String>,
    /// The question's group, e.g. the artifact section it fills; `get_answers` keys by it.
    group: Option<String>,
    /// Background the person needs to answer.
    context: Option<String>,
    /// Options to choose from: labels, or {label, description?, recommended?}.
    /// A label ending in " (Recommended)" marks it recommended.
    options: Option<Vec<OptionItem>>,
    /// The person may choose several options.
    multi_select: Option<bool>,
    /// Free text is a valid answer besides the options (default true).
    allow_freeform: Option<bool>,
    /// The agent's best guess, offered to the person as the default.
    proposed: Option<String>,
    /// Whether the stage's gate waits for it (default true).
    required: Option<bool>,
    /// Makes it an approval: only these people may answer it, by voting.
    approval: Option<ApprovalItem>,
}

/// An approval's policy, as `log --approval` takes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalItem {
    /// Who may approve: names, and groups as "group:NAME".
    approvers: Vec<String>,
    /// How many distinct approvers must approve.
    min: u32,
    /// Who asked for it, who may never vote on it (default: this server's user).
    requester: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OptionItem {
    Label(String),
    Full(FullOption),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FullOption {
    label: String,
    description: Option<String>,
    #[serde(default)]
    recommended: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskInput {
    /// The stage the questions belong to (its gate waits for the required ones).
    stage: String,
    questions: Vec<NewItem>,
    /// Wait up to this many seconds (at most 50) for the answers before returning.
    #[serde(default, deserialize_with = "number_or_text")]
    #[schemars(with = "f64")]
    wait_seconds: Option<f64>,
    /// Put the pending questions to the person through the client's form (elicitation);
    /// default: true when the client supports it.
    elicit: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitInput {
    /// Wait for this stage's questions (narrowed to `ids` when both are given).
    stage: Option<String>,
    /// Wait for these questions.
    #[serde(default, deserialize_with = "ids_or_text")]
    #[schemars(with = "Vec<i64>")]
    ids: Option<Vec<i64>>,
    /// Return after this many seconds at most (capped at 50; default 50).
    #[serde(default, deserialize_with = "number_or_text")]
    #[schemars(with = "f64")]
    timeout_seconds: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckInput {
    /// The stage to gate.
    stage: String,
    /// Only these questions of the stage; an unknown id is not_found.
    #[serde(default, deserialize_with = "ids_or_text")]
    #[schemars(with = "Vec<i64>")]
    ids: Option<Vec<i64>>,
}

/// A value of one of the core's vocabularies, by its name: the names it takes, its
/// schema's `enum` and its error are the core's (`Vocabulary`), not listed again here.
#[derive(Debug, Clone, Copy)]
pub struct Named<T>(T);

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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInput {
    /// Only questions of this stage.
    stage: Option<String>,
    /// Only questions with this status.
    status: Option<Named<Status>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StageInput {
    /// The stage whose answers are returned.
    stage: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordInput {
    /// The stage the questions belong to.
    stage: String,
    /// By question id: the answer text, the chosen option labels, or
    /// {"skip": true, "reason": "…"}.
    answers: serde_json::Map<String, Value>,
}

/// Where a question stands, for an agent to branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Answered,
    Skipped,
    Declined,
    /// Its time ran out: still pending (kept), or settled by the expiry rule, not a person.
    Expired,
    Pending,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Outcome {
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
        let expired = q.channel == Some(Channel::Expiry) || q.is_expired(now);
        let status = match q.status {
            _ if expired => State::Expired,
            Status::Answered => State::Answered,
            Status::Skipped => State::Skipped,
            Status::Declined => State::Declined,
            Status::Pending => State::Pending,
        };
        Outcome {
            status,
            answer: q.answer.clone(),
            selected: q.selected.clone(),
            reason: q.skip_reason.clone().or_else(|| q.decline_reason.clone()),
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

/// What became of the form put to the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Elicited {
    /// The person filled in the form; their answers are recorded.
    Accepted,
    /// The person declined the form: the questions stay pending; ask another way.
    Declined,
    /// The person dismissed the form: the questions stay pending.
    Cancelled,
    /// The client cannot show forms (no elicitation capability).
    Unsupported,
    /// The client opened the questions' page in the inbox for the person (URL-mode
    /// elicitation): what they answer there is recorded by the inbox (channel `web`); the
    /// outcomes say what is answered by now.
    SentToInbox,
    /// `elicit: false`.
    NotRequested,
    /// No question was pending.
    NothingPending,
    /// The form could not be shown or its answers not recorded (see `elicitation_error`):
    /// the questions stay pending.
    Failed,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NotRecorded {
    question_id: i64,
    reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Asked {
    question_ids: Vec<i64>,
    created_ids: Vec<i64>,
    outcomes: Outcomes,
    elicitation: Elicited,
    #[serde(skip_serializing_if = "Option::is_none")]
    elicitation_error: Option<String>,
    /// Questions of an accepted form whose answer could not be recorded (someone answered
    /// them elsewhere while the form was open), and why; the others were recorded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_recorded: Vec<NotRecorded>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Waited {
    question_ids: Vec<i64>,
    /// Every named question has left `pending`.
    settled: bool,
    timed_out: bool,
    outcomes: Outcomes,
}

/// The contract's failure document as a tool error; the message goes to stderr too.
/// A tool's failure. Its `procedure` is the one its success would name: the command whose
/// document a tool returns (`check`, `list`, `answers`, `import`), else the tool's own name
/// (`ask_questions`, `wait_for_answers`), so one call never names two procedures.
fn failure(procedure: Procedure, err: &Error) -> CallToolResult {
    crate::output::note(&format!("{}: error: {}", procedure.as_str(), err.message));
    let body = ops::failure(Some(procedure), err);
    CallToolResult::structured_error(serde_json::to_value(body).unwrap_or(Value::Null))
}

/// A result in the contract's envelope (see `ops::document`).
fn document(ok: bool, procedure: Procedure, result: &impl Serialize) -> Result<CallToolResult> {
    match serde_json::to_value(ops::document(ok, procedure, result)) {
        Ok(body @ Value::Object(_)) => Ok(CallToolResult::structured(body)),
        Ok(other) => Err(Error::db(format!("not a document: {other}"))),
        Err(e) => Err(Error::db(e.to_string())),
    }
}

/// The output schema of a tool that returns a command's document: the command's own
/// schema in schema/, with the question schema it refers to put in place.
fn command_schema(name: &str) -> Arc<JsonObject> {
    let text = match name {
        "check" => include_str!("../../schema/check.json"),
        "list" => include_str!("../../schema/list.json"),
        "answers" => include_str!("../../schema/answers.json"),
        "import" => include_str!("../../schema/import.json"),
        "vote" => include_str!("../../schema/vote.json"),
        _ => unreachable!("no schema named {name}"),
    };
    let question: Value =
        serde_json::from_str(include_str!("../../schema/question.json")).expect("question.json");
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
        serde_json::from_str(include_str!("../../schema/error.json")).expect("error.json");
    let question: Value =
        serde_json::from_str(include_str!("../../schema/question.json")).expect("question.json");
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

/// A question of `ask_questions`, checked as `log` checks its flags.
/// `logger` is who logs it (this server's user, else the client): never a voter on an
/// approval it logs, whatever requester it names.
fn new_question(stage: &str, item: NewItem, at: usize, logger: &str) -> Result<NewQuestion> {
    let place = |e: Error| Error::new(e.code, format!("questions[{at}]: {}", e.message));
    let approval = match item.approval {
        None => None,
        Some(a) => Some(
            questions_core::model::Approval::new(
                &a.approvers,
                a.min,
                a.requester.as_deref(),
                logger,
            )
            .map_err(|why| place(Error::usage(why)))?,
        ),
    };
    let options = item
        .options
        .unwrap_or_default()
        .into_iter()
        .map(|o| match o {
            OptionItem::Label(label) => QuestionOption {
                label,
                description: None,
                recommended: false,
            },
            OptionItem::Full(FullOption {
                label,
                description,
                recommended,
            }) => QuestionOption {
                label,
                description,
                recommended,
            },
        })
        .collect();
    NewQuestion::build(Draft {
        stage: stage.to_string(),
        group: item.group,
        question: item.question,
        proposed: item.proposed,
        required: item.required.unwrap_or(true),
        header: item.header,
        context: item.context,
        options,
        multi_select: item.multi_select.unwrap_or(false),
        allow_freeform: item.allow_freeform.unwrap_or(true),
        source: Source::AskUser,
        approval,
    })
    .map_err(place)
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

/// Whether the client shows forms: an elicitation capability that names form mode, or
/// names no mode at all (as before modes were named).
fn shows_forms(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// What became of the person sent to the inbox.
fn inbox_outcome(action: &ElicitationAction) -> Elicited {
    match action {
        ElicitationAction::Accept => Elicited::SentToInbox,
        ElicitationAction::Decline => Elicited::Declined,
        _ => Elicited::Cancelled,
    }
}

/// Whether the client opens a URL for the person (URL-mode elicitation).
fn opens_urls(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.url.is_some())
}

/// Whether the client declares the Tasks extension: a wait then outlives the call.
fn takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
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

/// A session on revision 2026-07-28 or later: no server-to-client requests; a form goes
/// through the multi round-trip pattern.
fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Tells the client how far a wait has got, when it asked to be told.
struct Progress {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    told: Option<(usize, Instant)>,
}

impl Progress {
    fn new(context: &RequestContext<RoleServer>) -> Progress {
        Progress {
            peer: context.peer.clone(),
            token: context.meta.get_progress_token(),
            told: None,
        }
    }

    /// Sends when the count changed, or as a heartbeat.
    async fn tell(&mut self, settled: usize, total: usize) {
        let Some(token) = self.token.clone() else {
            return;
        };
        let due = match self.told {
            None => true,
            Some((n, at)) => n != settled || at.elapsed() >= HEARTBEAT,
        };
        if !due {
            return;
        }
        self.told = Some((settled, Instant::now()));
        let note = ProgressNotificationParam::new(token, settled as f64)
            .with_total(total as f64)
            .with_message(format!("{settled} of {total} question(s) settled"));
        let _ = self.peer.notify_progress(note).await;
    }
}

impl Server {
    /// The user this server acts for, and whether it casts that user's votes.
    pub fn with_user(mut self, user: Option<String>, votes: bool) -> Server {
        self.user = user;
        self.votes = votes;
        self
    }

    /// The inbox a client that opens URLs sends the person to.
    pub fn with_inbox(mut self, inbox: Inbox) -> Server {
        self.inbox = inbox;
        self
    }

    pub fn new(location: Location) -> Result<Server> {
        let mut tool_router = Self::tool_router() + Self::vote_router() + Self::app_router();
        super::app::mark_tools(&mut tool_router);
        for route in tool_router.map.values_mut() {
            if let Some(schema) = &route.attr.output_schema {
                route.attr.output_schema = Some(or_failure(schema));
            }
        }
        Ok(Server {
            location,
            tool_router,
            user: None,
            votes: false,
            rounds: Rounds::new()?,
            inbox: Inbox::default(),
        })
    }

    /// Reads the named questions until none is pending, `limit` runs out, or the client
    /// cancels; the last reading, and whether it timed out. The reading and waiting run on
    /// a blocking thread (see `blocking`, `ops::follow`), which reports each count as it
    /// goes.
    async fn wait(
        &self,
        stage: Option<String>,
        ids: Option<Vec<i64>>,
        limit: Duration,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Vec<Question>, bool)> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let cancelled = context.ct.clone();
        let deadline = Instant::now() + limit;
        let work = blocking(self.location.clone(), move |ledger| {
            // The id of the ledger the last read saw.
            let mut last: Option<Option<String>> = None;
            ops::follow(
                ledger,
                Some(deadline),
                Duration::from_secs(1),
                |ledger, seen| {
                    let read = ops::named_in_ledger(ledger, stage.as_deref(), ids.as_deref());
                    // Replaced: the location's watch says so, or the ledger's id changed
                    // since the last read (a reset it was not woken for).
                    let mut replaced = seen.replaced(ledger);
                    if let Ok((_, id)) = &read {
                        replaced |= last.as_ref().is_some_and(|last| last != id);
                        last = Some(id.clone());
                    }
                    if replaced {
                        // A ledger reset meanwhile holds none of these questions any more.
                        return Err(Error::conflict(
                            "the ledger was reset or replaced while waiting: the questions \
                         waited for are gone; log them again",
                        ));
                    }
                    let (questions, _) = read?;
                    if questions.is_empty() {
                        // A stage with no question: nothing will ever be answered there.
                        return Err(Error::not_found(format!(
                            "stage '{}' holds no question to wait for; ask_questions logs them",
                            stage.as_deref().unwrap_or("")
                        )));
                    }
                    let pending = questions
                        .iter()
                        .filter(|q| q.status == Status::Pending)
                        .count();
                    let total = questions.len();
                    // Nobody listening any more (the call was dropped) ends the wait.
                    let gone = tx.send((total - pending, total)).is_err();
                    Ok(match pending {
                        0 => ops::Step::Done((questions, false)),
                        _ if gone || cancelled.is_cancelled() => ops::Step::Done((questions, true)),
                        _ => ops::Step::Wait((questions, true)),
                    })
                },
            )
        });
        tokio::pin!(work);
        let mut progress = Progress::new(context);
        loop {
            tokio::select! {
                // Each count is told before the outcome that follows it.
                biased;
                Some((settled, total)) = rx.recv() => progress.tell(settled, total).await,
                outcome = &mut work => return outcome,
            }
        }
    }

    /// `ask_questions`: logs, puts the pending questions to the person (a form in the
    /// session, or a round trip on a stateless session), waits. `round` is the state and
    /// the replies a client echoes when it calls again after an "input required" result.
    async fn ask(
        &self,
        input: AskInput,
        round: Option<(String, Option<rmcp::model::InputResponses>)>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse> {
        let stage = non_blank(&input.stage, "stage")?;
        if input.questions.is_empty() {
            return Err(Error::usage(
                "questions is empty: give at least one {\"question\": …}",
            ));
        }
        let wait = seconds(input.wait_seconds, Duration::ZERO, "wait_seconds")?;
        let logger = self
            .user
            .clone()
            .or_else(|| caller(context).by)
            .unwrap_or_default();
        let new: Vec<NewQuestion> = input
            .questions
            .into_iter()
            .enumerate()
            .map(|(at, item)| new_question(&stage, item, at, &logger))
            .collect::<Result<_>>()?;
        // The second call of a round trip (the form's reply, under the state we sealed)
        // logged its questions the first time: they must all be on record, and be the ones
        // the state names, or the call is refused before anything is written.
        let redeemed = match &round {
            Some((state, _)) => {
                let (ledger_id, on_record) = blocking(self.location.clone(), {
                    let new = new.clone();
                    move |ledger| ops::on_record(ledger, &new)
                })
                .await?;
                let state = self.rounds.redeem(
                    state,
                    &client_name(context),
                    ledger_id.as_deref(),
                    on_record.as_deref(),
                )?;
                Some((state, ledger_id))
            }
            None => None,
        };
        let (question_ids, created_ids) = match &redeemed {
            Some((state, _)) => (state.question_ids.clone(), state.created_ids.clone()),
            None => {
                // All or nothing, in one transaction, as `ingest` logs an envelope.
                let logged = blocking(self.location.clone(), move |ledger| {
                    ops::log_all(ledger, &new)
                })
                .await?;
                (logged.question_ids, logged.created_ids)
            }
        };

        let ((elicitation, not_recorded), elicitation_error) =
            if let (Some((_, replies)), Some((state, ledger_id))) = (round, redeemed) {
                let reply = replies
                    .as_ref()
                    .and_then(|r| r.get(FORM_KEY))
                    .ok_or_else(|| {
                        Error::usage(format!(
                            "requestState came without inputResponses.{FORM_KEY}, the person's \
                         reply to the form: nothing was recorded"
                        ))
                    })?;
                let reply: ElicitResult = serde_json::from_value(reply.clone()).map_err(|e| {
                    Error::usage(format!(
                        "inputResponses.{FORM_KEY} is not an elicitation result: {e}"
                    ))
                })?;
                let shown = ops::Shown {
                    ledger: ledger_id,
                    questions: state.shown.iter().cloned().collect(),
                };
                let ids: Vec<i64> = state.shown.iter().map(|(id, _)| *id).collect();
                match self.record_form(&stage, &ids, shown, reply, context).await {
                    Ok(done) => (done, None),
                    Err(e) => {
                        crate::output::note(&format!("ask_questions: the form failed: {e}"));
                        ((Elicited::Failed, Vec::new()), Some(e.message))
                    }
                }
            } else {
                let to_inbox = self.inbox.known() && opens_urls(context);
                match (input.elicit, shows_forms(context) || to_inbox) {
                    (Some(false), _) => ((Elicited::NotRequested, Vec::new()), None),
                    (_, false) => ((Elicited::Unsupported, Vec::new()), None),
                    (_, true) if stateless(context) => {
                        let (pending, ledger_id) =
                            self.form_questions(&stage, &question_ids).await?;
                        if pending.is_empty() {
                            ((Elicited::NothingPending, Vec::new()), None)
                        } else {
                            // The inbox's page records nothing through this call: its state
                            // shows no question.
                            let (params, shown) = match self.inbox_request(&pending, to_inbox)? {
                                Some(params) => (params, Vec::new()),
                                None => {
                                    let (message, schema) = form::build(&pending)?;
                                    let params = ElicitRequestParams::FormElicitationParams {
                                        meta: None,
                                        message,
                                        requested_schema: schema,
                                    };
                                    (
                                        params,
                                        pending.iter().map(|q| (q.id, q.fingerprint())).collect(),
                                    )
                                }
                            };
                            let state = self.rounds.seal(
                                &client_name(context),
                                ledger_id.as_deref(),
                                question_ids,
                                created_ids,
                                shown,
                            )?;
                            let form = InputRequest::Elicitation(ElicitRequest::new(params));
                            let requests = [(FORM_KEY.to_string(), form)].into_iter().collect();
                            return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                                Some(requests),
                                Some(state),
                            )));
                        }
                    }
                    (_, true) => {
                        match self.elicit(&stage, &question_ids, to_inbox, context).await {
                            Ok(done) => (done, None),
                            Err(e) => {
                                crate::output::note(&format!(
                                    "ask_questions: the form failed: {e}"
                                ));
                                ((Elicited::Failed, Vec::new()), Some(e.message))
                            }
                        }
                    }
                }
            };

        if !wait.is_zero() && takes_tasks(context) {
            let questions = self.named(None, Some(question_ids.clone())).await?;
            if questions.iter().any(|q| q.status == Status::Pending) {
                let template = serde_json::to_value(Asked {
                    question_ids: question_ids.clone(),
                    created_ids,
                    outcomes: outcomes(&questions),
                    elicitation,
                    elicitation_error,
                    not_recorded,
                })
                .map_err(|e| Error::db(e.to_string()))?;
                return self
                    .start_task(ops::NewTask {
                        id: tasks::random_id()?,
                        procedure: Procedure::AskQuestions,
                        stage: Some(stage),
                        question_ids,
                        template,
                        deadline: task_deadline(input.wait_seconds)?,
                    })
                    .await;
            }
        }
        let (questions, _) = self
            .wait(Some(stage), Some(question_ids.clone()), wait, context)
            .await?;
        let asked = Asked {
            question_ids,
            created_ids,
            outcomes: outcomes(&questions),
            elicitation,
            elicitation_error,
            not_recorded,
        };
        let value = serde_json::to_value(&asked).map_err(|e| Error::db(e.to_string()))?;
        Ok(CallToolResponse::Complete(CallToolResult::structured(
            value,
        )))
    }

    /// The named questions as they stand; a stage that holds none is not found.
    async fn named(&self, stage: Option<String>, ids: Option<Vec<i64>>) -> Result<Vec<Question>> {
        blocking(self.location.clone(), move |ledger| {
            let questions = ops::named(ledger, stage.as_deref(), ids.as_deref())?;
            if questions.is_empty() {
                return Err(Error::not_found(format!(
                    "stage '{}' holds no question to wait for; ask_questions logs them",
                    stage.as_deref().unwrap_or("")
                )));
            }
            Ok(questions)
        })
        .await
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

    /// The URL-mode request that sends the person to the first pending question's page in
    /// the inbox, when `to_inbox`.
    fn inbox_request(
        &self,
        pending: &[Question],
        to_inbox: bool,
    ) -> Result<Option<ElicitRequestParams>> {
        let Some(url) = pending
            .first()
            .filter(|_| to_inbox)
            .and_then(|q| self.inbox.page(q.id))
        else {
            return Ok(None);
        };
        let message = match pending {
            [one] => format!("Answer in the questions inbox: {}", one.question),
            many => format!(
                "{} questions need your answer in the questions inbox",
                many.len()
            ),
        };
        Ok(Some(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url,
            elicitation_id: super::rounds::random_hex(16)?,
        }))
    }

    /// The pending questions among `ids` a form puts to the person (approvals take votes,
    /// not a form's answers), and the ledger's id.
    async fn form_questions(
        &self,
        stage: &str,
        ids: &[i64],
    ) -> Result<(Vec<Question>, Option<String>)> {
        let (s, i) = (stage.to_string(), ids.to_vec());
        let (pending, ledger_id) = blocking(self.location.clone(), move |ledger| {
            Ok((ops::pending(ledger, &s, Some(&i))?, ledger.id()?))
        })
        .await?;
        let pending = pending
            .into_iter()
            .filter(|q| q.approval.is_none())
            .collect();
        Ok((pending, ledger_id))
    }

    /// Puts the pending questions among `ids` to the person through the client's form
    /// (a request to the client, on a session of an older revision), and records what they
    /// chose.
    async fn elicit(
        &self,
        stage: &str,
        ids: &[i64],
        to_inbox: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Elicited, Vec<NotRecorded>)> {
        let (pending, ledger_id) = self.form_questions(stage, ids).await?;
        if pending.is_empty() {
            return Ok((Elicited::NothingPending, Vec::new()));
        }
        if let Some(params) = self.inbox_request(&pending, to_inbox)? {
            let reply = context
                .peer
                .create_elicitation(params)
                .await
                .map_err(|e| Error::io(format!("the client did not open the inbox: {e}")))?;
            return Ok((inbox_outcome(&reply.action), Vec::new()));
        }
        let (message, schema) = form::build(&pending)?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        let reply = context
            .peer
            .create_elicitation(params)
            .await
            .map_err(|e| Error::io(format!("the client did not show the form: {e}")))?;
        // What the form showed is what is recorded.
        let shown = ops::Shown::all(ledger_id, &pending);
        let ids: Vec<i64> = pending.iter().map(|q| q.id).collect();
        self.record_form(stage, &ids, shown, reply, context).await
    }

    /// Records the person's reply to a form that showed `shown` (questions `ids`): a
    /// question answered elsewhere while the form was open is reported, and the others are
    /// recorded.
    async fn record_form(
        &self,
        stage: &str,
        ids: &[i64],
        shown: ops::Shown,
        reply: ElicitResult,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Elicited, Vec<NotRecorded>)> {
        if ids.is_empty() {
            // The person was sent to the inbox: it records what they answer there.
            return Ok((inbox_outcome(&reply.action), Vec::new()));
        }
        match reply.action {
            ElicitationAction::Accept => {}
            ElicitationAction::Decline => return Ok((Elicited::Declined, Vec::new())),
            _ => return Ok((Elicited::Cancelled, Vec::new())),
        }
        let caller = caller(context);
        let (stage, ids) = (stage.to_string(), ids.to_vec());
        let content = reply.content;
        let asked = blocking(self.location.clone(), move |ledger| {
            // The questions as they stand: the form's reply is read against them, and
            // `shown` refuses any that is no longer what the form showed.
            let questions = ops::named(ledger, None, Some(&ids))?;
            let chosen = form::read(&questions, content.as_ref())?;
            ops::record_choices(
                ledger,
                &caller,
                &stage,
                &chosen,
                &shown,
                ops::Together::Each,
            )
        })
        .await?;
        Ok((
            Elicited::Accepted,
            asked
                .not_recorded
                .into_iter()
                .map(|n| NotRecorded {
                    question_id: n.question_id,
                    reason: n.reason,
                })
                .collect(),
        ))
    }
}

#[tool_router]
impl Server {
    /// Logs questions for a person (the same stage, group and text again is the one on
    /// record), puts them to the person through the client's form when it can show one,
    /// and returns each question's outcome, at once or after at most `wait_seconds`.
    #[tool(
        output_schema = schema_for_output::<Asked>(),
        description = "Log questions that need a person's answer (the same stage, group and question text again returns the question on record), put the pending ones to the person through the client's form when the client supports elicitation, and return each question's outcome (answered, skipped, declined, expired or pending) at once or after waiting up to wait_seconds (at most 50). Questions left pending stay answerable by any means; wait_for_answers picks them up later.",
        annotations(open_world_hint = false)
    )]
    async fn ask_questions(
        &self,
        Parameters(input): Parameters<Input<AskInput>>,
        RequestState(state): RequestState,
        InputResponses(replies): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, CallToolResult> {
        let round = state.map(|s| (s, replies));
        let run = async { self.ask(input.read()?, round, &context).await };
        run.await.map_err(|e| failure(Procedure::AskQuestions, &e))
    }

    #[tool(
        output_schema = schema_for_output::<Waited>(),
        description = "Wait until every named question (a stage's, or the given ids) has left pending, or until timeout_seconds (at most 50, the default) pass, and return each question's outcome: answered, skipped, declined, expired or pending. Sends progress notifications while it waits. Call it again to keep waiting: nothing is lost between calls. A client that declares the Tasks extension gets a task instead when a question is still pending: it is kept in the ledger (it survives a restart of the server), has no 50 s cap (timeout_seconds, when given, ends it), and tasks/get returns this tool's result once every question has left pending.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn wait_for_answers(
        &self,
        Parameters(input): Parameters<Input<WaitInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let stage = input
                .stage
                .as_deref()
                .map(|s| non_blank(s, "stage"))
                .transpose()?;
            if stage.is_none() && input.ids.is_none() {
                return Err(Error::usage(
                    "name the questions to wait for: give stage, ids, or both",
                ));
            }
            if input.ids.as_ref().is_some_and(Vec::is_empty) {
                return Err(Error::usage(
                    "ids is empty: name the questions to wait for (nothing to wait for is \
                     not an answer)",
                ));
            }
            let limit = seconds(input.timeout_seconds, MOST_WAIT, "timeout_seconds")?;
            if takes_tasks(&context) {
                // A wait that outlives the call: a task in the ledger, unless nothing is
                // left to wait for.
                let deadline = task_deadline(input.timeout_seconds)?;
                let questions = self.named(stage.clone(), input.ids.clone()).await?;
                if questions.iter().any(|q| q.status == Status::Pending) {
                    let template = serde_json::to_value(Waited {
                        question_ids: questions.iter().map(|q| q.id).collect(),
                        settled: false,
                        timed_out: false,
                        outcomes: outcomes(&questions),
                    })
                    .map_err(|e| Error::db(e.to_string()))?;
                    return self
                        .start_task(ops::NewTask {
                            id: tasks::random_id()?,
                            procedure: Procedure::WaitForAnswers,
                            stage,
                            question_ids: questions.iter().map(|q| q.id).collect(),
                            template,
                            deadline,
                        })
                        .await;
                }
            }
            let (questions, timed_out) = self.wait(stage, input.ids, limit, &context).await?;
            let waited = Waited {
                question_ids: questions.iter().map(|q| q.id).collect(),
                settled: !timed_out,
                timed_out,
                outcomes: outcomes(&questions),
            };
            let value = serde_json::to_value(&waited).map_err(|e| Error::db(e.to_string()))?;
            Ok(CallToolResponse::Complete(CallToolResult::structured(
                value,
            )))
        };
        run.await
            .map_err(|e| failure(Procedure::WaitForAnswers, &e))
    }

    #[tool(
        description = "The stage gate, as `questions check` reports it: gate pass or fail, the required questions still pending, and the declined ones to ask another way.",
        output_schema = command_schema("check"),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn check_gate(
        &self,
        Parameters(input): Parameters<Input<CheckInput>>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let req = CheckRequest {
                stage: Some(non_blank(&input.stage, "stage")?),
                ids: input.ids,
                strict: false,
                wait: Wait::No,
                allow_unknown_stage: false,
            };
            let report = blocking(self.location.clone(), move |l| ops::check(l, &req)).await?;
            document(report.gate.passes(), Procedure::Check, &report)
        };
        run.await.map_err(|e| failure(Procedure::Check, &e))
    }

    #[tool(
        description = "List questions, oldest first, as `questions list` does: every question, or a stage's, or those with a status.",
        output_schema = command_schema("list"),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_questions(
        &self,
        Parameters(input): Parameters<Input<ListInput>>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        #[derive(Serialize)]
        struct Listed {
            count: usize,
            questions: Vec<Question>,
        }
        let run = async {
            let input = input.read()?;
            let filter = Filter {
                stage: input
                    .stage
                    .as_deref()
                    .map(|s| non_blank(s, "stage"))
                    .transpose()?,
                status: input.status.map(|Named(s)| s),
                ..Filter::default()
            };
            let questions = blocking(self.location.clone(), move |l| ops::list(l, &filter)).await?;
            document(
                true,
                Procedure::List,
                &Listed {
                    count: questions.len(),
                    questions,
                },
            )
        };
        run.await.map_err(|e| failure(Procedure::List, &e))
    }

    #[tool(
        description = "What a re-invoked agent needs, as `questions answers` reports it: the stage's answers keyed by group, header or question text, with a detail per question.",
        output_schema = command_schema("answers"),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_answers(
        &self,
        Parameters(input): Parameters<Input<StageInput>>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        let run = async {
            let stage = non_blank(&input.read()?.stage, "stage")?;
            let report = blocking(self.location.clone(), move |l| ops::answers(l, &stage)).await?;
            document(true, Procedure::Answers, &report)
        };
        run.await.map_err(|e| failure(Procedure::Answers, &e))
    }

    #[tool(
        description = "Record answers the agent obtained through its own asking tool, all or nothing, each checked as `questions answer` checks it: by question id, the answer text, the chosen option labels, or {\"skip\": true, \"reason\": \"…\"}.",
        output_schema = command_schema("import"),
        annotations(destructive_hint = false, open_world_hint = false)
    )]
    async fn record_answers(
        &self,
        Parameters(input): Parameters<Input<RecordInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let stage = non_blank(&input.stage, "stage")?;
            let text = Value::Object(input.answers).to_string();
            let caller = caller(&context);
            let imported = blocking(self.location.clone(), move |l| {
                ops::import(l, &caller, &stage, &text, Some(ImportFormat::Map), false)
            })
            .await?;
            document(true, Procedure::Import, &imported)
        };
        run.await.map_err(|e| failure(Procedure::Import, &e))
    }
}

/// What `answer_in_app` recorded.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AppRecorded {
    question_id: i64,
    status: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    selected: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Always `mcp-app`.
    channel: String,
}

/// `open_inbox`'s result: the pending questions the in-chat inbox shows.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InboxShown {
    pending_count: usize,
    question_ids: Vec<i64>,
    /// The MCP Apps resource a host renders for it.
    resource_uri: String,
}

#[tool_router(router = app_router)]
impl Server {
    #[tool(
        description = "Show the person the pending questions as an interactive inbox inside the chat (an MCP Apps view, on hosts that render them): they answer, skip or decline each there. Returns how many are pending.",
        output_schema = schema_for_output::<InboxShown>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn open_inbox(&self) -> std::result::Result<CallToolResponse, CallToolResult> {
        let run = async {
            let inbox = blocking(self.location.clone(), |l| ops::inbox(l, None)).await?;
            let shown = InboxShown {
                pending_count: inbox.questions.len(),
                question_ids: inbox.questions.iter().map(|(q, _)| q.id).collect(),
                resource_uri: super::app::URI.to_string(),
            };
            let value = serde_json::to_value(&shown).map_err(|e| Error::db(e.to_string()))?;
            Ok(CallToolResponse::Complete(CallToolResult::structured(
                value,
            )))
        };
        run.await.map_err(|e| failure(Procedure::OpenInbox, &e))
    }

    #[tool(
        description = "The in-chat inbox's own tool (MCP Apps; hidden from the model): records what the person did on a question there, as the inbox's forms send it. Channel mcp-app.",
        output_schema = schema_for_output::<AppRecorded>(),
        annotations(destructive_hint = false, open_world_hint = false)
    )]
    async fn answer_in_app(
        &self,
        Parameters(input): Parameters<Input<super::app::AppInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let caller = Caller {
                by: Some(format!("mcp:{}", client_name(&context))),
                channel: Channel::McpApp,
            };
            let recorded = blocking(self.location.clone(), move |l| {
                super::app::record(l, &caller, input)
            })
            .await?;
            let q = &recorded.question;
            let outcome = Outcome::of(q, &clock::now());
            let value = serde_json::to_value(AppRecorded {
                question_id: recorded.question_id,
                status: outcome.status,
                answer: outcome.answer,
                selected: outcome.selected,
                reason: outcome.reason,
                channel: Channel::McpApp.as_str().to_string(),
            })
            .map_err(|e| Error::db(e.to_string()))?;
            Ok(CallToolResponse::Complete(CallToolResult::structured(
                value,
            )))
        };
        run.await.map_err(|e| failure(Procedure::AnswerInApp, &e))
    }
}

/// `vote`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VoteInput {
    /// The approval's id.
    id: i64,
    /// "approve" or "reject".
    vote: Named<questions_core::model::Verdict>,
    /// A comment with an approval; the reason of a rejection (required then).
    comment: Option<String>,
}

#[tool_router(router = vote_router)]
impl Server {
    #[tool(
        description = "Vote on an approval (a question that only certain people may answer): approve, or reject with a reason. The vote counts as the user this server was configured with, never as the agent, and is refused (forbidden) when that user asked for the approval or is not among its approvers, or when the server runs with --no-votes.",
        output_schema = command_schema("vote"),
        annotations(destructive_hint = false, open_world_hint = false)
    )]
    async fn vote(
        &self,
        Parameters(input): Parameters<Input<VoteInput>>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let Named(verdict) = input.vote;
            let Some(voter) = self.user.clone().filter(|_| self.votes) else {
                return Err(Error::new(
                    questions_core::error::ErrorCode::Forbidden,
                    "this MCP server refuses votes (it runs with --no-votes): an agent never \
                     approves a request; a person votes with 'questions approve' or the inbox",
                ));
            };
            let ballot = questions_core::model::Ballot {
                verdict,
                comment: input.comment,
            };
            let id = input.id;
            let change =
                ops::PersonsChange::of(id, ops::Act::Vote(ops::Identity::Person(voter), ballot));
            let caller = ops::Caller {
                by: None,
                channel: Channel::Mcp,
            };
            let recorded = blocking(self.location.clone(), move |l| {
                ops::change(l, &caller, &change)
            })
            .await?;
            document(true, Procedure::Vote, &recorded)
        };
        run.await.map_err(|e| failure(Procedure::Vote, &e))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
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
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, McpError> {
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
        let html = blocking(self.location.clone(), crate::serve::app::page)
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
