//! `serve`: the web front end. Routes translate pages, forms and JSON into the same
//! operations the command line calls (`questions_core::ops`), and their results into HTML or JSON.
//! The async runtime lives here alone: it is built when `serve` runs, so every other
//! command starts as fast as before. The ledger stays synchronous; each request borrows
//! a `Ledger` from a small pool on a blocking thread.

mod api;
mod guard;
mod health;
mod ledger_api;
mod limit;
#[cfg(feature = "mcp")]
mod mcp;
mod metrics;
mod oauth;
mod page;
pub(crate) mod proxy;
mod reqlog;
pub(crate) mod signin;
pub(crate) use reqlog::Format as LogFormat;
pub(crate) mod tls;
pub(crate) mod votes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tokio::sync::watch;

use self::limit::{Limits, HEADER_TIMEOUT};
use questions_core::error::{Error, Result};
use questions_core::ops::{self, Caller};
use questions_core::ops::{Ledger, Location};

/// The port `serve` listens on unless `--bind` says otherwise (the README names it).
pub(crate) const DEFAULT_PORT: u16 = 8466;

/// The largest request body accepted: far beyond any answer a person types.
pub(crate) const BODY_LIMIT: usize = 64 * 1024;

/// The largest body of a call of the ledger's API (`/v1/call`) from a token the ledger
/// issued: a subagent's whole output to `ingest` (an unauthenticated body stays within
/// `BODY_LIMIT`).
pub(crate) const CALL_BODY_LIMIT: usize = 16 * 1024 * 1024;

pub(crate) struct Config {
    pub bind: SocketAddr,
    pub stage: Option<String>,
    pub caller: Caller,
    pub allow_remote: bool,
    /// A fixed token (`QUESTIONS_SERVE_TOKEN`); else a new one for this start.
    pub token: Option<String>,
    /// People and their own tokens (`--users FILE`): their answers and votes count as
    /// them.
    pub users: Vec<(String, String)>,
    /// `--tls-cert`, `--tls-key`: HTTPS on the same port.
    pub tls: Option<tls::Files>,
    /// `--trusted-proxy`, `--public-url` (as given: checked at start).
    pub trusted_proxy: Vec<String>,
    pub public_url: Option<String>,
    /// `--log-format`: the request log on stderr.
    pub log: LogFormat,
    /// `--drain-seconds`: how long /readyz says 503 before the server stops accepting.
    pub drain: Duration,
    /// `--metrics-bind`: `/metrics` alone, with no token, on an address of its own.
    pub metrics_bind: Option<SocketAddr>,
    /// `--oidc-…`: people sign in with the team's OpenID provider.
    pub signin: Option<signin::Settings>,
}

/// What every request shares.
pub(crate) struct App {
    location: Location,
    stage: Option<String>,
    caller: Caller,
    token: String,
    /// `--users`: each person's name and token.
    users: Vec<(String, String)>,
    /// The address actually bound (port 0 resolved).
    bound: SocketAddr,
    /// Whether it speaks TLS (`https://` is its origin).
    tls: bool,
    /// The ledger's id and its newest event's seq, as the watcher thread last saw them.
    seq: watch::Receiver<(Option<String>, i64)>,
    /// Becomes true when the server is asked to stop: long polls end at once.
    stopping: watch::Receiver<bool>,
    /// The connections open, and the tokens refused, by client (see `limit`).
    limits: Arc<Limits>,
    /// The proxies trusted and the public URL (see `proxy`).
    front: proxy::Front,
    /// Becomes true on SIGTERM or SIGINT: `/readyz` says 503 from then on.
    draining: watch::Receiver<bool>,
    /// The request log (see `reqlog`).
    log: reqlog::Log,
    /// What `/metrics` says (see `metrics`).
    metrics: Arc<metrics::Metrics>,
    /// The OpenID provider people sign in with, if any (see `signin`).
    signin: Option<Arc<signin::Provider>>,
    /// OAuth clients registered this minute (see `oauth`).
    registrations: oauth::Registrations,
}

impl App {
    /// The origin to print and to name in links: the public URL, else the address bound.
    pub(crate) fn origin(&self) -> String {
        if let Some(public) = &self.front.public {
            return public.origin.clone();
        }
        let shown = match self.bound.ip() {
            ip if ip.is_unspecified() => SocketAddr::new([127, 0, 0, 1].into(), self.bound.port()),
            _ => self.bound,
        };
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{shown}")
    }
}

