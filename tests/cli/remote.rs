//! `--db http(s)://…` (§15): the command line sends the door's requests to `questions
//! serve` with a token the ledger issued, through real HTTP on loopback.

use std::process::Stdio;

use serde_json::{json, Value};

use crate::common::{bare_command, finish, throwaway_ca, throwaway_rsa_ca, Ledger, Run, BIN, NOW};
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
        &["group", "create", "release"],
        &["people", "list"],
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
    // An RSA certificate, as many an operator's is; the other tests' are ECDSA.
    let Some((ca, leaf, key)) = throwaway_rsa_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let s = served_tls(&l, &leaf, &key, &[]);
    assert!(s.base().starts_with("https://"));
    let Some(proxy) = Proxy::start(l.dir.path(), s.port) else {
        crate::common::skip("Debian's tinyproxy is not installed");
        return;
    };
    let through = |token: &str, args: &[&str]| -> Run {
        let mut cmd = bare_command(l.dir.path());
        cmd.env("QUESTIONS_DB", s.base())
            .env("QUESTIONS_TOKEN", token)
            .env("QUESTIONS_CA", &ca)
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

/// `serve --tls-cert cert --tls-key key` (and `more`).
pub(crate) fn served_tls(
    l: &Ledger,
    cert: &std::path::Path,
    key: &std::path::Path,
    more: &[&str],
) -> Served {
    let mut args = vec![
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    Served::start(l, &args)
}

/// The binary against `base`, holding `token` and trusting `ca` (none: the webpki roots
/// alone).
fn over_tls(
    l: &Ledger,
    base: &str,
    token: &str,
    ca: Option<&std::path::Path>,
    args: &[&str],
) -> Run {
    let mut cmd = bare_command(l.dir.path());
    cmd.env("QUESTIONS_DB", base)
        .env("QUESTIONS_TOKEN", token)
        .env_remove("QUESTIONS_TOKEN_FILE")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .args(args);
    match ca {
        Some(ca) => cmd.env("QUESTIONS_CA", ca),
        None => cmd.env_remove("QUESTIONS_CA"),
    };
    let run = finish(cmd);
    assert!(
        !run.stdout.contains(token) && !run.stderr.contains(token),
        "the token was printed: {run:?}"
    );
    run
}

#[test]
fn remote_tls_serve_speaks_https_to_a_client_that_trusts_its_ca_and_to_no_other() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let s = served_tls(&l, &leaf, &key, &[]);
    assert!(s.url.starts_with("https://127.0.0.1:"), "{}", s.url);
    let base = s.base();

    // Not among the webpki roots: refused in the handshake, the request never sent (the
    // token was never presented: the server has not seen it used).
    let refused = over_tls(
        &l,
        &base,
        &agent,
        None,
        &["log", "--stage", "ci-a", "--question", "Q?"],
    );
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
    assert_eq!(l.ok(["list"])["count"], 0);
    assert_eq!(
        l.ok(["token", "list"])["tokens"][0]["last_used_at"],
        Value::Null
    );

    // Named by QUESTIONS_CA: trusted; the inbox, its API and /v1/call all on that port.
    let logged = over_tls(
        &l,
        &base,
        &agent,
        Some(&ca),
        &["log", "--stage", "ci-a", "--question", "Q?"],
    );
    assert_eq!(logged.code, 0, "{logged:?}");
    assert_eq!(l.ok(["list"])["count"], 1);
    let listed = over_tls(&l, &base, &agent, Some(&ca), &["list"]);
    assert_eq!(listed.json["count"], 1, "{listed:?}");

    // Plain HTTP to the TLS port is answered by no route.
    let mut plain = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    std::io::Write::write_all(
        &mut plain,
        format!(
            "GET /api/questions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\r\n",
            s.port,
            crate::serve::TOKEN
        )
        .as_bytes(),
    )
    .unwrap();
    let mut bytes = Vec::new();
    let _ = std::io::Read::read_to_end(&mut plain, &mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("HTTP/1.1") && !text.contains("Q?"), "{text}");
}

#[test]
fn remote_tls_files_that_cannot_be_served_are_a_usage_error_at_start() {
    let l = Ledger::new();
    let (Some((_, leaf, key)), Some((_, other_leaf, _))) = (
        throwaway_ca(l.dir.path(), "a"),
        throwaway_ca(l.dir.path(), "b"),
    ) else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let garbage = l.dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let missing = l.dir.path().join("missing.pem");
    let start = |args: &[&std::ffi::OsStr]| -> Run {
        let mut cmd = bare_command(l.dir.path());
        cmd.env_remove("QUESTIONS_DB")
            .arg("--db")
            .arg(l.db())
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(args);
        finish(cmd)
    };
    let os = |p: &std::path::Path| p.as_os_str().to_owned();
    let flag = |f: &str| std::ffi::OsString::from(f);
    for (args, says) in [
        (
            vec![
                flag("--tls-cert"),
                os(&missing),
                flag("--tls-key"),
                os(&key),
            ],
            "cannot read --tls-cert",
        ),
        (
            vec![
                flag("--tls-cert"),
                os(&leaf),
                flag("--tls-key"),
                os(&missing),
            ],
            "cannot read --tls-key",
        ),
        (
            vec![
                flag("--tls-cert"),
                os(&garbage),
                flag("--tls-key"),
                os(&key),
            ],
            "holds no PEM certificate",
        ),
        (
            vec![
                flag("--tls-cert"),
                os(&leaf),
                flag("--tls-key"),
                os(&garbage),
            ],
            "holds no PEM private key",
        ),
        (
            vec![flag("--tls-cert"), os(&key), flag("--tls-key"), os(&key)],
            "holds no PEM certificate",
        ),
        (
            vec![
                flag("--tls-cert"),
                os(&other_leaf),
                flag("--tls-key"),
                os(&key),
            ],
            "is not the key of the certificate",
        ),
        (vec![flag("--tls-cert"), os(&leaf)], "--tls-key"),
        (vec![flag("--tls-key"), os(&key)], "--tls-cert"),
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsString::as_os_str).collect();
        let run = start(&args);
        assert_eq!(
            (run.code, run.error_code()),
            (2, "usage"),
            "{args:?}: {run:?}"
        );
        let message = run.json["error"].as_str().unwrap();
        assert!(message.contains(says), "{args:?}: {message}");
        assert!(!message.contains("PRIVATE KEY-----"), "{message}");
    }
    // Nothing was created for a server that never started.
    assert!(!l.dir.path().join("ledger.db").exists());
}

