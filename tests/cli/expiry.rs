//! Time running out (§8): applied once, by whichever command looks first, and never
//! recorded as a person's answer.

use crate::common::*;
use serde_json::Value;

fn events_of(l: &Ledger, id: i64) -> Vec<Value> {
    l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn an_expired_question_takes_its_default_or_is_skipped_by_nobody() {
    let l = Ledger::new();
    let defaulted = l.log_with(
        "s",
        "Deadline?",
        &[
            "--proposed",
            "Friday",
            "--expires-in",
            "1h",
            "--on-expiry",
            "default",
        ],
    );
    let skipped = l.log_with(
        "s",
        "Nice to have?",
        &["--expires-in", "30m", "--on-expiry", "skip"],
    );
    let q = l.question(defaulted);
    assert_eq!(q["expires_at"], later(3600));
    assert_eq!(q["on_expiry"], "default");

    // Before its time nothing happens.
    let early = l.run_at(&later(20 * 60), ["check", "--stage", "s"]);
    assert_eq!(early.json["pending_count"], 2, "{early:?}");

    // After it, the first command that looks applies it: check, here.
    let gate = l.run_at(&later(2 * 3600), ["check", "--stage", "s"]);
    assert_eq!(
        (gate.code, gate.json["gate"].clone()),
        (0, "pass".into()),
        "{gate:?}"
    );
    let q = l.question(defaulted);
    assert_eq!(q["status"], "answered");
    assert_eq!(q["answer"], "Friday");
    assert_eq!(q["channel"], "expiry");
    assert_eq!(q["answered_by"], Value::Null);
    let s = l.question(skipped);
    assert_eq!(
        (s["status"].clone(), s["skip_reason"].clone()),
        ("skipped".into(), "expired".into())
    );

    let events = events_of(&l, defaulted);
    let last = events.last().unwrap();
    assert_eq!(last["event"], "expired");
    assert_eq!(last["channel"], "expiry");
    assert_eq!(last["answered_by"], Value::Null);
    // Looking again changes nothing more, and shows what expiry did.
    let looked = l.run_at(&later(3 * 3600), ["list"]);
    assert_eq!(looked.code, 0, "{looked:?}");
    let statuses: Vec<&str> = looked.json["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["answered", "skipped"], "{looked:?}");
    assert_eq!(events_of(&l, defaulted).len(), events.len());
    assert_eq!(events_of(&l, skipped).len(), 2, "logged, then expired once");
}

#[test]
fn a_kept_question_stays_pending_and_check_says_its_time_is_up() {
    let l = Ledger::new();
    let id = l.log_with("s", "Budget?", &["--expires-in", "90s"]);
    assert_eq!(l.question(id)["on_expiry"], "keep");
    let gate = l.run_at(&later(120), ["check", "--stage", "s"]);
    assert_eq!(gate.code, 1, "{gate:?}");
    assert_eq!(gate.json["expired"], true);
    assert_eq!(l.question(id)["status"], "pending");
    assert_eq!(events_of(&l, id).len(), 1, "keep records nothing");
    let early = l.run_at(&later(30), ["check", "--stage", "s"]);
    assert!(early.json.get("expired").is_none(), "{early:?}");
}

#[test]
fn expiry_flags_are_checked_where_they_are_given() {
    let l = Ledger::new();
    for bad in [
        vec!["--expires-in", "soon"],
        vec!["--expires-in", "0s"],
        vec!["--expires-in", "1h", "--on-expiry", "later"],
        vec!["--on-expiry", "skip"],
        // default answers with the proposed value: there must be one.
        vec!["--expires-in", "1h", "--on-expiry", "default"],
    ] {
        let mut args = vec!["log", "--stage", "s", "--question", "q?"];
        args.extend(bad.iter().copied());
        let run = l.run(&args);
        assert_eq!(
            (run.code, run.error_code()),
            (2, "usage"),
            "{bad:?}: {run:?}"
        );
    }
    l.assert_not_created();
    let ingested = l.ok_stdin(
        [
            "ingest",
            "--stage",
            "s",
            "--expires-in",
            "2h",
            "--on-expiry",
            "skip",
        ],
        "QUESTIONS_NEEDED\nQ: One?\nQ: Two?\n",
    );
    for q in ingested["questions"].as_array().unwrap() {
        assert_eq!(q["expires_at"], later(7200));
        assert_eq!(q["on_expiry"], "skip");
    }
}

#[test]
fn sixteen_processes_looking_at_once_apply_each_expiry_exactly_once() {
    let l = Ledger::new();
    let ids: Vec<i64> = (0..12)
        .map(|i| {
            l.log_with(
                "s",
                &format!("Question {i}?"),
                &[
                    "--proposed",
                    "p",
                    "--expires-in",
                    "1m",
                    "--on-expiry",
                    "default",
                ],
            )
        })
        .collect();
    let when = later(3600);
    let children: Vec<_> = (0..16)
        .map(|i| {
            let mut cmd = std::process::Command::new(BIN);
            cmd.current_dir(l.dir.path())
                .env("QUESTIONS_NOW", &when)
                .env_remove("QUESTIONS_DB")
                .arg("--db")
                .arg(l.db())
                .args(if i % 2 == 0 {
                    vec!["check", "--stage", "s"]
                } else {
                    vec!["list", "--stage", "s"]
                })
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for id in ids {
        let expired = events_of(&l, id)
            .iter()
            .filter(|e| e["event"] == "expired")
            .count();
        assert_eq!(expired, 1, "question {id}");
        assert_eq!(l.question(id)["status"], "answered");
    }
}

#[test]
fn an_unusable_proposed_value_is_refused_without_naming_a_question_zero() {
    let l = Ledger::new();
    let run = l.run([
        "log",
        "--stage",
        "s",
        "--question",
        "Which one?",
        "--option",
        "A",
        "--option",
        "B",
        "--no-freeform",
        "--proposed",
        "C",
        "--expires-in",
        "1h",
        "--on-expiry",
        "default",
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    let message = run.json["error"].as_str().unwrap();
    assert!(!message.contains("question 0"), "{message}");
    assert!(message.contains("it takes only its options"), "{message}");
}
