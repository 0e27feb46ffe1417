//! `questions relay` on Matrix (§14), against a real Synapse (synapse.rs): each property
//! the contract promises is a test that fails if it breaks. The homeserver runs once, in
//! the SQLite pass (.ci/run skips `relay_matrix::` in the others).

use std::time::{Duration, Instant};

use crate::common::*;
use crate::relay_harness::{self, Relay};
use crate::synapse::{until, Synapse, User};
use serde_json::json;

const TOKEN_ENV: &str = "MATRIX_BOT_TOKEN";

/// A homeserver with the bot, alice (the runner on the ledger), bob and mallory.
struct World {
    hs: Synapse,
    bot: User,
    alice: User,
    bob: User,
    mallory: User,
}

impl World {
    fn start() -> Option<World> {
        World::on(Synapse::start()?)
    }

    fn on(hs: Synapse) -> Option<World> {
        let bot = hs.register("relaybot");
        let alice = hs.register("alice");
        let bob = hs.register("bob");
        let mallory = hs.register("mallory");
        Some(World {
            hs,
            bot,
            alice,
            bob,
            mallory,
        })
    }

    fn relay(&self, l: &Ledger, env: &[(&str, &str)]) -> Relay {
        let config = format!(
            "[matrix]\nhomeserver = \"{}\"\ntoken_env = \"{TOKEN_ENV}\"\npoll_timeout = 20\n",
            self.hs.url
        );
        Relay::run(l, "matrix", &config, &[(TOKEN_ENV, &self.bot.token)], env)
    }

    /// Links the runner as alice and bob as bob; the runner's name.
    fn people(&self, l: &Ledger) -> String {
        relay_harness::people(
            l,
            &format!("matrix:{}", self.alice.id),
            &format!("matrix:{}", self.bob.id),
        )
    }

    /// The direct room the bot invited `user` to, joined.
    fn dm(&self, user: &User) -> String {
        let room = until("the bot's invitation", || {
            self.hs.invites(user).into_iter().next()
        });
        self.hs.join(user, &room);
        room
    }

    /// The card of question `id` in `room`, as `user` sees it: its event id and text.
    fn card(&self, user: &User, room: &str, id: i64) -> (String, String) {
        let head = format!("Question {id} ");
        until(&format!("the card of question {id}"), || {
            self.hs.events(user, room).into_iter().find_map(|e| {
                let body = e["content"]["body"].as_str().unwrap_or("");
                (e["sender"] == self.bot.id.as_str()
                    && e["type"] == "m.room.message"
                    && e["content"]["m.relates_to"].is_null()
                    && body.starts_with(&head))
                .then(|| {
                    (
                        e["event_id"].as_str().unwrap().to_string(),
                        body.to_string(),
                    )
                })
            })
        })
    }