/// One request over TLS through openssl's s_client, trusting `ca`: what came back.
fn tls_request(port: u16, ca: &std::path::Path, request: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("openssl")
        .args(["s_client", "-quiet", "-verify_return_error", "-connect"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-CAfile")
        .arg(ca)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    String::from_utf8_lossy(&child.wait_with_output().unwrap().stdout).into_owned()
}

#[test]
fn remote_tls_the_inbox_over_https_sets_a_secure_cookie_and_takes_https_origins_and_names() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let id = l.log("design", "Which database?").to_string();
    let s = served_tls(&l, &leaf, &key, &[]);
    let port = s.port;
    let token = crate::serve::TOKEN;
    let first = tls_request(
        port,
        &ca,
        &format!(
            "GET /?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(first.starts_with("HTTP/1.1 303"), "{first}");
    let cookie = first
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("{first}"));
    assert!(cookie.contains("; Secure"), "{cookie}");

    let post = |host: &str, origin: &str| {
        let body = "answer=SQLite";
        tls_request(
            port,
            &ca,
            &format!(
                "POST /q/{id}/answer HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\n\
                 Authorization: Bearer {token}\r\n\
                 Content-Type: application/x-www-form-urlencoded\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
    };
    let here = format!("127.0.0.1:{port}");
    // A plain-HTTP origin is another site's.
    let refused = post(&here, &format!("http://{here}"));
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert_eq!(l.question(id.parse().unwrap())["status"], "pending");
    // The server's DNS name (the certificate vouches for it), its own https origin.
    let named = format!("questions.example.com:{port}");
    let answered = post(&named, &format!("https://{named}"));
    assert!(answered.starts_with("HTTP/1.1 303"), "{answered}");
    assert_eq!(l.question(id.parse().unwrap())["status"], "answered");
}

/// Whether `list` over `base` passes when only `ca` is trusted.
fn trusted_by(l: &Ledger, base: &str, token: &str, ca: &std::path::Path) -> bool {
    over_tls(l, base, token, Some(ca), &["list"]).code == 0
}

/// Puts `from` in place of `to` at once, as a renewal does.
fn replace(from: &std::path::Path, to: &std::path::Path) {
    let next = to.with_extension("next");
    std::fs::copy(from, &next).unwrap();
    std::fs::rename(&next, to).unwrap();
}

#[test]
fn remote_tls_a_renewed_certificate_is_served_from_the_next_connection_and_a_bad_one_never() {
    let l = Ledger::new();
    let (Some((ca_a, leaf_a, key_a)), Some((ca_b, leaf_b, key_b))) = (
        throwaway_ca(l.dir.path(), "a"),
        throwaway_ca(l.dir.path(), "b"),
    ) else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["ci-runner", "--agent"]);
    let cert = l.dir.path().join("served.pem");
    let key = l.dir.path().join("served.key");
    replace(&leaf_a, &cert);
    replace(&key_a, &key);
    let log = l.dir.path().join("serve.stderr");
    let s = Served::start_logged(
        &l,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        Some(crate::serve::TOKEN),
        std::fs::File::create(&log).unwrap().into(),
    );
    let base = s.base();
    assert!(trusted_by(&l, &base, &agent, &ca_a));
    assert!(!trusted_by(&l, &base, &agent, &ca_b));

    // Renewed (the key first, then the certificate, as a renewal may): served with no
    // restart, from a connection within a few seconds on.
    replace(&key_b, &key);
    replace(&leaf_b, &cert);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !trusted_by(&l, &base, &agent, &ca_b) {
        assert!(
            std::time::Instant::now() < deadline,
            "the renewed certificate was never served"
        );
    }
    assert!(!trusted_by(&l, &base, &agent, &ca_a));

    // A broken renewal: the pair in use is kept, and stderr says so once.
    std::fs::write(
        l.dir.path().join("broken.pem"),
        "-----BEGIN CERTIFICATE-----\n",
    )
    .unwrap();
    replace(&l.dir.path().join("broken.pem"), &cert);
    let said = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .matches("was not reloaded")
            .count()
    };
    while said() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the failed reload was never said"
        );
        assert!(trusted_by(&l, &base, &agent, &ca_b));
    }
    // Handshakes over more than the second between two looks at the files: each still
    // gets the pair in use, and the failure is not said again.
    let since = std::time::Instant::now();
    while since.elapsed() < std::time::Duration::from_millis(2500) {
        assert!(trusted_by(&l, &base, &agent, &ca_b));
    }
    assert_eq!(said(), 1, "{}", std::fs::read_to_string(&log).unwrap());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("served.pem"), "{text}");
    assert!(!text.contains("PRIVATE KEY"), "{text}");
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

