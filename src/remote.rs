//! A ledger served by `questions serve` (§15): `--db https://HOST[:PORT][/PREFIX]`. The
//! command line sends the very requests of the core's door (`ops::Request`) to the
//! server's `POST /v1/call` with a token the ledger issued, and prints the document the
//! server answers with: the server runs the operation, so no rule is written twice.
//!
//! - The token comes from `QUESTIONS_TOKEN`, or the file `QUESTIONS_TOKEN_FILE` names
//!   (which only its owner may read): never a flag, never printed.
//! - The server's certificate is verified against the webpki roots, or, when
//!   `QUESTIONS_CA` names a PEM file, against that file's certificates; nothing turns the
//!   check off. `http://` is accepted for a loopback host only.
//! - `HTTPS_PROXY`, `https_proxy`, `ALL_PROXY` (and `HTTP_PROXY`) and `NO_PROXY` are read
//!   as ureq reads them.
//! - Every invocation draws a key of its own (`Idempotency-Key`) and sends it with each
//!   attempt: a change sent again after a lost reply gets the first result.
//! - A wait is a long poll of at most `LONGEST_WAIT`, sent again until the call's own
//!   `--timeout`; a waiter whose server goes out of reach after it answered (a restart)
//!   tries again, saying so once, until it is back or the timeout.

use std::io::Read;
use std::time::{Duration, Instant};

pub(crate) mod login;
pub(crate) mod mcp;

use serde_json::Value;

use questions_core::error::{Error, ErrorCode, Result};
use questions_core::ops::{CheckRequest, Reply, Request, Wait};

/// The longest one call waits on the server (its own bound is the same): a wait is sent
/// again until its `--timeout`.
const LONGEST_WAIT: Duration = Duration::from_secs(50);
/// How long a call that does not wait may take, connecting included; a large one more
/// (see `BYTES_A_SECOND`).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// A second more for every this many bytes of a request: an ingest of 40 000 questions
/// or an import of their answers (a megabyte each) is written as one transaction, which
/// a loaded server takes longer than 30 s over; the 16 MiB a call may carry, four minutes.
const BYTES_A_SECOND: usize = 64 * 1024;
/// Attempts of one call when the connection fails (a reply lost on the way among them).
const ATTEMPTS: u32 = 4;
/// The largest reply read: a long `list` or `history`.
const REPLY_LIMIT: u64 = 256 * 1024 * 1024;

/// The reply `req` got, read back from the server's document `doc` (see
/// `ops::Reply::read`): what a command goes on from, as from the ledger's own.
pub(crate) fn read(req: &Request, doc: Value) -> Result<Reply> {
    Reply::read(req, doc)
        .ok_or_else(|| Error::db("internal error: a request that never crosses a wire was sent"))?
        .map_err(|e| {
            Error::new(
                ErrorCode::Unavailable,
                format!(
                    "the ledger's server answered with a document this version cannot read: {e}"
                ),
            )
        })
}

