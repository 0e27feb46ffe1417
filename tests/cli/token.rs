//! `token create|list|revoke` (§15): a secret shown once and kept only as a hash,
//! revocation at once, and every change in the history.

use crate::common::*;
use serde_json::Value;

fn create(l: &Ledger, args: &[&str]) -> Run {
    let mut cmd = l.command();
    cmd.args(["token", "create"]).args(args);
    finish(cmd)
}

#[test]
fn a_secret_is_shown_once_and_never_kept_in_clear() {
    let l = Ledger::new();
    l.log("ci-build", "Deploy?");
    let made = create(&l, &["ci-runner", "--agent", "--stages", "ci-*,docs"]);
    assert_eq!(made.code, 0, "{made:?}");
    assert_eq!(made.json["procedure"], "token");
    assert_eq!(made.json["role"], "agent");
    assert_eq!(made.json["stages"], serde_json::json!(["ci-*", "docs"]));
    assert_eq!(made.json["person"], Value::Null);
    assert_eq!(made.json["expires_at"], Value::Null);
    let secret = made.json["token"].as_str().unwrap().to_string();
    assert!(secret.starts_with("qtok_") && secret.len() > 60, "{secret}");
    assert!(!made.stderr.contains(&secret), "not on stderr");
    let person = create(&l, &["dana-phone", "--person", "dana"]);
    let other = person.json["token"].as_str().unwrap().to_string();
    assert_ne!(secret, other);

    let mut outputs = Vec::new();
    for args in [
        &["token", "list"][..],
        &["events", "--since", "0"],
        &["history", "--stage", "ci-build"],
        &["info"],
        &["list"],
    ] {
        let run = l.run(args);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        outputs.push(format!("{}{}", run.stdout, run.stderr));
    }
    for (text, s) in outputs.iter().flat_map(|t| [(t, &secret), (t, &other)]) {
        assert!(
            !text.contains(s.as_str()),
            "a secret was printed again: {text}"
        );
    }
    let listed = l.ok(["token", "list"]);
    assert_eq!(listed["count"], 2);
    let names: Vec<&str> = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ci-runner", "dana-phone"]);
    let first = &listed["tokens"][0];
    assert_eq!(first["created_at"], NOW);
    assert_eq!(first["last_used_at"], Value::Null);
    assert!(first.get("token").is_none() && first.get("secret_hash").is_none());
    if l.url.is_none() {
        let bytes = l.bytes();
        for s in [&secret, &other] {
            let hex = &s["qtok_".len()..];
            assert!(
                !bytes.windows(hex.len()).any(|w| w == hex.as_bytes()),
                "the ledger file holds a secret in clear"
            );
        }
    }
}

#[test]
fn tokens_expire_and_are_revoked_in_the_history() {
    let l = Ledger::new();
    let made = create(&l, &["nightly", "--agent", "--expires", "1h"]);
    assert_eq!(made.json["expires_at"], later(3600), "{made:?}");
    let before = l.ok(["token", "list"]);
    assert_eq!(before["tokens"][0]["expired"], false);
    let after = l.run_at(&later(3600), ["token", "list"]);
    assert_eq!(after.json["tokens"][0]["expired"], true, "{after:?}");

    let revoked = l.ok(["token", "revoke", "nightly"]);
    assert_eq!(revoked["revoked"], true);
    assert_eq!(l.ok(["token", "list"])["count"], 0);
    let again = l.run(["token", "revoke", "nightly"]);
    assert_eq!(again.error_code(), "not_found");
    assert_eq!(again.code, 1);

    let events: Vec<Value> = l
        .run(["events", "--since", "0"])
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let tokens: Vec<&Value> = events.iter().filter(|e| e["event"] == "token").collect();
    assert_eq!(tokens.len(), 2, "{events:?}");
    assert_eq!(tokens[0]["detail"]["created"], true);
    assert_eq!(tokens[0]["detail"]["token"], "nightly");
    assert_eq!(tokens[1]["detail"]["revoked"], true);
    for e in &tokens {
        assert_eq!(e["channel"], "cli");
        assert_eq!(e["question_id"], 0);
        assert!(e["answered_by"].as_str().is_some_and(|b| !b.is_empty()));
    }
    // The name is free again.
    assert_eq!(create(&l, &["nightly", "--agent"]).code, 0);
}

#[test]
fn a_token_asked_for_wrongly_is_refused_and_nothing_is_made() {
    let l = Ledger::new();
    for (args, code) in [
        (&["t"][..], "usage"),
        (&["t", "--agent", "--person", "dana"], "usage"),
        (&["t", "--person", "dana", "--stages", "s"], "usage"),
        (&["t", "--agent", "--stages", "a*b"], "usage"),
        (&["t", "--agent", "--stages", "ci-*,"], "usage"),
        (&["two words", "--agent"], "usage"),
        (&["t", "--person", "group:ops"], "usage"),
        (&["t", "--agent", "--expires", "0s"], "usage"),
        (&["t", "--agent", "--expires", "soon"], "usage"),
    ] {
        let run = create(&l, args);
        assert_eq!(run.error_code(), code, "{args:?}: {run:?}");
        assert_eq!(run.code, 2, "{args:?}");
    }
    let by = l.run(["--by", "eve", "token", "create", "t", "--agent"]);
    assert_eq!(by.error_code(), "usage");
    assert!(by.json["error"].as_str().unwrap().contains("--by"));
    assert_eq!(l.ok(["token", "list"])["count"], 0);
    assert_eq!(create(&l, &["t", "--agent"]).code, 0);
    let twice = create(&l, &["t", "--person", "dana"]);
    assert_eq!(twice.error_code(), "conflict", "{twice:?}");
    assert_eq!(l.ok(["token", "list"])["tokens"][0]["role"], "agent");
}

#[test]
fn a_person_token_ends_after_90_days_unless_it_is_made_to_last_and_an_agent_s_never_does() {
    let l = Ledger::new();
    let made = l.ok(["token", "create", "dana-phone", "--person", "dana"]);
    assert_eq!(made["expires_at"], "2027-02-19T23:47:04.692Z", "{made}");
    let kept = l.ok([
        "token",
        "create",
        "dana-break-glass",
        "--person",
        "dana",
        "--expires",
        "never",
    ]);
    assert!(kept["expires_at"].is_null(), "{kept}");
    let agent = l.ok(["token", "create", "ci-runner", "--agent"]);
    assert!(agent["expires_at"].is_null(), "{agent}");
    let listed = l.ok(["token", "list"]);
    let phone = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "dana-phone")
        .unwrap()
        .clone();
    assert_eq!(phone["expires_at"], "2027-02-19T23:47:04.692Z");
    assert_eq!(phone["source"], "token");
}
