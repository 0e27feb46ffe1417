use std::time::{Duration, Instant};

use super::{door, nobody, take, Outcome};
use crate::cli::EventsArgs;
use crate::output;
use questions_core::error::{Error, Result};
use questions_core::ops::{self, Ledger, Reply, Request, Resume, Step};

/// How many events are read at a time.
const PAGE: u32 = 500;

/// Prints the history's events as JSON lines, and with --follow goes on printing new ones
/// as any process makes them.
pub(super) fn run(ledger: &mut Ledger, args: EventsArgs) -> Result<Outcome> {
    let deadline = args
        .timeout
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    #[cfg(feature = "remote")]
    if super::is_served() {
        return served(&args, deadline);
    }
    // The ledger the position belongs to: a page of another one (a reset the location's
    // watch did not wake this reader for) is read from its first event.
    let mut of: Option<Option<String>> = None;
    let mut since = match &args.since {
        None => 0,
        Some(given) => match ops::resume(ledger, given.ledger.as_deref(), given.seq)? {
            Resume::After { seq, current } => {
                of = Some(current);
                seq
            }
            Resume::Replaced { named, current } => {
                output::note(&format!(
                    "--since names the ledger {}, and the ledger {} is another ({}): it was \
                     reset or replaced since; printing its events from the first",
                    output::sanitize(&named, false),
                    super::shown_location(ledger),
                    current.as_deref().unwrap_or("none yet"),
                ));
                0
            }
            Resume::PastEnd { last, current } => {
                return Err(Error::not_found(format!(
                    "--since {} is past the last event of the ledger {} (seq {last}{}): that \
                     seq was most likely read from a ledger that a reset replaced, and going on \
                     after it would skip this ledger's events; resume with --since LEDGER:SEQ as \
                     each event's \"ledger\" and \"seq\" say it (another ledger's is read from \
                     this one's first event), or --since 0",
                    given.seq,
                    super::shown_location(ledger),
                    current
                        .as_deref()
                        .map(|id| format!(", ledger {id}"))
                        .unwrap_or_default(),
                )))
            }
        },
    };
    let read_page = |ledger: &mut Ledger, since: i64| -> Result<ops::Page> {
        let req = Request::Events {
            since,
            stage: args.stage.clone(),
            limit: PAGE,
            wait: None,
        };
        Ok(take!(door(ledger, nobody(), req)?, Reply::Events))
    };
    ops::follow(ledger, deadline, ops::READ_AGAIN_AFTER, |ledger, seen| {
        let mut page = read_page(ledger, since)?;
        let other = of.as_ref().is_some_and(|of| *of != page.ledger);
        if seen.replaced(ledger) || other {
            // A ledger reset or replaced meanwhile is followed from its first event: its
            // seqs start again.
            since = 0;
            page = read_page(ledger, since)?;
        }
        of = Some(page.ledger.clone());
        let mut lines = String::new();
        for event in page.stamped() {
            lines.push_str(&serde_json::to_string(&event).unwrap_or_default());
            lines.push('\n');
        }
        output::text_out(&lines);
        since = page.last;
        Ok(match (page.at_end, args.follow) {
            (false, _) => Step::More,
            (true, false) => Step::Done(()),
            (true, true) => Step::Wait(()),
        })
    })?;
    Ok(Outcome::text(String::new()))
}

/// `events` over https:// (§15): the server's pages, and with --follow long polls of at
/// most 50 s, sent again until --timeout (and while a restarting server is out of reach).
/// A page of another ledger than the one read so far (a reset there) is read again from
/// its first event, as on a file.
#[cfg(feature = "remote")]
fn served(args: &EventsArgs, deadline: Option<Instant>) -> Result<Outcome> {
    use serde_json::Value;
    let mut reach = crate::remote::Reach::default();
    let mut since = args.since.as_ref().map_or(0, |s| s.seq);
    let mut of: Option<Value> = args
        .since
        .as_ref()
        .and_then(|s| s.ledger.clone())
        .map(Value::from);
    let mut at_end = false;
    let mut first = true;
    loop {
        let wait = (args.follow && at_end).then(|| crate::remote::poll_within(deadline));
        if wait.is_some_and(|w| w.is_zero()) {
            break;
        }
        let req = Request::Events {
            since,
            stage: args.stage.clone(),
            limit: PAGE,
            wait,
        };
        let page = super::served(&req, deadline, &mut reach, args.follow)?;
        if of.as_ref().is_some_and(|of| *of != page["ledger"]) {
            if first {
                output::note(&format!(
                    "--since names the ledger {}, and the server's ledger is another ({}): it \
                     was reset or replaced since; printing its events from the first",
                    output::sanitize(of.as_ref().and_then(Value::as_str).unwrap_or(""), false),
                    output::sanitize(page["ledger"].as_str().unwrap_or("none yet"), false),
                ));
            }
            of = Some(page["ledger"].clone());
            first = false;
            since = 0;
            at_end = false;
            continue;
        }
        of = Some(page["ledger"].clone());
        first = false;
        let mut lines = String::new();
        for event in page["events"].as_array().into_iter().flatten() {
            // As `Page::stamped` prints it: the ledger's id, then the event.
            let mut stamped = serde_json::Map::new();
            stamped.insert("ledger".into(), page["ledger"].clone());
            if let Value::Object(fields) = event {
                stamped.extend(fields.clone());
            }
            lines.push_str(&serde_json::to_string(&stamped).unwrap_or_default());
            lines.push('\n');
        }
        output::text_out(&lines);
        since = page["last"].as_i64().unwrap_or(since);
        at_end = page["at_end"] == Value::Bool(true);
        if at_end && !args.follow || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    Ok(Outcome::text(String::new()))
}
