//! Slack, through Socket Mode and the Web API: `apps.connections.open` (the app-level
//! token) gives a websocket URL the relay connects to (outbound only); each envelope is
//! handled through the core and acknowledged (`{"envelope_id": …}`) only once what it
//! recorded is committed, so an envelope whose handling a killed relay never finished is
//! redelivered by Slack and recorded then, and a redelivery is absorbed by its event id.
//! Cards are `chat.postMessage` with Block Kit buttons whose values are signed as
//! Telegram's `callback_data` are; typed answers are replies in the card's thread; a card
//! is closed with `chat.update`; after each (re)connection the open cards' threads are
//! read again (`conversations.replies`) from the read position in the ledger. 429 waits its
//! `Retry-After`. A person is `slack:<team id>/<user id>` as Slack vouches for it in the
//! payload, never a name.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use super::kit::buttons::{self, Role};
use super::kit::config::{Config, Secret};
use super::kit::outbox::{Outbox, Refusals};
use super::kit::retry::{self, Tried};
use super::kit::{card_text, clip, noted, pairing, Res, Throttle};
use crate::output;
use questions_core::error::Result;
use questions_core::model::{self, Question, Relayed};
use questions_core::ops::relay::{self, Binding, ButtonKey, FromChannel, Given, Outcome};
use questions_core::ops::Ledger;

const API: &str = "https://slack.com/api";

/// `[slack]`: `api` (the Web API's base), `app_token_env` (the variable holding the
/// app-level token, for Socket Mode) and `bot_token_env` (the bot token's, for the Web
/// API).
pub(crate) fn open(table: &toml_edit::Table) -> Result<Slack> {
    let config = Config::new(
        Relayed::Slack,
        table,
        &["api", "app_token_env", "bot_token_env"],
    )?;
    let api = config.url("api", API)?;
    let token = Secret::Token {
        also: &[],
        is: "a token",
    };
    let app = config.secret("app_token_env", "app-level token (xapp-…)", token)?;
    let bot = config.secret("bot_token_env", "bot token (xoxb-…)", token)?;
    Ok(Slack::new(&api, &app, &bot))
}

