//! What only the PostgreSQL engine has: connections that fail.

use crate::common::*;

fn with_database(url: &str, db: &str) -> String {
    format!("{}/{db}", url.rsplit_once('/').unwrap().0)
}

#[test]
fn postgres_only_unpooled_connection_failures_name_the_server_and_the_cause_but_not_the_password() {
    let admin = crate::postgres_only!();
    // The server's own refusals; the pooler words them its own way.
    crate::unpooled!();
    let wrong_password = admin.replacen("questions-test", "not-the-password", 1);
    let port = admin
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let down = admin.replacen(&format!(":{port}/"), ":1/", 1);
    for (url, cause) in [
        (with_database(&admin, "no_such_database"), "does not exist"),
        (
            with_database(&wrong_password, "postgres"),
            "password authentication failed",
        ),
        (down, "refused"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = bare_command(dir.path());
        cmd.args(["--db", &url, "list"]);
        let run = finish(cmd);
        assert_eq!((run.code, run.error_code()), (1, "db_error"), "{url}");
        let message = run.json["error"].as_str().unwrap();
        assert!(message.contains("127.0.0.1"), "{message}");
        assert!(message.contains(cause), "{cause} not in: {message}");
        assert!(
            !message.contains("questions-test") && !message.contains("not-the-password"),
            "{message}"
        );
        assert!(!run.stderr.contains("not-the-password"));
    }
}

#[test]
fn postgres_only_postgresql_scheme_and_questions_db_name_the_database_too() {
    crate::postgres_only!();
    let l = Ledger::new();
    let url = l
        .url
        .clone()
        .unwrap()
        .replacen("postgres://", "postgresql://", 1);
    let mut cmd = bare_command(l.dir.path());
    cmd.env("QUESTIONS_DB", &url)
        .args(["log", "--stage", "s", "--question", "shared?"]);
    assert_eq!(finish(cmd).code, 0);
    assert_eq!(l.all().len(), 1);
    assert!(
        !l.path.exists() && !l.dir.path().join(".questions").exists(),
        "no file was written"
    );
}

/// Whether the connection of the `questions` process now connected to `database` is
/// encrypted, as the server sees it.
fn connected_with_tls(admin: &str, database: &str) -> Option<bool> {
    let mut client = postgres::Client::connect(admin, postgres::NoTls).unwrap();
    client
        .query_opt(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
             WHERE a.application_name = 'questions' AND a.datname = $1 LIMIT 1",
            &[&database],
        )
        .unwrap()
        .map(|row| row.get(0))
}

#[test]
fn postgres_only_unpooled_every_sslmode_means_what_it_means_to_libpq() {
    let admin = crate::postgres_only!();
    // The pooler is plain text in front of the TLS server.
    crate::unpooled!();
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| panic!("{name}: set by scripts/with-postgres"))
    };
    let (ca, other_ca, plain) = (
        var("QUESTIONS_TEST_PG_CA"),
        var("QUESTIONS_TEST_PG_OTHER_CA"),
        var("QUESTIONS_TEST_PG_PLAIN"),
    );
    let l = Ledger::new();
    let url = l.url.clone().unwrap();
    l.log("s", "Encrypted?");
    let other_host = url.replacen("127.0.0.1", "127.0.0.2", 1);
    let run = |location: &str| {
        let mut cmd = bare_command(l.dir.path());
        cmd.args(["--db", location, "list"]);
        finish(cmd)
    };
    let q = |base: &str, query: &str| format!("{base}?{query}");

    for (location, ok, says) in [
        (q(&url, "sslmode=disable"), true, ""),
        (q(&url, "sslmode=prefer"), true, ""),
        (q(&url, "sslmode=require"), true, ""),
        (
            q(&url, &format!("sslmode=verify-ca&sslrootcert={ca}")),
            true,
            "",
        ),
        (
            q(&url, &format!("sslmode=verify-full&sslrootcert={ca}")),
            true,
            "",
        ),
        (
            q(&other_host, &format!("sslmode=verify-ca&sslrootcert={ca}")),
            true,
            "",
        ),
        // The three refusals, each saying which.
        (
            q(&url, &format!("sslmode=verify-full&sslrootcert={other_ca}")),
            false,
            "not signed by a trusted CA",
        ),
        (
            q(
                &other_host,
                &format!("sslmode=verify-full&sslrootcert={ca}"),
            ),
            false,
            "does not name the host '127.0.0.2'",
        ),
        (
            q(&url, "sslmode=verify-full&sslrootcert=/no/such/ca.crt"),
            false,
            "cannot read the CA certificates",
        ),
        // require checks against a CA when one is given, as libpq does.
        (
            q(&url, &format!("sslmode=require&sslrootcert={other_ca}")),
            false,
            "not signed by a trusted CA",
        ),
        // A server without TLS: require and above never fall back to plain text.
        (
            q(&with_database(&plain, "postgres"), "sslmode=require"),
            false,
            "does not offer TLS",
        ),
        (
            q(
                &with_database(&plain, "postgres"),
                &format!("sslmode=verify-full&sslrootcert={ca}"),
            ),
            false,
            "does not offer TLS",
        ),
    ] {
        let result = run(&location);
        if ok {
            assert_eq!(result.code, 0, "{location}: {result:?}");
            assert_eq!(result.json["count"], 1, "{location}");
        } else {
            assert_eq!(
                (result.code, result.error_code()),
                (1, "db_error"),
                "{location}"
            );
            let message = result.json["error"].as_str().unwrap();
            assert!(message.contains(says), "{location}: {message}");
            assert!(!message.contains("questions-test"), "{message}");
        }
    }
    // prefer falls back to plain text where the server has no TLS.
    let plain_ledger = q(&with_database(&plain, "postgres"), "sslmode=prefer");
    assert_eq!(run(&plain_ledger).code, 0);

    // The key=value form takes the same settings.
    let cfg: postgres::Config = url.parse().unwrap();
    let port = cfg.get_ports()[0];
    let dbname = cfg.get_dbname().unwrap();
    let kv = format!(
        "host=127.0.0.1 port={port} user=postgres password=questions-test dbname={dbname} \
         sslmode=verify-full sslrootcert='{ca}'"
    );
    assert_eq!(run(&kv).json["count"], 1, "{kv}");
    let bad = run(&format!("{url}?sslmode=sometimes"));
    assert_eq!((bad.code, bad.error_code()), (2, "usage"));

    // And the server agrees: require is encrypted, disable is not.
    for (mode, encrypted) in [("require", true), ("disable", false), ("prefer", true)] {
        let mut follower = std::process::Command::new(BIN)
            .args(["--db", &q(&url, &format!("sslmode={mode}"))])
            .args(["events", "--follow", "--timeout", "3"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut seen = None;
        for _ in 0..40 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            seen = connected_with_tls(&admin, dbname);
            if seen.is_some() {
                break;
            }
        }
        let _ = follower.kill();
        let _ = follower.wait();
        assert_eq!(seen, Some(encrypted), "sslmode={mode}");
    }
}

