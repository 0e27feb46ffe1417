//! `questions hook`: the harnesses' own question tools, over hook events captured from the
//! real harness (tests/fixtures/hooks/<harness>-<version>/; a change of the harness's
//! contract adds a folder, never rewrites one). Every branch: answered, not answered, wait
//! then answered, malformed input, ledger unreachable, multi-select, two questions, a call
//! already logged. A hook never stands in the agent's way: whatever happens, it exits 0
//! and prints either a valid reply or nothing.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{fixture, Ledger, Run};

const CLAUDE: &str = "hooks/claude-code-2.1.330";

fn event(name: &str) -> String {
    fixture(&format!("{CLAUDE}/{name}"))
}

fn hook(ledger: &Ledger, args: &[&str], input: &str) -> Run {
    let mut all = vec!["hook", "claude-code"];
    all.extend_from_slice(args);
    ledger.run_stdin(all, input)
}

/// Fails open: exit 0, nothing on stdout.
fn assert_silent(run: &Run) {
    assert_eq!(run.code, 0, "a hook always exits 0: {run:?}");
    assert_eq!(
        run.stdout, "",
        "a hook that does not answer prints nothing: {run:?}"
    );
}

/// The reply that answers the tool, checked for the shape Claude Code reads.
fn reply(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    let reply: Value = serde_json::from_str(&run.stdout).expect("the reply is JSON");
    let out = &reply["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse");
    assert_eq!(out["permissionDecision"], "allow");
    reply
}

fn answers(reply: &Value) -> Value {
    reply["hookSpecificOutput"]["updatedInput"]["answers"].clone()
}

const DATABASE: &str = "Which database should we use?";
const FEATURES: &str = "Which features do you want?";

#[test]
fn a_call_not_answered_is_logged_and_left_to_the_card() {
    let l = Ledger::new();
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    let all = l.all();
    assert_eq!(all.len(), 2, "both questions are logged: {all:?}");
    let (db, features) = (&all[0], &all[1]);
    assert_eq!(db["question"], DATABASE);
    assert_eq!(db["stage"], "claude-code");
    assert_eq!(db["source"], "ask-user");
    assert_eq!(db["header"], "Database");
    assert_eq!(db["status"], "pending");
    assert_eq!(db["multi_select"], false);
    assert_eq!(
        db["options"],
        json!([
            {"label": "SQLite", "description": "Embedded", "recommended": false},
            {"label": "PostgreSQL", "description": "Server", "recommended": false}
        ])
    );
    assert_eq!(features["question"], FEATURES);
    assert_eq!(features["multi_select"], true);
    assert_eq!(features["options"].as_array().unwrap().len(), 3);
}

#[test]
fn a_call_whose_questions_are_answered_gets_the_answers_in_claude_codes_shape() {
    let l = Ledger::new();
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    l.ok(["answer", "--id", "1", "--answer", "SQLite"]);
    l.ok([
        "answer", "--id", "2", "--select", "Auth", "--select", "Export",
    ]);
    let run = hook(&l, &[], &event("pre_tool_use.json"));
    let got = reply(&run);
    let golden: Value = serde_json::from_str(&event("pre_tool_use.reply.json")).unwrap();
    assert_eq!(got, golden, "the reply is the golden one");
    // The tool's own input comes back whole, with the answers added; a multi-select
    // answer is its labels joined by ", ", as the card itself answers.
    let input: Value = serde_json::from_str(&event("pre_tool_use.json")).unwrap();
    let updated = &got["hookSpecificOutput"]["updatedInput"];
    assert_eq!(updated["questions"], input["tool_input"]["questions"]);
    assert_eq!(
        answers(&got),
        json!({DATABASE: "SQLite", FEATURES: "Auth, Export"})
    );
    assert_eq!(l.all().len(), 2, "nothing logged twice");
    // The history says the hook handed both answers to the agent's own tool.
    for id in ["1", "2"] {
        let history = l.ok(["history", "--id", id]);
        let last = history["events"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["event"], "delivered", "{history}");
        assert_eq!(last["channel"], "claude-code");
        assert_eq!(last["after"]["status"], "answered");
    }
}

/// `text`, an event, as the call `id` of the session `session`.
fn as_call(text: &str, session: &str, id: &str) -> String {
    let mut event: Value = serde_json::from_str(text).unwrap();
    event["session_id"] = json!(session);
    if event.get("tool_use_id").is_some() || id != "-" {
        event["tool_use_id"] = json!(id);
    }
    event.to_string()
}

