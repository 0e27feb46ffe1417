//! A stand-in for Slack on 127.0.0.1, written from the official API reference: the Web
//! API methods the relay calls (`apps.connections.open` with the app-level token, the
//! others with the bot token: `chat.postMessage` — a user id as the channel posts to the
//! app's direct messages with them —, `chat.update`, `chat.postEphemeral`,
//! `conversations.replies`), each answering 429 with `Retry-After` on demand; and Socket
//! Mode on a websocket: `hello` on connecting, envelopes (`events_api`, `interactive`) with
//! `envelope_id` and `retry_attempt`, redelivered with `retry_attempt` + 1 when not
//! acknowledged (`{"envelope_id": …}`) within 3 s, and `disconnect` with
//! `reason: refresh_requested` on demand. As Slack does, an app may hold several
//! connections at once: each `hello` says how many (`num_connections`), and an envelope
//! goes to whichever open connection takes it first.
//! `chat.postMessage` to a user the app cannot write to answers as Slack does, HTTP 200
//! with `ok: false` and its error (`cannot_dm_bot` for a bot user, `channel_not_found`
//! for an id the workspace does not know); a section's text over 3000 characters is
//! `invalid_blocks`. Plain HTTP/1.1, one request per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub(crate) const APP_TOKEN: &str = "xapp-1-TEST-app-token-never-printed";
pub(crate) const BOT_TOKEN: &str = "xoxb-TEST-bot-token-never-printed";
/// Slack's redelivery time for an envelope not acknowledged.
const ACK_WITHIN: Duration = Duration::from_secs(3);

pub(crate) struct Envelope {
    pub id: String,
    pub frame: Value,
    /// How many times it was sent (its last `retry_attempt` is this minus one).
    pub sent: u32,
    pub sent_at: Option<Instant>,
    pub acked: bool,
    /// Ephemeral messages posted before it was sent (what a click was told follows).
    pub ephemerals_before: usize,
}

#[derive(Default)]
pub(crate) struct State {
    /// Every message in every conversation, as it stands (edits applied).
    pub messages: Vec<Value>,
    pub ephemerals: Vec<Value>,
    pub envelopes: Vec<Envelope>,
    /// Every Web API call: (method, when).
    pub calls: Vec<(String, Instant)>,
    /// The next call of this method answers 429 with this Retry-After.
    pub throttle: Option<(String, u64)>,
    pub throttled_at: Option<Instant>,
    /// Acknowledgements to ignore (as if lost), the next ones first.
    pub lose_acks: usize,
    /// Users the app cannot write to, with the error Slack gives (`cannot_dm_bot`,
    /// `channel_not_found`), and the posts refused so.
    pub undeliverable: Vec<(String, String)>,
    pub refused_posts: Vec<String>,
    /// Websocket connections made so far, and those open now.
    pub connections: u64,
    pub open: usize,
    /// Control frames for the newest connection (`disconnect`).
    outbox: Vec<Value>,
    next_ts: u64,
    next_envelope: u64,
    ws_url: String,
}

impl State {
    fn ts(&mut self) -> String {
        self.next_ts += 1;
        format!("1700000000.{:06}", self.next_ts)
    }
}

