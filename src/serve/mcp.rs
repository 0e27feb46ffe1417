//! MCP over HTTP (§16): `/mcp` answers MCP's Streamable HTTP transport with the tools of
//! `questions mcp` (see `crate::mcp::http`), for agents that cannot start a process. A
//! request must carry a token the ledger issued (`Authorization: Bearer qtok_…`), read
//! anew at every request as `/v1/call` reads it: its holder is the principal every tool
//! call acts for. Without a valid one the answer is 401 with the one message of §15. Only
//! a server that signs people in (`--oidc-issuer`) names its OAuth metadata there (a
//! `WWW-Authenticate` naming a resource, see `oauth`): a host that sees it drops the
//! bearer header its user configured and signs in, which another server does not offer.
//!
//! Refused tokens and connections are counted as `/v1/call` counts them (see `limit`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::Extension;
use axum::Router;

use super::limit::Conn;
use super::{App, BODY_LIMIT};
use questions_core::error::Result;
use questions_core::ops::Procedure;

/// The `/mcp` route: rmcp's service behind the token check.
pub(super) fn routes(app: &Arc<App>) -> Result<Router<Arc<App>>> {
    let service =
        crate::mcp::http::service(app.location.clone(), BODY_LIMIT, app.stopping.clone())?;
    Ok(Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(app),
            authenticate,
        )))
}

/// Puts the request's token holder in the request (`ops::Principal`), or answers 401.
async fn authenticate(
    State(app): State<Arc<App>>,
    Extension(conn): Extension<Conn>,
    Extension(seen): Extension<super::proxy::Seen>,
    mut request: Request,
    next: Next,
) -> Response {
    let client = seen.client;
    let token = super::guard::bearer(request.headers());
    let who = match super::ledger_api::principal(&app, client, token, Procedure::Serve).await {
        Ok(who) => who,
        Err(mut refused) => {
            // The body is read before the refusal goes, so that the connection stays
            // usable: a client that sends its next request on it (a host signing in after
            // this 401) would otherwise race the close.
            let _ = axum::body::to_bytes(request.into_body(), BODY_LIMIT).await;
            // Where hosts may sign in, the 401 says where to learn how (RFC 9728).
            if refused.status() == axum::http::StatusCode::UNAUTHORIZED {
                if let Some(how) = super::oauth::challenge(&app) {
                    refused
                        .headers_mut()
                        .insert(axum::http::header::WWW_AUTHENTICATE, how);
                }
            }
            return refused;
        }
    };
    if let Some(actor) = request.extensions().get::<super::reqlog::Actor>() {
        actor.principal(&who);
    }
    let name = super::ledger_api::holder(&who);
    if let Some(busy) = super::ledger_api::admitted(&app, &conn, &name) {
        return busy;
    }
    request.extensions_mut().insert(who);
    let limits = Arc::clone(&app.limits);
    request
        .extensions_mut()
        .insert(crate::mcp::tools::Refused(Arc::new(move || {
            limits.forbidden(&name);
        })));
    next.run(request).await
}
