//! The HTTP side of the scripted models the real harnesses are pointed at (Claude Code,
//! Codex, Gemini CLI, pi): requests read one after another from a kept-alive connection on
//! loopback, each answered by the test's own script.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

/// A script's answer to one request: the status (`200 OK`), the content type, the body.
pub(crate) type Answer = (&'static str, &'static str, String);

/// Listens on a free loopback port and serves each connection on a thread of its own,
/// answering every request with `script` (its request line, such as `POST /v1/messages
/// HTTP/1.1`, and its JSON body, null where it has none); gives the address, `127.0.0.1:N`.
pub(crate) fn listen<F>(script: F) -> String
where
    F: Fn(&str, &Value) -> Answer + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let script = Arc::new(script);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let script = script.clone();
            std::thread::spawn(move || serve(stream, &*script));
        }
    });
    address
}

/// Requests on one connection, kept alive, until the client closes it.
fn serve(stream: TcpStream, script: &dyn Fn(&str, &Value) -> Answer) {
    let _ = stream.set_read_timeout(Some(Duration::from_mins(2)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut first = String::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            if first.is_empty() {
                first = line.trim_end().to_string();
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (status, content_type, text) = script(&first, &request);
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// The Anthropic Messages API's reply holding one content `block` that ends the turn with
/// `stop`: a message, or its server-sent events when the request asked for a stream.
pub(crate) fn messages_reply(request: &Value, block: &Value, stop: &str) -> (&'static str, String) {
    if request["stream"] != true {
        let message = json!({"id": "msg_e2e", "type": "message", "role": "assistant",
            "model": request["model"], "content": [block], "stop_reason": stop,
            "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}});
        return ("application/json", message.to_string());
    }
    let (start, delta) = if block["type"] == "tool_use" {
        (
            json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        )
    } else {
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": block["text"]}),
        )
    };
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_e2e", "type": "message",
            "role": "assistant", "model": request["model"], "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": start}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ];
    let text = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    ("text/event-stream", text)
}
