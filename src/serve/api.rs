//! The JSON API: the same operations as the page, with the contract's documents (§2) and
//! HTTP statuses for its error codes.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use serde_json::Value;

use super::guard::Person;
use super::App;
use questions_core::error::{Error, ErrorCode, Refusal, Result};
use questions_core::model::{AnswerInput, Question, Status, Vocabulary};
use questions_core::ops::Filter;
use questions_core::ops::{self, Procedure};

/// The HTTP status of an error code.
pub(super) fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::Conflict => StatusCode::CONFLICT,
        ErrorCode::Forbidden => StatusCode::FORBIDDEN,
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::InvalidAnswer => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::Usage | ErrorCode::ParseError => StatusCode::BAD_REQUEST,
        ErrorCode::Timeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Cancelled
        | ErrorCode::DbError
        | ErrorCode::SchemaTooNew
        | ErrorCode::IoError => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn json(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

pub(super) fn success(procedure: Procedure, result: &impl serde::Serialize) -> Response {
    success_with(true, procedure, result)
}

/// A document with a verdict of its own (`ok` false for a gate that fails), sent with
/// 200: the call itself succeeded.
pub(super) fn success_with(
    ok: bool,
    procedure: Procedure,
    result: &impl serde::Serialize,
) -> Response {
    let body = crate::output::pretty(&ops::document(ok, procedure, result));
    json(StatusCode::OK, body)
}

/// An API call that failed: the §2 failure document of its procedure, with the HTTP
/// status of its code; a conflict also carries the question as it stands, with the
/// answer on record. Every API handler returns `Result<Response, Failed>`.
pub(crate) struct Failed {
    procedure: Procedure,
    error: Error,
    on_record: Option<Box<Question>>,
}

impl Failed {
    /// The failure of `procedure` an error makes: `.map_err(Failed::of(…))`.
    pub(super) fn of(procedure: Procedure) -> impl Fn(Error) -> Failed {
        move |error| Failed {
            procedure,
            error,
            on_record: None,
        }
    }
}

impl IntoResponse for Failed {
    fn into_response(self) -> Response {
        let body =
            ops::failure(Some(self.procedure), &self.error).on_record(self.on_record.as_deref());
        let mut response = json(status_of(self.error.code), crate::output::pretty(&body));
        // The metrics count refusals by code (see `metrics`).
        response.extensions_mut().insert(self.error.code);
        response
    }
}

#[derive(Deserialize)]
pub(super) struct ListQuery {
    stage: Option<String>,
    status: Option<String>,
}

pub(super) fn parse_status(text: &str) -> Result<Status> {
    let text = text.trim();
    Status::parse(text).ok_or_else(|| Error::usage(Status::not_one(text)))
}

/// The stage a request may see: the one asked for, within the server's `--stage`.
fn stage_within(app: &App, asked: Option<String>) -> Result<Option<String>> {
    let asked = asked
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    match (&app.stage, asked) {
        (Some(own), Some(asked)) if *own != asked => Err(Error::not_found(format!(
            "this inbox serves stage '{own}' only"
        ))),
        (own, asked) => Ok(asked.or_else(|| own.clone())),
    }
}

pub(super) async fn list(
    State(app): State<Arc<App>>,
    Query(query): Query<ListQuery>,
) -> Result<Response, Failed> {
    let failed = Failed::of(Procedure::List);
    let filter = Filter {
        stage: stage_within(&app, query.stage).map_err(&failed)?,
        status: query
            .status
            .as_deref()
            .map(parse_status)
            .transpose()
            .map_err(&failed)?,
        ..Filter::default()
    };
    let (questions, ledger) = app
        .ledger(move |l| Ok((ops::list(l, &filter)?, l.id()?)))
        .await
        .map_err(&failed)?;
    Ok(success(
        Procedure::List,
        &ops::Listed {
            // The ledger's id, to send back with a change (see `shown`).
            ledger: Some(ledger),
            ..ops::Listed::new(questions)
        },
    ))
}

/// Who a change is recorded as: the person whose own token made the request (`--users`),
/// else the person the server answers as (`--user`, else the §8 default).
fn caller(app: &App, person: &Person) -> ops::Caller {
    match &person.0 {
        Some(name) => ops::Caller {
            by: Some(name.clone()),
            channel: app.caller.channel,
        },
        None => app.caller.clone(),
    }
}

/// Applies a person's change of question `id` for `person` (see `caller`), within the
/// server's stage, as the page showed it: one operation. A refusal comes back with the
/// question as it stands, so the caller can say what is on record.
pub(super) async fn apply(
    app: &Arc<App>,
    person: &Person,
    id: i64,
    act: ops::Act,
    shown: ops::Shown,
) -> std::result::Result<ops::Recorded, (Error, Option<Box<Question>>)> {
    let caller = caller(app, person);
    let change = ops::PersonsChange {
        shown,
        within: app.stage.clone(),
        ..ops::PersonsChange::of(id, act)
    };
    app.ledger(move |l| ops::change(l, &caller, &change))
        .await
        .map_err(|e| {
            // A conflict's document carries the question as it stands (§2).
            let on_record = if e.code == ErrorCode::Conflict {
                e.question_on_record().map(Box::new)
            } else {
                None
            };
            (e, on_record)
        })
}

/// The message a person reads when someone else was first.
pub(super) fn conflict_message(err: &Error, on_record: Option<&Question>) -> String {
    match (err.refusal, on_record) {
        // Someone answered first: who, and how.
        (Some(Refusal::AlreadyAnswered { .. } | Refusal::SettledMeanwhile { .. }), Some(q))
            if q.state.status == Status::Answered =>
        {
            let by = match (&q.state.answered_by, &q.state.channel) {
                (Some(by), Some(ch)) => format!(" (by {by}, via {})", ch.as_str()),
                (Some(by), None) => format!(" (by {by})"),
                _ => String::new(),
            };
            format!(
                "Question {} was already answered: \"{}\"{by}. Nothing was overwritten.",
                q.id,
                q.state.answer.as_deref().unwrap_or("")
            )
        }
        _ => err.message.clone(),
    }
}

pub(super) fn read_body(body: &Bytes) -> Result<serde_json::Map<String, Value>> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Error::parse(format!("the body is not JSON: {e}")))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(Error::parse("the body must be a JSON object")),
    }
}

