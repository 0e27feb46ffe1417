//! `serve`: the web front end. Routes translate pages, forms and JSON into the same
//! operations the command line calls (`crate::ops`), and their results into HTML or JSON.
//! The async runtime lives here alone: it is built when `serve` runs, so every other
//! command starts as fast as before. The ledger stays synchronous; each request borrows
//! a `Ledger` from a small pool on a blocking thread.

mod api;
mod guard;
mod html;
mod markdown;
mod page;
pub(crate) mod strings;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::ops::{self, Caller};
use crate::store::{Ledger, Location};

/// The port `serve` listens on unless `--bind` says otherwise (the README names it).
pub const DEFAULT_PORT: u16 = 8466;
pub const DEFAULT_BIND: &str = "127.0.0.1:8466";

/// The largest request body accepted: far beyond any answer a person types.
pub const BODY_LIMIT: usize = 64 * 1024;

pub struct Config {
    pub bind: SocketAddr,
    pub stage: Option<String>,
    pub caller: Caller,
    pub allow_remote: bool,
    /// A fixed token (`QUESTIONS_SERVE_TOKEN`); else a new one for this start.
    pub token: Option<String>,
}

/// What every request shares.
pub(crate) struct App {
    pool: Pool,
    stage: Option<String>,
    caller: Caller,
    token: String,
    /// The address actually bound (port 0 resolved).
    bound: SocketAddr,
    /// The newest event's seq, as the watcher thread last saw it.
    seq: watch::Receiver<i64>,
    /// Becomes true when the server is asked to stop: long polls end at once.
    stopping: watch::Receiver<bool>,
}

/// Ledgers kept open between requests, so a request costs no open (pragmas, schema check).
struct Pool {
    location: Location,
    idle: Mutex<Vec<Ledger>>,
}

/// How many idle ledgers are kept; more are opened under load and dropped after.
const POOL_IDLE: usize = 16;

impl Pool {
    fn with<T>(&self, f: impl FnOnce(&mut Ledger) -> Result<T>) -> Result<T> {
        let taken = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let mut ledger = taken.unwrap_or_else(|| Ledger::new(self.location.clone()));
        let out = f(&mut ledger);
        // A ledger whose connection failed is not handed out again.
        let healthy = !matches!(&out, Err(e) if e.code == crate::error::ErrorCode::DbError);
        if healthy {
            if let Ok(mut idle) = self.idle.lock() {
                if idle.len() < POOL_IDLE {
                    idle.push(ledger);
                }
            }
        }
        out
    }
}

impl App {
    /// Runs `f` on a pooled ledger on a blocking thread: the ledger is synchronous.
    pub(crate) async fn ledger<T: Send + 'static>(
        self: &Arc<App>,
        f: impl FnOnce(&mut Ledger) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let app = Arc::clone(self);
        tokio::task::spawn_blocking(move || app.pool.with(f))
            .await
            .map_err(|_| Error::db("internal error: a request stopped before it finished"))?
    }
}

/// Serves until SIGINT or SIGTERM. Prints the start line once it listens.
pub fn run(ledger: &mut Ledger, config: Config) -> Result<()> {
    if !config.bind.ip().is_loopback() && !config.allow_remote {
        return Err(Error::usage(format!(
            "--bind {} is not a loopback address: anyone who can reach it could try the \
             inbox. Pass --allow-remote to mean it, or forward a loopback port over SSH \
             (ssh -L {DEFAULT_PORT}:127.0.0.1:{DEFAULT_PORT} host)",
            config.bind
        )));
    }
    let token = match config.token {
        Some(t) => t.trim().to_string(),
        None => new_token()?,
    };
    // It goes into a URL and a cookie as it is.
    let safe = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
    if !token.chars().all(safe) {
        return Err(Error::usage(
            "QUESTIONS_SERVE_TOKEN may hold only letters, digits and - . _ ~ \
             (it goes into a URL and a cookie as it is)",
        ));
    }
    // The inbox records answers: open the ledger for writing now (creating it if it is
    // missing), so every reader sees the real ledger from the first request on.
    ops::create(ledger)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::io(format!("cannot start the server's runtime: {e}")))?;
    let kept = runtime.block_on(serve(
        ledger.location().clone(),
        config.bind,
        config.stage,
        config.caller,
        token,
    ))?;
    // A PostgreSQL client blocks on a runtime of its own when it closes, which it may not
    // do inside this one: the pool's ledgers close here, after it.
    drop(runtime);
    drop(kept);
    Ok(())
}

