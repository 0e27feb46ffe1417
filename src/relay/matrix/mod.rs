//! Matrix, through the client-server API of the bot account's homeserver: `/sync` long
//! polling with a filter keeping messages, encrypted messages and reactions (its
//! `next_batch`, the read position, stored in the ledger and moved past what each batch
//! recorded), invitations joined, cards as `m.text` messages in the person's direct room
//! (`m.direct`, made when there is none), answered by a reply to the card, closed by an
//! edit (`m.replace`), 429 `M_LIMIT_EXCEEDED` honoured. A person is their user id
//! (`matrix:<@user:server>`), the event's `sender`, which the homeserver vouches for.
//!
//! Several clients may sync one account, each getting every event, so no event says
//! another program reads this account: `read_by_another` stays false, and one bot
//! account serves one ledger.

mod config;

pub(crate) use config::open;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::output;
use questions_core::model::{self, Relayed};
use questions_core::ops::relay::{self, Binding, ButtonKey, FromChannel, Given, Outcome};
use questions_core::ops::Ledger;

use super::kit::buttons::verdict;
use super::kit::outbox::{Outbox, Refusals};
use super::kit::retry::{retrying, Tried};
use super::kit::{card_text, clip, noted, pairing, plain, Res, Throttle};

const CHANNEL: model::Channel = model::Channel::Matrix;

/// A message's length kept well under the homeserver's 64 KiB event limit.
const TEXT_LIMIT: usize = 16_000;
/// The most events of one room a sync gives; a longer gap is read with `/messages`.
const TIMELINE_LIMIT: u32 = 100;

pub(crate) struct Matrix {
    api: Arc<Api>,
    /// The long poll's `timeout`, in seconds.
    poll_timeout: u64,
    /// What is said back to senders (a room and its message's content).
    outbox: Outbox<(String, Value)>,
    /// The bot's own user id (`whoami`), once asked.
    me: Mutex<Option<String>>,
    /// Each person's direct room with the bot, once found or made.
    rooms: Mutex<HashMap<String, String>>,
    /// Senders told why nothing was recorded for them (strangers, and messages in
    /// encrypted rooms): once a minute at most.
    refused: Refusals,
}

/// The client-server API, as the reading side and the sending thread share it.
struct Api {
    /// The homeserver's base URL, without its trailing slash.
    base: String,
    /// The bot account's access token: sent in a header, never printed.
    token: String,
    /// For `/sync` (held open for its long poll) and for everything else.
    sync_agent: ureq::Agent,
    agent: ureq::Agent,
    /// Transaction ids of the messages sent: unique to this process.
    txn: AtomicU64,
    /// When this relay started (ms since the epoch): part of each transaction id, and a
    /// first sync, with no position stored, acts only on events after it.
    started_ms: u64,
    /// Sends into one room: a burst of 10, then 5 a second. A homeserver's own limit
    /// (Synapse's `rc_message`, per user) answers 429 with the wait, which is honoured.
    to_room: Throttle,
}

