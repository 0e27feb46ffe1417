//! `--db http(s)://…` (§15): the command line sends the door's requests to `questions
//! serve` with a token the ledger issued, through real HTTP on loopback.

use std::process::Stdio;

use serde_json::{json, Value};

use crate::common::{bare_command, finish, Ledger, Run, BIN, NOW};
use crate::serve::Served;

fn token(l: &Ledger, args: &[&str]) -> String {
    let mut all = vec!["token", "create"];
    all.extend_from_slice(args);
    l.ok(all)["token"].as_str().unwrap().to_string()
}

/// The binary against the server `base`, holding `token` (none: no token at all).
fn over(l: &Ledger, base: &str, token: Option<&str>, args: &[&str]) -> Run {
    let mut cmd = bare_command(l.dir.path());
    cmd.env("QUESTIONS_DB", base)
        .env_remove("QUESTIONS_TOKEN")
        .env_remove("QUESTIONS_TOKEN_FILE")
        .env_remove("QUESTIONS_CA")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .args(args);
    if let Some(t) = token {
        cmd.env("QUESTIONS_TOKEN", t);
    }
    let run = finish(cmd);
    if let Some(t) = token {
        assert!(
            !run.stdout.contains(t) && !run.stderr.contains(t),
            "the token was printed: {run:?}"
        );
    }
    run
}