/// An ingest whose reply is lost is sent again with its key, and its reply is the first:
/// the questions it made are `created_ids`, not "already there".
#[test]
fn remote_an_ingest_whose_reply_is_lost_is_sent_again_and_gets_the_first_reply() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let s = Served::start(&l, &[]);
    let (port, seen) = reply_dropper(s.port);
    let base = format!("http://127.0.0.1:{port}");
    std::fs::write(
        l.dir.path().join("out.txt"),
        "QUESTIONS_NEEDED\nQ: Which region?\nQ: Which tier?\n",
    )
    .unwrap();
    let run = over(
        &l,
        &base,
        Some(&agent),
        &["ingest", "--stage", "ci", "--file", "out.txt"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        seen.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "sent again"
    );
    assert_eq!(run.json["created_ids"], run.json["question_ids"], "{run:?}");
    assert_eq!(
        run.json["created_ids"].as_array().unwrap().len(),
        2,
        "{run:?}"
    );
    assert_eq!(l.ok(["list"])["count"], 2);
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

/// A command over `base` running in the background, its stdout read line by line.
struct Background {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// What it has said on stderr so far.
    said: std::sync::Arc<std::sync::Mutex<String>>,
    /// The reader of its stderr, done at its end.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    fn start(l: &Ledger, base: &str, token: &str, ca: &std::path::Path, args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(BIN)
            .current_dir(l.dir.path())
            .env("QUESTIONS_NOW", NOW)
            .env("QUESTIONS_DB", base)
            .env("QUESTIONS_TOKEN", token)
            .env("QUESTIONS_CA", ca)
            .env_remove("QUESTIONS_TOKEN_FILE")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(std::result::Result::ok) {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let kept = std::sync::Arc::clone(&said);
        let reader = std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).is_ok_and(|n| n > 0) {
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Background {
            child,
            lines,
            said,
            reader: Some(reader),
        }
    }

    /// Waits until it has said `text` on stderr (within a minute).
    fn wait_to_say(&self, text: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
        while !self.said.lock().unwrap().contains(text) {
            assert!(
                std::time::Instant::now() < deadline,
                "never said {text:?}: {}",
                self.said.lock().unwrap()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The next line it prints, parsed (within a minute).
    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(std::time::Duration::from_mins(1))
            .expect("a line within a minute");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Waits for it to end: its exit code, stdout and stderr.
    fn output(mut self) -> (Option<i32>, String, String) {
        let status = self.child.wait().unwrap();
        let out: Vec<String> = self.lines.iter().collect();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let err = self.said.lock().unwrap().clone();
        (status.code(), out.join("\n"), err)
    }

    /// Stops it; what it said on stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let said = self.said.lock().unwrap().clone();
        said
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Kills `s` at once (SIGKILL: a crash, not a clean stop); its port.
/// Waits (a minute at most) until the ledger says the token `name` was used: a caller's
/// first request has reached the server.
fn wait_for_first_use(l: &Ledger, name: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
    while l.ok(["token", "list"])["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["name"] != name || t["last_used_at"].is_null())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "'{name}' never called"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn crash(s: Served) -> u16 {
    let port = s.port;
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &s.pid().to_string()])
        .status();
    drop(s);
    port
}

/// Serves the ledger on `port` again with `cert` and `key`.
fn restart(l: &Ledger, port: u16, cert: &std::path::Path, key: &std::path::Path) -> Served {
    served_tls(l, cert, key, &["--bind", &format!("127.0.0.1:{port}")])
}

#[test]
fn remote_events_follow_over_https_sees_answers_given_elsewhere_and_survives_a_restart() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let first = l.log("ci-a", "Ship build 1?");
    l.log("docs", "Outside the token's stages?");
    let s = served_tls(&l, &leaf, &key, &[]);
    let base = s.base();
    let follower = Background::start(
        &l,
        &base,
        &agent,
        &ca,
        &["events", "--follow", "--timeout", "300"],
    );
    let logged = follower.next();
    assert_eq!(
        (logged["event"].clone(), logged["question_id"].as_i64()),
        (json!("logged"), Some(first)),
        "{logged}"
    );
    assert!(logged["ledger"].is_string(), "{logged}");

    // Answered by the person's token, elsewhere: the follower, waiting in a long poll,
    // prints it (and never the question outside its stages).
    let answered = over_tls(
        &l,
        &base,
        &dana,
        Some(&ca),
        &["answer", "--id", &first.to_string(), "--answer", "yes"],
    );
    assert_eq!(answered.code, 0, "{answered:?}");
    let seen = follower.next();
    assert_eq!(
        (seen["event"].clone(), seen["answered_by"].clone()),
        (json!("answered"), json!("dana")),
        "{seen}"
    );

    // The server crashes and comes back at once: the follower goes on from where it was.
    let s = restart(&l, crash(s), &leaf, &key);
    let second = l.log("ci-a", "Ship build 2?");
    let seen = follower.next();
    assert_eq!(
        (seen["event"].clone(), seen["question_id"].as_i64()),
        (json!("logged"), Some(second)),
        "{seen}"
    );
    let said = follower.stop();
    assert!(!said.contains(&agent), "{said}");
    drop(s);
}

#[test]
fn remote_a_check_wait_over_https_survives_a_server_restart_and_passes_on_the_answer() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let id = l.log("ci-deploy", "Deploy?");
    let s = served_tls(&l, &leaf, &key, &[]);
    let base = s.base();
    let waiter = Background::start(
        &l,
        &base,
        &agent,
        &ca,
        &[
            "check",
            "--stage",
            "ci-deploy",
            "--wait",
            "--timeout",
            "300",
        ],
    );
    // The waiter's first poll has reached the server once its token was used.
    wait_for_first_use(&l, "ci-runner");
    // The server crashes, and is back only after the waiter has said it is out of reach.
    let port = crash(s);
    waiter.wait_to_say("waiting on, and trying again");
    let s = restart(&l, port, &leaf, &key);
    let answered = over_tls(
        &l,
        &s.base(),
        &dana,
        Some(&ca),
        &["answer", "--id", &id.to_string(), "--answer", "yes"],
    );
    assert_eq!(answered.code, 0, "{answered:?}");
    let (code, out, err) = waiter.output();
    let gate: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        (code, gate["gate"].clone()),
        (Some(0), json!("pass")),
        "{gate} {err}"
    );
    assert!(err.contains("within reach again"), "{err}");
    assert!(!err.contains(&agent) && !out.contains(&agent));
}

#[test]
fn remote_a_hook_waits_over_https_with_an_agent_token_and_hands_over_the_person_s_answers() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["sandbox", "--agent", "--stages", "claude-code"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let s = served_tls(&l, &leaf, &key, &[]);
    let base = s.base();
    let event = crate::common::fixture("hooks/claude-code-2.1.330/pre_tool_use.json");
    let mut cmd = bare_command(l.dir.path());
    cmd.env("QUESTIONS_DB", &base)
        .env("QUESTIONS_TOKEN", &agent)
        .env("QUESTIONS_CA", &ca)
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .args(["hook", "claude-code", "--wait", "120"])
        .write_stdin(event);
    let waiting = std::thread::spawn(move || finish(cmd));
    // Its questions are logged by the same request that waits for them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_mins(1);
    while l.ok(["list"])["count"] != 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the hook logged nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let listed = l.ok(["list"]);
    let ids: Vec<String> = listed["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].to_string())
        .collect();
    for (id, answer) in ids
        .iter()
        .zip([["--answer", "sqlite"], ["--select", "Search"]])
    {
        let run = over_tls(
            &l,
            &base,
            &dana,
            Some(&ca),
            &["answer", "--id", id, answer[0], answer[1]],
        );
        assert_eq!(run.code, 0, "{run:?}");
    }
    let run = waiting.join().unwrap();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains(&agent) && !run.stderr.contains(&agent));
    let reply: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    assert_eq!(
        reply["hookSpecificOutput"]["updatedInput"]["answers"],
        json!({
            "Which database should we use?": "SQLite",
            "Which features do you want?": "Search"
        }),
        "{reply}"
    );
    // The delivery is in the history, by the token.
    let history = l.ok(["history", "--id", &ids[0]]);
    let delivered = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "delivered")
        .unwrap_or_else(|| panic!("{history}"));
    assert_eq!(delivered["answered_by"], "sandbox", "{delivered}");

    // Outside its stages, a hook logs nothing: refused, and the harness asks itself.
    let outside = token(&l, &["ci-only", "--agent", "--stages", "ci-*"]);
    let mut cmd = bare_command(l.dir.path());
    cmd.env("QUESTIONS_DB", &base)
        .env("QUESTIONS_TOKEN", &outside)
        .env("QUESTIONS_CA", &ca)
        .args(["hook", "claude-code", "--stage", "prod"])
        .write_stdin(crate::common::fixture(
            "hooks/claude-code-2.1.330/pre_tool_use.json",
        ));
    let refused = finish(cmd);
    assert_eq!(
        (refused.code, refused.stdout.as_str()),
        (0, ""),
        "{refused:?}"
    );
    assert!(
        refused.stderr.contains("outside this token's stages"),
        "{refused:?}"
    );
    assert_eq!(l.ok(["list", "--stage", "prod"])["count"], 0);
}

