//! The ledger itself over HTTP (§15): `POST /v1/call` with a token the ledger issued
//! (`Authorization: Bearer qtok_…`) and one request of the core's door as its body
//! (`{"op": "log", "args": {…}}`). The token is read anew at every call (a revoked one
//! is refused at once), and the request goes through `ops::call` as the token's holder:
//! what each role may do is the core's, not this file's. The answer is the request's
//! §2 document, with the HTTP status of its error code.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::api::{success_with, Failed};
use super::App;
use questions_core::error::Error;
use questions_core::ops::{self, Procedure, Request, Wait};

/// The longest a call waits (`check --wait`): a client sends it again until its own
/// timeout, so no waiter holds a thread for longer, and proxies that cut idle requests
/// after a minute never cut one.
pub(super) const LONGEST_WAIT: Duration = Duration::from_secs(50);

pub(super) async fn call(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Failed> {
    let token = super::guard::bearer(&headers);
    let mut req: Request = serde_json::from_slice(&body).map_err(|e| {
        Failed::of(Procedure::Serve)(Error::usage(format!(
            "the body is not a request of the ledger: {e}; send {{\"op\": \"…\", \"args\": {{…}}}}"
        )))
    })?;
    let procedure = req.procedure();
    if let Request::Check(check) = &mut req {
        check.wait = match check.wait {
            Wait::No => Wait::No,
            Wait::Until(limit) => {
                Wait::Until(Some(limit.map_or(LONGEST_WAIT, |l| l.min(LONGEST_WAIT))))
            }
        };
    }
    let reply = app
        .ledger(move |l| {
            let who = ops::authenticate(l, token.as_deref())?;
            ops::call(l, &who, req)
        })
        .await
        .map_err(Failed::of(procedure))?;
    Ok(success_with(reply.passes(), procedure, &reply))
}
