//! A stand-in for Telegram's Bot API on 127.0.0.1, written from the official reference
//! (core.telegram.org/bots/api): `getUpdates` with `offset` (updates below it are
//! confirmed and dropped; the others are kept and delivered again) and `timeout` (a long
//! poll), a new `getUpdates` ending one still waiting with 409 "Conflict: terminated by
//! other getUpdates request", `sendMessage`, `editMessageText`, `editMessageReplyMarkup`
//! ("message is not modified", "message to edit not found"), `answerCallbackQuery`,
//! callback_data over 64 bytes refused (BUTTON_DATA_INVALID), text over 4096 characters
//! refused ("message is too long"), 429 with `parameters.retry_after` on demand, and a
//! chat that cannot be written to: 403 "Forbidden: bot was blocked by the user" for a
//! person who blocked the bot, 400 "Bad Request: chat not found" for an id Telegram does
//! not know (or a person who never opened the bot). Plain HTTP/1.1, one request per
//! connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub(crate) const TOKEN: &str = "123456:TEST-token-never-printed";

#[derive(Default)]
pub(crate) struct State {
    /// Updates not yet confirmed, oldest first.
    pub updates: Vec<Value>,
    pub next_update: i64,
    /// Every message the bot sent, as it stands now (edits applied), by (chat, id).
    pub messages: Vec<Value>,
    pub next_message: i64,
    /// `answerCallbackQuery` calls: (callback id, text).
    pub callback_answers: Vec<(String, String)>,
    /// Every call: (method, when).
    pub calls: Vec<(String, Instant)>,
    /// The next call of this method answers 429 with this retry_after.
    pub throttle: Option<(String, u64)>,
    /// When the 429 was answered.
    pub throttled_at: Option<Instant>,
    /// getUpdates calls ended by another one (409).
    pub conflicts: usize,
    /// Updates the next getUpdates hands over again whatever its offset: a provider
    /// delivering an event twice.
    pub resend: Vec<Value>,
    /// Every update handed over, by id (what was delivered, including again).
    pub delivered: Vec<i64>,
    /// Chats of people who blocked the bot (403), and chats Telegram does not know (400):
    /// nothing can be sent to them, nor edited there.
    pub blocked: Vec<i64>,
    pub unknown: Vec<i64>,
    /// Sends refused for those, by chat.
    pub refused_sends: Vec<i64>,
    poll_generation: u64,
}

pub(crate) struct StandIn {
    pub url: String,
    pub state: Arc<(Mutex<State>, Condvar)>,
}

