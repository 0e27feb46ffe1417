//! The one place time is read. Tests pin it with `QUESTIONS_NOW` (an RFC 3339 instant), so
//! their output is the same on every run.

use chrono::{DateTime, SecondsFormat, Utc};

pub const PIN_VAR: &str = "QUESTIONS_NOW";

/// Now, as the ledger and the JSON both write it: `2026-11-21T23:47:04.692Z`.
pub fn now() -> String {
    let instant = std::env::var(PIN_VAR)
        .ok()
        .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(Utc::now);
    instant.to_rfc3339_opts(SecondsFormat::Millis, true)
}