/// Whether `--db` names a server rather than a file or a database.
pub(crate) fn is_remote(db: &std::ffi::OsStr) -> bool {
    let text = db.to_string_lossy();
    let lower = text.trim().get(..8).unwrap_or("").to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// A server's ledger, and how this invocation reaches it.
pub(crate) struct Remote {
    /// `scheme://host[:port][/prefix]`, no trailing slash.
    base: String,
    /// `host[:port]`, as errors name it.
    host: String,
    token: String,
    /// Whether the token is this user's `questions login` (see `login`).
    logged_in: bool,
    agent: ureq::Agent,
    /// This invocation's idempotency key.
    key: String,
}

impl Remote {
    /// The server `db` names, with the token of the environment.
    pub(crate) fn new(db: &std::ffi::OsStr) -> Result<Remote> {
        let text = db.to_str().map(str::trim).ok_or_else(|| {
            Error::usage("the ledger's URL is not valid UTF-8: write https://HOST[:PORT][/PREFIX]")
        })?;
        let (base, host) = parse(text)?;
        let (token, logged_in) = token(&base)?;
        Ok(Remote {
            base,
            host,
            token,
            logged_in,
            agent: crate::client::agent()?,
            key: hex(&random(16)?),
        })
    }

    /// The URL this ledger is named by (no token in it, ever).
    pub(crate) fn url(&self) -> &str {
        &self.base
    }

    /// Sends `req` and returns the server's document: a success (`"ok"` may still be
    /// false: a gate that fails), or its failure as the error it names. A wait is sent
    /// again, in polls of at most `LONGEST_WAIT`, until its own limit.
    pub(crate) fn call(&self, req: Request) -> Result<Value> {
        self.call_once(req).map_err(|e| {
            if e.code == ErrorCode::Unauthorized && self.logged_in {
                // The server says one thing for every refused token; this one is known.
                Error::new(
                    ErrorCode::Unauthorized,
                    format!(
                        "your login to {} has ended (it was revoked, or a person's \
                         sessions were): questions login {}",
                        self.host, self.base
                    ),
                )
            } else {
                e
            }
        })
    }

    fn call_once(&self, mut req: Request) -> Result<Value> {
        match &mut req {
            Request::Log { key, .. }
            | Request::Ingest { key, .. }
            | Request::Clear { key, .. }
            | Request::Delivered { key, .. } => {
                *key = Some(self.key.clone());
            }
            Request::Change(change) => change.key = Some(self.key.clone()),
            _ => {}
        }
        let Request::Check(CheckRequest {
            wait: Wait::Until(limit),
            ..
        }) = &req
        else {
            return self.send(&req, CALL_TIMEOUT);
        };
        let deadline = limit.map(|l| Instant::now() + l);
        let mut reach = Reach::default();
        loop {
            let poll = poll_within(deadline);
            if let Request::Check(check) = &mut req {
                check.wait = Wait::Until(Some(poll));
            }
            let doc = self.poll(&req, poll, deadline, &mut reach)?;
            let timed_out = doc["timed_out"] == Value::Bool(true);
            let over = deadline.is_some_and(|d| Instant::now() >= d);
            if doc["ok"] == Value::Bool(true) || !timed_out || over {
                return Ok(doc);
            }
        }
    }

    /// One request of a follower or a waiter (`events --follow`, a hook's wait), the
    /// server's wait (at most `LONGEST_WAIT`) its own. A `patient` one is sent again
    /// while the server is out of reach (a restart, a dropped connection: said once on
    /// stderr) until `deadline`; another fails as any call does.
    pub(crate) fn follow(
        &self,
        req: &Request,
        deadline: Option<Instant>,
        reach: &mut Reach,
        patient: bool,
    ) -> Result<Value> {
        let wait = match req {
            Request::Events { wait, .. } | Request::HarnessCall { wait, .. } => {
                wait.unwrap_or_default().min(LONGEST_WAIT)
            }
            _ => Duration::ZERO,
        };
        if patient {
            self.poll(req, wait, deadline, reach)
        } else {
            self.send(req, wait + CALL_TIMEOUT)
        }
    }

    fn poll(
        &self,
        req: &Request,
        wait: Duration,
        deadline: Option<Instant>,
        reach: &mut Reach,
    ) -> Result<Value> {
        loop {
            let error = match self.attempt(req, wait + CALL_TIMEOUT) {
                Ok(doc) => {
                    if let Some((since, _)) = reach.lost.take() {
                        crate::output::note(&format!(
                            "the ledger's server {} is within reach again (after {:.0} s); \
                             still waiting",
                            self.host,
                            since.elapsed().as_secs_f64()
                        ));
                    }
                    reach.reached = true;
                    return Ok(doc);
                }
                // A server that was there comes back (one that took the request and cut
                // it, a restart, was there); one that never answered is more likely a
                // wrong URL, and a certificate refused is refused again.
                Err(Attempt::Cut(e)) => e,
                Err(Attempt::Lost(e)) if reach.reached => e,
                Err(Attempt::Lost(e) | Attempt::Final(e)) => return Err(e),
                // The server slowed the call (429): the wait goes on once it says.
                Err(Attempt::Busy(e, wait)) => {
                    let now = Instant::now();
                    if deadline.is_some_and(|d| now + wait >= d) {
                        return Err(e);
                    }
                    reach.reached = true;
                    crate::output::note(&format!("{}; waiting on", e.message));
                    std::thread::sleep(wait);
                    continue;
                }
                // A server that stops let go of the wait: it is sent again (through a
                // load balancer, to another server), with nothing to say.
                Err(Attempt::Elsewhere(e, wait)) => {
                    let now = Instant::now();
                    if deadline.is_some_and(|d| now + wait >= d) {
                        return Err(e);
                    }
                    reach.reached = true;
                    std::thread::sleep(wait);
                    continue;
                }
            };
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(error);
            }
            let pause = match reach.lost {
                None => {
                    crate::output::note(&format!(
                        "{}; waiting on, and trying again until it is back",
                        error.message
                    ));
                    Duration::from_millis(250)
                }
                Some((_, pause)) => (pause * 2).min(MOST_BETWEEN_TRIES),
            };
            reach.lost = Some((reach.lost.map_or(now, |(since, _)| since), pause));
            std::thread::sleep(deadline.map_or(pause, |d| pause.min(d - now)));
        }
    }

    /// One request, sent again (with the same key) when the connection fails.
    fn send(&self, req: &Request, within: Duration) -> Result<Value> {
        self.attempt(req, within).map_err(Attempt::error)
    }

    /// `send`, saying whether a failure may pass when the server is back.
    fn attempt(&self, req: &Request, within: Duration) -> std::result::Result<Value, Attempt> {
        let body = serde_json::to_string(req)
            .map_err(|e| Attempt::Final(Error::usage(format!("cannot write the request: {e}"))))?;
        let within = within + Duration::from_secs((body.len() / BYTES_A_SECOND) as u64);
        let url = format!("{}/v1/call", self.base);
        let mut pause = Duration::from_millis(250);
        let mut attempt = 1;
        // Whether a try reached the server and was cut.
        let mut cut = false;
        loop {
            let sent = self
                .agent
                .post(&url)
                .config()
                .timeout_global(Some(within))
                .build()
                .header("Authorization", &format!("Bearer {}", self.token))
                .header("Content-Type", "application/json")
                .header("Idempotency-Key", &self.key)
                .send(body.as_str());
            match sent {
                Ok(mut reply) => {
                    let status = reply.status().as_u16();
                    // A call the server slowed (429), or let go of as it stops (503),
                    // names when to send it again.
                    let busy_for = (status == 429 || status == 503)
                        .then(|| reply.headers().get("retry-after"))
                        .flatten()
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(|s| Duration::from_secs(s.clamp(1, 60)));
                    let mut text = String::new();
                    reply
                        .body_mut()
                        .as_reader()
                        .take(REPLY_LIMIT)
                        .read_to_string(&mut text)
                        .map_err(|e| Attempt::Lost(self.unavailable(&e.to_string())))?;
                    // Unavailable (a server whose database is out of reach, a proxy's
                    // page while it restarts) may pass; any other refusal is final.
                    return self.document(status, &text).map_err(|e| match busy_for {
                        Some(wait) if e.code == ErrorCode::Unavailable && status == 503 => {
                            Attempt::Elsewhere(e, wait)
                        }
                        Some(wait) if e.code == ErrorCode::Unavailable => Attempt::Busy(e, wait),
                        _ if e.code == ErrorCode::Unavailable => Attempt::Lost(e),
                        _ => Attempt::Final(e),
                    });
                }
                Err(e) if attempt < ATTEMPTS && again(&e) => {
                    cut |= taken_and_cut(&e);
                    std::thread::sleep(pause);
                    pause *= 2;
                    attempt += 1;
                }
                Err(e) if refused_tls(&e) => return Err(Attempt::Final(self.failed(&e))),
                Err(e) if cut || taken_and_cut(&e) => return Err(Attempt::Cut(self.failed(&e))),
                Err(e) => return Err(Attempt::Lost(self.failed(&e))),
            }
        }
    }

    /// The server's document, or the error it names.
    fn document(&self, status: u16, text: &str) -> Result<Value> {
        let Ok(doc) = serde_json::from_str::<Value>(text) else {
            return Err(self.unavailable(&format!(
                "it answered HTTP {status} with something that is not the ledger's JSON \
                 (is it 'questions serve', and is the URL's path right?)"
            )));
        };
        if let Some(code) = doc["error_code"].as_str() {
            let message = doc["error"]
                .as_str()
                .unwrap_or("the server refused the call");
            let code = ErrorCode::parse(code).unwrap_or(ErrorCode::DbError);
            return Err(Error::new(code, message));
        }
        if doc.get("ok").is_none() {
            return Err(self.unavailable(&format!(
                "it answered HTTP {status} without a document of the ledger"
            )));
        }
        Ok(doc)
    }

    fn failed(&self, e: &ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(_) => self.unavailable("it did not answer in time"),
            _ if refused_tls(e) => self.unavailable(&format!(
                "its certificate is not trusted ({e}); for a private CA, set QUESTIONS_CA \
                 to its PEM file"
            )),
            _ => self.unavailable(&e.to_string()),
        }
    }

    fn unavailable(&self, why: &str) -> Error {
        Error::new(
            ErrorCode::Unavailable,
            format!("the ledger's server {} cannot be reached: {why}", self.host),
        )
    }
}

