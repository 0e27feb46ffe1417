//! `policy set|list|unset` (§14a): routing kept in the ledger, every change in the
//! history, and a bad policy refused with nothing changed.

use crate::common::*;
use serde_json::{json, Value};

fn policy_events(l: &Ledger) -> Vec<Value> {
    l.run(["events", "--since", "0"])
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|e| e["event"] == "policy")
        .collect()
}

#[test]
fn a_policy_is_set_listed_and_unset_in_the_history() {
    let l = Ledger::new();
    l.ok(["group", "create", "oncall", "--admins", "root"]);
    let set = l.ok([
        "policy",
        "set",
        "--stage",
        "deploy-*",
        "--to",
        "alice,bob",
        "--remind-after",
        "90m",
        "--escalate-after",
        "2h",
        "--escalate-to",
        "group:oncall",
    ]);
    assert_eq!(set["procedure"], "policy");
    assert_eq!(set["changed"], true);
    assert_eq!(set["replaced"], Value::Null);
    assert_eq!(
        set["policy"],
        json!({
            "stage": "deploy-*",
            "to": ["alice", "bob"],
            "remind_after": "1h30m",
            "remind_max": 3,
            "escalate_after": "2h",
            "escalate_to": ["group:oncall"],
            "set_by": set["policy"]["set_by"],
            "set_at": NOW,
        })
    );
    assert!(set["policy"]["set_by"]
        .as_str()
        .is_some_and(|b| !b.is_empty()));
    // What list shows, set reads back: the same again changes nothing.
    let listed = l.ok(["policy", "list"]);
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["policies"][0], set["policy"]);
    let again = l.ok([
        "policy",
        "set",
        "--stage",
        "deploy-*",
        "--to",
        "bob,alice,bob",
        "--remind-after",
        "1h30m",
        "--remind-max",
        "3",
        "--escalate-after",
        "120m",
        "--escalate-to",
        "group:oncall",
    ]);
    assert_eq!(
        again["changed"], true,
        "the order of --to is the order asked"
    );
    let same = l.ok([
        "policy",
        "set",
        "--stage",
        "deploy-*",
        "--to",
        "bob,alice",
        "--remind-after",
        "5400s",
        "--escalate-after",
        "2h",
        "--escalate-to",
        "group:oncall",
    ]);
    assert_eq!(same["changed"], false, "{same}");
    assert_eq!(policy_events(&l).len(), 2);

    let replaced = l.ok([
        "policy",
        "set",
        "--stage",
        "deploy-*",
        "--remind-after",
        "1d",
        "--remind-max",
        "1",
    ]);
    assert_eq!(replaced["replaced"]["to"], json!(["bob", "alice"]));
    assert_eq!(replaced["policy"]["to"], json!([]));
    assert_eq!(replaced["policy"]["escalate_after"], Value::Null);
    assert_eq!(replaced["policy"]["remind_max"], 1);

    let unset = l.ok(["policy", "unset", "--stage", "deploy-*"]);
    assert_eq!(
        (&unset["stage"], &unset["unset"]),
        (&json!("deploy-*"), &json!(true))
    );
    assert_eq!(l.ok(["policy", "list"])["count"], 0);
    let gone = l.run(["policy", "unset", "--stage", "deploy-*"]);
    assert_eq!((gone.code, gone.error_code()), (1, "not_found"));

    let events = policy_events(&l);
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[0]["detail"]["set"], true);
    assert_eq!(events[0]["detail"]["escalate_to"], json!(["group:oncall"]));
    assert_eq!(
        events[3]["detail"],
        json!({"policy": "deploy-*", "unset": true})
    );
    for e in &events {
        assert_eq!(e["channel"], "cli");
        assert_eq!(e["question_id"], 0);
        assert_eq!(e["answered_by"], set["policy"]["set_by"]);
    }
}

#[test]
fn a_bad_policy_is_a_usage_error_and_changes_nothing() {
    let l = Ledger::new();
    for args in [
        &["--stage", "s"][..],
        &["--to", "alice"],
        &["--stage", "a*b", "--to", "alice"],
        &["--stage", "", "--to", "alice"],
        &["--stage", "s", "--to", "two words"],
        &["--stage", "s", "--to", "group:"],
        &["--stage", "s", "--to", "group:nobody-made-it"],
        &["--stage", "s", "--remind-after", "0s"],
        &["--stage", "s", "--remind-after", "soon"],
        &["--stage", "s", "--remind-after", "-5m"],
        &["--stage", "s", "--remind-after", "31d"],
        &["--stage", "s", "--remind-max", "2"],
        &["--stage", "s", "--remind-after", "1h", "--remind-max", "0"],
        &["--stage", "s", "--remind-after", "1h", "--remind-max", "21"],
        &["--stage", "s", "--remind-after", "1h", "--remind-max", "-1"],
        &["--stage", "s", "--escalate-after", "1h"],
        &["--stage", "s", "--escalate-to", "carol"],
        &[
            "--stage",
            "s",
            "--escalate-after",
            "0m",
            "--escalate-to",
            "carol",
        ],
    ] {
        let mut all = vec!["policy", "set"];
        all.extend_from_slice(args);
        let run = l.run(&all);
        assert_eq!(
            (run.code, run.error_code()),
            (2, "usage"),
            "{args:?}: {run:?}"
        );
    }
    let by = l.run([
        "--by", "eve", "policy", "set", "--stage", "s", "--to", "eve",
    ]);
    assert_eq!((by.code, by.error_code()), (2, "usage"));
    assert!(by.json["error"].as_str().unwrap().contains("--by"));
    let unset = l.run(["policy", "unset", "--stage", "a*b"]);
    assert_eq!((unset.code, unset.error_code()), (2, "usage"));
    assert_eq!(l.ok(["policy", "list"])["count"], 0);
    assert!(policy_events(&l).is_empty());
}