#[test]
fn remote_an_agent_asks_and_waits_and_a_person_answers() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let s = Served::start(&l, &[]);
    let base = s.base();

    let logged = over(
        &l,
        &base,
        Some(&agent),
        &["log", "--stage", "ci-deploy", "--question", "Ship it?"],
    );
    assert_eq!(logged.code, 0, "{logged:?}");
    assert_eq!(logged.json["procedure"], "log");
    let id = logged.json["question_id"].as_i64().unwrap();
    // The same document a file gives, its question logged by the token.
    assert_eq!(l.question(id)["question"], "Ship it?");

    let gate = over(&l, &base, Some(&agent), &["check", "--stage", "ci-deploy"]);
    assert_eq!(
        (gate.code, gate.json["gate"].clone()),
        (1, json!("fail")),
        "{gate:?}"
    );

    // The agent's token never answers: forbidden, exit 2, nothing changed.
    let refused = over(
        &l,
        &base,
        Some(&agent),
        &["answer", "--id", &id.to_string(), "--answer", "yes"],
    );
    assert_eq!(refused.code, 2, "{refused:?}");
    assert_eq!(refused.error_code(), "forbidden");
    assert_eq!(l.question(id)["status"], "pending");

    // A wait over the wire, answered by the person's token meanwhile.
    let waiter = std::process::Command::new(BIN)
        .current_dir(l.dir.path())
        .env("QUESTIONS_NOW", NOW)
        .env("QUESTIONS_DB", &base)
        .env("QUESTIONS_TOKEN", &agent)
        .env_remove("QUESTIONS_TOKEN_FILE")
        .env_remove("HTTPS_PROXY")
        .env_remove("HTTP_PROXY")
        .env_remove("ALL_PROXY")
        .args(["check", "--stage", "ci-deploy", "--wait", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let answered = over(
        &l,
        &base,
        Some(&dana),
        &["answer", "--id", &id.to_string(), "--answer", "yes"],
    );
    assert_eq!(answered.code, 0, "{answered:?}");
    assert_eq!(answered.json["question"]["answered_by"], "dana");
    assert_eq!(answered.json["question"]["channel"], "api");
    let waited = waiter.wait_with_output().unwrap();
    let doc: Value = serde_json::from_slice(&waited.stdout).unwrap();
    assert_eq!(waited.status.code(), Some(0), "{doc}");
    assert_eq!(doc["gate"], "pass");

    let info = over(&l, &base, Some(&agent), &["info"]);
    assert_eq!(info.json["ledger"]["engine"], "https");
    assert_eq!(info.json["ledger"]["location"], base.as_str());
    assert!(!info.stdout.contains("ledger.db"), "{}", info.stdout);
}

#[test]
fn remote_tokens_locations_and_commands_off_the_door_fail_clearly() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let s = Served::start(&l, &[]);
    let base = s.base();

    // Wrong and revoked: one message; missing: unauthorized too.
    let wrong = over(&l, &base, Some("qtok_0123"), &["list"]);
    assert_eq!((wrong.code, wrong.error_code()), (2, "unauthorized"));
    assert_eq!(over(&l, &base, Some(&agent), &["list"]).code, 0);
    l.ok(["token", "revoke", "ci-runner"]);
    let revoked = over(&l, &base, Some(&agent), &["list"]);
    assert_eq!((revoked.code, revoked.error_code()), (2, "unauthorized"));
    assert_eq!(wrong.json["error"], revoked.json["error"]);
    let missing = over(&l, &base, None, &["list"]);
    assert_eq!((missing.code, missing.error_code()), (2, "unauthorized"));

    let agent = token(&l, &["ci-2", "--agent"]);
    // What needs the ledger itself says so.
    for args in [
        &["token", "list"][..],
        &["policy", "list"],
        &["reset", "--yes"],
        &["events"],
        &["render", "--stage", "x"],
    ] {
        let run = over(&l, &base, Some(&agent), args);
        assert_eq!(
            (run.code, run.error_code()),
            (2, "usage"),
            "{args:?}: {run:?}"
        );
        assert!(run.json["error"]
            .as_str()
            .unwrap()
            .contains("needs the ledger itself"));
    }
    // Plain HTTP only to this machine; no password in the URL.
    for url in ["http://192.0.2.1:8466", "https://u:p@q.example.com"] {
        let run = over(&l, url, Some(&agent), &["list"]);
        assert_eq!((run.code, run.error_code()), (2, "usage"), "{url}: {run:?}");
    }
    // A server nobody answers at: unavailable, exit 1, naming the host.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let down = over(
        &l,
        &format!("http://127.0.0.1:{port}"),
        Some(&agent),
        &["list"],
    );
    assert_eq!(
        (down.code, down.error_code()),
        (1, "unavailable"),
        "{down:?}"
    );
    assert!(down.json["error"]
        .as_str()
        .unwrap()
        .contains(&format!("127.0.0.1:{port}")));

    // A token file others may read is refused, unread.
    let file = l.dir.path().join("token");
    std::fs::write(&file, &agent).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = bare_command(l.dir.path());
    cmd.env("QUESTIONS_DB", &base)
        .env_remove("QUESTIONS_TOKEN")
        .env("QUESTIONS_TOKEN_FILE", &file)
        .arg("list");
    let loose = finish(cmd);
    assert_eq!((loose.code, loose.error_code()), (2, "usage"), "{loose:?}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut cmd = bare_command(l.dir.path());
    cmd.env("QUESTIONS_DB", &base)
        .env_remove("QUESTIONS_TOKEN")
        .env("QUESTIONS_TOKEN_FILE", &file)
        .arg("list");
    let kept = finish(cmd);
    assert_eq!(kept.code, 0, "{kept:?}");
    assert!(!kept.stdout.contains(&agent));
}

