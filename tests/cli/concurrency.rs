//! Many processes on one ledger at once: nothing lost, no "database is locked".

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;

fn spawn_run(db: &std::ffi::OsStr, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn sixteen_processes_on_a_new_ledger_all_succeed_and_migrate_once() {
    let l = Ledger::new();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(16));
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let path = l.db();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                spawn_run(
                    &path,
                    &["log", "--stage", "s", "--question", &format!("q{i}")],
                )
            })
        })
        .collect();
    for h in handles {
        let out = h.join().unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(l.ok(["list"])["count"], 16);
    let Some(url) = &l.url else {
        return sqlite_migrated_once(&l.path);
    };
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let row = client
        .query_one(
            "SELECT COUNT(*), COUNT(DISTINCT version) FROM refinery_schema_history",
            &[],
        )
        .unwrap();
    assert_eq!(
        row.get::<_, i64>(0),
        row.get::<_, i64>(1),
        "each migration applied once"
    );
}

fn sqlite_migrated_once(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let (rows, distinct): (i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT version) FROM refinery_schema_history",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(rows, distinct, "each migration applied once");
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn eight_writers_logging_and_answering_lose_nothing() {
    const WRITERS: usize = 8;
    const EACH: usize = 200;
    let l = Ledger::new();
    l.log("warmup", "created first");
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let path = l.db();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let out = spawn_run(
                        &path,
                        &[
                            "log",
                            "--stage",
                            &format!("w{w}"),
                            "--question",
                            &format!("q{i}"),
                        ],
                    );
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stdout)
                    );
                    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                    let id = json["question_id"].to_string();
                    let out = spawn_run(
                        &path,
                        &["answer", "--id", &id, "--answer", &format!("a{w}-{i}")],
                    );
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stdout)
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a writer failed");
    }
    let all = l.ok(["list", "--status", "answered"]);
    assert_eq!(all["count"], WRITERS * EACH);
    for q in all["questions"].as_array().unwrap() {
        let stage = q["stage"].as_str().unwrap();
        let n = q["question"].as_str().unwrap().trim_start_matches('q');
        assert_eq!(
            q["answer"],
            format!("a{}-{n}", stage.trim_start_matches('w'))
        );
    }
}

#[test]
fn sqlite_only_reads_take_no_write_lock() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let id = l.log("s", "q");
    let conn = rusqlite::Connection::open(&l.path).unwrap();
    conn.execute_batch(
        "BEGIN IMMEDIATE; UPDATE questions SET status = 'answered', answer = 'uncommitted';",
    )
    .unwrap();
    let started = Instant::now();
    let run = l.run(["check", "--stage", "s"]);
    assert_eq!(run.code, 1, "the uncommitted answer is not seen: {run:?}");
    assert_eq!(run.json["pending"][0]["id"], id);
    assert_eq!(l.ok(["list"])["count"], 1);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "reads waited for the writer: {:?}",
        started.elapsed()
    );
    conn.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn postgres_only_reads_do_not_wait_for_a_writer() {
    crate::postgres_only!();
    let l = Ledger::new();
    let url = l.url.clone().expect("a database ledger");
    let id = l.log("s", "q");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut tx = client.transaction().unwrap();
    tx.execute(
        "UPDATE questions SET status = 'answered', answer = 'uncommitted'",
        &[],
    )
    .unwrap();
    let started = Instant::now();
    let run = l.run(["check", "--stage", "s"]);
    assert_eq!(run.code, 1, "the uncommitted answer is not seen: {run:?}");
    assert_eq!(run.json["pending"][0]["id"], id);
    assert_eq!(l.ok(["list"])["count"], 1);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "reads waited for the writer"
    );
    tx.rollback().unwrap();
}
