//! `GET /healthz` and `GET /readyz`, for load balancers and orchestrators: no token, no
//! Host check, and nothing said of the ledger but whether it answers.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::App;
use questions_core::error::ErrorCode;
use questions_core::ops;

/// How long the ledger may take to answer `/readyz`'s read.
pub(super) const READY_WITHIN: Duration = Duration::from_secs(2);

/// 200 while the process answers.
pub(super) async fn healthz() -> Response {
    (StatusCode::OK, axum::Json(json!({ "ok": true }))).into_response()
}

/// 200 when the ledger answers a read within `READY_WITHIN` and its migrations are this
/// binary's; 503 with the reason otherwise, and from the signal to stop on.
pub(super) async fn readyz(State(app): State<Arc<App>>) -> Response {
    let not = |reason: String| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({ "ok": false, "reason": reason })),
        )
            .into_response()
    };
    if *app.draining.borrow() {
        return not("draining: this server is stopping".into());
    }
    match tokio::time::timeout(READY_WITHIN, app.ledger(ops::ready)).await {
        Ok(Ok(())) => (StatusCode::OK, axum::Json(json!({ "ok": true }))).into_response(),
        // Its own words name no place or secret; an engine's error might (a host, a
        // role): only its code is said.
        Ok(Err(e)) if e.code == ErrorCode::Unavailable && e.message.starts_with("the ledger") => {
            not(e.message)
        }
        Ok(Err(e)) => not(format!("the ledger does not answer ({})", e.code.as_str())),
        Err(_) => not(format!(
            "the ledger did not answer within {} s",
            READY_WITHIN.as_secs()
        )),
    }
}