/// Every file under `dir`, with its text.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)
        .unwrap()
        .map_while(std::result::Result::ok)
    {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            found.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    found
}

#[test]
fn remote_init_writes_hooks_that_reach_the_server_with_the_environment_s_token_and_no_file_holds_it(
) {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["sandbox", "--agent", "--stages", "claude-code"]);
    let s = served_tls(&l, &leaf, &key, &[]);
    let base = s.base();
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    std::os::unix::fs::symlink(BIN, bin.path().join("questions")).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let init = |args: &[&str]| -> Run {
        let mut cmd = bare_command(project.path());
        cmd.env("HOME", home.path())
            .env("PATH", &path)
            .env("QUESTIONS_TOKEN", &agent)
            .arg("init")
            .args(args);
        finish(cmd)
    };
    for client in ["claude-code", "codex", "gemini"] {
        let run = init(&[client, "--db", &format!("{base}/"), "--wait", "600"]);
        assert_eq!(run.code, 0, "{client}: {run:?}");
        let said = format!("{} {}", run.stdout, run.stderr);
        assert!(said.contains("QUESTIONS_TOKEN"), "{client}: {said}");
        assert!(
            said.contains("MCP server entry is left out"),
            "{client}: {said}"
        );
        assert!(!said.contains(&agent), "{client}: {said}");
    }
    let written = files_under(project.path())
        .into_iter()
        .chain(files_under(home.path()))
        .filter(|(p, _)| !p.starts_with(project.path().join(".git")))
        .collect::<Vec<_>>();
    assert!(written.len() >= 3, "{written:?}");
    for (file, text) in &written {
        assert!(!text.contains(&agent), "{} holds the token", file.display());
        assert!(!text.contains("mcp"), "{}: {text}", file.display());
    }
    let command = format!("questions --db {base} hook claude-code --wait 600");
    let settings = std::fs::read_to_string(project.path().join(".claude/settings.json")).unwrap();
    assert!(settings.contains(&command), "{settings}");
    assert!(!project.path().join(".mcp.json").exists());
    let codex = std::fs::read_to_string(project.path().join(".codex/config.toml")).unwrap();
    assert!(
        codex.contains(&format!("questions --db {base} hook codex --wait 600")),
        "{codex}"
    );

    // The hook as written, run as the harness runs it: it reaches the server with the
    // token of its environment.
    let event = l.dir.path().join("event.json");
    std::fs::write(
        &event,
        crate::common::fixture("hooks/claude-code-2.1.330/pre_tool_use.json"),
    )
    .unwrap();
    let mut cmd = std::process::Command::new("sh");
    cmd.current_dir(project.path())
        .env("PATH", &path)
        .env("QUESTIONS_TOKEN", &agent)
        .env("QUESTIONS_CA", &ca)
        .env("QUESTIONS_NOW", NOW)
        .env_remove("QUESTIONS_DB")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .args(["-c", &command.replace("--wait 600", "--wait 0")])
        .stdin(std::fs::File::open(&event).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let ran = cmd.output().unwrap();
    assert_eq!(ran.status.code(), Some(0), "{ran:?}");
    assert_eq!(
        l.ok(["list", "--stage", "claude-code"])["count"],
        2,
        "{ran:?}"
    );

    // What cannot reach a server is refused, writing nothing.
    for args in [
        &["cursor", "--db", base.as_str()][..],
        &["pi", "--db", base.as_str()],
        &["claude-code", "--db", "https://u:p@q.example.com"],
        &["claude-code", "--db", "http://192.0.2.1:8466"],
    ] {
        let run = init(args);
        assert_eq!(
            (run.code, run.error_code()),
            (2, "usage"),
            "{args:?}: {run:?}"
        );
    }
    assert!(!project.path().join(".cursor").exists());
}