#[test]
fn an_answer_on_record_for_the_same_text_never_answers_a_new_call() {
    // An orchestrator (or anyone) asked the person the same texts, and they answered.
    let l = Ledger::new();
    l.ok([
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
    l.ok(["log", "--stage", "claude-code", "--question", FEATURES]);
    l.ok(["answer", "--id", "1", "--answer", "PostgreSQL"]);
    l.ok(["answer", "--id", "2", "--answer", "search, auth"]);
    // The agent's call is its own question: logged anew, left to the card.
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    let all = l.all();
    assert_eq!(all.len(), 4, "the call's own questions: {all:?}");
    assert_eq!(all[2]["status"], "pending");
    assert_eq!(all[3]["status"], "pending");
    assert_eq!(
        all[2]["harness_call"],
        "claude-code:7a00d1ec-d63f-412f-a111-6321fe1f2513:toolu_01ask"
    );
    // And the orchestrator's `log` of the same text is its own row, never the call's.
    let again = l.ok(["log", "--stage", "claude-code", "--question", DATABASE]);
    assert_eq!(again["question_id"], 1);
}

/// The answers in the call's own input are what the model (or a hook) wrote there, never
/// the person's word: a `PostToolUse` whose `tool_response` holds none records nothing.
#[test]
fn answers_the_model_put_in_its_call_are_never_taken_for_the_persons() {
    let l = Ledger::new();
    let mut post: Value = serde_json::from_str(&event("post_tool_use.json")).unwrap();
    assert!(post["tool_input"]["answers"].is_object(), "{post}");
    post["tool_response"] = json!({"questions": post["tool_input"]["questions"].clone()});
    assert_silent(&hook(&l, &[], &post.to_string()));
    let all = l.all();
    assert!(
        !all.is_empty() && all.iter().all(|q| q["status"] == "pending"),
        "{all:?}"
    );
}

#[test]
fn a_new_call_is_never_answered_from_an_earlier_calls_answer() {
    // The issue's reproduction: session A's call is answered in its card; session B asks
    // the same text with other options, and a later call of session A asks it again.
    let l = Ledger::new();
    let pre = event("pre_tool_use.json");
    let post = event("post_tool_use.json");
    assert_silent(&hook(&l, &[], &as_call(&pre, "A", "t1")));
    assert_silent(&hook(&l, &[], &as_call(&post, "A", "t1")));
    let all = l.all();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["answer"], "PostgreSQL");
    for (session, id) in [("B", "t9"), ("A", "t2")] {
        let run = hook(&l, &[], &as_call(&pre, session, id));
        assert_silent(&run);
    }
    let all = l.all();
    assert_eq!(all.len(), 6, "each call logs its own questions: {all:?}");
    assert!(all[2..].iter().all(|q| q["status"] == "pending"), "{all:?}");
    // A re-run of a call finds its own questions, answered or not.
    assert_silent(&hook(&l, &[], &as_call(&pre, "B", "t9")));
    assert_eq!(l.all().len(), 6);
    let run = hook(&l, &[], &as_call(&pre, "A", "t1"));
    assert_eq!(
        answers(&reply(&run))[DATABASE],
        "PostgreSQL",
        "call t1 was answered: {run:?}"
    );
    assert_eq!(l.all().len(), 6);
}

#[test]
fn an_answer_nobody_gave_is_never_handed_to_the_agent() {
    let l = Ledger::new();
    let mut pre: Value = serde_json::from_str(&event("pre_tool_use.json")).unwrap();
    pre["tool_input"]["questions"][0]["options"][0]["label"] = json!("SQLite (Recommended)");
    pre["tool_input"]["questions"]
        .as_array_mut()
        .unwrap()
        .truncate(1);
    let pre = pre.to_string();
    assert_silent(&hook(&l, &[], &pre));
    // `accept-defaults` takes the proposed value: nobody answered.
    let accepted = l.ok([
        "accept-defaults",
        "--stage",
        "claude-code",
        "--include-required",
    ]);
    assert_eq!(accepted["answered_ids"], json!([1]), "{accepted}");
    assert_silent(&hook(&l, &[], &pre));
    // Given by a person, it is handed over.
    l.ok(["answer", "--id", "1", "--answer", "PostgreSQL", "--force"]);
    assert_eq!(
        answers(&reply(&hook(&l, &[], &pre)))[DATABASE],
        "PostgreSQL"
    );
}

#[test]
fn one_of_two_questions_answered_is_not_enough() {
    let l = Ledger::new();
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    l.ok(["answer", "--id", "1", "--answer", "SQLite"]);
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    // A skip is not an answer the tool can be given: the card asks.
    l.ok(["skip", "--id", "2"]);
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
}

/// A hook on the fixture's call, with `--wait` of `seconds`, started once its questions
/// are logged and unanswered, and released only once it waits for a change: what another
/// channel does next happens while it waits. When it started, and its run to join.
fn hook_waiting(l: &Ledger, seconds: &str) -> (Instant, std::thread::JoinHandle<Run>) {
    assert_silent(&hook(l, &[], &event("pre_tool_use.json")));
    let wait = crate::common::Pause::new(l.dir.path(), "wait");
    let mut cmd = l.command();
    cmd.args(["hook", "claude-code", "--wait", seconds])
        .env("QUESTIONS_TEST_PAUSE", &wait.env)
        .write_stdin(event("pre_tool_use.json"));
    let started = Instant::now();
    let waiting = std::thread::spawn(move || crate::common::finish(cmd));
    // It found the questions unanswered and waits for a change.
    wait.reached();
    wait.release();
    (started, waiting)
}

#[test]
fn the_hook_waits_for_answers_from_another_channel() {
    let l = Ledger::new();
    let (started, waiting) = hook_waiting(&l, "20");
    l.ok(["answer", "--id", "1", "--answer", "sqlite"]);
    l.ok(["answer", "--id", "2", "--select", "Search"]);
    let run = waiting.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "it answered as soon as the answers came, not at the end of --wait"
    );
    assert_eq!(
        answers(&reply(&run)),
        json!({DATABASE: "SQLite", FEATURES: "Search"})
    );
}

#[test]
fn a_decline_ends_the_hooks_wait_and_the_card_asks() {
    let l = Ledger::new();
    let (started, waiting) = hook_waiting(&l, "60");
    // One answered, the other declined: nothing more will come for the call, so the hook
    // stops waiting and stays out of the way (the card asks), rather than holding the
    // agent for the rest of its minute.
    l.ok(["answer", "--id", "1", "--answer", "sqlite"]);
    l.ok(["decline", "--id", "2", "--reason", "which search?"]);
    let run = waiting.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the wait ended at the decline, not at the end of --wait ({:?})",
        started.elapsed()
    );
    assert_silent(&run);
}

#[test]
fn waiting_in_vain_still_fails_open() {
    let l = Ledger::new();
    let started = Instant::now();
    assert_silent(&hook(&l, &["--wait", "1"], &event("pre_tool_use.json")));
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(l.all().len(), 2);
}

