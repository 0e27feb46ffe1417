//! Quiet hours (§14a): a person's daily window in their own time zone, inside which the
//! relay holds their cards (but those of questions logged `--urgent`), and the digest
//! that delivers what was held once the window ends. The window arithmetic is pure, the
//! clock passed in; the relay asks only `holds` and `digests_due`.

use std::time::Duration;

use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde::Serialize;

use super::people::{Identity, PEOPLE_ADMINS};
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{check_name, Actor, Channel, Question};
use crate::store::{Ledger, QuietHours, Tx};

/// How long after a window's end its digest may still come: a relay that was down for
/// longer sends the held cards as they are, with no header about a night long past.
pub const DIGEST_LATE: Duration = Duration::from_hours(1);

/// The slot a digest is recorded under (question 0), one per person, channel and end.
const DIGEST: &str = "digest:";

/// A daily window, read.
#[derive(Debug, Clone)]
pub struct Window {
    from: Time,
    to: Time,
    tz: TimeZone,
}

impl Window {
    /// `from` and `to` as `HH:MM`, `tz` an IANA zone name (`Europe/Berlin`, `UTC`).
    pub fn new(from: &str, to: &str, tz: &str) -> Result<Window> {
        let zone = TimeZone::get(tz.trim()).map_err(|_| {
            Error::usage(format!(
                "--tz '{tz}' is not a time zone: name one as the IANA database does, like \
                 Europe/Berlin, America/New_York or UTC"
            ))
        })?;
        let (from, to) = (hhmm(from)?, hhmm(to)?);
        if from == to {
            return Err(Error::usage(
                "quiet hours start and end at different times (for none: people quiet NAME off)",
            ));
        }
        Ok(Window { from, to, tz: zone })
    }

    fn read(q: &QuietHours) -> Option<Window> {
        Window::new(&q.from, &q.to, &q.tz).ok()
    }

    /// The windows that start on `date` (local): from its start to its end, as instants.
    /// A start or an end that a change of clocks skips is the first instant after the
    /// gap; one it repeats is the first of the two.
    fn on(&self, date: Date) -> Option<(Timestamp, Timestamp)> {
        let at = |d: Date, t: Time| {
            self.tz
                .to_ambiguous_timestamp(d.to_datetime(t))
                .compatible()
                .ok()
        };
        let end_day = if self.to > self.from {
            date
        } else {
            date.tomorrow().ok()?
        };
        Some((at(date, self.from)?, at(end_day, self.to)?))
    }

    /// The windows around `now`: those starting the two days before, that day and the
    /// next (a window is shorter than a day, so these hold every one `now` can touch).
    fn around(&self, now: Timestamp) -> Vec<(Timestamp, Timestamp)> {
        let today = self.tz.to_datetime(now).date();
        [-2i64, -1, 0, 1]
            .iter()
            .filter_map(|&n| today.checked_add(jiff::Span::new().days(n)).ok())
            .filter_map(|d| self.on(d))
            .collect()
    }

    /// When the window `now` is in ends; none when `now` is outside every window.
    pub fn quiet_until(&self, now: &str) -> Option<String> {
        let now = instant(now)?;
        self.around(now)
            .into_iter()
            .find(|(start, end)| *start <= now && now < *end)
            .map(|(_, end)| text(end))
    }

    /// The start and end of the last window that ended at or before `now`.
    pub fn last_ended(&self, now: &str) -> Option<(String, String)> {
        let now = instant(now)?;
        self.around(now)
            .into_iter()
            .filter(|(_, end)| *end <= now)
            .max_by_key(|(_, end)| *end)
            .map(|(start, end)| (text(start), text(end)))
    }
}

fn hhmm(text: &str) -> Result<Time> {
    let bad = || {
        Error::usage(format!(
            "'{text}' is not a time of day: write quiet hours as HH:MM-HH:MM, like 22:00-07:00"
        ))
    };
    let (h, m) = text.trim().split_once(':').ok_or_else(bad)?;
    let (h, m): (i8, i8) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if m.to_string().len() > 2 || !(0..24).contains(&h) || !(0..60).contains(&m) {
        return Err(bad());
    }
    Time::new(h, m, 0, 0).map_err(|_| bad())
}

fn instant(text: &str) -> Option<Timestamp> {
    text.parse().ok()
}

/// An instant as the ledger writes them.
fn text(t: Timestamp) -> String {
    let ms = t.as_millisecond();
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(String::new, |t| {
        t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    })
}