/// `watch` over https://: the watcher reads the server's history in long polls, delivers
/// what its token may see (never another stage's question), and keeps its position on the
/// server, under the token's own name for it: run again it repeats nothing, and a watcher
/// of the same name with direct access is another watcher.
#[test]
fn remote_a_watcher_over_https_delivers_its_stages_and_keeps_its_position_there() {
    use crate::receiver::{Behavior, Receiver};
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let first = l.log("ci-a", "Ship build 1?");
    l.log("docs", "Outside the token's stages?");
    let s = served_tls(&l, &leaf, &key, &[]);
    let base = s.base();
    let hook = Receiver::start(Behavior::Accept);
    let watcher = Background::start(
        &l,
        &base,
        &agent,
        &ca,
        &[
            "watch",
            "--name",
            "w",
            "--from-start",
            "--webhook",
            &hook.url,
            "--timeout",
            "8",
        ],
    );
    let got = hook.wait_for(1, std::time::Duration::from_secs(30));
    assert_eq!(got[0].json()["question_id"], first, "{}", got[0].text());
    // Logged while the watcher waits in a long poll: delivered from it.
    let logged = over_tls(
        &l,
        &base,
        &agent,
        Some(&ca),
        &["log", "--stage", "ci-a", "--question", "Ship build 2?"],
    );
    assert_eq!(logged.code, 0, "{logged:?}");
    let second = logged.json["question_id"].as_i64().unwrap();
    let got = hook.wait_for(2, std::time::Duration::from_secs(30));
    let (code, out, err) = watcher.output();
    assert_eq!(code, Some(0), "{out}\n{err}");
    let done: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(done["delivered"], 2, "{done}");
    let ids: Vec<i64> = got
        .iter()
        .map(|r| r.json()["question_id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        ids,
        [first, second],
        "the other stage's question was delivered"
    );
    assert!(!err.contains(&agent), "{err}");

    // Its position is on the server: run again, nothing is repeated.
    let again = over_tls(
        &l,
        &base,
        &agent,
        Some(&ca),
        &[
            "watch",
            "--name",
            "w",
            "--webhook",
            &hook.url,
            "--timeout",
            "1",
        ],
    );
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(
        (&again.json["delivered"], &again.json["position"]),
        (&json!(0), &done["position"]),
        "{again:?}"
    );
    assert_eq!(hook.requests().len(), 2);

    // The token's watcher "w" is its own: a direct watcher "w" starts anew.
    let direct = l.run([
        "watch",
        "--name",
        "w",
        "--from-start",
        "--webhook",
        &hook.url,
        "--timeout",
        "1",
    ]);
    assert_eq!(direct.code, 0, "{direct:?}");
    assert!(
        direct.json["delivered"].as_u64().unwrap() >= 3,
        "{direct:?}"
    );
    drop(s);
}

/// An MCP host on `questions mcp`'s stdio: one message a line each way, its session begun
/// (`initialize`, then `notifications/initialized`).
struct Host {
    to: std::process::ChildStdin,
    from: std::io::BufReader<std::process::ChildStdout>,
}

impl Host {
    fn begin(child: &mut std::process::Child) -> Host {
        let mut host = Host {
            to: child.stdin.take().unwrap(),
            from: std::io::BufReader::new(child.stdout.take().unwrap()),
        };
        host.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}}),
        );
        assert_eq!(host.next()["result"]["protocolVersion"], "2025-11-25");
        host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        host
    }

    fn send(&mut self, message: Value) {
        use std::io::Write;
        writeln!(self.to, "{message}").unwrap();
    }

    fn next(&mut self) -> Value {
        use std::io::BufRead;
        let mut line = String::new();
        self.from.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

/// A call's stream that breaks once it has carried the call's reply (a server stopped
/// between its reply and the stream's end, as a crash does) is not answered a second time:
/// the host has its reply, and the next line it reads is its next call's.
#[test]
fn remote_questions_mcp_answers_a_call_once_when_its_stream_breaks_after_the_reply() {
    use std::io::{BufRead, Read, Write};
    let l = Ledger::new();
    // A server of /mcp on loopback, one connection at a time: a call's reply is an event
    // stream whose last chunk never comes, broken when the test says.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (breaks, broken) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut start = String::new();
            let mut length = 0;
            reader.read_line(&mut start).unwrap();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some(n) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = n.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let reply = |v: Value| {
                let v = v.to_string();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{v}",
                    v.len()
                )
            };
            let id = message["id"].clone();
            let text = match message["method"].as_str() {
                Some("initialize") => reply(json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "a server that stops", "version": "1"}}})),
                Some("tools/call") => {
                    let event = format!(
                        "data: {}\n\n",
                        json!({"jsonrpc": "2.0", "id": id, "result": {
                            "content": [{"type": "text", "text": "answered: yes"}]}})
                    );
                    write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                         Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                        event.len()
                    )
                    .unwrap();
                    stream.flush().unwrap();
                    broken.recv().unwrap();
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                Some(_) if !id.is_null() => {
                    reply(json!({"jsonrpc": "2.0", "id": id, "result": {}}))
                }
                _ => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string(),
            };
            let _ = stream.write_all(text.as_bytes());
        }
    });
    let mut child = std::process::Command::new(BIN)
        .current_dir(l.dir.path())
        .args(["mcp", "--db", &format!("http://127.0.0.1:{port}")])
        .env("QUESTIONS_TOKEN", "qt_agent_not-checked-by-this-server")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (said, notes) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = said.send(line);
        }
    });
    let mut host = Host::begin(&mut child);
    host.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "list_questions", "arguments": {}}}),
    );
    let first = host.next();
    assert_eq!(first["id"], 2, "{first}");
    assert!(first["result"].is_object(), "{first}");

    // The stream breaks; the bridge says so on stderr, and not to the host.
    breaks.send(()).unwrap();
    let note = loop {
        let line = notes
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the bridge says on stderr that the stream broke after its reply");
        if line.contains("after its reply") {
            break line;
        }
    };
    assert!(!note.contains("qt_agent"), "{note}");
    host.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    let after = host.next();
    assert_eq!(after["id"], 3, "call 2 is answered once: {after}");
    assert!(after.get("error").is_none(), "{after}");
    drop(host);
    assert!(child.wait().unwrap().success());
}