#[test]
fn the_same_call_is_logged_once() {
    let l = Ledger::new();
    for _ in 0..3 {
        assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    }
    assert_eq!(l.all().len(), 2);
    let history = l.ok(["history", "--stage", "claude-code"]);
    let logged = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "logged")
        .count();
    assert_eq!(logged, 2, "one logged event per question: {history}");
}

#[test]
fn the_stage_comes_from_the_flag_else_the_environment() {
    let l = Ledger::new();
    assert_silent(&hook(
        &l,
        &["--stage", "design"],
        &event("pre_tool_use.json"),
    ));
    // Another call: a call's questions stay where it logged them.
    let mut cmd = l.command();
    cmd.env("QUESTIONS_STAGE", "intake")
        .args(["hook", "claude-code"])
        .write_stdin(as_call(&event("pre_tool_use.json"), "S", "t2"));
    assert_silent(&crate::common::finish(cmd));
    let stages: Vec<Value> = l.all().iter().map(|q| q["stage"].clone()).collect();
    assert_eq!(stages, vec!["design", "design", "intake", "intake"]);
}

#[test]
fn answers_given_in_the_card_are_recorded_after_the_tool_ran() {
    let l = Ledger::new();
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    let mut cmd = l.command();
    cmd.env("QUESTIONS_USER", "dana")
        .args(["hook", "claude-code"])
        .write_stdin(event("post_tool_use.json"));
    assert_silent(&crate::common::finish(cmd));
    let all = l.all();
    assert_eq!(all[0]["status"], "answered");
    assert_eq!(all[0]["answer"], "PostgreSQL");
    assert_eq!(all[0]["channel"], "claude-code");
    assert_eq!(all[0]["answered_by"], "dana");
    assert_eq!(all[1]["answer"], "Auth, Export");
    assert_eq!(all[1]["selected"], json!(["Auth", "Export"]));
    assert_eq!(all[1]["was_custom"], false);
    // The same event again changes nothing.
    assert_silent(&hook(&l, &[], &event("post_tool_use.json")));
    let history = l.ok(["history", "--stage", "claude-code"]);
    assert_eq!(history["count"], 4, "two logged, two answered: {history}");
}

#[test]
fn the_card_after_a_call_the_hook_answered_records_nothing_new() {
    let l = Ledger::new();
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    l.ok(["answer", "--id", "1", "--answer", "PostgreSQL"]);
    l.ok(["answer", "--id", "2", "--answer", "Auth, Export"]);
    reply(&hook(&l, &[], &event("pre_tool_use.json")));
    assert_silent(&hook(&l, &[], &event("post_tool_use.json")));
    let all = l.all();
    assert_eq!(
        all[0]["channel"], "cli",
        "the answer on record stands as it was given"
    );
    // Two logged, two answered, two delivered by the hook: the card adds nothing.
    assert_eq!(l.ok(["history", "--stage", "claude-code"])["count"], 6);
}

#[test]
fn a_card_answer_that_differs_from_the_ledgers_keeps_the_ledgers_and_says_so() {
    let l = Ledger::new();
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    l.ok(["answer", "--id", "1", "--answer", "SQLite"]);
    let run = hook(&l, &[], &event("post_tool_use.json"));
    assert_silent(&run);
    assert!(run.stderr.contains("question 1"), "{run:?}");
    let all = l.all();
    assert_eq!(all[0]["answer"], "SQLite");
    assert_eq!(
        all[1]["answer"], "Auth, Export",
        "the other answer is recorded"
    );
}

#[test]
fn malformed_events_fail_open_and_log_nothing() {
    let l = Ledger::new();
    let inputs = [
        String::new(),
        "{".to_string(),
        "[]".to_string(),
        "\u{0}\u{1}binary".to_string(),
        json!({"tool_name": "AskUserQuestion"}).to_string(),
        json!({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion"}).to_string(),
        json!({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion",
               "tool_input": {"questions": []}})
        .to_string(),
        json!({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion",
               "tool_input": {"questions": [{"question": 7}]}})
        .to_string(),
        json!({"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion",
               "tool_input": {"questions": "Which?"}})
        .to_string(),
    ];
    for input in inputs {
        let run = hook(&l, &[], &input);
        assert_silent(&run);
        assert!(!run.stderr.is_empty(), "says why on stderr: {input:?}");
    }
    l.assert_not_created();
}

#[test]
fn other_tools_and_events_are_left_alone() {
    let l = Ledger::new();
    let bash = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                      "tool_input": {"command": "ls"}, "tool_use_id": "t"});
    for input in [bash.to_string(), event("notification.json")] {
        let run = hook(&l, &[], &input);
        assert_silent(&run);
        assert_eq!(run.stderr, "");
    }
    l.assert_not_created();
}

#[test]
fn sqlite_only_an_unreachable_ledger_fails_open() {
    crate::sqlite_only!();
    let l = Ledger::new();
    // Not a ledger: a file of other bytes.
    std::fs::write(&l.path, b"this is not a SQLite database, just text").unwrap();
    let run = hook(&l, &[], &event("pre_tool_use.json"));
    assert_silent(&run);
    assert!(!run.stderr.is_empty());
    // A location the ledger cannot be at, and one it refuses.
    for db in ["/proc/nowhere/ledger.db", ":memory:"] {
        let mut cmd = crate::common::bare_command(l.dir.path());
        cmd.args(["--db", db, "hook", "claude-code"])
            .write_stdin(event("pre_tool_use.json"));
        let run = crate::common::finish(cmd);
        assert_silent(&run);
        assert!(!run.stderr.is_empty(), "{db}: {run:?}");
    }
}