    /// The bot's replies in `room` to the event `to`.
    fn replies_to(&self, user: &User, room: &str, to: &str) -> Vec<String> {
        self.hs
            .events(user, room)
            .into_iter()
            .filter(|e| {
                e["sender"] == self.bot.id.as_str()
                    && e["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == to
            })
            .map(|e| e["content"]["body"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// Waits for the bot's reply in `room` to the event `to`; its text.
    fn reply_to(&self, user: &User, room: &str, to: &str) -> String {
        until("the bot's reply", || {
            self.replies_to(user, room, to).into_iter().next()
        })
    }

    /// Waits for the card `card` to be edited (`m.replace`) to say `words`; its new text.
    fn closed(&self, user: &User, room: &str, card: &str, words: &str) -> String {
        until(&format!("the card edited to say {words}"), || {
            self.hs.events(user, room).into_iter().find_map(|e| {
                let relates = &e["content"]["m.relates_to"];
                let body = e["content"]["m.new_content"]["body"].as_str()?;
                (e["sender"] == self.bot.id.as_str()
                    && relates["rel_type"] == "m.replace"
                    && relates["event_id"] == card
                    && body.contains(words))
                .then(|| body.to_string())
            })
        })
    }
}

fn options(l: &Ledger, stage: &str, text: &str) -> i64 {
    l.log_with(
        stage,
        text,
        &["--option", "PostgreSQL", "--option", "SQLite"],
    )
}

fn kinds(l: &Ledger, id: i64, kind: &str) -> usize {
    l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == kind)
        .count()
}

fn linked(l: &Ledger, identity: &str) -> Option<String> {
    l.ok(["people", "list"])["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["identity"] == identity)
        .map(|k| k["person"].as_str().unwrap().to_string())
}

#[test]
fn relay_matrix_pairing_links_the_sender_and_a_wrong_code_nothing() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    let relay = w.relay(&l, &[]);
    // Each opens a direct room with the bot, which joins it.
    let open = |user: &User| {
        w.hs.call(
            user,
            "POST",
            "/_matrix/client/v3/createRoom",
            &json!({"is_direct": true, "invite": [w.bot.id], "preset": "trusted_private_chat"}),
        )["room_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mallorys = open(&w.mallory);
    let wrong = w.hs.say(&w.mallory, &mallorys, "ABCDEFGHJK", None);
    let said = w.reply_to(&w.mallory, &mallorys, &wrong);
    assert!(!said.contains("linked to"), "{said}");
    assert_eq!(linked(&l, &format!("matrix:{}", w.mallory.id)), None);
    let me = relay_harness::me(&l);
    l.ok(["group", "create", "people", "--admins", &me]);
    let pair = l.ok(["relay", "pair", "matrix", "alice"]);
    let code = pair["code"].as_str().unwrap();
    assert_eq!(pair["send"], code);
    let alices = open(&w.alice);
    let message =
        w.hs.say(&w.alice, &alices, &format!("my code: {code}"), None);
    let said = w.reply_to(&w.alice, &alices, &message);
    assert_eq!(
        linked(&l, &format!("matrix:{}", w.alice.id)).as_deref(),
        Some("alice"),
        "{said}"
    );
    // Her cards come to the room she opened (the bot's m.direct names it).
    let id = options(&l, "design", "Which database?");
    let (_, text) = w.card(&w.alice, &alices, id);
    assert!(
        text.contains("1. PostgreSQL") && text.contains("2. SQLite"),
        "{text}"
    );
    assert_eq!(relay.stop().code(), Some(0));
}

#[test]
fn relay_matrix_a_reply_records_once_and_a_second_is_told_already_answered() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    let me = w.people(&l);
    let id = options(&l, "design", "Which database?");
    let relay = w.relay(&l, &[]);
    let room = w.dm(&w.alice);
    let (card, _) = w.card(&w.alice, &room, id);
    let first = w.hs.say(&w.alice, &room, "2", Some(&card));
    let said = w.reply_to(&w.alice, &room, &first);
    assert!(said.starts_with("recorded"), "{said}");
    let q = l.question(id);
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(q["answered_by"], me.as_str());
    assert_eq!(q["channel"], "matrix");
    let second = w.hs.say(&w.alice, &room, "1", Some(&card));
    let said = w.reply_to(&w.alice, &room, &second);
    assert!(
        said.contains(&format!("already answered by {me}")),
        "{said}"
    );
    assert_eq!(l.question(id)["answer"], "SQLite");
    assert_eq!(kinds(&l, id, "answered"), 1);
    w.closed(
        &w.alice,
        &room,
        &card,
        &format!("answered by {me} via matrix"),
    );
    assert_eq!(relay.stop().code(), Some(0));
}

#[test]
fn relay_matrix_strangers_and_other_peoples_replies_record_nothing() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    let me = w.people(&l);
    let id = options(&l, "design", "Which database?");
    let _relay = w.relay(&l, &[]);
    let room = w.dm(&w.alice);
    let (card, _) = w.card(&w.alice, &room, id);
    // Alice brings mallory (linked to nobody) and bob into her room.
    for other in [&w.mallory, &w.bob] {
        w.hs.invite(&w.alice, &room, other);
        w.hs.join(other, &room);
    }
    let m1 = w.hs.say(&w.mallory, &room, "2", Some(&card));
    let said = w.reply_to(&w.alice, &room, &m1);
    assert!(said.contains("not linked"), "{said}");
    let m2 = w.hs.say(&w.mallory, &room, "1", Some(&card));
    let b = w.hs.say(&w.bob, &room, "2", Some(&card));
    // Bob's reply is read after mallory's second: once it is answered, hers was read.
    let said = w.reply_to(&w.alice, &room, &b);
    assert!(said.contains(&format!("sent to {me}")), "{said}");
    assert!(
        w.replies_to(&w.alice, &room, &m2).is_empty(),
        "told once a minute"
    );
    assert_eq!(l.question(id)["status"], "pending");
    assert_eq!(kinds(&l, id, "refused"), 1, "bob's, on the question");
    let events = l.run(["events"]).stdout;
    let refused = events
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|e| e["event"] == "refused")
        .count();
    assert_eq!(refused, 3, "mallory's two and bob's");
}

#[test]
fn relay_matrix_a_reaction_and_an_edit_never_answer() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    let me = w.people(&l);
    let id = options(&l, "design", "Which database?");
    let _relay = w.relay(&l, &[]);
    let room = w.dm(&w.alice);
    let (card, _) = w.card(&w.alice, &room, id);
    let reaction = w.hs.send(
        &w.alice,
        &room,
        "m.reaction",
        &json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": card, "key": "2️⃣"}}),
    );
    // A message that is no reply (refused), then edited to "2" with the card named in
    // the edit's relation too: an edit is never an answer, whatever it names.
    let unsure = w.hs.say(&w.alice, &room, "hmm", None);
    let said = w.reply_to(&w.alice, &room, &unsure);
    assert!(!said.starts_with("recorded"), "{said}");
    let edit = w.hs.send(
        &w.alice,
        &room,
        "m.room.message",
        &json!({
            "msgtype": "m.text", "body": "* 2",
            "m.new_content": {"msgtype": "m.text", "body": "2"},
            "m.relates_to": {"rel_type": "m.replace", "event_id": unsure,
                             "m.in_reply_to": {"event_id": card}},
        }),
    );
    // A later reply records: the reaction and the edit before it were read first.
    let later = w.hs.say(&w.alice, &room, "1", Some(&card));
    let said = w.reply_to(&w.alice, &room, &later);
    assert!(said.starts_with("recorded"), "{said}");
    let q = l.question(id);
    assert_eq!(
        q["answer"], "PostgreSQL",
        "the later reply's, not the edit's"
    );
    assert_eq!(q["answered_by"], me.as_str());
    assert_eq!(kinds(&l, id, "answered"), 1);
    assert!(
        w.replies_to(&w.alice, &room, &edit).is_empty(),
        "the edit was not taken"
    );
    assert!(w.replies_to(&w.alice, &room, &reaction).is_empty());
}

#[test]
fn relay_matrix_killed_between_the_event_and_the_commit_records_it_once_after_a_restart() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    let me = w.people(&l);
    let id = options(&l, "design", "Which database?");
    let pause = Pause::new(l.dir.path(), "relay-heard");
    let mut first = w.relay(&l, &[("QUESTIONS_TEST_PAUSE", &pause.env)]);
    let room = w.dm(&w.alice);
    let (card, _) = w.card(&w.alice, &room, id);
    let reply = w.hs.say(&w.alice, &room, "2", Some(&card));
    pause.reached();
    // Killed with the event read and nothing committed.
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert_eq!(l.question(id)["status"], "pending");
    let second = w.relay(&l, &[]);
    let said = w.reply_to(&w.alice, &room, &reply);
    assert!(said.starts_with("recorded"), "{said}");
    assert_eq!(l.question(id)["answered_by"], me.as_str());
    assert_eq!(kinds(&l, id, "answered"), 1, "recorded exactly once");
    // Killed again and restarted: the event is behind the read position, or kept once.
    second.stop();
    let id2 = options(&l, "design", "And which cache?");
    let _third = w.relay(&l, &[]);
    let (card2, _) = w.card(&w.alice, &room, id2);
    let next = w.hs.say(&w.alice, &room, "1", Some(&card2));
    w.reply_to(&w.alice, &room, &next);
    assert_eq!(kinds(&l, id, "answered"), 1);
    assert_eq!(kinds(&l, id, "refused"), 0);
    assert_eq!(w.replies_to(&w.alice, &room, &reply).len(), 1, "told once");
}