impl App {
    /// Runs `f` on the ledger (see `crate::bridge`).
    pub(crate) async fn ledger<T: Send + 'static>(
        self: &Arc<App>,
        f: impl FnOnce(&mut Ledger) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        crate::bridge::run(self.location.clone(), f).await
    }
}

/// Serves until SIGINT or SIGTERM. Prints the start line once it listens.
pub(crate) fn run(ledger: &mut Ledger, config: Config) -> Result<()> {
    if !config.bind.ip().is_loopback() && !config.allow_remote {
        return Err(Error::usage(format!(
            "--bind {} is not a loopback address: anyone who can reach it could try the \
             inbox. Pass --allow-remote to mean it, or forward a loopback port over SSH \
             (ssh -L {DEFAULT_PORT}:127.0.0.1:{DEFAULT_PORT} host)",
            config.bind
        )));
    }
    let token = match config.token {
        Some(t) if t.trim().chars().count() < 16 => {
            return Err(Error::usage(
                "QUESTIONS_SERVE_TOKEN is shorter than 16 characters: anyone could guess it. \
                 Give a longer one, or leave it unset for a new random token each start",
            ))
        }
        Some(t) => t.trim().to_string(),
        None => new_token()?,
    };
    let proxied_tls = config
        .public_url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://"))
        && !config.trusted_proxy.is_empty();
    if config.allow_remote
        && !config.bind.ip().is_loopback()
        && config.tls.is_none()
        && !proxied_tls
    {
        crate::output::note(&format!(
            "warning: the inbox listens on {} and answers anyone who can reach it and \
             holds the token; the token travels in plain HTTP. Prefer a loopback address \
             with an SSH tunnel, or put it behind a TLS proxy",
            config.bind
        ));
    }
    // It goes into a URL and a cookie as it is.
    let safe = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
    if !token.chars().all(safe) {
        return Err(Error::usage(
            "QUESTIONS_SERVE_TOKEN may hold only letters, digits and - . _ ~ \
             (it goes into a URL and a cookie as it is)",
        ));
    }
    let front = proxy::Front::new(
        &config.trusted_proxy,
        config.public_url.as_deref(),
        config.tls.is_some(),
    )?;
    // A pair that cannot be served is said before anything else happens.
    let acceptor = config.tls.map(tls::acceptor).transpose()?;
    // Behind a proxy the provider sends people back to the public URL: the address this
    // server binds is not where they are.
    if config.signin.is_some() && !config.trusted_proxy.is_empty() && config.public_url.is_none() {
        return Err(Error::usage(
            "--oidc-issuer behind --trusted-proxy needs --public-url: the provider sends \
             people back to https://HOST/signin/callback, which only the public URL names",
        ));
    }
    // /metrics without a token is for a private address: anyone who reaches it reads
    // the stages and how many wait.
    if let Some(at) = config.metrics_bind {
        if !at.ip().is_loopback() && !config.allow_remote {
            return Err(Error::usage(format!(
                "--metrics-bind {at} is not a loopback address: /metrics there needs no \
                 token. Pass --allow-remote to mean it (a private network's scraper)"
            )));
        }
    }
    // As is a provider that cannot be read.
    let signin = config
        .signin
        .map(signin::Provider::discover)
        .transpose()?
        .map(Arc::new);
    // The inbox records answers: open the ledger for writing now (creating it if it is
    // missing), so every reader sees the real ledger from the first request on.
    ops::create(ledger)?;
    raise_open_files();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::io(format!("cannot start the server's runtime: {e}")))?;
    let kept = runtime.block_on(serve(
        ledger.location().clone(),
        config.bind,
        Shared {
            stage: config.stage,
            caller: config.caller,
            token,
            users: config.users,
            front,
            log: config.log,
            drain: config.drain,
            metrics_bind: config.metrics_bind,
            signin,
        },
        acceptor,
    ))?;
    // A PostgreSQL client blocks on a runtime of its own when it closes, which it may not
    // do inside this one: the pool's ledgers close here, after it.
    drop(runtime);
    drop(kept);
    Ok(())
}

/// What `serve` hands every request, as `run` checked it.
struct Shared {
    stage: Option<String>,
    caller: Caller,
    token: String,
    users: Vec<(String, String)>,
    front: proxy::Front,
    log: reqlog::Format,
    drain: Duration,
    metrics_bind: Option<SocketAddr>,
    signin: Option<Arc<signin::Provider>>,
}