#[test]
fn bad_flags_fail_open_too() {
    let l = Ledger::new();
    for args in [
        vec!["hook", "claude-code", "--wait", "soon"],
        vec!["hook", "claude-code", "--stage", " "],
        vec!["hook", "no-such-harness"],
    ] {
        let run = l.run_stdin(&args, event("pre_tool_use.json"));
        assert_silent(&run);
        assert!(!run.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn usage_errors_before_or_after_the_hook_command_fail_open() {
    // A harness reads exit 2 as "block the tool": a hook's usage error, wherever it is on
    // the command line (after global flags with values, or a hook flag put before the
    // command), exits 0 with nothing on stdout and says why on stderr.
    let l = Ledger::new();
    for args in [
        vec!["--by", "dana", "hook", "claude-code", "--bogus"],
        vec!["--by=dana", "hook", "claude-code", "--wait", "soon"],
        vec!["--by", "dana", "hook", "no-such-harness"],
        vec!["--wait", "30", "hook", "claude-code"],
        vec!["hook", "claude-code", "--db"],
    ] {
        let run = l.run_stdin(&args, event("pre_tool_use.json"));
        assert_silent(&run);
        assert!(!run.stderr.is_empty(), "{args:?}");
    }
    l.assert_not_created();
    // Another command's usage error is still the contract's failure, naming its command.
    let run = l.run(["--by", "dana", "list", "--bogus"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.error_code(), "usage");
    assert_eq!(run.json["procedure"], "list");
}

/// Runs `work` on a thread of its own; fails the test when it has not finished within
/// `limit` (a hook that hangs), after `unstick` has been tried to free it.
fn finishes<T: Send + 'static>(
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
    unstick: impl FnOnce(),
) -> T {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(work());
    });
    if let Ok(value) = result.recv_timeout(limit) {
        value
    } else {
        unstick();
        panic!("the hook did not finish within {limit:?}");
    }
}

#[test]
fn a_stop_whose_transcript_is_not_a_regular_file_fails_open_at_once() {
    let l = Ledger::new();
    let fifo = l.dir.path().join("transcript.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // A FIFO nobody writes to would hold the open (and the agent) forever; a directory
    // and a device are no transcripts either.
    for path in [fifo.clone(), l.dir.path().to_path_buf(), "/dev/zero".into()] {
        let mut stop: Value = serde_json::from_str(&event("stop.json")).unwrap();
        stop["transcript_path"] = json!(path);
        let mut cmd = l.command();
        cmd.args(["hook", "claude-code"])
            .write_stdin(stop.to_string());
        let fifo = fifo.clone();
        let run = finishes(
            Duration::from_secs(30),
            move || crate::common::finish(cmd),
            // A writer that comes and goes ends a read that waits on the FIFO.
            move || drop(std::fs::OpenOptions::new().write(true).open(&fifo)),
        );
        assert_silent(&run);
        assert!(
            run.stderr.contains("not a regular file"),
            "{path:?}: {run:?}"
        );
    }
}

#[test]
fn sqlite_only_a_locked_ledger_fails_open_within_seconds() {
    crate::sqlite_only!();
    let l = Ledger::new();
    l.log("intake", "Anything else?");
    // Another process holds the write lock and keeps it (other commands wait about 40 s
    // for it).
    let holder = rusqlite::Connection::open(&l.path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let mut cmd = l.command();
    cmd.args(["hook", "claude-code"])
        .write_stdin(event("pre_tool_use.json"));
    let run = finishes(
        Duration::from_secs(20),
        move || crate::common::finish(cmd),
        || {},
    );
    assert_silent(&run);
    assert!(run.stderr.contains("locked"), "{run:?}");
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(l.all().len(), 1, "nothing was logged");
}

#[test]
fn a_postgresql_server_that_never_answers_fails_open_within_seconds() {
    // A server that takes the connection and says nothing: no error ever comes, so the
    // hook's own deadline ends it.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<_> = server.incoming().collect();
        drop(held);
    });
    let l = Ledger::new();
    let mut cmd = crate::common::bare_command(l.dir.path());
    cmd.arg("--db")
        .arg(format!("postgres://nobody@127.0.0.1:{port}/ledger"))
        .args(["hook", "claude-code"])
        .write_stdin(event("pre_tool_use.json"));
    let run = finishes(
        Duration::from_secs(30),
        move || crate::common::finish(cmd),
        || {},
    );
    assert_silent(&run);
    assert!(!run.stderr.is_empty(), "{run:?}");
}

/// A `Stop` event over a copy of a captured transcript.
fn stop_event(l: &Ledger, transcript: &str, active: bool) -> String {
    let path = l.dir.path().join("transcript.jsonl");
    std::fs::write(&path, event(transcript)).unwrap();
    let mut stop: Value = serde_json::from_str(&event("stop.json")).unwrap();
    stop["transcript_path"] = json!(path);
    stop["stop_hook_active"] = json!(active);
    stop.to_string()
}

#[test]
fn answers_that_came_after_the_card_was_refused_keep_the_turn_going_once() {
    let l = Ledger::new();
    // The session asked, the card was refused: nothing to hand over yet.
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    assert_silent(&hook(
        &l,
        &[],
        &stop_event(&l, "transcript_refused.jsonl", false),
    ));
    l.ok(["answer", "--id", "1", "--answer", "SQLite"]);
    l.ok(["answer", "--id", "2", "--answer", "Export"]);
    let run = hook(&l, &[], &stop_event(&l, "transcript_refused.jsonl", false));
    assert_eq!(run.code, 0);
    let reply: Value = serde_json::from_str(&run.stdout).expect("a reply");
    assert_eq!(reply["decision"], "block");
    let reason = reply["reason"].as_str().unwrap();
    assert!(
        reason.contains(r#""Which database should we use?"="SQLite""#)
            && reason.contains(r#""Which features do you want?"="Export""#),
        "{reason}"
    );
    // The transcript now holds them (as Claude Code writes a stop hook's reason): once.
    assert_silent(&hook(
        &l,
        &[],
        &stop_event(&l, "transcript_delivered.jsonl", false),
    ));
    // Never while Claude Code is already going on because of a stop hook.
    assert_silent(&hook(
        &l,
        &[],
        &stop_event(&l, "transcript_refused.jsonl", true),
    ));
}

#[test]
fn a_stop_hands_over_only_answers_to_its_own_sessions_calls() {
    let l = Ledger::new();
    // Another session asked the same texts, and its card was answered; an orchestrator's
    // questions of the same texts are answered too.
    let pre = event("pre_tool_use.json");
    assert_silent(&hook(&l, &[], &as_call(&pre, "other", "toolu_01ask")));
    assert_silent(&hook(
        &l,
        &[],
        &as_call(&event("post_tool_use.json"), "other", "toolu_01ask"),
    ));
    l.ok(["log", "--stage", "claude-code", "--question", DATABASE]);
    l.ok(["answer", "--id", "3", "--answer", "SQLite"]);
    // This session's card was dismissed, and nobody answered its questions: nothing to
    // hand over, and nothing logged by the end of the turn.
    assert_silent(&hook(
        &l,
        &[],
        &stop_event(&l, "transcript_refused.jsonl", false),
    ));
    assert_eq!(l.all().len(), 3);
}

#[test]
fn a_stop_without_a_readable_transcript_fails_open() {
    let l = Ledger::new();
    let mut stop: Value = serde_json::from_str(&event("stop.json")).unwrap();
    stop["transcript_path"] = json!(l.dir.path().join("gone.jsonl"));
    let run = hook(&l, &[], &stop.to_string());
    assert_silent(&run);
    assert!(!run.stderr.is_empty());
}

const CODEX: &str = "hooks/codex-0.169.0";
const GEMINI: &str = "hooks/gemini-0.61.0";

fn harness(l: &Ledger, name: &str, input: &str) -> Run {
    l.run_stdin(["hook", name], input)
}

/// The JSON the reason carries after its sentence: the tool's own result shape.
fn carried(reason: &str) -> Value {
    let at = reason.find('{').expect("the reason carries JSON");
    serde_json::from_str(&reason[at..]).expect("valid JSON")
}

#[test]
fn codex_questions_are_logged_then_answered_by_a_deny_that_carries_the_answers() {
    let l = Ledger::new();
    let pre = fixture(&format!("{CODEX}/pre_tool_use.json"));
    assert_silent(&harness(&l, "codex", &pre));
    let all = l.all();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["stage"], "codex");
    assert_eq!(all[0]["options"][0]["label"], "SQLite");
    assert_eq!(all[0]["options"][0]["recommended"], true);
    // Codex's card takes a note on every question, whatever isOther says.
    assert_eq!(all[0]["allow_freeform"], true, "isOther: false");
    assert_eq!(all[1]["allow_freeform"], true, "isOther: true");
    assert_silent(&harness(&l, "codex", &pre));
    assert_eq!(l.all().len(), 2, "the same call is logged once");

    l.ok(["answer", "--id", "1", "--answer", "sqlite"]);
    l.ok(["answer", "--id", "2", "--answer", "ledger"]);
    let run = harness(&l, "codex", &pre);
    assert_eq!(run.code, 0);
    let reply: Value = serde_json::from_str(&run.stdout).unwrap();
    let golden: Value =
        serde_json::from_str(&fixture(&format!("{CODEX}/pre_tool_use.reply.json"))).unwrap();
    assert_eq!(reply, golden);
    let out = &reply["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny");
    assert_eq!(
        carried(out["permissionDecisionReason"].as_str().unwrap()),
        json!({"answers": {"database": {"answers": ["SQLite (Recommended)"]},
                           "name": {"answers": ["ledger"]}}})
    );
}

const CODEX_CAPTURED: &str = "hooks/codex-0.169.0-captured";

/// The `PreToolUse` event the real Codex 0.169.0 sent (`codex exec`, the hook reviewed and
/// trusted, `request_user_input` as the model called it: no `isOther`, no `isSecret`):
/// logged, and answered with the deny whose reason Codex handed the model
/// (`model_input_after_deny.json`: "Tool call blocked by PreToolUse hook: …").
#[test]
fn codex_captured_pre_tool_use_is_logged_and_answered_as_codex_hands_it_on() {
    let l = Ledger::new();
    let pre = fixture(&format!("{CODEX_CAPTURED}/pre_tool_use.json"));
    assert_silent(&harness(&l, "codex", &pre));
    let all = l.all();
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0]["question"], "Which database should we use?");
    assert_eq!(all[0]["options"][0]["label"], "SQLite");
    assert_eq!(all[0]["options"][0]["recommended"], true);
    assert!(all.iter().all(|q| q["allow_freeform"] == true), "{all:?}");
    l.ok(["answer", "--id", "1", "--answer", "PostgreSQL"]);
    l.ok(["answer", "--id", "2", "--answer", "shop-ledger"]);
    let run = harness(&l, "codex", &pre);
    let reply: Value = serde_json::from_str(&run.stdout).unwrap();
    let golden: Value = serde_json::from_str(&fixture(&format!(
        "{CODEX_CAPTURED}/pre_tool_use.reply.json"
    )))
    .unwrap();
    assert_eq!(reply, golden);
    let handed: Value = serde_json::from_str(&fixture(&format!(
        "{CODEX_CAPTURED}/model_input_after_deny.json"
    )))
    .unwrap();
    let output = handed[1]["output"].as_str().unwrap();
    let reason = reply["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(output.contains(reason), "{output}");
}

/// Codex 0.169.0's TUI in Plan mode (under tmux): the card's "None of the above" with a
/// note, as its `PostToolUse` sent it, is recorded verbatim, channel `codex`.
#[test]
fn codex_captured_plan_mode_note_is_recorded_verbatim() {
    let l = Ledger::new();
    let pre = fixture(&format!("{CODEX_CAPTURED}/plan_pre_tool_use.json"));
    assert_silent(&harness(&l, "codex", &pre));
    let post = fixture(&format!("{CODEX_CAPTURED}/plan_post_tool_use.json"));
    assert_silent(&harness(&l, "codex", &post));
    let all = l.all();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["status"], "answered", "{all:?}");
    assert_eq!(all[0]["answer"], "Use Valkey, it is what ops runs");
    assert_eq!(all[0]["was_custom"], true);
    assert_eq!(all[0]["channel"], "codex");
}

