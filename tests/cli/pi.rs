//! End to end with the real pi (the npm package `@mariozechner/pi-coding-agent`, which
//! `.ci/run` installs when `pi` is missing), driven by a scripted model on loopback (an
//! OpenAI chat-completions server named in `PI_CODING_AGENT_DIR/models.json`, a dummy
//! key, `PI_OFFLINE=1`): no key, no network. The project has what `questions init pi`
//! writes and nothing else; pi loads the extension from `.pi/extensions/`. The model calls
//! `ask_user` while the conversation's last message is the person's, and records the
//! tool's result; every answer is given from another process (`questions answer`,
//! `decline`, `skip`), or in pi's own dialog in the TUI (under tmux).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{bare_command, finish, Run, BIN};

/// One pi at a time: two cores are shared with the rest of the suite.
static ONE_PI: Mutex<()> = Mutex::new(());

const DATABASE: &str = "Which database should we use?";

fn ask() -> Value {
    json!({"questions": [
        {"question": DATABASE, "header": "Database",
         "options": [{"label": "PostgreSQL (Recommended)", "description": "Battle-tested relational DB"},
                     {"label": "SQLite", "description": "Lightweight, file-based"}]}
    ], "metadata": {"source": "project-setup"}})
}

/// The real pi, or None: the test is then skipped, and says so (under CI it fails).
fn pi() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("pi"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        crate::common::skip(
            "pi is not installed: npm install -g @mariozechner/pi-coding-agent@0.73.1 (.ci/run does)",
        );
    }
    found
}

fn tmux() -> bool {
    let found = Command::new("tmux").arg("-V").output().is_ok();
    if !found {
        crate::common::skip("tmux is not installed (.ci/run installs it from Debian)");
    }
    found
}

/// The scripted model: asks with `ask_user` while the last message is the person's; the
/// tool's results, and every request's messages, are kept.
struct Model {
    url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Model {
    fn start() -> Model {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let address = crate::scripted::listen(move |_, request| {
            let n = {
                let mut seen = seen.lock().unwrap();
                seen.push(request.clone());
                seen.len()
            };
            ("200 OK", "text/event-stream", turn(request, n))
        });
        Model {
            url: format!("http://{address}/v1"),
            requests,
        }
    }

    /// The tool results the model was sent, as text, in order.
    fn results(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| r["messages"].as_array()?.last().cloned())
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Every tool message of the last request (a resumed session's included).
    fn last_tool_messages(&self) -> Vec<String> {
        let requests = self.requests.lock().unwrap();
        requests
            .last()
            .and_then(|r| r["messages"].as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn requests(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// The model's turn, streamed as chat completions: `ask_user` while the last message is
/// the person's (the `n`th request's call), a last word once the tool answered.
fn turn(request: &Value, n: usize) -> String {
    let last_is_tool = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let delta = if last_is_tool {
        json!({"role": "assistant", "content": "done"})
    } else {
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{n}"),
            "type": "function", "function": {"name": "ask_user", "arguments": ask().to_string()}}]})
    };
    let finish = if last_is_tool { "stop" } else { "tool_calls" };
    let chunk = |choice: Value| {
        json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
               "choices": [choice]})
    };
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(json!({"index": 0, "delta": delta})),
        chunk(json!({"index": 0, "delta": {}, "finish_reason": finish}))
    )
}

