//! Malformed command lines and inputs of every kind: each gets its exit code and error
//! code, and the ledger is left exactly as it was.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use crate::common::*;

/// Which ledger a case runs against.
enum Db {
    Main,
    Directory,
    Truncated,
    Newer,
}

struct Case {
    args: Vec<OsString>,
    stdin: Vec<u8>,
    db: Db,
    exit: i32,
    code: Option<&'static str>,
    /// What the document must hold, by JSON pointer, beyond its exit and error code.
    expect: Vec<(&'static str, serde_json::Value)>,
}

fn case(args: &[&str], exit: i32, code: Option<&'static str>) -> Case {
    Case {
        args: args.iter().map(OsString::from).collect(),
        stdin: Vec::new(),
        db: Db::Main,
        exit,
        code,
        expect: Vec::new(),
    }
}

fn expecting(mut c: Case, pointer: &'static str, value: serde_json::Value) -> Case {
    c.expect.push((pointer, value));
    c
}

fn with_stdin(mut c: Case, stdin: impl Into<Vec<u8>>) -> Case {
    c.stdin = stdin.into();
    c
}

fn on(mut c: Case, db: Db) -> Case {
    c.db = db;
    c
}

fn deep_json(depth: usize) -> String {
    format!(
        "{{\"openQuestions\": {}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

fn cases() -> Vec<Case> {
    let usage = Some("usage");
    let huge = "x".repeat(120 * 1024); // just under the kernel's limit for one argument
    let deep_options = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    vec![
        case(&[], 2, usage),
        case(&["frobnicate"], 2, usage),
        case(&["log"], 2, usage),
        case(&["log", "--stage", "s"], 2, usage),
        case(&["log", "--stage", "", "--question", "q"], 2, usage),
        case(&["log", "--stage", "s", "--question", " \t "], 2, usage),
        case(
            &[
                "log",
                "--stage",
                "s",
                "--question",
                "q",
                "--required",
                "maybe",
            ],
            2,
            usage,
        ),
        case(
            &[
                "log",
                "--stage",
                "s",
                "--question",
                "q",
                "--options-json",
                "{",
            ],
            2,
            usage,
        ),
        case(
            &[
                "log",
                "--stage",
                "s",
                "--question",
                "q",
                "--options-json",
                &deep_options,
            ],
            2,
            usage,
        ),
        case(
            &["log", "--stage", "s", "--question", "q", "--no-freeform"],
            2,
            usage,
        ),
        case(
            &[
                "log",
                "--stage",
                "s",
                "--question",
                "q",
                "--option",
                "A",
                "--option",
                " a ",
            ],
            2,
            usage,
        ),
        case(
            &["log", "--stage", "s", "--question", &huge, "--bogus"],
            2,
            usage,
        ),
        case(&["answer", "--id"], 2, usage),
        case(&["answer", "--id", "0", "--answer", "x"], 2, usage),
        case(&["answer", "--id", "-1", "--answer", "x"], 2, usage),
        case(
            &["answer", "--id", "99999999999999999999999", "--answer", "x"],
            2,
            usage,
        ),
        case(&["answer", "--id", "1"], 2, usage),
        case(
            &["answer", "--id", "2", "--answer", ""],
            1,
            Some("invalid_answer"),
        ),
        // Text that would be SQL if it were spliced into a statement: it reaches the
        // database as a value, matches nothing, and the table is still there afterwards.
        expecting(
            case(&["list", "--group", "'; DROP TABLE questions; --"], 0, None),
            "/count",
            0.into(),
        ),
        expecting(
            case(
                &["check", "--stage", "'; DROP TABLE questions; --"],
                0,
                None,
            ),
            "/total",
            0.into(),
        ),
        case(
            &["answer", "--id", "42", "--answer", "x"],
            1,
            Some("not_found"),
        ),
        case(
            &["answer", "--id", "2", "--select", "Nope"],
            1,
            Some("invalid_answer"),
        ),
        case(&["skip", "--id", "1"], 1, Some("conflict")),
        case(&["skip", "--id", "x"], 2, usage),
        expecting(
            case(&["list", "--stage", "s' OR '1'='1"], 0, None),
            "/count",
            0.into(),
        ),
        case(&["list", "--status", "done"], 2, usage),
        case(&["list", "--format", "xml"], 2, usage),
        case(&["check"], 2, usage),
        case(&["check", "--ids", "1,,2"], 2, usage),
        case(&["check", "--ids", "1; DELETE FROM questions"], 2, usage),
        case(&["check", "--ids", "1,999"], 1, Some("not_found")),
        case(&["check", "--stage", "s", "--timeout", "5"], 2, usage),
        case(
            &["check", "--stage", "s", "--wait", "--timeout", "-1"],
            2,
            usage,
        ),
        case(&["clear"], 2, usage),
        case(&["reset"], 2, usage),
        case(&["history"], 2, usage),
        case(&["history", "--id", "77"], 1, Some("not_found")),
        case(&["render", "--stage", "s", "--format", "nope"], 2, usage),
        case(
            &["render", "--stage", "s", "--ids", "42"],
            1,
            Some("not_found"),
        ),
        case(&["ask", "--stage", "s"], 2, usage),
        case(&["completions", "tcsh"], 2, usage),
        with_stdin(
            case(&["ingest", "--stage", "s"], 1, Some("parse_error")),
            "```json\n{\"openQuestions\": [ {\"question\": \n```",
        ),
        // A marker however dressed is a marker: what follows it must read as a block.
        with_stdin(
            case(&["ingest", "--stage", "s"], 1, Some("parse_error")),
            b"QUESTIONS_NEEDED\0\nProposed: x\n".to_vec(),
        ),
        with_stdin(
            case(&["ingest", "--stage", "s"], 1, Some("parse_error")),
            b"QUESTIONS_NEEDED\n[G]\nQ: caf\xe9\n".to_vec(),
        ),
        with_stdin(
            case(&["ingest", "--stage", "s"], 1, Some("parse_error")),
            deep_json(100_000),
        ),
        with_stdin(
            case(&["ingest", "--stage", "s"], 1, Some("parse_error")),
            "x".repeat(50 * 1024 * 1024),
        ),
        with_stdin(
            case(
                &["ingest", "--stage", "s", "--format", "ask-user"],
                1,
                Some("parse_error"),
            ),
            "{\"questions\": \"none\"}",
        ),
        with_stdin(
            case(&["import", "--stage", "s"], 1, Some("parse_error")),
            "{",
        ),
        with_stdin(
            case(&["import", "--stage", "s"], 1, Some("parse_error")),
            deep_json(100_000),
        ),
        with_stdin(
            case(&["import", "--stage", "s"], 1, Some("cancelled")),
            "{\"answered\": false}",
        ),
        with_stdin(
            case(&["import", "--stage", "s"], 1, Some("not_found")),
            "{\"2\": \"A\", \"42\": \"y\"}",
        ),
        with_stdin(
            case(&["import", "--stage", "s"], 1, Some("invalid_answer")),
            "{\"2\": \"   \"}",
        ),
        with_stdin(
            case(
                &["import", "--stage", "s", "--format", "map"],
                1,
                Some("parse_error"),
            ),
            "{\"two\": \"x\"}",
        ),
        on(
            case(
                &["log", "--stage", "s", "--question", "q"],
                1,
                Some("io_error"),
            ),
            Db::Directory,
        ),
        on(case(&["list"], 1, Some("io_error")), Db::Directory),
        on(
            case(
                &["log", "--stage", "s", "--question", "q"],
                1,
                Some("db_error"),
            ),
            Db::Truncated,
        ),
        on(
            case(&["check", "--stage", "s"], 1, Some("db_error")),
            Db::Truncated,
        ),
        on(
            case(
                &["log", "--stage", "s", "--question", "q"],
                1,
                Some("schema_too_new"),
            ),
            Db::Newer,
        ),
        on(case(&["list"], 1, Some("schema_too_new")), Db::Newer),
        Case {
            args: vec![
                "log".into(),
                "--stage".into(),
                OsString::from_vec(b"st\xffage".to_vec()),
                "--question".into(),
                "q".into(),
            ],
            stdin: Vec::new(),
            db: Db::Main,
            exit: 2,
            code: usage,
            expect: Vec::new(),
        },
    ]
}

/// A ledger file's bytes and its write-ahead log's (a missing log holds what an empty
/// one does: nothing).
fn content(db: &std::ffi::OsStr) -> (Option<Vec<u8>>, Vec<u8>) {
    let mut wal = db.to_owned();
    wal.push("-wal");
    (
        std::fs::read(db).ok(),
        std::fs::read(wal).unwrap_or_default(),
    )
}

#[test]
fn malformed_calls_fail_cleanly_and_leave_the_ledger_unchanged() {
    let l = Ledger::new();
    let id = l.log_with("s", "Answered?", &["--option", "Yes", "--option", "No"]);
    l.ok(["answer", "--id", &id.to_string(), "--answer", "Yes"]);
    l.log_with(
        "s",
        "Pending?",
        &["--option", "A", "--option", "B", "--no-freeform"],
    );

    // The other ledgers are files: on the PostgreSQL pass only the main ledger's cases run.
    let directory = l.dir.path().join("a-directory");
    let truncated = l.dir.path().join("truncated.db");
    let newer = l.dir.path().join("newer.db");
    if l.url.is_none() {
        std::fs::create_dir(&directory).unwrap();
        // The file alone, every write copied into it, then cut short.
        rusqlite::Connection::open(&l.path)
            .unwrap()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        std::fs::write(&truncated, &std::fs::read(&l.path).unwrap()[..5000]).unwrap();
        copy_ledger(&l.path, &newer);
        rusqlite::Connection::open(&newer)
            .unwrap()
            .execute("INSERT INTO refinery_schema_history VALUES (9999, 'future', '2030-01-01T00:00:00Z', '1')", [])
            .unwrap();
    }

    let all = cases();
    assert!(all.len() >= 40, "{} cases", all.len());
    let history = || l.ok(["history", "--stage", "s"])["events"].clone();
    for c in all {
        let db: std::ffi::OsString = match (c.db, l.url.is_some()) {
            (Db::Main, _) => l.db(),
            (_, true) => continue,
            (Db::Directory, false) => directory.clone().into(),
            (Db::Truncated, false) => truncated.clone().into(),
            (Db::Newer, false) => newer.clone().into(),
        };
        let before = content(&db);
        let listed = l.all();
        let events = history();
        let mut cmd = bare_command(l.dir.path());
        cmd.arg("--db")
            .arg(&db)
            .args(&c.args)
            .write_stdin(c.stdin.clone());
        let run = finish(cmd);
        let name: Vec<String> = c
            .args
            .iter()
            .map(|a| a.to_string_lossy().chars().take(40).collect())
            .collect();
        assert_eq!(
            run.code,
            c.exit,
            "{name:?}: {}",
            run.stdout.chars().take(400).collect::<String>()
        );
        match c.code {
            Some(code) => assert_eq!(run.error_code(), code, "{name:?}"),
            None => assert_eq!(run.json["ok"], true, "{name:?}"),
        }
        for (pointer, value) in &c.expect {
            assert_eq!(
                run.json.pointer(pointer),
                Some(value),
                "{name:?}: {pointer}"
            );
        }
        assert!(
            content(&db) == before,
            "{name:?} changed {}",
            std::path::Path::new(&db).display()
        );
        assert_eq!(l.all(), listed, "{name:?} changed the ledger");
        assert_eq!(history(), events, "{name:?} wrote to the history");
    }
}

#[test]
fn sqlite_only_a_symlinked_ledger_is_refused_and_its_target_untouched() {
    crate::sqlite_only!();
    let l = Ledger::new();
    let target = l.dir.path().join("not-a-ledger.txt");
    std::fs::write(&target, b"").unwrap();
    let link = l.dir.path().join("link.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for args in [vec!["log", "--stage", "s", "--question", "q"], vec!["list"]] {
        let mut cmd = bare_command(l.dir.path());
        cmd.arg("--db").arg(&link).args(&args);
        let run = finish(cmd);
        assert_eq!((run.code, run.error_code()), (1, "io_error"), "{args:?}");
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"");
    // reset refuses a link too (it is not a regular file) and leaves both in place.
    let mut cmd = bare_command(l.dir.path());
    cmd.arg("--db").arg(&link).args(["reset", "--yes"]);
    assert_eq!(finish(cmd).error_code(), "db_error");
    assert!(target.exists() && link.is_symlink());
}