const GEMINI_CAPTURED: &str = "hooks/gemini-0.61.0-captured";

/// The events the real Gemini CLI 0.61.0 sent in its TUI (under tmux): `BeforeTool` on
/// `ask_user` logs the question; the person typed a custom value in the card, and
/// `AfterTool` (`tool_response.llmContent` holding `ask_user`'s result) records it verbatim,
/// channel `gemini`.
#[test]
fn gemini_captured_card_answer_in_the_person_s_words_is_recorded() {
    let l = Ledger::new();
    let before = fixture(&format!("{GEMINI_CAPTURED}/before_tool.json"));
    assert_silent(&harness(&l, "gemini", &before));
    let all = l.all();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["question"], "Which database should we use?");
    assert_eq!(all[0]["stage"], "gemini");
    let after = fixture(&format!("{GEMINI_CAPTURED}/after_tool.json"));
    harness(&l, "gemini", &after);
    let all = l.all();
    assert_eq!(all[0]["status"], "answered", "{all:?}");
    assert_eq!(all[0]["answer"], "DuckDB, embedded");
    assert_eq!(all[0]["was_custom"], true);
    assert_eq!(all[0]["channel"], "gemini");
}

/// The `BeforeTool` event of a TUI session whose hook `init gemini --wait 20` wrote
/// (`timeout` 50 000 ms): the question answered from another process while the hook
/// waited, the hook's deny, and the reason as Gemini CLI handed it to the model
/// (`functionResponse.response.error`: "Tool execution blocked: …").
#[test]
fn gemini_captured_answer_from_the_ledger_reaches_the_model_as_the_deny_reason() {
    let l = Ledger::new();
    let before = fixture(&format!("{GEMINI_CAPTURED}/before_tool_waited.json"));
    assert_silent(&harness(&l, "gemini", &before));
    l.ok(["answer", "--id", "1", "--answer", "PostgreSQL"]);
    let run = harness(&l, "gemini", &before);
    let reply: Value = serde_json::from_str(&run.stdout).unwrap();
    let golden: Value = serde_json::from_str(&fixture(&format!(
        "{GEMINI_CAPTURED}/before_tool_waited.reply.json"
    )))
    .unwrap();
    assert_eq!(reply, golden);
    let handed: Value = serde_json::from_str(&fixture(&format!(
        "{GEMINI_CAPTURED}/model_input_after_deny.json"
    )))
    .unwrap();
    let error = handed[1]["functionResponse"]["response"]["error"]
        .as_str()
        .unwrap();
    assert!(error.contains(reply["reason"].as_str().unwrap()), "{error}");
    assert_eq!(
        carried(reply["reason"].as_str().unwrap()),
        json!({"answers": {"0": "PostgreSQL"}})
    );
}

