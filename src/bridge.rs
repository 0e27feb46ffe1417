//! The one bridge from the async front ends (`mcp`, `serve`) to the synchronous ledger.
//! An operation runs on tokio's blocking pool (never on a task of the runtime, which it
//! would hold up), with a ledger kept open between operations, so that a call on a file
//! costs no open (pragmas, schema check); a PostgreSQL ledger kept idle holds no
//! connection (a call logs in again), so that idle front ends take none of the server's.
//! A ledger kept open is first made to follow a reset or a replaced file; one whose
//! connection failed is not used again.
//!
//! A PostgreSQL client closes by blocking on a runtime of its own, which it may not do on
//! a task: ledgers are dropped on the blocking threads, and the ones still kept when the
//! front end ends are handed back by `close` to be dropped after its runtime.

use std::sync::Mutex;

use questions_core::error::{Error, ErrorCode, Result};
use questions_core::ops::{Ledger, Location};

/// How many idle ledgers are kept; more are opened under load and dropped after.
const IDLE: usize = 16;

/// The ledgers kept open, of whatever location the process serves.
static IDLE_LEDGERS: Mutex<Vec<Ledger>> = Mutex::new(Vec::new());

/// The ledgers of the looks of held waits (`serve`'s long polls), which take turns a few
/// at a time: kept with their connections, since a thousand waiters woken at once would
/// otherwise each log in to a PostgreSQL server again.
#[cfg(feature = "serve")]
static LOOKING_LEDGERS: Mutex<Vec<Ledger>> = Mutex::new(Vec::new());

/// Runs `op` on a blocking thread with a ledger of `location`.
pub(crate) async fn run<T: Send + 'static>(
    location: Location,
    op: impl FnOnce(&mut Ledger) -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(move || with_ledger(&IDLE_LEDGERS, false, location, op))
        .await
        .map_err(|_| Error::db("internal error: the operation stopped before it finished"))?
}

/// As `run`, for a held wait's look: the callers bound how many run at once, and the
/// ledgers keep their connections between looks.
#[cfg(feature = "serve")]
pub(crate) async fn look<T: Send + 'static>(
    location: Location,
    op: impl FnOnce(&mut Ledger) -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(move || with_ledger(&LOOKING_LEDGERS, true, location, op))
        .await
        .map_err(|_| Error::db("internal error: the operation stopped before it finished"))?
}

fn with_ledger<T>(
    kept: &Mutex<Vec<Ledger>>,
    connected: bool,
    location: Location,
    op: impl FnOnce(&mut Ledger) -> Result<T>,
) -> Result<T> {
    let taken = kept.lock().ok().and_then(|mut idle| {
        let at = idle.iter().position(|l| *l.location() == location)?;
        Some(idle.swap_remove(at))
    });
    let mut ledger = taken.unwrap_or_else(|| Ledger::new(location));
    let out = ledger.follow().and_then(|_| op(&mut ledger));
    let healthy = !matches!(&out, Err(e) if e.code == ErrorCode::DbError);
    if healthy {
        // Kept idle, it holds no connection to a PostgreSQL server: however many `mcp`
        // and `serve` processes run, they leave the server's connections to writes.
        if !connected {
            ledger.idle();
        }
        if let Ok(mut idle) = kept.lock() {
            if idle.len() < IDLE {
                idle.push(ledger);
            }
        }
    }
    out
}

/// The ledgers still kept, for the front end to drop once its runtime is gone.
pub(crate) fn close() -> Vec<Ledger> {
    let mut all = Vec::new();
    #[cfg(feature = "serve")]
    let kept = [&IDLE_LEDGERS, &LOOKING_LEDGERS];
    #[cfg(not(feature = "serve"))]
    let kept = [&IDLE_LEDGERS];
    for ledgers in kept {
        if let Ok(mut idle) = ledgers.lock() {
            all.append(&mut idle);
        }
    }
    all
}
