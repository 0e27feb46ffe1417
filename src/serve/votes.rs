//! Approvals through the inbox: per-person tokens (`serve --users FILE`) and the votes
//! they cast. A vote counts as the person whose token made the request, never as the
//! server's own user: the server's token names nobody and cannot vote.

use std::path::Path;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::response::Response;
use axum::Extension;

use super::api;
use super::guard::Person;
use super::App;
use crate::strings;
use questions_core::error::{Error, ErrorCode, Refusal, Result};
use questions_core::model::{Ballot, Channel, Verdict};
use questions_core::ops::{self, Procedure};

/// Reads a `--users` file: one `NAME TOKEN` line per person (blank lines and `#`
/// comments ignored), tokens of at least 16 characters, the file readable by its owner
/// only.
pub(crate) fn read_users(path: &Path) -> Result<Vec<(String, String)>> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::io(format!("cannot read the users file {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(Error::usage(format!("--users {shown} is not a file")));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(Error::usage(format!(
            "--users {shown} may be read by others (mode {:o}): it holds everyone's token; \
             chmod 600 it",
            meta.permissions().mode() & 0o777
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("cannot read the users file {shown}: {e}")))?;
    parse_users(&text).map_err(|why| Error::usage(format!("--users {shown}: {why}")))
}

fn parse_users(text: &str) -> std::result::Result<Vec<(String, String)>, String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
    let mut users: Vec<(String, String)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, token] = fields[..] else {
            return Err(format!(
                "line {} is not 'NAME TOKEN' (one person, one token)",
                n + 1
            ));
        };
        questions_core::model::check_name(name, "person")
            .map_err(|why| format!("line {}: {why}", n + 1))?;
        if token.chars().count() < 16 || !token.chars().all(safe) {
            return Err(format!(
                "line {}: {name}'s token must be at least 16 letters, digits or - . _ ~",
                n + 1
            ));
        }
        if users.iter().any(|(other, _)| other == name) {
            return Err(format!("line {}: {name} is given twice", n + 1));
        }
        if users.iter().any(|(_, t)| t == token) {
            return Err(format!(
                "line {}: {name}'s token is another person's too",
                n + 1
            ));
        }
        users.push((name.to_string(), token.to_string()));
    }
    if users.is_empty() {
        return Err("it names nobody: give one 'NAME TOKEN' line per person".into());
    }
    Ok(users)
}

impl App {
    /// Whose token `given` is: `Some(None)` for the server's own, `Some(Some(name))` for
    /// a person's, `None` for no token of this server.
    pub(crate) fn holder(&self, given: &str) -> Option<Option<String>> {
        if super::guard::same(given, &self.token) {
            return Some(None);
        }
        self.users
            .iter()
            .find(|(_, token)| super::guard::same(given, token))
            .map(|(name, _)| Some(name.clone()))
    }
}

/// Records `person`'s vote on approval `id` of the server's stage, as the question was
/// shown. The server's own token names nobody and cannot vote.
async fn cast(
    app: &Arc<App>,
    person: &Person,
    id: i64,
    ballot: Ballot,
    shown: ops::Shown,
) -> Result<ops::Recorded> {
    let Some(name) = person.0.clone() else {
        return Err(Error::new(ErrorCode::Forbidden, strings::VOTE_NEEDS_TOKEN));
    };
    let change = ops::PersonsChange {
        shown,
        within: app.stage.clone(),
        ..ops::PersonsChange::of(id, ops::Act::Vote(ops::Identity::Person(name), ballot))
    };
    let caller = ops::Caller {
        by: None,
        channel: Channel::Web,
    };
    app.ledger(move |l| ops::change(l, &caller, &change)).await
}

/// The API's vote: `{"comment"|"reason"?, "ledger"?, "fingerprint"?}`, the last two as
/// for answers.
async fn vote(
    app: Arc<App>,
    person: Person,
    id: i64,
    ballot: Result<Ballot>,
    body: &Bytes,
    procedure: Procedure,
) -> Result<Response, api::Failed> {
    let failed = api::Failed::of(procedure);
    let ballot = ballot.map_err(&failed)?;
    let shown = api::shown_in(id, body).map_err(&failed)?;
    let recorded = cast(&app, &person, id, ballot, shown)
        .await
        .map_err(&failed)?;
    Ok(api::success(procedure, &recorded))
}

