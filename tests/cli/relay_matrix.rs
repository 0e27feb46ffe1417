//! `questions relay` on Matrix (§14), against a real Synapse (synapse.rs): what every
//! channel promises is the channel suite's (`Matrix` below, run in relay_suite.rs), and
//! what only Matrix does is a test here. The homeserver runs once, in the SQLite pass
//! (.ci/run skips `relay_matrix::` and `relay_suite::matrix::` in the others).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::channel_suite::{ChannelUnderTest, Who};
use crate::common::*;
use crate::relay_harness::{self, Relay};
use crate::synapse::{until, Synapse, User};
use serde_json::{json, Value};

const TOKEN_ENV: &str = "MATRIX_BOT_TOKEN";
/// A token that is no one's, which the relay must never print.
const SECRET_TOKEN: &str = "syt_secret_token_value";

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
fn relay_matrix_a_token_the_homeserver_refuses_is_said_and_never_printed() {
    // The configs refused before any homeserver is asked: the suite's (relay_suite.rs).
    let Some(w) = World::start() else { return };
    let l = Ledger::new();
    let config = format!(
        "[matrix]\nhomeserver = \"{}\"\ntoken_env = \"{TOKEN_ENV}\"\n",
        w.hs.url
    );
    let relay = Relay::run(&l, "matrix", &config, &[(TOKEN_ENV, SECRET_TOKEN)], &[]);
    until("the refusal on stderr", || {
        relay.stderr().contains("M_UNKNOWN_TOKEN").then_some(())
    });
    assert!(!relay.stderr().contains(SECRET_TOKEN));
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
    let ticks = || relay.cpu_ticks();
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
    let show =
        |out: &mut String, args: &[&str], print: bool| relay_harness::show(&l, out, args, print);
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

/// Matrix in the channel suite (channel_suite.rs), against a real Synapse: the runner is
/// alice, bob is bob, the stranger mallory. A card's "button" is a reply to the card with
/// the option's number (APPROVE or REJECT on an approval's), sent in the card's room (the
/// card's owner brings in whoever is not there yet); a message outside any card is sent
/// in the person's own room with the bot.
pub(crate) struct Matrix {
    w: World,
    /// The ledger's file: `deliver_twice` sets the relay's stored position back in it.
    ledger: std::path::PathBuf,
    /// Each person's own room with the bot, once joined or made.
    own: RefCell<HashMap<Who, String>>,
    /// The rooms each person is in.
    rooms: RefCell<Vec<(Who, String)>>,
    /// Everything sent through the suite (markers aside), for `said_to`.
    sent: RefCell<Vec<Message>>,
    markers: Cell<usize>,
}

/// A message sent in a room, by whom.
#[derive(Clone, Debug)]
pub(crate) struct Message {
    who: Who,
    room: String,
    event: String,
}

impl Matrix {
    fn user(&self, who: Who) -> &User {
        match who {
            Who::Me => &self.w.alice,
            Who::Bob => &self.w.bob,
            Who::Stranger => &self.w.mallory,
        }
    }

    fn rooms_of(&self, who: Who) -> Vec<String> {
        self.rooms
            .borrow()
            .iter()
            .filter(|(w, _)| *w == who)
            .map(|(_, r)| r.clone())
            .collect()
    }

    fn is_in(&self, who: Who, room: &str) -> bool {
        self.rooms_of(who).iter().any(|r| r == room)
    }

    /// Joins the rooms `who` is invited to (the bot's direct rooms, made with a card).
    fn join_invites(&self, who: Who) {
        for room in self.w.hs.invites(self.user(who)) {
            self.w.hs.join(self.user(who), &room);
            self.rooms.borrow_mut().push((who, room.clone()));
            self.own.borrow_mut().entry(who).or_insert(room);
        }
    }

    /// `who`'s own room with the bot: the one the bot made, or one `who` makes, inviting
    /// the bot and waiting for it to join, so that what is said there is read in order
    /// with what is said elsewhere later.
    fn own_room(&self, who: Who) -> String {
        self.join_invites(who);
        if let Some(room) = self.own.borrow().get(&who) {
            return room.clone();
        }
        let room = self.w.hs.call(
            self.user(who),
            "POST",
            "/_matrix/client/v3/createRoom",
            &json!({"is_direct": true, "invite": [self.w.bot.id], "preset": "trusted_private_chat"}),
        )["room_id"]
            .as_str()
            .unwrap()
            .to_string();
        until("the bot joining the room", || {
            self.w
                .hs
                .events(self.user(who), &room)
                .iter()
                .any(|e| {
                    e["type"] == "m.room.member"
                        && e["state_key"] == self.w.bot.id.as_str()
                        && e["content"]["membership"] == "join"
                })
                .then_some(())
        });
        self.rooms.borrow_mut().push((who, room.clone()));
        self.own.borrow_mut().insert(who, room.clone());
        room
    }

    /// `who` in `room`, invited by `host` (who is in it) and joined, unless already in.
    fn enter(&self, who: Who, room: &str, host: Who) {
        if !self.is_in(who, room) {
            self.w.hs.invite(self.user(host), room, self.user(who));
            self.w.hs.join(self.user(who), room);
            self.rooms.borrow_mut().push((who, room.to_string()));
        }
    }

    /// The cards of question `id` in `who`'s rooms.
    fn cards_of(&self, who: Who, id: i64) -> Vec<Value> {
        let head = format!("Question {id} ");
        let mut found = Vec::new();
        for room in self.rooms_of(who) {
            for e in self.w.hs.events(self.user(who), &room) {
                let body = e["content"]["body"].as_str().unwrap_or("");
                if e["sender"] == self.w.bot.id.as_str()
                    && e["type"] == "m.room.message"
                    && e["content"]["m.relates_to"].is_null()
                    && body.starts_with(&head)
                {
                    found.push(json!({
                        "room": room, "event": e["event_id"], "body": body,
                        "owner": format!("{who:?}"),
                    }));
                }
            }
        }
        found
    }

    fn say(&self, who: Who, room: &str, text: &str, to: Option<&str>) -> Message {
        let event = self.w.hs.say(self.user(who), room, text, to);
        let message = Message {
            who,
            room: room.to_string(),
            event,
        };
        self.sent.borrow_mut().push(message.clone());
        message
    }

    fn reply(&self, who: Who, card: &Value, text: &str) -> Message {
        let room = card["room"].as_str().unwrap();
        let owner = match card["owner"].as_str().unwrap() {
            "Me" => Who::Me,
            "Bob" => Who::Bob,
            _ => Who::Stranger,
        };
        self.enter(who, room, owner);
        self.say(who, room, text, Some(card["event"].as_str().unwrap()))
    }

    /// What a press of `label` on `card` replies.
    fn answer(&self, card: &Value, label: &str) -> String {
        let options = self.options(card);
        let at = options
            .iter()
            .position(|o| o.contains(label))
            .unwrap_or_else(|| panic!("no option {label} on {card}"));
        match options[at].as_str() {
            "Approve" | "Reject" => options[at].to_uppercase(),
            _ => (at + 1).to_string(),
        }
    }

    /// The relay's read position, as the ledger stores it.
    fn position(&self) -> Option<String> {
        let conn = rusqlite::Connection::open(&self.ledger).unwrap();
        conn.query_row(
            "SELECT value FROM relay_state WHERE name = 'position:matrix'",
            [],
            |r| r.get(0),
        )
        .ok()
    }
}

impl ChannelUnderTest for Matrix {
    const NAME: &'static str = "matrix";
    const TELLS_STRANGERS: bool = true;
    /// The long poll's connection.
    const HOLDS_A_CONNECTION: bool = true;
    const FORGED: &'static str = "not an answer to a question card sent to you";
    type Sent = Message;

    fn missing() -> Option<String> {
        (!crate::synapse::installed())
            .then(|| "Synapse is not installed (scripts/synapse installs it)".to_string())
    }

    fn start(l: &Ledger) -> Matrix {
        assert!(l.url.is_none(), "the Matrix suite runs in the SQLite pass");
        Matrix {
            w: World::start().expect("Synapse"),
            ledger: l.path.clone(),
            own: RefCell::new(HashMap::new()),
            rooms: RefCell::new(Vec::new()),
            sent: RefCell::new(Vec::new()),
            markers: Cell::new(0),
        }
    }

    fn identity(&self, who: Who) -> String {
        format!("matrix:{}", self.user(who).id)
    }

    fn relay(&self, l: &Ledger, env: &[(&str, &str)]) -> Relay {
        // A short long poll: `deliver_twice` waits for one to end with nothing new.
        let config = format!(
            "[matrix]\nhomeserver = \"{}\"\ntoken_env = \"{TOKEN_ENV}\"\npoll_timeout = 2\n",
            self.w.hs.url
        );
        Relay::run(l, "matrix", &config, &[(TOKEN_ENV, &self.w.bot.token)], env)
    }

    fn card(&self, who: Who, id: i64) -> Value {
        until(&format!("the card of question {id}"), || {
            self.join_invites(who);
            self.cards_of(who, id).into_iter().next()
        })
    }

    fn cards(&self, who: Who, id: i64) -> usize {
        self.join_invites(who);
        self.cards_of(who, id).len()
    }

    fn options(&self, card: &Value) -> Vec<String> {
        let body = card["body"].as_str().unwrap();
        if body.contains("with APPROVE, or REJECT") {
            return vec!["Approve".into(), "Reject".into()];
        }
        body.lines()
            .filter_map(|line| {
                let (n, label) = line.trim().split_once(". ")?;
                (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit())).then(|| label.to_string())
            })
            .collect()
    }

    fn press(&self, who: Who, card: &Value, label: &str) -> Message {
        self.reply(who, card, &self.answer(card, label))
    }

    fn type_answer(&self, who: Who, card: &Value, text: &str) -> Message {
        self.reply(who, card, text)
    }

    fn forgeries(&self, who: Who, card: &Value, label: &str) -> Vec<Message> {
        let answer = self.answer(card, label);
        let named = card["event"].as_str().unwrap();
        // A reply naming the card, sent in another room with the bot: the stranger's.
        let elsewhere = self.own_room(Who::Stranger);
        self.enter(who, &elsewhere, Who::Stranger);
        let moved = self.say(who, &elsewhere, &answer, Some(named));
        // A reply in the card's room naming an event that is no card (a notice, which
        // the relay passes over).
        let room = card["room"].as_str().unwrap();
        let notice = self.w.hs.send(
            self.user(who),
            room,
            "m.room.message",
            &json!({"msgtype": "m.notice", "body": "a note"}),
        );
        let other = self.say(who, room, &answer, Some(&notice));
        vec![moved, other]
    }

    fn write(&self, who: Who, text: &str) -> Message {
        let room = self.own_room(who);
        self.say(who, &room, text, None)
    }

    fn pairing(code: &str) -> String {
        format!("my code: {code}")
    }

    fn deliver_twice(&self, who: Who, card: &Value, label: &str) -> (Message, Message) {
        // Matrix has no redelivery: the same event is read twice when the relay's stored
        // read position is behind it, as after a kill between the event's commit and the
        // position's. The reply is recorded and read past; the stored position is set
        // back to before it, once the relay has read all there is (its position the
        // homeserver's now) and so stores nothing new until its long poll ends; its next
        // sync, from the old position, reads the reply again.
        let before = self.position().expect("a stored read position");
        let sent = self.press(who, card, label);
        let said = self.told(&sent);
        assert!(said.trim_start().starts_with("recorded"), "{said}");
        // The cards of the question, edited once it is answered: sent by then.
        let id: i64 = card["body"].as_str().unwrap()["Question ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        for other in [Who::Me, Who::Bob] {
            if self.cards(other, id) > 0 {
                self.settled(other, id);
            }
        }
        let conn = rusqlite::Connection::open(&self.ledger).unwrap();
        for _ in 0..5 {
            let now = until("the relay reading all there is", || {
                let now = self.w.hs.now(&self.w.bot);
                (self.position().as_deref() == Some(now.as_str())).then_some(now)
            });
            conn.execute(
                "UPDATE relay_state SET value = ?1 WHERE name = 'position:matrix'",
                [&before],
            )
            .unwrap();
            until("the relay reading from the old position", || {
                (self.position().as_deref() != Some(before.as_str())).then_some(())
            });
            // Nothing came since: the long poll under way when the position was set back
            // stored nothing, so the position moved on from a sync that started behind
            // the reply. Else (the homeserver moved on) it is not known: again.
            if self.w.hs.now(&self.w.bot) == now {
                return (sent.clone(), sent);
            }
        }
        panic!("the homeserver kept moving on: the reply was never known to be read again");
    }

    fn told(&self, sent: &Message) -> String {
        self.w
            .reply_to(self.user(sent.who), &sent.room, &sent.event)
    }

    fn said_to(&self, who: Who) -> Vec<String> {
        self.sent
            .borrow()
            .iter()
            .filter(|m| m.who == who)
            .flat_map(|m| self.w.replies_to(self.user(who), &m.room, &m.event))
            .collect()
    }

    fn passed(&self, l: &Ledger, sent: &Message) {
        // Events of one room are read in order: a later message of the same sender in
        // the same room, refused (no answer to any card), is refused once all before it
        // is committed.
        let n = self.markers.get() + 1;
        self.markers.set(n);
        let marker = self.w.hs.say(
            self.user(sent.who),
            &sent.room,
            &format!("marker {n}"),
            None,
        );
        until(&format!("the relay refusing marker {n}"), || {
            let out = l.command().arg("events").output().unwrap();
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .any(|e| e["event"] == "refused" && e["detail"]["event"] == marker.as_str())
                .then_some(())
        });
    }

    fn settled(&self, who: Who, id: i64) -> String {
        let card = self.card(who, id);
        let (room, event) = (
            card["room"].as_str().unwrap(),
            card["event"].as_str().unwrap(),
        );
        until("the card edited", || {
            self.w
                .hs
                .events(self.user(who), room)
                .into_iter()
                .find_map(|e| {
                    let relates = &e["content"]["m.relates_to"];
                    (e["sender"] == self.w.bot.id.as_str()
                        && relates["rel_type"] == "m.replace"
                        && relates["event_id"] == event)
                        .then(|| {
                            e["content"]["m.new_content"]["body"]
                                .as_str()
                                .map(str::to_string)
                        })
                        .flatten()
                })
        })
    }

    fn bad_configs() -> Vec<(String, &'static str)> {
        let good = "token_env = \"MATRIX_BOT_TOKEN\"\n";
        let https = "homeserver = \"https://m.example.org\"\n";
        vec![
            (
                format!("[matrix]\nhomeserver = \"http://matrix.example.org\"\n{good}"),
                "matrix.homeserver",
            ),
            (
                format!("[matrix]\nhomeserver = \"ftp://x\"\n{good}"),
                "matrix.homeserver",
            ),
            (format!("[matrix]\n{good}"), "matrix.homeserver"),
            (format!("[matrix]\n{https}"), "matrix.token_env"),
            (
                format!("[matrix]\n{https}token_env = \"NOT_SET_ANYWHERE\"\n"),
                "matrix.token_env",
            ),
            (
                format!("[matrix]\n{https}{good}poll_timeout = 51\n"),
                "matrix.poll_timeout",
            ),
            (
                format!("[matrix]\n{https}{good}secret = \"x\"\n"),
                "matrix.secret",
            ),
        ]
    }

    fn config_env() -> Vec<(&'static str, &'static str)> {
        vec![(TOKEN_ENV, SECRET_TOKEN)]
    }

    fn secrets() -> Vec<&'static str> {
        vec![SECRET_TOKEN]
    }
}
