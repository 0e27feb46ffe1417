use crate::common::*;

#[test]
fn reset_needs_yes() {
    let l = Ledger::new();
    l.log("s", "q");
    let run = l.run(["reset"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    assert_eq!(l.all().len(), 1, "nothing was deleted");
}

#[test]
fn sqlite_only_reset_deletes_the_ledger_and_its_companions_only() {
    crate::sqlite_only!();
    let l = Ledger::new();
    l.log("s", "q");
    let wal = l.dir.path().join("ledger.db-wal");
    let shm = l.dir.path().join("ledger.db-shm");
    let other = l.dir.path().join("ledger.db-notes");
    std::fs::write(&wal, b"").unwrap();
    std::fs::write(&shm, b"").unwrap();
    std::fs::write(&other, b"keep me").unwrap();
    let out = l.ok(["reset", "--yes"]);
    assert_eq!(out["procedure"], "reset");
    assert_eq!(out["deleted"], l.path.display().to_string());
    assert!(!l.path.exists() && !wal.exists() && !shm.exists());
    assert!(other.exists());
    assert_eq!(l.ok(["list"])["count"], 0);
    // Resetting again is fine: there is nothing left to delete.
    assert_eq!(l.ok(["reset", "--yes"])["existed"], false);
}

#[test]
fn sqlite_only_reset_works_on_a_damaged_ledger() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let mut damaged = b"SQLite format 3\0".to_vec();
    damaged.extend_from_slice(b"and then nothing a database would hold.........");
    std::fs::write(&l.path, &damaged).unwrap();
    assert_eq!(l.run(["list"]).error_code(), "db_error");
    l.ok(["reset", "--yes"]);
    assert!(!l.path.exists());
    // An empty file is what SQLite makes of a new ledger: reset deletes it too.
    std::fs::write(&l.path, b"").unwrap();
    l.ok(["reset", "--yes"]);
    assert!(!l.path.exists());
}

#[test]
fn sqlite_only_reset_refuses_a_file_that_is_not_a_ledger_and_leaves_it_untouched() {
    crate::sqlite_only!();
    let l = Ledger::new();
    for text in [
        &b"# my notes\nnot a database\n"[..],
        b"SQLite",
        b"SQLite format 3 but text",
    ] {
        std::fs::write(&l.path, text).unwrap();
        let run = l.run(["reset", "--yes"]);
        assert_eq!((run.code, run.error_code()), (1, "db_error"), "{run:?}");
        assert!(
            run.json["error"].as_str().unwrap().contains("untouched"),
            "{run:?}"
        );
        assert_eq!(l.bytes(), text, "reset changed the file");
    }
}

#[test]
fn sqlite_only_reset_refuses_what_is_not_a_regular_file() {
    crate::sqlite_only!();
    let l = Ledger::new();
    l.log("s", "q");
    let real = l.bytes();

    // A symbolic link to a real ledger: neither the link nor its target goes.
    let link = l.dir.path().join("link.db");
    std::os::unix::fs::symlink(&l.path, &link).unwrap();
    let mut cmd = bare_command(l.dir.path());
    cmd.arg("--db").arg(&link).args(["reset", "--yes"]);
    let run = finish(cmd);
    assert_eq!((run.code, run.error_code()), (1, "db_error"), "{run:?}");
    assert!(link.is_symlink());
    assert_eq!(l.bytes(), real);

    // A directory where the ledger would be.
    let folder = l.dir.path().join("folder.db");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("inside"), b"keep").unwrap();
    let mut cmd = bare_command(l.dir.path());
    cmd.arg("--db").arg(&folder).args(["reset", "--yes"]);
    let run = finish(cmd);
    assert_eq!((run.code, run.error_code()), (1, "db_error"), "{run:?}");
    assert!(folder.join("inside").exists());

    // A companion that is not a regular file: nothing at all is deleted. (The log is
    // copied into the file first, so that the file alone is the whole ledger.)
    rusqlite::Connection::open(&l.path)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let wal = l.dir.path().join("ledger.db-wal");
    let _ = std::fs::remove_file(&wal);
    let real = std::fs::read(&l.path).unwrap();
    std::fs::create_dir(&wal).unwrap();
    let run = l.run(["reset", "--yes"]);
    assert_eq!((run.code, run.error_code()), (1, "db_error"), "{run:?}");
    assert!(wal.is_dir());
    assert_eq!(
        std::fs::read(&l.path).unwrap(),
        real,
        "the ledger stays when a companion is refused"
    );
}

#[test]
fn postgres_only_reset_drops_a_database_ledger() {
    crate::postgres_only!();
    let l = Ledger::new();
    l.log("s", "q");
    let out = l.ok(["reset", "--yes"]);
    assert_eq!(out["procedure"], "reset");
    assert!(!out["deleted"].as_str().unwrap().contains("secret"));
    l.assert_not_created();
    assert_eq!(l.ok(["list"])["count"], 0);
    assert_eq!(l.log("s", "again?"), 1);
}

