//! The page: the inbox, and its plain forms (POST, then a redirect back), which work with
//! JavaScript off. With it on, /assets/inbox.js follows the ledger through /api/changes.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;

use super::api;
use super::guard::Person;
use super::App;
use crate::page::html::{self, Flash};
use crate::page::{CSS, SCRIPT};
use crate::strings;
use questions_core::clock;
use questions_core::error::{Error, ErrorCode, Refusal};
use questions_core::model::AnswerInput;
use questions_core::ops;

pub(super) async fn css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS).into_response()
}

pub(super) async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

/// What the redirect after a change says was done.
#[derive(Deserialize, Default)]
pub(super) struct Done {
    answered: Option<i64>,
    skipped: Option<i64>,
    declined: Option<i64>,
    accepted: Option<i64>,
}

pub(super) async fn inbox(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    Query(done): Query<Done>,
) -> Response {
    let flash = match (done.answered, done.skipped, done.declined, done.accepted) {
        (Some(id), ..) => Some(Flash::Done(strings::answered(id))),
        (_, Some(id), ..) => Some(Flash::Done(strings::skipped(id))),
        (_, _, Some(id), _) => Some(Flash::Done(strings::declined(id))),
        (.., Some(id)) => Some(Flash::Done(strings::accepted(id))),
        _ => None,
    };
    render(&app, &person, StatusCode::OK, flash).await
}

/// The inbox as `person` (whose token asked for it) sees it: approvals offer their
/// buttons only to those who may vote on them.
pub(super) async fn render(
    app: &Arc<App>,
    person: &Person,
    status: StatusCode,
    flash: Option<Flash>,
) -> Response {
    let stage = app.stage.clone();
    let read = app
        .ledger(move |l| Ok((ops::inbox(l, stage.as_deref())?, clock::now())))
        .await;
    match read {
        Ok((inbox, now)) => {
            let body = html::inbox(&html::Page {
                signed_in: app.signin.is_some(),
                csrf: person.1.as_deref(),
                seq: inbox.seq,
                now: &now,
                ledger: inbox.ledger.as_deref(),
                stage: app.stage.as_deref(),
                questions: &inbox.questions,
                person: person.0.as_deref(),
                voters: &inbox.voters,
                flash,
            });
            (
                status,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                body,
            )
                .into_response()
        }
        Err(e) => (
            api::status_of(e.code),
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            strings::unreadable(&e.message),
        )
            .into_response(),
    }
}

/// A form's fields in order; `select` may repeat (checkboxes).
type Fields = Vec<(String, String)>;

pub(super) fn field(fields: &Fields, name: &str) -> Option<String> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.trim().is_empty())
}

pub(super) async fn answer(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    Path(id): Path<i64>,
    Form(fields): Form<Fields>,
) -> Response {
    let input = AnswerInput {
        text: field(&fields, "answer"),
        select: fields
            .iter()
            .filter(|(k, _)| k == "select")
            .map(|(_, v)| v.clone())
            .collect(),
    };
    submit(app, person, id, Ok(ops::Act::Answer(input)), &fields).await
}

pub(super) async fn skip(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    Path(id): Path<i64>,
    Form(fields): Form<Fields>,
) -> Response {
    submit(
        app,
        person,
        id,
        Ok(ops::Act::Skip(field(&fields, "reason"))),
        &fields,
    )
    .await
}

pub(super) async fn decline(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    Path(id): Path<i64>,
    Form(fields): Form<Fields>,
) -> Response {
    let reason = field(&fields, "reason").unwrap_or_default();
    submit(app, person, id, Ok(ops::Act::Decline(reason)), &fields).await
}

/// "Accept proposed": the person takes the question's proposal as their answer.
pub(super) async fn accept(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    Path(id): Path<i64>,
    Form(fields): Form<Fields>,
) -> Response {
    submit(app, person, id, Ok(ops::Act::AcceptProposed), &fields).await
}

/// Records the change and redirects back to the inbox; a refusal is shown on the inbox
/// with its status (409 when someone else answered first).
async fn submit(
    app: Arc<App>,
    person: Person,
    id: i64,
    change: Result<ops::Act, Error>,
    fields: &Fields,
) -> Response {
    // The page names the ledger and the question it showed (hidden fields).
    let shown = api::shown(id, field(fields, "ledger"), field(fields, "fingerprint"));
    let change = match change {
        Ok(c) => c,
        Err(e) => {
            return render(
                &app,
                &person,
                api::status_of(e.code),
                Some(Flash::Failed(e.message)),
            )
            .await
        }
    };
    let done = match &change {
        ops::Act::Answer(_) => "answered",
        ops::Act::Skip(_) => "skipped",
        ops::Act::Decline(_) => "declined",
        ops::Act::AcceptProposed => "accepted",
        ops::Act::Vote(..) => "voted",
    };
    match api::apply(&app, &person, id, change, shown).await {
        Ok(_) => Redirect::to(&format!("/?{done}={id}")).into_response(),
        Err((e, on_record)) => {
            let message = match (e.code, e.refusal) {
                (ErrorCode::Conflict, _) => api::conflict_message(&e, on_record.as_deref()),
                (_, Some(Refusal::NeedsReason { .. })) => strings::decline_needs_reason(id),
                _ => strings::refused(id, &e.message),
            };
            render(
                &app,
                &person,
                api::status_of(e.code),
                Some(Flash::Failed(message)),
            )
            .await
        }
    }
}