#[test]
fn remote_a_log_sent_again_with_its_key_is_recorded_once() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let other = token(&l, &["ci-other", "--agent"]);
    let s = Served::start(&l, &[]);
    let send = |token: &str, key: &str, text: &str| -> Value {
        let body = json!({"op": "log", "args": {"draft": {
            "stage": "ci", "group": null, "question": text, "proposed": null,
            "required": true, "header": null, "context": null, "options": [],
            "multi_select": false, "allow_freeform": true, "source": "cli", "approval": null
        }, "allow_duplicate": true}});
        let bearer = format!("Authorization: Bearer {token}");
        let key = format!("Idempotency-Key: {key}");
        let reply = s.request(
            "POST",
            "/v1/call",
            &["Content-Type: application/json", &bearer, &key],
            &body.to_string(),
        );
        assert_eq!(reply.status, 200);
        reply.json()
    };
    let first = send(&agent, "k-1", "Deploy?");
    // The reply was lost; the client sends it again with its key.
    let again = send(&agent, "k-1", "Deploy?");
    assert_eq!(again["question_id"], first["question_id"]);
    assert_eq!(again["created"], true, "the first result: {again}");
    // Another key, another holder with the same key, or the key on another question:
    // each a question of its own.
    let fresh = send(&agent, "k-2", "Deploy?");
    let theirs = send(&other, "k-1", "Deploy?");
    let forged = send(&agent, "k-1", "Drop the database?");
    let ids: std::collections::BTreeSet<i64> = [&first, &fresh, &theirs, &forged]
        .iter()
        .map(|d| d["question_id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(l.ok(["list"])["count"], 4);

    // Each invocation of the command line has a key of its own.
    for _ in 0..2 {
        let run = over(
            &l,
            &s.base(),
            Some(&agent),
            &[
                "log",
                "--stage",
                "ci",
                "--question",
                "Again?",
                "--allow-duplicate",
            ],
        );
        assert_eq!(run.code, 0, "{run:?}");
    }
    assert_eq!(l.ok(["list"])["count"], 6);
}

/// Debian's tinyproxy on loopback, as a sandbox's proxy: it lets through a CONNECT to
/// 127.0.0.1 on `port` only, and logs each.
struct Proxy {
    child: std::process::Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Proxy {
    fn start(dir: &std::path::Path, port: u16) -> Option<Proxy> {
        let bin = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())?;
        let listen = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let own = listen.local_addr().unwrap().port();
        drop(listen);
        let log = dir.join("proxy.log");
        let filter = dir.join("proxy.filter");
        std::fs::write(&filter, "^127\\.0\\.0\\.1$\n").unwrap();
        let conf = dir.join("proxy.conf");
        std::fs::write(
            &conf,
            format!(
                "Port {own}\nListen 127.0.0.1\nTimeout 120\nMaxClients 50\nLogLevel Info\n\
                 LogFile \"{}\"\nFilter \"{}\"\nFilterDefaultDeny Yes\nFilterType ere\n\
                 ConnectPort {port}\n",
                log.display(),
                filter.display()
            ),
        )
        .unwrap();
        let child = std::process::Command::new(bin)
            .arg("-d")
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Ready when it accepts a connection.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", own)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "tinyproxy did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(Proxy {
            child,
            port: own,
            log,
        })
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn remote_a_sandbox_asks_through_a_proxy_and_a_person_s_answer_opens_its_gate() {
    let l = Ledger::new();
    let agent = token(&l, &["sandbox", "--agent", "--stages", "deploy"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let s = Served::start(&l, &[]);
    let Some(proxy) = Proxy::start(l.dir.path(), s.port) else {
        crate::common::skip("Debian's tinyproxy is not installed");
        return;
    };
    let through = |token: &str, args: &[&str]| -> Run {
        let mut cmd = bare_command(l.dir.path());
        cmd.env("QUESTIONS_DB", s.base())
            .env("QUESTIONS_TOKEN", token)
            .env("HTTPS_PROXY", format!("http://127.0.0.1:{}", proxy.port))
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .args(args);
        finish(cmd)
    };
    let asked = through(
        &agent,
        &[
            "log",
            "--stage",
            "deploy",
            "--question",
            "Roll out to prod?",
        ],
    );
    assert_eq!(asked.code, 0, "{asked:?}");
    let id = asked.json["question_id"].as_i64().unwrap().to_string();
    assert_eq!(through(&agent, &["check", "--stage", "deploy"]).code, 1);
    let answered = through(&dana, &["answer", "--id", &id, "--answer", "yes"]);
    assert_eq!(answered.code, 0, "{answered:?}");
    let gate = through(&agent, &["check", "--stage", "deploy"]);
    assert_eq!(
        (gate.code, gate.json["gate"].clone()),
        (0, json!("pass")),
        "{gate:?}"
    );
    // Every call went through the proxy, to the server's port.
    let log = std::fs::read_to_string(&proxy.log).unwrap();
    let tunnels = log
        .matches(&format!("opening connection to 127.0.0.1:{}", s.port))
        .count();
    assert!(tunnels >= 4, "{tunnels} tunnels: {log}");
    assert!(
        !log.contains(&agent) && !log.contains(&dana),
        "a token in the proxy's log"
    );
}

/// A throw-away CA and a certificate it signed for 127.0.0.1, made with openssl in
/// `dir`: (the CA's PEM, the leaf's PEM, its key).
fn throwaway_ca(
    dir: &std::path::Path,
) -> Option<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    let openssl = |args: &[&str]| {
        std::process::Command::new("openssl")
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()
            .is_some_and(|s| s.success())
    };
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let made = openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=throw-away CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
    ]) && openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]) && openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    made.then(|| {
        (
            dir.join("ca.pem"),
            dir.join("leaf.pem"),
            dir.join("leaf.key"),
        )
    })
}