async fn serve(
    location: Location,
    bind: SocketAddr,
    stage: Option<String>,
    caller: Caller,
    token: String,
) -> Result<Vec<Ledger>> {
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| Error::io(format!("cannot listen on {bind}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::io(format!("cannot read the address bound: {e}")))?;
    let (seq_tx, seq) = watch::channel(-1);
    let (stop_tx, stopping) = watch::channel(false);
    spawn_watcher(location.clone(), seq_tx);
    let app = Arc::new(App {
        pool: Pool {
            location,
            idle: Mutex::new(Vec::new()),
        },
        stage,
        caller,
        token,
        bound,
        seq,
        stopping,
    });
    let router = routes(Arc::clone(&app));

    let shown = match bound.ip() {
        ip if ip.is_unspecified() => SocketAddr::new([127, 0, 0, 1].into(), bound.port()),
        _ => bound,
    };
    let stop = stop_signal()?;
    let line = serde_json::json!({
        "ok": true,
        "procedure": "serve",
        "url": format!("http://{shown}/?token={}", app.token),
    });
    crate::output::text_out(&format!("{line}\n"));

    let shutdown = async move {
        stop.await;
        let _ = stop_tx.send(true);
    };
    let server = axum::serve(listener, router).with_graceful_shutdown(shutdown);
    server
        .await
        .map_err(|e| Error::io(format!("the server stopped: {e}")))?;
    let kept = app
        .pool
        .idle
        .lock()
        .map(|mut idle| std::mem::take(&mut *idle));
    Ok(kept.unwrap_or_default())
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is called, so a
/// signal sent as soon as the start line is read is not lost.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let failed = |e: std::io::Error| Error::io(format!("cannot handle signals: {e}"));
    let mut term = signal(SignalKind::terminate()).map_err(failed)?;
    let mut int = signal(SignalKind::interrupt()).map_err(failed)?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

fn routes(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(page::inbox))
        .route("/q/{id}/answer", post(page::answer))
        .route("/q/{id}/skip", post(page::skip))
        .route("/q/{id}/decline", post(page::decline))
        .route("/q/{id}/accept", post(page::accept))
        .route("/assets/inbox.css", get(page::css))
        .route("/assets/inbox.js", get(page::js))
        .route("/api/questions", get(api::list))
        .route("/api/questions/{id}/answer", post(api::answer))
        .route("/api/questions/{id}/skip", post(api::skip))
        .route("/api/questions/{id}/decline", post(api::decline))
        .route("/api/changes", get(api::changes))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            guard::guard,
        ))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(app)
}

/// Follows the ledger on a thread of its own: each new event's seq is published, and
/// long-polling pages wake on it. Expiries that fall due are applied here too, so a
/// question whose time ran out leaves the inbox without anyone looking.
fn spawn_watcher(location: Location, seq: watch::Sender<i64>) {
    std::thread::spawn(move || {
        let mut ledger = Ledger::new(location.clone());
        loop {
            let seen = ops::settle(&mut ledger).and_then(|_| ops::last_seq(&mut ledger));
            match seen {
                Ok(last) => {
                    seq.send_if_modified(|s| std::mem::replace(s, last) != last);
                    let _ = ledger.wait_for_change(Duration::from_secs(1));
                }
                Err(_) => {
                    std::thread::sleep(Duration::from_secs(1));
                    ledger = Ledger::new(location.clone());
                }
            }
            if seq.is_closed() {
                return;
            }
        }
    });
}

/// 32 random bytes from the kernel, as hex.
fn new_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::io(format!("cannot read random bytes for the token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
