//! SIGKILL at random moments in the middle of ingest and import: afterwards the ledger
//! opens, passes integrity_check, and holds all of that call's changes or none.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::common::*;

const QUESTIONS: usize = 1500;
const ROUNDS: usize = 12;

/// A different moment each round without a random-number crate: the clock's nanoseconds.
fn jitter(max: Duration) -> Duration {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    Duration::from_micros(u64::from(nanos) % max.as_micros() as u64)
}

/// Starts the call, kills it after `delay` (if it is still running), and says whether it
/// finished on its own.
fn kill_after(
    db: &std::path::Path,
    args: &[&str],
    input: &std::path::Path,
    delay: Duration,
) -> bool {
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(db)
        .args(args)
        .arg("--file")
        .arg(input)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // The time is what is under test here: the kill lands `delay` into the write.
    while started.elapsed() < delay {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let _ = child.kill(); // SIGKILL
    let status = child.wait().unwrap();
    status.success()
}

fn integrity(db: &std::path::Path) {
    let conn = rusqlite::Connection::open(db).expect("the ledger opens");
    let result: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(result, "ok");
}

/// A count from the ledger; 0 when a kill came before its tables were first written.
fn count(db: &std::path::Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    let migrated: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'question_events')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    if !migrated {
        return 0;
    }
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// The longest a round waits before its kill: twice the probe's time. The probe can run
/// under more load than the rounds after it; when no round of the first `ROUNDS` was
/// killed, each further `ROUNDS` kill within half the time before.
fn kill_within(full: Duration, round: usize) -> Duration {
    full * 2 / (1u32 << (round / ROUNDS))
}

/// How long a whole call takes here, so that the kills land before, during and after it.
fn duration_of(db: &std::path::Path, args: &[&str], input: &std::path::Path) -> Duration {
    let started = Instant::now();
    assert!(kill_after(db, args, input, Duration::from_mins(1)));
    started.elapsed()
}

#[test]
fn sqlite_only_a_killed_ingest_leaves_all_or_nothing() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let envelope = l.dir.path().join("envelope.txt");
    let mut text = String::from("QUESTIONS_NEEDED\n");
    for i in 0..QUESTIONS {
        text.push_str(&format!(
            "[G{i}]\nQ: Question {i}?\nProposed: p{i}\nRequired: true\n"
        ));
    }
    std::fs::write(&envelope, text).unwrap();
    let probe = l.dir.path().join("probe.db");
    let full = duration_of(&probe, &["ingest", "--stage", "probe"], &envelope);

    let mut killed = 0;
    for round in 0..ROUNDS * 3 {
        if round >= ROUNDS && killed > 0 {
            break;
        }
        let stage = format!("s{round}");
        let finished = kill_after(
            &l.path,
            &["ingest", "--stage", &stage],
            &envelope,
            jitter(kill_within(full, round)),
        );
        killed += usize::from(!finished);
        if !l.path.exists() {
            continue; // killed before the file was created
        }
        integrity(&l.path);
        let n = count(
            &l.path,
            &format!("SELECT COUNT(*) FROM questions WHERE stage = '{stage}'"),
        );
        assert!(
            n == 0 || n == QUESTIONS as i64,
            "round {round}: {n} of {QUESTIONS} questions"
        );
        let events = count(
            &l.path,
            &format!(
                "SELECT COUNT(*) FROM question_events WHERE question_id IN \
                 (SELECT id FROM questions WHERE stage = '{stage}')"
            ),
        );
        assert_eq!(events, n, "round {round}: history and rows disagree");
        if finished {
            assert_eq!(n, QUESTIONS as i64);
        }
    }
    assert!(killed > 0, "no round was killed: the test proved nothing");
    // The ledger still works afterwards.
    l.ok(["log", "--stage", "after", "--question", "Still fine?"]);
}

#[test]
fn sqlite_only_a_killed_import_leaves_all_or_nothing() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let envelope = l.dir.path().join("envelope.txt");
    let mut text = String::from("QUESTIONS_NEEDED\n");
    for i in 0..QUESTIONS {
        text.push_str(&format!("Q: Question {i}?\n"));
    }
    std::fs::write(&envelope, text).unwrap();
    let template = l.dir.path().join("template.db");
    assert!(kill_after(
        &template,
        &["ingest", "--stage", "s"],
        &envelope,
        Duration::from_mins(1)
    ));
    let answers = l.dir.path().join("answers.json");
    let map: serde_json::Map<String, serde_json::Value> = (1..=QUESTIONS)
        .map(|id| {
            (
                id.to_string(),
                serde_json::Value::from(format!("answer {id}")),
            )
        })
        .collect();
    std::fs::write(&answers, serde_json::Value::Object(map).to_string()).unwrap();
    let probe = l.dir.path().join("probe.db");
    copy_ledger(&template, &probe);
    let full = duration_of(&probe, &["import", "--stage", "s"], &answers);

    let mut killed = 0;
    for round in 0..ROUNDS * 3 {
        if round >= ROUNDS && killed > 0 {
            break;
        }
        copy_ledger(&template, &l.path);
        let finished = kill_after(
            &l.path,
            &["import", "--stage", "s"],
            &answers,
            jitter(kill_within(full, round)),
        );
        killed += usize::from(!finished);
        integrity(&l.path);
        let n = count(
            &l.path,
            "SELECT COUNT(*) FROM questions WHERE status = 'answered'",
        );
        assert!(
            n == 0 || n == QUESTIONS as i64,
            "round {round}: {n} of {QUESTIONS} answered"
        );
        if finished {
            assert_eq!(n, QUESTIONS as i64);
        }
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", l.path.display()));
        }
    }
    assert!(killed > 0, "no round was killed: the test proved nothing");
}

#[test]
fn sqlite_only_the_write_ahead_log_is_copied_into_the_ledger_before_it_grows_long() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let wal = std::path::PathBuf::from(format!("{}-wal", l.path.display()));
    let (mut longest, mut last, mut emptied, mut logged) = (0, 0, 0, 0);
    while emptied < 2 && logged < 600 {
        l.log(
            "s",
            &format!("Question {logged} with a little text to fill the pages?"),
        );
        logged += 1;
        let len = std::fs::metadata(&wal).unwrap().len();
        emptied += usize::from(len < last);
        (longest, last) = (longest.max(len), len);
    }
    // Each process reads the whole log when it opens the ledger: it must stay short, and
    // be emptied into the file now and then.
    assert_eq!(emptied, 2, "the log was never emptied in {logged} writes");
    assert!(longest < 2 * 1024 * 1024, "the log grew to {longest} bytes");
    integrity(&l.path);
    assert_eq!(l.all().len(), logged);
}