#[test]
fn postgres_only_reset_in_the_middle_of_writers_neither_deadlocks_nor_lets_one_report_a_lost_write()
{
    crate::postgres_only!();
    let l = Ledger::new();
    l.log("s", "First?");
    let writers: Vec<_> = (0..6)
        .map(|w| {
            let db = l.db();
            let dir = l.dir.path().to_path_buf();
            std::thread::spawn(move || {
                let mut outcomes = Vec::new();
                for i in 0..15 {
                    let mut cmd = bare_command(&dir);
                    cmd.arg("--db").arg(&db).args([
                        "log",
                        "--stage",
                        "s",
                        "--question",
                        &format!("w{w} q{i}?"),
                    ]);
                    outcomes.push(finish(cmd));
                }
                outcomes
            })
        })
        .collect();
    for _ in 0..4 {
        // Each reset lands among the writers: once they have logged a few questions into
        // the ledger there now (at most 90 are logged in all).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while l.run(["list"]).json["count"].as_u64().unwrap_or(0) < 4 {
            assert!(
                std::time::Instant::now() < deadline,
                "the writers logged nothing"
            );
        }
        let reset = l.run(["reset", "--yes"]);
        assert_eq!(reset.code, 0, "reset failed: {reset:?}");
    }
    for writer in writers {
        for run in writer.join().unwrap() {
            if run.code == 0 {
                continue;
            }
            let message = run.json["error"].as_str().unwrap_or_default();
            assert!(!message.contains("deadlock"), "{message}");
            assert!(
                message.contains("reset") || message.contains("does not exist"),
                "{run:?}"
            );
        }
    }
}

/// A TCP server on 127.0.0.1 that accepts every connection and then, once it has read
/// `answers_start_up` (a start-up message it answers as a server that asks no password
/// would), never says another word. Its port.
fn mute_server(answers_start_up: bool) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            if answers_start_up {
                // The start-up message: its length, then the rest of it.
                let mut length = [0u8; 4];
                if stream.read_exact(&mut length).is_ok() {
                    let mut rest =
                        vec![0u8; (u32::from_be_bytes(length) as usize).saturating_sub(4)];
                    let _ = stream.read_exact(&mut rest);
                    // AuthenticationOk, then ReadyForQuery (idle).
                    let _ =
                        stream.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 0, b'Z', 0, 0, 0, 5, b'I']);
                }
            }
            // Held open, never read from again or answered.
            held.push(stream);
        }
    });
    port
}