#[test]
fn relay_matrix_answered_elsewhere_the_card_says_so_within_seconds() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    w.people(&l);
    let id = options(&l, "design", "Which database?");
    let _relay = w.relay(&l, &[]);
    let room = w.dm(&w.alice);
    let (card, _) = w.card(&w.alice, &room, id);
    let started = Instant::now();
    l.ok([
        "answer",
        "--id",
        &id.to_string(),
        "--select",
        "PostgreSQL",
        "--by",
        "carol",
    ]);
    let text = w.closed(&w.alice, &room, &card, "answered by carol via cli");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(text.contains("PostgreSQL"), "{text}");
}

#[test]
fn relay_matrix_the_requesters_approve_is_refused_and_an_approvers_opens_the_gate() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    let me = w.people(&l);
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
    let _relay = w.relay(&l, &[]);
    let room = w.dm(&w.bob);
    let (card, text) = w.card(&w.bob, &room, id);
    assert!(text.contains("APPROVE"), "{text}");
    // The requester (alice, the runner) in bob's room: her APPROVE is refused.
    w.hs.invite(&w.bob, &room, &w.alice);
    w.hs.join(&w.alice, &room);
    let hers = w.hs.say(&w.alice, &room, "APPROVE", Some(&card));
    let said = w.reply_to(&w.bob, &room, &hers);
    assert!(said.contains("sent to bob"), "{said}");
    assert_eq!(kinds(&l, id, "refused"), 1);
    assert_eq!(
        l.run(["check", "--stage", "deploy"]).code,
        1,
        "the gate holds"
    );
    let his = w.hs.say(&w.bob, &room, "approve", Some(&card));
    let said = w.reply_to(&w.bob, &room, &his);
    assert!(said.starts_with("recorded"), "{said}");
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 0);
    let q = l.question(id);
    assert_eq!(q["approval"]["votes"][0]["by"], "bob");
}