async fn serve(
    location: Location,
    bind: SocketAddr,
    shared: Shared,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
) -> Result<Vec<Ledger>> {
    let Shared {
        stage,
        caller,
        token,
        users,
        front,
        log,
        drain,
        metrics_bind,
        signin,
    } = shared;
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| Error::io(format!("cannot listen on {bind}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::io(format!("cannot read the address bound: {e}")))?;
    let (seq_tx, seq) = watch::channel((None, -1));
    let (stop_tx, stopping) = watch::channel(false);
    let (drain_tx, draining) = watch::channel(false);
    let metrics = metrics::Metrics::new();
    spawn_watcher(location.clone(), seq_tx, Arc::clone(&metrics));
    let app = Arc::new(App {
        location,
        stage,
        caller,
        token,
        users,
        bound,
        tls: acceptor.is_some(),
        seq,
        stopping,
        limits: Limits::new(),
        front,
        draining,
        log: reqlog::Log::start(log),
        metrics,
        signin,
        registrations: oauth::Registrations::new(),
    });
    if let Some(at) = metrics_bind {
        let listener = tokio::net::TcpListener::bind(at)
            .await
            .map_err(|e| Error::io(format!("cannot listen on --metrics-bind {at}: {e}")))?;
        let only = Router::new()
            .route(
                "/metrics",
                get(
                    |axum::extract::State(app): axum::extract::State<Arc<App>>| async move {
                        metrics::render(&app).await
                    },
                ),
            )
            .with_state(Arc::clone(&app));
        tokio::spawn(async move {
            let _ = axum::serve(listener, only).await;
        });
    }
    let router = routes(Arc::clone(&app))?;

    let signal = stop_signal()?;
    // On the signal, `/readyz` says 503 at once; requests are served for the grace that
    // lets a load balancer see it, then the listener closes (see `accept`).
    let stop = async move {
        signal.await;
        let _ = drain_tx.send(true);
        if !drain.is_zero() {
            // A second signal means now.
            let again = async {
                match stop_signal() {
                    Ok(again) => again.await,
                    Err(_) => std::future::pending().await,
                }
            };
            tokio::select! {
                () = tokio::time::sleep(drain) => {}
                () = again => {}
            }
        }
    };
    // `listen`: where it listens, which a public URL does not say.
    let url = serde_json::json!({
        "url": format!("{}/?token={}", app.origin(), app.token),
        "listen": bound.to_string(),
    });
    let line = serde_json::to_string(&ops::document(true, ops::Procedure::Serve, &url))
        .unwrap_or_default();
    crate::output::text_out(&format!("{line}\n"));

    accept(listener, router, acceptor, Arc::clone(&app), stop, stop_tx).await;
    Ok(crate::bridge::close())
}

/// Serves connections until `stop` resolves, then lets those in flight finish (long
/// polls end at once: `stopping` is set). Each connection is bounded (see `limit`): its
/// header must arrive within `HEADER_TIMEOUT`, at most `MAX_CONNECTIONS` are open and at
/// most `MAX_PER_CLIENT` from one client, so that half-sent requests cannot use up the
/// process's files, and one address that keeps sending them cannot lock others out.
/// Each request carries its connection's place (`limit::Conn`). With `tls`, the
/// handshake too must end within `HEADER_TIMEOUT`.
async fn accept(
    listener: tokio::net::TcpListener,
    router: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    app: Arc<App>,
    stop: impl std::future::Future<Output = ()>,
    stopping: watch::Sender<bool>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let limits = Arc::clone(&app.limits);
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => if let Ok(accepted) = accepted {
                accepted
            } else {
                // Out of files, say: the connections in flight end and free some.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            },
            () = &mut stop => break,
        };
        // A trusted proxy brings everyone behind it: its connections are not one client's.
        let Some(place) = limits.admit(peer.ip(), app.front.trusts(peer.ip())) else {
            drop(stream);
            continue;
        };
        // A reply, and each step of a TLS handshake, goes out whole at once: with Nagle's
        // algorithm a small write waited for the client's delayed ACK, 40 ms a call.
        let _ = stream.set_nodelay(true);
        let conn = limit::Conn(Arc::new(place));
        let inner = hyper_util::service::TowerToHyperService::new(router.clone());
        let held = conn.clone();
        let app = Arc::clone(&app);
        let service = hyper::service::service_fn(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                let seen = app.front.seen(peer.ip(), request.headers());
                request.extensions_mut().insert(seen);
                request.extensions_mut().insert(held.clone());
                hyper::service::Service::call(&inner, request)
            },
        );
        let mut ending = stopping.subscribe();
        let acceptor = tls.clone();
        tokio::spawn(async move {
            let ended = async move {
                let _ = ending.wait_for(|s| *s).await;
            };
            let stream: Box<dyn tls::Stream> = match acceptor {
                None => Box::new(stream),
                Some(acceptor) => {
                    match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => Box::new(stream),
                        // A handshake that fails or takes too long ends the connection.
                        _ => return,
                    }
                }
            };
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = ended => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(conn);
        });
    }
    let _ = stopping.send(true);
    // Every connection gives its place back when it has finished.
    limits.drained(Duration::from_secs(5)).await;
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

