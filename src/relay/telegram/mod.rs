//! Telegram, through the Bot API: `getUpdates` long polling (the offset, the read
//! position, stored in the ledger with what each update recorded, so that Telegram keeps
//! an update until it was committed), inline keyboards with signed `callback_data`,
//! `answerCallbackQuery`, force-reply prompts for typed answers, `editMessageText` to close
//! a card, 429 `retry_after` honoured. A person is their Telegram user id
//! (`telegram:<from.id>`), which Telegram vouches for; never a name.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::output;
use questions_core::model::{self, Question};
use questions_core::ops::relay::{self, Binding, ButtonKey, FromChannel, Given, Outcome};

use super::{card_text, clip, plain, Throttle};

/// What a card says of typed answers, after its options.
const HOW_TO_REPLY: &str = "Or reply to this message with your answer.";
use questions_core::ops::{self, Ledger};

type Res<T> = std::result::Result<T, String>;

/// Telegram's limits: a message's text, a callback answer's text.
const TEXT_LIMIT: usize = 4000;
const ALERT_LIMIT: usize = 190;
/// How many times a call answered 429 is tried again (each after its `retry_after`).
const RETRIES_ON_429: u32 = 5;

pub(crate) struct Telegram {
    api: Arc<Api>,
    /// The long poll's `timeout`, in seconds.
    poll_timeout: u64,
    /// What is said back to senders, sent by a thread of its own: a reply waiting for a
    /// chat's rate never holds back the reading of the next update (a stranger's forty
    /// messages, then a person's click).
    outbox: Mutex<Option<mpsc::Sender<Value>>>,
    /// When each sender nobody linked was last refused: told once a minute at most.
    refused: Mutex<HashMap<i64, Instant>>,
}

/// The Bot API, as the reading side and the sending thread share it.
struct Api {
    /// `<api>/bot<token>`: never printed.
    base: String,
    agent: ureq::Agent,
    /// Telegram's published limits: about one message a second to a chat, 20 a minute
    /// to a group, 30 a second over all chats.
    to_person: Throttle,
    to_group: Throttle,
}

/// How often a sender nobody linked is told they cannot answer.
const REFUSE_AGAIN_AFTER: Duration = Duration::from_mins(1);

