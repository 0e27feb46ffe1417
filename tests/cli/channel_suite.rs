//! What every relay channel promises (§14), as one suite run against each channel's
//! stand-in: identity (a stranger refused, nothing recorded, told once at most), binding
//! to the card (another person's card, a forged button or reply token), exactly once (an
//! event delivered twice, a second answer), settled everywhere (answered elsewhere, the
//! card says so), restarts (killed between the event and the commit), approvals,
//! pairing, a question cleared and logged again, no listening socket, a bad config.
//!
//! A channel implements `ChannelUnderTest` next to its stand-in, and relay_suite.rs
//! names it in one `channel_suite!` line. No test proves a negative by sleeping: each
//! "nothing happened" first waits for the channel's read position to pass the message
//! (`passed`), or for a later event the relay records or says.

use serde_json::Value;

use crate::common::*;
use crate::relay_harness::{self, Relay};

/// The people of the suite: the runner (linked as `me`), bob (linked), and a stranger
/// (linked to nobody), each with an account on the channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Who {
    Me,
    Bob,
    Stranger,
}

/// A channel's stand-in (or real servers), as the suite drives it.
pub(crate) trait ChannelUnderTest: Sized {
    /// The channel's name, as the ledger records it (`channel`, identities' prefix).
    const NAME: &'static str;
    /// Whether a stranger is told why they are refused (once); email tells nobody it
    /// cannot vouch for, so that a forged sender gets no mail.
    const TELLS_STRANGERS: bool;
    /// Whether the relay holds a connection open at all times (a websocket, an IMAP
    /// session) rather than only while it polls.
    const HOLDS_A_CONNECTION: bool;
    /// What the refusal of a forgery (`forgeries`) says, in part: a signature that does
    /// not verify, where the channel's buttons or reply addresses are signed.
    const FORGED: &'static str = "sign";
    /// What the suite keeps of an event it handed the channel (a click, a message).
    type Sent: Clone + std::fmt::Debug;