#[test]
fn relay_matrix_a_bad_config_names_its_key_and_the_token_is_never_printed() {
    let l = Ledger::new();
    let token = "syt_secret_token_value";
    let env = [(TOKEN_ENV, token)];
    let cases = [
        (
            "[matrix]\nhomeserver = \"http://matrix.example.org\"\ntoken_env = \"MATRIX_BOT_TOKEN\"\n",
            "matrix.homeserver",
        ),
        (
            "[matrix]\nhomeserver = \"ftp://x\"\ntoken_env = \"MATRIX_BOT_TOKEN\"\n",
            "matrix.homeserver",
        ),
        ("[matrix]\ntoken_env = \"MATRIX_BOT_TOKEN\"\n", "matrix.homeserver"),
        ("[matrix]\nhomeserver = \"https://m.example.org\"\n", "matrix.token_env"),
        (
            "[matrix]\nhomeserver = \"https://m.example.org\"\ntoken_env = \"NOT_SET_ANYWHERE\"\n",
            "matrix.token_env",
        ),
        (
            "[matrix]\nhomeserver = \"https://m.example.org\"\ntoken_env = \"MATRIX_BOT_TOKEN\"\npoll_timeout = 51\n",
            "matrix.poll_timeout",
        ),
        (
            "[matrix]\nhomeserver = \"https://m.example.org\"\ntoken_env = \"MATRIX_BOT_TOKEN\"\nsecret = \"x\"\n",
            "matrix.secret",
        ),
    ];
    for (config, key) in cases {
        relay_harness::refuses(&l, config, &env, &[token], key);
    }
    // A token the homeserver refuses: said on stderr, never the token.
    let Some(w) = World::start() else { return };
    let config = format!(
        "[matrix]\nhomeserver = \"{}\"\ntoken_env = \"{TOKEN_ENV}\"\n",
        w.hs.url
    );
    let relay = Relay::run(&l, "matrix", &config, &[(TOKEN_ENV, token)], &[]);
    until("the refusal on stderr", || {
        relay.stderr().contains("M_UNKNOWN_TOKEN").then_some(())
    });
    assert!(!relay.stderr().contains(token));
    assert_eq!(relay.stop().code(), Some(0));
}

