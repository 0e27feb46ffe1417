//! Watchers: a front end that delivers the ledger's events to a command or a webhook, at
//! least once and in order. Its position (the last event it delivered) is kept in the
//! ledger under its name, written only after a delivery is confirmed, so a watcher that
//! is killed and started again goes on where it stopped and repeats at most the one event
//! whose delivery was not confirmed. Each event goes with `<ledger id>:<seq>` as its
//! idempotency key: a reset starts the seqs again, and the ledger's id tells them apart.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hmac::{KeyInit, Mac};
use serde::Serialize;

use crate::cli::WatchFormat;
use crate::output::{self, sanitize};
use questions_core::error::{Error, Result};
use questions_core::model::{Event, EventKind, Status};
use questions_core::ops::Ledger;
use questions_core::ops::{self, LedgerEvent, Step};

/// Where events go.
#[derive(Debug, Clone)]
pub enum Target {
    /// A shell command, run once per event with the event's JSON on its standard input.
    Exec(String),
    /// A URL each event is POSTed to.
    Webhook(String),
}

#[derive(Debug, Clone)]
pub struct Watcher {
    pub name: String,
    pub target: Target,
    pub on: Option<Vec<EventKind>>,
    pub stage: Option<String>,
    /// Only events of required questions.
    pub required_only: bool,
    pub format: WatchFormat,
    pub secret: Option<Vec<u8>>,
    /// A new watcher starts with the first event, not the next one.
    pub from_start: bool,
    /// Stop after this long; none: until killed.
    pub run_for: Option<Duration>,
    /// How long one POST may take before it counts as failed.
    pub request_timeout: Duration,
}

/// What a watcher did before it stopped.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Watched {
    pub name: String,
    pub delivered: usize,
    pub failed_attempts: usize,
    /// The seq of the last event delivered (or passed over by the filters).
    pub position: i64,
}

