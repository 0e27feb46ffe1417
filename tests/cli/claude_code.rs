//! End to end with the real Claude Code (the npm package `@anthropic-ai/claude-code`, which
//! `.ci/run` installs when `claude` is missing): in SDK mode (`-p --input-format
//! stream-json --output-format stream-json --permission-prompt-tool stdio`, as its SDK runs
//! it; without a permission prompt tool `AskUserQuestion` is not offered at all), with its
//! Messages API pointed at a scripted model on loopback that asks two questions through
//! `AskUserQuestion` (one multi-select) and records the tool result. The hooks are the ones
//! `questions init claude-code` writes into the project (one test adds `--wait`). No API
//! key, no network.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{bare_command, finish, Run, BIN};

/// One Claude Code at a time: two cores are shared with the rest of the suite.
static ONE_CLAUDE: Mutex<()> = Mutex::new(());

const DATABASE: &str = "Which database should we use?";
const FEATURES: &str = "Which features do you want?";

fn ask() -> Value {
    json!({"questions": [
        {"question": DATABASE, "header": "Database", "multiSelect": false,
         "options": [{"label": "SQLite", "description": "Embedded"},
                     {"label": "PostgreSQL", "description": "A server"}]},
        {"question": FEATURES, "header": "Features", "multiSelect": true,
         "options": [{"label": "Auth", "description": "Log in"},
                     {"label": "Search", "description": "Find things"},
                     {"label": "Export", "description": "CSV files"}]}
    ]})
}

/// The real Claude Code, or None: a test that drives it is then skipped, and says so
/// (`common::skip`; under CI it is required).
fn claude() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("QUESTIONS_TEST_CLAUDE") {
        return Some(path.into());
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("claude"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        crate::common::skip(
            "claude is not installed: npm install -g @anthropic-ai/claude-code (.ci/run does)",
        );
    }
    found
}

/// The scripted model: a Messages API on loopback. While the conversation holds no tool
/// result it calls `AskUserQuestion`; then it records the result and ends the turn.
struct Model {
    url: String,
    results: Arc<Mutex<Vec<Value>>>,
}

impl Model {
    fn start() -> Model {
        let results = Arc::new(Mutex::new(Vec::new()));
        let seen = results.clone();
        let address = crate::scripted::listen(move |line, request| {
            if line.starts_with("POST /v1/messages/count_tokens") {
                let count = json!({"input_tokens": 10}).to_string();
                ("200 OK", "application/json", count)
            } else if line.starts_with("POST /v1/messages") {
                let (content_type, text) = respond(request, &seen);
                ("200 OK", content_type, text)
            } else if line.starts_with("POST") {
                ("200 OK", "application/json", "{}".to_string())
            } else {
                ("404 Not Found", "application/json", "{}".to_string())
            }
        });
        Model {
            url: format!("http://{address}"),
            results,
        }
    }

    fn results(&self) -> Vec<Value> {
        self.results.lock().unwrap().clone()
    }
}

/// The model's turn: the `AskUserQuestion` call, or, once the tool answered, a last word.
fn respond(request: &Value, results: &Mutex<Vec<Value>>) -> (&'static str, String) {
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    // The tool's result, wherever it is: Claude Code may put a notice of its own after it,
    // as a message of the user (an MCP server that failed to connect, in the build
    // without `mcp`), which is not what the tool said.
    let result = request["messages"].as_array().and_then(|messages| {
        messages.iter().rev().find_map(|m| {
            m["content"]
                .as_array()
                .and_then(|blocks| blocks.iter().find(|b| b["type"] == "tool_result").cloned())
        })
    });
    let offered = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "AskUserQuestion"));
    let mut results = results.lock().unwrap();
    let (block, stop) = match result {
        None if offered => (
            json!({"type": "tool_use", "id": format!("toolu_e2e_{}", results.len()),
                "name": "AskUserQuestion", "input": ask()}),
            "tool_use",
        ),
        // Its first request: a later one carries it again (with marks of Claude Code's
        // own, such as where its cache ends), in a turn that goes on.
        Some(result)
            if !results
                .iter()
                .any(|seen| seen["tool_use_id"] == result["tool_use_id"]) =>
        {
            results.push(result);
            (json!({"type": "text", "text": "thanks"}), "end_turn")
        }
        _ => {
            // A turn that goes on after the tool: what it was told, as the result.
            results.push(last);
            (json!({"type": "text", "text": "going on"}), "end_turn")
        }
    };
    drop(results);
    crate::scripted::messages_reply(request, &block, stop)
}

