//! End to end with the real Codex CLI, Gemini CLI and Claude Code (the npm packages
//! `@openai/codex`, `@google/gemini-cli` and `@anthropic-ai/claude-code`, which `.ci/run`
//! installs when missing), headless (`codex exec`, `gemini -p`, `claude -p`), each with
//! its model pointed at a scripted server on loopback: for Claude Code the Messages API
//! at `ANTHROPIC_BASE_URL`; for Codex
//! an OpenAI Responses API (`wire_api = "responses"`, server-sent events) named by a
//! provider in `CODEX_HOME/config.toml` whose `env_key` holds a dummy key; for Gemini the
//! Gemini API's `models/*:streamGenerateContent?alt=sse` at `GOOGLE_GEMINI_BASE_URL`.
//! The model calls one tool, then ends its turn once the conversation holds the tool's
//! result, which the test reads from that next request. The configs are the ones
//! `questions init codex|gemini` writes, plus the steps `init` names for the person
//! (trusting the project or folder, reviewing Codex's hooks, a user-scope policy for
//! Gemini), done here as the person would. The person answers with `questions answer` from
//! another process, on the ledger the gate reads (`QUESTIONS_DB`). No key, no network.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{bare_command, finish, skip, Run, BIN};

/// One harness at a time: two cores are shared with the rest of the suite.
static ONE_HARNESS: Mutex<()> = Mutex::new(());

const CACHE: &str = "Which cache should we use?";

/// The harness `program` from PATH (or `QUESTIONS_TEST_<PROGRAM>`), or None: the test is
/// then skipped, and says so (under CI it is required).
fn installed(program: &str, package: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(format!("QUESTIONS_TEST_{}", program.to_uppercase())) {
        return Some(path.into());
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        skip(&format!(
            "{program} is not installed: npm install -g {package} (.ci/run does)"
        ));
    }
    found
}

