//! The one loop every long-running reader runs (`check --wait`, `events --follow`,
//! `watch`, the inbox's live view, MCP's waits): read, and when there is nothing more for
//! now, wait for the ledger to change until a deadline. Waiting costs nothing: the ledger
//! tells the reader of a change (see `Ledger::wait_for_change`), and the reader reads
//! again only then, when an expiry falls due, or after `pause` at the longest.
//!
//! A wait survives the server: a read that finds it out of reach (no connection free, a
//! restart, a failover, a dropped connection) is said once, and tried again with a
//! growing pause, until the deadline; the reader goes on from where it was, so a stream
//! skips and repeats nothing. The reader's step is told when the ledger at its location
//! was reset or replaced since its last read, so it can start again from the new ledger's
//! first event, or refuse to go on with ids of questions that are gone.

use std::sync::OnceLock;
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

/// The longest a follower goes without reading the ledger again when nothing told it of a
/// change: a safety net only (a change the waiting missed), so long that idle waiters cost
/// nothing. A front end that must look up more often (a cancelled call) passes less.
pub const READ_AGAIN_AFTER: Duration = Duration::from_secs(30);

/// Where a follower says what a person watching it should know (the server out of reach,
/// and back): the front end's, set once; none, nothing is said.
static NOTICE: OnceLock<fn(&str)> = OnceLock::new();

/// Sets where followers say what a person watching should know (stderr, for the CLI).
pub fn on_notice(say: fn(&str)) {
    let _ = NOTICE.set(say);
}

fn notice(text: &str) {
    if let Some(say) = NOTICE.get() {
        say(text);
    }
}

/// The longest a follower waits before it reads again after the server was out of reach.
const MOST_BETWEEN_TRIES: Duration = Duration::from_secs(5);

/// Runs `step` until it is done or `deadline` passes, reading again when the ledger
/// changed, when an expiry falls due, or after `pause` at most.
pub fn follow<T>(
    ledger: &mut Ledger,
    deadline: Option<Instant>,
    pause: Duration,
    mut step: impl FnMut(&mut Ledger, &mut Seen) -> Result<Step<T>>,
) -> Result<T> {
    ledger.waiting(true);
    let bound = crate::store::BoundUntil::new(deadline);
    let out = follow_waiting(ledger, deadline, pause, &mut step);
    drop(bound);
    ledger.waiting(false);
    out
}

fn follow_waiting<T>(
    ledger: &mut Ledger,
    deadline: Option<Instant>,
    pause: Duration,
    step: &mut impl FnMut(&mut Ledger, &mut Seen) -> Result<Step<T>>,
) -> Result<T> {
    let mut seen = Seen {
        generation: ledger.generation(),
    };
    // The last step's result, for a deadline that passes while the server is out of reach.
    let mut last = None;
    // Out of reach since, and the pause before the next try.
    let mut out_of_reach: Option<(Instant, Duration)> = None;
    loop {
        let wait = match step(ledger, &mut seen) {
            Ok(Step::Done(result)) => return Ok(result),
            Ok(Step::More) => continue,
            Ok(Step::Wait(now)) => {
                last = Some(now);
                if let Some((since, _)) = out_of_reach.take() {
                    notice(&format!(
                        "the ledger {} is within reach again (after {:.0} s); still waiting",
                        ledger.location().display(),
                        since.elapsed().as_secs_f64()
                    ));
                }
                pause.min(until_expiry(ledger).unwrap_or(pause))
            }
            // Out of reach after a read that went through (or busy from the first): a
            // server that was there comes back. One that never answered is more likely a
            // wrong location, said at once.
            Err(e) if e.is_unavailable() && (last.is_some() || e.is_busy()) => {
                let now = Instant::now();
                if deadline.is_some_and(|end| now >= end) {
                    return last.ok_or(e);
                }
                let retry = match out_of_reach {
                    None => {
                        notice(&format!(
                            "{}; waiting on, and trying again until the server is back{}",
                            e.message,
                            if deadline.is_some() {
                                " or the timeout"
                            } else {
                                ""
                            }
                        ));
                        Duration::from_millis(250)
                    }
                    Some((_, retry)) => (retry * 2).min(MOST_BETWEEN_TRIES),
                };
                out_of_reach = Some((out_of_reach.map_or(now, |(since, _)| since), retry));
                ledger.forget_connection();
                let sleep = match deadline {
                    Some(end) => retry.min(end - now),
                    None => retry,
                };
                std::thread::sleep(sleep);
                continue;
            }
            Err(e) => return Err(e),
        };
        let now = Instant::now();
        let wait = match deadline {
            Some(end) if now >= end => return Ok(last.expect("set by the step that waits")),
            Some(end) => wait.min(end - now),
            None => wait,
        };
        if let Err(e) = ledger.wait_for_change(wait) {
            if !e.is_unavailable() {
                return Err(e);
            }
            // Seen at the next read, which says so.
            ledger.forget_connection();
        }
    }
}

/// How long until the next expiry falls due (a moment after, so it is due when read),
/// if one does.
fn until_expiry(ledger: &mut Ledger) -> Option<Duration> {
    let due = ledger.read(|tx| tx.next_expiry()).ok()??;
    let due = chrono::DateTime::parse_from_rfc3339(&due).ok()?;
    let now = chrono::DateTime::parse_from_rfc3339(&crate::clock::now()).ok()?;
    // One already due is the step's to apply (those that look at expiries settle first).
    let left = (due - now).to_std().ok().filter(|left| !left.is_zero())?;
    Some(left + Duration::from_millis(20))
}
