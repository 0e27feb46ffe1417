//! "A week in the life" (docs/guide/relay.md and the README): a team's day and night of
//! routing on the relay, run for real on Telegram's stand-in with the clock pinned to each
//! moment in turn, and its chat side written out as the transcript the guide shows. A
//! reminder, an escalation, a delegate's vote, an urgent question in quiet hours and the
//! morning's digest, each as the relay sent it.
//!
//! Each moment is one relay run; a marker question (routed to a fourth person, left out of
//! the transcript) is sent and settled before the run ends, so every card due at that
//! moment has gone out and none is put down to the next moment.

use std::collections::HashMap;

use crate::common::*;
use crate::relay_routing::{self, kill, relay_at};
use crate::telegram_standin::StandIn;
use serde_json::Value;

const ALICE: i64 = 111;
const BOB: i64 = 222;
const DANA: i64 = 333;
/// Who the markers go to: nobody in the transcript.
const OPS: i64 = 444;

/// A round of the relay at `now` has run to its end: a marker (its own text: the same one
/// again would be the same question) has reached ops and been closed.
fn round_passed(l: &Ledger, t: &StandIn, now: &str) {
    relay_routing::round_passed(l, t, now, OPS, &format!("Marker at {now}?"));
}

/// Waits until `chat` holds a message starting with `head` that contains `words`.
fn arrived(t: &StandIn, chat: i64, head: &str, words: &str) -> Value {
    t.until(&format!("'{head}…{words}' in chat {chat}"), |s| {
        s.messages
            .iter()
            .find(|m| {
                let text = m["text"].as_str().unwrap_or("");
                m["chat"]["id"] == chat && text.starts_with(head) && text.contains(words)
            })
            .cloned()
    })
}