/// The first wait after a failed delivery; it doubles up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl Watcher {
    fn wants(&self, event: &Event) -> bool {
        let required = event
            .after
            .as_ref()
            .or(event.before.as_ref())
            .is_some_and(|q| q.required);
        self.on
            .as_ref()
            .is_none_or(|kinds| kinds.contains(&event.event))
            && self
                .stage
                .as_deref()
                .is_none_or(|s| event.stage.trim() == s)
            && (!self.required_only || required)
    }

    /// Delivers events until `run_for` runs out (or forever).
    pub fn run(&self, ledger: &mut Ledger) -> Result<Watched> {
        let started = ops::start_watcher(ledger, &self.name, self.from_start)?;
        let mut walk = self.walk(started, &ledger.location().display());
        ops::follow(
            ledger,
            walk.deadline,
            ops::READ_AGAIN_AFTER,
            |ledger, seen| {
                let mut page = ops::events(ledger, walk.position, None, 100)?;
                if seen.replaced(ledger) || page.ledger != walk.of {
                    // A ledger reset or replaced meanwhile starts its seqs again, and holds no
                    // position of this watcher: all of its events are new.
                    walk.position = 0;
                    page = ops::events(ledger, walk.position, None, 100)?;
                    walk.of.clone_from(&page.ledger);
                }
                walk.deliver(self, &page, |position, of| {
                    ops::save_watcher_position(ledger, &self.name, position, of)
                })
            },
        )?;
        Ok(walk.done())
    }

    /// `run`, for a ledger `questions serve` serves (§15): the same walk, its reads long
    /// polls of the server's history and its position kept there under the token's own
    /// name for it.
    #[cfg(feature = "remote")]
    pub(crate) fn run_served(&self, server: &crate::remote::Remote) -> Result<Watched> {
        let ask = |req: ops::Request| crate::remote::read(&req, server.call(req.clone())?);
        let unexpected = || Error::db("internal error: the server answered another request");
        let ops::Reply::Watcher(started) = ask(ops::Request::Watcher {
            name: self.name.clone(),
            from_start: self.from_start,
        })?
        else {
            return Err(unexpected());
        };
        let mut walk = self.walk(started, server.url());
        let mut reach = crate::remote::Reach::default();
        loop {
            let wait = crate::remote::poll_within(walk.deadline);
            let read = ops::Request::Events {
                since: walk.position,
                stage: None,
                limit: 100,
                wait: Some(wait),
            };
            let doc = server.follow(&read, walk.deadline, &mut reach, true)?;
            let ops::Reply::Events(page) = crate::remote::read(&read, doc)? else {
                return Err(unexpected());
            };
            if page.ledger != walk.of {
                // A ledger reset meanwhile: all of its events are new.
                walk.position = 0;
                walk.of.clone_from(&page.ledger);
                continue;
            }
            let step = walk.deliver(self, &page, |position, of| {
                match ask(ops::Request::WatcherAt {
                    name: self.name.clone(),
                    position,
                    of: of.map(str::to_string),
                })? {
                    ops::Reply::WatcherAt(at) => Ok(at.saved),
                    _ => Err(unexpected()),
                }
            })?;
            let over = walk.deadline.is_some_and(|d| Instant::now() >= d);
            match step {
                Step::Done(()) => break,
                Step::Wait(()) if over => break,
                Step::More | Step::Wait(()) => {}
            }
        }
        Ok(walk.done())
    }

    /// Where a watcher that `started` goes on from, said on stderr when its stored
    /// position belonged to another ledger (`where_` names this one).
    fn walk(&self, started: ops::Started, where_: &str) -> Walk {
        if let Some(foreign) = started.foreign {
            output::note(&format!(
                "watch {}: its stored position (seq {foreign}) is past the last event of the \
                 ledger {}: it belongs to a ledger that was reset or replaced; delivering this \
                 ledger's events from its first",
                sanitize(&self.name, false),
                where_
            ));
        }
        Walk {
            deadline: self.run_for.map(|d| Instant::now() + d),
            position: started.position,
            of: started.ledger,
            done: Watched {
                name: self.name.clone(),
                delivered: 0,
                failed_attempts: 0,
                position: started.position,
            },
            agent: ureq::Agent::config_builder()
                .timeout_global(Some(self.request_timeout))
                .http_status_as_error(false)
                // A redirect is not a delivery: followed, it would turn the POST into a GET
                // whose 200 counted as delivered. It is a failure, retried, that says so.
                .max_redirects(0)
                .build()
                .new_agent(),
        }
    }

    fn deliver(
        &self,
        agent: &ureq::Agent,
        stamped: &LedgerEvent,
    ) -> std::result::Result<(), String> {
        let json = serde_json::to_string(stamped).map_err(|e| e.to_string())?;
        match &self.target {
            Target::Exec(command) => exec(command, stamped.event, &json),
            Target::Webhook(url) => self.post(agent, url, stamped, &json),
        }
    }

    fn post(
        &self,
        agent: &ureq::Agent,
        url: &str,
        stamped: &LedgerEvent,
        json: &str,
    ) -> std::result::Result<(), String> {
        let event = stamped.event;
        let (body, content_type) = match self.format {
            WatchFormat::Json => (json.to_string(), "application/json"),
            WatchFormat::Slack => (
                serde_json::json!({ "text": message(event) }).to_string(),
                "application/json",
            ),
            WatchFormat::Ntfy => (message(event), "text/plain; charset=utf-8"),
        };
        let mut request = agent
            .post(url)
            .header("Content-Type", content_type)
            .header(
                "User-Agent",
                concat!("questions/", env!("CARGO_PKG_VERSION")),
            )
            .header("Idempotency-Key", idempotency_key(stamped))
            .header("X-Questions-Seq", event.seq.to_string())
            .header("X-Questions-Event", event.event.as_str());
        if self.format == WatchFormat::Ntfy {
            request = request
                .header("Title", title(event))
                .header("Tags", "question")
                .header("Priority", if urgent(event) { "high" } else { "default" });
        }
        if let Some(secret) = &self.secret {
            request = request.header(
                "X-Questions-Signature",
                format!("sha256={}", signature(secret, body.as_bytes())),
            );
        }
        match request.send(body.as_bytes()) {
            Ok(response) if response.status().is_success() => Ok(()),
            Ok(response) if response.status().is_redirection() => Err(format!(
                "the webhook answered {} (a redirect, which is not followed: give the URL it points to)",
                response.status()
            )),
            Ok(response) => Err(format!("the webhook answered {}", response.status())),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// `<ledger id>:<seq>`: unique to the event, across resets (which start the seqs again).
fn idempotency_key(stamped: &LedgerEvent) -> String {
    match stamped.ledger {
        Some(ledger) => format!("{ledger}:{}", stamped.event.seq),
        None => stamped.event.seq.to_string(),
    }
}

/// Runs `command` with the event on its standard input; exit 0 confirms the delivery.
/// A watcher on its way: how far it delivered, in which ledger, until when.
struct Walk {
    deadline: Option<Instant>,
    position: i64,
    /// The ledger the position belongs to.
    of: Option<String>,
    done: Watched,
    agent: ureq::Agent,
}

impl Walk {
    /// Delivers what `watcher` wants of `page` in order, each event stored as delivered
    /// (`save`, false: the ledger there now is another) only once it is confirmed.
    fn deliver(
        &mut self,
        watcher: &Watcher,
        page: &ops::Page,
        mut save: impl FnMut(i64, Option<&str>) -> Result<bool>,
    ) -> Result<Step<()>> {
        let left = |now: Instant| self.deadline.map(|end| end.saturating_duration_since(now));
        for event in page.stamped() {
            if !watcher.wants(event.event) {
                continue;
            }
            let mut backoff = FIRST_BACKOFF;
            loop {
                match watcher.deliver(&self.agent, &event) {
                    Ok(()) => break,
                    Err(why) => {
                        self.done.failed_attempts += 1;
                        output::note(&format!(
                            "watch {}: event {} not delivered ({}); trying again in {:.1}s",
                            sanitize(&watcher.name, false),
                            event.event.seq,
                            sanitize(&why, false),
                            backoff.as_secs_f64()
                        ));
                    }
                }
                let pause = match left(Instant::now()) {
                    Some(rest) if rest < backoff => return Ok(Step::Done(())),
                    _ => backoff,
                };
                std::thread::sleep(pause);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            // Confirmed: only now does the watcher move past it.
            self.position = event.event.seq;
            self.done.delivered += 1;
            if !save(self.position, self.of.as_deref())? {
                // The ledger was reset meanwhile: the next page reads the new one.
                return Ok(Step::More);
            }
        }
        if page.last > self.position {
            // Events the filters passed over: nothing to deliver, nothing to repeat.
            self.position = page.last;
            if !save(self.position, self.of.as_deref())? {
                return Ok(Step::More);
            }
        }
        Ok(if page.at_end {
            // Every event so far delivered or passed over: the watcher is idle until
            // the ledger changes (the point where a test knows it has seen them all).
            questions_core::fault::point("watch-idle");
            Step::Wait(())
        } else {
            Step::More
        })
    }

    fn done(mut self) -> Watched {
        self.done.position = self.position;
        self.done
    }
}

fn exec(command: &str, event: &Event, json: &str) -> std::result::Result<(), String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("QUESTIONS_EVENT_SEQ", event.seq.to_string())
        .env("QUESTIONS_EVENT", event.event.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run the command: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is fine.
        let _ = stdin.write_all(json.as_bytes());
        let _ = stdin.write_all(b"\n");
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the command exited with {status}"))
    }
}

/// HMAC-SHA256 of `body` under `secret`, in hex.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret)
        .expect("HMAC takes a key of any length");
    mac.update(body);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new required question, or one declined: worth a person's attention now.
fn urgent(event: &Event) -> bool {
    let required = event
        .after
        .as_ref()
        .or(event.before.as_ref())
        .is_some_and(|q| q.required);
    required
        && matches!(
            event.event,
            EventKind::Logged | EventKind::Declined | EventKind::Rejected
        )
}

fn title(event: &Event) -> String {
    format!(
        "questions: {} in {}",
        event.event.as_str(),
        one_line(&event.stage)
    )
}

/// One line for people: what happened to which question.
fn message(event: &Event) -> String {
    let q = event.after.as_ref().or(event.before.as_ref());
    let text = q.map(|q| one_line(&q.question)).unwrap_or_default();
    let who = event
        .answered_by
        .as_deref()
        .map(|b| format!(" by {}", one_line(b)))
        .unwrap_or_default();
    let via = event
        .channel
        .map(|c| format!(" ({})", c.as_str()))
        .unwrap_or_default();
    let what = match (event.event, q) {
        (EventKind::Logged, Some(q)) if q.required => "new required question".to_string(),
        (EventKind::Logged, _) => "new question".to_string(),
        (EventKind::Declined, Some(q)) => format!(
            "declined{who}{via}: {}",
            one_line(q.state.decline_reason.as_deref().unwrap_or(""))
        ),
        (EventKind::Expired, Some(q)) if q.state.status == Status::Answered => format!(
            "time ran out; answered with the proposed value: {}",
            one_line(q.state.answer.as_deref().unwrap_or(""))
        ),
        (EventKind::Expired, Some(q)) if q.state.status == Status::Declined => {
            "time ran out; rejected".to_string()
        }
        (EventKind::Expired, _) => "time ran out; skipped".to_string(),
        (EventKind::Voted | EventKind::Refused | EventKind::Group, _) => {
            let detail = event.detail.as_ref();
            let vote = detail.and_then(|d| d["vote"].as_str()).unwrap_or("");
            match event.event {
                EventKind::Voted => format!("vote: {vote}{who}{via}"),
                EventKind::Refused => format!("vote refused: {vote}{who}{via}"),
                _ => format!(
                    "group {} changed{who}",
                    one_line(detail.and_then(|d| d["group"].as_str()).unwrap_or(""))
                ),
            }
        }
        (EventKind::Approved, _) => format!("approved{who}{via}"),
        (EventKind::Rejected, Some(q)) => format!(
            "rejected{who}{via}: {}",
            one_line(q.state.decline_reason.as_deref().unwrap_or(""))
        ),
        (EventKind::Skipped, _) => format!("skipped{who}{via}"),
        (EventKind::Cleared, _) => format!("cleared{who}"),
        (kind, Some(q)) => format!(
            "{}{who}{via}: {}",
            kind.as_str(),
            one_line(q.state.answer.as_deref().unwrap_or(""))
        ),
        (kind, None) => kind.as_str().to_string(),
    };
    format!(
        "[{}] #{} {text} — {what}",
        one_line(&event.stage),
        event.question_id
    )
}

/// Text from the ledger on one line, without control characters.
fn one_line(text: &str) -> String {
    sanitize(text, false)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The secret named by `--secret-env`: the variable must be set and not empty.
pub fn secret_from(var: &str) -> Result<Vec<u8>> {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() => Ok(std::os::unix::ffi::OsStrExt::as_bytes(v.as_os_str()).to_vec()),
        _ => Err(Error::usage(format!(
            "--secret-env {var}: that environment variable is not set (or empty); set it to the webhook's secret"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_in_hex() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
