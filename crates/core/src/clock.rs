//! The one place time is read. Tests pin it with `QUESTIONS_NOW` (an RFC 3339 instant), so
//! their output is the same on every run.

use chrono::{DateTime, SecondsFormat, Utc};

pub const PIN_VAR: &str = "QUESTIONS_NOW";

/// Now, as the ledger and the JSON both write it: `2026-11-21T23:47:04.692Z`.
pub fn now() -> String {
    let instant = std::env::var(PIN_VAR)
        .ok()
        .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
        .map_or_else(Utc::now, |t| t.with_timezone(&Utc));
    instant.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The instant `within` after `now` (as `now` gives it), in the same form.
pub fn after(now: &str, within: std::time::Duration) -> String {
    let start =
        DateTime::parse_from_rfc3339(now).map_or_else(|_| Utc::now(), |t| t.with_timezone(&Utc));
    let within = chrono::Duration::from_std(within).unwrap_or(chrono::Duration::MAX);
    start
        .checked_add_signed(within)
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Whole seconds from `from` to `to` (both as `now` gives them); 0 when either is not an
/// instant.
pub fn seconds_between(from: &str, to: &str) -> i64 {
    match (
        DateTime::parse_from_rfc3339(from),
        DateTime::parse_from_rfc3339(to),
    ) {
        (Ok(a), Ok(b)) => (b - a).num_seconds(),
        _ => 0,
    }
}

/// `90s`, `30m`, `2h`, `1d` (or several, `1h30m`): a duration as people write one.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let bad = || {
        format!("'{text}' is not a duration: write a number and a unit, like 90s, 30m, 2h or 1d")
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        digits.clear();
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
    }
    if !digits.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(
            parse_duration("90s"),
            Ok(std::time::Duration::from_secs(90))
        );
        assert_eq!(parse_duration("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_duration("2h").unwrap().as_secs(), 7200);
        assert_eq!(parse_duration("1d").unwrap().as_secs(), 86_400);
        assert_eq!(parse_duration("1h30m").unwrap().as_secs(), 5400);
        for bad in [
            "",
            "5",
            "m",
            "1x",
            "0s",
            "-1h",
            "1.5h",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn after_adds_in_the_ledger_s_form() {
        let now = "2026-11-21T23:47:04.692Z";
        assert_eq!(
            after(now, std::time::Duration::from_secs(90)),
            "2026-11-21T23:48:34.692Z"
        );
    }
}
