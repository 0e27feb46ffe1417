//! `questions relay` on Telegram (§14), against the Bot API stand-in
//! (telegram_standin.rs): what every channel promises is the channel suite's
//! (channel_suite.rs, run here through `Telegram` below); what Telegram alone does is a
//! test here. They run on the engine the pass gives (SQLite, PostgreSQL, PgBouncer).

use std::time::{Duration, Instant};

use crate::channel_suite::{ChannelUnderTest, Who};
use crate::common::*;
use crate::relay_harness::{self, me, Relay};
use crate::telegram_standin::{StandIn, TOKEN};
use serde_json::Value;

/// The Telegram user ids of the tests' people: the person running them, bob, a stranger.
const ME: i64 = 111;
const BOB: i64 = 222;
const STRANGER: i64 = 999;

impl Relay {
    fn telegram(l: &Ledger, api: &str, env: &[(&str, &str)]) -> Relay {
        let config =
            format!("[telegram]\napi = \"{api}\"\ntoken_env = \"TG_TOKEN\"\npoll_timeout = 2\n");
        Relay::run(l, "telegram", &config, &[("TG_TOKEN", TOKEN)], env)
    }
}

/// A ledger where the tests' runner is `me` on Telegram (ME) and bob is BOB, linked by
/// the runner as an admin of the group `people`.
fn people(l: &Ledger) -> String {
    relay_harness::people(l, &format!("telegram:{ME}"), &format!("telegram:{BOB}"))
}

fn options(l: &Ledger, stage: &str, text: &str) -> i64 {
    l.log_with(
        stage,
        text,
        &["--option", "PostgreSQL", "--option", "SQLite"],
    )
}

/// The card for question `id` in `chat`, once sent.
fn card(t: &StandIn, chat: i64, id: i64) -> Value {
    let head = format!("Question {id} ");
    t.until(&format!("the card of question {id}"), |s| {
        s.messages
            .iter()
            .find(|m| {
                m["chat"]["id"] == chat && m["text"].as_str().unwrap_or("").starts_with(&head)
            })
            .cloned()
    })
}

/// The callback_data of the card's button whose label contains `label`.
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

/// Waits for the card of `id` in `chat` to be edited; its text.
fn closed(t: &StandIn, chat: i64, id: i64) -> Value {
    let head = format!("Question {id} ");
    t.until("the card closed", |s| {
        s.messages
            .iter()
            .find(|m| {
                m["chat"]["id"] == chat
                    && m["text"].as_str().unwrap_or("").starts_with(&head)
                    && m["edited"] == true
                    && m.get("reply_markup").is_none()
            })
            .cloned()
    })
}

#[test]
fn relay_honours_a_429s_retry_after() {
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    t.with(|s| s.throttle = Some(("sendMessage".into(), 2)));
    let id = options(&l, "design", "Which database?");
    let relay = Relay::telegram(&l, &t.url, &[]);
    card(&t, ME, id);
    let (throttled, sent) = t.with(|s| {
        let at = s.throttled_at.expect("a 429 was answered");
        let next = s
            .calls
            .iter()
            .find(|(m, when)| m == "sendMessage" && *when > at)
            .map(|(_, when)| *when)
            .unwrap();
        (at, next)
    });
    assert!(
        sent.duration_since(throttled) >= Duration::from_secs(2),
        "sent again after {:?}",
        sent.duration_since(throttled)
    );
    assert!(relay.stderr().contains("429"));
}