impl Telegram {
    pub(crate) fn new(api: &str, token: &str, poll_timeout: u64) -> Telegram {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(poll_timeout + 15)))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .new_agent();
        let api = Arc::new(Api {
            base: format!("{}/bot{token}", api.trim_end_matches('/')),
            agent,
            to_person: Throttle::new(Duration::from_secs(1), 3, Some(30)),
            to_group: Throttle::new(Duration::from_secs(3), 3, None),
        });
        Telegram {
            api,
            poll_timeout,
            outbox: Mutex::new(None),
            refused: Mutex::new(HashMap::new()),
        }
    }

    /// The sending thread's queue, its thread started on first use (after the runner
    /// blocked the stopping signals: a thread started before would take them).
    fn outbox(&self) -> std::sync::MutexGuard<'_, Option<mpsc::Sender<Value>>> {
        let mut outbox = self
            .outbox
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if outbox.is_none() {
            let (queue, queued) = mpsc::channel::<Value>();
            let sender = Arc::clone(&self.api);
            std::thread::spawn(move || {
                for body in queued {
                    if let Err(why) = sender.call("sendMessage", &body) {
                        output::note(&format!("relay: telegram: a reply was not sent ({why})"));
                    }
                }
            });
            *outbox = Some(queue);
        }
        outbox
    }

    fn call(&self, method: &str, body: &Value) -> Res<Value> {
        self.api.call(method, body)
    }

    /// Whether a refusal may be said to `chat`, a sender nobody linked: once a minute.
    fn may_refuse(&self, chat: i64) -> bool {
        let mut told = self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        told.retain(|_, at| now.duration_since(*at) < REFUSE_AGAIN_AFTER);
        if told.contains_key(&chat) {
            return false;
        }
        told.insert(chat, now);
        true
    }
    /// Queues a message for the sending thread.
    fn send_text(&self, chat: i64, text: &str, reply_to: Option<i64>) {
        let mut body = json!({"chat_id": chat, "text": clip(text, TEXT_LIMIT)});
        if let Some(to) = reply_to {
            body["reply_parameters"] =
                json!({"message_id": to, "allow_sending_without_reply": true});
        }
        let sent = self.outbox().as_ref().map(|queue| queue.send(body));
        if !matches!(sent, Some(Ok(()))) {
            output::note("relay: telegram: a reply was not sent (its sender stopped)");
        }
    }

    fn answer_callback(&self, id: &str, text: &str) {
        let body = json!({"callback_query_id": id, "text": clip(text, ALERT_LIMIT)});
        if let Err(why) = self.call("answerCallbackQuery", &body) {
            output::note(&format!(
                "relay: telegram: a click was not acknowledged ({why})"
            ));
        }
    }

    /// One update, through the core; what it records, and the read position past it, are
    /// committed together, before anything is said back.
    fn handle(&self, ledger: &mut Ledger, key: &ButtonKey, update: &Value) -> Res<()> {
        let Some(update_id) = update["update_id"].as_i64() else {
            return Err("an update without an update_id".into());
        };
        let position = (update_id + 1).to_string();
        let event_id = format!("update:{update_id}");
        let db = |e: questions_core::error::Error| e.message;
        questions_core::fault::point("relay-heard");
        if let Some(click) = update.get("callback_query") {
            let from = click["from"]["id"].as_i64();
            let data = click["data"].as_str().unwrap_or("");
            let id = click["id"].as_str().unwrap_or("");
            let (Some(from), Some(chat), Some(message)) = (
                from,
                click["message"]["chat"]["id"].as_i64(),
                click["message"]["message_id"].as_i64(),
            ) else {
                ops::relay::pass(ledger, model::Channel::Telegram, &position).map_err(db)?;
                return Ok(());
            };
            let identity = format!("telegram:{from}");
            // A toggle of a multi-select, or "Other…": they change what the card shows,
            // or ask for a typed answer, and record nothing.
            if let Some((delivery, value)) = relay::verify_button(key, data) {
                if value.starts_with('t') || value == "x" {
                    relay::pass(ledger, model::Channel::Telegram, &position).map_err(db)?;
                    self.card_action(ledger, key, &identity, id, chat, message, delivery, &value)?;
                    return Ok(());
                }
            }
            let heard = relay::hear(
                ledger,
                &FromChannel {
                    channel: model::Channel::Telegram,
                    identity,
                    event_id,
                    binding: Binding::Button(data.to_string()),
                    given: Given::Text(String::new()),
                    position: Some(position),
                },
            )
            .map_err(db)?;
            self.answer_callback(id, &heard.reply);
            return Ok(());
        }
        let Some(message) = update.get("message") else {
            // Edits, reactions, anything else: never an answer.
            relay::pass(ledger, model::Channel::Telegram, &position).map_err(db)?;
            return Ok(());
        };
        let (Some(from), Some(chat), Some(text)) = (
            message["from"]["id"].as_i64(),
            message["chat"]["id"].as_i64(),
            message["text"].as_str(),
        ) else {
            relay::pass(ledger, model::Channel::Telegram, &position).map_err(db)?;
            return Ok(());
        };
        let message_id = message["message_id"].as_i64();
        let event = |binding: Binding, given: Given| FromChannel {
            channel: model::Channel::Telegram,
            identity: format!("telegram:{from}"),
            event_id: event_id.clone(),
            binding,
            given,
            position: Some(position.clone()),
        };
        let heard = if let Some(code) = text.strip_prefix("/start") {
            let code = code.trim();
            if code.is_empty() {
                relay::pass(ledger, model::Channel::Telegram, &position).map_err(db)?;
                if !self.may_refuse(chat) {
                    return Ok(());
                }
                self.send_text(
                    chat,
                    "Send /start CODE with the code 'questions relay pair telegram NAME' printed.",
                    None,
                );
                return Ok(());
            }
            relay::redeem(
                ledger,
                &event(Binding::None, Given::Text(String::new())),
                code,
            )
            .map_err(db)?
        } else {
            let binding = match (
                message["reply_to_message"]["chat"]["id"].as_i64(),
                message["reply_to_message"]["message_id"].as_i64(),
            ) {
                (Some(c), Some(m)) => Binding::Reply(format!("{c}:{m}")),
                _ => Binding::None,
            };
            relay::hear(ledger, &event(binding, Given::Text(text.to_string()))).map_err(db)?
        };
        let stranger = heard.outcome == Outcome::Refused && heard.person.is_none();
        if heard.outcome != Outcome::Repeated && (!stranger || self.may_refuse(chat)) {
            self.send_text(chat, &heard.reply, message_id);
        }
        Ok(())
    }

    /// A toggle (`t<mask>`) shows the card with that selection; "Other…" (`x`) sends a
    /// prompt to reply to. Only on the card's own chat, for its own person.
    #[allow(clippy::too_many_arguments)]
    fn card_action(
        &self,
        ledger: &mut Ledger,
        key: &ButtonKey,
        identity: &str,
        callback: &str,
        chat: i64,
        message: i64,
        delivery: i64,
        value: &str,
    ) -> Res<()> {
        let card = relay::card(ledger, delivery).map_err(|e| e.message)?;
        let Some((d, Some(q))) = card.filter(|(d, _)| d.identity == identity) else {
            self.answer_callback(callback, "this card is not yours, or its question is gone");
            return Ok(());
        };
        // None: sent, and its reference not yet stored (a click within moments).
        if d.message_ref
            .as_deref()
            .is_some_and(|r| r != format!("{chat}:{message}"))
        {
            self.answer_callback(callback, "this card is not this message's");
            return Ok(());
        }
        if let Some(mask) = value.strip_prefix('t') {
            let mask = u64::from_str_radix(mask, 16).unwrap_or(0);
            let body = json!({
                "chat_id": chat, "message_id": message,
                "reply_markup": keyboard(&q, d.id, key, mask),
            });
            self.call("editMessageReplyMarkup", &body)?;
            self.answer_callback(callback, "");
        } else {
            let body = json!({
                "chat_id": chat,
                "text": format!("Type your answer to question {} as a reply to this message.", q.id),
                "reply_markup": {"force_reply": true, "input_field_placeholder": clip(&q.question, 60)},
            });
            let sent = self.call("sendMessage", &body)?;
            if let Some(m) = sent["message_id"].as_i64() {
                relay::prompt_sent(ledger, d.id, &format!("{chat}:{m}")).map_err(|e| e.message)?;
            }
            self.answer_callback(callback, "");
        }
        Ok(())
    }
}