/// `questions mcp --db https://…` outlives a restart of the server: the session the server
/// lost is begun again with the host's own `initialize`, and the host's next call is
/// answered as if nothing happened (its reply to `initialize` is not repeated).
#[test]
fn remote_questions_mcp_over_https_begins_its_session_again_after_a_server_restart() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let id = l.log("ci-a", "Ship build 1?");
    let s = served_tls(&l, &leaf, &key, &[]);
    let mut child = std::process::Command::new(BIN)
        .current_dir(l.dir.path())
        .args(["mcp", "--db", &s.base()])
        .env("QUESTIONS_TOKEN", &agent)
        .env("QUESTIONS_CA", &ca)
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut host = Host::begin(&mut child);
    let list = |n: i64| {
        json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
            "name": "list_questions", "arguments": {"stage": "ci-a"}}})
    };
    host.send(list(2));
    let first = host.next();
    assert_eq!(first["id"], 2, "{first}");
    assert!(
        first["result"].to_string().contains("Ship build 1?"),
        "{first}"
    );

    // The server crashes and comes back: its sessions are gone, the ledger is not.
    let s = restart(&l, crash(s), &leaf, &key);
    l.ok([
        "answer",
        "--id",
        &id.to_string(),
        "--answer",
        "yes",
        "--by",
        "dana",
    ]);
    host.send(list(3));
    let again = host.next();
    assert_eq!(
        again["id"], 3,
        "the host's next call is answered, not initialize's: {again}"
    );
    let text = again["result"].to_string();
    assert!(text.contains("answered") && text.contains("yes"), "{again}");
    drop(host);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    drop(s);
}