pub(super) fn text_field(
    map: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<String>> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Error::parse(format!("\"{key}\" must be a string"))),
    }
}

fn answer_input(body: &Bytes) -> Result<AnswerInput> {
    let map = read_body(body)?;
    let select = match map.get("select") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| Error::parse("\"select\" must hold option labels (strings)"))
            })
            .collect::<Result<_>>()?,
        Some(_) => {
            return Err(Error::parse(
                "\"select\" must be a label or a list of labels",
            ))
        }
    };
    Ok(AnswerInput {
        text: text_field(&map, "answer")?,
        select,
    })
}

/// What the client says it showed the person (all optional): `"ledger"`, the ledger's id
/// (`GET /api/questions` gives it), and `"fingerprint"` or `"question"`, the question's
/// fingerprint or its text. A change of a question that is no longer that one is refused
/// with 409.
pub(super) fn shown(id: i64, ledger: Option<String>, fingerprint: Option<String>) -> ops::Shown {
    ops::Shown::one(ledger, id, fingerprint)
}

pub(super) fn shown_in(id: i64, body: &Bytes) -> Result<ops::Shown> {
    if body.is_empty() {
        return Ok(ops::Shown::default());
    }
    let map = read_body(body)?;
    let fingerprint = match text_field(&map, "fingerprint")? {
        Some(f) => Some(f),
        None => text_field(&map, "question")?,
    };
    Ok(shown(id, text_field(&map, "ledger")?, fingerprint))
}

async fn change(
    app: Arc<App>,
    person: Person,
    id: i64,
    change: Result<ops::Act>,
    body: &Bytes,
    procedure: Procedure,
) -> Result<Response, Failed> {
    let failed = Failed::of(procedure);
    let change = change.map_err(&failed)?;
    let shown = shown_in(id, body).map_err(&failed)?;
    match apply(&app, &person, id, change, shown).await {
        Ok(recorded) => Ok(success(procedure, &recorded)),
        Err((e, on_record)) => {
            let error = match e.code {
                ErrorCode::Conflict => Error::conflict(conflict_message(&e, on_record.as_deref())),
                _ => e,
            };
            Err(Failed {
                procedure,
                error,
                on_record,
            })
        }
    }
}

pub(super) async fn answer(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response, Failed> {
    let input = answer_input(&body).map(ops::Act::Answer);
    change(app, person, id, input, &body, Procedure::Answer).await
}

pub(super) async fn skip(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response, Failed> {
    let reason = if body.is_empty() {
        Ok(None)
    } else {
        read_body(&body).and_then(|m| text_field(&m, "reason"))
    };
    change(
        app,
        person,
        id,
        reason.map(ops::Act::Skip),
        &body,
        Procedure::Skip,
    )
    .await
}

pub(super) async fn decline(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response, Failed> {
    // A decline without a reason is the model's refusal, as on every front end.
    let reason = read_body(&body).and_then(|m| text_field(&m, "reason"));
    change(
        app,
        person,
        id,
        reason.map(|r| ops::Act::Decline(r.unwrap_or_default())),
        &body,
        Procedure::Decline,
    )
    .await
}

#[derive(Deserialize)]
pub(super) struct Since {
    #[serde(default)]
    since: i64,
    /// The ledger's id the page was drawn from; a ledger with another id is a change.
    #[serde(default)]
    ledger: Option<String>,
}

/// A long poll: answers as soon as the ledger has an event after `since`, or after 20
/// seconds, with the newest seq. The page follows the ledger through it.
pub(super) async fn changes(State(app): State<Arc<App>>, Query(q): Query<Since>) -> Response {
    let mut seq = app.seq.clone();
    let mut stopping = app.stopping.clone();
    let since = (q.ledger.filter(|l| !l.is_empty()), q.since);
    let newer = async {
        let _ = seq.wait_for(|s| *s != since).await;
    };
    tokio::select! {
        () = newer => {}
        () = tokio::time::sleep(Duration::from_secs(20)) => {}
        _ = stopping.wait_for(|s| *s) => {}
    }
    let (ledger, last) = app.seq.borrow().clone();
    json(
        StatusCode::OK,
        serde_json::json!({ "seq": last, "ledger": ledger }).to_string(),
    )
}
