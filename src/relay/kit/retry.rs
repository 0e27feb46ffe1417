//! One 429 loop for every provider's API: a call answered "too many requests" waits what
//! the provider asked (Telegram's `retry_after`, Slack's `Retry-After`), up to a cap, and
//! is tried again a few times, each wait said on stderr.

use std::time::Duration;

use super::Res;
use crate::output;
use questions_core::model::Relayed;

/// How many times a call answered 429 is tried again.
pub(crate) const TRIES: u32 = 5;
/// The longest wait honoured, whatever the provider asks.
pub(crate) const LONGEST_WAIT: Duration = Duration::from_mins(5);

/// What one try of a call came to.
pub(crate) enum Tried<T> {
    /// An answer (or a failure) to hand back as it is.
    Answered(T),
    /// A 429 asking to wait this long (when it does not say: a second).
    Wait(Duration),
}

/// Calls `try_once` until it answers: after a `Wait`, it is tried again once the wait is
/// over, at most `TRIES` times more. `try_once(may_wait)`: whether a 429 may be answered
/// with `Wait` (on the last try, it is read as any other failure).
pub(crate) fn retrying<T>(
    channel: Relayed,
    method: &str,
    mut try_once: impl FnMut(bool) -> Res<Tried<T>>,
) -> Res<T> {
    let mut tries = 0;
    loop {
        match try_once(tries < TRIES)? {
            Tried::Answered(answer) => return Ok(answer),
            Tried::Wait(wait) => {
                let wait = wait.min(LONGEST_WAIT);
                output::note(&format!(
                    "relay: {}: {method} answered 429; waiting {}s as asked",
                    channel.as_str(),
                    seconds(wait)
                ));
                std::thread::sleep(wait);
                tries += 1;
            }
        }
    }
}

/// A wait in seconds as a person reads it: whole seconds as they are, else to a tenth.
fn seconds(wait: Duration) -> String {
    if wait.subsec_millis() == 0 {
        wait.as_secs().to_string()
    } else {
        format!("{:.1}", wait.as_secs_f64())
    }
}
