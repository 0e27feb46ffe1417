//! The request log: one line a request on stderr (`--log-format text|json|none`) with the
//! client (as `proxy` decides), the method, the path without its query (which may hold a
//! token), the status, the time taken, and who made it: the token's name and role. Never
//! a secret, a body or a query string.
//!
//! Lines go through a bounded queue to a thread of their own: a stderr nobody reads never
//! holds a request up; past `QUEUED` lines waiting, new ones are dropped and counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::proxy::Seen;
use super::App;

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
    None,
}

/// The most lines waiting to be written.
const QUEUED: usize = 4096;

pub(super) struct Log {
    format: Format,
    lines: Option<SyncSender<String>>,
    dropped: AtomicU64,
}

impl Log {
    pub(super) fn start(format: Format) -> Log {
        let lines = (format != Format::None).then(|| {
            let (tx, rx) = sync_channel::<String>(QUEUED);
            std::thread::spawn(move || {
                use std::io::Write;
                for line in rx {
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            });
            tx
        });
        Log {
            format,
            lines,
            dropped: AtomicU64::new(0),
        }
    }

    fn write(&self, line: String) {
        if let Some(lines) = &self.lines {
            if let Err(TrySendError::Full(_)) = lines.try_send(line) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Lines dropped because the queue was full.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Who made a request, as the check of its token found: filled in by the guard, the
/// ledger's API and MCP, read by the log once the response is ready.
#[derive(Clone, Default)]
pub(crate) struct Actor(Arc<Mutex<Option<(String, &'static str)>>>);

impl Actor {
    pub(crate) fn set(&self, name: &str, role: &'static str) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((name.to_string(), role));
    }

    pub(crate) fn get(&self) -> Option<(String, &'static str)> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The name and role of a token's holder.
    pub(crate) fn principal(&self, who: &questions_core::ops::Principal) {
        use questions_core::ops::Principal;
        match who {
            Principal::Agent(agent) => self.set(&agent.name, "agent"),
            Principal::Person(person) => self.set(&person.name, "person"),
            Principal::Direct(_) => self.set("", "operator"),
        }
    }
}

/// Times every request and writes its line.
pub(super) async fn observe(
    State(app): State<Arc<App>>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let actor = Actor::default();
    request.extensions_mut().insert(actor.clone());
    let client = request
        .extensions()
        .get::<Seen>()
        .map(|s| s.client.to_string())
        .unwrap_or_default();
    let method = request.method().to_string();
    let path = request.uri().path().to_string();
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "other".to_string(), |m| m.as_str().to_string());
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    super::metrics::request(&app, &route, status, elapsed, &actor, &response);
    if app.log.format == Format::None {
        return response;
    }
    let (who, role) = actor.get().unwrap_or_default();
    let role = if role.is_empty() { "none" } else { role };
    let ms = elapsed.as_secs_f64() * 1000.0;
    let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let line = match app.log.format {
        Format::Json => serde_json::json!({
            "time": time,
            "client": client,
            "method": method,
            "path": path,
            "route": route,
            "status": status,
            "ms": (ms * 10.0).round() / 10.0,
            "who": who,
            "role": role,
        })
        .to_string(),
        _ => format!(
            "{time} {client} {method} {} {status} {ms:.1}ms who={} role={role}",
            path.escape_default(),
            if who.is_empty() { "-" } else { who.as_str() }.escape_default(),
        ),
    };
    app.log.write(line);
    response
}