    /// Why the channel's servers cannot run on this machine, if they cannot.
    fn missing() -> Option<String> {
        None
    }
    /// The stand-in started, for the ledger `l` (no relay yet).
    fn start(l: &Ledger) -> Self;
    /// `who`'s identity on the channel, as `people link` takes it.
    fn identity(&self, who: Who) -> String;
    /// `questions relay` on this channel, with `env` in its environment.
    fn relay(&self, l: &Ledger, env: &[(&str, &str)]) -> Relay;
    /// The card of question `id` sent to `who`, once sent.
    fn card(&self, who: Who, id: i64) -> Value;
    /// How many cards of question `id` were sent to `who` so far.
    fn cards(&self, who: Who, id: i64) -> usize;
    /// The options the card offers, by label, in order (Approve and Reject on an
    /// approval's).
    fn options(&self, card: &Value) -> Vec<String>;
    /// `who` answering `card` by its "button" for the option whose label contains
    /// `label` (a callback, a block action, a reply with the option's number).
    fn press(&self, who: Who, card: &Value, label: &str) -> Self::Sent;
    /// `who` answering `card` by typed text.
    fn type_answer(&self, who: Who, card: &Value, text: &str) -> Self::Sent;
    /// `who` pressing `label` on `card` with its value altered, each way the channel's
    /// values can be (another option under the same signature, a signature changed).
    fn forgeries(&self, who: Who, card: &Value, label: &str) -> Vec<Self::Sent>;
    /// `who` writing `text` to the relay outside any card (a pairing code, a greeting).
    fn write(&self, who: Who, text: &str) -> Self::Sent;
    /// The message that pairs an account with `code` (`relay pair`).
    fn pairing(code: &str) -> String;
    /// `who` pressing `label` on `card`, the provider then handing that same event over
    /// a second time; both.
    fn deliver_twice(&self, who: Who, card: &Value, label: &str) -> (Self::Sent, Self::Sent);
    /// What the relay said in answer to `sent`, once said.
    fn told(&self, sent: &Self::Sent) -> String;
    /// Everything the relay has said to `who` so far that is not a card (answers to
    /// clicks, replies, settled messages).
    fn said_to(&self, who: Who) -> Vec<String>;
    /// Waits until the relay's read position has passed `sent`: what it records of it
    /// is committed.
    fn passed(&self, l: &Ledger, sent: &Self::Sent);
    /// Waits for the card of `id` sent to `who` to be settled (closed without its
    /// buttons, or a message in its thread); what it says then.
    fn settled(&self, who: Who, id: i64) -> String;
    /// Configs the relay must refuse as a usage error, each with what the error names;
    /// the environment they run with, and the secrets in it, which are never printed.
    fn bad_configs() -> Vec<(String, &'static str)>;
    fn config_env() -> Vec<(&'static str, &'static str)>;
    fn secrets() -> Vec<&'static str>;
}

/// Links the runner and bob on the channel (the runner an admin of `people`); the
/// runner's name.
fn people<C: ChannelUnderTest>(l: &Ledger, c: &C) -> String {
    relay_harness::people(l, &c.identity(Who::Me), &c.identity(Who::Bob))
}

fn options(l: &Ledger, stage: &str, text: &str) -> i64 {
    l.log_with(
        stage,
        text,
        &["--option", "PostgreSQL", "--option", "SQLite"],
    )
}

fn events_of(l: &Ledger, id: i64) -> Vec<Value> {
    l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .clone()
}

fn kinds(l: &Ledger, id: i64, kind: &str) -> usize {
    events_of(l, id)
        .iter()
        .filter(|e| e["event"] == kind)
        .count()
}

/// Every event of the ledger (`questions events`).
fn all_events(l: &Ledger) -> Vec<Value> {
    let out = l.command().arg("events").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits until the ledger holds `n` refused events of `identity`: the relay committed its
/// read position past each refused message with it.
fn refusals(l: &Ledger, identity: &str, n: usize) -> Vec<Value> {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let found: Vec<Value> = all_events(l)
            .into_iter()
            .filter(|e| e["event"] == "refused" && e["detail"]["identity"] == identity)
            .collect();
        if found.len() >= n {
            return found;
        }
        assert!(
            std::time::Instant::now() < end,
            "only {} refused events: {found:?}",
            found.len()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// How many of the things said to `who` begin with "recorded".
fn recorded_told<C: ChannelUnderTest>(c: &C, who: Who) -> usize {
    c.said_to(who)
        .iter()
        .filter(|s| s.trim_start().starts_with("recorded"))
        .count()
}

pub(crate) fn a_press_records_once_and_a_second_is_told_already_answered<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    let me = people(&l, &c);
    let id = options(&l, "design", "Which database?");
    let relay = c.relay(&l, &[]);
    let card = c.card(Who::Me, id);
    assert_eq!(c.options(&card), ["PostgreSQL", "SQLite"], "{card}");
    let first = c.press(Who::Me, &card, "SQLite");
    let said = c.told(&first);
    assert!(said.trim_start().starts_with("recorded"), "{said}");
    let second = c.press(Who::Me, &card, "SQLite");
    let said = c.told(&second);
    assert!(
        said.contains(&format!("already answered by {me}")),
        "{said}"
    );
    let q = l.question(id);
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(q["answered_by"], me.as_str());
    assert_eq!(q["channel"], C::NAME);
    assert_eq!(kinds(&l, id, "answered"), 1);
    let answered = events_of(&l, id)
        .into_iter()
        .find(|e| e["event"] == "answered")
        .unwrap();
    assert_eq!(answered["detail"]["identity"], c.identity(Who::Me));
    // Settled everywhere: bob's copy says so.
    let settled = c.settled(Who::Bob, id);
    assert!(
        settled.contains(&format!("answered by {me} via {}", C::NAME)),
        "{settled}"
    );
    assert_eq!(relay.stop().code(), Some(0));
}

pub(crate) fn a_stranger_is_refused_records_nothing_and_is_told_once<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    people(&l, &c);
    let id = options(&l, "design", "Which database?");
    let _relay = c.relay(&l, &[]);
    c.card(Who::Me, id);
    c.write(Who::Stranger, "SQLite");
    c.write(Who::Stranger, "SQLite, I said");
    // My message comes after theirs: once I am answered and the relay read past it, it
    // has read past theirs and said what it had to say of them.
    let mine = c.write(Who::Me, "Hello?");
    c.told(&mine);
    c.passed(&l, &mine);
    assert_eq!(l.question(id)["status"], "pending", "nothing was recorded");
    assert_eq!(kinds(&l, id, "answered"), 0);
    let stranger = c.identity(Who::Stranger);
    let refused: Vec<Value> = all_events(&l)
        .into_iter()
        .filter(|e| e["event"] == "refused" && e["detail"]["identity"] == stranger.as_str())
        .collect();
    assert_eq!(refused.len(), 2, "each was heard and refused: {refused:?}");
    assert!(
        refused.iter().all(|e| e["answered_by"].is_null()),
        "{refused:?}"
    );
    // Told once for the two messages, or never where the channel cannot vouch for whom
    // it would tell.
    let told: Vec<String> = c
        .said_to(Who::Stranger)
        .into_iter()
        .filter(|s| s.contains("not linked"))
        .collect();
    assert_eq!(told.len(), usize::from(C::TELLS_STRANGERS), "{told:?}");
}

pub(crate) fn nobody_linked_nobody_answers<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    let id = options(&l, "design", "Which database?");
    let relay = c.relay(&l, &[]);
    let sent = c.write(Who::Me, "SQLite");
    if C::TELLS_STRANGERS {
        let said = c.told(&sent);
        assert!(said.contains("not linked"), "{said}");
    }
    // The refusal is committed with the read position past the message.
    refusals(&l, &c.identity(Who::Me), 1);
    assert_eq!(c.cards(Who::Me, id), 0, "a card went to nobody linked");
    assert_eq!(l.question(id)["status"], "pending");
    assert_eq!(relay.stop().code(), Some(0));
}

pub(crate) fn a_stranger_or_another_persons_answer_to_my_card_or_a_forged_one_records_nothing<
    C: ChannelUnderTest,
>() {
    let l = Ledger::new();
    let c = C::start(&l);
    let me = people(&l, &c);
    let id = options(&l, "design", "Which database?");
    let _relay = c.relay(&l, &[]);
    let card = c.card(Who::Me, id);
    // A stranger answers my card.
    let stranger = c.press(Who::Stranger, &card, "SQLite");
    if C::TELLS_STRANGERS {
        let said = c.told(&stranger);
        assert!(said.contains("not linked"), "{said}");
    }
    c.passed(&l, &stranger);
    assert_eq!(l.question(id)["status"], "pending", "nothing was recorded");
    // bob, linked, answers my card: it was not sent to him.
    let bobs = c.press(Who::Bob, &card, "SQLite");
    let said = c.told(&bobs);
    assert!(said.contains(&format!("sent to {me}")), "{said}");
    // Altered values, pressed by me.
    let forged = c.forgeries(Who::Me, &card, "SQLite");
    assert!(!forged.is_empty());
    for sent in &forged {
        c.passed(&l, sent);
    }
    assert_eq!(l.question(id)["status"], "pending", "nothing was recorded");
    assert_eq!(kinds(&l, id, "answered"), 0);
    let bobs_refused = events_of(&l, id)
        .into_iter()
        .filter(|e| e["event"] == "refused" && e["answered_by"] == "bob")
        .count();
    assert_eq!(bobs_refused, 1, "bob's answer is recorded as refused");
    let refused: Vec<Value> = all_events(&l)
        .into_iter()
        .filter(|e| e["event"] == "refused")
        .collect();
    assert!(
        refused.iter().any(|e| e["detail"]["refused"]
            .as_str()
            .unwrap_or("")
            .contains(C::FORGED)),
        "{refused:?}"
    );
    // My own answer, after them, is recorded.
    let mine = c.press(Who::Me, &card, "SQLite");
    assert!(c.told(&mine).trim_start().starts_with("recorded"));
    assert_eq!(l.question(id)["answered_by"], me.as_str());
}

pub(crate) fn an_event_delivered_twice_records_once<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    let me = people(&l, &c);
    let id = options(&l, "design", "Which database?");
    let _relay = c.relay(&l, &[]);
    let card = c.card(Who::Me, id);
    let (first, again) = c.deliver_twice(Who::Me, &card, "SQLite");
    let said = c.told(&first);
    assert!(said.trim_start().starts_with("recorded"), "{said}");
    c.passed(&l, &again);
    assert_eq!(kinds(&l, id, "answered"), 1, "recorded once");
    assert_eq!(kinds(&l, id, "refused"), 0, "a redelivery is no refusal");
    assert_eq!(l.question(id)["answered_by"], me.as_str());
    assert_eq!(recorded_told(&c, Who::Me), 1, "{:?}", c.said_to(Who::Me));
}