/// The model's reply to one request: its request line and body in, a content type and
/// body out.
type Reply = dyn Fn(&str, &Value) -> (&'static str, String) + Send + Sync;

/// The scripted model on loopback; it keeps every request it was sent.
struct Model {
    url: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Model {
    fn start(reply: Arc<Reply>) -> Model {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let address = crate::scripted::listen(move |line, request| {
            if !line.starts_with("POST") {
                // Model lists and the like: nothing to offer.
                let nothing = json!({"models": [], "data": []}).to_string();
                return ("200 OK", "application/json", nothing);
            }
            seen.lock()
                .unwrap()
                .push((line.to_string(), request.clone()));
            let (content_type, text) = reply(line, request);
            ("200 OK", content_type, text)
        });
        Model {
            url: format!("http://{address}"),
            requests,
        }
    }

    fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }
}

/// Codex's model: the OpenAI Responses API, streamed. While the input holds fewer
/// `function_call_output`s than there are `calls`, it answers with the next call (a
/// `function_call` item); then with a message, ending the turn.
fn responses(calls: Vec<Value>) -> Arc<Reply> {
    Arc::new(move |line, request| {
        if !line.contains("/responses") {
            return ("application/json", "{}".to_string());
        }
        let outputs = request["input"].as_array().map_or(0, |items| {
            items
                .iter()
                .filter(|i| i["type"] == "function_call_output")
                .count()
        });
        let item = match calls.get(outputs) {
            Some(call) => call.clone(),
            None => json!({"type": "message", "role": "assistant", "id": "msg_e2e",
                   "content": [{"type": "output_text", "text": "thanks"}]}),
        };
        let events = [
            json!({"type": "response.created", "response": {"id": "resp_e2e"}}),
            json!({"type": "response.output_item.done", "item": item}),
            json!({"type": "response.completed", "response": {"id": "resp_e2e", "usage": {
                "input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}}),
        ];
        let text = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect();
        ("text/event-stream", text)
    })
}

/// Gemini CLI's model: `streamGenerateContent` (server-sent events) and `countTokens`.
/// While the conversation holds fewer `functionResponse`s than there are `calls` and tools
/// are offered, it makes the next call; then it says a last word.
fn generate(calls: Vec<Value>) -> Arc<Reply> {
    Arc::new(move |line, request| {
        if line.contains(":countTokens") {
            return ("application/json", json!({"totalTokens": 10}).to_string());
        }
        let responses = request["contents"].as_array().map_or(0, |contents| {
            contents
                .iter()
                .filter_map(|c| c["parts"].as_array())
                .flatten()
                .filter(|p| p.get("functionResponse").is_some())
                .count()
        });
        let offered = request["tools"].as_array().is_some_and(|t| !t.is_empty());
        let part = match calls.get(responses) {
            Some(call) if offered => json!({"functionCall": call}),
            _ => json!({"text": "thanks"}),
        };
        let response = json!({
            "candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1,
                              "totalTokenCount": 2}});
        if line.contains("alt=sse") {
            ("text/event-stream", format!("data: {response}\r\n\r\n"))
        } else {
            ("application/json", response.to_string())
        }
    })
}

/// Claude Code's model: the Messages API, streamed or not. While the conversation holds
/// fewer `tool_result`s than there are `calls` and the next one's tool is offered, it makes
/// that call (a `tool_use` block); then it ends the turn.
fn messages(calls: Vec<Value>) -> Arc<Reply> {
    Arc::new(move |line, request| {
        if line.contains("/count_tokens") {
            return ("application/json", json!({"input_tokens": 10}).to_string());
        }
        let results = request["messages"].as_array().map_or(0, |m| {
            m.iter()
                .filter_map(|message| message["content"].as_array())
                .flatten()
                .filter(|b| b["type"] == "tool_result")
                .count()
        });
        let offered = |call: &Value| {
            request["tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|t| t["name"] == call["name"]))
        };
        let (block, stop) = match calls.get(results) {
            Some(call) if offered(call) => (call.clone(), "tool_use"),
            _ => (json!({"type": "text", "text": "thanks"}), "end_turn"),
        };
        crate::scripted::messages_reply(request, &block, stop)
    })
}

/// A git project whose harness config `questions init` wrote, a home of its own, and a
/// ledger elsewhere, named by `QUESTIONS_DB` for the harness, its hooks and servers, and
/// the person.
struct Project {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    ledger: tempfile::TempDir,
    /// PATH's `questions` here, as `init` names it in a project's files: the binary under
    /// test.
    bin: tempfile::TempDir,
}

impl Project {
    fn new(init: &[&str]) -> Project {
        let project = Project {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
            ledger: tempfile::tempdir().unwrap(),
            bin: tempfile::tempdir().unwrap(),
        };
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(project.root())
            .status()
            .expect("git runs");
        assert!(git.success());
        std::os::unix::fs::symlink(BIN, project.bin.path().join("questions")).unwrap();
        let mut args = vec!["init"];
        args.extend(init);
        let run = project.questions(&args);
        assert_eq!(run.code, 0, "{run:?}");
        project
    }

    /// The project's folder as the harnesses spell it (symbolic links resolved).
    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn db(&self) -> PathBuf {
        self.ledger.path().join("ledger.db")
    }

    /// `questions` in the project, on the ledger `QUESTIONS_DB` names.
    fn questions(&self, args: &[&str]) -> Run {
        let mut cmd = bare_command(&self.root());
        cmd.env("HOME", self.home.path())
            .env("PATH", self.path())
            .env("CODEX_HOME", self.home.path().join(".codex"))
            .env("QUESTIONS_DB", self.db())
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

    fn all(&self) -> Vec<Value> {
        let run = self.questions(&["list"]);
        assert_eq!(run.code, 0, "{run:?}");
        run.json["questions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The harness, as a person runs it in the project: nothing of this machine's
    /// environment but PATH.
    fn harness(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.root())
            .env_clear()
            .env("PATH", self.path())
            .env("HOME", self.home.path())
            .env("QUESTIONS_DB", self.db())
            .env("QUESTIONS_USER", "dana")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// The person, in another process: once a question is pending, `questions answer`
    /// gives it `answer`. Returns when it answered.
    fn answer_when_asked(&self, answer: &'static str) -> std::thread::JoinHandle<Option<Instant>> {
        let root = self.root();
        let db = self.db();
        let home = self.home.path().to_path_buf();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_mins(1);
            while Instant::now() < deadline {
                let mut list = bare_command(&root);
                list.env("QUESTIONS_DB", &db)
                    .env("HOME", &home)
                    .args(["list", "--status", "pending"]);
                let listed = finish(list);
                if let Some(id) = listed.json["questions"][0]["id"].as_i64() {
                    let mut cmd = bare_command(&root);
                    cmd.env("QUESTIONS_DB", &db)
                        .env("HOME", &home)
                        .env("QUESTIONS_USER", "dana")
                        .args(["answer", "--id", &id.to_string(), "--answer", answer]);
                    let run = finish(cmd);
                    assert_eq!(run.code, 0, "{run:?}");
                    return Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            None
        })
    }
}

/// The person, in another process, who answers `answer` only once the model was sent a
/// request for which `seen` holds (the ask's result, say). Returns when it answered.
fn answer_once(
    project: &Project,
    model: &Model,
    seen: fn(&Value) -> bool,
    answer: &'static str,
) -> std::thread::JoinHandle<Option<Instant>> {
    let requests = model.requests.clone();
    let root = project.root();
    let db = project.db();
    let home = project.home.path().to_path_buf();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_mins(2);
        while !requests.lock().unwrap().iter().any(|(_, r)| seen(r)) {
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut list = bare_command(&root);
        list.env("QUESTIONS_DB", &db)
            .env("HOME", &home)
            .args(["list", "--status", "pending"]);
        let id = finish(list).json["questions"][0]["id"].as_i64()?;
        let mut cmd = bare_command(&root);
        cmd.env("QUESTIONS_DB", &db)
            .env("HOME", &home)
            .env("QUESTIONS_USER", "dana")
            .args(["answer", "--id", &id.to_string(), "--answer", answer]);
        let run = finish(cmd);
        assert_eq!(run.code, 0, "{run:?}");
        Some(Instant::now())
    })
}

/// Runs `cmd` to its end (killed after `limit`), and returns its stdout; fails the test on
/// a failed exit, with what it printed.
fn run_to_end(mut cmd: Command, limit: Duration) -> String {
    let mut child = cmd.spawn().expect("the harness starts");
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if done_rx.recv_timeout(limit).is_err() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    });
    let mut stdout = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut stdout);
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let status = child.wait().unwrap();
    let _ = done_tx.send(());
    assert!(
        status.success(),
        "the harness failed: {status:?}\n{stdout}\n{stderr}"
    );
    stdout
}

/// What Codex sent the model as the tool's output (the last request's
/// `function_call_output`).
fn codex_tool_output(model: &Model) -> String {
    model
        .requests()
        .iter()
        .rev()
        .find_map(|(_, request)| {
            request["input"].as_array()?.iter().find_map(|item| {
                (item["type"] == "function_call_output").then(|| item["output"].to_string())
            })
        })
        .unwrap_or_default()
}

/// Codex, with its model provider in `CODEX_HOME/config.toml`.
fn codex_home(project: &Project, model: &Model) -> PathBuf {
    let home = project.home.path().join(".codex");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"scripted\"\nmodel_provider = \"scripted\"\n\n\
             [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n",
            model.url
        ),
    )
    .unwrap();
    home
}

fn codex_exec(project: &Project, codex: &Path, home: &Path, extra: &[&str]) -> String {
    let mut cmd = project.harness(codex);
    cmd.env("CODEX_HOME", home)
        .env("SCRIPTED_API_KEY", "not-a-key")
        .args(["exec", "--json"])
        .args(extra)
        .arg("Set up the project; ask me what you need.");
    run_to_end(cmd, Duration::from_mins(2))
}

/// `codex exec` calls the MCP `ask_questions` with what `init codex` wrote (the least grant
/// `approval_mode = "approve"`, `env_vars = ["QUESTIONS_DB"]`) and the project trusted
/// (`codex exec --trust`, the step `init` names); the call waits, `questions answer` from
/// another process answers, and the answer reaches the model's next request, from the
/// ledger the person and the gate use (none in the project).
#[test]
fn sqlite_only_codex_exec_asks_through_mcp_with_what_init_wrote() {
    crate::sqlite_only!();
    let Some(codex) = installed("codex", "@openai/codex@0.169.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["codex"]);
    let call = json!({"type": "function_call", "id": "fc_e2e", "call_id": "call_e2e",
        "namespace": "mcp__questions", "name": "ask_questions",
        "arguments": json!({"stage": "build", "wait_seconds": 40, "questions": [
            {"question": CACHE, "options": ["Redis", "memcached"]}]}).to_string()});
    let model = Model::start(responses(vec![call]));
    let home = codex_home(&project, &model);
    let person = project.answer_when_asked("memcached");
    let started = Instant::now();
    codex_exec(&project, &codex, &home, &["--trust"]);
    let answered = person
        .join()
        .unwrap()
        .expect("the question reached the ledger");
    let output = codex_tool_output(&model);
    assert!(
        output.contains(r#"\"status\":\"answered\""#) && output.contains("memcached"),
        "the answer reached the model: {output}"
    );
    assert!(
        answered.duration_since(started) < Duration::from_secs(40),
        "answered while the call waited"
    );
    let all = project.all();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["question"], CACHE);
    assert_eq!(all[0]["answer"], "memcached");
    assert!(
        !project.root().join(".questions").exists(),
        "the server wrote no other ledger in the project"
    );
}

/// Codex runs the hooks `init codex --wait` wrote once the project is trusted and each
/// hook reviewed: before the review, `init codex --check` says they will not run and
/// `codex exec` runs none (the question never reaches the ledger); after the person
/// trusts them (the state Codex's `/hooks` review writes into `CODEX_HOME/config.toml`,
/// with the hashes `--check` reports), its `PreToolUse` hook logs `request_user_input`'s
/// question, waits, and hands the model the answer given from another process. (Default
/// mode: Codex then reports the tool itself unavailable, but the hook's answer is what
/// the model reads.)
#[test]
fn sqlite_only_codex_exec_runs_the_hooks_only_once_reviewed_and_hands_the_answer() {
    crate::sqlite_only!();
    let Some(codex) = installed("codex", "@openai/codex@0.169.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["codex", "--wait", "30"]);
    let call = json!({"type": "function_call", "id": "fc_e2e", "call_id": "call_e2e",
        "name": "request_user_input",
        "arguments": json!({"questions": [{"id": "cache", "header": "Cache", "question": CACHE,
            "options": [{"label": "Redis", "description": "A server"},
                        {"label": "memcached", "description": "Simple"}]}]}).to_string()});
    let model = Model::start(responses(vec![call]));
    let home = codex_home(&project, &model);

    // Trusted project, hooks never reviewed: nothing runs, and --check says why.
    codex_exec(&project, &codex, &home, &["--trust"]);
    assert!(project.all().is_empty(), "an unreviewed hook ran");
    let check = project.questions(&["init", "codex", "--check"]);
    assert_eq!(check.code, 1, "{check:?}");
    assert_eq!(check.json["project_trusted"], true, "{check:?}");
    let hooks = check.json["hooks"].as_array().unwrap().clone();
    assert_eq!(hooks.len(), 2, "{check:?}");
    assert!(
        hooks.iter().all(|h| h["status"] == "untrusted"),
        "{check:?}"
    );

    // The person reviews and trusts them, as Codex's /hooks records it.
    let mut config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    for hook in &hooks {
        config.push_str(&format!(
            "\n[hooks.state.\"{}\"]\ntrusted_hash = \"{}\"\n",
            hook["key"].as_str().unwrap(),
            hook["hash"].as_str().unwrap()
        ));
    }
    std::fs::write(home.join("config.toml"), config).unwrap();
    let check = project.questions(&["init", "codex", "--check"]);
    assert_eq!(check.code, 0, "{check:?}");
    assert_eq!(check.json["hooks_will_run"], true, "{check:?}");

    let person = project.answer_when_asked("memcached");
    codex_exec(&project, &codex, &home, &[]);
    person
        .join()
        .unwrap()
        .expect("the hook logged the question");
    let output = codex_tool_output(&model);
    assert!(
        output.contains("memcached"),
        "the hook's answer reached the model: {output}"
    );
    let all = project.all();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["stage"], "codex");
    assert_eq!(all[0]["header"], "Cache");
    assert_eq!(all[0]["answer"], "memcached");
}

/// `gemini -p` calls the MCP `ask_questions` with what `init gemini` wrote, the folder
/// trusted and the user-scope policy rule `init` names (headless Gemini CLI lists an MCP
/// tool to the model only when a policy allows it); the call waits, `questions answer`
/// from another process answers, and the answer reaches the model's next request.
#[test]
fn sqlite_only_gemini_p_asks_through_mcp_with_what_init_wrote() {
    crate::sqlite_only!();
    let Some(gemini) = installed("gemini", "@google/gemini-cli@0.61.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["gemini"]);
    let call = json!({"name": "mcp_questions_ask_questions", "args": {
        "stage": "build", "wait_seconds": 40,
        "questions": [{"question": CACHE, "options": ["Redis", "memcached"]}]}});
    let model = Model::start(generate(vec![call]));
    // What the person does once: an API key chosen as the way in, the folder trusted, and
    // the policy rule.
    let dot = project.home.path().join(".gemini");
    std::fs::create_dir_all(dot.join("policies")).unwrap();
    std::fs::write(
        dot.join("settings.json"),
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dot.join("trustedFolders.json"),
        json!({project.root().display().to_string(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dot.join("policies/questions.toml"),
        "[[rule]]\nmcpName = \"questions\"\ntoolName = \"ask_questions\"\n\
         decision = \"allow\"\npriority = 100\n",
    )
    .unwrap();
    let person = project.answer_when_asked("memcached");
    let started = Instant::now();
    let mut cmd = project.harness(&gemini);
    cmd.env("GOOGLE_GEMINI_BASE_URL", &model.url)
        .env("GEMINI_API_KEY", "not-a-key")
        .env("GEMINI_CLI_NO_RELAUNCH", "true")
        .args([
            "-p",
            "Set up the project; ask me what you need.",
            "-m",
            "gemini-2.5-flash",
            "--output-format",
            "json",
        ]);
    let stdout = run_to_end(cmd, Duration::from_mins(2));
    let answered = person
        .join()
        .unwrap()
        .expect("the question reached the ledger");
    assert!(
        answered.duration_since(started) < Duration::from_secs(40),
        "answered while the call waited"
    );
    let response = model
        .requests()
        .iter()
        .rev()
        .find_map(|(_, request)| {
            request["contents"].as_array()?.iter().find_map(|c| {
                c["parts"].as_array()?.iter().find_map(|p| {
                    p.get("functionResponse")
                        .filter(|r| r["name"] == "mcp_questions_ask_questions")
                        .map(Value::to_string)
                })
            })
        })
        .unwrap_or_default();
    assert!(
        response.contains(r#"\"status\":\"answered\""#) && response.contains("memcached"),
        "the answer reached the model: {response}\n{stdout}"
    );
    let all = project.all();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["answer"], "memcached");
}

/// `claude -p` calls the MCP `ask_questions` with what `init claude-code` wrote (the
/// project's `.mcp.json`, and `permissions.allow` naming `mcp__questions__ask_questions`,
/// read once the workspace is trusted, the step `init` names: here the trust the dialog
/// records in `~/.claude.json`); the call waits, `questions answer` from another process
/// answers, and the answer reaches the model's next request. (`ENABLE_TOOL_SEARCH=false`
/// lists MCP tools to the scripted model at once, instead of behind `ToolSearch`.)
#[test]
fn sqlite_only_claude_p_asks_through_mcp_with_what_init_wrote() {
    crate::sqlite_only!();
    let Some(claude) = installed("claude", "@anthropic-ai/claude-code@2.1.330") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["claude-code"]);
    let call = json!({"type": "tool_use", "id": "toolu_e2e", "name": "mcp__questions__ask_questions",
        "input": {"stage": "build", "wait_seconds": 40,
                  "questions": [{"question": CACHE, "options": ["Redis", "memcached"]}]}});
    let model = Model::start(messages(vec![call]));
    std::fs::write(
        project.home.path().join(".claude.json"),
        json!({"projects": {project.root().display().to_string():
            {"hasTrustDialogAccepted": true}}})
        .to_string(),
    )
    .unwrap();
    let person = project.answer_when_asked("memcached");
    let started = Instant::now();
    let mut cmd = project.harness(&claude);
    cmd.env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .args([
            "-p",
            "Set up the project; ask me what you need.",
            "--output-format",
            "json",
        ]);
    let stdout = run_to_end(cmd, Duration::from_mins(2));
    let answered = person
        .join()
        .unwrap()
        .expect("the question reached the ledger");
    assert!(
        answered.duration_since(started) < Duration::from_secs(40),
        "answered while the call waited"
    );
    let result = model
        .requests()
        .iter()
        .rev()
        .find_map(|(_, request)| {
            request["messages"].as_array()?.iter().find_map(|m| {
                m["content"].as_array()?.iter().find_map(|b| {
                    (b["type"] == "tool_result" && b["tool_use_id"] == "toolu_e2e")
                        .then(|| b["content"].to_string())
                })
            })
        })
        .unwrap_or_default();
    assert!(
        result.contains(r#"\"status\":\"answered\""#) && result.contains("memcached"),
        "the answer reached the model: {result}\n{stdout}"
    );
    let all = project.all();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["answer"], "memcached");
}

/// A ledger served by `questions serve`, with an agent token for the sandbox and a person
/// token for dana.
#[cfg(all(feature = "serve", feature = "remote"))]
struct Server {
    ledger: crate::common::Ledger,
    served: crate::serve::Served,
    agent: String,
    dana: String,
}

#[cfg(all(feature = "serve", feature = "remote"))]
impl Server {
    fn start() -> Server {
        let ledger = crate::common::Ledger::new();
        let token = |args: &[&str]| {
            let mut all = vec!["token", "create"];
            all.extend_from_slice(args);
            ledger.ok(all)["token"].as_str().unwrap().to_string()
        };
        let agent = token(&["sandbox", "--agent", "--stages", "build"]);
        let dana = token(&["dana-laptop", "--person", "dana"]);
        let served = crate::serve::Served::start(&ledger, &[]);
        Server {
            ledger,
            served,
            agent,
            dana,
        }
    }

    /// What the person answered, through their token, as the ledger records it.
    fn answered_by_dana(&self, answer: &str) {
        let all = self.ledger.all();
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0]["answer"], answer);
        assert_eq!(all[0]["answered_by"], "dana");
        assert_eq!(all[0]["channel"], "api");
    }
}

/// The person, elsewhere, with their own token through the same server (`questions --db
/// http://…`): once a question is pending, they answer it. Returns when they answered.
#[cfg(all(feature = "serve", feature = "remote"))]
fn answer_through(
    project: &Project,
    base: &str,
    token: &str,
    answer: &'static str,
) -> std::thread::JoinHandle<Option<Instant>> {
    let (root, base, token) = (project.root(), base.to_string(), token.to_string());
    std::thread::spawn(move || {
        let remote = |args: &[&str]| {
            let mut cmd = bare_command(&root);
            cmd.env("QUESTIONS_TOKEN", &token)
                .args(["--db", &base])
                .args(args);
            finish(cmd)
        };
        let deadline = Instant::now() + Duration::from_mins(1);
        while Instant::now() < deadline {
            let listed = remote(&["list", "--status", "pending"]);
            if let Some(id) = listed.json["questions"][0]["id"].as_i64() {
                let run = remote(&["answer", "--id", &id.to_string(), "--answer", answer]);
                assert_eq!(run.code, 0, "{run:?}");
                return Some(Instant::now());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        None
    })
}

/// `codex exec` in a sandbox that cannot start `questions`: it reaches `questions serve`'s
/// `/mcp` with what `init codex --url` wrote (`url` and `bearer_token_env_var`, the agent
/// token in that variable only, and the least grant `approval_mode = "approve"`); the
/// person answers with their own token, and the answer reaches the model.
#[cfg(all(feature = "serve", feature = "remote"))]
#[test]
fn sqlite_only_codex_exec_asks_through_serve_over_http_with_what_init_url_wrote() {
    crate::sqlite_only!();
    let Some(codex) = installed("codex", "@openai/codex@0.169.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let server = Server::start();
    let base = server.served.base();
    let project = Project::new(&["codex", "--url", &base]);
    let config = std::fs::read_to_string(project.root().join(".codex/config.toml")).unwrap();
    assert!(
        config.contains("bearer_token_env_var = \"QUESTIONS_TOKEN\"")
            && !config.contains(&server.agent),
        "{config}"
    );
    let call = json!({"type": "function_call", "id": "fc_http", "call_id": "call_http",
        "namespace": "mcp__questions", "name": "ask_questions",
        "arguments": json!({"stage": "build", "wait_seconds": 40, "questions": [
            {"question": CACHE, "options": ["Redis", "memcached"]}]}).to_string()});
    let model = Model::start(responses(vec![call]));
    let home = codex_home(&project, &model);
    let person = answer_through(&project, &base, &server.dana, "memcached");
    let started = Instant::now();
    let mut cmd = project.harness(&codex);
    cmd.env_remove("QUESTIONS_DB")
        .env("QUESTIONS_TOKEN", &server.agent)
        .env("CODEX_HOME", &home)
        .env("SCRIPTED_API_KEY", "not-a-key")
        .args(["exec", "--json", "--trust"])
        .arg("Set up the project; ask me what you need.");
    run_to_end(cmd, Duration::from_mins(2));
    let answered = person
        .join()
        .unwrap()
        .expect("the question reached the server's ledger");
    let output = codex_tool_output(&model);
    assert!(
        output.contains(r#"\"status\":\"answered\""#) && output.contains("memcached"),
        "the answer reached the model: {output}"
    );
    assert!(
        answered.duration_since(started) < Duration::from_secs(40),
        "answered while the call waited"
    );
    server.answered_by_dana("memcached");
    assert!(!project.root().join(".questions").exists());
}

/// `gemini -p` in a sandbox that cannot start `questions`: it reaches `questions serve`'s
/// `/mcp` with what `init gemini --url` wrote (`httpUrl`, and a header whose
/// `${QUESTIONS_TOKEN}` Gemini CLI expands from its environment), the folder trusted and
/// the policy rule as for the stdio entry; the person answers with their own token, and
/// the answer reaches the model.
#[cfg(all(feature = "serve", feature = "remote"))]
#[test]
fn sqlite_only_gemini_p_asks_through_serve_over_http_with_what_init_url_wrote() {
    crate::sqlite_only!();
    let Some(gemini) = installed("gemini", "@google/gemini-cli@0.61.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let server = Server::start();
    let base = server.served.base();
    let project = Project::new(&["gemini", "--url", &base]);
    let config = std::fs::read_to_string(project.root().join(".gemini/settings.json")).unwrap();
    assert!(
        config.contains("Bearer ${QUESTIONS_TOKEN}") && !config.contains(&server.agent),
        "{config}"
    );
    let call = json!({"name": "mcp_questions_ask_questions", "args": {
        "stage": "build", "wait_seconds": 40,
        "questions": [{"question": CACHE, "options": ["Redis", "memcached"]}]}});
    let model = Model::start(generate(vec![call]));
    let dot = project.home.path().join(".gemini");
    std::fs::create_dir_all(dot.join("policies")).unwrap();
    std::fs::write(
        dot.join("settings.json"),
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dot.join("trustedFolders.json"),
        json!({project.root().display().to_string(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dot.join("policies/questions.toml"),
        "[[rule]]\nmcpName = \"questions\"\ntoolName = \"ask_questions\"\n\
         decision = \"allow\"\npriority = 100\n",
    )
    .unwrap();
    let person = answer_through(&project, &base, &server.dana, "memcached");
    let started = Instant::now();
    let mut cmd = project.harness(&gemini);
    cmd.env_remove("QUESTIONS_DB")
        .env("QUESTIONS_TOKEN", &server.agent)
        .env("GOOGLE_GEMINI_BASE_URL", &model.url)
        .env("GEMINI_API_KEY", "not-a-key")
        .env("GEMINI_CLI_NO_RELAUNCH", "true")
        .args([
            "-p",
            "Set up the project; ask me what you need.",
            "-m",
            "gemini-2.5-flash",
            "--output-format",
            "json",
        ]);
    let stdout = run_to_end(cmd, Duration::from_mins(2));
    let answered = person
        .join()
        .unwrap()
        .unwrap_or_else(|| panic!("the question reached the server's ledger: {stdout}"));
    assert!(
        answered.duration_since(started) < Duration::from_secs(40),
        "answered while the call waited"
    );
    let response = model
        .requests()
        .iter()
        .rev()
        .find_map(|(_, request)| {
            request["contents"].as_array()?.iter().find_map(|c| {
                c["parts"].as_array()?.iter().find_map(|p| {
                    p.get("functionResponse")
                        .filter(|r| r["name"] == "mcp_questions_ask_questions")
                        .map(Value::to_string)
                })
            })
        })
        .unwrap_or_default();
    assert!(
        response.contains(r#"\"status\":\"answered\""#) && response.contains("memcached"),
        "the answer reached the model: {response}\n{stdout}"
    );
    server.answered_by_dana("memcached");
}

/// `claude -p` in a sandbox that cannot start `questions`: it reaches `questions serve`'s
/// `/mcp` with what `init claude-code --url` wrote (a `.mcp.json` entry of type http whose
/// `Authorization` header is `Bearer ${QUESTIONS_TOKEN}`, expanded by Claude Code from its
/// environment, where an agent token is; no token in any file). The model calls
/// `ask_questions`, the person answers with their own person token through the same
/// server (`questions --db http://…`), and the answer reaches the model.
#[cfg(all(feature = "serve", feature = "remote"))]
#[test]
fn sqlite_only_claude_p_asks_through_serve_over_http_with_what_init_url_wrote() {
    crate::sqlite_only!();
    let Some(claude) = installed("claude", "@anthropic-ai/claude-code@2.1.330") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let server = Server::start();
    let (agent, dana) = (server.agent.clone(), server.dana.clone());
    let base = server.served.base();
    let project = Project::new(&["claude-code", "--url", &base]);
    let config = std::fs::read_to_string(project.root().join(".mcp.json")).unwrap();
    assert!(
        config.contains("Bearer ${QUESTIONS_TOKEN}") && !config.contains(&agent),
        "{config}"
    );
    let call = json!({"type": "tool_use", "id": "toolu_http", "name": "mcp__questions__ask_questions",
        "input": {"stage": "build", "wait_seconds": 40,
                  "questions": [{"question": CACHE, "options": ["Redis", "memcached"]}]}});
    let model = Model::start(messages(vec![call]));
    std::fs::write(
        project.home.path().join(".claude.json"),
        json!({"projects": {project.root().display().to_string():
            {"hasTrustDialogAccepted": true}}})
        .to_string(),
    )
    .unwrap();
    let person = answer_through(&project, &base, &dana, "memcached");
    let started = Instant::now();
    let mut cmd = project.harness(&claude);
    cmd.env_remove("QUESTIONS_DB")
        .env("QUESTIONS_TOKEN", &agent)
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .args([
            "-p",
            "Set up the project; ask me what you need.",
            "--output-format",
            "json",
        ]);
    let stdout = run_to_end(cmd, Duration::from_mins(2));
    let answered = person
        .join()
        .unwrap()
        .expect("the question reached the server's ledger");
    assert!(
        answered.duration_since(started) < Duration::from_secs(40),
        "answered while the call waited"
    );
    let result = model
        .requests()
        .iter()
        .rev()
        .find_map(|(_, request)| {
            request["messages"].as_array()?.iter().find_map(|m| {
                m["content"].as_array()?.iter().find_map(|b| {
                    (b["type"] == "tool_result" && b["tool_use_id"] == "toolu_http")
                        .then(|| b["content"].to_string())
                })
            })
        })
        .unwrap_or_default();
    assert!(
        result.contains(r#"\"status\":\"answered\""#) && result.contains("memcached"),
        "the answer reached the model: {result}\n{stdout}"
    );
    server.answered_by_dana("memcached");
    // Nothing in the project: the ledger is the server's.
    assert!(!project.root().join(".questions").exists());
}

/// An ask that returns before anyone answered (a short `wait_seconds`, as the 50 s cap
/// makes of any long one) tells the agent to call `wait_for_answers`; headless, each host
/// must be allowed that call by what `init` wrote, or the agent never gets its answer.
fn ask_briefly() -> Value {
    json!({"stage": "build", "wait_seconds": 0,
           "questions": [{"question": CACHE, "options": ["Redis", "memcached"]}]})
}

fn wait_args() -> Value {
    json!({"stage": "build", "timeout_seconds": 40})
}

/// `claude -p` with what `init claude-code` wrote collects a late answer: its
/// `ask_questions` returns pending, the person answers after that result reached the
/// model, and `wait_for_answers` (granted by `init`, not by the test) hands it over.
#[test]
fn sqlite_only_claude_p_collects_a_late_answer_with_wait_for_answers_init_granted() {
    crate::sqlite_only!();
    let Some(claude) = installed("claude", "@anthropic-ai/claude-code@2.1.330") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["claude-code"]);
    let model = Model::start(messages(vec![
        json!({"type": "tool_use", "id": "toolu_ask", "name": "mcp__questions__ask_questions",
               "input": ask_briefly()}),
        json!({"type": "tool_use", "id": "toolu_wait",
               "name": "mcp__questions__wait_for_answers", "input": wait_args()}),
    ]));
    std::fs::write(
        project.home.path().join(".claude.json"),
        json!({"projects": {project.root().display().to_string():
            {"hasTrustDialogAccepted": true}}})
        .to_string(),
    )
    .unwrap();
    let person = answer_once(
        &project,
        &model,
        |r| r.to_string().contains("toolu_ask") && r.to_string().contains("tool_result"),
        "memcached",
    );
    let mut cmd = project.harness(&claude);
    cmd.env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .args([
            "-p",
            "Set up the project; ask me what you need.",
            "--output-format",
            "json",
        ]);
    let stdout = run_to_end(cmd, Duration::from_mins(2));
    person
        .join()
        .unwrap()
        .expect("the ask's result reached the model");
    let result_of = |id: &str| {
        model.requests().iter().rev().find_map(|(_, request)| {
            request["messages"].as_array()?.iter().find_map(|m| {
                m["content"].as_array()?.iter().find_map(|b| {
                    (b["type"] == "tool_result" && b["tool_use_id"] == id)
                        .then(|| b["content"].to_string())
                })
            })
        })
    };
    let asked = result_of("toolu_ask").unwrap_or_default();
    assert!(asked.contains("pending"), "{asked}\n{stdout}");
    let waited = result_of("toolu_wait").unwrap_or_default();
    assert!(
        waited.contains("memcached") && waited.contains(r#"\"settled\":true"#),
        "wait_for_answers handed the answer over: {waited}\n{stdout}"
    );
}

/// `gemini -p` with what `init gemini` and `init gemini --user` wrote (the user's policy
/// rules, which headless Gemini CLI needs to list a tool at all) collects a late answer
/// through `wait_for_answers`.
#[test]
fn sqlite_only_gemini_p_collects_a_late_answer_with_the_policy_init_user_wrote() {
    crate::sqlite_only!();
    let Some(gemini) = installed("gemini", "@google/gemini-cli@0.61.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["gemini"]);
    let dot = project.home.path().join(".gemini");
    std::fs::create_dir_all(&dot).unwrap();
    std::fs::write(
        dot.join("settings.json"),
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dot.join("trustedFolders.json"),
        json!({project.root().display().to_string(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    let user = project.questions(&["init", "gemini", "--user"]);
    assert_eq!(user.code, 0, "{user:?}");
    let policy = std::fs::read_to_string(dot.join("policies/questions.toml")).unwrap();
    assert!(policy.contains("wait_for_answers"), "{policy}");
    let model = Model::start(generate(vec![
        json!({"name": "mcp_questions_ask_questions", "args": ask_briefly()}),
        json!({"name": "mcp_questions_wait_for_answers", "args": wait_args()}),
    ]));
    let person = answer_once(
        &project,
        &model,
        |r| r.to_string().contains("functionResponse"),
        "memcached",
    );
    let mut cmd = project.harness(&gemini);
    cmd.env("GOOGLE_GEMINI_BASE_URL", &model.url)
        .env("GEMINI_API_KEY", "not-a-key")
        .env("GEMINI_CLI_NO_RELAUNCH", "true")
        .args([
            "-p",
            "Set up the project; ask me what you need.",
            "-m",
            "gemini-2.5-flash",
            "--output-format",
            "json",
        ]);
    let stdout = run_to_end(cmd, Duration::from_mins(2));
    person
        .join()
        .unwrap()
        .expect("the ask's result reached the model");
    let waited = model
        .requests()
        .iter()
        .rev()
        .find_map(|(_, request)| {
            request["contents"].as_array()?.iter().find_map(|c| {
                c["parts"].as_array()?.iter().find_map(|p| {
                    p.get("functionResponse")
                        .filter(|r| r["name"] == "mcp_questions_wait_for_answers")
                        .map(Value::to_string)
                })
            })
        })
        .unwrap_or_default();
    assert!(
        waited.contains("memcached") && waited.contains(r#"\"settled\":true"#),
        "wait_for_answers handed the answer over: {waited}\n{stdout}"
    );
}

/// `codex exec` with what `init codex` wrote collects a late answer through
/// `wait_for_answers`, approved by the same least grant as `ask_questions`.
#[test]
fn sqlite_only_codex_exec_collects_a_late_answer_with_wait_for_answers_init_granted() {
    crate::sqlite_only!();
    let Some(codex) = installed("codex", "@openai/codex@0.169.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["codex"]);
    let call = |id: &str, name: &str, args: Value| {
        json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
               "namespace": "mcp__questions", "name": name, "arguments": args.to_string()})
    };
    let model = Model::start(responses(vec![
        call("ask", "ask_questions", ask_briefly()),
        call("wait", "wait_for_answers", wait_args()),
    ]));
    let home = codex_home(&project, &model);
    let person = answer_once(
        &project,
        &model,
        |r| r.to_string().contains("function_call_output"),
        "memcached",
    );
    codex_exec(&project, &codex, &home, &["--trust"]);
    person
        .join()
        .unwrap()
        .expect("the ask's result reached the model");
    let waited = model
        .requests()
        .iter()
        .rev()
        .find_map(|(_, request)| {
            request["input"].as_array()?.iter().find_map(|item| {
                (item["type"] == "function_call_output" && item["call_id"] == "call_wait")
                    .then(|| item["output"].to_string())
            })
        })
        .unwrap_or_default();
    assert!(
        waited.contains("memcached") && waited.contains(r#"\"settled\":true"#),
        "wait_for_answers handed the answer over: {waited}"
    );
}

/// Codex's TUI leaves an app-server daemon and its updater running from `CODEX_HOME`
/// (`app-server-daemon/daemon.pid`, `daemon-updater.pid`); they are ended with the test.
struct CodexDaemons(PathBuf);

impl Drop for CodexDaemons {
    fn drop(&mut self) {
        for file in ["daemon.pid", "daemon-updater.pid"] {
            let path = self.0.join("app-server-daemon").join(file);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let pid = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["pid"].as_u64());
            if let Some(pid) = pid {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
    }
}

/// A harness's TUI in a tmux session of its own (a server on a socket of its own), as a
/// person at a terminal drives it; ended, with its server, when dropped.
struct Tui {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tui {
    /// Starts `command` (one shell line) in `cwd`; None, and the test skipped, without
    /// tmux.
    fn start(cwd: &Path, command: &str) -> Option<Tui> {
        installed("tmux", "tmux (a Debian package)")?;
        let dir = tempfile::tempdir().unwrap();
        let tui = Tui {
            socket: dir.path().join("tmux"),
            _dir: dir,
        };
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&tui.socket)
            .args(["new-session", "-d", "-x", "160", "-y", "45", "-c"])
            .arg(cwd)
            .arg(command)
            .status()
            .expect("tmux runs");
        assert!(status.success());
        Some(tui)
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-p"])
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `text`; fails the test, with the screen, if it never
    /// does.
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_mins(1);
        while Instant::now() < deadline {
            if self.screen().contains(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("the screen never showed {text:?}:\n{}", self.screen());
    }

    /// Sends `keys` until the screen, once settled, shows `text` (a screen that takes keys
    /// only once it has settled); fails the test if it never does. The keys go again only
    /// when a settled screen does not show it: a slow screen can show the first keys after
    /// the next are sent, and a key that cycles (Shift+Tab through the modes) would then
    /// have gone past, so `text` is what the screen says now (a mode's footer), not what
    /// its history once said.
    fn until(&self, text: &str, keys: &[&str]) {
        for _ in 0..10 {
            let before = self.settled();
            if before.contains(text) {
                return;
            }
            self.keys(keys);
            // Taken when the screen changes; sent again after a while when it does not.
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && self.screen() == before {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        panic!("the screen never showed {text:?}:\n{}", self.screen());
    }

    /// The screen once two looks a second apart agree (or after 30 s of change).
    fn settled(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = self.screen();
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let now = self.screen();
            if now == last || Instant::now() > deadline {
                return now;
            }
            last = now;
        }
    }

    /// Keys by tmux's names (`Enter`, `Down`, `Tab`, `BTab`), one at a time.
    fn keys(&self, keys: &[&str]) {
        for key in keys {
            let status = Command::new("tmux")
                .arg("-S")
                .arg(&self.socket)
                .args(["send-keys", key])
                .status()
                .expect("tmux runs");
            assert!(status.success());
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Text typed as is.
    fn type_text(&self, text: &str) {
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["send-keys", "-l", text])
            .status()
            .expect("tmux runs");
        assert!(status.success());
        std::thread::sleep(Duration::from_secs(1));
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // The pane's process leads its own process group: the harness and whatever it
        // started (Gemini CLI relaunches itself as a child) end with it.
        let pane = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["display-message", "-p", "#{pane_pid}"])
            .output();
        if let Ok(pane) = pane {
            let pid = String::from_utf8_lossy(&pane.stdout).trim().to_string();
            if !pid.is_empty() {
                let _ = Command::new("kill")
                    .args(["-TERM", "--", &format!("-{pid}")])
                    .status();
            }
        }
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

/// `env -i NAME=VALUE … program args`, one shell line, each word quoted.
fn shell_line(env: &[(&str, String)], program: &Path, args: &[&str]) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut words = vec!["exec".to_string(), "env".to_string(), "-i".to_string()];
    words.extend(env.iter().map(|(k, v)| quote(&format!("{k}={v}"))));
    words.push(quote(&program.display().to_string()));
    words.extend(args.iter().map(|a| quote(a)));
    words.join(" ")
}

/// Until the ledger holds an answered question (or a minute passed): its questions.
fn answered(project: &Project) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_mins(1);
    loop {
        let all = project.all();
        if all.iter().any(|q| q["status"] == "answered") || Instant::now() > deadline {
            return all;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Codex's TUI in Plan mode, where `request_user_input` shows its card: with the project
/// trusted and the hooks reviewed, the question is logged by the `PreToolUse` hook, and
/// the person's own words on the card ("None of the above" and a note) are recorded
/// verbatim by the `PostToolUse` hook.
#[test]
fn sqlite_only_codex_tui_plan_mode_card_note_is_recorded_verbatim() {
    crate::sqlite_only!();
    let Some(codex) = installed("codex", "@openai/codex@0.169.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["codex"]);
    let call = json!({"type": "function_call", "id": "fc_e2e", "call_id": "call_e2e",
        "name": "request_user_input",
        "arguments": json!({"questions": [{"id": "cache", "header": "Cache", "question": CACHE,
            "options": [{"label": "Redis (Recommended)", "description": "A server"},
                        {"label": "memcached", "description": "Simple"}]}]}).to_string()});
    let model = Model::start(responses(vec![call]));
    let home = codex_home(&project, &model);
    let check = project.questions(&["init", "codex", "--check"]);
    let mut config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    config.push_str(&format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        project.root().display()
    ));
    for hook in check.json["hooks"].as_array().unwrap() {
        config.push_str(&format!(
            "\n[hooks.state.\"{}\"]\ntrusted_hash = \"{}\"\n",
            hook["key"].as_str().unwrap(),
            hook["hash"].as_str().unwrap()
        ));
    }
    std::fs::write(home.join("config.toml"), config).unwrap();
    let env = [
        ("PATH", project.path().to_string_lossy().into_owned()),
        ("HOME", project.home.path().display().to_string()),
        ("CODEX_HOME", home.display().to_string()),
        ("TERM", "xterm-256color".to_string()),
        ("SCRIPTED_API_KEY", "not-a-key".to_string()),
        ("QUESTIONS_DB", project.db().display().to_string()),
    ];
    let Some(tui) = Tui::start(&project.root(), &shell_line(&env, &codex, &[])) else {
        return;
    };
    let _daemons = CodexDaemons(home.clone());
    tui.wait_for("Ask Codex to do anything");
    // Shift+Tab cycles to Plan mode once the composer takes keys: the footer says which
    // mode it is in (the history keeps every change's line).
    tui.until("Plan mode (shift+tab to cycle)", &["BTab"]);
    tui.type_text("Set up the project; ask me what you need.");
    tui.keys(&["Enter"]);
    tui.wait_for("None of the above");
    assert_eq!(project.all().len(), 1, "logged before the card showed");
    tui.keys(&["Down", "Down", "Tab"]);
    tui.type_text("Use Valkey, it is what ops runs");
    tui.keys(&["Enter"]);
    let all = answered(&project);
    assert_eq!(all.len(), 1, "{all:?}\n{}", tui.screen());
    assert_eq!(
        all[0]["answer"], "Use Valkey, it is what ops runs",
        "{all:?}"
    );
    assert_eq!(all[0]["was_custom"], true);
    assert_eq!(all[0]["channel"], "codex");
}

/// Gemini CLI's TUI, where `ask_user` shows its card: the `BeforeTool` hook `init gemini`
/// wrote logs the question, and the person's custom value on the card is recorded
/// verbatim by the `AfterTool` hook.
#[test]
fn sqlite_only_gemini_tui_card_custom_value_is_recorded_verbatim() {
    crate::sqlite_only!();
    let Some(gemini) = installed("gemini", "@google/gemini-cli@0.61.0") else {
        return;
    };
    let _one = ONE_HARNESS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let project = Project::new(&["gemini"]);
    let call = json!({"name": "ask_user", "args": {"questions": [{
        "question": CACHE, "header": "Cache", "type": "choice", "multiSelect": false,
        "options": [{"label": "Redis", "description": "A server"},
                    {"label": "memcached", "description": "Simple"}]}]}});
    let model = Model::start(generate(vec![call]));
    let dot = project.home.path().join(".gemini");
    std::fs::create_dir_all(&dot).unwrap();
    std::fs::write(
        dot.join("settings.json"),
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dot.join("trustedFolders.json"),
        json!({project.root().display().to_string(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    let env = [
        ("PATH", project.path().to_string_lossy().into_owned()),
        ("HOME", project.home.path().display().to_string()),
        ("TERM", "xterm-256color".to_string()),
        ("GOOGLE_GEMINI_BASE_URL", model.url.clone()),
        ("GEMINI_API_KEY", "not-a-key".to_string()),
        ("QUESTIONS_DB", project.db().display().to_string()),
    ];
    let line = shell_line(&env, &gemini, &["-m", "gemini-2.5-flash"]);
    let Some(tui) = Tui::start(&project.root(), &line) else {
        return;
    };
    tui.wait_for("Type your message");
    tui.type_text("Set up the project; ask me what you need.");
    tui.keys(&["Enter"]);
    tui.wait_for("Enter a custom value");
    assert_eq!(project.all().len(), 1, "logged before the card showed");
    tui.keys(&["Down", "Down", "Enter"]);
    tui.type_text("Valkey, what ops runs");
    tui.keys(&["Enter"]);
    let all = answered(&project);
    assert_eq!(all.len(), 1, "{all:?}\n{}", tui.screen());
    assert_eq!(all[0]["answer"], "Valkey, what ops runs", "{all:?}");
    assert_eq!(all[0]["was_custom"], true);
    assert_eq!(all[0]["channel"], "gemini");
}
