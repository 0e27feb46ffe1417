//! Long-running readers follow the ledger at their location as it is (reset, replaced,
//! created after they started), a change names what was shown, and the event stream is
//! delivered in seq order without a gap under concurrent writers.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Ledger, Pause, BIN, NOW};
#[cfg(feature = "serve")]
use crate::serve::Served;

/// The binary on this ledger, started and left running; its stdout is piped.
fn spawn(l: &Ledger, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(l.dir.path())
        .env("QUESTIONS_NOW", NOW)
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(l.db())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("the binary starts")
}

/// `spawn`s a call that waits (`events --follow`, `check --wait`), and returns once it
/// has read the ledger and is waiting for a change.
fn follow(l: &Ledger, args: &[&str]) -> Child {
    let wait = Pause::new(l.dir.path(), "wait");
    let child = spawn(l, args, &[("QUESTIONS_TEST_PAUSE", &wait.env)]);
    wait.reached();
    wait.release();
    child
}

/// Reads JSON lines from a follower until `done` holds for what it read, or 20 s pass.
fn read_until(child: &mut Child, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let end = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while !done(&seen) {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen.push(serde_json::from_str(&line).expect("a JSON line")),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    seen
}

fn texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["event"] == "logged")
        .map(|e| e["after"]["question"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
#[cfg(feature = "serve")]
fn an_answer_meant_for_a_question_of_a_reset_ledger_is_refused() {
    let l = Ledger::new();
    l.log("s", "Ship the release?");
    let served = Served::start(&l, &[]);
    let (status, listed) = served.api("GET", "/api/questions", None);
    assert_eq!(status, 200);
    let old_ledger = listed["ledger"]
        .as_str()
        .expect("the ledger's id")
        .to_string();
    assert_eq!(listed["questions"][0]["id"], 1);

    l.ok(["reset", "--yes"]);
    assert_eq!(l.log("s", "Delete the production database?"), 1);

    // What the client showed the person names the old ledger and the old text.
    let (status, body) = served.api(
        "POST",
        "/api/questions/1/answer",
        Some(serde_json::json!({"answer": "yes", "ledger": old_ledger, "question": "Ship the release?"})),
    );
    assert_eq!(
        (status, body["error_code"].as_str()),
        (409, Some("conflict"))
    );
    // The text alone is enough, and so is the fingerprint the page sends.
    let (status, _) = served.api(
        "POST",
        "/api/questions/1/answer",
        Some(serde_json::json!({"answer": "yes", "question": "Ship the release?"})),
    );
    assert_eq!(status, 409);
    let run = l.run(["check", "--stage", "s"]);
    assert_eq!(run.code, 1, "nothing was recorded: {run:?}");
    assert_eq!(l.question(1)["status"], "pending");

    // The server reads the new ledger now, and a change naming it goes through.
    let (_, listed) = served.api("GET", "/api/questions", None);
    assert_eq!(
        listed["questions"][0]["question"],
        "Delete the production database?"
    );
    let new_ledger = listed["ledger"].as_str().unwrap().to_string();
    assert_ne!(new_ledger, old_ledger);
    let (status, body) = served.api(
        "POST",
        "/api/questions/1/answer",
        Some(serde_json::json!({"answer": "no", "ledger": new_ledger,
                    "question": "Delete the production database?"})),
    );
    assert_eq!(status, 200, "{body}");
    // Without anything shown (a script), the API answers by id as the CLI does.
    l.log("s", "Third?");
    let (status, _) = served.api("POST", "/api/questions/2/skip", None);
    assert_eq!(status, 200);
}

#[test]
#[cfg(feature = "serve")]
fn the_inbox_s_forms_name_the_question_they_showed() {
    let l = Ledger::new();
    l.log("s", "Ship the release?");
    let served = Served::start(&l, &[]);
    let cookie = format!(
        "Cookie: questions_token_{}={}",
        served.port,
        crate::serve::TOKEN
    );
    let page = served.request("GET", "/", &[&cookie], "").body;
    let hidden = |name: &str| {
        let at = page
            .find(&format!("name=\"{name}\" value=\""))
            .unwrap_or_else(|| panic!("a hidden {name} field: {page}"));
        let rest = &page[at + name.len() + 15..];
        rest[..rest.find('"').unwrap()].to_string()
    };
    let (ledger, fingerprint, csrf) = (hidden("ledger"), hidden("fingerprint"), hidden("csrf"));
    assert_eq!(fingerprint.len(), 16);

    l.ok(["reset", "--yes"]);
    l.log("s", "Delete the production database?");
    let form = format!("answer=yes&ledger={ledger}&fingerprint={fingerprint}&csrf={csrf}");
    let origin = format!("Origin: {}", served.base());
    let reply = served.request(
        "POST",
        "/q/1/answer",
        &[
            &cookie,
            &origin,
            "Content-Type: application/x-www-form-urlencoded",
        ],
        &form,
    );
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert_eq!(l.question(1)["status"], "pending");
}

#[test]
fn direct_only_events_follow_started_before_the_ledger_exists_sees_its_first_events() {
    // Counts the ledger's events from its first: the HTTPS pass's token is one (its
    // followers are tested over https:// in remote::).
    crate::direct_only!();
    let l = Ledger::new();
    let mut follower = follow(&l, &["events", "--follow", "--timeout", "20"]);
    l.log("s", "First?");
    let seen = read_until(&mut follower, |s| !s.is_empty());
    assert_eq!(texts(&seen), vec!["First?"]);
}

#[test]
fn direct_only_events_follow_goes_on_into_a_ledger_that_replaced_its_own() {
    // Counts the ledger's events from its first: the HTTPS pass's token is one (its
    // followers are tested over https:// in remote::).
    crate::direct_only!();
    let l = Ledger::new();
    l.log("s", "Old one?");
    l.log("s", "Old two?");
    let wait = Pause::new(l.dir.path(), "wait");
    let mut follower = spawn(
        &l,
        &["events", "--follow", "--timeout", "20"],
        &[("QUESTIONS_TEST_PAUSE", &wait.env)],
    );
    wait.reached();
    wait.release();
    // The reset changes the ledger's files, which wakes the follower: it comes round
    // again (and reads) after that, with nothing else written meanwhile.
    wait.forget();
    l.ok(["reset", "--yes"]);
    wait.reached();
    l.log("s", "New?");
    let seen = read_until(&mut follower, |s| texts(s).contains(&"New?".to_string()));
    assert_eq!(texts(&seen), vec!["Old one?", "Old two?", "New?"]);
    // The new ledger's own first event, not one skipped for a seq the old one had; each
    // event names its ledger, so the two seqs 1 are told apart.
    assert_eq!(seen.last().unwrap()["seq"], 1);
    assert_eq!(seen[0]["ledger"], seen[1]["ledger"]);
    assert_ne!(seen[0]["ledger"], seen[2]["ledger"]);
}

#[test]
fn check_wait_on_ids_ends_when_the_ledger_is_replaced() {
    let l = Ledger::new();
    l.log("s", "Old?");
    let wait = Pause::new(l.dir.path(), "wait");
    let child = spawn(
        &l,
        &["check", "--ids", "1", "--wait", "--timeout", "20"],
        &[("QUESTIONS_TEST_PAUSE", &wait.env)],
    );
    // It read the old ledger and stops before its first wait; the ledger is reset and a
    // new one made meanwhile. (On PostgreSQL the connection first notes the ledger's id
    // at that wait, and would note the new one's: the waiter compares the id each of its
    // reads saw.)
    wait.reached();
    l.ok(["reset", "--yes"]);
    let new = l.log("s", "New?");
    wait.release();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json["error_code"], "conflict", "{json}");
    assert_eq!(l.question(new)["status"], "pending");
}

#[test]
fn check_wait_on_a_stage_follows_the_ledger_that_replaced_its_own() {
    let l = Ledger::new();
    let old = l.log("s", "Old?");
    let wait = Pause::new(l.dir.path(), "wait");
    let child = spawn(
        &l,
        &["check", "--stage", "s", "--wait", "--timeout", "20"],
        &[("QUESTIONS_TEST_PAUSE", &wait.env)],
    );
    // It read the old ledger and stops before waiting; meanwhile the ledger is replaced,
    // so that it never reads the empty one in between (where the stage is unknown).
    wait.reached();
    l.ok(["reset", "--yes"]);
    let new = l.log("s", "New?");
    assert_eq!(new, old);
    // It goes round once: it read the new ledger, with its question pending.
    wait.go_round();
    l.ok(["answer", "--id", &new.to_string(), "--answer", "yes"]);
    let out = child.wait_with_output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{json}");
    assert_eq!(json["gate"], "pass");
    // The new ledger's question, answered: not a stage found empty.
    assert_eq!(json["total"], 1, "{json}");
    assert_eq!(json["known_stage"], true, "{json}");
}

#[test]
fn check_wait_on_a_stage_ends_when_a_reset_takes_its_questions_away() {
    let l = Ledger::new();
    l.log("s", "Old?");
    let wait = Pause::new(l.dir.path(), "wait");
    let child = spawn(
        &l,
        &["check", "--stage", "s", "--wait", "--timeout", "20"],
        &[("QUESTIONS_TEST_PAUSE", &wait.env)],
    );
    // It read the stage, with its question pending, and stops before waiting; meanwhile
    // the ledger is reset, and nothing is logged into the new one.
    wait.reached();
    l.ok(["reset", "--yes"]);
    wait.release();
    let out = child.wait_with_output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{json}");
    assert_eq!(json["error_code"], "conflict", "{json}");
    let error = json["error"].as_str().unwrap();
    assert!(
        error.contains("reset or replaced while check waited"),
        "{error}"
    );
    assert!(error.contains("stage 's'"), "{error}");
}

/// Every event of the history, once each and in order: nothing skipped, nothing repeated.
/// (Seqs may have gaps on PostgreSQL, where a transaction retried after a lost race
/// leaves its seq unused; the history read afterwards is the reference.)
fn assert_all_seen(l: &Ledger, seen: &[Value], total: usize) {
    let seqs = |events: &[Value]| -> Vec<i64> {
        events.iter().map(|e| e["seq"].as_i64().unwrap()).collect()
    };
    let all: Vec<Value> = l
        .run(["events"])
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(all.len(), total);
    assert_eq!(seqs(seen), seqs(&all));
}

#[test]
fn direct_only_a_follower_never_skips_an_event_whose_writer_committed_late() {
    // Counts the ledger's events from its first: the HTTPS pass's token is one (its
    // followers are tested over https:// in remote::).
    crate::direct_only!();
    let l = Ledger::new();
    l.log("s", "First?");
    let mut follower = follow(&l, &["events", "--follow", "--timeout", "20"]);
    // A writer that takes its seq, then holds its commit open until told to go on.
    let commit = Pause::new(l.dir.path(), "before-commit");
    let slow = spawn(
        &l,
        &["log", "--stage", "s", "--question", "Slow?"],
        &[("QUESTIONS_TEST_PAUSE", &commit.env)],
    );
    commit.reached();
    // Another writer meanwhile: it must not become visible before the slow one. On
    // PostgreSQL it commits while the slow one waits; on SQLite it waits for the slow
    // one's lock, once it has started its write.
    let start = Pause::new(l.dir.path(), "before-write");
    start.release();
    let mut fast = spawn(
        &l,
        &["log", "--stage", "s", "--question", "Fast?"],
        &[("QUESTIONS_TEST_PAUSE", &start.env)],
    );
    start.reached();
    if l.url.is_some() {
        assert!(fast.wait().unwrap().success(), "the fast writer failed");
    }
    commit.release();
    for child in [slow, fast] {
        assert!(child.wait_with_output().unwrap().status.success());
    }
    let seen = read_until(&mut follower, |s| s.len() >= 3);
    assert_all_seen(&l, &seen, 3);
}

#[test]
fn direct_only_sixteen_writers_and_a_follower_see_every_event_once_in_order() {
    // Counts the ledger's events from its first: the HTTPS pass's token is one (its
    // followers are tested over https:// in remote::).
    crate::direct_only!();
    let l = Ledger::new();
    l.log("s", "Start?");
    let mut follower = follow(&l, &["events", "--follow", "--timeout", "60"]);
    let per_writer = 12;
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let db = l.db();
            let dir = l.dir.path().to_path_buf();
            std::thread::spawn(move || {
                for n in 0..per_writer {
                    let out = Command::new(BIN)
                        .current_dir(&dir)
                        .env("QUESTIONS_NOW", NOW)
                        .env_remove("QUESTIONS_DB")
                        .arg("--db")
                        .arg(&db)
                        .args(["log", "--stage", "s", "--question", &format!("W{w} Q{n}?")])
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{out:?}");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let total = 1 + 16 * per_writer;
    let seen = read_until(&mut follower, |s| s.len() >= total);
    assert_all_seen(&l, &seen, total);
}
