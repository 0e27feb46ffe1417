//! A provider's published rate, kept by whoever sends to it.

use std::time::{Duration, Instant};

/// Sends held to a provider's published rate (the generic cell rate algorithm): to one
/// destination (a chat, a channel) a burst of `burst`, then one every `every`; over all
/// destinations, at most `overall` a second, when given. A caller waits for its slot
/// outside the lock, so that a reply to one person never waits for another's cards.
pub(crate) struct Throttle {
    every: Duration,
    burst: u32,
    overall: Option<u32>,
    /// Each destination's theoretical arrival time ("" for all of them).
    due: std::sync::Mutex<std::collections::HashMap<String, Instant>>,
}

impl Throttle {
    pub(crate) fn new(every: Duration, burst: u32, overall: Option<u32>) -> Throttle {
        Throttle {
            every,
            burst: burst.max(1),
            overall,
            due: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// Waits until a send to `to` keeps within the rates, and counts it.
    pub(crate) fn wait(&self, to: &str) {
        let now = Instant::now();
        let wait = {
            let mut due = self
                .due
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Forget destinations long quiet, so the map holds only those recently sent to.
            let idle = self.every * self.burst;
            due.retain(|_, at| now.saturating_duration_since(*at) < idle);
            let mut slot = |key: &str, every: Duration, burst: u32| {
                let at = due.get(key).copied().unwrap_or(now).max(now);
                due.insert(key.to_string(), at + every);
                at.saturating_duration_since(now)
                    .saturating_sub(every * (burst - 1))
            };
            let mine = slot(to, self.every, self.burst);
            let all = self.overall.map_or(Duration::ZERO, |n| {
                slot("", Duration::from_secs(1) / n.max(1), n.max(1))
            });
            mine.max(all)
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_lets_a_burst_through_then_one_each_interval_per_destination() {
        let every = Duration::from_millis(60);
        let throttle = Throttle::new(every, 3, None);
        let start = Instant::now();
        for _ in 0..3 {
            throttle.wait("chat-1");
        }
        let burst = start.elapsed();
        assert!(burst < every, "the burst waited {burst:?}");
        // Another destination has its own burst.
        throttle.wait("chat-2");
        assert!(start.elapsed() < every);
        for _ in 0..3 {
            throttle.wait("chat-1");
        }
        // Three more to chat-1 wait for three intervals after the burst's first.
        assert!(start.elapsed() >= every * 3, "{:?}", start.elapsed());
    }

    #[test]
    fn a_throttle_holds_all_destinations_to_the_overall_rate() {
        let throttle = Throttle::new(Duration::from_secs(1), 5, Some(20));
        let start = Instant::now();
        for n in 0..30 {
            throttle.wait(&format!("chat-{n}"));
        }
        // A burst of 20, then 10 more at 20 a second.
        assert!(
            start.elapsed() >= Duration::from_millis(500),
            "{:?}",
            start.elapsed()
        );
    }
}