/// How a request failed: `Cut` and `Lost` may pass once the server is back (`Cut`: the
/// server took it and the connection was cut, or did not answer in time; `Lost`: it could
/// not be reached); `Final` will not (a certificate refused, a refusal).
enum Attempt {
    Cut(Error),
    Lost(Error),
    Final(Error),
    /// The server answered that the call is to be sent again after a while (429).
    Busy(Error, Duration),
    /// The server is stopping (503 with `Retry-After`): send it again after a while.
    Elsewhere(Error, Duration),
}

impl Attempt {
    fn error(self) -> Error {
        match self {
            Attempt::Cut(e)
            | Attempt::Lost(e)
            | Attempt::Final(e)
            | Attempt::Busy(e, _)
            | Attempt::Elsewhere(e, _) => e,
        }
    }
}

/// Whether a waiter's server has answered it yet, and since when, and after what pause it
/// is out of reach.
#[derive(Default)]
pub(crate) struct Reach {
    reached: bool,
    lost: Option<(Instant, Duration)>,
}

/// The longest pause between tries while a waiter's server is out of reach.
const MOST_BETWEEN_TRIES: Duration = Duration::from_secs(5);

/// How long the next poll waits on the server: `LONGEST_WAIT`, or what is left.
pub(crate) fn poll_within(deadline: Option<Instant>) -> Duration {
    deadline.map_or(LONGEST_WAIT, |d| {
        d.saturating_duration_since(Instant::now())
            .min(LONGEST_WAIT)
    })
}