#[test]
fn relay_matrix_a_message_in_an_encrypted_room_is_refused_with_words() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    w.people(&l);
    let id = options(&l, "design", "Which database?");
    let _relay = w.relay(&l, &[]);
    let room = w.dm(&w.alice);
    let (card, _) = w.card(&w.alice, &room, id);
    // Alice turns encryption on; her client sends what the relay cannot read.
    let path = format!(
        "/_matrix/client/v3/rooms/{}/state/m.room.encryption/",
        crate::synapse::enc(&room)
    );
    w.hs.call(
        &w.alice,
        "PUT",
        &path,
        &json!({"algorithm": "m.megolm.v1.aes-sha2"}),
    );
    let sealed = w.hs.send(
        &w.alice,
        &room,
        "m.room.encrypted",
        &json!({
            "algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEn…", "device_id": "ALICE",
            "sender_key": "k", "session_id": "s",
            "m.relates_to": {"m.in_reply_to": {"event_id": card}},
        }),
    );
    let said = w.reply_to(&w.alice, &room, &sealed);
    assert!(said.contains("encrypted"), "{said}");
    assert_eq!(l.question(id)["status"], "pending");
    let events = l.run(["events"]).stdout;
    let refused: Vec<serde_json::Value> = events
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|e| e["event"] == "refused")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["detail"]["event"], sealed.as_str());
}

#[test]
fn relay_matrix_a_429_is_waited_out_and_every_card_arrives() {
    // Two messages at once, then one each 2 s, per user.
    let Some(w) = Synapse::start_with("{per_second: 0.5, burst_count: 2}").and_then(World::on)
    else {
        return;
    };
    let l = Ledger::new();
    l.ok([
        "people",
        "link",
        &relay_harness::me(&l),
        &format!("matrix:{}", w.alice.id),
    ]);
    let ids: Vec<i64> = (1..=4)
        .map(|n| options(&l, "design", &format!("Which database for service {n}?")))
        .collect();
    let relay = w.relay(&l, &[]);
    let room = w.dm(&w.alice);
    for id in &ids {
        w.card(&w.alice, &room, *id);
    }
    let said = relay.stderr();
    assert!(said.contains("answered 429; waiting"), "{said}");
    assert!(!said.contains("was not sent"), "{said}");
}

/// Click to ledger (a reply to a card until its question is answered in the ledger) and
/// the relay's CPU while idle, to set beside the other channels' (`cargo test --test cli
/// relay_matrix_bench -- --ignored --nocapture`).
#[test]
#[ignore = "a measurement, not a check"]
fn relay_matrix_bench_click_to_ledger_and_idle_cpu() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    w.people(&l);
    let ids: Vec<i64> = (0..10)
        .map(|n| options(&l, "bench", &format!("Question number {n}?")))
        .collect();
    let relay = w.relay(&l, &[]);
    let room = w.dm(&w.alice);
    let cards: Vec<String> = ids
        .iter()
        .map(|id| w.card(&w.alice, &room, *id).0)
        .collect();
    // The commit, read in the ledger's file every 5 ms (the bench runs in the SQLite pass).
    let conn = rusqlite::Connection::open(&l.path).unwrap();
    let recorded = || -> i64 {
        conn.query_row(
            "SELECT count(*) FROM relay_events WHERE outcome = 'recorded'",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0)
    };
    let mut took: Vec<Duration> = Vec::new();
    let mut told: Vec<Duration> = Vec::new();
    for (n, card) in cards.iter().enumerate() {
        let started = Instant::now();
        let reply = w.hs.say(&w.alice, &room, "1", Some(card));
        while recorded() <= n as i64 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "never recorded"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        took.push(started.elapsed());
        w.reply_to(&w.alice, &room, &reply);
        told.push(started.elapsed());
    }
    took.sort();
    told.sort();
    println!(
        "matrix click to ledger, 10 replies to cards: median {:?}, max {:?}; to the \
         relay's reply read back: median {:?}, max {:?}",
        took[took.len() / 2],
        took[took.len() - 1],
        told[told.len() / 2],
        told[told.len() - 1]
    );
    for id in &ids {
        assert_eq!(l.question(*id)["status"], "answered");
    }
    let ticks = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", relay.child.id())).unwrap();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    std::thread::sleep(Duration::from_secs(2));
    let before = ticks();
    std::thread::sleep(Duration::from_secs(10));
    let used = ticks() - before;
    println!("matrix idle for 10 s: {used} clock ticks of CPU (1 tick = 10 ms)");
}

