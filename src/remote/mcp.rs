//! `questions mcp --db https://…`: the MCP server of a ledger `questions serve` serves, for
//! a host that starts a process but reaches the ledger only over HTTPS (§16). Each
//! message the host writes on stdin goes to the server's `/mcp` (MCP's Streamable HTTP
//! transport) with the token, and what the server sends back (the reply, and the
//! progress, forms and other messages of a call's stream) comes out on stdout, one line
//! each. The tools, what the token may do with them and their waits (at most 50 s a call)
//! are the server's: this only carries messages.
//!
//! - A request runs on a thread of its own, so that a wait does not hold up the host's
//!   other calls; a notification or a reply to the server is sent before the next line is
//!   read, so that the server sees them in the host's order.
//! - A session the server no longer knows (it restarted) is begun again with the host's
//!   own `initialize`, and the message sent again: the ledger has lost nothing.
//! - A request the server refuses (a token it does not take, a server out of reach) is
//!   answered with a JSON-RPC error saying why, never by silence; and a request is
//!   answered once: a stream that breaks after it carried the reply ends quietly.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::Remote;
use questions_core::error::{Error, Result};

/// How long one message may take: a call's wait is at most 50 s on the server, and its
/// stream says it is alive every 15 s.
const MESSAGE_TIMEOUT: Duration = Duration::from_mins(2);
/// The largest line read from the host, and the largest event read from the server.
const MESSAGE_LIMIT: usize = 16 * 1024 * 1024;

/// What every request to `/mcp` carries beside the token: the session and the protocol's
/// revision the host negotiated, and the host's `initialize` to begin again with.
#[derive(Default)]
struct Session {
    id: Option<String>,
    version: Option<String>,
    initialize: Option<Value>,
}

struct Bridge {
    remote: Remote,
    url: String,
    session: Mutex<Session>,
    stdout: Mutex<std::io::Stdout>,
}

/// Carries the host's messages to the server and back until the host closes stdin.
pub(crate) fn serve(remote: Remote) -> Result<()> {
    let url = format!("{}/mcp", remote.base);
    let bridge = Arc::new(Bridge {
        remote,
        url,
        session: Mutex::new(Session::default()),
        stdout: Mutex::new(std::io::stdout()),
    });
    let mut lines = BufReader::new(std::io::stdin().lock());
    let mut line = String::new();
    loop {
        line.clear();
        let read = (&mut lines)
            .take(MESSAGE_LIMIT as u64)
            .read_line(&mut line)
            .map_err(|e| Error::io(format!("cannot read the client's messages: {e}")))?;
        if read == 0 {
            break;
        }
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_str(text) {
            Ok(message) => message,
            Err(e) => {
                bridge.write(&json!({"jsonrpc": "2.0", "id": null, "error": {
                    "code": -32700, "message": format!("not a JSON-RPC message: {e}")}}));
                continue;
            }
        };
        let is_request = message.get("method").is_some() && message.get("id").is_some();
        if message["method"] == "initialize" {
            // Everything after waits for the session the server gives.
            bridge.session().initialize = Some(message.clone());
            bridge.deliver(&message);
        } else if is_request {
            let bridge = Arc::clone(&bridge);
            std::thread::spawn(move || bridge.deliver(&message));
        } else {
            bridge.deliver(&message);
        }
    }
    bridge.end();
    Ok(())
}

impl Bridge {
    fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One line on stdout: a whole message, never interleaved with another.
    fn write(&self, message: &Value) {
        let mut out = self.stdout.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }

