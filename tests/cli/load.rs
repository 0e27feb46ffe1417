//! Sixteen processes mixing every command on one ledger: nothing lost, nothing wrong,
//! no error reaching a caller.

use std::process::Command;

use serde_json::Value;

use crate::common::*;

fn call(db: &std::ffi::OsStr, args: &[&str]) -> (i32, Value) {
    let out = Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json)
}

#[test]
fn sixteen_mixed_processes_lose_nothing() {
    const WORKERS: usize = 16;
    const EACH: usize = 12;
    let l = Ledger::new();
    l.log("warmup", "created first");
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let db = l.db();
            std::thread::spawn(move || {
                let stage = format!("w{w}");
                let mut written = Vec::new();
                for i in 0..EACH {
                    let (code, out) = call(
                        &db,
                        &["log", "--stage", &stage, "--question", &format!("q{i}")],
                    );
                    assert_eq!(code, 0, "log: {out}");
                    let qid = out["question_id"].as_i64().unwrap();
                    let id = qid.to_string();
                    if i % 3 == 2 {
                        let (code, out) = call(&db, &["skip", "--id", &id, "--reason", "load"]);
                        assert_eq!(code, 0, "skip: {out}");
                        written.push((qid, None));
                    } else {
                        let answer = format!("answer {w}/{i}");
                        let (code, out) = call(&db, &["answer", "--id", &id, "--answer", &answer]);
                        assert_eq!(code, 0, "answer: {out}");
                        written.push((qid, Some(answer)));
                    }
                    let (code, out) = call(&db, &["check", "--stage", &stage]);
                    assert_eq!(
                        (code, &out["gate"]),
                        (0, &Value::from("pass")),
                        "check: {out}"
                    );
                    let (code, out) = call(&db, &["list", "--stage", &stage]);
                    assert_eq!(code, 0, "list: {out}");
                    assert_eq!(out["count"], i + 1);
                }
                written
            })
        })
        .collect();
    let written: Vec<(i64, Option<String>)> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("a worker saw an error"))
        .collect();
    assert_eq!(written.len(), WORKERS * EACH);
    let all = l.all();
    assert_eq!(all.len(), WORKERS * EACH + 1);
    for (id, answer) in written {
        let q = all
            .iter()
            .find(|q| q["id"] == id)
            .expect("every write present");
        match answer {
            Some(a) => assert_eq!(
                (q["status"].as_str(), q["answer"].as_str()),
                (Some("answered"), Some(a.as_str()))
            ),
            None => assert_eq!(q["status"], "skipped"),
        }
    }
}
