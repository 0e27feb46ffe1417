//! Many waiters, one person: however many agents wait, the person's answer gets through
//! and wakes them all, and a wait outlives the server going away and coming back.
//!
//! The tests of a restart, and of a server with few connections, start a PostgreSQL
//! server of their own (the suite's is shared by every test running beside them), and
//! through PgBouncer in transaction mode when the pass is PgBouncer's, as it runs there.
//! No test asserts a time: each waits for what the processes say.

#[cfg(feature = "postgres")]
use std::io::{BufRead, BufReader};
use std::path::Path;
#[cfg(feature = "postgres")]
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Ledger, Pause, BIN, NOW};

/// The binary against `db`, waiting; stdout and stderr piped.
fn spawn(db: &std::ffi::OsStr, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .env("QUESTIONS_NOW", NOW)
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(db)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("the binary starts")
}

fn run(db: &std::ffi::OsStr, dir: &Path, args: &[&str]) -> Output {
    let out = spawn(db, dir, args, &[]).wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    out
}

/// `count` waiting `check --stage g`s, each returned once it has read the ledger and is
/// waiting for a change.
fn waiters(db: &std::ffi::OsStr, dir: &Path, count: usize) -> Vec<Child> {
    waiters_with(db, dir, count, "120", &[])
}

/// `waiters`, each with `--timeout timeout` and `env`.
fn waiters_with(
    db: &std::ffi::OsStr,
    dir: &Path,
    count: usize,
    timeout: &str,
    env: &[(&str, &str)],
) -> Vec<Child> {
    let pauses: Vec<Pause> = (0..count).map(|_| Pause::new(dir, "wait")).collect();
    let children: Vec<Child> = pauses
        .iter()
        .map(|p| {
            let mut env = env.to_vec();
            env.push(("QUESTIONS_TEST_PAUSE", &p.env));
            spawn(
                db,
                dir,
                &["check", "--stage", "g", "--wait", "--timeout", timeout],
                &env,
            )
        })
        .collect();
    // Each is let go as soon as it arrives, whatever the order: one held at its first
    // wait keeps its turn at the server, which another may be waiting for.
    let mut left: Vec<&Pause> = pauses.iter().collect();
    let end = Instant::now() + Duration::from_mins(2);
    while !left.is_empty() {
        assert!(
            Instant::now() < end,
            "{} waiters never began to wait",
            left.len()
        );
        left.retain(|p| {
            if p.has_reached() {
                p.release();
                false
            } else {
                true
            }
        });
        std::thread::sleep(Duration::from_millis(5));
    }
    children
}