/// A git project where `questions init pi` ran, pi's own folder pointed at the model, and
/// a home of its own.
struct Project {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    agent: tempfile::TempDir,
    bin: tempfile::TempDir,
    model: Model,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::create_dir(dir.path().join(".questions")).unwrap();
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(BIN, bin.path().join("questions")).unwrap();
        let model = Model::start();
        let agent = tempfile::tempdir().unwrap();
        let models = json!({"providers": {"scripted": {
            "baseUrl": model.url, "api": "openai-completions", "apiKey": "dummy",
            "models": [{"id": "scripted-model", "name": "Scripted"}]}}});
        std::fs::write(agent.path().join("models.json"), models.to_string()).unwrap();
        let project = Project {
            dir,
            home: tempfile::tempdir().unwrap(),
            agent,
            bin,
            model,
        };
        let init = project.questions(&["init", "pi"]);
        assert_eq!(init.code, 0, "{init:?}");
        project
    }

    fn path(&self, with_questions: bool) -> std::ffi::OsString {
        let mut dirs = Vec::new();
        if with_questions {
            dirs.push(self.bin.path().to_path_buf());
        }
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(dirs).unwrap()
    }

    fn questions(&self, args: &[&str]) -> Run {
        let mut cmd = bare_command(self.dir.path());
        cmd.env("HOME", self.home.path())
            .env("PATH", self.path(true))
            .args(args);
        finish(cmd)
    }

    fn ok(&self, args: &[&str]) -> Value {
        let run = self.questions(args);
        assert_eq!(run.code, 0, "{run:?}");
        run.json
    }

    fn all(&self) -> Vec<Value> {
        self.ok(&["list"])["questions"].as_array().unwrap().clone()
    }

    /// pi in the project, with `args`, its environment the test's own.
    fn pi(&self, args: &[&str], with_questions: bool) -> Command {
        let mut cmd = Command::new(pi_path());
        cmd.current_dir(self.dir.path())
            .env("HOME", self.home.path())
            .env("PATH", self.path(with_questions))
            .env("PI_CODING_AGENT_DIR", self.agent.path())
            .env("PI_OFFLINE", "1")
            .env_remove("QUESTIONS_DB")
            .env_remove("QUESTIONS_STAGE")
            .env_remove("QUESTIONS_BINARY")
            .env_remove("QUESTIONS_USER")
            .args(["--provider", "scripted", "--model", "scripted-model"])
            .args(args);
        cmd
    }

    /// The pending questions, once there are `n` of them (within 30 s).
    fn pending(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let pending: Vec<Value> = self
                .all()
                .into_iter()
                .filter(|q| q["status"] == "pending")
                .collect();
            if pending.len() >= n {
                return pending;
            }
            assert!(
                Instant::now() < deadline,
                "no question was asked: {:?}",
                self.all()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The `questions hook pi` processes this project's pi started, still running.
    fn waiting(&self) -> Vec<u32> {
        let dir = self.dir.path().to_string_lossy().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
                String::from_utf8_lossy(&cmd).contains("hook\0pi") && cwd.to_string_lossy() == dir
            })
            .collect()
    }
}

fn pi_path() -> PathBuf {
    pi().expect("pi")
}

fn wait_exit(child: &mut Child, within: Duration) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pi did not end");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn result_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| json!({"text": text}))
}

#[test]
fn pi_print_mode_asks_through_the_ledger_and_gets_the_labels_it_offered_sqlite_only() {
    crate::sqlite_only!();
    if pi().is_none() {
        return;
    }
    let _one = ONE_PI
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let p = Project::new();
    let mut child = p
        .pi(&["-p", "set up the project"], true)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let asked = p.pending(1);
    assert_eq!(asked[0]["question"], DATABASE);
    assert!(asked[0]["stage"].as_str().unwrap().starts_with("pi-"));
    let id = asked[0]["id"].to_string();
    p.ok(&[
        "--by",
        "alice",
        "answer",
        "--id",
        &id,
        "--select",
        "PostgreSQL",
    ]);
    assert_eq!(wait_exit(&mut child, Duration::from_mins(1)), 0);
    let results = p.model.results();
    assert_eq!(results.len(), 1, "{results:?}");
    let result = result_of(&results[0]);
    assert_eq!(result["answered"], true, "{result}");
    assert_eq!(result["answers"][0]["answer"], "PostgreSQL (Recommended)");
    assert_eq!(
        result["answers"][0]["selectedOption"],
        "PostgreSQL (Recommended)"
    );
    assert_eq!(result["answers"][0]["answeredBy"], "alice");
    assert_eq!(result["metadata"]["source"], "project-setup");
    assert!(p.waiting().is_empty());
}