/// Whether the server had the connection when it failed: cut, or no answer in time
/// (not a connection that never came about).
fn taken_and_cut(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Io(io) => !matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionRefused
                | std::io::ErrorKind::NotFound
                | std::io::ErrorKind::AddrNotAvailable
                | std::io::ErrorKind::HostUnreachable
                | std::io::ErrorKind::NetworkUnreachable
        ),
        ureq::Error::Timeout(t) => !matches!(t, ureq::Timeout::Connect | ureq::Timeout::Resolve),
        _ => false,
    }
}

/// Whether a failed attempt may be sent again: the connection failed or was cut; a
/// certificate refused, or a timeout, is not tried again.
fn again(e: &ureq::Error) -> bool {
    !refused_tls(e)
        && matches!(
            e,
            ureq::Error::Io(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound
        )
}

/// Whether the TLS handshake failed: rustls reports a certificate it does not trust as
/// invalid data read; nothing of the request was sent.
fn refused_tls(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Tls(_) | ureq::Error::Rustls(_) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::InvalidData,
        _ => false,
    }
}

/// The server's URL as a config carries it (`init`): `https://HOST[:PORT][/PREFIX]`,
/// checked as a call checks it.
pub(crate) fn base_of(text: &str) -> Result<String> {
    parse(text.trim()).map(|(base, _)| base)
}