/// Whether the relay holds `q`'s card for `person` now: inside their window, or after it
/// while its digest is not yet recorded for a question logged before the window ended
/// (so that the digest's header comes first); never for an urgent question.
pub(super) fn holds(
    quiet: &[QuietHours],
    slots: &[(i64, String)],
    channel: Channel,
    person: &str,
    q: &Question,
    now: &str,
) -> bool {
    if q.urgent {
        return false;
    }
    let Some(window) = quiet
        .iter()
        .find(|h| h.person == person)
        .and_then(Window::read)
    else {
        return false;
    };
    if window.quiet_until(now).is_some() {
        return true;
    }
    let Some((_, end)) = window.last_ended(now) else {
        return false;
    };
    q.created_at < end
        && now < clock::after(&end, DIGEST_LATE).as_str()
        && !slots
            .iter()
            .any(|(id, s)| *id == 0 && *s == slot(channel, person, &end))
}

/// Whether `person` has quiet hours at all (a held card of theirs whose question expired
/// is never sent: quiet hours never make a question wait longer than its expiry).
pub(super) fn has_quiet_hours(quiet: &[QuietHours], person: &str) -> bool {
    quiet.iter().any(|h| h.person == person)
}

fn slot(channel: Channel, person: &str, end: &str) -> String {
    format!("{DIGEST}{}:{person}:{end}", channel.as_str())
}

/// A digest to send: one message to each of the person's identities on the channel,
/// before the held cards themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    pub person: String,
    pub identities: Vec<String>,
    pub window_end: String,
    /// The held questions, oldest first, whose cards follow the header.
    pub held: Vec<(i64, String)>,
}

impl Digest {
    /// The digest's message: one line, then a line for each held question.
    pub fn words(&self) -> String {
        let mut out = format!(
            "Quiet hours are over: {} question{} held for you, each card below.",
            self.held.len(),
            if self.held.len() == 1 { "" } else { "s" }
        );
        for (id, question) in &self.held {
            out.push_str(&format!("\n#{id} {question}"));
        }
        out
    }
}

/// The digests due on `channel` now, each recorded (a slot of question 0 and a `people`
/// event) in the transaction that decides it, so that two relays or a restart send none
/// twice. `held(tx, person)` is what the relay would send that person now, were nothing
/// held: the questions the digest lists.
pub(super) fn digests_due(
    ledger: &mut Ledger,
    channel: Channel,
    now: &str,
    held: impl Fn(&Tx, &str) -> Result<Vec<Question>>,
) -> Result<Vec<Digest>> {
    let plan = |tx: &Tx| -> Result<Vec<Digest>> {
        let quiet = tx.quiet_hours()?;
        if quiet.is_empty() {
            return Ok(Vec::new());
        }
        let slots = tx.routing_slots()?;
        let links = tx.links()?;
        let prefix = format!("{}:", channel.as_str());
        let mut out = Vec::new();
        for h in &quiet {
            let Some(window) = Window::read(h) else {
                continue;
            };
            if window.quiet_until(now).is_some() {
                continue;
            }
            let Some((_, end)) = window.last_ended(now) else {
                continue;
            };
            let key = slot(channel, &h.person, &end);
            if now >= clock::after(&end, DIGEST_LATE).as_str()
                || slots.iter().any(|(id, s)| *id == 0 && *s == key)
            {
                continue;
            }
            let identities: Vec<String> = links
                .iter()
                .filter(|l| l.person == h.person && l.identity.starts_with(&prefix))
                .map(|l| l.identity.clone())
                .collect();
            if identities.is_empty() {
                continue;
            }
            let mut waiting: Vec<(i64, String)> = held(tx, &h.person)?
                .into_iter()
                .filter(|q| q.created_at < end && !q.urgent)
                .map(|q| (q.id, q.question))
                .collect();
            waiting.sort();
            waiting.dedup();
            if waiting.is_empty() {
                continue;
            }
            out.push(Digest {
                person: h.person.clone(),
                identities,
                window_end: end,
                held: waiting,
            });
        }
        Ok(out)
    };
    if ledger.read(plan)?.is_empty() {
        return Ok(Vec::new());
    }
    ledger.write(|tx| {
        let mut sent = Vec::new();
        for d in plan(tx)? {
            if tx.insert_slot(0, &slot(channel, &d.person, &d.window_end), now)? {
                tx.people_event(
                    &Actor {
                        by: None,
                        channel,
                        at: now.to_string(),
                    },
                    &serde_json::json!({
                        "person": d.person,
                        "digest": channel.as_str(),
                        "window_end": d.window_end,
                        "held": d.held.iter().map(|(id, _)| id).collect::<Vec<_>>(),
                    }),
                )?;
                sent.push(d);
            }
        }
        Ok(sent)
    })
}

