use std::time::{Duration, Instant};

use super::Outcome;
use crate::cli::EventsArgs;
use crate::error::Result;
use crate::ops;
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
    let mut generation = ledger.generation();
    loop {
        let mut page = ops::events(ledger, since, args.stage.as_deref(), PAGE)?;
        if ledger.generation() != generation {
            // A ledger reset or replaced meanwhile is followed from its first event: its
            // seqs start again.
            generation = ledger.generation();
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
        if !page.at_end {
            continue;
        }
        if !args.follow {
            break;
        }
        let left = match deadline {
            Some(end) => match end.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => break,
            },
            None => Duration::from_secs(1),
        };
        ledger.wait_for_change(left.min(Duration::from_secs(1)))?;
    }
    Ok(Outcome::text(String::new()))
}
