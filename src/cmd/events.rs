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
                    ledger.location().display(),
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
                    ledger.location().display(),
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