/// What `people quiet` did.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QuietSet {
    pub person: String,
    /// The quiet hours now (none: ended).
    pub quiet: Option<QuietHours>,
    /// Whether the ledger changed (the same again records nothing).
    pub changed: bool,
}

/// `people quiet NAME HH:MM-HH:MM --tz ZONE` (`hours` none: `off`), by NAME themself or a
/// people admin, as a delegation is; every change a `people` event.
pub fn set_quiet(
    ledger: &mut Ledger,
    identity: &Identity,
    channel: Channel,
    name: &str,
    hours: Option<(&str, &str)>,
) -> Result<QuietSet> {
    let name = name.trim();
    check_name(name, "person").map_err(Error::usage)?;
    let now = clock::now();
    let wanted = match hours {
        Some((window, tz)) => {
            let (from, to) = window.trim().split_once('-').ok_or_else(|| {
                Error::usage(format!(
                    "'{window}' is not a window: write it as HH:MM-HH:MM, like 22:00-07:00"
                ))
            })?;
            let read = Window::new(from, to, tz)?;
            let fmt = |t: Time| format!("{:02}:{:02}", t.hour(), t.minute());
            Some(QuietHours {
                person: name.to_string(),
                from: fmt(read.from),
                to: fmt(read.to),
                tz: tz.trim().to_string(),
                set_at: now.clone(),
            })
        }
        None => None,
    };
    ledger.write(|tx| {
        let caller = identity.resolve(tx)?;
        if caller != name && !tx.is_group_admin(PEOPLE_ADMINS, &caller, identity.is_local())? {
            return Err(Error::new(
                ErrorCode::Forbidden,
                format!(
                    "{caller} may not change {name}'s quiet hours: only {name} themself, or an \
                     admin of the group '{PEOPLE_ADMINS}'"
                ),
            ));
        }
        let actor = Actor {
            by: Some(caller),
            channel,
            at: now.clone(),
        };
        let before = tx.quiet_hours()?.into_iter().find(|h| h.person == name);
        let Some(q) = wanted.clone() else {
            if !tx.delete_quiet(name)? {
                return Ok(QuietSet {
                    person: name.to_string(),
                    quiet: None,
                    changed: false,
                });
            }
            tx.people_event(&actor, &serde_json::json!({"person": name, "quiet": "off"}))?;
            return Ok(QuietSet {
                person: name.to_string(),
                quiet: None,
                changed: true,
            });
        };
        if let Some(b) = before.filter(|b| b.from == q.from && b.to == q.to && b.tz == q.tz) {
            return Ok(QuietSet {
                person: name.to_string(),
                quiet: Some(b),
                changed: false,
            });
        }
        tx.put_quiet(&q)?;
        tx.people_event(
            &actor,
            &serde_json::json!({"person": name, "quiet": format!("{}-{}", q.from, q.to),
                "tz": q.tz}),
        )?;
        Ok(QuietSet {
            person: name.to_string(),
            quiet: Some(q),
            changed: true,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(w: &Window, now: &str) -> Option<String> {
        w.quiet_until(now)
    }

    #[test]
    fn a_window_across_midnight_holds_the_night_and_not_the_day() {
        let w = Window::new("22:00", "07:00", "UTC").unwrap();
        let end = Some("2026-06-02T07:00:00.000Z".to_string());
        assert_eq!(quiet(&w, "2026-06-01T21:59:59.999Z"), None);
        assert_eq!(quiet(&w, "2026-06-01T22:00:00.000Z"), end);
        assert_eq!(quiet(&w, "2026-06-02T03:00:00.000Z"), end);
        assert_eq!(quiet(&w, "2026-06-02T06:59:59.999Z"), end);
        assert_eq!(
            quiet(&w, "2026-06-02T07:00:00.000Z"),
            None,
            "the end is outside"
        );
        assert_eq!(quiet(&w, "2026-06-02T12:00:00.000Z"), None);
        assert_eq!(
            w.last_ended("2026-06-02T07:00:30.000Z"),
            Some((
                "2026-06-01T22:00:00.000Z".into(),
                "2026-06-02T07:00:00.000Z".into()
            ))
        );
        assert_eq!(
            w.last_ended("2026-06-02T06:00:00.000Z").map(|(_, e)| e),
            Some("2026-06-01T07:00:00.000Z".into()),
            "inside a window, the last ended is the night before"
        );
    }

    #[test]
    fn a_window_within_a_day_and_in_a_zone_of_its_own() {
        let w = Window::new("12:30", "13:30", "America/New_York").unwrap();
        // June: UTC-4.
        assert_eq!(quiet(&w, "2026-06-01T16:29:00.000Z"), None);
        assert_eq!(
            quiet(&w, "2026-06-01T16:30:00.000Z"),
            Some("2026-06-01T17:30:00.000Z".into())
        );
        assert_eq!(quiet(&w, "2026-06-01T17:30:00.000Z"), None);
    }

    #[test]
    fn the_nights_the_clocks_change_in_berlin_are_an_hour_shorter_and_longer() {
        let w = Window::new("22:00", "07:00", "Europe/Berlin").unwrap();
        // 28→29 March 2026: 22:00 CET is 21:00Z, 07:00 CEST is 05:00Z: eight hours.
        assert_eq!(quiet(&w, "2026-03-28T20:59:00.000Z"), None);
        assert_eq!(
            quiet(&w, "2026-03-28T21:00:00.000Z"),
            Some("2026-03-29T05:00:00.000Z".into())
        );
        assert_eq!(quiet(&w, "2026-03-29T05:00:00.000Z"), None);
        // 24→25 October 2026: 22:00 CEST is 20:00Z, 07:00 CET is 06:00Z: ten hours.
        assert_eq!(
            quiet(&w, "2026-10-24T20:00:00.000Z"),
            Some("2026-10-25T06:00:00.000Z".into())
        );
        assert_eq!(
            quiet(&w, "2026-10-25T05:30:00.000Z"),
            Some("2026-10-25T06:00:00.000Z".into())
        );
        // A start the spring gap skips (02:30 does not exist that night): just after it.
        let gap = Window::new("02:30", "06:00", "Europe/Berlin").unwrap();
        assert_eq!(quiet(&gap, "2026-03-29T00:59:00.000Z"), None);
        assert_eq!(
            quiet(&gap, "2026-03-29T01:30:00.000Z"),
            Some("2026-03-29T04:00:00.000Z".into())
        );
    }

    #[test]
    fn a_bad_window_or_zone_is_refused() {
        for (from, to, tz) in [
            ("22:00", "22:00", "UTC"),
            ("24:00", "07:00", "UTC"),
            ("22:60", "07:00", "UTC"),
            ("22", "07:00", "UTC"),
            ("22:00", "07:00", "Mars/Olympus"),
            ("22:00", "07:00", ""),
        ] {
            let err = Window::new(from, to, tz).unwrap_err();
            assert_eq!(err.code, ErrorCode::Usage, "{from}-{to} {tz}");
        }
    }

    #[test]
    fn a_card_is_held_inside_the_window_and_until_its_digest_but_never_an_urgent_one() {
        let hours = [QuietHours {
            person: "bob".into(),
            from: "22:00".into(),
            to: "07:00".into(),
            tz: "UTC".into(),
            set_at: String::new(),
        }];
        let q = |urgent| Question {
            created_at: "2026-06-01T23:00:00.000Z".into(),
            urgent,
            ..Question::default()
        };
        let tg = Channel::Telegram;
        let night = "2026-06-02T01:00:00.000Z";
        let morning = "2026-06-02T07:00:10.000Z";
        assert!(holds(&hours, &[], tg, "bob", &q(false), night));
        assert!(!holds(&hours, &[], tg, "bob", &q(true), night), "urgent");
        assert!(
            !holds(&hours, &[], tg, "ann", &q(false), night),
            "not quiet"
        );
        assert!(
            holds(&hours, &[], tg, "bob", &q(false), morning),
            "digest first"
        );
        let digested = [(0, slot(tg, "bob", "2026-06-02T07:00:00.000Z"))];
        assert!(!holds(&hours, &digested, tg, "bob", &q(false), morning));
        assert!(
            !holds(
                &hours,
                &[],
                tg,
                "bob",
                &q(false),
                "2026-06-02T08:00:00.000Z"
            ),
            "an hour late, the cards go without a digest"
        );
    }
}
