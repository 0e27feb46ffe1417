//! The ledger itself over HTTP (§15): `POST /v1/call` with a token the ledger issued
//! (`Authorization: Bearer qtok_…`) and one request of the core's door as its body
//! (`{"op": "log", "args": {…}}`). The token is read anew at every call (a revoked one
//! is refused at once), and the request goes through `ops::call` as the token's holder:
//! what each role may do is the core's, not this file's. The answer is the request's
//! §2 document, with the HTTP status of its error code.
//!
//! A wait (`check --wait`, `events --follow`, `hook --wait`) is cut at `LONGEST_WAIT`: the
//! client sends it again. Each is held as a future between looks (`long_poll`), not by a
//! thread.
//!
//! A refused token is counted against the client it came from (see `limit`): past
//! `MAX_REFUSED` a minute, its calls are answered 429 before any token is looked up. A
//! connection whose token is honoured counts against the token, not the address.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::api::{success_with, Failed};
use super::limit::Conn;
use super::{App, BODY_LIMIT, CALL_BODY_LIMIT};
use questions_core::error::{Error, ErrorCode};
use questions_core::ops::{self, Procedure, Request, Wait};

/// The longest a call waits (`check --wait`): a client sends it again until its own
/// timeout, so no waiter holds a thread for longer, and proxies that cut idle requests
/// after a minute never cut one.
pub(super) const LONGEST_WAIT: Duration = Duration::from_secs(50);

