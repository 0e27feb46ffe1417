//! The MCP front end: `questions mcp` serves the ledger's operations as Model Context
//! Protocol tools on stdio. Each tool translates its input into the same operations the
//! command line calls, and their results into structured content; stdout carries JSON-RPC
//! only. The ledger is synchronous: every operation runs on a blocking thread (see
//! `crate::bridge`), so a tool that waits never holds up another.

mod app;
mod form;
#[cfg(feature = "serve")]
pub(crate) mod http;
mod inbox;
mod rounds;
mod stdio;
mod tasks;
pub(crate) mod tools;

use std::time::Duration;

use rmcp::ServiceExt;

use questions_core::error::{Error, Result};
use questions_core::ops::{Ledger, Location};

/// The longest any tool waits: below the request timeouts of common clients (60 s), so a
/// wait ends with an answer, never with the client giving up.
pub(crate) const MOST_WAIT: Duration = Duration::from_secs(50);

/// Serves until the client closes stdin. The runtime is built here, for this command
/// alone.
pub(crate) fn serve(
    location: Location,
    user: Option<String>,
    votes: bool,
    inbox_url: Option<String>,
) -> Result<()> {
    let inbox = inbox::Inbox::parse(inbox_url)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io(format!("cannot start the MCP server: {e}")))?;
    let served = runtime.block_on(async move {
        let server = tools::Server::new(location)?
            .with_user(user, votes)
            .with_inbox(inbox);
        let running = server
            .serve(stdio::transport())
            .await
            .map_err(|e| Error::io(format!("the MCP client did not initialize: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| Error::io(format!("the MCP session ended in error: {e}")))?;
        Ok(())
    });
    // An operation still running (a wait the client no longer waits for) is not waited
    // for; the ledgers kept open close after the runtime (see `crate::bridge`).
    runtime.shutdown_background();
    drop(crate::bridge::close());
    served
}

/// Runs an operation on the ledger (see `crate::bridge`).
async fn blocking<T: Send + 'static>(
    location: Location,
    op: impl FnOnce(&mut Ledger) -> Result<T> + Send + 'static,
) -> Result<T> {
    crate::bridge::run(location, op).await
}