pub(crate) fn a_question_answered_elsewhere_settles_its_card<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    people(&l, &c);
    let id = options(&l, "design", "Which database?");
    let _relay = c.relay(&l, &[]);
    let card = c.card(Who::Me, id);
    let started = std::time::Instant::now();
    l.ok([
        "answer",
        "--id",
        &id.to_string(),
        "--select",
        "PostgreSQL",
        "--by",
        "carol",
    ]);
    let settled = c.settled(Who::Me, id);
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert!(
        settled.contains("answered by carol via cli: PostgreSQL"),
        "{settled}"
    );
    // A later answer is told so, and changes nothing.
    let late = c.press(Who::Me, &card, "SQLite");
    let said = c.told(&late);
    assert!(said.contains("already answered by carol via cli"), "{said}");
    assert_eq!(l.question(id)["answer"], "PostgreSQL");
}

pub(crate) fn killed_between_the_event_and_the_commit_records_it_once_after_a_restart<
    C: ChannelUnderTest,
>() {
    let l = Ledger::new();
    let c = C::start(&l);
    let me = people(&l, &c);
    let id = options(&l, "design", "Which database?");
    let pause = Pause::new(l.dir.path(), "relay-heard");
    let mut first = c.relay(&l, &[("QUESTIONS_TEST_PAUSE", &pause.env)]);
    let card = c.card(Who::Me, id);
    let sent = c.press(Who::Me, &card, "SQLite");
    pause.reached();
    // Killed with the event read and nothing committed.
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert_eq!(l.question(id)["status"], "pending");
    let second = c.relay(&l, &[]);
    let said = c.told(&sent);
    assert!(said.trim_start().starts_with("recorded"), "{said}");
    assert_eq!(l.question(id)["answered_by"], me.as_str());
    c.passed(&l, &sent);
    // Killed again and started again: the event is behind the read position.
    let mut second = second;
    second.child.kill().unwrap();
    second.child.wait().unwrap();
    let third = c.relay(&l, &[]);
    let later = options(&l, "design", "Which database, later?");
    let later_card = c.card(Who::Me, later);
    let click = c.press(Who::Me, &later_card, "PostgreSQL");
    assert!(c.told(&click).trim_start().starts_with("recorded"));
    c.passed(&l, &click);
    assert_eq!(kinds(&l, id, "answered"), 1, "recorded exactly once");
    assert_eq!(recorded_told(&c, Who::Me), 2, "{:?}", c.said_to(Who::Me));
    assert_eq!(third.stop().code(), Some(0));
}