#[test]
fn codex_answers_from_its_own_prompt_are_recorded() {
    let l = Ledger::new();
    let post = fixture(&format!("{CODEX}/post_tool_use.json"));
    assert_silent(&harness(&l, "codex", &post));
    let all = l.all();
    assert_eq!(all[0]["answer"], "PostgreSQL");
    assert_eq!(all[0]["channel"], "codex");
    assert_eq!(all[1]["answer"], "ledger");
    assert_eq!(all[1]["channel"], "codex");
}

/// Codex's card offers "None of the above" and a note on every question; the note comes
/// back as `user_note: …` beside the chosen label. The person's words are recorded
/// verbatim, and a note beside an option follows its label.
#[test]
fn codex_notes_from_its_card_are_recorded_verbatim() {
    let l = Ledger::new();
    let mut post: Value =
        serde_json::from_str(&fixture(&format!("{CODEX}/post_tool_use.json"))).unwrap();
    post["tool_response"] = json!(json!({"answers": {
        "database": {"answers": ["None of the above", "user_note: Use memcached, for now"]},
        "name": {"answers": ["ledger", "user_note: lower case"]},
    }})
    .to_string());
    assert_silent(&harness(&l, "codex", &post.to_string()));
    let all = l.all();
    assert_eq!(all[0]["status"], "answered", "{all:?}");
    assert_eq!(all[0]["answer"], "Use memcached, for now");
    assert_eq!(all[0]["was_custom"], true);
    assert_eq!(all[1]["answer"], "ledger; lower case");
    // An option with a note beside it stays the person's selection, not free text.
    let noted = Ledger::new();
    post["tool_response"] = json!(json!({"answers": {
        "database": {"answers": ["PostgreSQL", "user_note: the managed one"]},
    }})
    .to_string());
    assert_silent(&harness(&noted, "codex", &post.to_string()));
    let database = &noted.all()[0];
    assert_eq!(
        database["answer"], "PostgreSQL; the managed one",
        "{database}"
    );
    assert_eq!(database["selected"], json!(["PostgreSQL"]), "{database}");
    assert_eq!(database["was_custom"], false, "{database}");
    assert!(all.iter().all(|q| q["channel"] == "codex"), "{all:?}");
    // And the person may answer a Codex question in their own words from the CLI too.
    let other = Ledger::new();
    assert_silent(&harness(
        &other,
        "codex",
        &fixture(&format!("{CODEX}/pre_tool_use.json")),
    ));
    other.ok(["answer", "--id", "1", "--answer", "DuckDB"]);
}

