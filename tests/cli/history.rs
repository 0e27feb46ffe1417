use crate::common::*;

#[test]
fn every_change_is_an_event_with_the_row_before_and_after() {
    let l = Ledger::new();
    let id = l.log("s", "q").to_string();
    l.ok(["answer", "--id", &id, "--answer", "one"]);
    l.ok(["answer", "--id", &id, "--answer", "two", "--force"]);
    l.ok(["skip", "--id", &id, "--force"]);
    let out = l.ok(["history", "--id", &id]);
    assert_eq!(out["procedure"], "history");
    let events = out["events"].as_array().unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["logged", "answered", "reanswered", "skipped"]);
    for e in events {
        for key in ["at", "event", "question_id", "stage", "before", "after"] {
            assert!(e.get(key).is_some(), "{key} missing in {e}");
        }
        assert_eq!(e["question_id"], id.parse::<i64>().unwrap());
        assert_eq!(e["at"], NOW);
    }
    assert_eq!(events[0]["before"], serde_json::Value::Null);
    assert_eq!(events[1]["after"]["answer"], "one");
    assert_eq!(events[2]["before"]["answer"], "one");
}

#[test]
fn history_of_an_unknown_question_is_not_found() {
    let l = Ledger::new();
    let run = l.run(["history", "--id", "4"]);
    assert_eq!((run.code, run.error_code()), (1, "not_found"));
    let run = l.run(["history"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
}

#[test]
fn the_history_table_refuses_edits() {
    let l = Ledger::new();
    l.log("s", "q");
    assert!(l.sql_is_refused("DELETE FROM question_events"));
    assert!(l.sql_is_refused("UPDATE question_events SET event = 'x'"));
    assert!(!l.sql_is_refused("SELECT COUNT(*) FROM question_events"));
}