/// The location of a server at `port` on loopback, with these parameters.
fn mute_location(port: u16, params: &str) -> String {
    format!("postgres://someone:not-a-secret@127.0.0.1:{port}/db?{params}")
}

fn run_against(location: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bare_command(dir.path());
    cmd.args(["--db", location]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    finish(cmd)
}

/// The connect timeout covered the TCP connection only: a server that accepted and then
/// never answered hung every command, a gate's wait too. Every step of connecting (TLS
/// negotiation, start-up, authentication) now has a bound, `connect_timeout` in the
/// location as libpq has it, else 10 s.
#[test]
fn a_server_that_accepts_and_never_answers_fails_within_the_connect_bound() {
    let port = mute_server(false);
    for (params, args, what) in [
        (
            "sslmode=disable&connect_timeout=1",
            &["list"][..],
            "start-up",
        ),
        ("connect_timeout=1", &["list"][..], "TLS negotiation"),
        (
            "sslmode=verify-full&connect_timeout=1",
            &["list"][..],
            "TLS",
        ),
        (
            "connect_timeout=1",
            &["check", "--stage", "s", "--wait", "--timeout", "3600"][..],
            "TLS",
        ),
        ("sslmode=disable", &["list"][..], "within 10 s"),
    ] {
        let run = run_against(&mute_location(port, params), args, &[]);
        assert_eq!(
            (run.code, run.error_code()),
            (1, "db_error"),
            "{params}: {run:?}"
        );
        let message = run.json["error"].as_str().unwrap();
        assert!(message.contains("127.0.0.1"), "{message}");
        assert!(message.contains(what), "{what} not in: {message}");
        assert!(message.contains("did not"), "{message}");
        if params.contains("connect_timeout=1") {
            assert!(message.contains("within 1 s"), "{message}");
        }
        assert!(!message.contains("not-a-secret"), "{message}");
    }
}

/// A server that stopped answering in the middle of a session (after start-up): each
/// statement has a bound too, QUESTIONS_PG_QUERY_TIMEOUT (60 s unless set).
#[test]
fn a_server_that_stops_answering_after_start_up_fails_within_the_statement_bound() {
    let port = mute_server(true);
    let location = mute_location(port, "sslmode=disable");
    let run = run_against(&location, &["list"], &[("QUESTIONS_PG_QUERY_TIMEOUT", "1")]);
    assert_eq!((run.code, run.error_code()), (1, "db_error"), "{run:?}");
    let message = run.json["error"].as_str().unwrap();
    assert!(message.contains("127.0.0.1"), "{message}");
    assert!(
        message.contains("sent no reply for 1 s while a statement was under way"),
        "{message}"
    );
    let run = run_against(
        &location,
        &["list"],
        &[("QUESTIONS_PG_QUERY_TIMEOUT", "soon")],
    );
    assert_eq!((run.code, run.error_code()), (2, "usage"), "{run:?}");
    assert!(run.json["error"]
        .as_str()
        .unwrap()
        .contains("QUESTIONS_PG_QUERY_TIMEOUT"));
}

/// A forwarder on loopback to the server at `port`, counting the connections made
/// through it.
fn counted(port: u16) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = listener.local_addr().unwrap().port();
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&count);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    (proxy, count)
}

/// A call that does not wait opened a second connection, a LISTEN for the waiters'
/// herald, and took twice as long: a look costs one connection, and only a wait joins
/// the herald.
#[test]
fn postgres_only_a_call_that_does_not_wait_opens_one_connection() {
    crate::postgres_only!();
    use std::sync::atomic::Ordering;
    let l = Ledger::new();
    let id = l.log("release", "Ship?");
    let url = l.url.clone().unwrap();
    let (head, rest) = url.split_once("@127.0.0.1:").unwrap();
    let (port, tail) = rest.split_once('/').unwrap();
    let (proxy, count) = counted(port.parse().unwrap());
    let through = format!("{head}@127.0.0.1:{proxy}/{tail}");
    let id = id.to_string();
    let calls: [&[&str]; 7] = [
        &["check", "--stage", "release"],
        &["check", "--ids", &id],
        &["list", "--stage", "release"],
        &["answers", "--stage", "release"],
        &["history", "--id", &id],
        &["log", "--stage", "release", "--question", "Ship on Monday?"],
        &["answer", "--id", &id, "--answer", "yes"],
    ];
    for args in calls {
        let before = count.load(Ordering::SeqCst);
        let run = run_against(&through, args, &[]);
        assert!(
            run.code <= 1 && run.json["procedure"].is_string(),
            "{run:?}"
        );
        assert_eq!(
            count.load(Ordering::SeqCst) - before,
            1,
            "{args:?} opened more than its own connection"
        );
    }
}