pub(crate) struct StandIn {
    pub url: String,
    pub state: Arc<(Mutex<State>, Condvar)>,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

impl StandIn {
    pub(crate) fn start() -> StandIn {
        let http = TcpListener::bind("127.0.0.1:0").unwrap();
        let ws = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", http.local_addr().unwrap());
        let state = Arc::new((
            Mutex::new(State {
                ws_url: format!("ws://{}/link/?ticket=1", ws.local_addr().unwrap()),
                ..State::default()
            }),
            Condvar::new(),
        ));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in http.incoming().flatten() {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in ws.incoming().flatten() {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || socket(stream, &shared));
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

    /// Waits until `test` holds of the state (15 s at most).
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

    /// Queues an envelope for Socket Mode; its id.
    fn envelope(&self, kind: &str, payload: Value) -> String {
        self.with(|s| {
            s.next_envelope += 1;
            let id = format!("env-{}", s.next_envelope);
            let before = s.ephemerals.len();
            s.envelopes.push(Envelope {
                id: id.clone(),
                frame: json!({
                    "envelope_id": id, "type": kind, "payload": payload,
                    "accepts_response_payload": false,
                }),
                sent: 0,
                sent_at: None,
                acked: false,
                ephemerals_before: before,
            });
            id
        })
    }

    /// A person (`team`/`user`) pressing a button of `card` whose value is `value`.
    pub(crate) fn click(&self, team: &str, user: &str, card: &Value, value: &str) -> String {
        let action_ts = self.with(State::ts);
        let channel = card["channel"].clone();
        self.envelope(
            "interactive",
            json!({
                "type": "block_actions",
                "user": {"id": user, "username": "someone", "name": "someone", "team_id": team},
                "api_app_id": "A0TEST",
                "container": {"type": "message", "message_ts": card["ts"], "channel_id": channel, "is_ephemeral": false},
                "trigger_id": format!("trigger-{action_ts}"),
                "team": {"id": team, "domain": "test"},
                "channel": {"id": channel, "name": "directmessage"},
                "message": card,
                "actions": [{
                    "action_id": "q0", "block_id": "card", "type": "button",
                    "text": {"type": "plain_text", "text": "?"},
                    "value": value, "action_ts": action_ts,
                }],
            }),
        )
    }

    /// A person writing in `channel` (in the thread of `thread`, if given); with
    /// `deliver`, its `message` event is sent over Socket Mode. Its ts.
    pub(crate) fn write(
        &self,
        team: &str,
        user: &str,
        channel: &str,
        thread: Option<&str>,
        text: &str,
        deliver: bool,
    ) -> String {
        self.write_as(team, user, channel, thread, text, deliver, None)
    }

    /// A reply in the thread of `thread` also sent to the channel (the box "Also send
    /// to …" ticked): a `message` event of subtype `thread_broadcast`. Its ts.
    pub(crate) fn broadcast(
        &self,
        team: &str,
        user: &str,
        channel: &str,
        thread: &str,
        text: &str,
    ) -> String {
        self.write_as(
            team,
            user,
            channel,
            Some(thread),
            text,
            true,
            Some("thread_broadcast"),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn write_as(
        &self,
        team: &str,
        user: &str,
        channel: &str,
        thread: Option<&str>,
        text: &str,
        deliver: bool,
        subtype: Option<&str>,
    ) -> String {
        let event = self.with(|s| {
            let ts = s.ts();
            let mut event = json!({
                "type": "message", "user": user, "team": team, "text": text, "ts": ts,
                "channel": channel, "event_ts": ts, "channel_type": "im",
            });
            if let Some(thread) = thread {
                event["thread_ts"] = thread.into();
            }
            if let Some(subtype) = subtype {
                event["subtype"] = subtype.into();
            }
            s.messages.push(event.clone());
            event
        });
        let ts = event["ts"].as_str().unwrap().to_string();
        if deliver {
            self.envelope(
                "events_api",
                json!({
                    "token": "x", "team_id": team, "api_app_id": "A0TEST",
                    "event": event, "type": "event_callback",
                    "event_id": format!("Ev{}", ts.replace('.', "")), "event_time": 1_700_000_000,
                }),
            );
        }
        ts
    }

    /// Asks the newest connection to reconnect (`disconnect`, `refresh_requested`).
    pub(crate) fn disconnect(&self) {
        self.with(|s| {
            s.outbox.push(json!({
                "type": "disconnect", "reason": "refresh_requested",
                "debug_info": {"host": "applink-stand-in"},
            }));
        });
    }

    /// What the relay told the clicker of envelope `id` (the first ephemeral message to
    /// them after it was queued), once it acknowledged the envelope.
    pub(crate) fn answer_to(&self, id: &str) -> String {
        let (before, user) = self.until("the envelope acknowledged", |s| {
            s.envelopes.iter().find(|e| e.id == id && e.acked).map(|e| {
                (
                    e.ephemerals_before,
                    e.frame["payload"]["user"]["id"].clone(),
                )
            })
        });
        self.until("the click's answer", |s| {
            s.ephemerals[before..]
                .iter()
                .find(|m| m["user"] == user)
                .and_then(|m| m["text"].as_str())
                .map(str::to_string)
        })
    }
}

/// A Socket Mode connection: `hello`, then envelopes due (never sent, or not acknowledged
/// within 3 s: sent again with `retry_attempt` + 1), acknowledgements read.
fn socket(stream: TcpStream, shared: &Shared) {
    let Ok(mut ws) = tungstenite::accept(stream.try_clone().unwrap()) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(30)));
    let (lock, cv) = &**shared;
    let (mine, open) = {
        let mut s = lock.lock().unwrap();
        s.connections += 1;
        s.open += 1;
        s.outbox.clear();
        cv.notify_all();
        (s.connections, s.open)
    };
    /// Counts the connection closed however its thread ends.
    struct Open<'a>(&'a Shared);
    impl Drop for Open<'_> {
        fn drop(&mut self) {
            let (lock, cv) = &**self.0;
            lock.lock().unwrap_or_else(|p| p.into_inner()).open -= 1;
            cv.notify_all();
        }
    }
    let _open = Open(shared);
    let hello = json!({"type": "hello", "num_connections": open,
        "debug_info": {"host": "applink-stand-in"}, "connection_info": {"app_id": "A0TEST"}});
    if ws
        .send(tungstenite::Message::text(hello.to_string()))
        .is_err()
    {
        return;
    }
    loop {
        let out: Vec<Value> = {
            let mut s = lock.lock().unwrap();
            // Control frames are for the newest connection.
            let mut out = if s.connections == mine {
                std::mem::take(&mut s.outbox)
            } else {
                Vec::new()
            };
            let now = Instant::now();
            for e in &mut s.envelopes {
                let due = !e.acked
                    && e.sent_at
                        .is_none_or(|at| now.duration_since(at) >= ACK_WITHIN);
                if due {
                    let mut frame = e.frame.clone();
                    frame["retry_attempt"] = e.sent.into();
                    frame["retry_reason"] = if e.sent == 0 { "" } else { "timeout" }.into();
                    e.sent += 1;
                    e.sent_at = Some(now);
                    out.push(frame);
                }
            }
            cv.notify_all();
            out
        };
        for frame in out {
            if ws
                .send(tungstenite::Message::text(frame.to_string()))
                .is_err()
            {
                return;
            }
        }
        match ws.read() {
            Ok(tungstenite::Message::Text(text)) => {
                let ack: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                if let Some(id) = ack["envelope_id"].as_str() {
                    let mut s = lock.lock().unwrap();
                    if s.lose_acks > 0 {
                        s.lose_acks -= 1;
                    } else if let Some(e) = s.envelopes.iter_mut().find(|e| e.id == id) {
                        e.acked = true;
                    }
                    cv.notify_all();
                }
            }
            Ok(tungstenite::Message::Close(_)) => return,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut length = 0;
    let mut token = String::new();
    let mut form = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            if name.eq_ignore_ascii_case("content-type") {
                form = value
                    .trim()
                    .starts_with("application/x-www-form-urlencoded");
            }
            if name.eq_ignore_ascii_case("authorization") {
                token = value.trim().trim_start_matches("Bearer ").to_string();
            }
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let method = path.trim_start_matches('/');
    // Write methods read JSON bodies; the read methods (conversations.replies) only a
    // form: their JSON arguments are not seen.
    let params: Value = if form {
        parse_form(&String::from_utf8_lossy(&body))
    } else if READ_METHODS.contains(&method) {
        json!({})
    } else {
        serde_json::from_slice(&body).unwrap_or(json!({}))
    };
    let (status, extra, reply) = call(shared, method, &token, &params);
    let text = reply.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json; charset=utf-8\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

const READ_METHODS: &[&str] = &["conversations.replies"];

/// `a=1&b=x%20y` as a JSON object of strings.
fn parse_form(text: &str) -> Value {
    let decode = |s: &str| {
        let bytes = s.replace('+', " ").into_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && i + 2 < bytes.len() {
                if let Ok(b) =
                    u8::from_str_radix(&String::from_utf8_lossy(&bytes[i + 1..i + 3]), 16)
                {
                    out.push(b);
                    i += 3;
                    continue;
                }
            }
            out.push(bytes[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    let mut object = serde_json::Map::new();
    for pair in text.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        object.insert(decode(k), Value::String(decode(v)));
    }
    Value::Object(object)
}

/// Whether a section block's text is over Block Kit's 3000 characters.
fn too_long(blocks: &Value) -> bool {
    blocks.as_array().into_iter().flatten().any(|b| {
        b["type"] == "section"
            && b["text"]["text"]
                .as_str()
                .is_some_and(|t| t.chars().count() > 3000)
    })
}

fn fail(error: &str) -> (u16, String, Value) {
    (200, String::new(), json!({"ok": false, "error": error}))
}

fn call(shared: &Shared, method: &str, token: &str, p: &Value) -> (u16, String, Value) {
    let (lock, cv) = &**shared;
    let mut s = lock.lock().unwrap();
    s.calls.push((method.to_string(), Instant::now()));
    if s.throttle.as_ref().is_some_and(|(m, _)| m == method) {
        let (_, after) = s.throttle.take().unwrap();
        s.throttled_at = Some(Instant::now());
        cv.notify_all();
        return (
            429,
            format!("Retry-After: {after}\r\n"),
            json!({"ok": false, "error": "ratelimited"}),
        );
    }
    let wanted = if method == "apps.connections.open" {
        APP_TOKEN
    } else {
        BOT_TOKEN
    };
    if token != wanted {
        return fail(
            if token.starts_with("xapp-") || token.starts_with("xoxb-") {
                "not_allowed_token_type"
            } else {
                "invalid_auth"
            },
        );
    }
    let out = match method {
        "apps.connections.open" => (200, String::new(), json!({"ok": true, "url": s.ws_url})),
        "chat.postMessage" => {
            let Some(mut channel) = p["channel"].as_str().map(str::to_string) else {
                return fail("channel_not_found");
            };
            if let Some((_, error)) = s.undeliverable.iter().find(|(u, _)| *u == channel) {
                let error = error.clone();
                s.refused_posts.push(channel);
                cv.notify_all();
                return fail(&error);
            }
            if too_long(&p["blocks"]) {
                return fail("invalid_blocks");
            }
            if let Some(user) = channel.strip_prefix('U') {
                channel = format!("D{user}");
            }
            if p["text"].as_str().is_none() && p["blocks"].is_null() {
                return fail("no_text");
            }
            let ts = s.ts();
            let mut message = json!({
                "type": "message", "bot_id": "B0TEST", "user": "U0BOT", "team": "T0TEST",
                "channel": channel, "ts": ts, "text": p["text"],
            });
            if !p["blocks"].is_null() {
                message["blocks"] = p["blocks"].clone();
            }
            if let Some(thread) = p["thread_ts"].as_str() {
                message["thread_ts"] = thread.into();
            }
            s.messages.push(message.clone());
            (
                200,
                String::new(),
                json!({"ok": true, "channel": channel, "ts": ts, "message": message}),
            )
        }
        "chat.update" => {
            let found = s
                .messages
                .iter_mut()
                .find(|m| m["channel"] == p["channel"] && m["ts"] == p["ts"]);
            let Some(m) = found else {
                return fail("message_not_found");
            };
            m["text"] = p["text"].clone();
            if p["blocks"].is_null() {
                m.as_object_mut().unwrap().remove("blocks");
            } else {
                m["blocks"] = p["blocks"].clone();
            }
            m["edited"] = json!({"user": "U0BOT", "ts": "1700000999.000000"});
            let (channel, ts) = (m["channel"].clone(), m["ts"].clone());
            (
                200,
                String::new(),
                json!({"ok": true, "channel": channel, "ts": ts}),
            )
        }
        "chat.postEphemeral" => {
            let ts = s.ts();
            s.ephemerals.push(
                json!({"channel": p["channel"], "user": p["user"], "text": p["text"], "ts": ts}),
            );
            (200, String::new(), json!({"ok": true, "message_ts": ts}))
        }
        "conversations.replies" => {
            let ts = p["ts"].as_str().unwrap_or("");
            let oldest = p["oldest"].as_str().unwrap_or("0");
            let key = |t: &str| {
                let (a, b) = t.split_once('.').unwrap_or((t, "0"));
                (a.parse::<u64>().unwrap_or(0), b.parse::<u64>().unwrap_or(0))
            };
            let in_thread: Vec<Value> = s
                .messages
                .iter()
                .filter(|m| m["channel"] == p["channel"])
                .filter(|m| {
                    m["ts"] == ts
                        || (m["thread_ts"] == ts
                            && key(m["ts"].as_str().unwrap_or("0")) > key(oldest))
                })
                .cloned()
                .collect();
            if in_thread.is_empty() {
                return fail("thread_not_found");
            }
            (
                200,
                String::new(),
                json!({"ok": true, "messages": in_thread, "has_more": false}),
            )
        }
        _ => (
            404,
            String::new(),
            json!({"ok": false, "error": "unknown_method"}),
        ),
    };
    cv.notify_all();
    out
}