/// Text as Slack's mrkdwn shows it: `&`, `<` and `>` escaped, so that what a question
/// says is never read as a link, a mention or markup (`<url|staging>`).
fn mrkdwn(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// What a card says of typed answers, after its options.
const HOW_TO_REPLY: &str = "Or reply in this thread with your answer.";

/// Web API calls to make once the events that call for them are acknowledged.
type Said = Vec<Speech>;

/// A reply in the thread of `thread` on `channel`.
fn in_thread(channel: &str, thread: &str, text: &str) -> Speech {
    Speech {
        method: "chat.postMessage",
        body: json!({"channel": channel, "thread_ts": thread, "text": mrkdwn(&clip(text, TEXT_LIMIT / 2))}),
        stranger: None,
    }
}

const CHANNEL: model::Channel = model::Channel::Slack;
/// How long one `poll` reads the socket before giving the runner its turn.
const READ_FOR: Duration = Duration::from_secs(5);
/// Block Kit's limits: a section's text, a button's label.
const TEXT_LIMIT: usize = 2900;
const LABEL_LIMIT: usize = 70;
/// How a connection shared with another program is said, and how many `hello`s in a row
/// must say so.
const OTHERS: &str = "Slack counts";
const OTHERS_TRIES: u32 = 3;
/// The methods that read their arguments from a form, not from JSON.
const FORM_METHODS: &[&str] = &["apps.connections.open", "conversations.replies"];

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

pub(crate) struct Slack {
    web: Arc<Web>,
    socket: Mutex<Option<WebSocket<Box<dyn Stream>>>>,
    /// What is said back to people.
    outbox: Outbox<Speech>,
}

/// The Web API, as the reading side and the sending thread share it.
struct Web {
    api: String,
    /// The app-level token (`xapp-…`, connections:write) and the bot token (`xoxb-…`):
    /// never printed.
    app_token: String,
    bot_token: String,
    agent: ureq::Agent,
    /// Slack's published limit for posting: about one message a second to a channel,
    /// short bursts allowed (updates kept to the same).
    posting: Throttle,
}

/// A Web API call that tells someone what became of their event; `stranger`: a refusal
/// to a sender nobody linked, said to them once a minute at most.
struct Speech {
    method: &'static str,
    body: Value,
    stranger: Option<String>,
}

impl Slack {
    fn new(api: &str, app_token: &str, bot_token: &str) -> Slack {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .new_agent();
        let web = Arc::new(Web {
            api: api.trim_end_matches('/').to_string(),
            app_token: app_token.to_string(),
            bot_token: bot_token.to_string(),
            agent,
            posting: Throttle::new(Duration::from_secs(1), 3, None),
        });
        let sender = Arc::clone(&web);
        let refused = Refusals::default();
        Slack {
            web,
            socket: Mutex::new(None),
            outbox: Outbox::new(Relayed::Slack, move |speech: Speech| {
                if speech
                    .stranger
                    .as_deref()
                    .is_some_and(|who| !refused.may_refuse(who))
                {
                    return Ok(());
                }
                sender.call(speech.method, &speech.body, false).map(|_| ())
            }),
        }
    }

    fn call(&self, method: &str, body: &Value, app: bool) -> Res<Value> {
        self.web.call(method, body, app)
    }

    /// Hands the calls that tell people what became of their events to the sending
    /// thread, once those events are committed and acknowledged (a reply waiting on a 429
    /// or a channel's rate must hold back neither an acknowledgement nor the next event).
    /// A call that fails is noted, not retried: what it would say is on the card too.
    fn speak(&self, said: Said) {
        for speech in said {
            if !self.outbox.send(speech) {
                break;
            }
        }
    }

    /// Opens the Socket Mode connection: `apps.connections.open`, the websocket, its
    /// `hello`; then the open cards' threads are read for what came while away.
    ///
    /// Slack spreads an app's events over all its open connections, so a second program
    /// holding one (a relay of another ledger with the same app) would take and refuse
    /// half of this ledger's clicks, and this relay its. Each `hello` says how many
    /// connections the app holds: more than this one, a few seconds apart (a connection
    /// of ours just closed may still be counted), and the relay ends saying so before it
    /// reads any event.
    fn connect(&self, ledger: &mut Ledger) -> Res<WebSocket<Box<dyn Stream>>> {
        let mut tries = 0;
        let socket = loop {
            let (mut socket, open) = self.open()?;
            if open <= 1 {
                break socket;
            }
            let _ = socket.close(None);
            let _ = socket.flush();
            tries += 1;
            if tries == OTHERS_TRIES {
                return Err(format!(
                    "{OTHERS} {open} Socket Mode connections of this app, {tries} times in a row"
                ));
            }
            std::thread::sleep(Duration::from_secs(2 * u64::from(tries)));
        };
        self.catch_up(ledger)?;
        Ok(socket)
    }

    /// One Socket Mode connection up to its `hello`, with the app's connections it counts.
    fn open(&self) -> Res<(WebSocket<Box<dyn Stream>>, u64)> {
        let opened = self.call("apps.connections.open", &json!({}), true)?;
        let url = opened["url"]
            .as_str()
            .ok_or("apps.connections.open answered without a url")?;
        let mut socket = websocket(url)?;
        let started = Instant::now();
        loop {
            match socket.read() {
                Ok(Message::Text(text)) => {
                    let frame: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                    if frame["type"] == "hello" {
                        let open = frame["num_connections"].as_u64().unwrap_or(1);
                        return Ok((socket, open));
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) && started.elapsed() < Duration::from_secs(30) => {}
                Err(e) => return Err(format!("the Socket Mode connection: {e}")),
            }
        }
    }

    /// Replies in open cards' threads since the read position, each through the core (a
    /// reply seen before is absorbed by its event id).
    fn catch_up(&self, ledger: &mut Ledger) -> Res<()> {
        let db = |e: questions_core::error::Error| e.message;
        let mut said = Said::new();
        let since = relay::position(ledger, CHANNEL).map_err(db)?;
        for card in relay::open_cards(ledger, CHANNEL).map_err(db)? {
            let Some((channel, ts)) = card.message_ref.as_deref().and_then(|r| r.split_once(':'))
            else {
                continue;
            };
            let mut messages = Vec::new();
            let mut cursor = String::new();
            loop {
                let mut body = json!({"channel": channel, "ts": ts, "limit": 200});
                if let Some(since) = &since {
                    body["oldest"] = since.clone().into();
                }
                if !cursor.is_empty() {
                    body["cursor"] = cursor.clone().into();
                }
                let page = self.call("conversations.replies", &body, false)?;
                messages.extend(page["messages"].as_array().cloned().unwrap_or_default());
                cursor = page["response_metadata"]["next_cursor"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                if cursor.is_empty() {
                    break;
                }
            }
            for message in &messages {
                if message["ts"] == ts {
                    continue;
                }
                // The sender's team as Slack gives it; else the card's (one workspace).
                let team = message["user_team"]
                    .as_str()
                    .or(message["team"].as_str())
                    .unwrap_or_else(|| {
                        card.identity
                            .strip_prefix("slack:")
                            .and_then(|i| i.split_once('/'))
                            .map_or("", |(t, _)| t)
                    });
                Self::message(ledger, message, channel, team, &mut said)?;
            }
        }
        self.speak(said);
        Ok(())
    }

    /// One envelope, through the core; `false` when Slack asked for a new connection.
    fn envelope(ledger: &mut Ledger, key: &ButtonKey, frame: &Value, said: &mut Said) -> Res<bool> {
        match frame["type"].as_str() {
            Some("disconnect") => return Ok(false),
            Some("events_api") => {
                let payload = &frame["payload"];
                let event = &payload["event"];
                if event["type"] == "message" {
                    let channel = event["channel"].as_str().unwrap_or("");
                    // The sender's own workspace: `user_team` where Slack gives it (a
                    // shared channel), else `team`, else the envelope's.
                    let team = event["user_team"]
                        .as_str()
                        .or(event["team"].as_str())
                        .or(payload["team_id"].as_str())
                        .unwrap_or("");
                    Self::message(ledger, event, channel, team, said)?;
                }
            }
            Some("interactive") if frame["payload"]["type"] == "block_actions" => {
                Self::click(ledger, key, &frame["payload"], said)?;
            }
            _ => {}
        }
        Ok(true)
    }

    /// A message: a reply in a card's thread answers it (verbatim, or the option it is
    /// exactly the number or label of); a direct message holding a pairing code links
    /// its sender; anything else is refused and told why. The bot's own are skipped.
    fn message(
        ledger: &mut Ledger,
        event: &Value,
        channel: &str,
        team: &str,
        said: &mut Said,
    ) -> Res<()> {
        let db = |e: questions_core::error::Error| e.message;
        // Edits, joins, the bot's own: never an answer. A thread reply also sent to the
        // channel (`thread_broadcast`) is a thread reply.
        let subtype = event["subtype"].as_str();
        if event.get("bot_id").is_some()
            || (event.get("subtype").is_some() && subtype != Some("thread_broadcast"))
        {
            return Ok(());
        }
        let (Some(user), Some(ts), Some(text)) = (
            event["user"].as_str(),
            event["ts"].as_str(),
            event["text"].as_str(),
        ) else {
            return Ok(());
        };
        questions_core::fault::point("relay-heard");
        let position = later(relay::position(ledger, CHANNEL).map_err(db)?, ts);
        let thread = event["thread_ts"].as_str().filter(|t| *t != ts);
        let heard_event = |binding: Binding| FromChannel {
            channel: CHANNEL,
            identity: identity(team, user),
            event_id: format!("message:{channel}:{ts}"),
            binding,
            given: Given::Text(text.to_string()),
            position: Some(position.clone()),
        };
        let heard = match (thread, pairing::code_in(text)) {
            (Some(thread), _) => relay::hear(
                ledger,
                &heard_event(Binding::Reply(format!("{channel}:{thread}"))),
            )
            .map_err(db)?,
            (None, Some(code)) => {
                relay::redeem(ledger, &heard_event(Binding::None), &code).map_err(db)?
            }
            (None, None) => relay::hear(ledger, &heard_event(Binding::None)).map_err(db)?,
        };
        if heard.outcome != Outcome::Repeated {
            let mut speech = in_thread(channel, thread.unwrap_or(ts), &heard.reply);
            if heard.outcome == Outcome::Refused && heard.person.is_none() {
                speech.stranger = Some(identity(team, user));
            }
            said.push(speech);
        }
        Ok(())
    }

    /// A button pressed: a toggle of a multi-select or "Other…" change only the card;
    /// anything else goes through the core, and its sender is told what became of it.
    fn click(ledger: &mut Ledger, key: &ButtonKey, payload: &Value, said: &mut Said) -> Res<()> {
        let db = |e: questions_core::error::Error| e.message;
        let user = payload["user"]["id"].as_str().unwrap_or("");
        let team = payload["user"]["team_id"]
            .as_str()
            .or(payload["team"]["id"].as_str())
            .unwrap_or("");
        let channel = payload["channel"]["id"]
            .as_str()
            .or(payload["container"]["channel_id"].as_str())
            .unwrap_or("");
        let message_ts = payload["container"]["message_ts"]
            .as_str()
            .or(payload["message"]["ts"].as_str())
            .unwrap_or("");
        let Some(action) = payload["actions"].get(0) else {
            return Ok(());
        };
        let value = action["value"].as_str().unwrap_or("");
        // One press is one action_ts (a redelivery repeats it); the trigger id if none.
        let pressed = action["action_ts"]
            .as_str()
            .or(payload["trigger_id"].as_str())
            .unwrap_or("");
        if user.is_empty() || channel.is_empty() || pressed.is_empty() {
            return Ok(());
        }
        questions_core::fault::point("relay-heard");
        let who = identity(team, user);
        if let Some((delivery, v)) = relay::verify_button(key, value) {
            if let Ok(toggled) = buttons::on_the_card(&v) {
                let card = (channel, message_ts, delivery);
                return card_action(ledger, key, &who, card, toggled, said);
            }
        }
        let heard = relay::hear(
            ledger,
            &FromChannel {
                channel: CHANNEL,
                identity: who,
                event_id: format!("action:{user}:{pressed}"),
                binding: Binding::Button(value.to_string()),
                given: Given::Text(String::new()),
                position: None,
            },
        )
        .map_err(db)?;
        if heard.outcome != Outcome::Repeated {
            said.push(Speech {
                method: "chat.postEphemeral",
                body: json!({"channel": channel, "user": user, "text": mrkdwn(&clip(&heard.reply, TEXT_LIMIT / 2))}),
                stranger: (heard.outcome == Outcome::Refused && heard.person.is_none())
                    .then(|| identity(team, user)),
            });
        }
        Ok(())
    }
}

impl super::Channel for Slack {
    fn kind(&self) -> model::Channel {
        CHANNEL
    }

    fn send_card(&self, card: &relay::Card) -> Res<String> {
        let key = &card.key;
        let user = card
            .delivery
            .identity
            .strip_prefix("slack:")
            .and_then(|i| i.split_once('/'))
            .map(|(_, user)| user)
            .ok_or("not a Slack identity")?;
        // A user id as the channel: the direct messages between the app and that person.
        let body = json!({
            "channel": user,
            "text": noted(card, TEXT_LIMIT, |room| {
                card_text(&card.question, HOW_TO_REPLY, room, mrkdwn)
            }),
            "blocks": blocks(&card.question, card.delivery.id, key, 0),
        });
        let sent = self.call("chat.postMessage", &body, false)?;
        match (sent["channel"].as_str(), sent["ts"].as_str()) {
            (Some(channel), Some(ts)) => Ok(format!("{channel}:{ts}")),
            _ => Err("chat.postMessage answered without channel and ts".into()),
        }
    }

    fn send_note(&self, identity: &str, text: &str) -> Res<()> {
        let user = identity
            .strip_prefix("slack:")
            .and_then(|i| i.split_once('/'))
            .map(|(_, user)| user)
            .ok_or("not a Slack identity")?;
        let body = json!({"channel": user, "text": mrkdwn(&clip(text, TEXT_LIMIT))});
        self.call("chat.postMessage", &body, false).map(|_| ())
    }

    fn close_card(&self, closing: &relay::Closing) -> Res<()> {
        let Some((channel, ts)) = closing
            .delivery
            .message_ref
            .as_deref()
            .and_then(|r| r.split_once(':'))
        else {
            return Ok(());
        };
        let text = match &closing.question {
            Some(q) => {
                let words = mrkdwn(&clip(&closing.words, 500));
                let room = TEXT_LIMIT - words.chars().count() - 3;
                format!("{}\n\n✔ {words}", card_text(q, HOW_TO_REPLY, room, mrkdwn))
            }
            None => mrkdwn(&format!(
                "Question {} — {}",
                closing.delivery.question_id,
                clip(&closing.words, 500)
            )),
        };
        let body = json!({
            "channel": channel, "ts": ts, "text": text,
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
        });
        match self.call("chat.update", &body, false) {
            Ok(_) => Ok(()),
            // Gone: nothing left to close.
            Err(why) if why.contains("message_not_found") || why.contains("channel_not_found") => {
                Ok(())
            }
            Err(why) => Err(why),
        }
    }

    fn read_by_another(&self, why: &str) -> bool {
        why.starts_with(OTHERS)
    }

    fn poll(&self, ledger: &mut Ledger, key: &ButtonKey) -> Res<()> {
        let mut slot = self.socket.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.connect(ledger)?);
        }
        let Some(socket) = slot.as_mut() else {
            return Ok(());
        };
        let started = Instant::now();
        while started.elapsed() < READ_FOR {
            let frame = match socket.read() {
                Ok(Message::Text(text)) => text.as_str().to_string(),
                Ok(Message::Close(_)) => {
                    *slot = None;
                    return Ok(());
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    // Pongs owed to Slack's pings go out here.
                    let _ = socket.flush();
                    continue;
                }
                Err(e) => {
                    *slot = None;
                    return Err(format!("the Socket Mode connection ended: {e}"));
                }
            };
            let Ok(frame) = serde_json::from_str::<Value>(&frame) else {
                continue;
            };
            let mut said = Said::new();
            let keep = Self::envelope(ledger, key, &frame, &mut said)?;
            // Acknowledged once its effect is committed: an envelope handled halfway is
            // redelivered.
            if let Some(id) = frame["envelope_id"].as_str() {
                let ack = json!({"envelope_id": id}).to_string();
                if let Err(e) = socket.send(Message::text(ack)) {
                    *slot = None;
                    return Err(format!("an acknowledgement was not sent: {e}"));
                }
            }
            self.speak(said);
            if !keep {
                output::note("relay: slack: asked to reconnect (disconnect); reconnecting");
                let _ = socket.close(None);
                *slot = None;
                return Ok(());
            }
        }
        Ok(())
    }
}

impl Web {
    /// Calls a Web API method with the app-level token (`app`) or the bot token; the
    /// answer when `ok`. Write methods take a JSON body; the read methods' arguments are
    /// form-encoded, the only way Slack reads them. A 429 waits its `Retry-After` and
    /// tries again; an error names the method and Slack's error code, never a token.
    fn call(&self, method: &str, body: &Value, app: bool) -> Res<Value> {
        let token = if app {
            &self.app_token
        } else {
            &self.bot_token
        };
        if method.starts_with("chat.") {
            if let Some(channel) = body["channel"].as_str() {
                self.posting.wait(channel);
            }
        }
        retry::retrying(Relayed::Slack, method, |may_wait| {
            let request = self
                .agent
                .post(&format!("{}/{method}", self.api))
                .header("Authorization", &format!("Bearer {token}"));
            let sent = if FORM_METHODS.contains(&method) {
                let fields: Vec<(String, String)> = body
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), str::to_string),
                        )
                    })
                    .collect();
                request.send_form(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            } else {
                request
                    .header("Content-Type", "application/json; charset=utf-8")
                    .send(body.to_string().as_bytes())
            };
            let mut response = sent.map_err(|e| format!("{method}: {e}"))?;
            let status = response.status().as_u16();
            if status == 429 && may_wait {
                let wait = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(1);
                return Ok(Tried::Wait(Duration::from_secs(wait)));
            }
            let text = response
                .body_mut()
                .read_to_string()
                .map_err(|_| format!("{method}: the answer could not be read"))?;
            let reply: Value = serde_json::from_str(&text)
                .map_err(|_| format!("{method}: answered {status}, not with JSON"))?;
            if reply["ok"] == true {
                return Ok(Tried::Answered(reply));
            }
            let error = reply["error"].as_str().unwrap_or("unknown error");
            Err(format!(
                "{method} answered {status}: {}",
                output::sanitize(error, false)
            ))
        })
    }
}

