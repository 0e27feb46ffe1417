//! The one loop every long-running reader runs (`check --wait`, `events --follow`,
//! `watch`): read, and when there is nothing more for now, wait for the ledger to change
//! (at once on PostgreSQL, woken by NOTIFY; by polling a file) until a deadline. The
//! reader's step is told when the ledger at its location was reset or replaced since its
//! last read, so it can start again from the new ledger's first event, or refuse to go on
//! with ids of questions that are gone.

use std::time::{Duration, Instant};

use crate::error::Result;
use crate::store::Ledger;

/// What one step of a follower found.
pub enum Step<T> {
    /// Finished, with this result.
    Done(T),
    /// Not at the end yet: step again at once.
    More,
    /// Nothing more for now: wait for a change, and end with this if time runs out first.
    Wait(T),
}

/// Which ledger a follower last read: a reset or a replaced file makes a new one.
pub struct Seen {
    generation: u64,
}

impl Seen {
    /// True once after each read that found the ledger at the location replaced.
    pub fn replaced(&mut self, ledger: &Ledger) -> bool {
        let now = ledger.generation();
        let replaced = now != self.generation;
        self.generation = now;
        replaced
    }
}

/// Runs `step` until it is done or `deadline` passes, waiting at most `pause` at a time
/// for a change between steps that found nothing more.
pub fn follow<T>(
    ledger: &mut Ledger,
    deadline: Option<Instant>,
    pause: Duration,
    mut step: impl FnMut(&mut Ledger, &mut Seen) -> Result<Step<T>>,
) -> Result<T> {
    let mut seen = Seen {
        generation: ledger.generation(),
    };
    loop {
        let last = match step(ledger, &mut seen)? {
            Step::Done(result) => return Ok(result),
            Step::More => continue,
            Step::Wait(last) => last,
        };
        let now = Instant::now();
        let wait = match deadline {
            Some(end) if now >= end => return Ok(last),
            Some(end) => pause.min(end - now),
            None => pause,
        };
        ledger.wait_for_change(wait)?;
    }
}