#[test]
fn relay_matrix_the_guide_s_transcript_is_what_the_relay_does() {
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    let admin = relay_harness::me(&l);
    let mut out = String::new();
    let show = |out: &mut String, args: &[&str], print: bool| {
        let run = l.run(args);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        out.push_str(&crate::docs::typed(args));
        out.push('\n');
        if print {
            out.push_str(run.stdout.trim_end());
            out.push('\n');
        }
        run.json
    };
    l.ok(["group", "create", "people", "--admins", &admin]);
    out.push_str("$ questions group create people --admins \"$(id -un)\"\n");
    let code = show(&mut out, &["relay", "pair", "matrix", "alice"], true)["code"]
        .as_str()
        .unwrap()
        .to_string();
    let relay = w.relay(&l, &[]);
    out.push_str(
        "$ questions relay --config relay.toml &\n\
         {\"ok\":true,\"procedure\":\"relay\",\"channels\":[\"matrix\"]}\n",
    );
    let room = w.hs.call(
        &w.alice,
        "POST",
        "/_matrix/client/v3/createRoom",
        &json!({"is_direct": true, "invite": [w.bot.id], "preset": "trusted_private_chat"}),
    )["room_id"]
        .as_str()
        .unwrap()
        .to_string();
    let sent = w.hs.say(&w.alice, &room, &code, None);
    out.push_str(&format!(
        "# alice ({}) opens a direct chat with the bot and sends {code}; the bot joins and replies:\n#   {}\n",
        w.alice.id,
        w.reply_to(&w.alice, &room, &sent)
    ));
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
    let (card, text) = w.card(&w.alice, &room, id);
    out.push_str(&format!(
        "# her card, in that room:\n#   {}\n",
        text.replace('\n', "\n#   ")
    ));
    let reply = w.hs.say(&w.alice, &room, "2", Some(&card));
    out.push_str(&format!(
        "# she replies \"2\" to it; the bot replies to her message:\n#   {}\n",
        w.reply_to(&w.alice, &room, &reply)
    ));
    let edited = w.closed(&w.alice, &room, &card, "answered by alice");
    out.push_str(&format!(
        "# and the card is edited to end: {}\n",
        edited.lines().last().unwrap()
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
        json!({
            "event": answered["event"], "answered_by": answered["answered_by"],
            "channel": answered["channel"], "answer": answered["after"]["answer"],
            "detail": answered["detail"],
        })
    ));
    assert_eq!(relay.stop().code(), Some(0));
    // What changes on every run: the code, the user id Synapse gave, the event's id.
    let event = answered["detail"]["event"].as_str().unwrap();
    let out = out
        .replace(&code, "GATQZYDXH5")
        .replace(&w.alice.id, "@alice:localhost")
        .replace(event, "$RGUI51NN6dbDtPSw-cDMGsawy4UzFcthzMdMfv1Dnv4");
    crate::docs::assert_documented("docs/guide/relay.md", "transcript: matrix", &out);
}