pub(crate) fn a_card_of_a_question_cleared_and_logged_again_records_nothing<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    people(&l, &c);
    let id = options(&l, "design", "Which database?");
    let _relay = c.relay(&l, &[]);
    let old = c.card(Who::Me, id);
    l.ok(["clear", "--stage", "design"]);
    let again = options(&l, "design", "Which database?");
    assert_ne!(again, id);
    let fresh = c.card(Who::Me, again);
    let gone = c.settled(Who::Me, id);
    assert!(gone.contains("cleared"), "{gone}");
    let stale = c.press(Who::Me, &old, "SQLite");
    let said = c.told(&stale);
    assert!(said.contains("no longer in the ledger"), "{said}");
    assert_eq!(l.question(again)["status"], "pending");
    // The new card answers the new question.
    let now = c.press(Who::Me, &fresh, "PostgreSQL");
    assert!(c.told(&now).trim_start().starts_with("recorded"));
    assert_eq!(l.question(again)["answer"], "PostgreSQL");
}

pub(crate) fn the_requesters_approve_is_refused_and_recorded_and_an_approvers_opens_the_gate<
    C: ChannelUnderTest,
>() {
    let l = Ledger::new();
    let c = C::start(&l);
    let me = people(&l, &c);
    // Logged by me (the requester), with me and bob among the approvers.
    let logged = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Deploy build 42?",
        "--approval",
        "--approvers",
        &format!("{me},bob"),
        "--min",
        "1",
    ]);
    let id = logged["question_id"].as_i64().unwrap();
    let _relay = c.relay(&l, &[]);
    let bobs = c.card(Who::Bob, id);
    let offered = c.options(&bobs);
    assert!(
        offered.iter().any(|o| o.contains("Approve"))
            && offered.iter().any(|o| o.contains("Reject")),
        "{offered:?}"
    );
    // The requester gets no card: a card of a later question comes, and none of this.
    let later = l.log("later", "Anything else?");
    c.card(Who::Me, later);
    assert_eq!(c.cards(Who::Me, id), 0, "the requester got the card");
    // Pressing bob's Approve is refused and recorded.
    let mine = c.press(Who::Me, &bobs, "Approve");
    let said = c.told(&mine);
    assert!(said.contains("sent to bob"), "{said}");
    let refused: Vec<Value> = events_of(&l, id)
        .into_iter()
        .filter(|e| e["event"] == "refused")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["answered_by"], me.as_str());
    assert_eq!(refused[0]["channel"], C::NAME);
    assert_eq!(
        l.run(["check", "--stage", "deploy"]).code,
        1,
        "the gate holds"
    );
    // bob's own Approve opens it.
    let his = c.press(Who::Bob, &bobs, "Approve");
    let said = c.told(&his);
    assert!(said.trim_start().starts_with("recorded"), "{said}");
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 0);
    let q = l.question(id);
    assert_eq!(q["approval"]["votes"][0]["by"], "bob");
    assert_eq!(q["approval"]["votes"][0]["vote"], "approve");
}

