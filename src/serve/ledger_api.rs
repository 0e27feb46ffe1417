//! The ledger itself over HTTP (§15): `POST /v1/call` with a token the ledger issued
//! (`Authorization: Bearer qtok_…`) and one request of the core's door as its body
//! (`{"op": "log", "args": {…}}`). The token is read anew at every call (a revoked one
//! is refused at once), and the request goes through `ops::call` as the token's holder:
//! what each role may do is the core's, not this file's. The answer is the request's
//! §2 document, with the HTTP status of its error code.
//!
//! A refused token is counted against the client it came from (see `limit`): past
//! `MAX_REFUSED` a minute, its calls are answered 429 before any token is looked up. A
//! connection whose token is honoured counts against the token, not the address.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::api::{success_with, Failed};
use super::limit::Conn;
use super::App;
use questions_core::error::{Error, ErrorCode};
use questions_core::ops::{self, Procedure, Request, Wait};

/// The longest a call waits (`check --wait`): a client sends it again until its own
/// timeout, so no waiter holds a thread for longer, and proxies that cut idle requests
/// after a minute never cut one.
pub(super) const LONGEST_WAIT: Duration = Duration::from_secs(50);

pub(super) async fn call(
    State(app): State<Arc<App>>,
    Extension(conn): Extension<Conn>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Failed> {
    let client = conn.0.client();
    if !app.limits.may_try(client) {
        return Ok(too_many(
            "too many refused tokens from this address: wait a minute",
        ));
    }
    let token = super::guard::bearer(&headers);
    let mut req: Request = serde_json::from_slice(&body).map_err(|e| {
        Failed::of(Procedure::Serve)(Error::usage(format!(
            "the body is not a request of the ledger: {e}; send {{\"op\": \"…\", \"args\": {{…}}}}"
        )))
    })?;
    // A key of the caller's own, in the body or as the usual header: a log or a person's
    // change sent again with it is recorded once (§15).
    let given = || {
        headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    match &mut req {
        Request::Log { key, .. } if key.is_none() => *key = given(),
        Request::Change(change) if change.key.is_none() => change.key = given(),
        _ => {}
    }
    let procedure = req.procedure();
    if let Request::Check(check) = &mut req {
        check.wait = match check.wait {
            Wait::No => Wait::No,
            Wait::Until(limit) => {
                Wait::Until(Some(limit.map_or(LONGEST_WAIT, |l| l.min(LONGEST_WAIT))))
            }
        };
    }
    let who = app
        .ledger(move |l| ops::authenticate(l, token.as_deref()))
        .await
        .map_err(|e| {
            if e.code == ErrorCode::Unauthorized {
                app.limits.refused(client);
            }
            Failed::of(procedure)(e)
        })?;
    let name = holder(&who);
    if !conn.0.carries(&name) {
        return Ok(too_many(
            "too many connections with this token at once: close some, or wait",
        ));
    }
    if !app.limits.may_ask(&name) {
        return Ok(too_many(
            "too many refused requests with this token: wait a minute",
        ));
    }
    let mut reply = app
        .ledger(move |l| ops::call(l, &who, req))
        .await
        .map_err(|e| {
            if e.code == ErrorCode::Forbidden {
                app.limits.forbidden(&name);
            }
            Failed::of(procedure)(e)
        })?;
    if let ops::Reply::Info(info) = &mut reply {
        // Where the server keeps the ledger is the server's business: the client names
        // the URL it called.
        info.ledger.location = String::new();
    }
    Ok(success_with(reply.passes(), procedure, &reply))
}

/// The name a token's connections are counted under.
pub(super) fn holder(who: &ops::Principal) -> String {
    match who {
        ops::Principal::Agent(agent) => agent.name.clone(),
        ops::Principal::Person(person) => person.name.clone(),
        ops::Principal::Direct(_) => String::new(),
    }
}

/// 429, with the failure document of a usage error: the call may be sent again later.
pub(super) fn too_many(message: &str) -> Response {
    let body = ops::failure(Some(Procedure::Serve), &Error::usage(message));
    (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response()
}
