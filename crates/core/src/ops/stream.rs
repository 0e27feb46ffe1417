//! The history as a stream (`events`, watchers): pages of events after a position, each
//! position naming its ledger. A reset starts the seqs again at 1, so a seq alone cannot
//! say which ledger it was read from: every event and every stored position goes with the
//! ledger's id, and a reader that finds another ledger starts again from its first event
//! rather than skipping as many as the old one had.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{settle, Step};
use crate::clock;
use crate::error::Result;
use crate::model::Event;
use crate::store::{EventFilter, Ledger};

/// An event as a stream prints it: with the id of the ledger it belongs to.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LedgerEvent<'a> {
    /// None only for a ledger that has no id (one that does not exist: it has no events).
    pub ledger: Option<&'a str>,
    #[serde(flatten)]
    pub event: &'a Event,
}

/// A page of the history: the events after a seq that the caller wants, and how far the
/// page went (events of other stages count too, so a resumed read skips none).
#[derive(Debug, Serialize, Deserialize)]
pub struct Page {
    pub events: Vec<Event>,
    /// The seq to resume after.
    pub last: i64,
    /// Fewer than the page's size were left: the reader is at the end of the history.
    pub at_end: bool,
    /// The id of the ledger the page was read from, in the same snapshot.
    pub ledger: Option<String>,
}

impl Page {
    /// The page's events, each with its ledger's id.
    pub fn stamped(&self) -> impl Iterator<Item = LedgerEvent<'_>> {
        self.events.iter().map(|event| LedgerEvent {
            ledger: self.ledger.as_deref(),
            event,
        })
    }
}

/// The events after `since`, oldest first, those of `stage`'s questions only if given.
/// Expiries that are due are applied first, so their events are in the page.
pub fn events(ledger: &mut Ledger, since: i64, stage: Option<&str>, limit: u32) -> Result<Page> {
    settle(ledger)?;
    let (all, id) = ledger.read(|tx| {
        Ok((
            tx.events(&EventFilter::Since { seq: since, limit })?,
            tx.ledger_id()?,
        ))
    })?;
    let at_end = all.len() < limit as usize;
    let last = all.last().map_or(since, |e| e.seq);
    let events = all
        .into_iter()
        .filter(|e| stage.is_none_or(|s| e.stage.trim() == s))
        .collect();
    Ok(Page {
        events,
        last,
        at_end,
        ledger: id,
    })
}

/// As `events`, waiting up to `wait` for the history to go past `since` (a long poll of
/// `events --follow` over HTTPS, §15): the first page that goes further, a page of
/// another ledger (a reset: the reader starts again), or an empty page when the time is up.
pub fn events_after(
    ledger: &mut Ledger,
    since: i64,
    stage: Option<&str>,
    limit: u32,
    wait: Duration,
) -> Result<Page> {
    let mut of: Option<Option<String>> = None;
    super::follow(
        ledger,
        Some(Instant::now() + wait),
        super::READ_AGAIN_AFTER,
        |ledger, seen| {
            let page = events(ledger, since, stage, limit)?;
            let replaced = seen.replaced(ledger) || of.as_ref().is_some_and(|o| *o != page.ledger);
            of = Some(page.ledger.clone());
            Ok(if page.last != since || !page.at_end || replaced {
                Step::Done(page)
            } else {
                Step::Wait(page)
            })
        },
    )
}

/// Where a reader that names a position (`events --since`) goes on from.
#[derive(Debug, PartialEq, Eq)]
pub enum Resume {
    /// After this seq of the ledger there now, whose id is `current`.
    After { seq: i64, current: Option<String> },
    /// The position named another ledger: this one replaced it (a reset), and is read from
    /// its first event.
    Replaced {
        named: String,
        current: Option<String>,
    },
    /// The seq is past this ledger's last event: it was read from another ledger (one
    /// that a reset replaced), and going on after it would skip this one's events.
    PastEnd { last: i64, current: Option<String> },
}

/// Where to resume after `seq` of the ledger `of` (none: whichever is there).
pub fn resume(ledger: &mut Ledger, of: Option<&str>, seq: i64) -> Result<Resume> {
    let (current, last) = ledger.read(|tx| Ok((tx.ledger_id()?, tx.last_seq()?)))?;
    Ok(match of {
        Some(named) if current.as_deref() != Some(named) => Resume::Replaced {
            named: named.to_string(),
            current,
        },
        _ if seq > last => Resume::PastEnd { last, current },
        _ => Resume::After { seq, current },
    })
}

/// Where a watcher starts.
#[derive(Debug, Serialize, Deserialize)]
pub struct Started {
    /// The seq of the last event it delivered (or passed over).
    pub position: i64,
    /// The ledger the position belongs to.
    pub ledger: Option<String>,
    /// Its stored position was past this ledger's last event, so it belonged to a ledger
    /// that a reset replaced: it starts from this one's first event instead. The position
    /// it had.
    pub foreign: Option<i64>,
}

/// Where the watcher `name` goes on from: its stored position, else (a new watcher) the
/// start of the history (`from_start`) or its current end, stored so; in one transaction
/// with the ledger's id. A stored position past the last event belongs to another ledger
/// and is replaced by the start of this one.
pub fn start_watcher(ledger: &mut Ledger, name: &str, from_start: bool) -> Result<Started> {
    let now = clock::now();
    ledger.write(|tx| {
        let last = tx.last_seq()?;
        let (position, foreign) = match tx.watcher_position(name)? {
            Some(stored) if stored > last => (0, Some(stored)),
            Some(stored) => return Ok(started(stored, tx.ledger_id()?, None)),
            None if from_start => (0, None),
            None => (last, None),
        };
        tx.set_watcher_position(name, position, &now)?;
        Ok(started(position, tx.ledger_id()?, foreign))
    })
}

fn started(position: i64, ledger: Option<String>, foreign: Option<i64>) -> Started {
    Started {
        position,
        ledger,
        foreign,
    }
}

/// Records that the watcher `name` has delivered everything up to `position` of the ledger
/// `of`. False, and nothing stored, when the ledger there now is another (it was reset):
/// a position of the old ledger would make the watcher skip the new one's events.
pub fn save_watcher_position(
    ledger: &mut Ledger,
    name: &str,
    position: i64,
    of: Option<&str>,
) -> Result<bool> {
    let now = clock::now();
    // A ledger reset since the last read is written to as the one there now (a write
    // through the old one's files would fail), and its id tells.
    ledger.follow()?;
    ledger.write(|tx| {
        if tx.ledger_id()?.as_deref() != of {
            return Ok(false);
        }
        tx.set_watcher_position(name, position, &now)?;
        Ok(true)
    })
}