/// The CLI answered while Codex's card was up, and the person then gave the card another
/// answer, which the agent acts on: the ledger keeps the first answer, and its history
/// the card's, as a refused event, never nothing.
#[test]
fn a_card_answer_that_differs_from_the_ledger_s_is_kept_in_the_history() {
    let l = Ledger::new();
    let pre = fixture(&format!("{CODEX}/pre_tool_use.json"));
    assert_silent(&harness(&l, "codex", &pre));
    l.ok(["answer", "--id", "1", "--answer", "SQLite"]);
    let post = fixture(&format!("{CODEX}/post_tool_use.json"));
    harness(&l, "codex", &post);
    assert_eq!(l.question(1)["answer"], "SQLite");
    let history = l.ok(["history", "--id", "1"]);
    let refused: Vec<&Value> = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "refused")
        .collect();
    assert_eq!(refused.len(), 1, "{history:#}");
    assert_eq!(refused[0]["detail"]["given"]["answer"], "PostgreSQL");
    assert_eq!(refused[0]["channel"], "codex");
    assert!(refused[0]["detail"]["refused"].as_str().is_some());
    // The other question, not answered elsewhere, took the card's answer.
    assert_eq!(l.question(2)["answer"], "ledger");
}

#[test]
fn gemini_questions_are_logged_by_position_then_answered_by_a_deny() {
    let l = Ledger::new();
    let before = fixture(&format!("{GEMINI}/before_tool.json"));
    assert_silent(&harness(&l, "gemini", &before));
    let all = l.all();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0]["stage"], "gemini");
    assert_eq!(all[1]["multi_select"], true);
    let yes_no: Vec<Value> = all[2]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].clone())
        .collect();
    assert_eq!(yes_no, vec!["Yes", "No"], "a yesno question's own options");

    l.ok(["answer", "--id", "1", "--answer", "SQLite"]);
    l.ok([
        "answer", "--id", "2", "--select", "Auth", "--select", "Export",
    ]);
    assert_silent(&harness(&l, "gemini", &before));
    l.ok(["answer", "--id", "3", "--answer", "yes"]);
    let run = harness(&l, "gemini", &before);
    let reply: Value = serde_json::from_str(&run.stdout).unwrap();
    let golden: Value =
        serde_json::from_str(&fixture(&format!("{GEMINI}/before_tool.reply.json"))).unwrap();
    assert_eq!(reply, golden);
    assert_eq!(reply["decision"], "deny");
    assert_eq!(
        carried(reply["reason"].as_str().unwrap()),
        json!({"answers": {"0": "SQLite", "1": "Auth, Export", "2": "Yes"}})
    );
}

#[test]
fn gemini_answers_from_its_own_dialog_are_recorded() {
    let l = Ledger::new();
    let after = fixture(&format!("{GEMINI}/after_tool.json"));
    assert_silent(&harness(&l, "gemini", &after));
    let all = l.all();
    assert_eq!(all[0]["answer"], "PostgreSQL");
    assert_eq!(all[1]["selected"], json!(["Auth", "Export"]));
    assert_eq!(all[2]["answer"], "Yes");
    assert!(all.iter().all(|q| q["channel"] == "gemini"), "{all:?}");
    // A dismissed dialog records nothing.
    let mut dismissed: Value = serde_json::from_str(&after).unwrap();
    dismissed["tool_response"]["llmContent"] =
        json!("User dismissed ask_user dialog without answering.");
    let other = Ledger::new();
    assert_silent(&harness(&other, "gemini", &dismissed.to_string()));
    assert!(other.all().iter().all(|q| q["status"] == "pending"));
}

#[test]
fn codex_and_gemini_fail_open_on_malformed_events() {
    let l = Ledger::new();
    for (name, tool, event_name) in [
        ("codex", "request_user_input", "PreToolUse"),
        ("gemini", "ask_user", "BeforeTool"),
    ] {
        for input in [
            "not json".to_string(),
            json!({"hook_event_name": event_name, "tool_name": tool}).to_string(),
            json!({"hook_event_name": event_name, "tool_name": tool,
                   "tool_input": {"questions": [{"header": "x"}]}})
            .to_string(),
        ] {
            let run = harness(&l, name, &input);
            assert_silent(&run);
            assert!(!run.stderr.is_empty(), "{name}: {input}");
        }
    }
    // Codex's questions need their ids: its answers are keyed by them.
    let no_id = json!({"hook_event_name": "PreToolUse", "tool_name": "request_user_input",
        "tool_input": {"questions": [{"header": "H", "question": "Q?"}]}});
    assert_silent(&harness(&l, "codex", &no_id.to_string()));
    l.assert_not_created();
}

#[test]
fn a_call_whose_result_is_not_in_the_transcript_yet_is_left_alone() {
    // Claude Code may write the tool's result line after the Stop hook ran: a call without
    // one is not taken for a refused card.
    let l = Ledger::new();
    assert_silent(&hook(&l, &[], &event("pre_tool_use.json")));
    l.ok(["answer", "--id", "1", "--answer", "SQLite"]);
    l.ok(["answer", "--id", "2", "--answer", "Export"]);
    let first_line = event("transcript_refused.jsonl")
        .lines()
        .find(|line| line.contains("\"tool_use\""))
        .unwrap()
        .to_string();
    let path = l.dir.path().join("transcript.jsonl");
    std::fs::write(&path, first_line + "\n").unwrap();
    let mut stop: Value = serde_json::from_str(&event("stop.json")).unwrap();
    stop["transcript_path"] = json!(path);
    assert_silent(&hook(&l, &[], &stop.to_string()));
}