    /// Sends `message` and writes out what comes back; a request the server could not
    /// take is answered with an error.
    fn deliver(&self, message: &Value) {
        if let Err(e) = self.send(message, true) {
            if let Some(id) = message
                .get("id")
                .filter(|_| message.get("method").is_some())
            {
                self.write(&json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32603, "message": e.message}}));
            } else {
                crate::output::note(&e.message);
            }
        }
    }

    /// A message to `/mcp`, with the token and what the transport asks every POST to say.
    fn post(&self) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        self.remote
            .agent
            .post(&self.url)
            .config()
            .timeout_global(Some(MESSAGE_TIMEOUT))
            .build()
            .header("Authorization", &format!("Bearer {}", self.remote.token))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
    }

    fn send(&self, message: &Value, again: bool) -> Result<()> {
        let (id, version) = {
            let session = self.session();
            (session.id.clone(), session.version.clone())
        };
        let mut request = self.post();
        if let Some(id) = &id {
            request = request.header("Mcp-Session-Id", id);
        }
        // A 2026-07-28 message names its revision itself, and the server checks that its
        // routing headers say what its body says.
        let stamped = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
            .as_str()
            .map(str::to_string);
        if let Some(version) = stamped.as_ref().or(version.as_ref()) {
            request = request.header("MCP-Protocol-Version", version);
        }
        if let (Some(_), Some(method)) = (&stamped, message["method"].as_str()) {
            request = request.header("Mcp-Method", method);
            let named = match method {
                "tools/call" | "prompts/get" => message["params"]["name"].as_str(),
                "resources/read" => message["params"]["uri"].as_str(),
                _ => None,
            };
            if let Some(name) = named {
                request = request.header("Mcp-Name", &header_value(name));
            }
        }
        let mut reply = request
            .send(message.to_string().as_str())
            .map_err(|e| self.remote.failed(&e))?;
        let status = reply.status().as_u16();
        if status == 404 && id.is_some() && again {
            // The server restarted (its sessions are its own): begin again and resend.
            self.begin_again()?;
            return self.send(message, false);
        }
        if !(200..300).contains(&status) {
            let mut text = String::new();
            let _ = reply
                .body_mut()
                .as_reader()
                .take(4096)
                .read_to_string(&mut text);
            return Err(self.refused(status, &text));
        }
        if message["method"] == "initialize" {
            let mut session = self.session();
            session.id = header(&reply, "mcp-session-id");
        }
        let streamed = header(&reply, "content-type")
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        let body = reply.body_mut().as_reader();
        if streamed {
            self.stream(body, message.get("id"))
        } else {
            let mut text = String::new();
            body.take(MESSAGE_LIMIT as u64)
                .read_to_string(&mut text)
                .map_err(|e| self.remote.unavailable(&e.to_string()))?;
            if !text.trim().is_empty() {
                self.pass_on(text.trim());
            }
            Ok(())
        }
    }

    /// Writes out each event of a stream as it comes (comments keep it alive). A stream
    /// that breaks once it has carried the reply to `id` has said all the host waits for:
    /// the host is never answered twice (a server that stops between its reply and the
    /// stream's end would otherwise give an error for a call already answered).
    fn stream(&self, body: impl Read, id: Option<&Value>) -> Result<()> {
        let mut data = String::new();
        let mut answered = false;
        for line in BufReader::new(body).lines() {
            let line = match line {
                Ok(line) => line,
                Err(e) if answered => {
                    crate::output::note(&format!(
                        "the server's stream broke after its reply, which the client has: {e}"
                    ));
                    return Ok(());
                }
                Err(e) => return Err(self.remote.unavailable(&e.to_string())),
            };
            if line.is_empty() {
                if !data.is_empty() {
                    answered |= self.pass_on(&data).is_some_and(|m| replies(&m, id));
                    data.clear();
                }
            } else if let Some(more) = line.strip_prefix("data:") {
                if data.len() + more.len() > MESSAGE_LIMIT {
                    return Err(self
                        .remote
                        .unavailable("it sent an event too large to read"));
                }
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(more.strip_prefix(' ').unwrap_or(more));
            }
        }
        if !data.is_empty() {
            self.pass_on(&data);
        }
        Ok(())
    }

    /// A message from the server, on stdout; the revision an `initialize` settled on is
    /// what later requests name.
    fn pass_on(&self, text: &str) -> Option<Value> {
        let message = serde_json::from_str::<Value>(text).ok()?;
        if let Some(version) = message["result"]["protocolVersion"].as_str() {
            self.session().version = Some(version.to_string());
        }
        self.write(&message);
        Some(message)
    }

    /// A new session, begun with the host's own `initialize`, its reply kept from the
    /// host (which has one already).
    fn begin_again(&self) -> Result<()> {
        let initialize = {
            let mut session = self.session();
            session.id = None;
            session.initialize.clone()
        };
        let Some(initialize) = initialize else {
            return Ok(());
        };
        let reply = self
            .post()
            .send(initialize.to_string().as_str())
            .map_err(|e| self.remote.failed(&e))?;
        let status = reply.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(self.refused(status, ""));
        }
        self.session().id = header(&reply, "mcp-session-id");
        drop(reply);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.send(&initialized, false)
    }

    /// The session is over: the server may let it go.
    fn end(&self) {
        let Some(id) = self.session().id.clone() else {
            return;
        };
        let _ = self
            .remote
            .agent
            .delete(&self.url)
            .config()
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .header("Authorization", &format!("Bearer {}", self.remote.token))
            .header("Mcp-Session-Id", &id)
            .call();
    }

    fn refused(&self, status: u16, text: &str) -> Error {
        if status == 401 {
            return Error::new(
                questions_core::error::ErrorCode::Unauthorized,
                format!(
                    "the ledger's server {} refused the token (HTTP 401): set QUESTIONS_TOKEN \
                     to a token 'questions token create' made for this ledger",
                    self.remote.host
                ),
            );
        }
        let said = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|doc| doc["error"].as_str().map(str::to_string))
            .unwrap_or_default();
        self.remote.unavailable(&format!(
            "its /mcp answered HTTP {status}{}{}",
            if said.is_empty() { "" } else { ": " },
            crate::output::sanitize(&said, false)
        ))
    }
}

/// Whether `message` is the reply to the request `id` (not a request or notification of
/// the server's, which carry a method).
fn replies(message: &Value, id: Option<&Value>) -> bool {
    id.is_some_and(|id| message.get("id") == Some(id))
        && message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// A value as a routing header carries it: as it is when it is printable ASCII without
/// spaces at its ends, else in base64 between `=?base64?` and `?=`.
fn header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value == value.trim()
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        return value.to_string();
    }
    format!("=?base64?{}?=", crate::strings::base64(value.as_bytes()))
}

fn header(reply: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    reply
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}