/// A git project whose Claude Code config `questions init claude-code` wrote, and a home
/// of its own.
struct Project {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    /// PATH's `questions` on this machine, as `init` names it in a project's files: the
    /// binary under test.
    bin: tempfile::TempDir,
    /// What Claude Code's environment holds beyond its own (a server's URL and token).
    env: Vec<(String, std::ffi::OsString)>,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::create_dir(dir.path().join(".questions")).unwrap();
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(BIN, bin.path().join("questions")).unwrap();
        let project = Project {
            dir,
            home: tempfile::tempdir().unwrap(),
            bin,
            env: Vec::new(),
        };
        let init = project.questions(&["init", "claude-code"]);
        assert_eq!(init.code, 0, "{init:?}");
        // The ledger made beforehand (a write that changes nothing), as a project's first
        // call would have: a hook that must make it, migrations and fsyncs included, on a
        // loaded machine can outlast its 3 s of grace and fail open, as it should; that is
        // not what these tests are about.
        let made = project.questions(&["clear", "--stage", "made-beforehand"]);
        assert_eq!(made.code, 0, "{made:?}");
        project
    }

    /// `questions` run in the project, as its hooks are: the ledger is found by walking up.
    fn questions(&self, args: &[&str]) -> Run {
        let mut cmd = bare_command(self.dir.path());
        cmd.env("HOME", self.home.path())
            .env("PATH", self.path())
            .args(args);
        finish(cmd)
    }

    /// This machine's PATH with the binary under test first.
    fn path(&self) -> std::ffi::OsString {
        let mut dirs = vec![self.bin.path().to_path_buf()];
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(dirs).unwrap()
    }

    fn ok(&self, args: &[&str]) -> Value {
        let run = self.questions(args);
        assert_eq!(run.code, 0, "{run:?}");
        run.json
    }

    fn all(&self) -> Vec<Value> {
        self.ok(&["list"])["questions"].as_array().unwrap().clone()
    }

    /// One turn of Claude Code; `card` is what the SDK host does when Claude Code asks
    /// it to show the card (a permission request for `AskUserQuestion`): the answers to
    /// give, or none to refuse. Returns the permission requests it saw.
    fn turn(&self, model: &Model, card: Option<Value>) -> Vec<Value> {
        self.turn_with(model, &|input: &Value| match &card {
            Some(answers) => {
                let mut input = input.clone();
                input["answers"] = answers.clone();
                json!({"behavior": "allow", "updatedInput": input})
            }
            None => json!({"behavior": "deny", "message": "nobody answered"}),
        })
    }

    /// One turn; `card` answers Claude Code's request to show the card.
    fn turn_with(&self, model: &Model, card: &dyn Fn(&Value) -> Value) -> Vec<Value> {
        let mut child = Command::new(claude().expect("the test checked that claude is here"))
            .args([
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-prompt-tool",
                "stdio",
            ])
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", self.path())
            .env("HOME", self.home.path())
            .env("ANTHROPIC_BASE_URL", &model.url)
            .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("QUESTIONS_USER", "dana")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("claude starts");
        let mut stdin = child.stdin.take().unwrap();
        let prompt = json!({"type": "user", "message": {"role": "user",
            "content": "Set up the project; ask me what you need."}});
        writeln!(stdin, "{prompt}").unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut requests = Vec::new();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let pid = child.id();
        std::thread::spawn(move || {
            // A run that hangs is ended, and the test fails on what it saw.
            if done_rx.recv_timeout(Duration::from_secs(90)).is_err() {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        });
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            match message["type"].as_str() {
                Some("control_request") if message["request"]["subtype"] == "can_use_tool" => {
                    requests.push(message["request"].clone());
                    let response = card(&message["request"]["input"]);
                    let reply = json!({"type": "control_response", "response": {
                        "subtype": "success", "request_id": message["request_id"],
                        "response": response}});
                    writeln!(stdin, "{reply}").unwrap();
                }
                Some("result") => break,
                _ => {}
            }
        }
        drop(stdin);
        let status = child.wait().unwrap();
        let _ = done_tx.send(());
        let mut stderr = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
        assert!(status.success(), "claude failed: {status:?}\n{stderr}");
        requests
    }
}