/// `import` and `accept-defaults` over https://: a person's token records the answers as
/// its person, as on a file; an agent's token is refused both and changes nothing.
#[test]
fn remote_a_person_imports_answers_and_accepts_defaults_and_an_agent_may_do_neither() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let region = l.log("ci-a", "Which region?");
    let tier = l.log_with("ci-b", "Which tier?", &["--proposed", "small"]);
    let s = Served::start(&l, &[]);
    let base = s.base();
    std::fs::write(
        l.dir.path().join("answers.json"),
        json!({ region.to_string(): "eu-west" }).to_string(),
    )
    .unwrap();
    let import = [
        "import",
        "--stage",
        "ci-a",
        "--format",
        "map",
        "--file",
        "answers.json",
    ];
    let accept = ["accept-defaults", "--stage", "ci-b", "--include-required"];
    for args in [&import[..], &accept[..]] {
        let refused = over(&l, &base, Some(&agent), args);
        assert_eq!(
            (refused.code, refused.error_code()),
            (2, "forbidden"),
            "{refused:?}"
        );
    }
    assert_eq!(l.question(region)["status"], "pending");
    assert_eq!(l.question(tier)["status"], "pending");

    let imported = over(&l, &base, Some(&dana), &import);
    assert_eq!(imported.code, 0, "{imported:?}");
    assert_eq!(
        imported.json["answered_ids"],
        json!([region]),
        "{imported:?}"
    );
    let defaulted = over(&l, &base, Some(&dana), &accept);
    assert_eq!(defaulted.code, 0, "{defaulted:?}");
    assert_eq!(
        defaulted.json["answered_ids"],
        json!([tier]),
        "{defaulted:?}"
    );
    for (id, answer) in [(region, "eu-west"), (tier, "small")] {
        let q = l.question(id);
        assert_eq!(
            (&q["status"], &q["answer"], &q["answered_by"]),
            (&json!("answered"), &json!(answer), &json!("dana")),
            "{q}"
        );
    }
}

/// `render` over https://: an agent renders its stage's pending questions for its asking
/// tool, as on a file; another stage's are refused it.
#[test]
fn remote_an_agent_renders_its_stage_for_its_asking_tool_and_no_other() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let id = l.log("ci-a", "Which region?");
    l.log("docs", "Outside the token's stages?");
    let s = Served::start(&l, &[]);
    let base = s.base();
    let args = ["render", "--stage", "ci-a", "--format", "ask-user"];
    let direct = l.run(args);
    let served = over(&l, &base, Some(&agent), &args);
    assert_eq!(served.code, 0, "{served:?}");
    assert_eq!(served.json, direct.json, "the document a file gives");
    assert_eq!(served.json["batches"][0]["question_ids"], json!([id]));
    let refused = over(
        &l,
        &base,
        Some(&agent),
        &["render", "--stage", "docs", "--format", "ask-user"],
    );
    assert_eq!(
        (refused.code, refused.error_code()),
        (2, "forbidden"),
        "{refused:?}"
    );
}

