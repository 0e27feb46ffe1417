//! Routing on the relay (§14a), on Telegram's stand-in: reminders at their slots and no
//! more, once each across a SIGKILL; an escalation reaching the backup only after its
//! delay, the first answer winning and every card settled. Hours pass by the pinned clock
//! (`QUESTIONS_NOW`), one relay after another; nothing is proved by sleeping: a question
//! of a stage without policy, logged after the fact, is the event that has to come after
//! the relay looked.

use crate::common::*;
use crate::relay_harness::{self, Relay};
use crate::telegram_standin::{StandIn, TOKEN};
use serde_json::Value;

const ME: i64 = 111;
const BOB: i64 = 222;

pub(crate) fn relay_at(l: &Ledger, t: &StandIn, now: &str) -> Relay {
    let config = format!(
        "[telegram]\napi = \"{}\"\ntoken_env = \"TG_TOKEN\"\npoll_timeout = 2\n",
        t.url
    );
    Relay::run(
        l,
        "telegram",
        &config,
        &[("TG_TOKEN", TOKEN)],
        &[("QUESTIONS_NOW", now)],
    )
}

/// Killed as by SIGKILL: no lease let go, nothing said.
pub(crate) fn kill(mut relay: Relay) {
    relay.child.kill().unwrap();
    relay.child.wait().unwrap();
}

fn options(l: &Ledger, stage: &str, text: &str) -> i64 {
    l.log_with(
        stage,
        text,
        &["--option", "PostgreSQL", "--option", "SQLite"],
    )
}

/// The messages in `chat` that start with `head`, once there are `n` of them.
fn messages(t: &StandIn, chat: i64, head: &str, n: usize) -> Vec<Value> {
    t.until(&format!("{n} of '{head}' in chat {chat}"), |s| {
        let found: Vec<Value> = s
            .messages
            .iter()
            .filter(|m| {
                m["chat"]["id"] == chat && m["text"].as_str().unwrap_or("").starts_with(head)
            })
            .cloned()
            .collect();
        (found.len() >= n).then_some(found)
    })
}

/// How many messages in `chat` name `head` (a card, its reposts, as they stand).
fn count(t: &StandIn, chat: i64, head: &str) -> usize {
    t.messages_to(chat)
        .iter()
        .filter(|m| m["text"].as_str().unwrap_or("").contains(head))
        .count()
}

fn events(l: &Ledger, id: i64, kind: &str) -> Vec<Value> {
    l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == kind)
        .cloned()
        .collect()
}

