//! `questions mcp` driven by the clients agents are built on, beside rmcp's (mcp.rs): the
//! MCP Inspector's CLI (the TypeScript SDK) and the official Python SDK, installed by
//! `scripts/mcp-clients`. Every tool's error path reaches them as the real message.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{Ledger, BIN};

pub(crate) fn clients() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-clients")
}

/// The client at `path`, or None when `scripts/mcp-clients` has not installed it: the
/// test is skipped, and says so (`common::skip`; under CI every client is required).
pub(crate) fn client(path: PathBuf) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    crate::common::skip(&format!(
        "{} is missing (scripts/mcp-clients installs it)",
        path.display()
    ));
    None
}

/// One failing call per tool, and what its error must say.
fn error_paths(closed: i64) -> Vec<(&'static str, Value, &'static str, &'static str)> {
    vec![
        ("ask_questions", json!({"stage": "s"}), "usage", "questions"),
        (
            "wait_for_answers",
            json!({"stage": "never", "timeout_seconds": "1"}),
            "not_found",
            "holds no question",
        ),
        (
            "check_gate",
            json!({"stage": "s", "ids": "[999]"}),
            "not_found",
            "999",
        ),
        ("list_questions", json!({"status": "lost"}), "usage", "lost"),
        ("get_answers", json!({"stage": " "}), "usage", "stage"),
        (
            "record_answers",
            json!({"stage": "s", "answers": {closed.to_string(): "C"}}),
            "invalid_answer",
            "options",
        ),
    ]
}

fn ledger_with_a_closed_question() -> (Ledger, i64) {
    let l = Ledger::new();
    let closed = l.log_with(
        "s",
        "Which?",
        &["--option", "A", "--option", "B", "--no-freeform"],
    );
    (l, closed)
}

fn assert_failure(tool: &str, result: &Value, code: &str, words: &str) {
    assert_eq!(result["isError"], true, "{tool}: {result}");
    let doc = &result["structuredContent"];
    assert_eq!(doc["ok"], false, "{tool}: {result}");
    assert_eq!(doc["error_code"], code, "{tool}: {result}");
    let message = doc["error"].as_str().unwrap_or("");
    assert!(message.contains(words), "{tool}: {message}");
    assert!(
        !message.contains("-32602") && !message.contains("--force"),
        "{message}"
    );
}

#[test]
fn the_inspector_on_the_typescript_sdk_reads_every_tool_s_error() {
    let Some(inspector) = client(clients().join("node_modules/.bin/mcp-inspector")) else {
        return;
    };
    let (l, closed) = ledger_with_a_closed_question();
    let call = |tool: &str, args: &Value| -> Value {
        let mut cmd = Command::new(&inspector);
        cmd.current_dir(l.dir.path())
            .args(["--cli", BIN, "--db"])
            .arg(l.db())
            .args(["mcp", "--method", "tools/call", "--tool-name", tool]);
        for (key, value) in args.as_object().unwrap() {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            cmd.arg("--tool-arg").arg(format!("{key}={text}"));
        }
        let out = cmd.stderr(Stdio::inherit()).output().unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{tool}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    };
    for (tool, args, code, words) in error_paths(closed) {
        assert_failure(tool, &call(tool, &args), code, words);
    }
    // A number as this client sends it (text) is a number.
    let waited = call(
        "wait_for_answers",
        &json!({"ids": closed.to_string(), "timeout_seconds": "0"}),
    );
    assert_eq!(waited["isError"], false, "{waited}");
    assert_eq!(waited["structuredContent"]["timed_out"], true);
    // A success is in the envelope, as a failure is.
    assert_eq!(waited["structuredContent"]["ok"], true, "{waited}");
    assert_eq!(
        waited["structuredContent"]["procedure"], "wait_for_answers",
        "{waited}"
    );
}

/// The Python SDK in both eras of the protocol: the initialize handshake (2025-11-25) and
/// stateless MCP (2026-07-28), where the form is answered through the multi round-trip
/// pattern. Every tool's error reaches it, and a form its person fills in is recorded.
#[test]
fn the_python_sdk_reads_every_tool_s_error_and_answers_a_form_in_both_eras() {
    let Some(python) = client(clients().join("venv/bin/python")) else {
        return;
    };
    for (mode, negotiated) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        python_sdk_in(&python, mode, negotiated);
    }
}

fn python_sdk_in(python: &std::path::Path, mode: &str, negotiated: &str) {
    let (l, closed) = ledger_with_a_closed_question();
    let paths = error_paths(closed);
    let form = json!({"stage": "form", "questions": [
        {"question": "Which database?", "options": ["PostgreSQL", "SQLite"]},
        {"question": "Project name?"}]});
    let calls: Vec<Value> = paths
        .iter()
        .map(|(tool, args, _, _)| json!({"tool": tool, "arguments": args}))
        .chain([
            json!({"tool": "list_questions", "arguments": {}}),
            json!({"tool": "ask_questions", "arguments": form}),
        ])
        .collect();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/mcp_python.py");
    let mut child = Command::new(python)
        .current_dir(l.dir.path())
        .arg(script)
        .arg(mode)
        .arg(BIN)
        .arg("--db")
        .arg(l.db())
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&calls).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{mode}: {out:?}");
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), calls.len() + 1, "{mode}: {results:?}");
    assert_eq!(
        results.last().unwrap()["protocol_version"],
        negotiated,
        "{mode}"
    );
    for ((tool, _, code, words), result) in paths.iter().zip(&results) {
        let as_inspector =
            json!({"isError": result["is_error"], "structuredContent": result["structured"]});
        assert_failure(tool, &as_inspector, code, words);
    }
    let listed = &results[paths.len()];
    assert_eq!(listed["is_error"], false, "{listed}");
    assert_eq!(listed["structured"]["count"], 1);
    let asked = &results[paths.len() + 1];
    assert_eq!(asked["is_error"], false, "{mode}: {asked}");
    assert_eq!(
        asked["structured"]["elicitation"], "accepted",
        "{mode}: {asked}"
    );
    assert_eq!(asked["structured"]["ok"], true, "{mode}: {asked}");
    assert_eq!(
        asked["structured"]["procedure"], "ask_questions",
        "{mode}: {asked}"
    );
    let recorded: Vec<Value> = l
        .all()
        .into_iter()
        .filter(|q| q["stage"] == "form")
        .collect();
    assert_eq!(recorded[0]["answer"], "PostgreSQL", "{mode}");
    assert_eq!(recorded[1]["answer"], "from python", "{mode}");
    assert_eq!(recorded[1]["answered_by"], "mcp:python-sdk", "{mode}");
}