/// Every waiter passed: exit 0 with a passing gate.
fn all_pass(children: Vec<Child>) {
    for child in children {
        let out = child.wait_with_output().unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        assert_eq!(
            (out.status.code(), json["gate"].as_str()),
            (Some(0), Some("pass")),
            "a waiter did not pass: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn answer(db: &std::ffi::OsStr, dir: &Path, id: &str) {
    let out = run(db, dir, &["answer", "--id", id, "--answer", "yes"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the answer was not recorded: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn forty_waiters_on_one_stage_all_pass_after_one_answer() {
    let l = Ledger::new();
    l.log("g", "Ship it?");
    let waiting = waiters(&l.db(), l.dir.path(), 40);
    answer(&l.db(), l.dir.path(), "1");
    all_pass(waiting);
}

#[cfg(feature = "postgres")]
/// A PostgreSQL server of a test's own, on loopback, trusting local connections, and
/// PgBouncer in transaction mode in front of it when the pass is PgBouncer's.
struct OwnServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    bouncer: Option<(Child, u16)>,
    as_user: Vec<String>,
}

#[cfg(feature = "postgres")]
impl OwnServer {
    /// None (the test reported as skipped) where PostgreSQL's programs are missing.
    fn start(max_connections: u32) -> Option<OwnServer> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .and_then(|versions| {
                let mut found: Vec<PathBuf> = versions
                    .filter_map(|v| Some(v.ok()?.path().join("bin")))
                    .filter(|b| b.join("initdb").exists())
                    .collect();
                found.sort();
                found.pop()
            });
        let Some(bin) = bin else {
            crate::common::skip("PostgreSQL's programs (initdb, pg_ctl) are not installed");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        // Root may not run the server: the account the package makes does.
        let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
        let as_user: Vec<String> = if root {
            let owned = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(owned.success(), "no postgres account to run the server");
            ["runuser", "-u", "postgres", "--"]
                .iter()
                .map(|s| (*s).to_string())
                .collect()
        } else {
            Vec::new()
        };
        let server = OwnServer {
            port: crate::common::free_port(),
            dir,
            bin,
            bouncer: None,
            as_user,
        };
        let made = server
            .command("initdb")
            .arg("-D")
            .arg(server.data())
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .unwrap();
        assert!(made.status.success(), "initdb: {made:?}");
        let mut server = server;
        // A port can be taken between the look and the bind (by another test, or as the
        // local end of one of the pass's own connections): a server that could not listen
        // is started again on another, three times at most, as scripts/with-postgres does.
        // The last `port` in the file is the one it takes.
        for attempt in 1..=3 {
            let conf = format!(
                "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
                 fsync = off\nmax_connections = {max_connections}\n",
                server.port,
                server.dir.path().display()
            );
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(server.data().join("postgresql.conf"))
                .unwrap();
            std::io::Write::write_all(&mut file, conf.as_bytes()).unwrap();
            let started = server.start_once();
            if started.status.success() {
                break;
            }
            let log = std::fs::read_to_string(server.dir.path().join("log")).unwrap_or_default();
            assert!(
                attempt < 3
                    && (log.contains("could not create listen socket")
                        || log.contains("could not bind")),
                "pg_ctl start: {started:?}\n{log}"
            );
            server.port = crate::common::free_port();
        }
        if crate::common::pooled() {
            server.bouncer = Some(server.pgbouncer());
        }
        Some(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match self.as_user.split_first() {
            Some((first, rest)) => {
                let mut cmd = Command::new(first);
                cmd.args(rest).arg(path);
                cmd
            }
            None => Command::new(path),
        }
    }

    fn up(&self) {
        let started = self.start_once();
        assert!(started.status.success(), "pg_ctl start: {started:?}");
    }

    fn start_once(&self) -> std::process::Output {
        self.command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("log"))
            .args(["-w", "start"])
            .output()
            .unwrap()
    }

    /// Stops the server (`-m fast`: connections are ended, as at a restart or failover).
    fn down(&self) {
        let stopped = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"])
            .output()
            .unwrap();
        assert!(stopped.status.success(), "pg_ctl stop: {stopped:?}");
    }

    fn pgbouncer(&self) -> (Child, u16) {
        let port = crate::common::free_port();
        let ini = self.dir.path().join("pgbouncer.ini");
        std::fs::write(
            &ini,
            format!(
                "[databases]\n* = host=127.0.0.1 port={}\n[pgbouncer]\nlisten_addr = 127.0.0.1\n\
                 listen_port = {port}\nunix_socket_dir =\nauth_type = trust\nauth_file = {}\n\
                 pool_mode = transaction\nmax_client_conn = 400\ndefault_pool_size = 4\n\
                 max_db_connections = 8\nserver_idle_timeout = 1\n\
                 ignore_startup_parameters = extra_float_digits\n",
                self.port,
                self.dir.path().join("users").display()
            ),
        )
        .unwrap();
        std::fs::write(self.dir.path().join("users"), "\"postgres\" \"\"\n").unwrap();
        let bouncer = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("PgBouncer, for the PgBouncer pass");
        let mut cmd = match self.as_user.split_first() {
            Some((first, rest)) => {
                let mut cmd = Command::new(first);
                cmd.args(rest).arg(bouncer);
                cmd
            }
            None => Command::new(bouncer),
        };
        if !self.as_user.is_empty() {
            let _ = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(self.dir.path())
                .status();
        }
        // A group of its own: as root it runs under runuser, whose death would leave it.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .arg(&ini)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < end, "PgBouncer did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        (child, port)
    }

    /// The location of a new database on it, through PgBouncer in its pass.
    fn new_ledger(&self, name: &str) -> String {
        let mut admin = postgres::Client::connect(
            &format!(
                "host=127.0.0.1 port={} user=postgres dbname=postgres",
                self.port
            ),
            postgres::NoTls,
        )
        .unwrap();
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let port = self.bouncer.as_ref().map_or(self.port, |(_, port)| *port);
        format!("postgres://postgres@127.0.0.1:{port}/{name}?sslmode=disable")
    }
}

#[cfg(feature = "postgres")]
impl Drop for OwnServer {
    fn drop(&mut self) {
        if let Some((child, _)) = &mut self.bouncer {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

#[test]
#[cfg(feature = "postgres")]
fn postgres_only_more_waiters_than_the_server_has_connections_never_lock_out_the_answer() {
    crate::postgres_only!();
    // 20 connections in all, 3 of them kept for superusers (the role these connect as).
    let Some(server) = OwnServer::start(20) else {
        return;
    };
    let db: std::ffi::OsString = server.new_ledger("crowd").into();
    let dir = tempfile::tempdir().unwrap();
    let logged = run(
        &db,
        dir.path(),
        &["log", "--stage", "g", "--question", "Ship it?"],
    );
    assert_eq!(logged.status.code(), Some(0), "{logged:?}");
    let waiting = waiters(&db, dir.path(), 40);
    answer(&db, dir.path(), "1");
    all_pass(waiting);
}

/// A herald that holds its lock but says nothing (its process stopped with SIGSTOP) holds
/// no waiter back: each reads the server for itself once a second while the herald's
/// heartbeat is silent. A waiter held back would sit until its safety net reads again
/// (30 s); the test gives them 20 s to pass, five times what they need.
#[test]
#[cfg(feature = "postgres")]
fn postgres_only_a_stopped_herald_holds_no_waiter_back() {
    crate::postgres_only!();
    let Some(server) = OwnServer::start(40) else {
        return;
    };
    let db: std::ffi::OsString = server.new_ledger("stopped").into();
    let dir = tempfile::tempdir().unwrap();
    let logged = run(
        &db,
        dir.path(),
        &["log", "--stage", "g", "--question", "Ship it?"],
    );
    assert_eq!(logged.status.code(), Some(0), "{logged:?}");
    // The first waiter, alone: at its first wait it becomes the machine's herald.
    let first = Pause::new(dir.path(), "wait");
    let mut herald = spawn(
        &db,
        dir.path(),
        &["check", "--stage", "g", "--wait", "--timeout", "120"],
        &[("QUESTIONS_TEST_PAUSE", &first.env)],
    );
    first.reached();
    first.go_round();
    let pid = herald.id().to_string();
    let signal = |name: &str| {
        let sent = Command::new("kill").args([name, &pid]).status().unwrap();
        assert!(sent.success());
    };
    signal("-STOP");
    let waiting = waiters_with(&db, dir.path(), 3, "100", &[]);
    answer(&db, dir.path(), "1");
    let end = Instant::now() + Duration::from_secs(20);
    for mut child in waiting {
        while child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < end,
                "a waiter was held back by the stopped herald"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        all_pass(vec![child]);
    }
    signal("-CONT");
    let _ = herald.kill();
    let _ = herald.wait();
}

/// Another user who made the herald's folder under the shared temporary folder first (or
/// left it open to others) does not turn the herald off: the waiters use a folder of their
/// own user's instead, so 45 waiters still share one listening connection and take turns,
/// and the answer finds a connection free.
#[test]
#[cfg(feature = "postgres")]
fn postgres_only_a_herald_folder_taken_by_another_user_leaves_the_herald_on() {
    crate::postgres_only!();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return crate::common::skip("giving a folder to another user needs root");
    }
    let Some(server) = OwnServer::start(20) else {
        return;
    };
    let db: std::ffi::OsString = server.new_ledger("squatted").into();
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let taken = tmp.path().join(format!("questions-{uid}"));
    std::fs::create_dir(&taken).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&taken, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(&taken, Some(61_006), Some(61_006)).unwrap();
    let logged = run(
        &db,
        dir.path(),
        &["log", "--stage", "g", "--question", "Ship it?"],
    );
    assert_eq!(logged.status.code(), Some(0), "{logged:?}");
    let env = [
        ("TMPDIR", tmp.path().to_str().unwrap()),
        ("HOME", home.path().to_str().unwrap()),
        ("XDG_RUNTIME_DIR", ""),
    ];
    let waiting = waiters_with(&db, dir.path(), 45, "120", &env);
    answer(&db, dir.path(), "1");
    all_pass(waiting);
    let own = home.path().join(format!(".cache/questions-herald-{uid}"));
    let files = std::fs::read_dir(&own).map_or(0, Iterator::count);
    assert!(files > 0, "the herald's files are in {}", own.display());
    assert_eq!(
        std::fs::read_dir(&taken).unwrap().count(),
        0,
        "nothing was written in the other user's folder"
    );
}

#[test]
#[cfg(feature = "postgres")]
fn postgres_only_fifty_waiters_outlive_a_server_restart() {
    crate::postgres_only!();
    let Some(server) = OwnServer::start(100) else {
        return;
    };
    let db: std::ffi::OsString = server.new_ledger("restart").into();
    let dir = tempfile::tempdir().unwrap();
    let logged = run(
        &db,
        dir.path(),
        &["log", "--stage", "g", "--question", "Ship it?"],
    );
    assert_eq!(logged.status.code(), Some(0), "{logged:?}");
    let waiting = waiters(&db, dir.path(), 50);
    server.down();
    server.up();
    answer(&db, dir.path(), "1");
    all_pass(waiting);
}

#[test]
#[cfg(feature = "postgres")]
fn postgres_only_events_follow_across_a_reconnect_skips_and_repeats_nothing() {
    crate::postgres_only!();
    let Some(server) = OwnServer::start(100) else {
        return;
    };
    let db: std::ffi::OsString = server.new_ledger("stream").into();
    let dir = tempfile::tempdir().unwrap();
    let log = |text: &str| {
        let out = run(
            &db,
            dir.path(),
            &["log", "--stage", "s", "--question", text],
        );
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    };
    for text in ["One?", "Two?", "Three?"] {
        log(text);
    }
    let wait = Pause::new(dir.path(), "wait");
    let mut follower = spawn(
        &db,
        dir.path(),
        &["events", "--follow", "--timeout", "120"],
        &[("QUESTIONS_TEST_PAUSE", &wait.env)],
    );
    // It has read the three and holds its connection, about to wait: the server goes
    // away under it, and it reads again (the first wait returns at once) while the
    // server is down.
    wait.reached();
    server.down();
    wait.release();
    // It says so, once, and waits on.
    let stderr = follower.stderr.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    // (Through PgBouncer the pooler holds the read until the server is back: the
    // follower has nothing to say, and the pooler's reconnection is what is tested.)
    let pooled = crate::common::pooled();
    if !pooled {
        let said = lines
            .recv_timeout(Duration::from_mins(1))
            .expect("the follower says the server is out of reach");
        assert!(said.contains("waiting on"), "{said}");
    }
    server.up();
    for text in ["Four?", "Five?", "Six?"] {
        log(text);
    }
    let out = follower.stdout.take().unwrap();
    let mut seqs = Vec::new();
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        let event: Value = serde_json::from_str(&line).expect("a JSON line");
        seqs.push(event["seq"].as_i64().unwrap());
        if seqs.len() == 6 {
            break;
        }
    }
    let _ = follower.kill();
    let _ = follower.wait();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6]);
    // Said once (none through the pooler), and once that the server is back: nothing
    // more.
    let rest: Vec<String> = lines.try_iter().collect();
    let again = rest.iter().filter(|l| l.contains("waiting on")).count();
    assert!(
        again == 0 || (pooled && again == 1),
        "said more than once: {rest:?}"
    );
}
