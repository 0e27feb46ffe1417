//! MCP over HTTP (§16): `serve`'s `/mcp`, driven by the official Python SDK's Streamable
//! HTTP client (installed by `scripts/mcp-clients`) in both eras of the protocol, with the
//! ledger's tokens as `Authorization: Bearer`. The token is the principal: an agent
//! token's session is an agent, a person token's a person.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::Ledger;
use crate::mcp_clients::{client, clients};
use crate::serve::Served;

/// Both eras: the initialize handshake (a session) and stateless MCP.
const ERAS: [&str; 2] = ["legacy", "2026-07-28"];

fn token(l: &Ledger, args: &[&str]) -> String {
    let mut all = vec!["token", "create"];
    all.extend_from_slice(args);
    l.ok(all)["token"].as_str().unwrap().to_string()
}

/// The Python SDK's answers to `calls` (see tests/clients/mcp_python.py), over `/mcp`
/// with `token`; None when the SDK is not installed (the test is skipped, and says so).
fn python(
    s: &Served,
    token: &str,
    mode: &str,
    calls: &[Value],
    env: &[(&str, &str)],
) -> Option<Vec<Value>> {
    python_at(&format!("{}/mcp", s.base()), token, mode, calls, env)
}

/// As `python`, at `url`.
fn python_at(
    url: &str,
    token: &str,
    mode: &str,
    calls: &[Value],
    env: &[(&str, &str)],
) -> Option<Vec<Value>> {
    let python = client(clients().join("venv/bin/python"))?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/mcp_python.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(mode)
        .arg(url)
        .env("QUESTIONS_TOKEN", token)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(calls).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{mode}: {out:?}");
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), calls.len() + 1, "{mode}: {results:?}");
    Some(results)
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"tool": tool, "arguments": arguments})
}

fn list_tools() -> Value {
    json!({"list_tools": true})
}

fn forbidden(result: &Value, words: &str) {
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(result["structured"]["ok"], false, "{result}");
    assert_eq!(result["structured"]["error_code"], "forbidden", "{result}");
    let message = result["structured"]["error"].as_str().unwrap();
    assert!(message.contains(words), "{message}");
}