/// A toggle (`Some(mask)`) shows the card with that selection; "Other…" (`None`) asks
/// for a reply in the card's thread. Only on the card's own message, for its own person.
fn card_action(
    ledger: &mut Ledger,
    key: &ButtonKey,
    who: &str,
    (channel, message_ts, delivery): (&str, &str, i64),
    toggled: Option<u64>,
    said: &mut Said,
) -> Res<()> {
    let card = relay::card(ledger, delivery).map_err(|e| e.message)?;
    let reference = format!("{channel}:{message_ts}");
    // The card's own message (no reference yet: sent, and not yet stored, a press within
    // moments of it), for its own person.
    let Some((d, Some(q))) = card.filter(|(d, _)| {
        d.identity == who && d.message_ref.as_deref().is_none_or(|r| r == reference)
    }) else {
        return Ok(());
    };
    if let Some(mask) = toggled {
        said.push(Speech {
            method: "chat.update",
            body: json!({
                "channel": channel, "ts": message_ts,
                "text": card_text(&q, HOW_TO_REPLY, TEXT_LIMIT, mrkdwn),
                "blocks": blocks(&q, d.id, key, mask),
            }),
            stranger: None,
        });
    } else {
        said.push(in_thread(
            channel,
            message_ts,
            &format!(
                "Reply in this thread with your answer to question {}.",
                q.id
            ),
        ));
    }
    Ok(())
}