#[test]
fn codex_and_gemini_calls_are_never_answered_from_an_earlier_call() {
    // Codex names its calls: a new call of the same text is its own question.
    let l = Ledger::new();
    let pre = fixture(&format!("{CODEX}/pre_tool_use.json"));
    assert_silent(&harness(&l, "codex", &as_call(&pre, "S", "c1")));
    l.ok(["answer", "--id", "1", "--answer", "sqlite"]);
    l.ok(["answer", "--id", "2", "--answer", "ledger"]);
    assert_silent(&harness(&l, "codex", &as_call(&pre, "S", "c2")));
    assert_eq!(l.all().len(), 4);
    let again = harness(&l, "codex", &as_call(&pre, "S", "c1"));
    assert!(
        again.stdout.contains("deny"),
        "call c1 is answered: {again:?}"
    );

    // Gemini names none: a call is its session and its input, and once it is over (its
    // card answered, or its answers handed to the agent) the same input asks anew.
    let l = Ledger::new();
    let before = fixture(&format!("{GEMINI}/before_tool.json"));
    let after = fixture(&format!("{GEMINI}/after_tool.json"));
    assert_silent(&harness(&l, "gemini", &before));
    assert_silent(&harness(&l, "gemini", &before));
    assert_eq!(
        l.all().len(),
        3,
        "a re-run of the call finds its own questions"
    );
    assert_silent(&harness(&l, "gemini", &after));
    let all = l.all();
    assert_eq!(
        all.len(),
        3,
        "the card answered the call's questions: {all:?}"
    );
    assert_eq!(all[0]["answer"], "PostgreSQL");
    assert_silent(&harness(&l, "gemini", &before));
    let all = l.all();
    assert_eq!(all.len(), 6, "a later call asks anew: {all:?}");
    for id in ["4", "5", "6"] {
        l.ok(["answer", "--id", id, "--answer", "Yes"]);
    }
    let handed = harness(&l, "gemini", &before);
    assert!(handed.stdout.contains("deny"), "{handed:?}");
    assert_silent(&harness(&l, "gemini", &before));
    assert_eq!(l.all().len(), 9, "and once handed over, the call is over");
    // Another session is another call.
    assert_silent(&harness(&l, "gemini", &as_call(&before, "other", "-")));
    assert_eq!(l.all().len(), 12);
}

/// A wait Codex would kill is refused as Gemini CLI's is: the project's config runs
/// `questions hook codex --wait 30` with a hand-written `timeout` of 5 s, so the hook
/// waits what fits (2 s, with its grace) and says so.
#[test]
fn sqlite_only_codex_wait_longer_than_the_written_timeout_is_refused() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".codex")).unwrap();
    std::fs::write(
        project.path().join(".codex/config.toml"),
        "[[hooks.PreToolUse]]\nmatcher = \"request_user_input\"\n\n\
         [[hooks.PreToolUse.hooks]]\ntype = \"command\"\n\
         command = \"questions hook codex --wait 30\"\ntimeout = 5\n",
    )
    .unwrap();
    let pre = fixture(&format!("{CODEX}/pre_tool_use.json"));
    let started = Instant::now();
    let mut cmd = crate::common::bare_command(project.path());
    cmd.env("QUESTIONS_DB", &l.path)
        .env("HOME", project.path())
        .env_remove("CODEX_HOME")
        .args(["hook", "codex", "--wait", "30"])
        .write_stdin(pre);
    let run = crate::common::finish(cmd);
    let took = started.elapsed();
    assert_silent(&run);
    assert!(took < Duration::from_secs(10), "waited {took:?}");
    assert!(
        run.stderr.contains("--wait 30 refused") && run.stderr.contains("after 5 s"),
        "{run:?}"
    );
    assert_eq!(l.all().len(), 2, "the questions are logged all the same");
}

/// A wait Gemini CLI would kill is refused: the settings run `questions hook gemini --wait
/// 30` with a `timeout` of 5 000 ms (Gemini CLI's unit), so the hook waits what fits (2 s,
/// with its grace) and says so, instead of being killed with the late answer unsaid.
#[test]
fn sqlite_only_gemini_wait_longer_than_the_written_timeout_is_refused() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".gemini")).unwrap();
    std::fs::write(
        project.path().join(".gemini/settings.json"),
        json!({"hooks": {"BeforeTool": [{"matcher": "ask_user", "hooks": [
            {"type": "command", "command": "questions hook gemini --wait 30", "timeout": 5000}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let before = fixture(&format!("{GEMINI_CAPTURED}/before_tool.json"));
    let started = Instant::now();
    let mut cmd = crate::common::bare_command(project.path());
    cmd.env("QUESTIONS_DB", &l.path)
        .env("HOME", project.path())
        .args(["hook", "gemini", "--wait", "30"])
        .write_stdin(before.clone());
    let run = crate::common::finish(cmd);
    let took = started.elapsed();
    assert_silent(&run);
    assert!(took < Duration::from_secs(10), "waited {took:?}");
    assert!(
        run.stderr.contains("--wait 30 refused") && run.stderr.contains("5000 ms"),
        "{run:?}"
    );
    assert_eq!(l.all().len(), 1, "the question is logged all the same");

    // A timeout that covers the wait is left alone (nothing answers: it waits it out).
    std::fs::write(
        project.path().join(".gemini/settings.json"),
        json!({"hooks": {"BeforeTool": [{"matcher": "ask_user", "hooks": [
            {"type": "command", "command": "questions hook gemini --wait 1", "timeout": 31000}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let mut cmd = crate::common::bare_command(project.path());
    cmd.env("QUESTIONS_DB", &l.path)
        .env("HOME", project.path())
        .args(["hook", "gemini", "--wait", "1"])
        .write_stdin(before);
    let run = crate::common::finish(cmd);
    assert!(!run.stderr.contains("refused"), "{run:?}");
}