/// What the transcript says of a message: its lines that carry the question (a reminder's
/// note, the card's head and question, a digest's lines), and its buttons.
fn gist(message: &Value) -> String {
    let text = message["text"].as_str().unwrap_or("");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut shown: Vec<String> = Vec::new();
    let mut rest = lines.as_slice();
    if let Some((first, after)) = rest.split_first() {
        if first.starts_with('⏰') {
            shown.push((*first).to_string());
            rest = after;
        }
    }
    match rest {
        [head, question, ..] if head.starts_with("Question ") => {
            shown.push(format!("{head}: {question}"));
        }
        _ => shown.extend(rest.iter().map(|l| (*l).to_string())),
    }
    let buttons: Vec<String> = message["reply_markup"]["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(|t| format!("[{t}]")))
        .collect();
    if !buttons.is_empty() {
        shown.push(buttons.join(" "));
    }
    shown.join("\n")
}

/// The chat side of the day: what each moment's relay sent or changed, to whom.
struct Transcript {
    names: HashMap<i64, &'static str>,
    /// Each message's text as last written down, by message id.
    seen: HashMap<i64, String>,
    out: String,
}

impl Transcript {
    fn new() -> Transcript {
        Transcript {
            names: HashMap::from([(ALICE, "alice"), (BOB, "bob"), (DANA, "dana")]),
            seen: HashMap::new(),
            out: String::new(),
        }
    }

    /// Writes down, under `when`, each message sent since the last moment and each one
    /// settled since (as its last line: what closed it), one line for everyone who got
    /// the same. A card a reminder replaced loses its buttons: that edit is left out.
    fn moment(&mut self, t: &StandIn, when: &str) {
        let messages = t.with(|s| s.messages.clone());
        let mut lines: Vec<(Vec<&str>, String)> = Vec::new();
        for m in &messages {
            let chat = m["chat"]["id"].as_i64().unwrap_or(0);
            let Some(name) = self.names.get(&chat).copied() else {
                continue;
            };
            let id = m["message_id"].as_i64().unwrap_or(0);
            let text = m["text"].as_str().unwrap_or("").to_string();
            let shown = match self.seen.get(&id) {
                None => Some(gist(m)),
                Some(before) if *before != text => {
                    let head = text
                        .lines()
                        .find(|l| l.starts_with("Question "))
                        .and_then(|l| l.split(" · ").next())
                        .unwrap_or("");
                    let last = text.lines().last().unwrap_or("");
                    (!last.starts_with("✔ reminded:")).then(|| format!("{head} → {last}"))
                }
                Some(_) => None,
            };
            self.seen.insert(id, text);
            let Some(shown) = shown else {
                continue;
            };
            match lines.iter_mut().find(|(_, g)| *g == shown) {
                Some((names, _)) => names.push(name),
                None => lines.push((vec![name], shown)),
            }
        }
        for (names, gist) in lines {
            let mut first = true;
            for line in gist.lines() {
                let stamp = if first { when } else { "" };
                let who = if first {
                    names.join(", ")
                } else {
                    String::new()
                };
                let row = format!("{stamp:<9}  {who:<16}  {line}");
                self.out.push_str(row.trim_end());
                self.out.push('\n');
                first = false;
            }
        }
    }

    fn said(&mut self, when: &str, who: &str, line: &str) {
        self.out
            .push_str(&format!("{when:<9}  {who:<16}  {line}\n"));
    }
}

#[test]
fn relay_a_week_in_the_life_is_the_guide_s_transcript() {
    let l = Ledger::new();
    let t = StandIn::start();
    let me = crate::relay_harness::me(&l);
    let monday = "2026-11-23T09:00:00.000Z";
    let at = |now: &str, args: &[&str]| {
        let run = l.run_at(now, args);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        run.json
    };
    at(monday, &["group", "create", "people", "--admins", &me]);
    for (name, chat) in [("alice", ALICE), ("bob", BOB), ("dana", DANA), ("ops", OPS)] {
        at(
            monday,
            &["people", "link", name, &format!("telegram:{chat}")],
        );
    }
    // The guide's set-up: alice first, reminded twice, bob after two hours; bob's nights
    // in Berlin (21:00Z to 06:00Z in November); dana stands in for alice this week.
    at(
        monday,
        &[
            "policy",
            "set",
            "--stage",
            "deploy-*",
            "--to",
            "alice",
            "--remind-after",
            "30m",
            "--remind-max",
            "2",
            "--escalate-after",
            "2h",
            "--escalate-to",
            "bob",
        ],
    );
    at(
        monday,
        &["policy", "set", "--stage", "marker", "--to", "ops"],
    );
    at(
        monday,
        &[
            "people",
            "quiet",
            "bob",
            "22:00-07:00",
            "--tz",
            "Europe/Berlin",
        ],
    );
    at(
        monday,
        &[
            "people",
            "delegate",
            "alice",
            "--to",
            "dana",
            "--until",
            "2026-11-28T18:00:00Z",
        ],
    );
    let mut week = Transcript::new();

    // 10:00: a CI job asks for an approval of alice or bob; the policy sends it to alice,
    // and to dana for her.
    let ten = "2026-11-23T10:00:00.000Z";
    let ship = at(
        ten,
        &[
            "log",
            "--stage",
            "deploy-prod",
            "--question",
            "Ship build 42?",
            "--approval",
            "--approvers",
            "alice,bob",
            "--min",
            "1",
        ],
    )["question_id"]
        .as_i64()
        .unwrap();
    let ship_head = format!("Question {ship} ");
    let relay = relay_at(&l, &t, ten);
    arrived(&t, ALICE, &ship_head, "");
    arrived(&t, DANA, &ship_head, "");
    round_passed(&l, &t, ten);
    kill(relay);
    week.moment(&t, "Mon 10:00");

    // Unanswered: reminded at 10:30 and 11:30; at 12:00 escalated to bob.
    for (now, when, words) in [
        ("2026-11-23T10:30:30.000Z", "Mon 10:30", "reminder 1 of 2"),
        ("2026-11-23T11:30:30.000Z", "Mon 11:30", "reminder 2 of 2"),
    ] {
        let relay = relay_at(&l, &t, now);
        arrived(&t, ALICE, "⏰", words);
        arrived(&t, DANA, "⏰", words);
        round_passed(&l, &t, now);
        kill(relay);
        week.moment(&t, when);
    }
    let noon = "2026-11-23T12:00:30.000Z";
    let relay = relay_at(&l, &t, noon);
    arrived(&t, BOB, &ship_head, "");
    round_passed(&l, &t, noon);
    kill(relay);
    // His card is news enough: no reminder of a slot that passed before it was sent.
    assert_eq!(
        t.messages_to(BOB).len(),
        1,
        "bob's card alone: {:?}",
        t.messages_to(BOB)
    );
    week.moment(&t, "Mon 12:00");

    // 12:05: dana approves, for alice; every card of it says so.
    let five_past = "2026-11-23T12:05:00.000Z";
    let relay = relay_at(&l, &t, five_past);
    let card = t
        .messages_to(DANA)
        .into_iter()
        .rev()
        .find(|m| {
            m["text"].as_str().unwrap_or("").contains(&ship_head) && m.get("reply_markup").is_some()
        })
        .expect("dana's live card");
    let approve = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    let click = t.click(DANA, &card, &approve);
    let answer = t.answer_to(click);
    assert!(answer.starts_with("recorded"), "{answer}");
    for chat in [ALICE, BOB, DANA] {
        t.until("every card of it settled", |s| {
            s.messages
                .iter()
                .filter(|m| {
                    m["chat"]["id"] == chat && m["text"].as_str().unwrap_or("").contains(&ship_head)
                })
                .all(|m| m.get("reply_markup").is_none())
                .then_some(())
        });
    }
    round_passed(&l, &t, five_past);
    kill(relay);
    week.said(
        "Mon 12:05",
        "dana",
        &format!("taps Approve; Telegram shows her: {answer}"),
    );
    week.moment(&t, "");
    let votes = l.question(ship)["approval"]["votes"].clone();
    assert_eq!(votes[0]["by"], "dana", "{votes}");
    assert_eq!(votes[0]["on_behalf_of"], "alice", "{votes}");
    assert_eq!(l.run(["check", "--stage", "deploy-prod"]).code, 0);

    // 21:10, bob's night: an agent's urgent question. Its escalation at 23:10 reaches bob
    // all the same; the changelog question at 23:30 waits for his morning.
    let evening = "2026-11-23T21:10:00.000Z";
    let urgent = at(
        evening,
        &[
            "log",
            "--stage",
            "deploy-prod",
            "--question",
            "Roll back build 41?",
            "--urgent",
        ],
    )["question_id"]
        .as_i64()
        .unwrap();
    let urgent_head = format!("Question {urgent} ");
    let relay = relay_at(&l, &t, evening);
    arrived(&t, ALICE, &urgent_head, "");
    arrived(&t, DANA, &urgent_head, "");
    round_passed(&l, &t, evening);
    kill(relay);
    week.moment(&t, "Mon 21:10");
    let late = "2026-11-23T23:30:30.000Z";
    let wording = at(
        late,
        &[
            "log",
            "--stage",
            "release-notes",
            "--question",
            "Which changelog wording?",
            "--option",
            "Fixes",
            "--option",
            "Changes",
        ],
    )["question_id"]
        .as_i64()
        .unwrap();
    let wording_head = format!("Question {wording} ");
    let relay = relay_at(&l, &t, late);
    arrived(&t, BOB, &urgent_head, "");
    arrived(&t, ALICE, &wording_head, "");
    round_passed(&l, &t, late);
    kill(relay);
    assert!(
        t.messages_to(BOB)
            .iter()
            .all(|m| !m["text"].as_str().unwrap_or("").contains(&wording_head)),
        "held in bob's quiet hours"
    );
    week.moment(&t, "Mon 23:30");

    // 07:00 in Berlin: one digest, then the card it held.
    let morning = "2026-11-24T06:00:30.000Z";
    let relay = relay_at(&l, &t, morning);
    arrived(&t, BOB, "Quiet hours are over", "");
    arrived(&t, BOB, &wording_head, "");
    round_passed(&l, &t, morning);
    kill(relay);
    week.moment(&t, "Tue 07:00");

    // Each decision is in the history once.
    let history = l.ok(["history", "--id", &ship.to_string()]);
    let kinds: Vec<&str> = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event"].as_str())
        .filter(|k| ["reminded", "escalated", "voted"].contains(k))
        .collect();
    assert_eq!(kinds, ["reminded", "reminded", "escalated", "voted"]);

    let out = week.out;
    crate::docs::assert_documented(
        "docs/guide/relay.md",
        "transcript: a week in the life",
        &out,
    );
    crate::docs::assert_documented("README.md", "transcript: a week in the life", &out);
}