fn body_text(body: &Bytes, key: &str) -> Result<Option<String>> {
    if body.is_empty() {
        return Ok(None);
    }
    let map = api::read_body(body)?;
    api::text_field(&map, key)
}

/// `POST /api/questions/{id}/approve` `{"comment"?}`.
pub(crate) async fn approve(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    UrlPath(id): UrlPath<i64>,
    body: Bytes,
) -> Result<Response, api::Failed> {
    let ballot = body_text(&body, "comment").map(|comment| Ballot {
        verdict: Verdict::Approve,
        comment,
    });
    vote(app, person, id, ballot, &body, Procedure::Approve).await
}

/// `POST /api/questions/{id}/reject` `{"reason"}`.
pub(crate) async fn reject(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    UrlPath(id): UrlPath<i64>,
    body: Bytes,
) -> Result<Response, api::Failed> {
    // A rejection without a reason is the model's refusal, as on every front end.
    let ballot = body_text(&body, "reason").map(|comment| Ballot {
        verdict: Verdict::Reject,
        comment,
    });
    vote(app, person, id, ballot, &body, Procedure::Reject).await
}

/// The page's vote: recorded, then back to the inbox; a refusal is shown there.
async fn vote_form(
    app: Arc<App>,
    person: Person,
    id: i64,
    ballot: Result<Ballot>,
    fields: &Fields,
) -> Response {
    use axum::response::IntoResponse;
    // The page names the ledger and the question it showed (hidden fields), as its
    // answer forms do: a vote never lands on another question that took this id.
    let field = |name| super::page::field(fields, name);
    let shown = api::shown(id, field("ledger"), field("fingerprint"));
    let done = match ballot {
        Ok(ballot) => cast(&app, &person, id, ballot, shown).await,
        Err(e) => Err(e),
    };
    let Err(refused) = done else {
        return axum::response::Redirect::to("/").into_response();
    };
    let message = match refused.refusal {
        Some(Refusal::NeedsReason { .. }) => "say why in the reason field to reject",
        _ => &refused.message,
    };
    let flash = crate::page::html::Flash::Failed(strings::refused(id, message));
    super::page::render(&app, &person, api::status_of(refused.code), Some(flash)).await
}

type Fields = Vec<(String, String)>;

fn text(fields: &Fields, name: &str) -> Option<String> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

pub(crate) async fn approve_form(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    UrlPath(id): UrlPath<i64>,
    axum::Form(fields): axum::Form<Fields>,
) -> Response {
    let ballot = Ballot {
        verdict: Verdict::Approve,
        comment: text(&fields, "comment"),
    };
    vote_form(app, person, id, Ok(ballot), &fields).await
}

pub(crate) async fn reject_form(
    State(app): State<Arc<App>>,
    Extension(person): Extension<Person>,
    UrlPath(id): UrlPath<i64>,
    axum::Form(fields): axum::Form<Fields>,
) -> Response {
    // The reject form's own field; a page drawn before it had one sends `comment`.
    let reason = text(&fields, "reason").or_else(|| text(&fields, "comment"));
    let ballot = Ballot {
        verdict: Verdict::Reject,
        comment: reason,
    };
    vote_form(app, person, id, Ok(ballot), &fields).await
}

#[cfg(test)]
mod tests {
    use super::parse_users;

    #[test]
    fn users_files_name_each_person_once_with_a_long_token() {
        let ok =
            parse_users("# who\nalice aaaaaaaaaaaaaaaa1\n\nbob   bbbbbbbbbbbbbbbb2\n").unwrap();
        assert_eq!(ok.len(), 2);
        for bad in [
            "",
            "alice short",
            "alice aaaaaaaaaaaaaaaa1 extra",
            "alice aaaaaaaaaaaaaaaa1\nalice bbbbbbbbbbbbbbbb2",
            "alice aaaaaaaaaaaaaaaa1\nbob aaaaaaaaaaaaaaaa1",
            "group:x aaaaaaaaaaaaaaaa1",
        ] {
            assert!(parse_users(bad).is_err(), "{bad:?}");
        }
    }
}
