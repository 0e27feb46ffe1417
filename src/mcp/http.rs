//! The tools over MCP's Streamable HTTP transport (§16), for `serve` to answer at `/mcp`:
//! the same server as on stdio, run by rmcp's own HTTP service. A 2025-11-25 client gets
//! a session (held in this process: after a restart the client starts a new one, and the
//! ledger has lost nothing); a 2026-07-28 client is served statelessly, each request on
//! its own. Every call acts for the token its request carried, which `serve`
//! authenticated and put in the request (`tools::Server::principal`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use questions_core::error::Result;
use questions_core::ops::Location;

/// The MCP service of a ledger. `body_limit` bounds a request's body; `stopping` turning
/// true ends every session and stream (the server is stopping). Call it on the runtime.
pub(crate) fn service(
    location: Location,
    body_limit: usize,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<StreamableHttpService<super::tools::Server, LocalSessionManager>> {
    // One server for every session, so that a form's sealed state (its key is the
    // server's) is redeemed by whichever request comes back with it.
    let server = super::tools::Server::new(location)?.remote();
    let config = StreamableHttpServerConfig::default()
        // `serve` checks the Host and Origin of every request itself (§10), the same for
        // `/mcp` as for its other routes, against the address it was bound to.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(body_limit)
        // A comment on the stream this often, so that proxies see it alive while a wait
        // runs (progress notifications say more when the client asked for them).
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        // No priming event (an event of empty data that names a retry interval, for a
        // client to resume a stream from): the TypeScript SDK in Gemini CLI 0.61 parses
        // its empty data as JSON, fails, and drops the server. Without a store of events
        // a stream cannot be resumed anyway: a call cut off is called again.
        .with_sse_retry(None);
    let stop = config.cancellation_token.clone();
    tokio::spawn(async move {
        let _ = stopping.wait_for(|s| *s).await;
        stop.cancel();
    });
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.sse_retry = None;
    Ok(StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(sessions),
        config,
    ))
}