impl super::Channel for Telegram {
    fn kind(&self) -> model::Channel {
        model::Channel::Telegram
    }

    fn send_card(&self, card: &relay::Card) -> Res<String> {
        let key = &card.key;
        let chat: i64 = card
            .delivery
            .identity
            .strip_prefix("telegram:")
            .and_then(|id| id.parse().ok())
            .ok_or("not a Telegram identity")?;
        let body = json!({
            "chat_id": chat,
            "text": super::noted(card, TEXT_LIMIT, |room| {
                card_text(&card.question, HOW_TO_REPLY, room, plain)
            }),
            "reply_markup": keyboard(&card.question, card.delivery.id, key, 0),
        });
        let sent = self.call("sendMessage", &body)?;
        let id = sent["message_id"]
            .as_i64()
            .ok_or("sendMessage answered without a message_id")?;
        Ok(format!("{chat}:{id}"))
    }

    fn send_note(&self, identity: &str, text: &str) -> Res<()> {
        let chat: i64 = identity
            .strip_prefix("telegram:")
            .and_then(|id| id.parse().ok())
            .ok_or("not a Telegram identity")?;
        let body = json!({"chat_id": chat, "text": clip(text, TEXT_LIMIT)});
        self.call("sendMessage", &body).map(|_| ())
    }

    fn close_card(&self, closing: &relay::Closing) -> Res<()> {
        let Some((chat, message)) = closing
            .delivery
            .message_ref
            .as_deref()
            .and_then(|r| r.split_once(':'))
            .and_then(|(c, m)| Some((c.parse::<i64>().ok()?, m.parse::<i64>().ok()?)))
        else {
            return Ok(());
        };
        let text = match &closing.question {
            Some(q) => {
                let words = clip(&closing.words, 500);
                let room = TEXT_LIMIT - words.chars().count() - 3;
                format!("{}\n\n✔ {words}", card_text(q, HOW_TO_REPLY, room, plain))
            }
            None => format!(
                "Question {} — {}",
                closing.delivery.question_id, closing.words
            ),
        };
        let body = json!({
            "chat_id": chat, "message_id": message,
            "text": clip(&text, TEXT_LIMIT),
        });
        match self.call("editMessageText", &body) {
            Ok(_) => Ok(()),
            // Already so, or gone: nothing left to close.
            Err(why) if why.contains("not modified") || why.contains("not found") => Ok(()),
            Err(why) => Err(why),
        }
    }

    /// Telegram ends a long poll with 409 when another `getUpdates` of the same bot
    /// starts: another program polls this bot.
    fn read_by_another(&self, why: &str) -> bool {
        why.starts_with("getUpdates answered 409")
    }