fn routes(app: Arc<App>) -> Result<Router> {
    let router = Router::new()
        .route("/", get(page::inbox))
        .route("/q/{id}/answer", post(page::answer))
        .route("/q/{id}/skip", post(page::skip))
        .route("/q/{id}/decline", post(page::decline))
        .route("/q/{id}/accept", post(page::accept))
        .route("/q/{id}/approve", post(votes::approve_form))
        .route("/q/{id}/reject", post(votes::reject_form))
        .route("/assets/inbox.css", get(page::css))
        .route("/assets/inbox.js", get(page::js))
        .route("/api/questions", get(api::list))
        .route("/api/questions/{id}/answer", post(api::answer))
        .route("/api/questions/{id}/skip", post(api::skip))
        .route("/api/questions/{id}/decline", post(api::decline))
        .route("/api/questions/{id}/approve", post(votes::approve))
        .route("/api/questions/{id}/reject", post(votes::reject))
        .route("/api/changes", get(api::changes))
        .route("/v1/call", post(ledger_api::call))
        .route("/metrics", get(metrics::metrics))
        .route("/signin", get(signin::start))
        .route("/signin/callback", get(signin::callback))
        .route("/signout", post(signin::sign_out))
        .route(
            "/device",
            get(signin::device_page).post(signin::device_decide),
        )
        .route("/oauth/device", post(signin::device_start))
        .route("/oauth/token", post(signin::token))
        .route("/oauth/revoke", post(signin::revoke))
        .route("/oauth/register", post(oauth::register))
        .route(
            "/oauth/authorize",
            get(oauth::authorize).post(oauth::decide),
        )
        .route(
            "/.well-known/oauth-protected-resource",
            get(oauth::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(oauth::protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(oauth::authorization_server),
        );
    #[cfg(feature = "mcp")]
    let router = router.merge(mcp::routes(&app)?);
    // Health and readiness need no token and pass no Host check: they say nothing of the
    // ledger but whether it answers.
    Ok(router
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            guard::guard,
        ))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            reqlog::observe,
        ))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(app))
}

/// Follows the ledger on a thread of its own: each new event's seq is published, and
/// long-polling pages wake on it. Expiries that fall due are applied here too, so a
/// question whose time ran out leaves the inbox without anyone looking.
/// A ledger reset or replaced has another id (and its seqs start again): pages reload.
fn spawn_watcher(
    location: Location,
    seq: watch::Sender<(Option<String>, i64)>,
    metrics: Arc<metrics::Metrics>,
) {
    // The events after this one are counted in the metrics (none of those before).
    let mut seen: Option<(Option<String>, i64)> = None;
    std::thread::spawn(move || loop {
        let mut ledger = Ledger::new(location.clone());
        let followed = ops::follow(&mut ledger, None, ops::READ_AGAIN_AFTER, |ledger, _| {
            ops::settle(ledger)?;
            let last = (ledger.id()?, ops::last_seq(ledger)?);
            match &seen {
                Some((id, after)) if *id == last.0 && *after < last.1 => {
                    if let Ok(page) = ops::events(ledger, *after, None, 1000) {
                        metrics.decided(&page.events);
                    }
                }
                _ => {}
            }
            seen = Some(last.clone());
            seq.send_if_modified(|s| {
                let changed = *s != last;
                *s = last;
                changed
            });
            Ok(if seq.is_closed() {
                ops::Step::Done(())
            } else {
                ops::Step::Wait(())
            })
        });
        match followed {
            Ok(()) => return,
            // A ledger that cannot be read now is opened again in a moment.
            Err(_) => std::thread::sleep(Duration::from_secs(1)),
        }
        if seq.is_closed() {
            return;
        }
    });
}

/// Lets the process open as many files as its hard limit allows: the connections of
/// tokens' waiters (`limit::MAX_WITH_TOKEN`) are more than the usual soft limit of 1024.
/// Where it cannot, accepting waits for connections to end (see `accept`).
fn raise_open_files() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: both calls read or write the one struct given, which outlives them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) == 0
            && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit);
        }
    }
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
