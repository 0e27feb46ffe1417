use crate::common::*;

#[test]
fn clear_removes_a_stage_and_keeps_its_rows_in_the_history() {
    let l = Ledger::new();
    let a = l.log("intake", "a");
    l.log("intake", "b");
    let keep = l.log("design", "c");
    l.ok(["answer", "--id", &a.to_string(), "--answer", "precious"]);

    let out = l.ok(["clear", "--stage", "intake"]);
    assert_eq!(out["procedure"], "clear");
    assert_eq!(out["stage"], "intake");
    assert_eq!(out["deleted"], 2);
    assert_eq!(l.ok(["list", "--stage", "intake"])["count"], 0);
    assert_eq!(l.ok(["list"])["questions"][0]["id"], keep);

    let history = l.ok(["history", "--stage", "intake"]);
    let cleared: Vec<&serde_json::Value> = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "cleared")
        .collect();
    assert_eq!(cleared.len(), 2);
    assert_eq!(cleared[0]["before"]["answer"], "precious");
    assert_eq!(cleared[0]["after"], serde_json::Value::Null);

    // Ids are never reused after a clear: stored ids keep pointing at one question.
    let next = l.log("intake", "a");
    assert!(next > keep, "{next} after {keep}");
    assert_eq!(l.ok(["clear", "--stage", "nothing-here"])["deleted"], 0);
}