fn tool_result_text(result: &Value) -> String {
    match &result["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

fn hooks_in(project: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(project.join(".claude/settings.json")).unwrap())
        .unwrap()
}

#[test]
fn sqlite_only_answers_on_record_for_the_same_text_do_not_answer_a_new_call() {
    crate::sqlite_only!();
    if claude().is_none() {
        return;
    }
    let _one = ONE_CLAUDE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new();
    assert!(hooks_in(project.dir.path())["hooks"]["PreToolUse"].is_array());
    // Someone asked the person the same texts before the agent got to them, and they
    // answered: those answers were given to other questions, not to this call.
    project.ok(&[
        "log",
        "--stage",
        "claude-code",
        "--question",
        DATABASE,
        "--option",
        "SQLite",
        "--option",
        "PostgreSQL",
    ]);
    project.ok(&[
        "log",
        "--stage",
        "claude-code",
        "--question",
        FEATURES,
        "--option",
        "Auth",
        "--option",
        "Search",
        "--option",
        "Export",
        "--multi-select",
    ]);
    project.ok(&["answer", "--id", "1", "--answer", "SQLite"]);
    project.ok(&[
        "answer", "--id", "2", "--select", "Auth", "--select", "Export",
    ]);

    let model = Model::start();
    let requests = project.turn(&model, None);
    assert_eq!(requests.len(), 1, "the card was asked for: {requests:?}");
    assert_eq!(requests[0]["tool_name"], "AskUserQuestion");
    let results = model.results();
    assert_eq!(
        results[0]["is_error"], true,
        "the refused card: {results:?}"
    );
    let all = project.all();
    assert_eq!(
        all.len(),
        4,
        "the call's own questions beside the old: {all:?}"
    );
    assert_eq!(all[0]["answer"], "SQLite");
    assert_eq!(all[1]["selected"], json!(["Auth", "Export"]));
    for (q, text) in all[2..].iter().zip([DATABASE, FEATURES]) {
        assert_eq!(q["question"], text);
        assert_eq!(q["status"], "pending");
        assert!(
            q["harness_call"]
                .as_str()
                .is_some_and(|key| key.starts_with("claude-code:")),
            "{q}"
        );
    }
}

/// Gives the project's `PreToolUse` hook `--wait SECONDS`, and a `timeout` that outlives
/// it (Claude Code ends a hook at its timeout).
fn wait_in_pre_tool_use(project: &Path, seconds: u64) {
    let path = project.join(".claude/settings.json");
    let mut settings = hooks_in(project);
    for group in settings["hooks"]["PreToolUse"].as_array_mut().unwrap() {
        for hook in group["hooks"].as_array_mut().unwrap() {
            let command = hook["command"].as_str().unwrap().to_string();
            hook["command"] = json!(format!("{command} --wait {seconds}"));
            hook["timeout"] = json!(seconds * 2);
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&settings).unwrap()).unwrap();
}

#[test]
fn sqlite_only_answers_given_while_the_hook_waits_reach_the_model_without_the_card() {
    crate::sqlite_only!();
    if claude().is_none() {
        return;
    }
    let _one = ONE_CLAUDE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new();
    wait_in_pre_tool_use(project.dir.path(), 60);
    let model = Model::start();
    let requests = std::thread::scope(|scope| {
        // The person, elsewhere (a phone, the inbox): answers the call's questions as
        // soon as they are in the ledger, while the hook waits.
        let person = scope.spawn(|| {
            let deadline = std::time::Instant::now() + Duration::from_secs(80);
            loop {
                let listed = project.ok(&["list", "--status", "pending", "--stage", "claude-code"]);
                let pending = listed["questions"].as_array().unwrap().clone();
                if pending.len() == 2 {
                    let id = |q: &Value| q["id"].to_string();
                    project.ok(&["answer", "--id", &id(&pending[0]), "--answer", "SQLite"]);
                    project.ok(&[
                        "answer",
                        "--id",
                        &id(&pending[1]),
                        "--select",
                        "Auth",
                        "--select",
                        "Export",
                    ]);
                    return true;
                }
                if std::time::Instant::now() > deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let requests = project.turn(&model, None);
        assert!(
            person.join().unwrap(),
            "the call's questions were never pending"
        );
        requests
    });
    assert!(requests.is_empty(), "the card was not shown: {requests:?}");
    let results = model.results();
    assert_eq!(results.len(), 1, "{results:?}");
    let text = tool_result_text(&results[0]);
    assert!(
        text.contains(&format!("\"{DATABASE}\"=\"SQLite\""))
            && text.contains(&format!("\"{FEATURES}\"=\"Auth, Export\"")),
        "the tool result holds both answers: {text}"
    );
    let all = project.all();
    assert_eq!(all.len(), 2, "the call's questions, logged once: {all:?}");
    for q in &all {
        assert_eq!(q["status"], "answered", "{q}");
        // The hook handed the answers to the tool.
        let history = project.ok(&["history", "--id", &q["id"].to_string()]);
        let last = history["events"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["event"], "delivered", "{history}");
    }
}

#[test]
fn sqlite_only_unanswered_questions_fall_through_to_the_card_and_its_answers_are_recorded() {
    crate::sqlite_only!();
    if claude().is_none() {
        return;
    }
    let _one = ONE_CLAUDE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new();
    let model = Model::start();

    // Nobody has answered: the hook logs the questions and stays out of the way, so
    // Claude Code asks its host to show the card. Here the host refuses.
    let requests = project.turn(&model, None);
    assert_eq!(requests.len(), 1, "the card was asked for: {requests:?}");
    assert_eq!(requests[0]["tool_name"], "AskUserQuestion");
    let all = project.all();
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|q| q["status"] == "pending"), "{all:?}");
    assert!(all[1]["multi_select"] == true);
    let results = model.results();
    assert_eq!(results[0]["is_error"], true, "{results:?}");

    // Asked again (a new session, so a new call, logged as its own questions), the
    // person answers in the card: PostToolUse records the answers to that call.
    let answers = json!({DATABASE: "PostgreSQL", FEATURES: "Search, Export"});
    let requests = project.turn(&model, Some(answers));
    assert_eq!(requests.len(), 1);
    let text = tool_result_text(&model.results()[1]);
    assert!(text.contains("\"PostgreSQL\""), "{text}");
    let all = project.all();
    assert_eq!(all.len(), 4, "each call's own questions: {all:?}");
    assert_ne!(all[0]["harness_call"], all[2]["harness_call"]);
    assert!(all[..2].iter().all(|q| q["status"] == "pending"), "{all:?}");
    assert_eq!(all[2]["answer"], "PostgreSQL");
    assert_eq!(all[2]["channel"], "claude-code");
    assert_eq!(all[2]["answered_by"], "dana");
    assert_eq!(all[3]["selected"], json!(["Search", "Export"]));
    assert_eq!(all[3]["channel"], "claude-code");
}

/// A laptop's hooks logging to the team's server with an agent token: what the person
/// chooses in the card reaches the model, and is recorded as the host's claim
/// (`host:NAME`), never as a person's answer the token could not prove.
#[test]
#[cfg(feature = "remote")]
fn sqlite_only_over_https_with_an_agent_token_the_card_s_answers_are_the_host_s_claim() {
    crate::sqlite_only!();
    if claude().is_none() {
        return;
    }
    let l = crate::common::Ledger::new();
    let Some((ca, leaf, key)) = crate::common::throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = l.ok([
        "token",
        "create",
        "laptop",
        "--agent",
        "--stages",
        "claude-code",
    ])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let s = crate::remote::served_tls(&l, &leaf, &key, &[]);
    let _one = ONE_CLAUDE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut project = Project::new();
    project.env = vec![
        ("QUESTIONS_DB".into(), s.base().into()),
        ("QUESTIONS_TOKEN".into(), agent.clone().into()),
        ("QUESTIONS_CA".into(), ca.clone().into()),
    ];
    let model = Model::start();
    let answers = json!({DATABASE: "PostgreSQL", FEATURES: "Search, Export"});
    let requests = project.turn(&model, Some(answers));
    assert_eq!(requests.len(), 1, "the card was shown: {requests:?}");
    let text = tool_result_text(&model.results()[0]);
    assert!(
        text.contains("\"PostgreSQL\""),
        "the model has the answer: {text}"
    );
    let all = l.ok(["list"])["questions"].as_array().unwrap().clone();
    assert_eq!(all.len(), 2, "logged on the server: {all:?}");
    assert_eq!(all[0]["answer"], "PostgreSQL", "{all:?}");
    assert_eq!(all[1]["selected"], json!(["Search", "Export"]), "{all:?}");
    for q in &all {
        assert_eq!(q["answered_by"], "host:laptop", "{q}");
        assert_eq!(q["channel"], "elicitation", "{q}");
    }
    assert_eq!(
        project.all().len(),
        0,
        "nothing in the project's own ledger"
    );
    for (path, text) in std::fs::read_dir(project.dir.path().join(".claude"))
        .unwrap()
        .flatten()
        .filter_map(|e| Some((e.path(), std::fs::read_to_string(e.path()).ok()?)))
    {
        assert!(!text.contains(&agent), "{path:?} holds the token");
    }
}

#[test]
fn sqlite_only_the_project_runs_questions_from_path_and_the_user_the_native_binary() {
    crate::sqlite_only!();
    let project = Project::new();
    let hooks = hooks_in(project.dir.path());
    let command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        command, "questions hook claude-code",
        "a file the team commits"
    );
    let user = project.ok(&["init", "claude-code", "--user", "--dry-run"]);
    let native = std::fs::canonicalize(BIN).unwrap();
    assert_eq!(user["command"], native.display().to_string());
}

#[test]
fn sqlite_only_answers_that_come_after_the_card_was_dismissed_are_handed_over_once_at_the_stop() {
    crate::sqlite_only!();
    if claude().is_none() {
        return;
    }
    let _one = ONE_CLAUDE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new();
    let model = Model::start();
    // The card is dismissed; meanwhile the person answers from elsewhere (the inbox).
    let requests = project.turn_with(&model, &|_input: &Value| {
        project.ok(&["answer", "--id", "1", "--answer", "SQLite"]);
        project.ok(&["answer", "--id", "2", "--select", "Export"]);
        json!({"behavior": "deny", "message": "dismissed"})
    });
    assert_eq!(requests.len(), 1);
    let results = model.results();
    assert_eq!(
        results.len(),
        2,
        "the refusal, then the turn the Stop hook kept going: {results:?}"
    );
    assert_eq!(results[0]["is_error"], true);
    let told = results[1]["content"].to_string();
    assert!(
        told.contains(r#"\"Which database should we use?\"=\"SQLite\""#)
            && told.contains(r#"\"Which features do you want?\"=\"Export\""#),
        "the model was handed both late answers: {told}"
    );
    // Once: the turn that went on ended without being kept going again (a third request
    // would be in the results).
    assert_eq!(project.all().len(), 2);
}

#[test]
fn sqlite_only_the_plugin_passes_claude_codes_own_validation() {
    crate::sqlite_only!();
    let Some(claude) = claude() else { return };
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/claude-code-plugin");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(claude)
        .args(["plugin", "validate"])
        .arg(&plugin)
        .env("HOME", home.path())
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Validation passed"), "{text}");
    assert!(!text.to_lowercase().contains("error"), "{text}");
    // What it provides: the three hooks on the hook command, and the MCP server.
    for part in [
        r#"PreToolUse AskUserQuestion command "questions hook claude-code""#,
        r#"PostToolUse AskUserQuestion command "questions hook claude-code""#,
        r#"Stop command "questions hook claude-code""#,
        r#"mcpServers: questions stdio questions ["mcp""#,
        "--no-votes",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
}
