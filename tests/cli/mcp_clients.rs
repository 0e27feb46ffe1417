//! `questions mcp` driven by the clients agents are built on, beside rmcp's (mcp.rs): the
//! MCP Inspector's CLI (the TypeScript SDK) and the official Python SDK, installed by
//! `scripts/mcp-clients`. Every tool's error path reaches them as the real message. And
//! rmcp's own client over HTTP against `serve`'s `/mcp` (`rmcp_http`, below).

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

/// rmcp's own client over Streamable HTTP (`clients/rmcp-probe`, built here once, next to
/// the binary: it is in no other build), as a host on the Rust SDK reaches `serve`'s
/// `/mcp` over HTTPS, trusting a throw-away CA, with the ledger's token as its bearer.
#[cfg(all(feature = "serve", feature = "remote"))]
mod rmcp_http {
    use std::io::{BufRead, BufReader, Write};
    use std::path::{Path, PathBuf};
    use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
    use std::sync::OnceLock;

    use serde_json::{json, Value};

    use crate::common::{bare_command, skip, throwaway_ca, Ledger, BIN};
    use crate::serve::Served;

    /// Both eras, and the revision each negotiates: the initialize handshake (a session)
    /// and stateless MCP (`server/discover`).
    const ERAS: [(&str, &str); 2] = [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")];

    /// The probe, built by cargo into the target directory the binary is in, once a run.
    fn probe_binary() -> &'static Path {
        static BUILT: OnceLock<PathBuf> = OnceLock::new();
        BUILT.get_or_init(|| {
            let bin = Path::new(BIN);
            let profile_dir = bin.parent().unwrap();
            let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
            // What cargo sets for this test binary is not the caller's environment: build
            // scripts in the tree (ring's) would take it for a change and rebuild, here and
            // in the next build of the suite.
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy();
                if name == "OUT_DIR"
                    || [
                        "CARGO_PKG_",
                        "CARGO_MANIFEST_",
                        "CARGO_CFG_",
                        "CARGO_FEATURE_",
                    ]
                    .iter()
                    .any(|p| name.starts_with(p))
                    || [
                        "CARGO_CRATE_NAME",
                        "CARGO_BIN_NAME",
                        "CARGO_PRIMARY_PACKAGE",
                        "CARGO_TARGET_TMPDIR",
                    ]
                    .contains(&name.as_ref())
                {
                    cmd.env_remove(name.as_ref());
                }
            }
            cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
                .args(["build", "--locked", "--quiet", "-p", "rmcp-probe"])
                .arg("--target-dir")
                .arg(profile_dir.parent().unwrap());
            if profile_dir.ends_with("release") {
                cmd.arg("--release");
            }
            let out = cmd.output().unwrap();
            // cargo shows the probe's warnings again on every build, even one with nothing
            // to compile: none is allowed (CI's lints do not build it).
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && !said.contains("warning"),
                "cargo build -p rmcp-probe: {said}"
            );
            bin.with_file_name(format!("rmcp-probe{}", std::env::consts::EXE_SUFFIX))
        })
    }

    /// A connection of the probe: its first line, then one line per call.
    struct Probe {
        child: Child,
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
        /// What it printed on connecting: `{"protocol_version"}` or `{"connect_error"}`.
        connected: Value,
    }

    impl Probe {
        fn connect(url: &str, mode: &str, ca: &Path, token: Option<&str>) -> Probe {
            let mut cmd = Command::new(probe_binary());
            cmd.args([mode, url])
                .env("QUESTIONS_CA", ca)
                .env_remove("QUESTIONS_TOKEN")
                .env_remove("HTTPS_PROXY")
                .env_remove("https_proxy")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit());
            if let Some(token) = token {
                cmd.env("QUESTIONS_TOKEN", token);
            }
            let mut child = cmd.spawn().unwrap();
            let stdin = child.stdin.take().unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            let mut probe = Probe {
                child,
                stdin,
                stdout,
                connected: Value::Null,
            };
            probe.connected = probe.line();
            probe
        }

        fn line(&mut self) -> Value {
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
        }

        fn send(&mut self, call: &Value) -> Value {
            writeln!(self.stdin, "{call}").unwrap();
            self.line()
        }

        fn tools(&mut self) -> Vec<String> {
            let listed = self.send(&json!({"list_tools": true}));
            serde_json::from_value(listed["tools"].clone())
                .unwrap_or_else(|e| panic!("{e}: {listed}"))
        }

        fn call(&mut self, tool: &str, arguments: Value) -> Value {
            self.send(&json!({"tool": tool, "arguments": arguments}))
        }

        /// Everything else it printed, once its stdin is closed, and how it exited.
        fn finish(self) -> (String, std::process::ExitStatus) {
            let Probe {
                mut child,
                stdin,
                mut stdout,
                ..
            } = self;
            drop(stdin);
            let mut rest = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
            (rest, child.wait().unwrap())
        }
    }

    /// The ledger's history, as `events` prints it.
    fn events(l: &Ledger) -> Vec<Value> {
        let out = l.command().arg("events").output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// A ledger served over HTTPS by a throw-away CA's certificate, with an agent token
    /// (`sandbox`, stages `ci-*`) and a person token (dana's): (ledger, server, CA, agent,
    /// dana).
    fn served() -> Option<(Ledger, Served, PathBuf, String, String)> {
        let l = Ledger::new();
        let Some((ca, cert, key)) = throwaway_ca(l.dir.path(), "rmcp") else {
            skip("openssl is not installed");
            return None;
        };
        let token = |args: &[&str]| {
            let mut all = vec!["token", "create"];
            all.extend_from_slice(args);
            l.ok(all)["token"].as_str().unwrap().to_string()
        };
        let agent = token(&["sandbox", "--agent", "--stages", "ci-*"]);
        let dana = token(&["dana-phone", "--person", "dana"]);
        let s = crate::remote::served_tls(&l, &cert, &key, &[]);
        Some((l, s, ca, agent, dana))
    }

    /// An agent token's session, in both eras: the tools that answer are not listed, and
    /// `vote` called by name is refused (and recorded as the token's refusal); an approval
    /// it asks names the token as its requester; its wait comes back pending; a person
    /// answers with their own token over HTTPS, and the same session's next wait returns
    /// the answer.
    #[test]
    fn rmcp_s_client_over_https_asks_as_an_agent_token_and_waits_for_a_person() {
        let Some((l, s, ca, agent, dana)) = served() else {
            return;
        };
        let url = format!("{}/mcp", s.base());
        let approval = l.log_with(
            "ci-deploy",
            "Ship it?",
            &["--approval", "--approvers", "dana", "--min", "1"],
        );
        for (mode, negotiated) in ERAS {
            let mut probe = Probe::connect(&url, mode, &ca, Some(&agent));
            assert_eq!(
                probe.connected,
                json!({"protocol_version": negotiated}),
                "{mode}"
            );
            assert_eq!(
                probe.tools(),
                [
                    "ask_questions",
                    "check_gate",
                    "get_answers",
                    "list_questions",
                    "wait_for_answers"
                ],
                "{mode}"
            );

            let voted = probe.call("vote", json!({"id": approval, "vote": "approve"}));
            assert_eq!(voted["is_error"], true, "{mode}: {voted}");
            assert_eq!(
                voted["structured"]["error_code"], "forbidden",
                "{mode}: {voted}"
            );
            assert_eq!(l.question(approval)["status"], "pending", "{mode}");

            let stage = format!("ci-{}", mode.replace('.', "-"));
            let asked = probe.call(
                "ask_questions",
                json!({"stage": stage, "questions": [
                    {"question": "Which region?"},
                    {"question": "Open the region?",
                     "approval": {"approvers": ["dana"], "min": 1}}]}),
            );
            assert_eq!(asked["structured"]["ok"], true, "{mode}: {asked}");
            let ids = &asked["structured"]["question_ids"];
            let id = ids[0].as_i64().unwrap();
            assert_eq!(l.question(id)["status"], "pending", "{mode}");
            // The token is who asked for the approval it logged (so it may never vote on it).
            let logged = l.question(ids[1].as_i64().unwrap());
            assert_eq!(
                logged["approval"]["requester"], "sandbox",
                "{mode}: {logged}"
            );

            let waited = probe.call(
                "wait_for_answers",
                json!({"ids": [id], "timeout_seconds": 0}),
            );
            let pending = &waited["structured"];
            assert_eq!(pending["timed_out"], true, "{mode}: {waited}");
            assert_eq!(
                pending["outcomes"][id.to_string()]["status"],
                "pending",
                "{mode}: {waited}"
            );

            let answered = bare_command(l.dir.path())
                .env("QUESTIONS_DB", s.base())
                .env("QUESTIONS_TOKEN", &dana)
                .env("QUESTIONS_CA", &ca)
                .env_remove("HTTPS_PROXY")
                .env_remove("https_proxy")
                .args(["answer", "--id", &id.to_string(), "--answer", "eu-west"])
                .output()
                .unwrap();
            assert!(answered.status.success(), "{answered:?}");

            let waited = probe.call(
                "wait_for_answers",
                json!({"ids": [id], "timeout_seconds": 30}),
            );
            let settled = &waited["structured"];
            assert_eq!(settled["settled"], true, "{mode}: {waited}");
            let outcome = &settled["outcomes"][id.to_string()];
            assert_eq!(outcome["status"], "answered", "{mode}: {waited}");
            assert_eq!(outcome["answer"], "eu-west", "{mode}: {waited}");
            let (rest, status) = probe.finish();
            assert!(status.success(), "{mode}: {status:?} {rest}");
            assert!(rest.is_empty(), "{mode}: {rest}");
        }
        let refused: Vec<Value> = events(&l)
            .into_iter()
            .filter(|e| e["event"] == "refused")
            .collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
        for e in &refused {
            assert_eq!(e["detail"]["refused"], "vote", "{e}");
            assert_eq!(e["answered_by"], "sandbox", "{e}");
        }
    }

    /// Without a token, or with one the ledger never issued, `/mcp` answers 401 and the
    /// client says so: it connects to nothing, lists nothing, and the ledger records nothing.
    #[test]
    fn rmcp_s_client_over_https_without_a_valid_token_is_refused_401() {
        let Some((l, s, ca, _, _)) = served() else {
            return;
        };
        let url = format!("{}/mcp", s.base());
        let before = events(&l).len();
        for (mode, _) in ERAS {
            for token in [None, Some("qtok_nothing")] {
                let probe = Probe::connect(&url, mode, &ca, token);
                let error = probe.connected["connect_error"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{mode} {token:?}: {}", probe.connected));
                assert!(error.contains("HTTP 401"), "{mode} {token:?}: {error}");
                assert!(
                    !error.contains("qtok_"),
                    "{mode}: the token was printed: {error}"
                );
                let (rest, status) = probe.finish();
                assert_eq!(status.code(), Some(1), "{mode} {token:?}: {rest}");
                assert!(rest.is_empty(), "{mode} {token:?}: {rest}");
            }
        }
        assert_eq!(events(&l).len(), before);
    }
}