/// A reset leaves nothing of the ledger behind for the next one: not its groups of
/// approvers (who may vote), not its watchers' positions.
#[test]
fn nothing_of_a_reset_ledger_reaches_the_next_one() {
    let l = Ledger::new();
    l.ok(["group", "create", "leads", "--admins", "ops", "dave"]);
    l.ok(["reset", "--yes"]);
    l.assert_not_created();
    // The group, its members and its admins went with the ledger: an approval cannot
    // name it, and nobody can add to it, until it is made again.
    let named = l.run([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Ship?",
        "--approval",
        "--approvers",
        "group:leads",
        "--min",
        "1",
        "--requester",
        "carol",
    ]);
    assert_eq!(named.error_code(), "usage", "{named:?}");
    assert_eq!(
        l.run(["group", "add", "leads", "dave"]).error_code(),
        "not_found"
    );
    l.ok(["group", "create", "leads", "--admins", "ops"]);
    let logged = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Ship?",
        "--approval",
        "--approvers",
        "group:leads",
        "--min",
        "1",
        "--requester",
        "carol",
    ]);
    assert_eq!(logged["created"], true);
    let check = l.run(["check", "--stage", "deploy"]);
    assert_eq!(check.code, 1);
    assert_eq!(
        check.json["approvals"][0]["may_vote"],
        serde_json::json!([]),
        "{}",
        check.stdout
    );
}

#[test]
fn a_write_waiting_when_reset_runs_records_nothing_into_the_gone_ledger() {
    let l = Ledger::new();
    l.log("s", "Before the reset?");
    // A log that has opened the ledger and stops just before its write.
    let write = Pause::new(l.dir.path(), "before-write");
    let waiting = std::process::Command::new(BIN)
        .current_dir(l.dir.path())
        .env("QUESTIONS_NOW", NOW)
        .env("QUESTIONS_TEST_PAUSE", &write.env)
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(l.db())
        .args(["log", "--stage", "s", "--question", "Into which ledger?"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    write.reached();
    l.ok(["reset", "--yes"]);
    write.release();
    let out = waiting.wait_with_output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{json}");
    assert_eq!(json["error_code"], "db_error");
    assert!(json["error"].as_str().unwrap().contains("reset"), "{json}");
    // Nothing came back to life: the ledger is gone, or empty.
    let listed = l.run(["list"]);
    assert_eq!(listed.json["count"], 0, "{listed:?}");
}

/// A reset deletes the ledger, then its write-ahead log. A `log` that creates a new
/// ledger in between opens the old log beside it, and sees the old ledger through it;
/// what it wrote there would be deleted with it while it said "recorded". It fails
/// saying the ledger was reset, or what it wrote is in the ledger afterwards.
#[test]
fn sqlite_only_a_ledger_created_in_the_middle_of_a_reset_loses_no_acknowledged_write() {
    // Between the ledger and its log, and between the log and its index.
    for point in ["reset-deleted-ledger", "reset-deleted-log"] {
        created_in_the_middle_of_a_reset(point);
    }
}

fn created_in_the_middle_of_a_reset(point: &str) {
    crate::sqlite_only!();
    let l = Ledger::new();
    l.log("s", "Of the old ledger?");
    let command = |pause: &Pause, args: &[&str]| {
        std::process::Command::new(BIN)
            .current_dir(l.dir.path())
            .env("QUESTIONS_NOW", NOW)
            .env("QUESTIONS_TEST_PAUSE", &pause.env)
            .env_remove("QUESTIONS_DB")
            .arg("--db")
            .arg(l.db())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The reset has deleted the ledger (and perhaps its log) and holds its lock.
    let between = Pause::new(l.dir.path(), point);
    let reset = command(&between, &["reset", "--yes"]);
    between.reached();
    assert!(!std::path::Path::new(&l.db()).exists());
    // A log creates a new ledger and opens it, then stops before its write; or it sees
    // the reset in its way and gives up first.
    let write = Pause::new(l.dir.path(), "before-write");
    let mut log = command(&write, &["log", "--stage", "s", "--question", "Kept?"]);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !write.has_reached() && log.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < end,
            "the log neither stopped nor ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    between.release();
    assert!(reset.wait_with_output().unwrap().status.success());
    write.release();
    let out = log.wait_with_output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = l.run(["list"]);
    let texts: Vec<&str> = listed.json["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["question"].as_str().unwrap())
        .collect();
    if let Some(0) = out.status.code() {
        assert_eq!(texts, ["Kept?"], "{point}: acknowledged: {json}");
    } else {
        assert!(
            json["error"].as_str().unwrap().contains("reset"),
            "{point}: {json}"
        );
        assert!(texts.is_empty(), "{point}: {texts:?}");
    }
}

#[test]
fn sqlite_only_under_reset_churn_a_failed_write_says_the_ledger_was_reset() {
    crate::sqlite_only!();
    let l = Ledger::new();
    l.log("s", "Start?");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let resetter = {
        let (db, dir, stop) = (l.db(), l.dir.path().to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let _ = std::process::Command::new(BIN)
                    .current_dir(&dir)
                    .arg("--db")
                    .arg(&db)
                    .args(["reset", "--yes"])
                    .output();
            }
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (db, dir) = (l.db(), l.dir.path().to_path_buf());
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for n in 0..30 {
                    let out = std::process::Command::new(BIN)
                        .current_dir(&dir)
                        .arg("--db")
                        .arg(&db)
                        .args(["log", "--stage", "s", "--question", &format!("W{w} {n}?")])
                        .output()
                        .unwrap();
                    if !out.status.success() {
                        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                        failures.push(json["error"].as_str().unwrap_or("").to_string());
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<String> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    resetter.join().unwrap();
    for message in &failures {
        assert!(
            message.contains("reset") || message.contains("locked"),
            "a failure that does not say what happened: {message}"
        );
    }
}