fn button(card: &Value, label: &str) -> String {
    card["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().clone())
        .find(|b| b["text"].as_str().unwrap().contains(label))
        .map_or_else(
            || panic!("no button {label} on {card}"),
            |b| b["callback_data"].as_str().unwrap().to_string(),
        )
}

/// Logs a question of a stage no policy routes, at `now`, and waits for its card to
/// reach `chat`, then answers it and waits for that card to be closed: a round of the
/// relay that began after this call (which routes first, and reposts before it closes)
/// has run to its end.
pub(crate) fn round_passed(l: &Ledger, t: &StandIn, now: &str, chat: i64, text: &str) {
    let id = l
        .run_at(now, ["log", "--stage", "marker", "--question", text])
        .json["question_id"]
        .as_i64()
        .unwrap();
    let head = format!("Question {id} ");
    messages(t, chat, &head, 1);
    l.run_at(now, ["skip", "--id", &id.to_string(), "--reason", "marker"]);
    t.until("the marker's card closed", |s| {
        s.messages
            .iter()
            .any(|m| {
                m["chat"]["id"] == chat
                    && m["text"].as_str().unwrap_or("").starts_with(&head)
                    && m["edited"] == true
            })
            .then_some(())
    });
}

#[test]
fn relay_reminders_come_at_their_slots_and_once_each_across_a_kill() {
    let l = Ledger::new();
    let t = StandIn::start();
    relay_harness::people(&l, &format!("telegram:{ME}"), &format!("telegram:{BOB}"));
    l.ok([
        "policy",
        "set",
        "--stage",
        "design",
        "--remind-after",
        "30m",
        "--remind-max",
        "2",
    ]);
    let id = options(&l, "design", "Which database?");
    let head = format!("Question {id} ");
    let first = relay_at(&l, &t, NOW);
    let card = messages(&t, ME, &head, 1).remove(0);
    messages(&t, BOB, &head, 1);
    // Routed before its cards were sent: at the moment of logging, nothing is due.
    assert!(events(&l, id, "reminded").is_empty());
    // Killed once its cards are recorded as sent: a card cut off between its send and its
    // record is sent again after a restart (§14, at least once), as another message.
    round_passed(&l, &t, NOW, BOB, "Marker before?");
    kill(first);

    // Half an hour on: the first reminder, to each whose card is open.
    let half_hour = later(31 * 60);
    let second = relay_at(&l, &t, &half_hour);
    let reminder = "⏰ Still waiting for your answer (reminder 1 of 2)";
    let reposted = messages(&t, ME, reminder, 1).remove(0);
    messages(&t, BOB, reminder, 1);
    let reminded = events(&l, id, "reminded");
    assert_eq!(reminded.len(), 1, "{reminded:?}");
    assert_eq!(reminded[0]["detail"]["reminder"], 1);
    assert_eq!(reminded[0]["detail"]["of"], 2);
    assert_eq!(reminded[0]["answered_by"], Value::Null);
    assert_eq!(reminded[0]["at"], half_hour.as_str());
    // The card before is retired: its buttons gone, saying where to answer.
    let old = t.until("the first card retired", |s| {
        s.messages
            .iter()
            .find(|m| m["message_id"] == card["message_id"] && m["edited"] == true)
            .cloned()
    });
    assert!(old.get("reply_markup").is_none(), "{old}");
    assert!(
        old["text"].as_str().unwrap().contains("newer card"),
        "{old}"
    );
    // Killed once the reposts are recorded as sent (a repost cut off between its send
    // and its record is sent again: at least once, as a card is).
    round_passed(&l, &t, &half_hour, BOB, "Marker zero?");
    kill(second);

    // Killed and started again at the same moment: nothing repeated.
    let third = relay_at(&l, &t, &half_hour);
    round_passed(&l, &t, &half_hour, ME, "Marker one?");
    assert_eq!(events(&l, id, "reminded").len(), 1);
    assert_eq!(count(&t, ME, &head), 2, "the card and one reminder");
    assert_eq!(count(&t, BOB, &head), 2);
    kill(third);

    // Long after: the second and last reminder, once, however many slots passed.
    let much_later = later(100 * 3600);
    let fourth = relay_at(&l, &t, &much_later);
    let last = "⏰ Still waiting for your answer (reminder 2 of 2)";
    messages(&t, ME, last, 1);
    messages(&t, BOB, last, 1);
    round_passed(&l, &t, &much_later, ME, "Marker two?");
    let reminded = events(&l, id, "reminded");
    assert_eq!(reminded.len(), 2, "{reminded:?}");
    assert_eq!(reminded[1]["detail"]["reminder"], 2);
    assert_eq!(
        count(&t, ME, &head),
        3,
        "the card and two reminders, never a third"
    );
    assert_eq!(count(&t, BOB, &head), 3);
    // The newest card answers it; every card of it is then settled.
    let newest = messages(&t, ME, last, 1).remove(0);
    let click = t.click(ME, &newest, &button(&newest, "SQLite"));
    assert!(t.answer_to(click).starts_with("recorded"));
    assert_eq!(l.question(id)["answer"], "SQLite");
    t.until("every card of it settled", |s| {
        s.messages
            .iter()
            .filter(|m| {
                m["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains(&format!("Question {id} "))
            })
            .all(|m| m.get("reply_markup").is_none())
            .then_some(())
    });
    assert!(reposted["text"]
        .as_str()
        .unwrap()
        .contains("Which database?"));
    kill(fourth);
}

#[test]
fn relay_an_escalation_reaches_the_backup_only_after_its_delay_and_the_first_answer_wins() {
    let l = Ledger::new();
    let t = StandIn::start();
    let me = relay_harness::people(&l, &format!("telegram:{ME}"), &format!("telegram:{BOB}"));
    l.ok([
        "policy",
        "set",
        "--stage",
        "deploy",
        "--to",
        &me,
        "--escalate-after",
        "2h",
        "--escalate-to",
        "bob",
    ]);
    let id = options(&l, "deploy", "Which region first?");
    let head = format!("Question {id} ");
    let first = relay_at(&l, &t, NOW);
    let my_card = messages(&t, ME, &head, 1).remove(0);
    // The backup got nothing: bob's card of a later question comes, and none of this one.
    round_passed(&l, &t, NOW, BOB, "Marker one?");
    assert_eq!(
        count(&t, BOB, &head),
        0,
        "bob is not asked before the escalation"
    );
    assert!(events(&l, id, "escalated").is_empty());
    kill(first);

    let due = later(2 * 3600);
    let second = relay_at(&l, &t, &due);
    let bobs = messages(&t, BOB, &head, 1).remove(0);
    let escalated = events(&l, id, "escalated");
    assert_eq!(escalated.len(), 1, "{escalated:?}");
    assert_eq!(escalated[0]["detail"]["to"], serde_json::json!(["bob"]));
    // Killed once bob's card is recorded as sent (see the reminders' test).
    round_passed(&l, &t, &due, BOB, "Marker one and a half?");
    kill(second);
    // Started again: escalated once, bob's card not sent twice.
    let third = relay_at(&l, &t, &due);
    round_passed(&l, &t, &due, BOB, "Marker two?");
    assert_eq!(events(&l, id, "escalated").len(), 1);
    assert_eq!(count(&t, BOB, &head), 1);
    // Bob answers first: recorded as his; the runner's card is settled too.
    let click = t.click(BOB, &bobs, &button(&bobs, "PostgreSQL"));
    assert!(t.answer_to(click).starts_with("recorded"));
    assert_eq!(l.question(id)["answered_by"], "bob");
    let mine = t.until("the runner's card settled", |s| {
        s.messages
            .iter()
            .find(|m| {
                m["chat"]["id"] == ME
                    && m["text"].as_str().unwrap_or("").starts_with(&head)
                    && m["edited"] == true
            })
            .cloned()
    });
    assert!(mine.get("reply_markup").is_none());
    assert!(
        mine["text"].as_str().unwrap().contains("answered by bob"),
        "{mine}"
    );
    let late = t.click(ME, &mine, &button(&my_card, "SQLite"));
    assert!(t.answer_to(late).contains("already answered by bob"));
    assert_eq!(l.question(id)["answer"], "PostgreSQL");
    kill(third);
}

#[test]
fn relay_a_delegate_gets_the_card_and_answers_on_behalf_of_the_person() {
    let l = Ledger::new();
    let t = StandIn::start();
    let me = relay_harness::people(&l, &format!("telegram:{ME}"), &format!("telegram:{BOB}"));
    l.ok(["policy", "set", "--stage", "deploy", "--to", &me]);
    l.ok([
        "people",
        "delegate",
        &me,
        "--to",
        "bob",
        "--until",
        &later(7 * 86_400),
    ]);
    let id = options(&l, "deploy", "Which region first?");
    let head = format!("Question {id} ");
    let _relay = relay_at(&l, &t, NOW);
    messages(&t, ME, &head, 1);
    let bobs = messages(&t, BOB, &head, 1).remove(0);
    let click = t.click(BOB, &bobs, &button(&bobs, "SQLite"));
    assert!(t.answer_to(click).starts_with("recorded"));
    let q = l.question(id);
    assert_eq!(q["answered_by"], "bob");
    let answered = events(&l, id, "answered");
    assert_eq!(answered.len(), 1);
    assert_eq!(
        answered[0]["detail"]["on_behalf_of"],
        me.as_str(),
        "{answered:?}"
    );
    // Once it ends, the delegate is asked no more.
    l.ok(["people", "delegate", &me, "off"]);
    let next = options(&l, "deploy", "Which region next?");
    let next_head = format!("Question {next} ");
    messages(&t, ME, &next_head, 1);
    round_passed(&l, &t, NOW, BOB, "Marker?");
    assert_eq!(count(&t, BOB, &next_head), 0);
}

#[test]
fn relay_a_reminder_sent_but_not_recorded_is_closed_so_that_one_copy_alone_is_live() {
    let l = Ledger::new();
    let t = StandIn::start();
    relay_harness::people(&l, &format!("telegram:{ME}"), &format!("telegram:{BOB}"));
    l.ok([
        "policy",
        "set",
        "--stage",
        "design",
        "--remind-after",
        "30m",
    ]);
    let id = options(&l, "design", "Which database?");
    let head = format!("Question {id} ");
    let first = relay_at(&l, &t, NOW);
    messages(&t, ME, &head, 1);
    messages(&t, BOB, &head, 1);
    round_passed(&l, &t, NOW, BOB, "Marker before?");
    kill(first);
    // Half an hour on, the first reminder goes out and the ledger cannot record it: the
    // relay ends, and the copy it could not record is closed first.
    let half_hour = later(31 * 60);
    let config = format!(
        "[telegram]\napi = \"{}\"\ntoken_env = \"TG_TOKEN\"\npoll_timeout = 2\n",
        t.url
    );
    let env = [
        ("QUESTIONS_NOW", half_hour.as_str()),
        ("QUESTIONS_TEST_FAIL", "reminder-sent"),
    ];
    let mut failing = Relay::run(&l, "telegram", &config, &[("TG_TOKEN", TOKEN)], &env);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let (status, _) = loop {
        if let Some(ended) = failing.ended() {
            break ended;
        }
        assert!(
            std::time::Instant::now() < end,
            "the relay went on without its record"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "{}", failing.stderr());
    let reminder = "⏰ Still waiting";
    let orphan = t.with(|s| {
        s.messages
            .iter()
            .find(|m| m["text"].as_str().unwrap_or("").contains("answers nothing"))
            .cloned()
    });
    let orphan = orphan.expect("the reminder closed");
    assert_eq!(orphan["edited"], true, "{orphan}");
    assert!(orphan.get("reply_markup").is_none(), "{orphan}");
    // Started again, the reminders are sent anew: each chat holds one live copy of the
    // question, the newest.
    let _second = relay_at(&l, &t, &half_hour);
    for chat in [ME, BOB] {
        t.until(&format!("one live copy in chat {chat}"), |s| {
            let live: Vec<&Value> = s
                .messages
                .iter()
                .filter(|m| {
                    m["chat"]["id"] == chat
                        && m["text"].as_str().unwrap_or("").contains(&head)
                        && m.get("reply_markup").is_some()
                })
                .collect();
            (live.len() == 1 && live[0]["text"].as_str().unwrap_or("").starts_with(reminder))
                .then_some(())
        });
    }
}

/// The messages in `chat` that start with `head`, as they stand.
fn texts(t: &StandIn, chat: i64, head: &str) -> Vec<String> {
    t.messages_to(chat)
        .iter()
        .filter_map(|m| m["text"].as_str())
        .filter(|text| text.starts_with(head))
        .map(str::to_string)
        .collect()
}

#[test]
fn relay_quiet_hours_hold_cards_but_urgent_ones_then_one_digest_across_a_kill() {
    let l = Ledger::new();
    let t = StandIn::start();
    let me = relay_harness::people(&l, &format!("telegram:{ME}"), &format!("telegram:{BOB}"));
    // NOW is 00:47 in Berlin: inside bob's night, which ends at 07:00 there (06:00Z).
    let set = l.ok([
        "people",
        "quiet",
        "bob",
        "22:00-07:00",
        "--tz",
        "Europe/Berlin",
    ]);
    assert_eq!(set["changed"], true);
    let listed = l.ok(["people", "list"]);
    assert_eq!(listed["quiet"][0]["person"], "bob", "{listed}");
    assert_eq!(listed["quiet"][0]["tz"], "Europe/Berlin");
    let held = options(&l, "design", "Which database?");
    let urgent = l.log_with("ops", "Prod is down: roll back?", &["--urgent"]);
    let expiring = l.log_with("design", "Which port?", &["--expires-in", "1h"]);
    let (held_head, urgent_head, expiring_head) = (
        format!("Question {held} "),
        format!("Question {urgent} "),
        format!("Question {expiring} "),
    );
    let night = relay_at(&l, &t, NOW);
    for head in [&held_head, &urgent_head, &expiring_head] {
        messages(&t, ME, head, 1);
    }
    messages(&t, BOB, &urgent_head, 1);
    round_passed(&l, &t, NOW, ME, "Marker at night?");
    assert_eq!(count(&t, BOB, &held_head), 0, "held in the window");
    assert_eq!(count(&t, BOB, &expiring_head), 0);
    assert!(texts(&t, BOB, "Quiet hours").is_empty());
    kill(night);

    // 30 s after the window's end: the digest, then the held card; the question that
    // expired meanwhile is not delivered.
    let morning = "2026-11-22T06:00:30.000Z";
    let first = relay_at(&l, &t, morning);
    let digest = messages(&t, BOB, "Quiet hours are over", 1).remove(0);
    let words = digest["text"].as_str().unwrap();
    assert!(
        words.contains(&format!("#{held} Which database?")),
        "{words}"
    );
    assert!(!words.contains(&format!("#{expiring} ")), "{words}");
    assert!(!words.contains(&format!("#{urgent} ")), "{words}");
    let card = messages(&t, BOB, &held_head, 1).remove(0);
    assert!(
        digest["message_id"].as_i64() < card["message_id"].as_i64(),
        "the header comes first"
    );
    // Killed once the card is recorded as sent (as the reminders' test is, for the same
    // reason): what must not come twice is the digest.
    round_passed(&l, &t, morning, BOB, "Marker after the digest?");
    kill(first);

    // Started again, it sends no second digest and no second card.
    let later_on = "2026-11-22T06:00:50.000Z";
    let second = relay_at(&l, &t, later_on);
    round_passed(&l, &t, later_on, BOB, "Marker in the morning?");
    assert_eq!(texts(&t, BOB, "Quiet hours are over").len(), 1);
    assert_eq!(count(&t, BOB, &held_head), 1);
    assert_eq!(count(&t, BOB, &expiring_head), 0);
    // The held card answers as any card does.
    let click = t.click(BOB, &card, &button(&card, "SQLite"));
    assert!(t.answer_to(click).starts_with("recorded"));
    assert_eq!(l.question(held)["answered_by"], "bob");
    kill(second);
    let _ = me;
}

#[test]
fn relay_a_delegate_votes_on_an_approval_for_the_approver_and_the_requester_never_does() {
    let l = Ledger::new();
    let t = StandIn::start();
    let me = relay_harness::people(&l, &format!("telegram:{ME}"), &format!("telegram:{BOB}"));
    let until = later(7 * 86_400);
    // alice is away: bob stands in for her. carol's delegate is me, who asks for it.
    l.ok([
        "people", "delegate", "alice", "--to", "bob", "--until", &until,
    ]);
    l.ok([
        "people", "delegate", "carol", "--to", &me, "--until", &until,
    ]);
    let id = l.log_with(
        "deploy",
        "Deploy build 42?",
        &["--approval", "--approvers", "alice,carol", "--min", "1"],
    );
    let head = format!("Question {id} ");
    let _relay = relay_at(&l, &t, NOW);
    let bobs = messages(&t, BOB, &head, 1).remove(0);
    round_passed(&l, &t, NOW, ME, "Marker?");
    assert_eq!(
        count(&t, ME, &head),
        0,
        "the requester gets no card, as a delegate neither"
    );
    let click = t.click(BOB, &bobs, &button(&bobs, "Approve"));
    assert!(
        t.answer_to(click).starts_with("recorded"),
        "{}",
        t.answer_to(click)
    );
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 0);
    let q = l.question(id);
    let votes = q["approval"]["votes"].as_array().unwrap();
    assert_eq!(votes.len(), 1);
    assert_eq!(votes[0]["by"], "bob");
    assert_eq!(votes[0]["on_behalf_of"], "alice");
    let voted = events(&l, id, "voted");
    assert_eq!(voted[0]["answered_by"], "bob");
    assert_eq!(voted[0]["detail"]["on_behalf_of"], "alice");
}

/// The reminders of question `id` in `chat` among `messages`, oldest first.
fn reminders_in(messages: &[Value], chat: i64, id: i64) -> Vec<Value> {
    let head = format!("Question {id} ");
    messages
        .iter()
        .filter(|m| {
            let text = m["text"].as_str().unwrap_or("");
            m["chat"]["id"] == chat && text.starts_with("⏰") && text.contains(&head)
        })
        .cloned()
        .collect()
}

/// The reminders of question `id` in `chat`, as they stand.
fn reminders(t: &StandIn, chat: i64, id: i64) -> Vec<Value> {
    t.with(|s| reminders_in(&s.messages, chat, id))
}

#[test]
fn relay_a_reminder_due_in_quiet_hours_waits_for_the_digest_and_comes_once_but_urgent_ones_break_through(
) {
    let l = Ledger::new();
    let t = StandIn::start();
    relay_harness::people(&l, &format!("telegram:{ME}"), &format!("telegram:{BOB}"));
    // bob's night in Berlin is 21:00Z to 06:00Z; reminders come 2 h, 6 h and 14 h after
    // a question: the first two inside his night, the last after it.
    l.ok([
        "people",
        "quiet",
        "bob",
        "22:00-07:00",
        "--tz",
        "Europe/Berlin",
    ]);
    l.ok([
        "policy",
        "set",
        "--stage",
        "design",
        "--remind-after",
        "2h",
        "--remind-max",
        "3",
    ]);
    let evening = "2026-11-21T20:00:00.000Z";
    let logged = |args: &[&str]| {
        l.run_at(evening, args).json["question_id"]
            .as_i64()
            .unwrap()
    };
    let held = logged(&[
        "log",
        "--stage",
        "design",
        "--question",
        "Which database?",
        "--option",
        "PostgreSQL",
        "--option",
        "SQLite",
    ]);
    let urgent = logged(&[
        "log",
        "--stage",
        "design",
        "--question",
        "Prod is down: roll back?",
        "--urgent",
    ]);
    let head = format!("Question {held} ");
    let first = relay_at(&l, &t, evening);
    messages(&t, BOB, &head, 1);
    messages(&t, BOB, &format!("Question {urgent} "), 1);
    round_passed(&l, &t, evening, BOB, "Marker in the evening?");
    kill(first);

    // In the night, both reminders fall due: runner gets each, bob only the urgent
    // question's.
    for (now, n) in [(NOW, 1), ("2026-11-22T03:00:00.000Z", 2)] {
        let night = relay_at(&l, &t, now);
        let words = format!("reminder {n} of 3");
        t.until(&format!("my {words}"), |s| {
            (reminders_in(&s.messages, ME, held).len() == n).then_some(())
        });
        t.until(&format!("bob's urgent {words}"), |s| {
            (reminders_in(&s.messages, BOB, urgent).len() == n).then_some(())
        });
        round_passed(&l, &t, now, ME, &format!("Marker {n} at night?"));
        assert!(
            reminders(&t, BOB, held).is_empty(),
            "no reminder inside the window"
        );
        assert!(texts(&t, BOB, "Quiet hours").is_empty());
        let last = reminders(&t, BOB, urgent).pop().unwrap();
        assert!(last["text"].as_str().unwrap().contains(&words), "{last}");
        kill(night);
    }
    assert_eq!(events(&l, held, "reminded").len(), 2, "each at its slot");

    // 30 s after the window's end: the digest lists the question, then its reminder
    // comes once, as the latest (2 of 3), and the card before loses its buttons.
    let morning = "2026-11-22T06:00:30.000Z";
    let first = relay_at(&l, &t, morning);
    let digest = messages(&t, BOB, "Quiet hours are over", 1).remove(0);
    let words = digest["text"].as_str().unwrap();
    assert!(
        words.contains(&format!("#{held} Which database?")),
        "{words}"
    );
    assert!(!words.contains(&format!("#{urgent} ")), "{words}");
    let reminder = t.until("bob's reminder after the digest", |s| {
        reminders_in(&s.messages, BOB, held).pop()
    });
    assert!(
        reminder["text"]
            .as_str()
            .unwrap()
            .starts_with("⏰ Still waiting for your answer (reminder 2 of 3)"),
        "{reminder}"
    );
    assert!(
        digest["message_id"].as_i64() < reminder["message_id"].as_i64(),
        "the header comes first"
    );
    round_passed(&l, &t, morning, BOB, "Marker after the digest?");
    kill(first);

    // Started again: no second digest, the reminder not sent twice.
    let later_on = "2026-11-22T06:00:50.000Z";
    let second = relay_at(&l, &t, later_on);
    round_passed(&l, &t, later_on, BOB, "Marker in the morning?");
    assert_eq!(texts(&t, BOB, "Quiet hours are over").len(), 1);
    assert_eq!(reminders(&t, BOB, held).len(), 1);
    assert_eq!(count(&t, BOB, &head), 2, "the card and one reminder");
    assert_eq!(events(&l, held, "reminded").len(), 2);
    // The reminder answers the question.
    let click = t.click(BOB, &reminder, &button(&reminder, "SQLite"));
    assert!(t.answer_to(click).starts_with("recorded"));
    let q = l.question(held);
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(q["answered_by"], "bob");
    kill(second);
}