pub(crate) fn a_typed_answer_is_recorded_verbatim<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    let me = people(&l, &c);
    let free = l.log("design", "What should the project be called?");
    // Each card's reference is stored before the next is sent: answers wait for the last.
    let last = l.log("design", "Anything else?");
    let _relay = c.relay(&l, &[]);
    let card = c.card(Who::Me, free);
    c.card(Who::Me, last);
    let typed = c.type_answer(Who::Me, &card, "Questions, maybe \"q\"");
    let said = c.told(&typed);
    assert!(said.trim_start().starts_with("recorded"), "{said}");
    let q = l.question(free);
    assert_eq!(q["answered_by"], me.as_str());
    assert_eq!(q["answer"], "Questions, maybe \"q\"");
    assert_eq!(q["channel"], C::NAME);
}

pub(crate) fn pairs_an_account_with_a_code_used_once<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    let me = relay_harness::me(&l);
    let code = l.ok(["relay", "pair", C::NAME, &me])["code"]
        .as_str()
        .unwrap()
        .to_string();
    let _relay = c.relay(&l, &[]);
    let paired = c.write(Who::Me, &C::pairing(&code));
    let said = c.told(&paired);
    assert!(said.contains("linked"), "{said}");
    let links = l.ok(["people", "list"]);
    assert_eq!(links["count"], 1, "{links}");
    assert_eq!(links["links"][0]["identity"], c.identity(Who::Me));
    assert_eq!(links["links"][0]["person"], me.as_str());
    // The code is spent: another account cannot use it.
    let again = c.write(Who::Stranger, &C::pairing(&code));
    if C::TELLS_STRANGERS {
        let said = c.told(&again);
        assert!(said.contains("unknown, used or expired"), "{said}");
    }
    c.passed(&l, &again);
    assert_eq!(l.ok(["people", "list"])["count"], 1);
    // Linked, the account gets its cards.
    let id = options(&l, "design", "Which database?");
    c.card(Who::Me, id);
}