impl StandIn {
    pub(crate) fn start() -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new((
            Mutex::new(State {
                next_update: 1000,
                next_message: 1,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        StandIn { url, state }
    }

    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap();
        let out = f(&mut s);
        cv.notify_all();
        out
    }

    /// Queues an update; its id.
    pub(crate) fn push(&self, mut update: Value) -> i64 {
        self.with(|s| {
            let id = s.next_update;
            s.next_update += 1;
            update["update_id"] = id.into();
            s.updates.push(update);
            id
        })
    }

    /// A person (Telegram user `from`) pressing a button of a message the bot sent.
    pub(crate) fn click(&self, from: i64, message: &Value, data: &str) -> i64 {
        let id = self.with(|s| s.next_update);
        self.push(json!({"callback_query": {
            "id": format!("cb{id}"),
            "from": {"id": from, "is_bot": false, "first_name": "P"},
            "message": message,
            "chat_instance": "1",
            "data": data,
        }}))
    }

    /// A person writing to the bot, maybe as a reply to one of its messages.
    pub(crate) fn write(&self, from: i64, text: &str, reply_to: Option<&Value>) -> i64 {
        let mut message = json!({
            "message_id": 900_000 + self.with(|s| s.next_update),
            "from": {"id": from, "is_bot": false, "first_name": "P"},
            "chat": {"id": from, "type": "private"},
            "date": 1_700_000_000,
            "text": text,
        });
        if let Some(to) = reply_to {
            message["reply_to_message"] = to.clone();
        }
        self.push(json!({"message": message}))
    }

    /// The messages sent to `chat`, as they stand.
    pub(crate) fn messages_to(&self, chat: i64) -> Vec<Value> {
        self.with(|s| {
            s.messages
                .iter()
                .filter(|m| m["chat"]["id"] == chat)
                .cloned()
                .collect()
        })
    }

    /// Waits until `test` holds of the state (10 s at most).
    pub(crate) fn until<T>(&self, what: &str, mut test: impl FnMut(&State) -> Option<T>) -> T {
        let end = Instant::now() + Duration::from_secs(15);
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap();
        loop {
            if let Some(found) = test(&s) {
                return found;
            }
            let left = end.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the stand-in never saw {what}");
            s = cv
                .wait_timeout(s, left.min(Duration::from_millis(100)))
                .unwrap()
                .0;
        }
    }

    /// The answer to a callback, once given.
    pub(crate) fn answer_to(&self, update: i64) -> String {
        let id = format!("cb{update}");
        self.until("the click's answer", |s| {
            s.callback_answers
                .iter()
                .find(|(c, _)| *c == id)
                .map(|(_, t)| t.clone())
        })
    }

    /// Hands update `id` over again with the next getUpdates (it must have been pushed).
    pub(crate) fn redeliver(&self, id: i64, update: Value) {
        self.with(|s| {
            let mut again = update;
            again["update_id"] = id.into();
            s.resend.push(again);
        });
    }
}

fn serve(mut stream: TcpStream, state: &Arc<(Mutex<State>, Condvar)>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let params: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    let (status, reply) = match path.strip_prefix(&format!("/bot{TOKEN}/")) {
        Some(method) => call(state, method, &params),
        None => (
            401,
            json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
        ),
    };
    let text = reply.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

fn bad(description: &str) -> (u16, Value) {
    (
        400,
        json!({"ok": false, "error_code": 400, "description": format!("Bad Request: {description}")}),
    )
}

fn ok(result: Value) -> (u16, Value) {
    (200, json!({"ok": true, "result": result}))
}

fn call(state: &Arc<(Mutex<State>, Condvar)>, method: &str, p: &Value) -> (u16, Value) {
    let (lock, cv) = &**state;
    let mut s = lock.lock().unwrap();
    s.calls.push((method.to_string(), Instant::now()));
    if s.throttle.as_ref().is_some_and(|(m, _)| m == method) {
        let (_, after) = s.throttle.take().unwrap();
        s.throttled_at = Some(Instant::now());
        cv.notify_all();
        return (
            429,
            json!({"ok": false, "error_code": 429,
                   "description": format!("Too Many Requests: retry after {after}"),
                   "parameters": {"retry_after": after}}),
        );
    }
    if let Some(chat) = p["chat_id"].as_i64() {
        let refusal = if s.blocked.contains(&chat) {
            Some((403, "Forbidden: bot was blocked by the user"))
        } else if s.unknown.contains(&chat) {
            Some((400, "Bad Request: chat not found"))
        } else {
            None
        };
        if let Some((status, description)) = refusal {
            s.refused_sends.push(chat);
            cv.notify_all();
            return (
                status,
                json!({"ok": false, "error_code": status, "description": description}),
            );
        }
    }
    if let Some(text) = p["text"].as_str() {
        if text.chars().count() > 4096 {
            return bad("message is too long");
        }
    }
    let out = match method {
        "getUpdates" => {
            let offset = p["offset"].as_i64().unwrap_or(0);
            let timeout = p["timeout"].as_u64().unwrap_or(0);
            if offset > 0 {
                s.updates
                    .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            }
            s.poll_generation += 1;
            let mine = s.poll_generation;
            cv.notify_all();
            let end = Instant::now() + Duration::from_secs(timeout);
            loop {
                if s.poll_generation != mine {
                    s.conflicts += 1;
                    cv.notify_all();
                    return (
                        409,
                        json!({"ok": false, "error_code": 409,
                               "description": "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}),
                    );
                }
                let mut ready: Vec<Value> = std::mem::take(&mut s.resend);
                ready.extend(
                    s.updates
                        .iter()
                        .filter(|u| u["update_id"].as_i64().unwrap_or(0) >= offset)
                        .take(100)
                        .cloned(),
                );
                let left = end.saturating_duration_since(Instant::now());
                if !ready.is_empty() || left.is_zero() {
                    let ids: Vec<i64> = ready
                        .iter()
                        .filter_map(|u| u["update_id"].as_i64())
                        .collect();
                    s.delivered.extend(ids);
                    break ok(Value::Array(ready));
                }
                s = cv.wait_timeout(s, left).unwrap().0;
            }
        }
        "sendMessage" => {
            if let Some(too_long) = buttons_too_long(&p["reply_markup"]) {
                return bad(&format!("BUTTON_DATA_INVALID ({too_long} bytes)"));
            }
            let Some(chat) = p["chat_id"].as_i64() else {
                return bad("chat not found");
            };
            let id = s.next_message;
            s.next_message += 1;
            let mut message = json!({
                "message_id": id,
                "from": {"id": 1, "is_bot": true, "first_name": "questions"},
                "chat": {"id": chat, "type": "private"},
                "date": 1_700_000_000,
                "text": p["text"],
            });
            if p["reply_markup"].get("inline_keyboard").is_some() {
                message["reply_markup"] = p["reply_markup"].clone();
            }
            if let Some(to) = p["reply_parameters"]["message_id"].as_i64() {
                message["reply_to"] = to.into();
            }
            if p["reply_markup"]["force_reply"] == true {
                message["force_reply"] = true.into();
            }
            s.messages.push(message.clone());
            ok(message)
        }
        "editMessageText" | "editMessageReplyMarkup" => {
            if let Some(too_long) = buttons_too_long(&p["reply_markup"]) {
                return bad(&format!("BUTTON_DATA_INVALID ({too_long} bytes)"));
            }
            let found = s
                .messages
                .iter_mut()
                .find(|m| m["chat"]["id"] == p["chat_id"] && m["message_id"] == p["message_id"]);
            let Some(m) = found else {
                return bad("message to edit not found");
            };
            let mut edited = m.clone();
            if method == "editMessageText" {
                edited["text"] = p["text"].clone();
            }
            match p.get("reply_markup") {
                Some(markup) if markup.get("inline_keyboard").is_some() => {
                    edited["reply_markup"] = markup.clone();
                }
                _ => {
                    edited.as_object_mut().unwrap().remove("reply_markup");
                }
            }
            if edited == *m {
                return bad("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message");
            }
            edited["edited"] = true.into();
            *m = edited.clone();
            ok(edited)
        }
        "answerCallbackQuery" => {
            let id = p["callback_query_id"].as_str().unwrap_or("").to_string();
            let text = p["text"].as_str().unwrap_or("").to_string();
            s.callback_answers.push((id, text));
            ok(true.into())
        }
        _ => (
            404,
            json!({"ok": false, "error_code": 404, "description": "Not Found: method not found"}),
        ),
    };
    cv.notify_all();
    out
}

/// The length of a button's callback_data over Telegram's 64 bytes, if any.
fn buttons_too_long(markup: &Value) -> Option<usize> {
    markup["inline_keyboard"]
        .as_array()?
        .iter()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["callback_data"].as_str().map(str::len))
        .find(|n| *n > 64)
}
