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
fn reset_deletes_the_ledger_and_its_companions_only() {
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
fn reset_works_on_a_damaged_ledger() {
    crate::sqlite_only!();
    let l = Ledger::new();
    std::fs::write(
        &l.path,
        b"this is not a database at all, not even close....",
    )
    .unwrap();
    l.ok(["reset", "--yes"]);
    assert!(!l.path.exists());
}

#[test]
fn reset_drops_a_database_ledger() {
    let l = Ledger::new();
    if l.url.is_none() {
        return; // the file case is the test above
    }
    l.log("s", "q");
    let out = l.ok(["reset", "--yes"]);
    assert_eq!(out["procedure"], "reset");
    assert!(!out["deleted"].as_str().unwrap().contains("secret"));
    l.assert_not_created();
    assert_eq!(l.ok(["list"])["count"], 0);
    assert_eq!(l.log("s", "again?"), 1);
}