pub(crate) fn opens_no_listening_socket<C: ChannelUnderTest>() {
    let l = Ledger::new();
    let c = C::start(&l);
    people(&l, &c);
    let id = options(&l, "design", "Which database?");
    let relay = c.relay(&l, &[]);
    c.card(Who::Me, id);
    let pid = relay.child.id();
    let mut inodes = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            let target = target.display().to_string();
            if let Some(inode) = target
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
            {
                inodes.push(inode.to_string());
            }
        }
    }
    let mut outbound = 0;
    for table in ["tcp", "tcp6", "udp", "udp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (state, inode) = (fields[3], fields[9]);
            if inodes.iter().any(|i| i == inode) {
                assert!(
                    table.starts_with("tcp") && state != "0A",
                    "the relay has a listening or {table} socket: {line}"
                );
                outbound += 1;
            }
        }
    }
    if C::HOLDS_A_CONNECTION {
        assert!(outbound >= 1, "the relay holds its outbound connection");
    }
    assert_eq!(relay.stop().code(), Some(0));
}

pub(crate) fn a_bad_config_is_a_usage_error_naming_the_key<C: ChannelUnderTest>() {
    let l = Ledger::new();
    for (config, names) in C::bad_configs() {
        relay_harness::refuses(&l, &config, &C::config_env(), &C::secrets(), names);
    }
}

/// One `#[test]` per promise of the suite, for the channel `$driver` (a
/// `ChannelUnderTest`), in a module `$name`: `relay_suite::<channel>::<promise>`, which
/// the CI's passes select as they select the channel's own tests (`relay`). Skipped,
/// where the channel's servers are missing, as its own tests are (under CI, a failure).
macro_rules! channel_suite {
    ($name:ident, $driver:ty) => {
        mod $name {
            use crate::channel_suite as suite;
            use crate::channel_suite::ChannelUnderTest;

            fn run(test: fn()) {
                match <$driver as ChannelUnderTest>::missing() {
                    Some(why) => crate::common::skip(&why),
                    None => test(),
                }
            }

            #[test]
            fn a_press_records_once_and_a_second_is_told_already_answered() {
                run(suite::a_press_records_once_and_a_second_is_told_already_answered::<$driver>);
            }

            #[test]
            fn a_stranger_is_refused_records_nothing_and_is_told_once() {
                run(suite::a_stranger_is_refused_records_nothing_and_is_told_once::<$driver>);
            }

            #[test]
            fn nobody_linked_nobody_answers() {
                run(suite::nobody_linked_nobody_answers::<$driver>);
            }

            #[test]
            fn a_stranger_or_another_persons_answer_to_my_card_or_a_forged_one_records_nothing() {
                run(suite::a_stranger_or_another_persons_answer_to_my_card_or_a_forged_one_records_nothing::<$driver>);
            }

            #[test]
            fn an_event_delivered_twice_records_once() {
                run(suite::an_event_delivered_twice_records_once::<$driver>);
            }

            #[test]
            fn a_question_answered_elsewhere_settles_its_card() {
                run(suite::a_question_answered_elsewhere_settles_its_card::<$driver>);
            }

            #[test]
            fn killed_between_the_event_and_the_commit_records_it_once_after_a_restart() {
                run(suite::killed_between_the_event_and_the_commit_records_it_once_after_a_restart::<$driver>);
            }

            #[test]
            fn a_card_of_a_question_cleared_and_logged_again_records_nothing() {
                run(suite::a_card_of_a_question_cleared_and_logged_again_records_nothing::<$driver>);
            }

            #[test]
            fn the_requesters_approve_is_refused_and_recorded_and_an_approvers_opens_the_gate() {
                run(suite::the_requesters_approve_is_refused_and_recorded_and_an_approvers_opens_the_gate::<$driver>);
            }

            #[test]
            fn a_typed_answer_is_recorded_verbatim() {
                run(suite::a_typed_answer_is_recorded_verbatim::<$driver>);
            }

            #[test]
            fn pairs_an_account_with_a_code_used_once() {
                run(suite::pairs_an_account_with_a_code_used_once::<$driver>);
            }

            #[test]
            fn opens_no_listening_socket() {
                run(suite::opens_no_listening_socket::<$driver>);
            }

            #[test]
            fn a_bad_config_is_a_usage_error_naming_the_key() {
                // Needs no server: a config is refused before any is reached.
                suite::a_bad_config_is_a_usage_error_naming_the_key::<$driver>();
            }
        }
    };
}
pub(crate) use channel_suite;
