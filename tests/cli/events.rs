//! The event stream (§8): JSON lines, resumable without repeats or gaps, and followed live.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

fn lines(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON event"))
        .collect()
}

#[test]
fn direct_only_events_print_as_lines_and_resume_without_repeats_or_gaps() {
    // Counts the ledger's events from its first: the HTTPS pass's token is one (its
    // followers are tested over https:// in remote::).
    crate::direct_only!();
    let l = Ledger::new();
    let a = l.log("intake", "Goal?");
    l.log("design", "Database?");
    l.ok(["answer", "--id", &a.to_string(), "--answer", "A blog"]);
    l.ok(["clear", "--stage", "design"]);

    let all = lines(&l.run(["events"]));
    let kinds: Vec<&str> = all.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["logged", "logged", "answered", "cleared"]);
    let seqs: Vec<i64> = all.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // Whole questions before and after, as history prints them.
    assert_eq!(all[2]["after"]["answer"], "A blog");
    assert_eq!(all[3]["before"]["question"], "Database?");
    assert_eq!(all[3]["stage"], "design");

    // Resuming after any seq gives exactly the rest.
    for (i, seq) in seqs.iter().enumerate() {
        let rest = lines(&l.run(["events", "--since", &seq.to_string()]));
        assert_eq!(rest, all[i + 1..].to_vec(), "after {seq}");
    }
    let intake = lines(&l.run(["events", "--stage", "intake"]));
    assert_eq!(intake.len(), 2);
    assert!(intake.iter().all(|e| e["stage"] == "intake"));
    // The cleared stage's events stay in its stream.
    assert_eq!(lines(&l.run(["events", "--stage", "design"])).len(), 2);
}

#[test]
fn direct_only_follow_sees_another_process_s_change_within_a_second() {
    // Counts the ledger's events from its first: the HTTPS pass's token is one (its
    // followers are tested over https:// in remote::).
    crate::direct_only!();
    let l = Ledger::new();
    l.log("s", "Before?");
    let wait = Pause::new(l.dir.path(), "wait");
    let mut follower = std::process::Command::new(BIN)
        .current_dir(l.dir.path())
        .env("QUESTIONS_NOW", NOW)
        .env("QUESTIONS_TEST_PAUSE", &wait.env)
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(l.db())
        .args(["events", "--since", "1", "--follow", "--timeout", "20"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(follower.stdout.take().unwrap());
    // It has read to the end of the history and waits for a change.
    wait.reached();
    wait.release();
    let logged_at = Instant::now();
    l.log("s", "After?");
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let seen_after = logged_at.elapsed();
    let event: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(event["after"]["question"], "After?");
    assert_eq!(event["seq"], 2);
    // Within a second of the other process's commit (the margin is the test's own).
    assert!(seen_after < Duration::from_millis(1500), "{seen_after:?}");
    let _ = follower.kill();
    let _ = follower.wait();
}

#[test]
fn direct_only_follow_stops_at_its_timeout_and_bad_arguments_are_usage_errors() {
    // Counts the ledger's events from its first: the HTTPS pass's token is one (its
    // followers are tested over https:// in remote::).
    crate::direct_only!();
    let l = Ledger::new();
    l.log("s", "Only?");
    let run = l.run(["events", "--follow", "--timeout", "0.3"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(lines(&run).len(), 1);
    for bad in [
        vec!["events", "--since", "-1"],
        vec!["events", "--since", "x"],
        vec!["events", "--timeout", "3"],
    ] {
        let run = l.run(&bad);
        assert_eq!((run.code, run.error_code()), (2, "usage"), "{bad:?}");
    }
}

/// A reset starts the seqs again: every event names its ledger, a position names one too
/// (`--since LEDGER:SEQ`), and a bare seq past this ledger's last event is refused rather
/// than skipping the new ledger's first events.
#[test]
fn direct_only_events_name_their_ledger_and_resume_across_a_reset() {
    // Counts the ledger's events from its first: the HTTPS pass's token is one (its
    // followers are tested over https:// in remote::).
    crate::direct_only!();
    let l = Ledger::new();
    l.log("s", "Old one?");
    l.log("s", "Old two?");
    let old = lines(&l.run(["events"]));
    let old_id = old[0]["ledger"].as_str().expect("a ledger id").to_string();
    assert!(!old_id.is_empty());
    assert!(
        old.iter().all(|e| e["ledger"] == old_id.as_str()),
        "{old:?}"
    );
    for event in &old {
        crate::schema::assert_valid("event", event);
    }
    // LEDGER:SEQ of this ledger resumes as SEQ does.
    let rest = l.run(["events", "--since", &format!("{old_id}:1")]);
    assert_eq!(lines(&rest), old[1..].to_vec());
    assert_eq!(rest.stderr, "");

    l.ok(["reset", "--yes"]);
    l.log("s", "New?");
    // The old ledger's position: the new ledger from its first event, said once.
    let resumed = l.run(["events", "--since", &format!("{old_id}:2")]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let new = lines(&resumed);
    assert_eq!(new.len(), 1, "{resumed:?}");
    assert_eq!(new[0]["seq"], 1);
    assert_eq!(new[0]["after"]["question"], "New?");
    let new_id = new[0]["ledger"].as_str().unwrap().to_string();
    assert_ne!(new_id, old_id);
    assert_eq!(
        resumed.stderr.matches("reset or replaced").count(),
        1,
        "{}",
        resumed.stderr
    );
    // Following, it says so once too, not on every look.
    let followed = l.run([
        "events",
        "--since",
        &format!("{old_id}:2"),
        "--follow",
        "--timeout",
        "1.5",
    ]);
    assert_eq!(lines(&followed).len(), 1);
    assert_eq!(followed.stderr.matches("reset or replaced").count(), 1);

    // A bare seq the new ledger never reached: refused, naming its last one.
    let past = l.run(["events", "--since", "2"]);
    assert_eq!((past.code, past.error_code()), (1, "not_found"), "{past:?}");
    let error = past.json["error"].as_str().unwrap();
    assert!(error.contains("past the last event"), "{error}");
    assert!(error.contains("seq 1"), "{error}");
    assert!(error.contains("reset"), "{error}");
    // Its own ledger's position past its end is refused the same; at its end, nothing.
    let past = l.run(["events", "--since", &format!("{new_id}:5")]);
    assert_eq!((past.code, past.error_code()), (1, "not_found"));
    let at_end = l.run(["events", "--since", &format!("{new_id}:1")]);
    assert_eq!((at_end.code, at_end.stdout.as_str()), (0, ""));
    for bad in [":1", "abc:", "abc:-1", "a b:1", "abc:x"] {
        let run = l.run(["events", "--since", bad]);
        assert_eq!((run.code, run.error_code()), (2, "usage"), "{bad}: {run:?}");
    }
}