#[test]
fn relay_a_second_relay_waits_for_the_first() {
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    let first = Relay::telegram(&l, &t.url, &[]);
    // The first holds the channel once it polls the bot.
    t.until("the first relay polling", |s| {
        s.calls.iter().any(|(m, _)| m == "getUpdates").then_some(())
    });
    let second = Relay::telegram(&l, &t.url, &[]);
    let end = Instant::now() + Duration::from_secs(10);
    while !second.stderr().contains("held by the relay") {
        assert!(Instant::now() < end, "the second relay never said it waits");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The second tries the lease again every 2 s; the first's long polls (2 s each)
    // overlap any poll of the second's, which the stand-in counts as a conflict. Two
    // whole polls of the first after the second said it waits span one of its tries.
    let polls = |s: &crate::telegram_standin::State| {
        s.calls.iter().filter(|(m, _)| m == "getUpdates").count()
    };
    let seen = t.with(|s| polls(s));
    t.until("two more polls of the first relay", |s| {
        (polls(s) >= seen + 3).then_some(())
    });
    assert_eq!(t.with(|s| s.conflicts), 0, "only one relay polls the bot");
    assert_eq!(first.stop().code(), Some(0));
    // The first let its lease go: the second takes the channel over.
    let id = options(&l, "design", "Which database?");
    card(&t, ME, id);
    assert_eq!(second.stop().code(), Some(0));
}

#[test]
fn relay_multi_select_toggles_change_the_card_only_and_done_records_them() {
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    let multi = l.log_with(
        "design",
        "Which targets?",
        &[
            "--option",
            "Linux",
            "--option",
            "macOS",
            "--option",
            "Windows",
            "--multi-select",
        ],
    );
    let _relay = Relay::telegram(&l, &t.url, &[]);
    // Toggles change the card only; Done records the options toggled on.
    let card1 = card(&t, ME, multi);
    let linux = t.click(ME, &card1, &button(&card1, "Linux"));
    t.answer_to(linux);
    let card2 = t.until("the card toggled", |s| {
        s.messages
            .iter()
            .find(|m| m["message_id"] == card1["message_id"] && m["edited"] == true)
            .cloned()
    });
    assert_eq!(
        l.question(multi)["status"],
        "pending",
        "a toggle records nothing"
    );
    let windows = t.click(ME, &card2, &button(&card2, "Windows"));
    t.answer_to(windows);
    let card3 = t.until("the card toggled twice", |s| {
        s.messages
            .iter()
            .find(|m| {
                m["message_id"] == card1["message_id"]
                    && m["reply_markup"].to_string().contains("☑ 3.")
            })
            .cloned()
    });
    let done = t.click(ME, &card3, &button(&card3, "Done"));
    assert!(
        t.answer_to(done).starts_with("recorded"),
        "{}",
        t.answer_to(done)
    );
    let q = l.question(multi);
    assert_eq!(
        q["selected"],
        serde_json::json!(["Linux", "Windows"]),
        "{q}"
    );
}

/// A config's keys of each channel are the channel suite's (channel_suite.rs); these are
/// the relay's own: no channel, an unknown one, a channel that is not a table.
#[test]
fn relay_a_config_of_no_channel_or_an_unknown_one_is_a_usage_error() {
    let l = Ledger::new();
    for (config, names) in [
        ("[irc]\n", "[irc]"),
        ("telegram = 1\n", "'telegram'"),
        ("", "no channel"),
    ] {
        relay_harness::refuses(&l, config, &[("TG_TOKEN", TOKEN)], &[TOKEN], names);
    }
    let none = l.run(["relay"]);
    assert_eq!(none.error_code(), "usage");
}

/// The transcript in docs/guide/relay.md is a real run against the stand-in: a change of
/// what the relay sends, says or records that leaves the guide behind fails here
/// (`QUESTIONS_WRITE_DOCS=1` writes the run there instead).
#[test]
fn relay_the_guide_s_transcript_is_what_the_relay_does() {
    let l = Ledger::new();
    let t = StandIn::start();
    let admin = me(&l);
    let mut out = String::new();
    let show =
        |out: &mut String, args: &[&str], print: bool| relay_harness::show(&l, out, args, print);
    l.ok(["group", "create", "people", "--admins", &admin]);
    out.push_str("$ questions group create people --admins \"$(id -un)\"\n");
    let code = show(&mut out, &["relay", "pair", "telegram", "alice"], true)["code"]
        .as_str()
        .unwrap()
        .to_string();
    let id = show(
        &mut out,
        &[
            "log",
            "--stage",
            "design",
            "--question",
            "Which database?",
            "--option",
            "PostgreSQL",
            "--option",
            "SQLite (Recommended)",
        ],
        false,
    )["question_id"]
        .as_i64()
        .unwrap();
    let relay = Relay::telegram(&l, &t.url, &[]);
    out.push_str("$ questions relay --config relay.toml &\n{\"ok\":true,\"procedure\":\"relay\",\"channels\":[\"telegram\"]}\n");
    t.write(ME, &format!("/start {code}"), None);
    let linked = t.until("linked", |s| {
        s.messages
            .iter()
            .find(|m| m["text"].as_str().unwrap().starts_with("linked"))
            .cloned()
    });
    out.push_str(&format!(
        "# alice sends the bot /start {code}; the bot answers:\n#   {}\n",
        linked["text"].as_str().unwrap()
    ));
    let c = card(&t, ME, id);
    out.push_str(&format!(
        "# her card:\n#   {}\n",
        c["text"].as_str().unwrap().replace('\n', "\n#   ")
    ));
    let buttons: Vec<&str> = c["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_array().unwrap())
        .map(|b| b["text"].as_str().unwrap())
        .collect();
    out.push_str(&format!("#   buttons: {}\n", buttons.join(" | ")));
    let click = t.click(ME, &c, &button(&c, "SQLite"));
    out.push_str(&format!(
        "# she presses \"2. SQLite ★\"; Telegram shows her: {}\n",
        t.answer_to(click)
    ));
    let edited = closed(&t, ME, id);
    out.push_str(&format!(
        "# the card now ends: {}\n",
        edited["text"].as_str().unwrap().lines().last().unwrap()
    ));
    show(&mut out, &["check", "--stage", "design"], true);
    let history = l.ok(["history", "--id", &id.to_string()]);
    let answered = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "answered")
        .unwrap();
    out.push_str(&format!(
        "# its answered event in 'questions history --id {id}', shortened to these keys:\n{}\n",
        serde_json::json!({
            "event": answered["event"], "answered_by": answered["answered_by"],
            "channel": answered["channel"], "answer": answered["after"]["answer"],
            "detail": answered["detail"],
        })
    ));
    relay.stop();
    // The code is new on every run: the guide shows one.
    let out = out.replace(&code, "588DGV2WRX");
    crate::docs::assert_documented("docs/guide/relay.md", "transcript: telegram", &out);
}

/// The time from a click reaching the stand-in to its answer committed (the relay
/// acknowledges a click only after the commit), with 50 questions pending:
/// `cargo test --test cli relay_bench_click_to_ledger -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn relay_bench_click_to_ledger() {
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    let ids: Vec<i64> = (0..50)
        .map(|n| options(&l, "bench", &format!("Question number {n}?")))
        .collect();
    let relay = Relay::telegram(&l, &t.url, &[]);
    let cards: Vec<Value> = ids.iter().map(|id| card(&t, ME, *id)).collect();
    // What a delivery row holds, in bytes of its table's pages (SQLite's dbstat), and
    // its payload alone.
    let conn = rusqlite::Connection::open(&l.path).unwrap();
    let (pages, payload): (i64, i64) = conn
        .query_row(
            "SELECT sum(pgsize), sum(payload) FROM dbstat WHERE name LIKE '%relay_deliveries%'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM relay_deliveries", [], |r| r.get(0))
        .unwrap();
    println!(
        "stored per delivery: {} bytes of payload ({} deliveries, their table and index in \
         {pages} bytes of pages)",
        payload / rows,
        rows
    );
    // From the click to a gate waiting on its question passing: each of 10 questions
    // has its own stage, and a `check --wait` on it from another process.
    let mut gate: Vec<Duration> = Vec::new();
    for id in 0..10 {
        let stage = format!("gate-{id}");
        let own = options(&l, &stage, &format!("Gate {id}?"));
        let own_card = card(&t, ME, own);
        // It has found the gate closed and waits for a change, when the click comes.
        let wait = Pause::new(l.dir.path(), "wait");
        let mut waiting = std::process::Command::new(BIN)
            .env("QUESTIONS_TEST_PAUSE", &wait.env)
            .arg("--db")
            .arg(l.db())
            .args(["check", "--stage", &stage, "--wait", "--timeout", "60"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait.reached();
        wait.release();
        let start = Instant::now();
        t.click(ME, &own_card, &button(&own_card, "SQLite"));
        let status = waiting.wait().unwrap();
        gate.push(start.elapsed());
        assert!(status.success(), "the gate opened");
    }
    gate.sort();
    println!(
        "click to a waiting check --stage --wait passing, 10 gates, {} pending: median {:?}, \
         max {:?}",
        50,
        gate[gate.len() / 2],
        gate[gate.len() - 1]
    );
    let mut took: Vec<Duration> = Vec::new();
    for c in cards.iter().take(25) {
        let data = button(c, "SQLite");
        let start = Instant::now();
        let click = t.click(ME, c, &data);
        t.answer_to(click);
        took.push(start.elapsed());
    }
    took.sort();
    println!(
        "click to committed answer, 25 clicks, 50 pending: median {:?}, max {:?}",
        took[took.len() / 2],
        took[took.len() - 1]
    );
    let answered = l.ok(["list", "--stage", "bench", "--status", "answered"]);
    assert_eq!(answered["count"], 25);
    // Idle: CPU time over 10 s with nothing happening (long polls of 2 s here).
    let ticks = || relay.cpu_ticks();
    std::thread::sleep(Duration::from_secs(2));
    let before = ticks();
    std::thread::sleep(Duration::from_secs(10));
    println!("idle: {} clock ticks of CPU in 10 s", ticks() - before);
}

/// The card in `chat` whose text contains `words`, once sent.
fn card_saying(t: &StandIn, chat: i64, words: &str) -> Value {
    t.until(&format!("a card saying {words}"), |s| {
        s.messages
            .iter()
            .find(|m| {
                m["chat"]["id"] == chat
                    && m.get("reply_markup").is_some()
                    && m["text"].as_str().unwrap_or("").contains(words)
            })
            .cloned()
    })
}

/// The lines of the relay's stderr that contain each of `words`.
fn said_lines(relay: &Relay, words: &[&str]) -> usize {
    relay
        .stderr()
        .lines()
        .filter(|l| words.iter().all(|w| l.contains(w)))
        .count()
}

#[test]
fn relay_one_recipient_who_blocked_the_bot_holds_back_nobody_elses_cards() {
    const CAROL: i64 = 333;
    const DAVE: i64 = 444;
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    l.ok(["people", "link", "carol", &format!("telegram:{CAROL}")]);
    l.ok(["people", "link", "dave", &format!("telegram:{DAVE}")]);
    t.with(|s| {
        s.blocked.push(CAROL);
        s.unknown.push(DAVE);
    });
    let ids: Vec<i64> = (1..=3)
        .map(|n| options(&l, "design", &format!("Which database for service {n}?")))
        .collect();
    let relay = Relay::telegram(&l, &t.url, &[]);
    // Everyone else gets every card, though carol's and dave's are refused.
    for id in &ids {
        card(&t, ME, *id);
        card(&t, BOB, *id);
    }
    t.until("carol's and dave's chats tried", |s| {
        (s.refused_sends.contains(&CAROL) && s.refused_sends.contains(&DAVE)).then_some(())
    });
    // Said once for each, and tried again with a pause: carol, unblocking the bot, gets
    // her three cards.
    t.with(|s| s.blocked.clear());
    for id in &ids {
        card(&t, CAROL, *id);
    }
    assert_eq!(
        said_lines(&relay, &["was not sent", &format!("telegram:{CAROL}")]),
        1,
        "{}",
        relay.stderr()
    );
    assert!(relay
        .stderr()
        .contains("Forbidden: bot was blocked by the user"));
    assert_eq!(
        said_lines(&relay, &[&format!("telegram:{CAROL} is reached again")]),
        1
    );
    let end = Instant::now() + Duration::from_secs(15);
    while said_lines(&relay, &["was not sent", &format!("telegram:{DAVE}")]) == 0 {
        assert!(Instant::now() < end, "{}", relay.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(relay.stderr().contains("chat not found"));
    assert_eq!(
        said_lines(&relay, &["was not sent", &format!("telegram:{DAVE}")]),
        1,
        "said once however often it is tried"
    );
    assert_eq!(relay.stop().code(), Some(0));
}

#[test]
fn relay_a_reset_under_the_relay_is_followed_and_no_card_is_signed_with_the_old_key() {
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    let old = options(&l, "design", "Which database, before the reset?");
    let relay = Relay::telegram(&l, &t.url, &[]);
    let old_card = card(&t, ME, old);
    l.ok(["reset", "--yes"]);
    let me = people(&l);
    let id = options(&l, "design", "Which database, after the reset?");
    let new_card = card_saying(&t, ME, "after the reset");
    // The old ledger's card answers nothing in the new one.
    let stale = t.click(ME, &old_card, &button(&old_card, "SQLite"));
    let said = t.answer_to(stale);
    assert!(!said.starts_with("recorded"), "{said}");
    assert_eq!(l.question(id)["status"], "pending");
    // The new card is signed with the new ledger's key, and its click is heard there.
    let click = t.click(ME, &new_card, &button(&new_card, "PostgreSQL"));
    let said = t.answer_to(click);
    assert!(said.starts_with("recorded"), "{said}");
    let q = l.question(id);
    assert_eq!(q["answer"], "PostgreSQL");
    assert_eq!(q["answered_by"], me.as_str());
    // Said on stderr, through PgBouncer too: a connection opened in place of another
    // (a write's, or one the pooler dropped) knows the ledger's id the first one saw.
    assert!(
        relay.stderr().contains("reset or replaced"),
        "{}",
        relay.stderr()
    );
    assert_eq!(relay.stop().code(), Some(0));
}

#[test]
fn relay_a_typed_reply_is_exactly_a_number_or_a_label_and_an_ambiguous_one_is_refused() {
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    let numbers = l.log_with(
        "design",
        "How many replicas?",
        &[
            "--option",
            "3",
            "--option",
            "1",
            "--option",
            "2",
            "--no-freeform",
        ],
    );
    let named = options(&l, "design", "Which database?");
    let again = options(&l, "design", "Which database, again?");
    // Each card's reference is stored before the next is sent: replies wait for the last.
    let last = l.log("design", "Anything else?");
    let _relay = Relay::telegram(&l, &t.url, &[]);
    let numbers_card = card(&t, ME, numbers);
    let named_card = card(&t, ME, named);
    let again_card = card(&t, ME, again);
    card(&t, ME, last);
    let reply = |text: &str, to: &Value| {
        let sent = t.write(ME, text, Some(to));
        reply_to(&t, 900_000 + sent)
    };
    // "1" is option 2's label and option 1's number: refused, with the reason.
    let said = reply("1", &numbers_card);
    assert!(said.contains("both") && !said.contains("  "), "{said}");
    // "+2" and "02" are no number of an option.
    for text in ["+2", "02", " 2.0"] {
        let said = reply(text, &numbers_card);
        assert!(!said.starts_with("recorded"), "{text}: {said}");
        assert_eq!(l.question(numbers)["status"], "pending", "{text}");
    }
    // Where typed answers are taken, "+2" is the text typed, not option 2.
    let said = reply("+2", &named_card);
    assert!(said.starts_with("recorded"), "{said}");
    let q = l.question(named);
    assert_eq!(q["answer"], "+2", "{q}");
    assert_eq!(q["selected"], serde_json::json!([]), "{q}");
    // Exactly a number selects its option.
    let said = reply("2", &again_card);
    assert!(said.starts_with("recorded"), "{said}");
    let q = l.question(again);
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(q["selected"], serde_json::json!(["SQLite"]), "{q}");
}

/// The text of the bot's reply to the person's message `message_id`, once sent.
fn reply_to(t: &StandIn, message_id: i64) -> String {
    t.until("the relay's reply", |s| {
        s.messages
            .iter()
            .find(|m| m["reply_to"] == message_id)
            .map(|m| m["text"].as_str().unwrap().to_string())
    })
}

#[test]
fn relay_a_question_longer_than_a_card_is_cut_and_its_options_are_kept_whole() {
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    let long = format!("Which cluster? {}", "Some background. ".repeat(300));
    let first = format!(
        "Use the managed cluster in eu-west-1 with three replicas and {}A",
        "x".repeat(60)
    );
    let second = format!(
        "Use the managed cluster in eu-west-1 with three replicas and {}B",
        "x".repeat(60)
    );
    let id = l.log_with("design", &long, &["--option", &first, "--option", &second]);
    let _relay = Relay::telegram(&l, &t.url, &[]);
    let card = card(&t, ME, id);
    let text = card["text"].as_str().unwrap();
    assert!(text.chars().count() <= 4000, "{}", text.chars().count());
    assert!(text.contains(&format!("1. {first}")), "{text}");
    assert!(text.contains(&format!("2. {second}")), "{text}");
    let stored = l.question(id)["question"].as_str().unwrap().chars().count();
    let cut = stored - text.split('\n').nth(1).unwrap().chars().count() + 1;
    assert!(
        text.contains(&format!("(cut: {cut} characters;")),
        "{cut}: {text}"
    );
    assert!(text.contains("Which cluster? Some background."));
    let labels: Vec<String> = card["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[0]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert_ne!(labels[0], labels[1], "two buttons read alike");
    // Its button still answers it.
    let click = t.click(ME, &card, &button(&card, "2. "));
    assert!(t.answer_to(click).starts_with("recorded"));
    assert_eq!(l.question(id)["answer"], second.as_str());
}

/// Runs a relay as pid 1 of a pid namespace of its own (as in a container), on this
/// machine's host name.
const OWN_PID_NAMESPACE: &[&str] = &["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"];

#[test]
fn relay_two_relays_in_other_pid_namespaces_with_one_host_name_hold_the_channel_in_turn() {
    let can = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .output();
    if !can.is_ok_and(|o| o.status.success()) {
        return skip("unshare cannot make a pid namespace here (it needs root)");
    }
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    let config = format!(
        "[telegram]\napi = \"{}\"\ntoken_env = \"TG_TOKEN\"\npoll_timeout = 2\n",
        t.url
    );
    let run = || {
        Relay::run_in(
            &l,
            "telegram",
            &config,
            &[("TG_TOKEN", TOKEN)],
            &[],
            OWN_PID_NAMESPACE,
        )
    };
    let first = run();
    t.until("the first relay polling", |s| {
        s.calls.iter().any(|(m, _)| m == "getUpdates").then_some(())
    });
    // Both are pid 1 on one host name: the second waits all the same.
    let second = run();
    let end = Instant::now() + Duration::from_secs(15);
    while !second.stderr().contains("held by the relay") {
        assert!(
            Instant::now() < end,
            "the second relay never said it waits: {}",
            second.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(t.with(|s| s.conflicts), 0, "only one relay polls the bot");
    let id = options(&l, "design", "Which database?");
    card(&t, ME, id);
    drop(first);
    drop(second);
}

#[test]
fn relay_a_strangers_forty_messages_hold_back_no_click_and_are_refused_once() {
    let l = Ledger::new();
    let t = StandIn::start();
    let me = people(&l);
    let id = options(&l, "design", "Which database?");
    let last = l.log("design", "Anything else?");
    let _relay = Relay::telegram(&l, &t.url, &[]);
    let card = card(&t, ME, id);
    let last_card = self::card(&t, ME, last);
    for n in 0..40 {
        t.write(STRANGER, &format!("hello {n}"), None);
    }
    let pushed = Instant::now();
    let click = t.click(ME, &card, &button(&card, "SQLite"));
    let said = t.answer_to(click);
    let took = pushed.elapsed();
    assert!(said.starts_with("recorded"), "{said}");
    assert_eq!(l.question(id)["answered_by"], me.as_str());
    // Forty refusals said one a second to one chat took 37 s before the click was read.
    assert!(took < Duration::from_secs(8), "the click waited {took:?}");
    // Said once: the reply to my later message is sent after anything queued before it.
    let mine = t.write(ME, "Nothing else.", Some(&last_card));
    reply_to(&t, 900_000 + mine);
    let told = t.messages_to(STRANGER);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0]["text"].as_str().unwrap().contains("not linked"));
    // Each was heard, and refused, all the same.
    let out = l.command().arg("events").output().unwrap();
    let refused = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["event"] == "refused")
        .count();
    assert_eq!(refused, 40);
}

#[test]
fn relay_one_bot_on_two_ledgers_relays_ends_one_with_a_clear_error() {
    let t = StandIn::start();
    let first_ledger = Ledger::new();
    let second_ledger = Ledger::new();
    people(&first_ledger);
    people(&second_ledger);
    let mut first = Relay::telegram(&first_ledger, &t.url, &[]);
    t.until("the first relay polling", |s| {
        s.calls.iter().any(|(m, _)| m == "getUpdates").then_some(())
    });
    let mut second = Relay::telegram(&second_ledger, &t.url, &[]);
    // Each holds its own ledger's lease; Telegram ends one's poll when the other polls.
    let end = Instant::now() + Duration::from_secs(15);
    let (status, stdout) = loop {
        if let Some(ended) = first.ended().or_else(|| second.ended()) {
            break ended;
        }
        assert!(Instant::now() < end, "both relays read the one bot");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "{stdout}");
    let error: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(error["error_code"], "conflict", "{error}");
    let message = error["error"].as_str().unwrap();
    assert!(message.contains("another program reads"), "{message}");
    assert!(message.contains("409"), "{message}");
}

#[test]
fn relay_a_card_sent_but_not_recorded_is_closed_so_that_one_copy_alone_is_live() {
    let l = Ledger::new();
    let t = StandIn::start();
    let me = people(&l);
    let id = options(&l, "design", "Which database?");
    // The first card goes out and the ledger cannot record it: the relay ends (to be
    // started again), and the copy it could not record is closed first.
    let mut first = Relay::telegram(&l, &t.url, &[("QUESTIONS_TEST_FAIL", "card-sent")]);
    let end = Instant::now() + Duration::from_secs(15);
    let (status, _) = loop {
        if let Some(ended) = first.ended() {
            break ended;
        }
        assert!(Instant::now() < end, "the relay went on without its record");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "{}", first.stderr());
    let sent = t.with(|s| s.messages.clone());
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["edited"], true, "{sent:?}");
    assert!(sent[0].get("reply_markup").is_none(), "{sent:?}");
    assert!(
        sent[0]["text"]
            .as_str()
            .unwrap()
            .contains("answers nothing"),
        "{sent:?}"
    );
    // Started again, it sends the cards anew: one live copy each for me and bob.
    let _second = Relay::telegram(&l, &t.url, &[]);
    let live = |s: &crate::telegram_standin::State, chat: i64| -> Option<Value> {
        s.messages
            .iter()
            .find(|m| m["chat"]["id"] == chat && m.get("reply_markup").is_some())
            .cloned()
    };
    let (mine, _) = t.until("both cards sent again", |s| {
        Some((live(s, ME)?, live(s, BOB)?))
    });
    let click = t.click(ME, &mine, &button(&mine, "SQLite"));
    assert!(t.answer_to(click).starts_with("recorded"));
    assert_eq!(l.question(id)["answered_by"], me.as_str());
    // Every copy anyone holds is closed: none is left with buttons.
    t.until("every copy closed", |s| {
        (s.messages.len() == 3 && s.messages.iter().all(|m| m.get("reply_markup").is_none()))
            .then_some(())
    });
}

#[test]
fn relay_a_tap_on_approve_in_telegram_ends_the_ci_gate_waiting_for_it() {
    // The path docs/guide/ci.md walks through: the action logs an approval, the relay
    // puts its card to the approver, whose tap records the vote and ends the job's wait.
    let l = Ledger::new();
    let t = StandIn::start();
    people(&l);
    let _relay = Relay::telegram(&l, &t.url, &[]);
    let mut took = Vec::new();
    // Once; five times for the note's figure (QUESTIONS_FIGURES=1).
    let runs = if std::env::var_os("QUESTIONS_FIGURES").is_some() {
        5
    } else {
        1
    };
    for run in 0..runs {
        let stage = format!("deploy-{run}");
        let Some(mut job) = crate::ci_gate::start_action(
            &l,
            &[
                ("stage", &stage),
                ("question", "Deploy build 42?"),
                ("approvers", "bob"),
                ("timeout", "120"),
            ],
            &[],
        ) else {
            return;
        };
        let id = job.logged(&l, &stage)["id"].as_i64().unwrap();
        let bobs = card(&t, BOB, id);
        let tap = Instant::now();
        let click = t.click(BOB, &bobs, &button(&bobs, "Approve"));
        let done = job.finish();
        took.push(tap.elapsed());
        assert!(t.answer_to(click).starts_with("recorded"));
        assert_eq!(done.code, 0, "{}", done.stdout);
        let out = done.outputs();
        assert_eq!(
            (
                out["decision"].as_str(),
                out["answered-by"].as_str(),
                out["channel"].as_str()
            ),
            ("approved", "bob", "telegram"),
            "{out:?}"
        );
    }
    took.sort();
    // A figure for the note, not a check: the tap to the step's exit (the runner's own
    // start and stop included).
    println!(
        "tap on Approve to the action's exit, {runs} runs: median {:?}, max {:?}",
        took[took.len() / 2],
        took[took.len() - 1]
    );
}

/// Telegram in the channel suite (channel_suite.rs), through the Bot API stand-in.
pub(crate) struct Telegram {
    t: StandIn,
    /// The callbacks the suite made, by callback id and user: what each was told.
    clicks: std::cell::RefCell<Vec<(String, i64)>>,
}

/// An update the suite pushed: a callback, the same callback handed over again, or a
/// message.
#[derive(Clone, Debug)]
pub(crate) enum Update {
    Click(i64),
    Again(i64),
    Message(i64),
}

fn user(who: Who) -> i64 {
    match who {
        Who::Me => ME,
        Who::Bob => BOB,
        Who::Stranger => STRANGER,
    }
}

impl Telegram {
    fn click(&self, who: Who, card: &Value, data: &str) -> Update {
        let update = self.t.click(user(who), card, data);
        self.clicks
            .borrow_mut()
            .push((format!("cb{update}"), user(who)));
        Update::Click(update)
    }
}

impl ChannelUnderTest for Telegram {
    const NAME: &'static str = "telegram";
    const TELLS_STRANGERS: bool = true;
    const HOLDS_A_CONNECTION: bool = false;
    type Sent = Update;

    fn start(_: &Ledger) -> Telegram {
        Telegram {
            t: StandIn::start(),
            clicks: std::cell::RefCell::default(),
        }
    }

    fn identity(&self, who: Who) -> String {
        format!("telegram:{}", user(who))
    }

    fn relay(&self, l: &Ledger, env: &[(&str, &str)]) -> Relay {
        Relay::telegram(l, &self.t.url, env)
    }

    fn card(&self, who: Who, id: i64) -> Value {
        card(&self.t, user(who), id)
    }

    fn cards(&self, who: Who, id: i64) -> usize {
        let head = format!("Question {id} ");
        self.t
            .messages_to(user(who))
            .iter()
            .filter(|m| m["text"].as_str().unwrap_or("").starts_with(&head))
            .count()
    }

    fn options(&self, card: &Value) -> Vec<String> {
        card["reply_markup"]["inline_keyboard"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| row.as_array().unwrap().clone())
            .map(|b| b["text"].as_str().unwrap().to_string())
            .filter(|label| !label.starts_with("Other"))
            .map(|label| match label.split_once(". ") {
                Some((n, rest)) if n.chars().all(|c| c.is_ascii_digit()) => rest.to_string(),
                _ => label,
            })
            .collect()
    }

    fn press(&self, who: Who, card: &Value, label: &str) -> Update {
        self.click(who, card, &button(card, label))
    }

    fn type_answer(&self, who: Who, card: &Value, text: &str) -> Update {
        Update::Message(self.t.write(user(who), text, Some(card)))
    }

    fn forgeries(&self, who: Who, card: &Value, label: &str) -> Vec<Update> {
        // Another option under the same signature, a signature changed.
        let data = button(card, label);
        let (head, sig) = data.rsplit_once(':').unwrap();
        let other = head.replace(":o2", ":o1");
        assert_ne!(other, head, "{data}");
        let flipped = format!(
            "{head}:{}{}",
            &sig[..sig.len() - 1],
            if sig.ends_with('0') { "1" } else { "0" }
        );
        [format!("{other}:{sig}"), flipped]
            .iter()
            .map(|forged| {
                let sent = self.click(who, card, forged);
                let said = self.told(&sent);
                assert!(said.contains("not one this relay signed"), "{said}");
                sent
            })
            .collect()
    }

    fn write(&self, who: Who, text: &str) -> Update {
        Update::Message(self.t.write(user(who), text, None))
    }

    fn pairing(code: &str) -> String {
        format!("/start {code}")
    }

    fn deliver_twice(&self, who: Who, card: &Value, label: &str) -> (Update, Update) {
        let data = button(card, label);
        let first = self.click(who, card, &data);
        let Update::Click(click) = first else {
            unreachable!()
        };
        self.t.answer_to(click);
        // The provider hands the same update over again (its id, its callback).
        self.t.redeliver(
            click,
            serde_json::json!({"callback_query": {
                "id": format!("again{click}"),
                "from": {"id": user(who), "is_bot": false, "first_name": "P"},
                "message": card, "chat_instance": "1", "data": data,
            }}),
        );
        self.clicks
            .borrow_mut()
            .push((format!("again{click}"), user(who)));
        (first, Update::Again(click))
    }

    fn told(&self, sent: &Update) -> String {
        match sent {
            Update::Click(u) => self.t.answer_to(*u),
            Update::Again(u) => {
                let id = format!("again{u}");
                self.t.until("the second delivery's answer", |s| {
                    s.callback_answers
                        .iter()
                        .find(|(c, _)| *c == id)
                        .map(|(_, text)| text.clone())
                })
            }
            Update::Message(u) => reply_to(&self.t, 900_000 + u),
        }
    }

    fn said_to(&self, who: Who) -> Vec<String> {
        let chat = user(who);
        let clicks = self.clicks.borrow();
        self.t.with(|s| {
            let answers = s
                .callback_answers
                .iter()
                .filter(|(c, _)| clicks.iter().any(|(id, from)| id == c && *from == chat))
                .map(|(_, text)| text.clone());
            let messages = s.messages.iter().filter_map(|m| {
                let text = m["text"].as_str().unwrap_or("");
                (m["chat"]["id"] == chat && !text.starts_with("Question "))
                    .then(|| text.to_string())
            });
            answers.chain(messages).collect()
        })
    }

    fn passed(&self, _: &Ledger, sent: &Update) {
        // Handed over again, it was read once its callback was answered.
        if let Update::Again(u) = sent {
            self.told(sent);
            assert_eq!(
                self.t
                    .with(|s| s.delivered.iter().filter(|d| *d == u).count()),
                2,
                "handed over twice"
            );
        }
        // The offset of the relay's next getUpdates is the position it committed.
        let (Update::Click(u) | Update::Again(u) | Update::Message(u)) = sent;
        self.t.until("the update confirmed", |s| {
            s.updates.iter().all(|x| x["update_id"] != *u).then_some(())
        });
    }

    fn settled(&self, who: Who, id: i64) -> String {
        closed(&self.t, user(who), id)["text"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn bad_configs() -> Vec<(String, &'static str)> {
        [
            (
                "[telegram]\ntoken_env = \"TG_TOKEN\"\npoll = 3\n",
                "telegram.poll",
            ),
            (
                "[telegram]\napi = \"ftp://x\"\ntoken_env = \"TG_TOKEN\"\n",
                "telegram.api",
            ),
            (
                "[telegram]\napi = \"http://127.0.0.1:9\"\n",
                "telegram.token_env",
            ),
            (
                "[telegram]\napi = \"http://\"\ntoken_env = \"TG_TOKEN\"\n",
                "telegram.api",
            ),
            (
                "[telegram]\napi = \"https://api telegram.org\"\ntoken_env = \"TG_TOKEN\"\n",
                "telegram.api",
            ),
            (
                "[telegram]\napi = \"https://api.telegram.org:99999\"\ntoken_env = \"TG_TOKEN\"\n",
                "telegram.api",
            ),
            (
                "[telegram]\napi = \"https://user@evil.test\"\ntoken_env = \"TG_TOKEN\"\n",
                "telegram.api",
            ),
            (
                "[telegram]\napi = \"https://api.telegram.org/?x=1\"\ntoken_env = \"TG_TOKEN\"\n",
                "telegram.api",
            ),
            (
                "[telegram]\ntoken_env = \"TG_TOKEN\"\npoll_timeout = \"soon\"\n",
                "telegram.poll_timeout",
            ),
            // The variable named but not set: said by its name.
            (
                "[telegram]\ntoken_env = \"NOT_SET_ANYWHERE\"\n",
                "NOT_SET_ANYWHERE",
            ),
        ]
        .into_iter()
        .map(|(config, names)| (config.to_string(), names))
        .collect()
    }

    fn config_env() -> Vec<(&'static str, &'static str)> {
        vec![("TG_TOKEN", TOKEN)]
    }

    fn secrets() -> Vec<&'static str> {
        vec![TOKEN]
    }
}
