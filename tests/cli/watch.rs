//! Watchers (§8), against a real HTTP receiver on 127.0.0.1 and a real command: at least
//! once, in order, retried, resumed where they stopped, signed.

use std::time::Duration;

use crate::common::*;
use crate::receiver::{Behavior, Receiver};

/// The secret the tests sign with, and its variable.
const SECRET: &str = "s3cret";

fn watch(l: &Ledger, name: &str, url: &str, extra: &[&str]) -> Run {
    let mut cmd = l.command();
    cmd.env("HOOK_SECRET", SECRET).args([
        "watch",
        "--name",
        name,
        "--webhook",
        url,
        "--secret-env",
        "HOOK_SECRET",
        "--from-start",
    ]);
    cmd.args(extra);
    finish(cmd)
}

/// The ledger's id, as every event names it.
fn ledger_id(l: &Ledger) -> String {
    let run = l.run(["events"]);
    let first: serde_json::Value =
        serde_json::from_str(run.stdout.lines().next().expect("an event")).unwrap();
    first["ledger"]
        .as_str()
        .expect("the ledger's id")
        .to_string()
}

fn hmac_hex(body: &[u8]) -> String {
    questions::watch::signature(SECRET.as_bytes(), body)
}

#[test]
fn a_receiver_that_fails_twice_gets_the_event_a_third_time_signed_and_keyed() {
    let l = Ledger::new();
    l.log("s", "Goal?");
    let hook = Receiver::start(Behavior::FailFirst(2));
    let run = watch(&l, "ci", &hook.url, &["--timeout", "4"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json["delivered"], 1);
    assert_eq!(run.json["failed_attempts"], 2);
    let got = hook.requests();
    assert_eq!(got.len(), 3);
    let key = format!("{}:1", ledger_id(&l));
    for r in &got {
        assert_eq!(r.path, "/hook");
        assert_eq!(r.header("Idempotency-Key"), Some(key.as_str()));
        assert_eq!(r.header("X-Questions-Seq"), Some("1"));
        assert_eq!(r.json()["ledger"], ledger_id(&l));
        assert_eq!(r.json()["event"], "logged");
        assert_eq!(r.json()["after"]["question"], "Goal?");
        let expected = format!("sha256={}", hmac_hex(&r.body));
        assert_eq!(r.header("X-Questions-Signature"), Some(expected.as_str()));
    }
    // Its position is in the ledger: run again, nothing is repeated.
    let again = watch(&l, "ci", &hook.url, &["--timeout", "0.5"]);
    assert_eq!(again.json["delivered"], 0, "{again:?}");
    assert_eq!(hook.requests().len(), 3);
}

#[test]
fn a_receiver_that_never_answers_holds_the_position_until_one_does() {
    let l = Ledger::new();
    l.log("s", "First?");
    let silent = Receiver::start(Behavior::Silent);
    let run = watch(
        &l,
        "stuck",
        &silent.url,
        &["--timeout", "2", "--webhook-timeout", "0.4"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json["delivered"], 0);
    assert!(run.json["failed_attempts"].as_u64().unwrap() >= 1);
    assert_eq!(run.json["position"], 0);

    l.log("s", "Second?");
    let good = Receiver::start(Behavior::Accept);
    let run = watch(&l, "stuck", &good.url, &["--timeout", "1"]);
    assert_eq!(run.json["delivered"], 2, "{run:?}");
    let seqs: Vec<String> = good
        .requests()
        .iter()
        .map(|r| r.header("Idempotency-Key").unwrap().to_string())
        .collect();
    let id = ledger_id(&l);
    assert_eq!(
        seqs,
        [format!("{id}:1"), format!("{id}:2")],
        "in order, nothing skipped"
    );
}

#[test]
fn a_watcher_killed_mid_delivery_repeats_only_the_unconfirmed_event() {
    let l = Ledger::new();
    for i in 0..3 {
        l.log("s", &format!("Question {i}?"));
    }
    // The first receiver confirms slowly: the watcher is killed while it waits.
    let slow = Receiver::start(Behavior::Slow(Duration::from_secs(3)));
    let mut child = std::process::Command::new(BIN)
        .current_dir(l.dir.path())
        .env("QUESTIONS_NOW", NOW)
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(l.db())
        .args([
            "watch",
            "--name",
            "w",
            "--from-start",
            "--webhook",
            &slow.url,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(slow.wait_for(1, Duration::from_secs(10)).len(), 1);
    child.kill().unwrap(); // SIGKILL, mid-delivery
    child.wait().unwrap();

    let good = Receiver::start(Behavior::Accept);
    let mut cmd = l.command();
    cmd.args([
        "watch",
        "--name",
        "w",
        "--from-start",
        "--webhook",
        &good.url,
        "--timeout",
        "1",
    ]);
    let run = finish(cmd);
    assert_eq!(run.json["delivered"], 3, "{run:?}");
    let keys = |r: &Receiver| -> Vec<String> {
        r.requests()
            .iter()
            .map(|q| q.header("Idempotency-Key").unwrap().to_string())
            .collect()
    };
    let id = ledger_id(&l);
    assert_eq!(keys(&slow), [format!("{id}:1")]);
    assert_eq!(
        keys(&good),
        [format!("{id}:1"), format!("{id}:2"), format!("{id}:3")],
        "the unconfirmed one again, then the rest"
    );
}

#[test]
fn exec_runs_a_command_per_event_and_filters_by_kind_and_stage() {
    let l = Ledger::new();
    let out = l.dir.path().join("delivered.jsonl");
    let id = l.log("intake", "Goal?");
    l.log("design", "Database?");
    l.ok([
        "answer",
        "--id",
        &id.to_string(),
        "--answer",
        "A blog",
        "--by",
        "ann",
    ]);
    let mut cmd = l.command();
    cmd.args([
        "watch",
        "--name",
        "script",
        "--from-start",
        "--on",
        "logged,answered",
        "--stage",
        "intake",
        "--exec",
        &format!(
            "cat >> '{}' && echo \"seq=$QUESTIONS_EVENT_SEQ\" >> '{}.seqs'",
            out.display(),
            out.display()
        ),
        "--timeout",
        "0.5",
    ]);
    let run = finish(cmd);
    assert_eq!(run.json["delivered"], 2, "{run:?}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["event"], "logged");
    assert_eq!(lines[1]["event"], "answered");
    assert_eq!(lines[1]["answered_by"], "ann");
    assert_eq!(
        std::fs::read_to_string(format!("{}.seqs", out.display())).unwrap(),
        "seq=1\nseq=3\n"
    );
    // A command that fails is tried again: its event is not passed over.
    let mut cmd = l.command();
    cmd.args([
        "watch",
        "--name",
        "failing",
        "--from-start",
        "--exec",
        "exit 3",
        "--timeout",
        "1",
    ]);
    let run = finish(cmd);
    assert_eq!(
        (run.json["delivered"].clone(), run.json["position"].clone()),
        (0.into(), 0.into())
    );
}

#[test]
fn slack_and_ntfy_get_messages_shaped_for_them() {
    let l = Ledger::new();
    l.log_with("intake", "Which region?", &["--required", "true"]);
    let slack = Receiver::start(Behavior::Accept);
    let mut cmd = l.command();
    cmd.args([
        "watch",
        "--name",
        "chat",
        "--from-start",
        "--format",
        "slack",
        "--webhook",
        &slack.url,
        "--timeout",
        "0.5",
    ]);
    finish(cmd);
    let text = slack.requests()[0].json()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("Which region?") && text.contains("intake"),
        "{text}"
    );

    let ntfy = Receiver::start(Behavior::Accept);
    let mut cmd = l.command();
    cmd.args([
        "watch",
        "--name",
        "phone",
        "--from-start",
        "--format",
        "ntfy",
        "--webhook",
        &ntfy.url,
        "--timeout",
        "0.5",
    ]);
    finish(cmd);
    let r = &ntfy.requests()[0];
    assert!(r.text().contains("Which region?"), "{}", r.text());
    assert_eq!(r.header("Priority"), Some("high"));
    assert!(r.header("Title").unwrap().contains("logged"));
}

#[test]
fn bad_watch_arguments_are_usage_errors() {
    let l = Ledger::new();
    for bad in [
        vec!["watch", "--name", "x"],
        vec![
            "watch",
            "--name",
            "x",
            "--exec",
            "true",
            "--webhook",
            "http://127.0.0.1:1/",
        ],
        vec!["watch", "--name", "x", "--webhook", "ftp://example/"],
        vec!["watch", "--name", "x", "--exec", "true", "--on", "nonsense"],
        vec![
            "watch",
            "--name",
            "x",
            "--exec",
            "true",
            "--secret-env",
            "NOT_SET_ANYWHERE",
        ],
    ] {
        let run = l.run(&bad);
        assert_eq!(
            (run.code, run.error_code()),
            (2, "usage"),
            "{bad:?}: {run:?}"
        );
    }
}

/// The shell block after `<!-- recipe: NAME` in the guide (people and time, or CI).
fn recipe(name: &str) -> String {
    let readme = [
        include_str!("../../docs/guide/people.md"),
        include_str!("../../docs/guide/ci.md"),
    ]
    .concat();
    let at = readme
        .find(&format!("<!-- recipe: {name}"))
        .unwrap_or_else(|| panic!("docs/guide has no recipe '{name}'"));
    let block = &readme[at..];
    let start = block.find("```sh\n").unwrap() + "```sh\n".len();
    let end = block[start..].find("```").unwrap();
    block[start..start + end].to_string()
}

/// Ends a recipe's shell and everything it started.
fn stop(child: &mut std::process::Child) {
    let _ = std::process::Command::new("kill")
        .args(["-9", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
}

/// A shell running a recipe of the docs with `questions` on its PATH and this ledger.
fn shell(l: &Ledger, script: &str) -> std::process::Command {
    let bin_dir = std::path::Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("sh");
    // Its own process group, so that `stop` ends the recipe's children with it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.arg("-c")
        .arg(script)
        .current_dir(l.dir.path())
        .env("PATH", path)
        .env("QUESTIONS_DB", l.db())
        .env("QUESTIONS_NOW", NOW)
        .env_remove("QUESTIONS_USER");
    cmd
}

#[test]
fn the_readme_ntfy_recipe_pings_for_a_required_question() {
    let l = Ledger::new();
    let ntfy = Receiver::start(Behavior::Accept);
    let idle = Pause::new(l.dir.path(), "watch-idle");
    let mut watcher = shell(&l, &recipe("ntfy"))
        .env("NTFY_URL", &ntfy.url)
        .env("QUESTIONS_TEST_PAUSE", &idle.env)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The watcher starts at the end of the history: it is there once it is idle.
    idle.reached();
    idle.release();
    l.log_with("s", "Optional detail?", &["--required", "false"]);
    l.log("s", "Which region?");
    // Arrivals from here on: the watcher's idle after the ping may come before the test
    // hears of the ping, so it is not forgotten after it.
    idle.forget();
    let got = ntfy.wait_for(1, Duration::from_secs(10));
    // Idle again after the logs, it has delivered or passed over what it read (its
    // deliveries are synchronous, in order: the optional question, logged first, was
    // passed over before the ping): a second ping would have come by now.
    idle.reached();
    stop(&mut watcher);
    let bodies: Vec<String> = ntfy
        .requests()
        .iter()
        .map(super::receiver::Request::text)
        .collect();
    assert_eq!(
        bodies.len(),
        1,
        "only the required question pings: {bodies:?}"
    );
    assert!(got[0].text().contains("Which region?"), "{}", got[0].text());
    assert_eq!(got[0].header("Priority"), Some("high"));
}

#[test]
fn the_readme_ci_recipe_waits_for_the_answer_while_the_chat_hears_of_the_question() {
    let l = Ledger::new();
    // The subagent's first question is logged before the job's gate step starts.
    let first = l.log("release", "Is the changelog done?");
    let chat = Receiver::start(Behavior::Accept);
    let idle = Pause::new(l.dir.path(), "watch-idle");
    let mut job = shell(&l, &recipe("ci"))
        .env("CHAT_WEBHOOK_URL", &chat.url)
        .env("CI_JOB_ID", "42")
        .env("QUESTIONS_TEST_PAUSE", &idle.env)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The watcher starts at the end of the history (after the first question): it is
    // there once it is idle.
    idle.reached();
    idle.release();
    // While the job waits, another question comes for the release; the chat hears of it.
    let id = l.log("release", "Ship it on Friday?");
    let told = chat.wait_for(1, Duration::from_secs(10));
    assert!(
        told[0].json()["text"]
            .as_str()
            .unwrap()
            .contains("Ship it on Friday?"),
        "{}",
        told[0].text()
    );
    assert!(
        job.try_wait().unwrap().is_none(),
        "the job waits for the answer"
    );
    // A person answers both; the job's gate opens and it ends with 0.
    l.ok(["answer", "--id", &first.to_string(), "--answer", "yes"]);
    assert!(job.try_wait().unwrap().is_none(), "one is still pending");
    l.ok(["answer", "--id", &id.to_string(), "--answer", "yes"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = job.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the job never finished"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let finished = status.success();
    stop(&mut job);
    assert!(finished, "{status:?}");
}

#[test]
fn a_redirect_is_a_failed_delivery_not_a_get_that_counts() {
    let l = Ledger::new();
    l.log("s", "Goal?");
    let hook = Receiver::start(Behavior::Redirect);
    let run = watch(&l, "moved", &hook.url, &["--timeout", "1.5"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json["delivered"], 0, "{run:?}");
    assert!(run.json["failed_attempts"].as_u64().unwrap() >= 1);
    assert!(run.stderr.contains("redirect"), "{}", run.stderr);
    // Only POSTs to the URL given: the redirect was not followed.
    assert!(hook.requests().iter().all(|r| r.path == "/hook"));
}

/// A reset starts the seqs again: a running watcher goes on into the new ledger from its
/// first event, and the keys it sends name the ledger, so that a receiver that dedups by
/// them never takes the new ledger's first event for the old one's.
#[test]
fn a_watcher_goes_on_into_a_ledger_that_replaced_its_own_with_keys_that_name_it() {
    let l = Ledger::new();
    l.log("s", "Old one?");
    let old = ledger_id(&l);
    let dir = l.dir.path();
    let (out, keys) = (dir.join("delivered.jsonl"), dir.join("keys"));
    let (arrived, go) = (dir.join("arrived"), dir.join("go"));
    // The first delivery holds until the test says go: the reset comes in the middle of
    // it, between the watcher's read of the old ledger and its saving the position.
    let script = format!(
        "cat >> '{out}'; echo >> '{out}'; echo \"$QUESTIONS_EVENT_SEQ\" >> '{keys}'; \
         if [ ! -e '{go}' ]; then touch '{arrived}'; \
         while [ ! -e '{go}' ]; do sleep 0.01; done; fi",
        out = out.display(),
        keys = keys.display(),
        go = go.display(),
        arrived = arrived.display(),
    );
    let mut watcher = std::process::Command::new(BIN)
        .current_dir(dir)
        .env("QUESTIONS_NOW", NOW)
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(l.db())
        .args(["watch", "--name", "w", "--from-start", "--exec", &script])
        .args(["--timeout", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let end = std::time::Instant::now() + Duration::from_secs(30);
    while !arrived.exists() {
        assert!(std::time::Instant::now() < end, "no delivery began");
        std::thread::sleep(Duration::from_millis(5));
    }
    l.ok(["reset", "--yes"]);
    l.log("s", "New one?");
    let new = ledger_id(&l);
    assert_ne!(new, old);
    std::fs::write(&go, b"").unwrap();
    let delivered = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    while delivered().len() < 2 && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    let events = delivered();
    assert_eq!(events.len(), 2, "the new ledger's first event: {events:?}");
    assert_eq!(
        (events[0]["ledger"].as_str(), events[0]["seq"].as_i64()),
        (Some(old.as_str()), Some(1))
    );
    assert_eq!(
        (events[1]["ledger"].as_str(), events[1]["seq"].as_i64()),
        (Some(new.as_str()), Some(1))
    );
    assert_eq!(events[1]["after"]["question"], "New one?");
    // The position the watcher keeps now is the new ledger's.
    let again = finish({
        let mut cmd = l.command();
        cmd.args(["watch", "--name", "w", "--exec", "cat > /dev/null"])
            .args(["--timeout", "0.3"]);
        cmd
    });
    assert_eq!(
        (
            again.json["delivered"].as_i64(),
            again.json["position"].as_i64()
        ),
        (Some(0), Some(1)),
        "{again:?}"
    );
}

/// A position stored for the watcher's name that is past the last event belongs to a
/// ledger a reset replaced (an older `questions` could save one there): the watcher starts
/// from this ledger's first event instead of skipping everything up to it.
#[test]
fn a_stored_position_past_the_last_event_starts_from_the_first() {
    let l = Ledger::new();
    l.log("s", "One?");
    l.log("s", "Two?");
    assert!(!l.sql_is_refused(
        "INSERT INTO watchers (name, position, updated_at) \
         VALUES ('w', 7, '2026-01-02T03:04:05.000Z')"
    ));
    let hook = Receiver::start(Behavior::Accept);
    let run = watch(&l, "w", &hook.url, &["--timeout", "0.5"]);
    assert_eq!(run.json["delivered"], 2, "{run:?}");
    assert_eq!(run.json["position"], 2);
    assert!(run.stderr.contains("past the last event"), "{}", run.stderr);
    let id = ledger_id(&l);
    let keys: Vec<String> = hook
        .requests()
        .iter()
        .map(|r| r.header("Idempotency-Key").unwrap().to_string())
        .collect();
    assert_eq!(keys, [format!("{id}:1"), format!("{id}:2")]);
}

#[test]
fn a_webhook_url_that_cannot_work_is_a_usage_error_not_retried() {
    let l = Ledger::new();
    for url in [
        "http://[::1",
        "http://[::1]x/",
        "http://[not-v6]/",
        "http://host:port/",
    ] {
        let run = l.run(["watch", "--name", "w", "--webhook", url, "--timeout", "1"]);
        assert_eq!(run.code, 2, "{url}: {run:?}");
        assert_eq!(run.error_code(), "usage", "{url}");
    }
}