/// openssl's s_server on loopback with `cert`, answering its one connection with
/// `reply`; `seen` gives what it read.
struct TlsServer {
    port: u16,
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

impl TlsServer {
    fn start(cert: &std::path::Path, key: &std::path::Path, reply: &str) -> TlsServer {
        use std::io::{BufRead, Write};
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let mut child = std::process::Command::new("openssl")
            .args(["s_server", "-naccept", "1", "-accept"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("-cert")
            .arg(cert)
            .arg("-key")
            .arg(key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(reply.as_bytes()).unwrap();
        // Kept open: s_server ends its connection when its input does.
        std::mem::forget(stdin);
        // It says ACCEPT once it listens.
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.starts_with("ACCEPT") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "s_server did not start"
            );
        }
        TlsServer { port, child, out }
    }

    /// Everything it printed after it started listening (the request it read among it).
    fn seen(mut self) -> String {
        use std::io::Read;
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut text = String::new();
        let _ = self.out.read_to_string(&mut text);
        text
    }
}

#[test]
fn remote_tls_a_private_ca_is_trusted_only_when_named_and_nothing_goes_to_an_untrusted_server() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path()) else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let body = r#"{"ok": true, "procedure": "list", "count": 0, "questions": []}"#;
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let secret = "qtok_0000000000000000000000000000000000000000000000000000000000000000";
    let ask = |port: u16, ca: Option<&std::path::Path>| -> Run {
        let mut cmd = bare_command(l.dir.path());
        cmd.env("QUESTIONS_DB", format!("https://127.0.0.1:{port}"))
            .env("QUESTIONS_TOKEN", secret)
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .arg("list");
        match ca {
            Some(ca) => cmd.env("QUESTIONS_CA", ca),
            None => cmd.env_remove("QUESTIONS_CA"),
        };
        finish(cmd)
    };

    // Not among the webpki roots: refused in the handshake, the request never sent.
    let server = TlsServer::start(&leaf, &key, &reply);
    let refused = ask(server.port, None);
    assert_eq!(
        (refused.code, refused.error_code()),
        (1, "unavailable"),
        "{refused:?}"
    );
    let message = refused.json["error"].as_str().unwrap();
    assert!(
        message.contains("certificate") && message.contains("QUESTIONS_CA"),
        "{message}"
    );
    assert!(!refused.stdout.contains(secret) && !refused.stderr.contains(secret));
    let seen = server.seen();
    assert!(
        !seen.contains("POST") && !seen.contains(secret),
        "sent to an untrusted server: {seen}"
    );

    // Named by QUESTIONS_CA: trusted, and the request goes through.
    let server = TlsServer::start(&leaf, &key, &reply);
    let trusted = ask(server.port, Some(&ca));
    assert_eq!(trusted.code, 0, "{trusted:?}");
    assert_eq!(trusted.json["procedure"], "list");
    let seen = server.seen();
    assert!(seen.contains("POST /v1/call HTTP/1.1"), "{seen}");
}

/// One HTTP request as it came, read to the end of its body.
fn read_request(client: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut request = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while let Ok(k) = client.read(&mut chunk) {
        request.extend_from_slice(&chunk[..k]);
        let text = String::from_utf8_lossy(&request).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if body.len() >= length {
                break;
            }
        }
        if k == 0 {
            break;
        }
    }
    String::from_utf8_lossy(&request).to_string()
}

/// A proxy on loopback in front of `to` that drops the reply to the first request it
/// carries, after the server has it: the connection is cut as the reply comes back.
/// Later requests are carried whole. Each connection carries one request (the client
/// opens a new one to send again), whose Host it names as the server's. Counts them.
fn reply_dropper(to: u16) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let Ok(mut server) = std::net::TcpStream::connect(("127.0.0.1", to)) else {
                return;
            };
            let request = read_request(&mut client);
            let text = request
                .split("\r\n")
                .map(|l| {
                    if l.to_ascii_lowercase().starts_with("host:") {
                        format!("host: 127.0.0.1:{to}")
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\r\n");
            server.write_all(text.as_bytes()).unwrap();
            if n == 0 {
                // The server has it: wait for its reply to begin, then cut both ends.
                let mut first = [0u8; 1];
                let _ = server.read(&mut first);
                continue;
            }
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut server, &mut client);
            });
        }
    });
    (port, seen)
}