/// The websocket at `url` (wss:// over rustls with the webpki roots, or ws:// for a
/// stand-in on loopback), reads timing out each second so that the runner keeps its turn.
fn websocket(url: &str) -> Res<WebSocket<Box<dyn Stream>>> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("wss://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("ws://") {
        (false, rest)
    } else {
        return Err("apps.connections.open answered a url that is not a websocket".into());
    };
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h, p.parse::<u16>().unwrap_or(443)),
        _ => (authority, if tls { 443 } else { 80 }),
    };
    let tcp = TcpStream::connect((host, port))
        .map_err(|e| format!("cannot connect to the Socket Mode host: {e}"))?;
    tcp.set_read_timeout(Some(Duration::from_secs(1)))
        .map_err(|e| e.to_string())?;
    let stream: Box<dyn Stream> = if tls {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| format!("the Socket Mode host: {e}"))?;
        let connection = rustls::ClientConnection::new(Arc::new(config), name)
            .map_err(|e| format!("TLS: {e}"))?;
        Box::new(rustls::StreamOwned::new(connection, tcp))
    } else {
        Box::new(tcp)
    };
    let mut handshake = tungstenite::client(url, stream);
    let started = Instant::now();
    loop {
        match handshake {
            Ok((socket, _)) => return Ok(socket),
            Err(tungstenite::HandshakeError::Interrupted(mid))
                if started.elapsed() < Duration::from_secs(30) =>
            {
                handshake = mid.handshake();
            }
            Err(e) => return Err(format!("the Socket Mode handshake: {e}")),
        }
    }
}