impl Matrix {
    pub(crate) fn new(homeserver: &str, token: &str, poll_timeout: u64) -> Matrix {
        let agent = |seconds: u64| {
            ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(seconds)))
                .http_status_as_error(false)
                .max_redirects(0)
                .build()
                .new_agent()
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let api = Arc::new(Api {
            base: homeserver.trim_end_matches('/').to_string(),
            token: token.to_string(),
            sync_agent: agent(poll_timeout + 15),
            agent: agent(20),
            txn: AtomicU64::new(0),
            started_ms: now,
            to_room: Throttle::new(Duration::from_millis(200), 10, None),
        });
        let sender = Arc::clone(&api);
        Matrix {
            api,
            poll_timeout,
            outbox: Outbox::new(Relayed::Matrix, move |(room, content): (String, Value)| {
                sender.send(&room, &content).map(|_| ())
            }),
            me: Mutex::new(None),
            rooms: Mutex::new(HashMap::new()),
            refused: Refusals::default(),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Res<Value> {
        self.api.call(method, path, body)
    }

    fn send(&self, room: &str, content: &Value) -> Res<String> {
        self.api.send(room, content)
    }

    /// Says `text` in `room`, as a reply to `to` when given, through the outbox.
    fn tell(&self, room: &str, text: &str, to: Option<&str>) {
        let mut content = json!({"msgtype": "m.notice", "body": clip(text, TEXT_LIMIT)});
        if let Some(to) = to {
            content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": to}});
        }
        self.outbox.send((room.to_string(), content));
    }

    /// The bot's own user id.
    fn me(&self) -> Res<String> {
        let mut me = self
            .me
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(id) = me.as_ref() {
            return Ok(id.clone());
        }
        let reply = self.call("GET", "/_matrix/client/v3/account/whoami", None)?;
        let id = reply["user_id"]
            .as_str()
            .ok_or("whoami answered without a user_id")?
            .to_string();
        *me = Some(id.clone());
        Ok(id)
    }

    /// The bot's `m.direct` account data: each user's direct rooms.
    fn direct(&self, me: &str) -> Res<Value> {
        let path = format!("/_matrix/client/v3/user/{}/account_data/m.direct", enc(me));
        match self.call("GET", &path, None) {
            Ok(map) if map.is_object() => Ok(map),
            Ok(_) => Ok(json!({})),
            Err(why) if why.contains("M_NOT_FOUND") => Ok(json!({})),
            Err(why) => Err(why),
        }
    }

    /// Records `room` as `user`'s direct room in the bot's `m.direct`.
    fn remember_direct(&self, user: &str, room: &str) -> Res<()> {
        let me = self.me()?;
        let mut map = self.direct(&me)?;
        let rooms = map[user].as_array().cloned().unwrap_or_default();
        if !rooms.iter().any(|r| r == room) {
            let mut rooms = rooms;
            rooms.insert(0, room.into());
            map[user] = rooms.into();
            let path = format!("/_matrix/client/v3/user/{}/account_data/m.direct", enc(&me));
            self.call("PUT", &path, Some(&map))?;
        }
        self.rooms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(user.to_string(), room.to_string());
        Ok(())
    }

    /// Whether `room` can carry `user`'s cards: the bot is in it, `user` is joined or
    /// invited, and it is not encrypted (the relay reads no encrypted message).
    fn usable(&self, room: &str, user: &str) -> bool {
        let state = |kind: &str, key: &str| {
            self.call(
                "GET",
                &format!(
                    "/_matrix/client/v3/rooms/{}/state/{kind}/{}",
                    enc(room),
                    enc(key)
                ),
                None,
            )
        };
        let member = state("m.room.member", user);
        let in_it = member.is_ok_and(|m| m["membership"] == "join" || m["membership"] == "invite");
        in_it && state("m.room.encryption", "").is_err()
    }

    /// `user`'s direct room with the bot: the one known, else the first usable one of
    /// `m.direct`, else a new one (private, `is_direct`, `user` invited), recorded there.
    fn room_of(&self, user: &str) -> Res<String> {
        if let Some(room) = self
            .rooms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(user)
        {
            return Ok(room.clone());
        }
        let me = self.me()?;
        let map = self.direct(&me)?;
        for room in map[user].as_array().into_iter().flatten() {
            if let Some(room) = room.as_str().filter(|r| self.usable(r, user)) {
                self.rooms
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(user.to_string(), room.to_string());
                return Ok(room.to_string());
            }
        }
        let made = self.call(
            "POST",
            "/_matrix/client/v3/createRoom",
            Some(&json!({
                "is_direct": true,
                "invite": [user],
                "preset": "trusted_private_chat",
                "name": "questions",
            })),
        )?;
        let room = made["room_id"]
            .as_str()
            .ok_or("createRoom answered without a room_id")?
            .to_string();
        self.remember_direct(user, &room)?;
        Ok(room)
    }

    /// An invitation: joined; a direct one (`is_direct` on the bot's invite) is recorded
    /// as the inviter's direct room unless it is encrypted.
    fn accept(&self, room: &str, invite: &Value) -> Res<()> {
        let me = self.me()?;
        let events = invite["invite_state"]["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mine = events
            .iter()
            .find(|e| e["type"] == "m.room.member" && e["state_key"] == me.as_str());
        let encrypted = events.iter().any(|e| e["type"] == "m.room.encryption");
        self.call(
            "POST",
            &format!("/_matrix/client/v3/join/{}", enc(room)),
            Some(&json!({})),
        )?;
        if let Some(mine) = mine {
            let inviter = mine["sender"].as_str().unwrap_or("");
            if mine["content"]["is_direct"] == true && !encrypted && !inviter.is_empty() {
                self.remember_direct(inviter, room)?;
            }
        }
        Ok(())
    }

    /// The events of `room` between `since` and the timeline a limited sync gave
    /// (starting at `prev_batch`), oldest first.
    fn gap(&self, room: &str, prev_batch: &str, since: &str, filter: &str) -> Res<Vec<Value>> {
        let mut out: Vec<Value> = Vec::new();
        let mut from = prev_batch.to_string();
        for _ in 0..50 {
            let path = format!(
                "/_matrix/client/v3/rooms/{}/messages?dir=b&limit=100&from={}&to={}&filter={}",
                enc(room),
                enc(&from),
                enc(since),
                enc(filter)
            );
            let page = self.call("GET", &path, None)?;
            let chunk = page["chunk"].as_array().cloned().unwrap_or_default();
            out.extend(chunk.iter().cloned());
            match page["end"].as_str() {
                Some(end) if !chunk.is_empty() => from = end.to_string(),
                _ => break,
            }
        }
        out.reverse();
        Ok(out)
    }

    /// One event of `room`, through the core; what it records is committed before
    /// anything is said back. The read position moves once the batch is through.
    fn handle(&self, ledger: &mut Ledger, me: &str, room: &str, event: &Value) -> Res<()> {
        let db = |e: questions_core::error::Error| e.message;
        let (Some(sender), Some(event_id)) = (event["sender"].as_str(), event["event_id"].as_str())
        else {
            return Ok(());
        };
        // Its own cards and replies, and a reaction: never an answer.
        if sender == me || event["type"] == "m.reaction" {
            return Ok(());
        }
        let identity = format!("matrix:{sender}");
        let from = |binding: Binding, given: Given| FromChannel {
            channel: CHANNEL,
            identity: identity.clone(),
            event_id: event_id.to_string(),
            binding,
            given,
            position: None,
        };
        if event["type"] == "m.room.encrypted" {
            questions_core::fault::point("relay-heard");
            let why = "this room is encrypted, and the relay reads no encrypted message: \
                       nothing was recorded; answer in the unencrypted direct room the \
                       relay's cards come in";
            let outcome = relay::refuse(
                ledger,
                &from(Binding::None, Given::Text(String::new())),
                why,
            )
            .map_err(db)?;
            if outcome != Outcome::Repeated && self.refused.may_refuse(sender) {
                self.tell(room, why, Some(event_id));
            }
            return Ok(());
        }
        let content = &event["content"];
        // An edit (`m.replace`), a notice (another bot's words), anything but text:
        // never an answer.
        if content["m.relates_to"]["rel_type"] == "m.replace" || content["msgtype"] != "m.text" {
            return Ok(());
        }
        let Some(body) = content["body"].as_str() else {
            return Ok(());
        };
        let text = without_fallback(body);
        let reply_to = content["m.relates_to"]["m.in_reply_to"]["event_id"].as_str();
        questions_core::fault::point("relay-heard");
        let heard = match reply_to {
            Some(card) => {
                let reference = format!("{room}|{card}");
                // An approval's card reads the reply as a vote (as email's does); what it
                // is bound to, and may record, is `hear`'s to decide.
                let approval = relay::card_by_ref(ledger, CHANNEL, &reference)
                    .map_err(db)?
                    .and_then(|(_, q)| q)
                    .is_some_and(|q| q.state.approval.is_some());
                let given = if approval {
                    verdict(&text)
                } else {
                    Given::Text(text.clone())
                };
                relay::hear(ledger, &from(Binding::Reply(reference), given)).map_err(db)?
            }
            None => match pairing::code_in(&text) {
                Some(code) => relay::redeem(
                    ledger,
                    &from(Binding::None, Given::Text(String::new())),
                    &code,
                )
                .map_err(db)?,
                None => relay::hear(ledger, &from(Binding::None, Given::Text(text.clone())))
                    .map_err(db)?,
            },
        };
        let stranger = heard.outcome == Outcome::Refused && heard.person.is_none();
        if heard.outcome != Outcome::Repeated && (!stranger || self.refused.may_refuse(sender)) {
            self.tell(room, &heard.reply, Some(event_id));
        }
        Ok(())
    }
}

impl super::Channel for Matrix {
    fn kind(&self) -> model::Channel {
        CHANNEL
    }

    fn send_card(&self, card: &relay::Card) -> Res<String> {
        let user = card
            .delivery
            .identity
            .strip_prefix("matrix:")
            .ok_or("not a Matrix identity")?;
        let room = self.room_of(user)?;
        let q = &card.question;
        let how = how_to_answer(q);
        let mut text = noted(card, TEXT_LIMIT, |room| card_text(q, how, room, plain));
        // The card's text says how to reply where typed answers are taken; else here.
        if q.state.approval.is_some() || !(q.allow_freeform || q.options.is_empty()) {
            text = format!(
                "{}\n\n{how}",
                clip(&text, TEXT_LIMIT - how.chars().count() - 2)
            );
        }
        let sent = self.send(&room, &json!({"msgtype": "m.text", "body": text}));
        let event = match sent {
            Ok(event) => event,
            Err(why) => {
                // The room may be gone (left, forgotten): found again next time.
                self.rooms
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(user);
                return Err(why);
            }
        };
        Ok(format!("{room}|{event}"))
    }

    fn send_note(&self, identity: &str, text: &str) -> Res<()> {
        let user = identity
            .strip_prefix("matrix:")
            .ok_or("not a Matrix identity")?;
        let room = self.room_of(user)?;
        self.send(
            &room,
            &json!({"msgtype": "m.text", "body": clip(text, TEXT_LIMIT)}),
        )
        .map(|_| ())
    }

    fn close_card(&self, closing: &relay::Closing) -> Res<()> {
        let Some((room, event)) = closing
            .delivery
            .message_ref
            .as_deref()
            .and_then(|r| r.split_once('|'))
        else {
            return Ok(());
        };
        let text = match &closing.question {
            Some(q) => {
                let words = clip(&closing.words, 500);
                let room = TEXT_LIMIT - words.chars().count() - 3;
                // Settled: no word on how to answer it.
                format!("{}\n\n✔ {words}", card_text(q, "", room, plain).trim_end())
            }
            None => format!(
                "Question {} — {}",
                closing.delivery.question_id, closing.words
            ),
        };
        let text = clip(&text, TEXT_LIMIT);
        let content = json!({
            "msgtype": "m.text",
            "body": format!("* {text}"),
            "m.new_content": {"msgtype": "m.text", "body": text},
            "m.relates_to": {"rel_type": "m.replace", "event_id": event},
        });
        match self.send(room, &content) {
            Ok(_) => Ok(()),
            // The bot is no longer in the room: nothing left to close.
            Err(why) if why.contains("M_FORBIDDEN") => Ok(()),
            Err(why) => Err(why),
        }
    }

    fn poll(&self, ledger: &mut Ledger, _key: &ButtonKey) -> Res<()> {
        let db = |e: questions_core::error::Error| e.message;
        let me = self.me()?;
        let since = relay::position(ledger, CHANNEL).map_err(db)?;
        let filter = json!({
            "presence": {"types": []},
            "account_data": {"types": []},
            "room": {
                "timeline": {
                    "types": ["m.room.message", "m.room.encrypted", "m.reaction"],
                    "limit": TIMELINE_LIMIT,
                },
                "state": {"types": []},
                "ephemeral": {"types": []},
                "account_data": {"types": []},
                "include_leave": false,
            },
        })
        .to_string();
        let room_filter = json!({
            "types": ["m.room.message", "m.room.encrypted", "m.reaction"],
        })
        .to_string();
        let mut path = format!(
            "/_matrix/client/v3/sync?filter={}&timeout={}",
            enc(&filter),
            if since.is_some() {
                self.poll_timeout * 1000
            } else {
                0
            }
        );
        if let Some(since) = &since {
            path.push_str(&format!("&since={}", enc(since)));
        }
        let sync = self.call("GET", &path, None)?;
        let next = sync["next_batch"]
            .as_str()
            .ok_or("sync answered without a next_batch")?
            .to_string();
        if let Some(invites) = sync["rooms"]["invite"].as_object() {
            for (room, invite) in invites {
                if let Err(why) = self.accept(room, invite) {
                    output::note(&format!(
                        "relay: matrix: an invitation to {} was not accepted ({why})",
                        output::sanitize(room, false)
                    ));
                }
            }
        }
        let mut joined: Vec<(&String, &Value)> = sync["rooms"]["join"]
            .as_object()
            .map(|rooms| rooms.iter().collect())
            .unwrap_or_default();
        joined.sort_by(|a, b| a.0.cmp(b.0));
        for (room, state) in joined {
            let timeline = &state["timeline"];
            let mut events = timeline["events"].as_array().cloned().unwrap_or_default();
            if let (true, Some(since), Some(prev)) = (
                timeline["limited"] == true,
                since.as_deref(),
                timeline["prev_batch"].as_str(),
            ) {
                let mut earlier = self.gap(room, prev, since, &room_filter)?;
                earlier.append(&mut events);
                events = earlier;
            }
            for event in &events {
                // The first sync acts only on what came after this relay started: an old
                // conversation is no answer to give now.
                let at = event["origin_server_ts"].as_u64().unwrap_or(0);
                if since.is_none() && at < self.api.started_ms {
                    continue;
                }
                self.handle(ledger, &me, room, event)?;
            }
        }
        if since.as_deref() != Some(next.as_str()) {
            relay::pass(ledger, CHANNEL, &next).map_err(db)?;
        }
        Ok(())
    }
}

impl Api {
    /// Calls the client-server API: `method` on `path` (from `/_matrix/…`), with `body`
    /// as JSON. A 429 waits its `retry_after_ms` and tries again; an error names the
    /// call and the homeserver's `errcode`, never the token.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Res<Value> {
        let agent = if path.starts_with("/_matrix/client/v3/sync") {
            &self.sync_agent
        } else {
            &self.agent
        };
        let what = path.split('?').next().unwrap_or(path);
        retrying(Relayed::Matrix, &format!("{method} {what}"), |may_wait| {
            let url = format!("{}{path}", self.base);
            let auth = format!("Bearer {}", self.token);
            let sent = match (method, body) {
                ("GET", _) => agent.get(&url).header("Authorization", &auth).call(),
                ("PUT", Some(b)) => agent
                    .put(&url)
                    .header("Authorization", &auth)
                    .header("Content-Type", "application/json")
                    .send(b.to_string().as_bytes()),
                (_, b) => agent
                    .post(&url)
                    .header("Authorization", &auth)
                    .header("Content-Type", "application/json")
                    .send(
                        b.map_or_else(|| "{}".to_string(), Value::to_string)
                            .as_bytes(),
                    ),
            };
            let mut response = sent.map_err(|e| format!("{method} {what}: {e}"))?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("Retry-After")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let text = response
                .body_mut()
                .read_to_string()
                .map_err(|_| format!("{method} {what}: the answer could not be read"))?;
            let reply: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            if (200..300).contains(&status) {
                return Ok(Tried::Answered(reply));
            }
            if status == 429 && may_wait {
                let wait = reply["retry_after_ms"]
                    .as_u64()
                    .or_else(|| retry_after.map(|s| s * 1000))
                    .unwrap_or(1000);
                return Ok(Tried::Wait(Duration::from_millis(wait)));
            }
            let code = reply["errcode"].as_str().unwrap_or("");
            let about = reply["error"].as_str().unwrap_or("");
            Err(format!(
                "{method} {what} answered {status} {code}: {}",
                output::sanitize(about, false)
            ))
        })
    }

    /// Sends `content` as an `m.room.message` into `room`; the new event's id.
    fn send(&self, room: &str, content: &Value) -> Res<String> {
        self.to_room.wait(room);
        let txn = format!(
            "q{}.{}.{}",
            std::process::id(),
            self.started_ms,
            self.txn.fetch_add(1, Ordering::SeqCst)
        );
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{txn}",
            enc(room)
        );
        let reply = self.call("PUT", &path, Some(content))?;
        reply["event_id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| "send answered without an event_id".to_string())
    }
}

/// What a card says of how to answer it, after its options.
fn how_to_answer(q: &model::Question) -> &'static str {
    if q.state.approval.is_some() {
        "Reply to this message with APPROVE, or REJECT and a reason."
    } else if q.options.is_empty() {
        "Reply to this message with your answer."
    } else if q.allow_freeform {
        "Reply to this message with the option's number or label, or with your own answer."
    } else if q.multi_select {
        "Reply to this message with the options' numbers, separated by commas."
    } else {
        "Reply to this message with the option's number or label."
    }
}

/// A reply's text without the quoted message older clients put before it (`> …` lines
/// and the blank line after them).
fn without_fallback(body: &str) -> String {
    if !body.starts_with("> ") {
        return body.to_string();
    }
    let mut lines = body.lines().skip_while(|l| l.starts_with('>'));
    let rest: Vec<&str> = lines.by_ref().collect();
    rest.join("\n").trim_start_matches('\n').to_string()
}

/// `text` percent-encoded for a path segment or a query value.
fn enc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replys_quoted_fallback_is_not_its_text() {
        assert_eq!(without_fallback("> <@bot:hs> Question 1\n> 1. A\n\n2"), "2");
        assert_eq!(without_fallback("2"), "2");
        assert_eq!(without_fallback(">2"), ">2");
    }

    #[test]
    fn ids_are_encoded_for_paths() {
        assert_eq!(enc("!abc:hs.org"), "%21abc%3Ahs.org");
        assert_eq!(enc("$e/v+="), "%24e%2Fv%2B%3D");
    }
}