#[test]
fn remote_a_log_whose_reply_is_lost_is_sent_again_and_recorded_once() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let s = Served::start(&l, &[]);
    let (port, seen) = reply_dropper(s.port);
    let base = format!("http://127.0.0.1:{port}");
    // --allow-duplicate: only the key can tell the retry from a new question.
    let run = over(
        &l,
        &base,
        Some(&agent),
        &[
            "log",
            "--stage",
            "ci",
            "--question",
            "Once?",
            "--allow-duplicate",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "sent again"
    );
    assert_eq!(run.json["created"], true, "the first result: {run:?}");
    let listed = l.ok(["list"]);
    assert_eq!(listed["count"], 1, "{listed}");
    assert_eq!(listed["questions"][0]["id"], run.json["question_id"]);
}

#[test]
fn remote_a_wait_is_long_polls_of_at_most_50_s_sent_again_until_the_gate_passes() {
    use std::io::Write;
    // A stand-in server: its first two polls end timed out, the third passes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let polls = std::thread::spawn(move || {
        let mut waits = Vec::new();
        for n in 0..3 {
            let (mut client, _) = listener.accept().unwrap();
            let request = read_request(&mut client);
            let body: Value =
                serde_json::from_str(request.split_once("\r\n\r\n").unwrap().1).unwrap();
            assert_eq!(body["op"], "check");
            waits.push(body["args"]["wait"]["until"]["secs"].as_u64().unwrap());
            let doc = if n < 2 {
                json!({"ok": false, "procedure": "check", "gate": "fail", "stage": "ci",
                       "total": 1, "pending_count": 1, "pending": [], "optional_pending": 0,
                       "declined": [], "timed_out": true})
            } else {
                json!({"ok": true, "procedure": "check", "gate": "pass", "stage": "ci",
                       "total": 1, "pending_count": 0, "pending": [], "optional_pending": 0,
                       "declined": []})
            }
            .to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{doc}",
                doc.len()
            );
            client.write_all(reply.as_bytes()).unwrap();
        }
        waits
    });
    let l = Ledger::new();
    let run = over(
        &l,
        &format!("http://127.0.0.1:{port}"),
        Some("qtok_stand_in"),
        &["check", "--stage", "ci", "--wait", "--timeout", "3600"],
    );
    assert_eq!(
        (run.code, run.json["gate"].clone()),
        (0, json!("pass")),
        "{run:?}"
    );
    let waits = polls.join().unwrap();
    assert_eq!(waits.len(), 3);
    assert!(waits.iter().all(|&w| w <= 50), "{waits:?}");
}

#[test]
fn remote_an_answer_whose_reply_is_lost_is_sent_again_and_gets_the_first_result() {
    let l = Ledger::new();
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let id = l.log("deploy", "Ship it?").to_string();
    let s = Served::start(&l, &[]);
    let (port, seen) = reply_dropper(s.port);
    let run = over(
        &l,
        &format!("http://127.0.0.1:{port}"),
        Some(&dana),
        &["answer", "--id", &id, "--answer", "yes"],
    );
    // Not a conflict with itself: the answer its first attempt recorded.
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "sent again"
    );
    assert_eq!(run.json["question"]["answer"], "yes");
    assert_eq!(run.json["question"]["answered_by"], "dana");
    let history = l.ok(["history", "--id", &id]);
    let answered = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "answered")
        .count();
    assert_eq!(answered, 1, "{history}");

    // A second invocation is a change of its own: the answer on record stands.
    let again = over(
        &l,
        &s.base(),
        Some(&dana),
        &["answer", "--id", &id, "--answer", "no"],
    );
    assert_eq!(
        (again.code, again.error_code()),
        (1, "conflict"),
        "{again:?}"
    );
    assert_eq!(l.question(id.parse().unwrap())["answer"], "yes");
}
