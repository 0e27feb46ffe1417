//! Telegram, through the Bot API: `getUpdates` long polling (the offset, the read
//! position, stored in the ledger with what each update recorded, so that Telegram keeps
//! an update until it was committed), inline keyboards with signed `callback_data`,
//! `answerCallbackQuery`, force-reply prompts for typed answers, `editMessageText` to close
//! a card, 429 `retry_after` honoured. A person is their Telegram user id
//! (`telegram:<from.id>`), which Telegram vouches for; never a name.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::kit::buttons::{self, Role};
use super::kit::config::{Config, Secret};
use super::kit::outbox::{Outbox, Refusals};
use super::kit::retry::{self, Tried};
use super::kit::{card_text, clip, noted, pairing, plain, Res, Throttle};
use crate::output;
use questions_core::error::Result;
use questions_core::model::{self, Question, Relayed};
use questions_core::ops::relay::{self, Binding, ButtonKey, FromChannel, Given, Outcome};
use questions_core::ops::{self, Ledger};

/// What a card says of typed answers, after its options.
const HOW_TO_REPLY: &str = "Or reply to this message with your answer.";

const API: &str = "https://api.telegram.org";
/// Seconds a `getUpdates` long poll waits for an update.
const POLL_TIMEOUT: i64 = 25;

/// `[telegram]`: `api` (the Bot API's base), `token_env` (the variable holding the bot's
/// token), `poll_timeout` (seconds a `getUpdates` long poll waits).
pub(crate) fn open(table: &toml_edit::Table) -> Result<Telegram> {
    let config = Config::new(
        Relayed::Telegram,
        table,
        &["api", "token_env", "poll_timeout"],
    )?;
    let api = config.url("api", API)?;
    let poll_timeout = config.integer("poll_timeout", 0..=50, "seconds", POLL_TIMEOUT)?;
    let token = config.secret(
        "token_env",
        "bot's token",
        Secret::Token {
            also: &['/'],
            is: "a bot token",
        },
    )?;
    Ok(Telegram::new(&api, &token, poll_timeout as u64))
}

/// Telegram's limits: a message's text, a callback answer's text.
const TEXT_LIMIT: usize = 4000;
const ALERT_LIMIT: usize = 190;

pub(crate) struct Telegram {
    api: Arc<Api>,
    /// The long poll's `timeout`, in seconds.
    poll_timeout: u64,
    /// What is said back to senders (`sendMessage` bodies).
    outbox: Outbox<Value>,
    /// Senders nobody linked, told once a minute at most.
    refused: Refusals,
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

impl Telegram {
    fn new(api: &str, token: &str, poll_timeout: u64) -> Telegram {
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
        let sender = Arc::clone(&api);
        Telegram {
            api,
            poll_timeout,
            outbox: Outbox::new(Relayed::Telegram, move |body: Value| {
                sender.call("sendMessage", &body).map(|_| ())
            }),
            refused: Refusals::default(),
        }
    }

    fn call(&self, method: &str, body: &Value) -> Res<Value> {
        self.api.call(method, body)
    }

    /// Whether a refusal may be said to `chat`, a sender nobody linked: once a minute.
    fn may_refuse(&self, chat: i64) -> bool {
        self.refused.may_refuse(&chat.to_string())
    }

    /// Queues a message for the sending thread.
    fn send_text(&self, chat: i64, text: &str, reply_to: Option<i64>) {
        let mut body = json!({"chat_id": chat, "text": clip(text, TEXT_LIMIT)});
        if let Some(to) = reply_to {
            body["reply_parameters"] =
                json!({"message_id": to, "allow_sending_without_reply": true});
        }
        self.outbox.send(body);
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
                if let Ok(toggled) = buttons::on_the_card(&value) {
                    relay::pass(ledger, model::Channel::Telegram, &position).map_err(db)?;
                    self.card_action(ledger, key, &identity, id, chat, message, delivery, toggled)?;
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
        let heard = if let Some(code) = pairing::after_command(text, "/start") {
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

    /// A toggle (`Some(mask)`) shows the card with that selection; "Other…" (`None`)
    /// sends a prompt to reply to. Only on the card's own chat, for its own person.
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
        toggled: Option<u64>,
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
        if let Some(mask) = toggled {
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
            "text": noted(card, TEXT_LIMIT, |room| {
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

/// The card's buttons (`kit::buttons`) as an inline keyboard, each value signed for this
/// card; `mask`: a multi-select's options toggled on.
fn keyboard(q: &Question, delivery: i64, key: &ButtonKey, mask: u64) -> Value {
    let rows: Vec<Vec<Value>> = buttons::rows(q, mask, 64)
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|b| {
                    let label = match b.role {
                        Role::Approve => format!("✅ {}", b.label),
                        Role::Reject => format!("❌ {}", b.label),
                        _ => b.label,
                    };
                    json!({
                        "text": clip(&label, 60),
                        "callback_data": buttons::signed(key, delivery, &b.value),
                    })
                })
                .collect()
        })
        .collect();
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
        retry::retrying(Relayed::Telegram, method, |may_wait| {
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
                return Ok(Tried::Answered(reply["result"].clone()));
            }
            if status == 429 && may_wait {
                let wait = reply["parameters"]["retry_after"].as_u64().unwrap_or(1);
                return Ok(Tried::Wait(Duration::from_secs(wait)));
            }
            let about = reply["description"].as_str().unwrap_or("");
            Err(format!(
                "{method} answered {status}: {}",
                output::sanitize(about, false)
            ))
        })
    }
}

/// An HTTP client's error without the URL it names (the URL holds the bot's token).
fn without_url(text: &str) -> String {
    text.split_whitespace()
        .map(|w| if w.contains("/bot") { "<api>" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}