#[test]
fn pi_json_mode_hands_the_model_a_declines_reason_and_a_later_skip_keeps_it_sqlite_only() {
    crate::sqlite_only!();
    if pi().is_none() {
        return;
    }
    let _one = ONE_PI
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let p = Project::new();
    let mut child = p
        .pi(&["--mode", "json", "set up the project"], true)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = p.pending(1)[0]["id"].to_string();
    p.ok(&["decline", "--id", &id, "--reason", "ask the team first"]);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_mins(1)), 0);
    let result = result_of(&p.model.results()[0]);
    assert_eq!(result["answered"], false, "{result}");
    assert_eq!(result["answers"][0]["declined"], true);
    assert_eq!(result["answers"][0]["reason"], "ask the team first");
    // pi's own JSON events carry the tool's result too.
    assert!(out.contains("ask the team first"), "{out}");
    p.ok(&["skip", "--id", &id, "--force"]);
    let q = &p.all()[0];
    assert_eq!(q["status"], "skipped");
    assert_eq!(q["decline_reason"], "ask the team first");
}

#[test]
fn pi_rpc_mode_hands_the_client_the_questions_and_withdraws_them_when_answered_elsewhere_sqlite_only(
) {
    crate::sqlite_only!();
    if pi().is_none() {
        return;
    }
    let _one = ONE_PI
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let p = Project::new();
    let mut child = p
        .pi(&["--mode", "rpc"], true)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::<Value>::new()));
    let seen = lines.clone();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                seen.lock().unwrap().push(v);
            }
        }
    });
    writeln!(
        stdin,
        "{}",
        json!({"type": "prompt", "message": "set up the project"})
    )
    .unwrap();
    let id = p.pending(1)[0]["id"].to_string();
    let until = |what: &dyn Fn(&Value) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(v) = lines.lock().unwrap().iter().find(|v| what(v)) {
                return v.clone();
            }
            assert!(Instant::now() < deadline, "{:?}", lines.lock().unwrap());
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // The structured questions, and the dialog, reach the client.
    let request = until(&|v| {
        v["method"] == "notify"
            && v["message"]
                .as_str()
                .unwrap_or("")
                .contains("ask_user_request")
    });
    let structured: Value = serde_json::from_str(request["message"].as_str().unwrap()).unwrap();
    assert_eq!(structured["questions"][0]["question"], DATABASE);
    let select = until(&|v| v["method"] == "select");
    assert!(select["options"]
        .to_string()
        .contains("PostgreSQL (Recommended)"));
    p.ok(&["--by", "bob", "answer", "--id", &id, "--select", "SQLite"]);
    // The withdrawn dialog is said so to the client.
    let withdrawn = until(&|v| {
        v["message"]
            .as_str()
            .unwrap_or("")
            .contains("ask_user_withdrawn")
    });
    assert!(withdrawn["message"].as_str().unwrap().contains("bob"));
    until(&|v| v["type"] == "agent_end");
    let result = result_of(&p.model.results()[0]);
    assert_eq!(result["answers"][0]["answer"], "SQLite", "{result}");
    drop(stdin);
    wait_exit(&mut child, Duration::from_secs(30));
}