/// The `refused` events of the ledger, as `events` prints them.
pub(crate) fn refusals(l: &Ledger) -> Vec<Value> {
    let out = l.command().args(["events"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|e| e["event"] == "refused")
        .collect()
}

/// An agent token's session is an agent's: the person's tools are not listed, and called
/// by name each is forbidden, recorded as a refusal by the token, and changes nothing.
#[test]
fn an_agent_token_s_session_lists_no_person_s_tool_and_is_refused_them() {
    for mode in ERAS {
        let l = Ledger::new();
        let agent = token(&l, &["bot", "--agent"]);
        let id = l.log_with(
            "deploy",
            "Ship it?",
            &["--approval", "--approvers", "dana", "--min", "1"],
        );
        let plain = l.log("deploy", "Which region?");
        let s = Served::start(&l, &[]);
        let calls = [
            list_tools(),
            call("vote", json!({"id": id, "vote": "approve"})),
            call(
                "record_answers",
                json!({"stage": "deploy", "answers": {plain.to_string(): "eu"}}),
            ),
            call(
                "answer_in_app",
                json!({"id": plain, "action": "answer", "answer": "eu"}),
            ),
        ];
        let Some(results) = python(&s, &agent, mode, &calls, &[]) else {
            return;
        };
        assert_eq!(
            results[0]["tools"],
            json!([
                "ask_questions",
                "check_gate",
                "get_answers",
                "list_questions",
                "wait_for_answers"
            ]),
            "{mode}"
        );
        forbidden(&results[1], "may not vote");
        forbidden(&results[2], "may not import");
        forbidden(&results[3], "may not answer");
        assert_eq!(l.question(id)["status"], "pending", "{mode}");
        assert_eq!(l.question(plain)["status"], "pending", "{mode}");
        let refused: Vec<(String, String)> = refusals(&l)
            .iter()
            .map(|e| {
                (
                    e["detail"]["refused"].as_str().unwrap().to_string(),
                    e["answered_by"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let by = |what: &str| (what.to_string(), "bot".to_string());
        assert_eq!(refused, [by("vote"), by("import"), by("answer")], "{mode}");
    }
}

/// A person token's session may vote, as its person; and a form its host shows is
/// recorded as that person's, through the form.
#[test]
fn a_person_token_s_session_votes_as_its_person() {
    for mode in ERAS {
        let l = Ledger::new();
        let dana = token(&l, &["dana-laptop", "--person", "dana"]);
        let id = l.log_with(
            "deploy",
            "Ship it?",
            &["--approval", "--approvers", "dana", "--min", "1"],
        );
        let s = Served::start(&l, &[]);
        let calls = [
            list_tools(),
            call("vote", json!({"id": id, "vote": "approve"})),
            call(
                "ask_questions",
                json!({"stage": "notes", "questions": [{"question": "Release name?"}]}),
            ),
        ];
        let Some(results) = python(&s, &dana, mode, &calls, &[]) else {
            return;
        };
        let tools = results[0]["tools"].as_array().unwrap();
        assert!(tools.contains(&json!("vote")), "{mode}: {tools:?}");
        assert!(
            tools.contains(&json!("record_answers")),
            "{mode}: {tools:?}"
        );
        assert_eq!(results[1]["is_error"], false, "{mode}: {}", results[1]);
        let q = l.question(id);
        assert_eq!(q["status"], "answered", "{mode}: {q}");
        assert_eq!(q["answered_by"], "dana", "{mode}: {q}");
        let asked = &results[2]["structured"];
        assert_eq!(asked["elicitation"], "accepted", "{mode}: {asked}");
        let note = l.question(asked["question_ids"][0].as_i64().unwrap());
        assert_eq!(note["answered_by"], "dana", "{mode}: {note}");
        assert_eq!(note["channel"], "elicitation", "{mode}: {note}");
    }
}

/// A form an agent's host shows proves no more than that: recorded as the host's
/// (`host:<token>`, channel `elicitation`), and an approval asked beside it is never put
/// in the form nor settled by it. What the agent logs names the token as its requester.
#[test]
fn an_agent_session_s_form_is_recorded_as_its_host_s_and_settles_no_approval() {
    for mode in ERAS {
        let l = Ledger::new();
        let agent = token(&l, &["bot", "--agent", "--stages", "ci-*"]);
        let s = Served::start(&l, &[]);
        let ask = json!({"stage": "ci-release", "questions": [
            {"question": "Which region?", "options": ["eu", "us"]},
            {"question": "Ship it?",
             "approval": {"approvers": ["dana"], "min": 1, "requester": "carol"}}]});
        let Some(results) = python(&s, &agent, mode, &[call("ask_questions", ask)], &[]) else {
            return;
        };
        let asked = &results[0]["structured"];
        assert_eq!(asked["ok"], true, "{mode}: {asked}");
        assert_eq!(asked["elicitation"], "accepted", "{mode}: {asked}");
        let ids: Vec<i64> = asked["question_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let region = l.question(ids[0]);
        assert_eq!(region["answer"], "eu", "{mode}: {region}");
        assert_eq!(region["answered_by"], "host:bot", "{mode}: {region}");
        assert_eq!(region["channel"], "elicitation", "{mode}: {region}");
        let approval = l.question(ids[1]);
        assert_eq!(approval["status"], "pending", "{mode}: {approval}");
        // The requester it named stays; the token that logged it may never vote on it.
        assert_eq!(
            approval["approval"]["requester"], "carol",
            "{mode}: {approval}"
        );
        assert_eq!(
            approval["approval"]["logged_by"], "bot",
            "{mode}: {approval}"
        );
    }
}

/// A session of one token reads nothing of a stage outside its own: a wait, a gate or
/// the answers of another stage are forbidden (and recorded), and a list leaves it out.
#[test]
fn a_session_of_one_token_reads_no_other_stage() {
    let l = Ledger::new();
    let agent = token(&l, &["bot", "--agent", "--stages", "ci-*"]);
    let theirs = l.log("prod", "Rotate the keys?");
    let ours = l.log("ci-build", "Which compiler?");
    let s = Served::start(&l, &[]);
    for mode in ERAS {
        let calls = [
            call(
                "wait_for_answers",
                json!({"ids": [theirs], "timeout_seconds": 0}),
            ),
            call("check_gate", json!({"stage": "prod"})),
            call("get_answers", json!({"stage": "prod"})),
            call("list_questions", json!({})),
            call(
                "wait_for_answers",
                json!({"stage": "prod", "timeout_seconds": 0}),
            ),
        ];
        let Some(results) = python(&s, &agent, mode, &calls, &[]) else {
            return;
        };
        forbidden(&results[0], "outside this token's stages");
        forbidden(&results[1], "outside this token's stages");
        forbidden(&results[2], "outside this token's stages");
        let listed = &results[3]["structured"];
        assert_eq!(listed["count"], 1, "{mode}: {listed}");
        assert_eq!(listed["questions"][0]["id"], ours, "{mode}: {listed}");
        forbidden(&results[4], "outside this token's stages");
    }
    assert_eq!(refusals(&l).len(), 8);
}

/// No token, an unknown one or a revoked one: 401 with the one message of §15, and no
/// OAuth metadata anywhere (a host that finds some drops the bearer header it was given).
#[test]
fn mcp_without_a_valid_token_is_401_and_offers_no_oauth() {
    let l = Ledger::new();
    let revoked = token(&l, &["old", "--agent"]);
    l.ok(["token", "revoke", "old"]);
    let s = Served::start(&l, &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let mut messages = Vec::new();
    for bearer in [None, Some("qtok_nothing".to_string()), Some(revoked)] {
        let header = bearer.map(|t| format!("Authorization: Bearer {t}"));
        let mut headers = vec![
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
        ];
        headers.extend(header.as_deref());
        let reply = s.request("POST", "/mcp", &headers, &init);
        assert_eq!(reply.status, 401, "{reply:?}");
        assert_eq!(reply.header("www-authenticate"), None, "{reply:?}");
        let body = reply.json();
        assert_eq!(body["error_code"], "unauthorized", "{body}");
        messages.push(body["error"].clone());
    }
    assert!(messages.iter().all(|m| *m == messages[0]), "{messages:?}");
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ] {
        let reply = s.request("GET", path, &[], "");
        assert_eq!(reply.status, 404, "{path}: {reply:?}");
        assert_eq!(reply.header("www-authenticate"), None, "{reply:?}");
    }
}

/// A browser on another site may neither call `/mcp` nor open its event stream, even with
/// a valid token (the §10 checks hold for it), and a Host that is not the server is refused.
#[test]
fn mcp_from_another_site_or_another_host_is_refused() {
    let l = Ledger::new();
    let agent = token(&l, &["bot", "--agent"]);
    let s = Served::start(&l, &[]);
    let bearer = format!("Authorization: Bearer {agent}");
    for (method, headers) in [
        ("POST", vec!["Origin: https://evil.example"]),
        ("POST", vec!["Sec-Fetch-Site: cross-site"]),
        ("GET", vec!["Sec-Fetch-Site: cross-site"]),
        ("GET", vec!["Origin: https://evil.example"]),
        ("POST", vec!["Host: rebound.example"]),
    ] {
        let mut all = vec![
            "Content-Type: application/json",
            "Accept: application/json, text/event-stream",
            bearer.as_str(),
        ];
        all.extend(headers.iter().copied());
        let reply = s.request(method, "/mcp", &all, "{}");
        assert_eq!(reply.status, 403, "{method} {headers:?}: {reply:?}");
    }
}

/// An agent asks without a form; a person answers with their own token over the ledger's
/// API; the agent's wait sees the answer. A server restarted between the calls loses
/// nothing: the next call, on a new session, sees the answer.
#[test]
fn an_agent_asks_a_person_answers_and_a_restart_between_calls_loses_nothing() {
    for mode in ERAS {
        let l = Ledger::new();
        let agent = token(&l, &["bot", "--agent"]);
        let dana = token(&l, &["dana-phone", "--person", "dana"]);
        let s = Served::start(&l, &[]);
        let ask = json!({"stage": "plan", "elicit": false,
                         "questions": [{"question": "Which database?"}]});
        let Some(results) = python(&s, &agent, mode, &[call("ask_questions", ask)], &[]) else {
            return;
        };
        let asked = &results[0]["structured"];
        let id = asked["question_ids"][0].as_i64().unwrap();
        assert_eq!(
            asked["outcomes"][id.to_string()]["status"],
            "pending",
            "{asked}"
        );
        drop(s);

        // Answered while no server runs, by the person's token through a new one.
        let s = Served::start(&l, &[]);
        let answer = json!({"op": "change", "args": {
            "id": id, "act": {"answer": {"text": "PostgreSQL", "select": []}},
            "shown": {"ledger": null, "questions": {}}, "within": null, "force": false}});
        let bearer = format!("Authorization: Bearer {dana}");
        let reply = s.request(
            "POST",
            "/v1/call",
            &["Content-Type: application/json", &bearer],
            &answer.to_string(),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        drop(s);

        let s = Served::start(&l, &[]);
        let wait = call("wait_for_answers", json!({"ids": [id]}));
        let results = python(&s, &agent, mode, &[wait], &[]).unwrap();
        let waited = &results[0]["structured"];
        assert_eq!(waited["settled"], true, "{mode}: {waited}");
        let outcome = &waited["outcomes"][id.to_string()];
        assert_eq!(outcome["status"], "answered", "{mode}: {waited}");
        assert_eq!(outcome["answer"], "PostgreSQL", "{mode}: {waited}");
    }
}

/// A wait asked for longer than 50 s comes back after 50 s, pending, for the agent to
/// call again, with progress notifications meanwhile (the client gave a progress token).
/// The call is timed by the client, around the call alone.
#[test]
fn a_wait_longer_than_50_s_returns_pending_within_50_s_with_progress() {
    let l = Ledger::new();
    let agent = token(&l, &["bot", "--agent"]);
    let id = l.log("plan", "Which database?");
    let s = Served::start(&l, &[]);
    let mut wait = call(
        "wait_for_answers",
        json!({"ids": [id], "timeout_seconds": 300}),
    );
    wait["progress"] = json!(true);
    let Some(results) = python(&s, &agent, "legacy", &[wait], &[]) else {
        return;
    };
    let took = results[0]["seconds"].as_f64().unwrap();
    assert!((49.0..56.0).contains(&took), "{took} s: {}", results[0]);
    let waited = &results[0]["structured"];
    assert_eq!(waited["timed_out"], true, "{waited}");
    assert_eq!(
        waited["outcomes"][id.to_string()]["status"],
        "pending",
        "{waited}"
    );
    assert!(
        results[0]["progress_count"].as_u64().unwrap() >= 2,
        "{}",
        results[0]
    );
}

/// A token refused as `forbidden` 20 times in a minute through MCP is cut off as on the
/// ledger's API: its next requests are answered 429 before they reach the door, and the
/// history stops growing.
#[test]
fn a_token_refused_twenty_times_a_minute_is_cut_off_and_the_history_stops_growing() {
    let l = Ledger::new();
    let agent = token(&l, &["bot", "--agent"]);
    let id = l.log("plan", "Which database?");
    let s = Served::start(&l, &[]);
    let calls: Vec<Value> = (0..23)
        .map(|_| call("vote", json!({"id": id, "vote": "approve"})))
        .collect();
    let Some(results) = python(&s, &agent, "2026-07-28", &calls, &[]) else {
        return;
    };
    for result in &results[..20] {
        forbidden(result, "may not vote");
    }
    // The SDK says no more than that the server refused the request.
    for result in &results[20..23] {
        assert_eq!(result["structured"], Value::Null, "{result}");
        let text = result["text"].as_str().unwrap();
        assert!(text.starts_with("client error"), "{result}");
    }
    assert_eq!(refusals(&l).len(), 20);
    let bearer = format!("Authorization: Bearer {agent}");
    let reply = s.request(
        "POST",
        "/mcp",
        &["Content-Type: application/json", &bearer],
        "{}",
    );
    assert_eq!(reply.status, 429, "{reply:?}");
}

/// Over HTTPS with a throw-away CA, as a sandbox reaches the team's server: the SDK
/// trusts the CA it is given (`SSL_CERT_FILE`), an agent asks, a person's token answers
/// over the wire, and the agent's next call sees the answer.
#[test]
#[cfg(feature = "remote")]
fn an_agent_asks_over_https_with_a_private_ca_and_a_person_answers() {
    let l = Ledger::new();
    let Some((ca, cert, key)) = crate::common::throwaway_ca(l.dir.path(), "mcp") else {
        crate::common::skip("openssl is not installed");
        return;
    };
    let agent = token(&l, &["sandbox", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let s = crate::remote::served_tls(&l, &cert, &key, &[]);
    let url = format!("https://127.0.0.1:{}/mcp", s.port);
    let ca_env = ca.to_str().unwrap();
    for mode in ERAS {
        let stage = format!("ci-{}", mode.replace('.', "-"));
        let asked = [call(
            "ask_questions",
            json!({"stage": stage, "questions": [{"question": "Ship it?", "options": ["yes", "no"]}]}),
        )];
        // The host declines its form: the person answers elsewhere.
        let env = [
            ("SSL_CERT_FILE", ca_env),
            ("QUESTIONS_TEST_FORM", "decline"),
        ];
        let Some(results) = python_at(&url, &agent, mode, &asked, &env) else {
            return;
        };
        let id = results[0]["structured"]["question_ids"][0]
            .as_i64()
            .unwrap();
        let answered = crate::common::bare_command(l.dir.path())
            .env("QUESTIONS_DB", format!("https://127.0.0.1:{}", s.port))
            .env("QUESTIONS_TOKEN", &dana)
            .env("QUESTIONS_CA", &ca)
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .args(["answer", "--id", &id.to_string(), "--answer", "yes"])
            .output()
            .unwrap();
        assert!(answered.status.success(), "{answered:?}");
        let got = [call("get_answers", json!({"stage": stage}))];
        let results = python_at(&url, &agent, mode, &got, &env).unwrap();
        assert!(
            results[0]["structured"].to_string().contains("\"yes\""),
            "{mode}: {}",
            results[0]
        );
        let q = l.question(id);
        assert_eq!(
            (&q["answered_by"], &q["channel"]),
            (&json!("dana"), &json!("api"))
        );
    }
}

/// The MCP Inspector's CLI (the TypeScript SDK most hosts are built on) over HTTPS with a
/// bearer header, trusting a throw-away CA as Node.js does (`NODE_EXTRA_CA_CERTS`): an
/// agent token's session lists no tool that answers and cannot call one, asks, and
/// without a token nothing is served.
#[test]
#[cfg(feature = "remote")]
fn the_inspector_asks_over_https_with_a_bearer_token_and_is_refused_what_answers() {
    let Some(inspector) = client(clients().join("node_modules/.bin/mcp-inspector")) else {
        return;
    };
    let l = Ledger::new();
    let Some((ca, cert, key)) = crate::common::throwaway_ca(l.dir.path(), "inspector") else {
        crate::common::skip("openssl is not installed");
        return;
    };
    let agent = token(&l, &["sandbox", "--agent", "--stages", "ci-*"]);
    let s = crate::remote::served_tls(&l, &cert, &key, &[]);
    let url = format!("https://127.0.0.1:{}/mcp", s.port);
    let inspect = |token: Option<&str>, args: &[&str]| -> (bool, Value, String) {
        let mut cmd = Command::new(&inspector);
        cmd.current_dir(l.dir.path())
            .env("NODE_EXTRA_CA_CERTS", &ca)
            .args(["--cli", &url, "--transport", "http"]);
        if let Some(t) = token {
            cmd.arg("--header")
                .arg(format!("Authorization: Bearer {t}"));
        }
        let out = cmd.args(args).stdin(Stdio::null()).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !stdout.contains(&agent) && !stderr.contains(&agent),
            "the token was printed"
        );
        let doc = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        (out.status.success(), doc, stderr)
    };

    let (ok, listed, stderr) = inspect(Some(&agent), &["--method", "tools/list"]);
    assert!(ok, "{stderr}");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"ask_questions"), "{names:?}");
    for hidden in ["vote", "answer_in_app", "record_answers"] {
        assert!(!names.contains(&hidden), "{hidden} listed: {names:?}");
    }

    let (ok, asked, stderr) = inspect(
        Some(&agent),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "ask_questions",
            "--tool-arg",
            "stage=ci-deploy",
            "--tool-arg",
            r#"questions=[{"question": "Ship build 42?"}]"#,
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(asked["structuredContent"]["ok"], true, "{asked}");
    let id = asked["structuredContent"]["question_ids"][0]
        .as_i64()
        .unwrap();
    assert_eq!(l.question(id)["status"], "pending");

    // Called by name, it is not there for this session (the client looks it up first; the
    // server's own refusal is the Python SDK's test above).
    let (ok, _, said) = inspect(
        Some(&agent),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "vote",
            "--tool-arg",
            &format!("id={id}"),
            "--tool-arg",
            "verdict=approve",
        ],
    );
    assert!(!ok && said.contains("not found"), "{said}");
    assert_eq!(l.question(id)["status"], "pending");

    // No token: nothing is listed.
    let (ok, none, _) = inspect(None, &["--method", "tools/list"]);
    assert!(!ok && none["tools"].is_null(), "{none}");
}

/// `questions mcp --db https://…`, for a host that starts a process but reaches the
/// ledger only over HTTPS: the official Python SDK's stdio client gets the server's own
/// tools for the token in its environment (an agent's: nothing that answers, and only
/// its stages), its form request and reply carried both ways, and a person's answer
/// given over the wire.
#[test]
#[cfg(feature = "remote")]
fn questions_mcp_over_https_carries_the_server_s_tools_for_the_token_it_holds() {
    let Some(python) = client(clients().join("venv/bin/python")) else {
        return;
    };
    let l = Ledger::new();
    let Some((ca, cert, key)) = crate::common::throwaway_ca(l.dir.path(), "bridge") else {
        crate::common::skip("openssl is not installed");
        return;
    };
    let agent = token(&l, &["sandbox", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let s = crate::remote::served_tls(&l, &cert, &key, &[]);
    let base = format!("https://127.0.0.1:{}", s.port);
    let stdio = |mode: &str, calls: &[Value]| -> Vec<Value> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/mcp_python.py");
        let mut child = Command::new(&python)
            .current_dir(l.dir.path())
            .args([script, mode, crate::common::BIN, "mcp", "--db", &base])
            .env("QUESTIONS_TOKEN", &agent)
            .env("QUESTIONS_CA", &ca)
            .env("QUESTIONS_TEST_PASS_ENV", "QUESTIONS_TOKEN,QUESTIONS_CA")
            .env("QUESTIONS_TEST_FORM", "decline")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(serde_json::to_string(calls).unwrap().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{mode}: {out:?}");
        let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(results.len(), calls.len() + 1, "{mode}: {results:?}");
        results
    };
    for (mode, negotiated) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let stage = format!("ci-{}", mode.replace('.', "-"));
        let ask = json!({"stage": stage, "questions": [
            {"question": "Ship it?", "options": ["yes", "no"]}]});
        let results = stdio(
            mode,
            &[
                list_tools(),
                call("ask_questions", ask),
                call(
                    "record_answers",
                    json!({"stage": stage, "answers": {"1": "yes"}}),
                ),
                call("list_questions", json!({"stage": "deploy"})),
            ],
        );
        assert_eq!(
            results[0]["tools"],
            json!([
                "ask_questions",
                "check_gate",
                "get_answers",
                "list_questions",
                "wait_for_answers"
            ]),
            "{mode}"
        );
        // The form went to the host and its refusal came back: the question waits.
        let id = results[1]["structured"]["question_ids"][0]
            .as_i64()
            .unwrap_or_else(|| panic!("{mode}: {}", results[1]));
        assert_eq!(l.question(id)["status"], "pending", "{mode}");
        forbidden(&results[2], "may not import");
        forbidden(&results[3], "outside this token's stages");
        assert_eq!(results[4]["protocol_version"], negotiated, "{mode}");
        let answered = crate::common::bare_command(l.dir.path())
            .env("QUESTIONS_DB", &base)
            .env("QUESTIONS_TOKEN", &dana)
            .env("QUESTIONS_CA", &ca)
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .args(["answer", "--id", &id.to_string(), "--answer", "yes"])
            .output()
            .unwrap();
        assert!(answered.status.success(), "{answered:?}");
        let wait = call(
            "wait_for_answers",
            json!({"ids": [id], "timeout_seconds": 5}),
        );
        let results = stdio(mode, &[wait]);
        let got = results[0]["structured"].to_string();
        assert!(
            got.contains("\"yes\"") && got.contains("answered"),
            "{mode}: {got}"
        );
    }
}

/// A token the server does not take: the host's first message is answered with an error
/// that says so, and the token is never repeated.
#[test]
#[cfg(feature = "remote")]
fn questions_mcp_over_https_with_a_wrong_token_answers_the_host_with_why() {
    let l = Ledger::new();
    let Some((ca, cert, key)) = crate::common::throwaway_ca(l.dir.path(), "bridge") else {
        crate::common::skip("openssl is not installed");
        return;
    };
    let s = crate::remote::served_tls(&l, &cert, &key, &[]);
    let wrong = "qt_agent_notatokenofthisledger0000";
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let out = crate::common::bare_command(l.dir.path())
        .args(["mcp", "--db", &format!("https://127.0.0.1:{}", s.port)])
        .env("QUESTIONS_TOKEN", wrong)
        .env("QUESTIONS_CA", &ca)
        .write_stdin(format!("{initialize}\n"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reply: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(reply["id"], 1, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("refused the token (HTTP 401)"),
        "{message}"
    );
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!all.contains(wrong), "{all}");
}
