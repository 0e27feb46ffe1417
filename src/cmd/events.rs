use std::time::{Duration, Instant};

use super::Outcome;
use crate::cli::EventsArgs;
use crate::error::Result;
use crate::ops::{self, Step};
use crate::output;
use crate::store::Ledger;

/// How many events are read at a time.
const PAGE: u32 = 500;

/// Prints the history's events as JSON lines, and with --follow goes on printing new ones
/// as any process makes them.
pub fn run(ledger: &mut Ledger, args: EventsArgs) -> Result<Outcome> {
    let deadline = args
        .timeout
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    let mut since = args.since;
    ops::follow(ledger, deadline, Duration::from_secs(1), |ledger, seen| {
        let mut page = ops::events(ledger, since, args.stage.as_deref(), PAGE)?;
        if seen.replaced(ledger) {
            // A ledger reset or replaced meanwhile is followed from its first event: its
            // seqs start again.
            since = 0;
            page = ops::events(ledger, since, args.stage.as_deref(), PAGE)?;
        }
        let mut lines = String::new();
        for event in &page.events {
            lines.push_str(&serde_json::to_string(event).unwrap_or_default());
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