/// `https://HOST[:PORT][/PREFIX]` as the base of the API, and `HOST[:PORT]`.
fn parse(text: &str) -> Result<(String, String)> {
    let usage = |why: &str| {
        Error::usage(format!(
            "the ledger's URL {why}: write https://HOST[:PORT][/PREFIX] (http:// only for \
             127.0.0.1, ::1 or localhost)"
        ))
    };
    let (scheme, rest) = text
        .split_once("://")
        .ok_or_else(|| usage("has no scheme"))?;
    let scheme = scheme.to_ascii_lowercase();
    if rest.contains(['?', '#']) {
        return Err(usage("may not hold a query or a fragment"));
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    if authority.contains('@') {
        // A password in a URL ends up in logs: the token has its own variables.
        return Err(usage(
            "may not hold a user or a password (the token goes in QUESTIONS_TOKEN)",
        ));
    }
    let name = match authority.rsplit_once(':') {
        Some((name, port)) if !port.contains(']') => {
            if port.parse::<u16>().is_err() {
                return Err(usage("has a port that is not a number"));
            }
            name
        }
        _ => authority,
    };
    if name.is_empty() {
        return Err(usage("names no host"));
    }
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match scheme.as_str() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(usage(
                "is http:// to a host that is not this machine: the token would travel in \
                 plain text; use https://",
            ))
        }
        _ => return Err(usage("has a scheme other than https://")),
    }
    let path = path.trim_end_matches('/');
    let base = if path.is_empty() {
        format!("{scheme}://{authority}")
    } else {
        format!("{scheme}://{authority}/{path}")
    };
    Ok((base, authority.to_string()))
}

/// The token: `QUESTIONS_TOKEN`, else the file `QUESTIONS_TOKEN_FILE` names, else this
/// user's `questions login` to `base` (then true).
fn token(base: &str) -> Result<(String, bool)> {
    let unset = || {
        Error::new(
            ErrorCode::Unauthorized,
            format!(
                "a ledger served over HTTPS needs a token: questions login {base} (where the \
                 server signs people in), or set QUESTIONS_TOKEN, or QUESTIONS_TOKEN_FILE to \
                 a file only you may read ('questions token create' where the ledger is \
                 makes one)"
            ),
        )
    };
    if let Some(token) = std::env::var("QUESTIONS_TOKEN")
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
    {
        return valid(token).map(|t| (t, false));
    }
    let Some(file) = std::env::var_os("QUESTIONS_TOKEN_FILE").filter(|f| !f.is_empty()) else {
        return match login::token_for(base)? {
            Some(token) => valid(token).map(|t| (t, true)),
            None => Err(unset()),
        };
    };
    let path = std::path::Path::new(&file);
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::usage(format!(
            "cannot read QUESTIONS_TOKEN_FILE {}: {e}",
            path.display()
        ))
    })?;
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
        if meta.permissions().mode() & 0o077 != 0 || uid.is_some_and(|u| u != meta.uid()) {
            return Err(Error::usage(format!(
                "QUESTIONS_TOKEN_FILE {} may be read by others: it must be yours, mode 600 \
                 (chmod 600 it)",
                path.display()
            )));
        }
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(format!(
            "cannot read QUESTIONS_TOKEN_FILE {}: {e}",
            path.display()
        ))
    })?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(unset());
    }
    valid(token).map(|t| (t, false))
}

/// A token goes into a header as it is: anything else is refused before it is sent
/// (and never repeated in the message).
fn valid(token: String) -> Result<String> {
    if token.chars().all(|c| c.is_ascii_graphic()) {
        Ok(token)
    } else {
        Err(Error::usage(
            "the token holds spaces or characters a header cannot carry: copy it again from \
             'questions token create'",
        ))
    }
}

/// Random bytes from the operating system.
fn random(n: usize) -> Result<Vec<u8>> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::io(format!("cannot read random bytes: {e}")))?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_s_url_is_https_or_http_to_this_machine() {
        let base = |t: &str| parse(t).map(|(b, _)| b).map_err(|e| e.code);
        assert_eq!(
            base("https://q.example.com").unwrap(),
            "https://q.example.com"
        );
        assert_eq!(
            base("HTTPS://q.example.com:8443/team/").unwrap(),
            "https://q.example.com:8443/team"
        );
        assert_eq!(
            base("http://127.0.0.1:8466").unwrap(),
            "http://127.0.0.1:8466"
        );
        assert_eq!(base("http://[::1]:8466").unwrap(), "http://[::1]:8466");
        assert_eq!(base("http://localhost:1").unwrap(), "http://localhost:1");
        for wrong in [
            "http://q.example.com",
            "http://10.0.0.1:8466",
            "https://user:pw@q.example.com",
            "https://q.example.com/?token=x",
            "https://:80",
            "https://q.example.com:http",
            "ftp://q.example.com",
        ] {
            assert_eq!(base(wrong), Err(ErrorCode::Usage), "{wrong}");
        }
    }
}