#[test]
fn a_reset_forgets_the_policies() {
    let l = Ledger::new();
    l.ok(["policy", "set", "--stage", "*", "--remind-after", "1h"]);
    l.ok(["reset", "--yes"]);
    l.log("s", "Anew?");
    assert_eq!(l.ok(["policy", "list"])["count"], 0);
}

/// `people delegate` (§14a): recorded and listed, guarded as a link is, a cycle and a
/// delegation to oneself or into the past refused.
#[cfg(feature = "relay")]
#[test]
fn a_delegation_is_recorded_and_a_cycle_refused() {
    let l = Ledger::new();
    let me = crate::relay_harness::me(&l);
    let until = "2026-12-24T18:00:00+01:00";
    let made = l.ok(["people", "delegate", &me, "--to", "bob", "--until", until]);
    assert_eq!(made["delegate"], "bob");
    assert_eq!(made["until"], "2026-12-24T17:00:00.000Z");
    assert_eq!(made["changed"], true);
    let again = l.ok(["people", "delegate", &me, "--to", "bob", "--until", until]);
    assert_eq!(again["changed"], false);
    // Only bob, or a people admin, delegates bob's cards.
    let other = l.run([
        "people", "delegate", "bob", "--to", "carol", "--until", until,
    ]);
    assert_eq!((other.code, other.error_code()), (2, "forbidden"));
    l.ok(["group", "create", "people", "--admins", &me]);
    l.ok([
        "people", "delegate", "bob", "--to", "carol", "--until", until,
    ]);
    let cycle = l.run(["people", "delegate", "carol", "--to", &me, "--until", until]);
    assert_eq!(
        (cycle.code, cycle.error_code()),
        (1, "conflict"),
        "{cycle:?}"
    );
    assert!(cycle.json["error"].as_str().unwrap().contains("→ carol"));
    for args in [
        &[
            "people", "delegate", "dana", "--to", "dana", "--until", until,
        ][..],
        &[
            "people",
            "delegate",
            "dana",
            "--to",
            "eve",
            "--until",
            "2020-01-01T00:00:00Z",
        ],
        &[
            "people", "delegate", "dana", "--to", "eve", "--until", "tomorrow",
        ],
        &["people", "delegate", "dana", "--to", "eve"],
        &["people", "delegate", "dana"],
        &["people", "delegate", "dana", "on"],
        &[
            "people",
            "link",
            &me,
            "telegram:5",
            "--to",
            "eve",
            "--until",
            until,
        ],
    ] {
        let run = l.run(args);
        assert_eq!(
            (run.code, run.error_code()),
            (2, "usage"),
            "{args:?}: {run:?}"
        );
    }
    let listed = l.ok(["people", "list"]);
    let pairs: Vec<(String, String)> = listed["delegations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["person"].as_str().unwrap().into(),
                d["delegate"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [("bob".into(), "carol".into()), (me.clone(), "bob".into())]
    );
    // Past its time it is listed no more.
    let later = l.run_at("2027-01-01T00:00:00.000Z", ["people", "list"]);
    assert_eq!(later.json["delegations"], json!([]));
    assert_eq!(l.ok(["people", "delegate", &me, "off"])["changed"], true);
    assert_eq!(l.ok(["people", "delegate", &me, "off"])["changed"], false);
    let events: Vec<Value> = l
        .run(["events", "--since", "0"])
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|e| e["event"] == "people")
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0]["detail"]["delegate"], "bob");
    assert_eq!(events[2]["detail"]["delegation_ended"], true);
}

/// `people quiet` (§14a): a bad window, zone or flag is a usage error naming the shape,
/// and changes nothing.
#[test]
fn bad_quiet_hours_are_refused_and_change_nothing() {
    let l = Ledger::new();
    for args in [
        vec!["people", "quiet", "bob", "22:00-07:00"],
        vec![
            "people",
            "quiet",
            "bob",
            "22:00-07:00",
            "--tz",
            "Mars/Olympus",
        ],
        vec!["people", "quiet", "bob", "22:00", "--tz", "UTC"],
        vec!["people", "quiet", "bob", "25:00-07:00", "--tz", "UTC"],
        vec!["people", "quiet", "bob", "07:00-07:00", "--tz", "UTC"],
        vec!["people", "quiet", "bob", "off", "--tz", "UTC"],
        vec!["people", "quiet"],
        vec!["people", "link", "bob", "telegram:1", "--tz", "UTC"],
    ] {
        let run = l.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "usage", "{args:?}");
    }
    assert_eq!(l.ok(["people", "list"])["quiet"], serde_json::json!([]));
}
