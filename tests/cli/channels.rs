//! Who answers through which channel (§14): `people link|unlink|list` and `relay pair`,
//! guarded as a group change is (§12).

use crate::common::*;
use serde_json::Value;

/// Who this process is on the ledger (the PostgreSQL role, or the operating-system user):
/// what an approval logged without --requester names as its requester.
fn me(l: &Ledger) -> String {
    if let Some(url) = &l.url {
        // The role the test server's URL logs in as.
        let user = url.split("://").nth(1).unwrap();
        return user.split([':', '@']).next().unwrap().to_string();
    }
    let logged = l.ok([
        "log",
        "--stage",
        "who",
        "--question",
        "Who am I?",
        "--approval",
        "--approvers",
        "somebody",
        "--min",
        "1",
    ]);
    logged["question"]["approval"]["requester"]
        .as_str()
        .unwrap()
        .to_string()
}

fn people_events(l: &Ledger) -> Vec<Value> {
    let out = l.run(["events"]);
    out.stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["event"] == "people")
        .collect()
}

#[test]
fn people_are_linked_by_themselves_only_and_every_change_is_in_the_history() {
    let l = Ledger::new();
    let me = me(&l);
    let other = l.run(["people", "link", "someone-else", "telegram:1"]);
    assert_eq!(other.code, 2, "{other:?}");
    assert_eq!(other.error_code(), "forbidden");
    let by = l.run(["--by", &me, "people", "link", &me, "telegram:1"]);
    assert_eq!(by.error_code(), "usage");
    assert!(
        by.json["error"].as_str().unwrap().contains("--by"),
        "{by:?}"
    );
    let named = l.run(["people", "link", &me, "telegram:alice"]);
    assert_eq!(named.error_code(), "usage", "a display name is no identity");
    let linked = l.ok(["people", "link", &me, "telegram:123456789"]);
    assert_eq!(linked["changed"], true);
    assert_eq!(linked["identity"], "telegram:123456789");
    let again = l.ok(["people", "link", &me, "telegram:123456789"]);
    assert_eq!(
        again["changed"], false,
        "linking what is linked changes nothing"
    );
    l.ok(["people", "link", &me, "email:Me@Example.ORG"]);
    let listed = l.ok(["people", "list"]);
    assert_eq!(listed["count"], 2);
    let ids: Vec<&str> = listed["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["identity"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["email:me@example.org", "telegram:123456789"]);
    l.ok(["people", "unlink", &me, "telegram:123456789"]);
    assert_eq!(l.ok(["people", "list"])["count"], 1);
    let events = people_events(&l);
    assert_eq!(events.len(), 3, "two links and an unlink: {events:?}");
    assert!(events.iter().all(|e| e["answered_by"] == me.as_str()));
    assert_eq!(events[2]["detail"]["unlinked"], true);
}

#[test]
fn a_pairing_code_is_printed_once_and_stored_hashed() {
    let l = Ledger::new();
    let me = me(&l);
    let paired = l.ok(["relay", "pair", "telegram", &me]);
    let code = paired["code"].as_str().unwrap();
    assert_eq!(code.len(), 10);
    assert_eq!(paired["send"], format!("/start {code}"));
    assert!(paired["expires_at"].as_str().unwrap() > "2000");
    if l.url.is_none() {
        let bytes = String::from_utf8_lossy(&l.bytes()).to_string();
        assert!(!bytes.contains(code), "the code is stored as its hash only");
    }
    let other = l.run(["relay", "pair", "telegram", "someone-else"]);
    assert_eq!(other.error_code(), "forbidden");
    let channel = l.run(["relay", "pair", "fax", &me]);
    assert_eq!(channel.error_code(), "usage");
    let by = l.run(["--by", &me, "relay", "pair", "telegram", &me]);
    assert_eq!(by.error_code(), "usage");
    assert_eq!(people_events(&l).len(), 1, "the pairing is in the history");
}

/// The names of the relay's tables that a SQLite ledger holds.
fn relay_tables(l: &Ledger) -> Vec<String> {
    let conn = rusqlite::Connection::open(&l.path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND (name LIKE 'relay%' OR name = 'people_links') ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// SQLite parses a ledger's whole schema at every open: a ledger that never met the
/// relay does not hold its tables, so `check` and `log` do not pay for them, and reads
/// of people see none; the first link makes them, and they work from there.
#[test]
fn sqlite_only_a_ledger_gets_the_relays_tables_from_its_first_link() {
    let l = Ledger::new();
    let me = me(&l);
    l.log("s", "Which cache?");
    l.run(["check", "--stage", "s"]);
    assert_eq!(l.ok(["people", "list"])["count"], 0);
    let unlinked = l.ok(["people", "unlink", &me, "telegram:1"]);
    assert_eq!(unlinked["changed"], false);
    assert!(
        relay_tables(&l).is_empty(),
        "no write needed them: {:?}",
        relay_tables(&l)
    );
    l.ok(["people", "link", &me, "telegram:1"]);
    assert_eq!(
        relay_tables(&l),
        [
            "people_links",
            "relay_deliveries",
            "relay_events",
            "relay_pairings",
            "relay_state"
        ]
    );
    assert_eq!(l.ok(["people", "list"])["count"], 1);
    l.ok(["relay", "pair", "slack", &me]);
}
