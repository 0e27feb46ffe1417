//! The MCP front end: `questions mcp` serves the ledger's operations as Model Context
//! Protocol tools on stdio. Each tool translates its input into the same operations the
//! command line calls, and their results into structured content; stdout carries JSON-RPC
//! only. The ledger is synchronous: every operation runs on a thread of its own with a
//! `Ledger` of its own (see `blocking`), so a tool that waits never holds up another.

mod app;
mod form;
mod inbox;
mod rounds;
mod stdio;
mod tasks;
mod tools;

use std::time::Duration;

use rmcp::ServiceExt;

use crate::error::{Error, Result};
use crate::store::{Ledger, Location};

/// The longest any tool waits: below the request timeouts of common clients (60 s), so a
/// wait ends with an answer, never with the client giving up.
pub const MOST_WAIT: Duration = Duration::from_secs(50);

/// Serves until the client closes stdin. The runtime is built here, for this command
/// alone.
pub fn serve(
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
    runtime.block_on(async move {
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
    })
}

/// Runs an operation on a thread of its own with a ledger of its own. Not tokio's blocking
/// pool: its threads carry the runtime's context, where the PostgreSQL client (which runs
/// a runtime of its own inside) refuses to start.
async fn blocking<T: Send + 'static>(
    location: Location,
    op: impl FnOnce(&mut Ledger) -> Result<T> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("questions-op".into())
        .spawn(move || {
            let _ = tx.send(op(&mut Ledger::new(location)));
        })
        .map_err(|e| Error::io(format!("cannot start a thread for the operation: {e}")))?;
    rx.await
        .map_err(|_| Error::db("internal error: the operation stopped before it finished"))?
}