pub(super) async fn call(
    State(app): State<Arc<App>>,
    Extension(conn): Extension<Conn>,
    Extension(seen): Extension<super::proxy::Seen>,
    Extension(actor): Extension<super::reqlog::Actor>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failed> {
    let client = seen.client;
    let token = super::guard::bearer(&headers);
    // A body beyond what anyone may send (a long subagent output to ingest) is read only
    // for a token the ledger issued, looked up first.
    let large = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > BODY_LIMIT as u64);
    let authenticate = |procedure: Procedure| {
        let (app, token) = (Arc::clone(&app), token.clone());
        async move { principal(&app, client, token, procedure).await }
    };
    let (known, limit) = if large {
        match authenticate(Procedure::Serve).await {
            Ok(who) => (Some(who), CALL_BODY_LIMIT),
            Err(refused) => return Ok(refused),
        }
    } else {
        (None, BODY_LIMIT)
    };
    let body = axum::body::to_bytes(body, limit).await.map_err(|_| {
        Failed::of(Procedure::Serve)(Error::usage(if large {
            "the request body is larger than 16 MiB, or was cut short"
        } else {
            "the request body is larger than 64 KiB (a larger one needs a token the \
             ledger issued and its Content-Length), or was cut short"
        }))
    })?;
    let mut req: Request = serde_json::from_slice(&body).map_err(|e| {
        Failed::of(Procedure::Serve)(Error::usage(format!(
            "the body is not a request of the ledger: {e}; send {{\"op\": \"…\", \"args\": {{…}}}}"
        )))
    })?;
    // A key of the caller's own, in the body or as the usual header: a log, an ingest or a
    // person's change sent again with it is recorded once (§15).
    let given = || {
        headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    match &mut req {
        Request::Log { key, .. }
        | Request::Ingest { key, .. }
        | Request::Clear { key, .. }
        | Request::Delivered { key, .. }
            if key.is_none() =>
        {
            *key = given();
        }
        Request::Change(change) if change.key.is_none() => change.key = given(),
        _ => {}
    }
    let procedure = req.procedure();
    // A gate's, a follower's and a harness call's waits are held here, not by a thread (see `long_poll`):
    // the request looks once each time.
    let mut held = None;
    match &mut req {
        Request::Check(check) => {
            if let Wait::Until(limit) = check.wait {
                held = Some(limit.map_or(LONGEST_WAIT, |l| l.min(LONGEST_WAIT)));
                check.wait = Wait::Until(Some(Duration::ZERO));
            }
        }
        Request::Events {
            wait: Some(wait), ..
        } => {
            held = Some((*wait).min(LONGEST_WAIT));
            *wait = Duration::ZERO;
        }
        Request::HarnessCall {
            wait: Some(wait), ..
        } => {
            held = Some((*wait).min(LONGEST_WAIT));
            *wait = Duration::ZERO;
        }
        _ => {}
    }
    let who = match known {
        Some(who) => who,
        None => match authenticate(procedure).await {
            Ok(who) => who,
            Err(refused) => return Ok(refused),
        },
    };
    actor.principal(&who);
    let name = holder(&who);
    if let Some(busy) = admitted(&app, &conn, &name) {
        return Ok(busy);
    }
    let refused = |e: Error| {
        if e.code == ErrorCode::Forbidden {
            app.limits.forbidden(&name);
        }
        Failed::of(procedure)(e)
    };
    let mut reply = match held {
        Some(wait) => match long_poll(&app, who, req, wait).await.map_err(refused)? {
            Some(reply) => reply,
            None => return Ok(draining()),
        },
        None => app
            .ledger(move |l| ops::call(l, &who, req))
            .await
            .map_err(refused)?,
    };
    if let ops::Reply::Info(info) = &mut reply {
        // Where the server keeps the ledger is the server's business: the client names
        // the URL it called.
        info.ledger.location = String::new();
    }
    Ok(success_with(reply.passes(), procedure, &reply))
}

/// A wait of up to `wait` that holds no thread and no connection to the ledger: the
/// request (which looks once) runs on the blocking pool, and between looks the call
/// awaits the server's watcher's word that the ledger changed (a new event, an expiry
/// applied, a reset), its deadline, or the server stopping; a look that finds nothing yet
/// is the core's to say (a gate's report `timed_out`, a page of no events). A thousand
/// waiters are a thousand futures.
///
/// From the signal to stop on (`draining`), a wait is not held: a look that finds
/// nothing yet is `None`, which the client is told to send again elsewhere (see
/// `draining`).
async fn long_poll(
    app: &Arc<App>,
    who: ops::Principal,
    req: Request,
    wait: Duration,
) -> questions_core::error::Result<Option<ops::Reply>> {
    let deadline = tokio::time::Instant::now() + wait;
    let _held = app.metrics.waiting();
    let mut changed = app.seq.clone();
    let mut stopping = app.stopping.clone();
    let mut draining = app.draining.clone();
    // Ids name questions of the ledger there now: every look says which, so that a
    // reset while the wait is held is the core's `conflict`, not another question's gate.
    let mut req = req;
    if let Request::Check(check) = &mut req {
        if check.ids.is_some() && check.ledger.is_none() {
            check.ledger = app.ledger(|l| l.id()).await?;
        }
    }
    loop {
        changed.borrow_and_update();
        let (who_now, once) = (who.clone(), req.clone());
        // Looks take turns: a change wakes every waiter at once, and each look is a
        // read (on PostgreSQL a connection): a few at a time leave the blocking pool and
        // the database's connections to everyone else.
        let turn = LOOKS.acquire().await;
        let reply =
            crate::bridge::look(app.location.clone(), move |l| ops::call(l, &who_now, once)).await;
        drop(turn);
        let reply = reply?;
        // A harness call's questions are logged by its first look: the next ones read.
        if let Request::HarnessCall { step, .. } = &mut req {
            *step = ops::CallStep::Looking;
        }
        let nothing_yet = match &reply {
            ops::Reply::Gate(report) => report.timed_out,
            ops::Reply::Events(page) => page.events.is_empty(),
            // A harness call's look finds its questions (logging them at the first); it
            // is over when none is pending.
            ops::Reply::Call(call) => call
                .questions
                .iter()
                .flatten()
                .any(|q| q.state.status == questions_core::model::Status::Pending),
            _ => false,
        };
        if nothing_yet && (*draining.borrow() || *stopping.borrow()) {
            return Ok(None);
        }
        if !nothing_yet || tokio::time::Instant::now() >= deadline {
            return Ok(Some(reply));
        }
        // A change missed (none should be) is looked for again after a while.
        let next = deadline.min(tokio::time::Instant::now() + LOOK_AGAIN);
        tokio::select! {
            _ = changed.changed() => {}
            _ = stopping.changed() => {}
            _ = draining.changed() => {}
            () = tokio::time::sleep_until(next) => {}
        }
    }
}

/// A held wait the server let go of as it stops: 503 `unavailable` with `Retry-After`, and
/// the connection closed, so that the client sends it again and the load balancer (which
/// has seen `/readyz` say 503) takes it to another server. The client's wait goes on
/// (`remote`).
fn draining() -> Response {
    let err = Error::new(
        ErrorCode::Unavailable,
        "this server is stopping: send the wait again, to another server",
    );
    let body = ops::failure(Some(Procedure::Serve), &err);
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(axum::http::header::RETRY_AFTER, 1.into());
    headers.insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response.extensions_mut().insert(ErrorCode::Unavailable);
    response
}

/// How many held waits look at once (see `long_poll`).
static LOOKS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(8);

/// The longest a held wait goes without looking (see `long_poll`): the watcher's word is
/// what wakes it, this is a net for a word missed.
const LOOK_AGAIN: Duration = Duration::from_secs(30);

/// The name a token's connections are counted under.
pub(super) fn holder(who: &ops::Principal) -> String {
    match who {
        ops::Principal::Agent(agent) => agent.name.clone(),
        ops::Principal::Person(person) => person.name.clone(),
        ops::Principal::Direct(_) => String::new(),
    }
}

/// Who `token` names, read anew at every call (a revoked one is refused at once), as
/// `limit` slows a client whose tokens are refused: past its share, a token not honoured
/// lately waits `TARPIT` before it is looked up, and one refused then is 429. A refusal
/// is the failure document of `procedure`.
pub(super) async fn principal(
    app: &Arc<App>,
    client: std::net::IpAddr,
    token: Option<String>,
    procedure: Procedure,
) -> Result<ops::Principal, Response> {
    let slowed = app.limits.wait_before(client, token.as_deref());
    if !slowed.is_zero() {
        tokio::time::sleep(slowed).await;
    }
    let given = token.clone();
    match app
        .ledger(move |l| ops::authenticate(l, given.as_deref()))
        .await
    {
        Ok(who) => {
            if let Some(token) = &token {
                app.limits.honour(token);
            }
            Ok(who)
        }
        Err(e) if e.code == ErrorCode::Unauthorized => {
            app.limits.refused(client);
            let wait = app.limits.refused_for(client);
            if slowed.is_zero() || wait.is_zero() {
                Err(Failed::of(procedure)(e).into_response())
            } else {
                Err(too_many(
                    "too many refused tokens from this address: a token this server has \
                     honoured lately is still served at once",
                    wait,
                ))
            }
        }
        Err(e) => Err(Failed::of(procedure)(e).into_response()),
    }
}

/// Whether a connection with the token `name` is served now: none (`None`), or the 429
/// that says why and when to send it again.
pub(super) fn admitted(app: &App, conn: &Conn, name: &str) -> Option<Response> {
    if !conn.0.carries(name) {
        return Some(too_many(
            "too many connections with this token at once: close some, or wait",
            Duration::from_secs(1),
        ));
    }
    let wait = app.limits.forbidden_for(name);
    (!wait.is_zero()).then(|| too_many("too many refused requests with this token", wait))
}

/// 429, with the failure document of `unavailable` (exit 1: not yet, never a usage
/// error) and the time to wait, in its words and in `Retry-After`: the call may be sent
/// again then, and a wait goes on after it (`remote`).
pub(super) fn too_many(message: &str, wait: Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let secs = secs.max(1);
    let err = Error::new(
        ErrorCode::Unavailable,
        format!("{message}: try again in {secs} s"),
    );
    let body = ops::failure(Some(Procedure::Serve), &err);
    let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
    response.extensions_mut().insert(ErrorCode::Unavailable);
    response
        .headers_mut()
        .insert(axum::http::header::RETRY_AFTER, secs.into());
    response
}