fn identity(team: &str, user: &str) -> String {
    format!("slack:{}/{}", team.to_uppercase(), user.to_uppercase())
}

/// The later of a read position and a message's ts (both `<seconds>.<micros>`).
fn later(position: Option<String>, ts: &str) -> String {
    let key = |t: &str| {
        let (s, f) = t.split_once('.').unwrap_or((t, "0"));
        (s.parse::<u64>().unwrap_or(0), f.parse::<u64>().unwrap_or(0))
    };
    match position {
        Some(p) if key(&p) > key(ts) => p,
        _ => ts.to_string(),
    }
}

/// The card's blocks: its text, then its buttons (`kit::buttons`; the recommended option
/// and Approve primary, Reject danger), each value signed for this card.
fn blocks(q: &Question, delivery: i64, key: &ButtonKey, mask: u64) -> Value {
    let buttons: Vec<Value> = buttons::rows(q, mask, 20)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, b)| {
            let mut button = json!({
                "type": "button",
                "action_id": format!("q{i}"),
                "text": {"type": "plain_text", "text": clip(&b.label, LABEL_LIMIT)},
                "value": buttons::signed(key, delivery, &b.value),
            });
            let style = match b.role {
                Role::Approve | Role::Option { recommended: true } => Some("primary"),
                Role::Reject => Some("danger"),
                Role::Option { recommended: false } | Role::Done | Role::Proposal | Role::Other => {
                    None
                }
            };
            if let Some(style) = style {
                button["style"] = style.into();
            }
            button
        })
        .collect();
    let text = card_text(q, HOW_TO_REPLY, TEXT_LIMIT, mrkdwn);
    json!([
        {"type": "section", "text": {"type": "mrkdwn", "text": text}},
        {"type": "actions", "block_id": format!("card{delivery}"), "elements": buttons},
    ])
}