    fn poll(&self, ledger: &mut Ledger, key: &ButtonKey) -> Res<()> {
        let offset: i64 = relay::position(ledger, model::Channel::Telegram)
            .map_err(|e| e.message)?
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let body = json!({
            "offset": offset,
            "timeout": self.poll_timeout,
            "allowed_updates": ["message", "callback_query"],
        });
        let updates = self.call("getUpdates", &body)?;
        for update in updates.as_array().into_iter().flatten() {
            self.handle(ledger, key, update)?;
        }
        Ok(())
    }
}

/// The card's buttons: one per option (the recommended one marked), toggles and Done for
/// a multi-select (`mask`: the options toggled on), Approve/Reject for an approval,
/// "Other…" where typed answers are allowed. Each value is signed for this card.
fn keyboard(q: &Question, delivery: i64, key: &ButtonKey, mask: u64) -> Value {
    let button = |label: String, value: String| json!({"text": clip(&label, 60), "callback_data": format!("{delivery}:{value}:{}", key.sign(delivery, &value))});
    let mut rows: Vec<Vec<Value>> = Vec::new();
    if q.state.approval.is_some() {
        rows.push(vec![
            button("✅ Approve".into(), "a".into()),
            button("❌ Reject".into(), "r".into()),
        ]);
        return json!({"inline_keyboard": rows});
    }
    for (i, o) in q.options.iter().enumerate().take(64) {
        let star = if o.recommended { " ★" } else { "" };
        if q.multi_select {
            let on = mask & (1 << i) != 0;
            rows.push(vec![button(
                format!(
                    "{} {}. {}{star}",
                    if on { "☑" } else { "☐" },
                    i + 1,
                    o.label
                ),
                format!("t{:x}", mask ^ (1 << i)),
            )]);
        } else {
            rows.push(vec![button(
                format!("{}. {}{star}", i + 1, o.label),
                format!("o{}", i + 1),
            )]);
        }
    }
    if q.multi_select && mask != 0 {
        rows.push(vec![button("Done".into(), format!("m{mask:x}"))]);
    }
    if q.options.is_empty() && q.proposed.is_some() {
        rows.push(vec![button("Use the proposal".into(), "p".into())]);
    }
    if q.allow_freeform || q.options.is_empty() {
        rows.push(vec![button("Other…".into(), "x".into())]);
    }
    json!({"inline_keyboard": rows})
}

impl Api {
    /// Calls a Bot API method; its `result`. A 429 waits its `retry_after` and tries
    /// again; any error names the method only (the URL holds the token).
    fn call(&self, method: &str, body: &Value) -> Res<Value> {
        // What puts a message in a chat (sending, editing) keeps to the chat's rate.
        if let Some(chat) = body["chat_id"].as_i64() {
            if chat < 0 {
                self.to_group.wait(&chat.to_string());
            }
            self.to_person.wait(&chat.to_string());
        }
        let mut tries = 0;
        loop {
            let sent = self
                .agent
                .post(&format!("{}/{method}", self.base))
                .header("Content-Type", "application/json")
                .send(body.to_string().as_bytes());
            let mut response =
                sent.map_err(|e| format!("{method}: {}", without_url(&e.to_string())))?;
            let status = response.status().as_u16();
            let text = response
                .body_mut()
                .read_to_string()
                .map_err(|_| format!("{method}: the answer could not be read"))?;
            let reply: Value = serde_json::from_str(&text)
                .map_err(|_| format!("{method}: answered {status}, not with JSON"))?;
            if reply["ok"] == true {
                return Ok(reply["result"].clone());
            }
            let about = reply["description"].as_str().unwrap_or("").to_string();
            if status == 429 && tries < RETRIES_ON_429 {
                let wait = reply["parameters"]["retry_after"].as_u64().unwrap_or(1);
                output::note(&format!(
                    "relay: telegram: {method} answered 429; waiting {wait}s as asked"
                ));
                std::thread::sleep(Duration::from_secs(wait.min(300)));
                tries += 1;
                continue;
            }
            return Err(format!(
                "{method} answered {status}: {}",
                output::sanitize(&about, false)
            ));
        }
    }
}

/// An HTTP client's error without the URL it names (the URL holds the bot's token).
fn without_url(text: &str) -> String {
    text.split_whitespace()
        .map(|w| if w.contains("/bot") { "<api>" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}