/// An approval an agent logs over the wire is requested by its token, whatever user the
/// sandbox runs as: nobody's vote is taken away by the machine it runs on.
#[test]
fn remote_tls_an_agent_s_approval_is_requested_by_its_token_not_the_machine_s_user() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["ci", "--agent", "--stages", "ci-*"]);
    let s = served_tls(&l, &leaf, &key, &[]);
    let base = s.base();
    let as_root = |args: &[&str]| {
        let mut cmd = bare_command(l.dir.path());
        cmd.env("QUESTIONS_DB", &base)
            .env("QUESTIONS_TOKEN", &agent)
            .env("QUESTIONS_CA", &ca)
            .env("USER", "root")
            .env("LOGNAME", "root")
            .env("QUESTIONS_USER", "root")
            .env_remove("QUESTIONS_TOKEN_FILE")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .args(args);
        finish(cmd)
    };
    let approval = [
        "log",
        "--stage",
        "ci-b",
        "--question",
        "Ship?",
        "--approval",
        "--approvers",
        "dana,erin,root",
        "--min",
        "2",
    ];
    let logged = as_root(&approval);
    assert_eq!(logged.code, 0, "{logged:?}");
    let id = logged.json["question_id"].as_i64().unwrap();
    let state = l.question(id)["approval"].clone();
    assert_eq!(state["requester"], "ci", "{state}");
    assert_eq!(
        state["approvers"],
        json!(["dana", "erin", "root"]),
        "{state}"
    );
    // root may vote: it is a person here, not the sandbox's user.
    let root = token(&l, &["root-phone", "--person", "root"]);
    let voted = over_tls(
        &l,
        &base,
        &root,
        Some(&ca),
        &["approve", "--id", &id.to_string()],
    );
    assert_eq!(voted.code, 0, "{voted:?}");

    // Naming a requester is the agent's choice of who may not vote (as the CI gate names
    // the run's initiator): no more than leaving them out of the approvers, which it
    // chooses anyway. The token is then who logged it, and votes on it neither.
    let mut named = approval.to_vec();
    named[4] = "Ship 2?";
    named.extend(["--requester", "dana"]);
    let logged = as_root(&named);
    assert_eq!(logged.code, 0, "{logged:?}");
    let id = logged.json["question_id"].as_i64().unwrap();
    let state = l.question(id)["approval"].clone();
    assert_eq!(
        (&state["requester"], &state["logged_by"]),
        (&json!("dana"), &json!("ci")),
        "{state}"
    );
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let refused = over_tls(
        &l,
        &base,
        &dana,
        Some(&ca),
        &["approve", "--id", &id.to_string()],
    );
    assert_eq!(refused.error_code(), "forbidden", "{refused:?}");
    assert_eq!(l.ok(["list", "--stage", "ci-b"])["count"], 2);
}

/// One job looping on a bad token behind the team's address never stops the valid tokens
/// that come through it: the guesses past the limit are `unavailable` (exit 1, not a usage
/// error), and a person's `list` and an agent's `check --wait` are served.
#[test]
fn remote_tls_guessed_tokens_from_one_address_never_stop_the_valid_ones() {
    let l = Ledger::new();
    let Some((ca, leaf, key)) = throwaway_ca(l.dir.path(), "a") else {
        crate::common::skip("openssl cannot make a throw-away CA here");
        return;
    };
    let agent = token(&l, &["ci-runner", "--agent", "--stages", "ci-*"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    let id = l.log("ci-a", "Ship?");
    let s = served_tls(&l, &leaf, &key, &[]);
    let base = s.base();
    for n in 0..25 {
        let guess = format!("qtok_{n:064x}");
        let run = over_tls(&l, &base, &guess, Some(&ca), &["list"]);
        let expected = if n < 20 {
            (2, "unauthorized")
        } else {
            (1, "unavailable")
        };
        assert_eq!((run.code, run.error_code()), expected, "{n}: {run:?}");
        if n >= 20 {
            assert!(run.json["error"].as_str().unwrap().contains("try again in"));
        }
    }
    let listed = over_tls(&l, &base, &dana, Some(&ca), &["list"]);
    assert_eq!(
        (listed.code, &listed.json["count"]),
        (0, &json!(1)),
        "{listed:?}"
    );
    let waiter = Background::start(
        &l,
        &base,
        &agent,
        &ca,
        &["check", "--stage", "ci-a", "--wait", "--timeout", "300"],
    );
    // The waiter is served: its token is used, and the answer then opens its gate.
    wait_for_first_use(&l, "ci-runner");
    let answered = over_tls(
        &l,
        &base,
        &dana,
        Some(&ca),
        &["answer", "--id", &id.to_string(), "--answer", "yes"],
    );
    assert_eq!(answered.code, 0, "{answered:?}");
    let (code, out, err) = waiter.output();
    let gate: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        (code, gate["gate"].clone()),
        (Some(0), json!("pass")),
        "{gate} {err}"
    );
}