#[test]
fn pi_tui_dialog_records_channel_pi_closes_itself_when_answered_elsewhere_and_a_dismissal_records_nothing_sqlite_only(
) {
    crate::sqlite_only!();
    if pi().is_none() || !tmux() {
        return;
    }
    let _one = ONE_PI
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let p = Project::new();
    let name = format!("questions-pi-{}", std::process::id());
    let cmd = p.pi(&["set up the project"], true);
    // The shell tmux starts may set PATH again: the environment goes on pi's own line.
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut line = vec!["exec".to_string(), "env".to_string()];
    let mut set = Vec::new();
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => set.push(quote(&format!(
                "{}={}",
                k.to_string_lossy(),
                v.to_string_lossy()
            ))),
            None => line.extend(["-u".to_string(), quote(&k.to_string_lossy())]),
        }
    }
    line.extend(set);
    line.push(quote(&pi_path().to_string_lossy()));
    line.extend(cmd.get_args().map(|a| quote(&a.to_string_lossy())));
    let mut tmux = Command::new("tmux");
    tmux.args([
        "-L",
        &name,
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "100",
        "-y",
        "40",
    ]);
    tmux.arg("-c").arg(p.dir.path());
    tmux.arg(line.join(" "));
    assert!(tmux.status().unwrap().success());
    let screen = || {
        let out = Command::new("tmux")
            .args(["-L", &name, "capture-pane", "-p", "-t", &name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let shows = |text: &str| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s = screen();
            if s.contains(text) {
                return s;
            }
            if Instant::now() > deadline {
                let _ = Command::new("tmux")
                    .args(["-L", &name, "kill-server"])
                    .status();
                panic!("the screen never showed {text:?}:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let dialog = shows("Other (type your answer)");
    assert!(
        dialog.contains("PostgreSQL (Recommended)") && dialog.contains("Lightweight, file-based")
    );
    // The person picks the second option in pi's dialog.
    p.pending(1);
    let keys = |k: &str| {
        Command::new("tmux")
            .args(["-L", &name, "send-keys", "-t", &name, k])
            .status()
            .unwrap();
    };
    keys("2");
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.model.results().is_empty() {
        assert!(Instant::now() < deadline, "no result:\n{}", screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    let q = &p.all()[0];
    assert_eq!(q["channel"], "pi");
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(
        result_of(&p.model.results()[0])["answers"][0]["answer"],
        "SQLite"
    );
    // A second ask, answered elsewhere: the dialog closes and says who answered.
    keys("again");
    keys("Enter");
    let second = p.pending(1);
    shows("Other (type your answer)");
    let id = second[0]["id"].to_string();
    p.ok(&[
        "--by",
        "carol",
        "answer",
        "--id",
        &id,
        "--select",
        "PostgreSQL",
    ]);
    let closed = shows("answered by carol via cli");
    assert!(!closed.contains("Other (type your answer)"), "{closed}");
    // A third ask, dismissed with Esc: pi's spec discards a cancelled dialog's answers, so
    // nothing is recorded, the model is told so, and the stage's gate stays shut.
    keys("again");
    keys("Enter");
    let third = p.pending(1);
    shows("Other (type your answer)");
    keys("Escape");
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.model.results().len() < 3 {
        assert!(Instant::now() < deadline, "no result:\n{}", screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    let result = result_of(&p.model.results()[2]);
    assert_eq!(result["answered"], false, "{result}");
    assert_eq!(result["cancelled"], true, "{result}");
    assert!(
        result["note"]
            .as_str()
            .unwrap_or("")
            .contains("nothing was recorded"),
        "{result}"
    );
    let still = p
        .all()
        .into_iter()
        .find(|q| q["id"] == third[0]["id"])
        .unwrap();
    assert_eq!(still["status"], "pending", "{still}");
    let stage = still["stage"].as_str().unwrap().to_string();
    let gate = p.questions(&["check", "--stage", &stage]);
    assert_eq!(gate.code, 1, "a dismissed dialog opened the gate: {gate:?}");
    let _ = Command::new("tmux")
        .args(["-L", &name, "kill-server"])
        .status();
}

fn stopped_by(signal: i32) {
    if pi().is_none() {
        return;
    }
    let _one = ONE_PI
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let p = Project::new();
    let mut child = p
        .pi(&["-p", "set up the project"], true)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    p.pending(1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.waiting().is_empty() {
        assert!(Instant::now() < deadline, "no questions process waits");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = i32::try_from(child.id()).unwrap();
    send_signal(pid, signal);
    wait_exit(&mut child, Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(3);
    while !p.waiting().is_empty() {
        assert!(
            Instant::now() < deadline,
            "questions left behind: {:?}",
            p.waiting()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn send_signal(pid: i32, signal: i32) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn pi_stopped_by_sigterm_leaves_no_questions_process_sqlite_only() {
    crate::sqlite_only!();
    stopped_by(15);
}

#[test]
fn pi_stopped_by_sigint_leaves_no_questions_process_sqlite_only() {
    crate::sqlite_only!();
    stopped_by(2);
}

#[test]
fn pi_resumed_hands_the_model_answers_given_while_it_was_down_sqlite_only() {
    crate::sqlite_only!();
    if pi().is_none() {
        return;
    }
    let _one = ONE_PI
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let p = Project::new();
    let mut child = p
        .pi(&["-p", "set up the project"], true)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = p.pending(1)[0]["id"].to_string();
    send_signal(i32::try_from(child.id()).unwrap(), 15);
    wait_exit(&mut child, Duration::from_secs(30));
    p.ok(&["answer", "--id", &id, "--answer", "MariaDB"]);
    let before = p.model.requests();
    let mut resumed = p
        .pi(&["-p", "-c", "go on"], true)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.model.requests() == before {
        assert!(
            Instant::now() < deadline,
            "the resumed pi never asked the model"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let tools = p.model.last_tool_messages();
    assert!(
        tools.iter().any(|t| t.contains("MariaDB")),
        "the resumed session's model was not given the answer: {tools:?}"
    );
    let _ = resumed.kill();
    let _ = resumed.wait();
}

#[test]
fn pi_two_sessions_asking_the_same_text_are_not_answered_from_each_other_sqlite_only() {
    crate::sqlite_only!();
    if pi().is_none() {
        return;
    }
    let _one = ONE_PI
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let p = Project::new();
    let run = |answer: &str| {
        let mut child = p
            .pi(&["-p", "set up the project"], true)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let id = p.pending(1)[0]["id"].to_string();
        p.ok(&["answer", "--id", &id, "--select", answer]);
        assert_eq!(wait_exit(&mut child, Duration::from_mins(1)), 0);
    };
    run("SQLite");
    // The second session's call is its own question, pending until answered.
    run("PostgreSQL");
    let all = p.all();
    assert_eq!(all.len(), 2, "{all:?}");
    assert_ne!(all[0]["stage"], all[1]["stage"]);
    let results = p.model.results();
    assert_eq!(result_of(&results[0])["answers"][0]["answer"], "SQLite");
    assert_eq!(
        result_of(&results[1])["answers"][0]["answer"],
        "PostgreSQL (Recommended)"
    );
}

#[test]
fn pi_without_the_binary_tells_the_model_why_sqlite_only() {
    crate::sqlite_only!();
    if pi().is_none() {
        return;
    }
    let _one = ONE_PI
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let p = Project::new();
    let mut child = p
        .pi(&["-p", "set up the project"], false)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(wait_exit(&mut child, Duration::from_mins(1)), 0);
    let results = p.model.results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("the questions binary was not found")
            && results[0].contains("QUESTIONS_BINARY"),
        "{}",
        results[0]
    );
}

#[test]
fn init_pi_writes_the_package_whole_once_and_takes_it_out_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let init = |args: &[&str]| {
        let mut cmd = bare_command(dir.path());
        cmd.env("HOME", home.path())
            .arg("init")
            .arg("pi")
            .args(args);
        finish(cmd)
    };
    let first = init(&["--db", "ledger.db"]);
    assert_eq!(first.code, 0, "{first:?}");
    let ext = dir.path().join(".pi/extensions/questions");
    let index = std::fs::read_to_string(ext.join("index.ts")).unwrap();
    assert_eq!(
        index,
        include_str!("../../contrib/pi/extensions/ask-user.ts"),
        "the extension is the package's own"
    );
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(ext.join("questions.json")).unwrap())
            .unwrap();
    assert_eq!(config, json!({"command": "questions", "db": "ledger.db"}));
    assert!(dir.path().join(".pi/skills/ask-user/SKILL.md").is_file());
    let again = init(&["--db", "ledger.db"]);
    assert_eq!(again.json["changed"], false, "{again:?}");
    let removed = init(&["--remove"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    assert!(!dir.path().join(".pi/extensions").exists());
    assert!(!dir.path().join(".pi/skills").exists());
}
