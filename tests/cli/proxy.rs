//! `serve` as a team deploys it: behind proxies it trusts (`--trusted-proxy`), under a
//! public URL, with health, readiness, metrics, a request log and a drain on SIGTERM.
//! Each forwarded-header attack is a test of its own.

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{Ledger, BIN, NOW};
use crate::ledger_api::{call, token};
use crate::serve::{Served, TOKEN};

fn list() -> Value {
    json!({"op": "list", "args": {"stage": null, "status": null, "group": null, "ids": null}})
}

/// A served ledger whose stderr (the request log) goes to a file, read with `log()`.
fn logged(l: &Ledger, more: &[&str]) -> (Served, std::path::PathBuf) {
    let path = l.dir.path().join("serve.log");
    let file = File::create(&path).unwrap();
    (
        Served::start_logged(l, more, Some(TOKEN), Stdio::from(file)),
        path,
    )
}

/// The request log's lines once `n` of them are there (the log is written by a thread of
/// its own, after the response).
fn lines(path: &std::path::Path, n: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{n} lines: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A bad token from `headers`' client: its status.
fn guess(s: &Served, n: usize, headers: &[&str]) -> u16 {
    let bearer = format!("Authorization: Bearer qtok_guess{n}");
    let mut all = vec!["Content-Type: application/json", bearer.as_str()];
    all.extend_from_slice(headers);
    s.request("POST", "/v1/call", &all, &list().to_string())
        .status
}

#[test]
fn behind_a_trusted_proxy_the_public_url_names_the_server_and_its_cookie_is_secure() {
    let l = Ledger::new();
    let s = Served::start(
        &l,
        &[
            "--trusted-proxy",
            "127.0.0.1",
            "--public-url",
            "https://Questions.example.com",
        ],
    );
    assert_eq!(
        s.url,
        format!("https://questions.example.com/?token={TOKEN}"),
        "printed URLs name the public URL"
    );
    // A proxy that keeps the public Host (Caddy's and nginx's default).
    let first = s.request(
        "GET",
        &format!("/?token={TOKEN}"),
        &["Host: questions.example.com", "X-Forwarded-Proto: https"],
        "",
    );
    assert_eq!(first.status, 303, "{first:?}");
    let cookie = first.header("set-cookie").unwrap();
    assert!(cookie.ends_with("; Secure"), "{cookie}");
    let bearer = format!("Authorization: Bearer {TOKEN}");
    for host in ["questions.example.com", "questions.example.com:443"] {
        let host = format!("Host: {host}");
        let r = s.request("GET", "/api/questions", &[&host, &bearer], "");
        assert_eq!(r.status, 200, "{r:?}");
    }
    // One that rewrites Host to the address bound, and says the client's in X-Forwarded-Host.
    let r = s.request(
        "GET",
        "/api/questions",
        &[&bearer, "X-Forwarded-Host: questions.example.com"],
        "",
    );
    assert_eq!(r.status, 200, "{r:?}");
    // Any other name is refused, sent as Host or through the proxy's word.
    for other in [
        vec!["Host: evil.example"],
        vec!["Host: questions.example.com:8443"],
        vec!["X-Forwarded-Host: evil.example"],
        vec!["Forwarded: for=198.51.100.1;host=evil.example"],
    ] {
        let mut headers = other.clone();
        headers.push(&bearer);
        let r = s.request("GET", "/api/questions", &headers, "");
        assert_eq!(r.status, 403, "{other:?}: {r:?}");
    }
    // A POST from the public origin passes the check of where it comes from; another does not.
    let id = l.log("deploy", "Ship it?");
    for (origin, status) in [
        ("https://questions.example.com", 200),
        ("http://questions.example.com", 403),
        ("https://evil.example", 403),
    ] {
        let origin = format!("Origin: {origin}");
        let r = s.request(
            "POST",
            &format!("/api/questions/{id}/skip"),
            &[
                "Host: questions.example.com",
                "X-Forwarded-Proto: https",
                &bearer,
                &origin,
                "Content-Type: application/json",
            ],
            "{}",
        );
        assert_eq!(r.status, status, "{origin}: {r:?}");
    }
}

#[test]
fn forwarded_headers_from_an_address_not_trusted_change_nothing() {
    let l = Ledger::new();
    // Only 10/8 is trusted: this test's loopback connections are not a proxy's.
    let (s, log) = logged(
        &l,
        &["--trusted-proxy", "10.0.0.0/8", "--log-format", "json"],
    );
    // Each guess names another client, or loopback, or a chain: all are one client's.
    for n in 0..20 {
        let xff = format!("X-Forwarded-For: 198.51.100.{n}");
        let fwd = format!("Forwarded: for=\"[2001:db8::{n}]\", for=10.0.0.1");
        let spoofs: [&[&str]; 4] = [
            &[&xff],
            &["X-Forwarded-For: 127.0.0.1"],
            &[&fwd],
            &["X-Real-IP: 127.0.0.2", "X-Forwarded-For: 10.1.2.3"],
        ];
        assert_eq!(guess(&s, n, spoofs[n % 4]), 401);
    }
    assert_eq!(
        guess(&s, 20, &["X-Forwarded-For: 203.0.113.77"]),
        429,
        "the guesses were counted against the address they came from"
    );
    let seen = lines(&log, 21);
    for line in &seen {
        assert_eq!(line["client"], "127.0.0.1", "{line}");
    }
    // A Host the proxy would have sent is no Host of this server's without its word.
    let r = s.request(
        "GET",
        "/api/questions",
        &[
            &format!("Authorization: Bearer {TOKEN}"),
            "X-Forwarded-Host: 127.0.0.1",
            "Host: evil.example",
        ],
        "",
    );
    assert_eq!(r.status, 403, "{r:?}");
}

#[test]
fn through_a_trusted_proxy_each_client_behind_it_has_its_own_count() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let (s, log) = logged(
        &l,
        &["--trusted-proxy", "127.0.0.0/8", "--log-format", "json"],
    );
    // 198.51.100.1 guesses, prepending made-up hops (loopback, another address) to the
    // chain the proxy appends to: the nearest address not trusted is still its own.
    for n in 0..20 {
        let chain = if n % 2 == 0 {
            "X-Forwarded-For: 127.0.0.1, 198.51.100.1".to_string()
        } else {
            format!("X-Forwarded-For: 203.0.113.{n}, 198.51.100.1, 127.0.0.9")
        };
        assert_eq!(guess(&s, n, &[&chain]), 401);
    }
    assert_eq!(guess(&s, 20, &["X-Forwarded-For: 198.51.100.1"]), 429);
    assert_eq!(
        guess(&s, 21, &["Forwarded: for=198.51.100.1;proto=https"]),
        429,
        "Forwarded names the same client"
    );
    // Its neighbour behind the same proxy is not slowed, nor the holder of a token.
    assert_eq!(guess(&s, 22, &["X-Forwarded-For: 198.51.100.2"]), 401);
    let (status, _) = call(&s, Some(&agent), &list());
    assert_eq!(status, 200);
    let seen = lines(&log, 24);
    let clients: Vec<&str> = seen.iter().map(|l| l["client"].as_str().unwrap()).collect();
    assert_eq!(clients[..20], ["198.51.100.1"; 20], "{clients:?}");
    let last = seen.last().unwrap();
    assert_eq!(
        (&last["who"], &last["role"], &last["route"], &last["status"]),
        (
            &json!("ci-runner"),
            &json!("agent"),
            &json!("/v1/call"),
            &json!(200)
        ),
        "{last}"
    );
    // No secret is in the log: not the server's token, the agent's, nor a guess.
    let text = std::fs::read_to_string(&log).unwrap();
    for secret in [TOKEN, agent.as_str(), "qtok_guess"] {
        assert!(!text.contains(secret), "{secret} in the log: {text}");
    }
}

#[test]
fn a_server_that_would_trust_everyone_or_send_tokens_in_clear_does_not_start() {
    let l = Ledger::new();
    for (args, says) in [
        (
            vec!["--trusted-proxy", "10.0.0.0/8,0.0.0.0/0"],
            "trusts every address",
        ),
        (vec!["--trusted-proxy", "::/0"], "trusts every address"),
        (
            vec!["--trusted-proxy", "proxy.internal"],
            "not an address or a range",
        ),
        (
            vec!["--public-url", "https://questions.example.com"],
            "nothing on the way speaks TLS",
        ),
        (
            vec![
                "--trusted-proxy",
                "127.0.0.1",
                "--public-url",
                "http://questions.example.com",
            ],
            "plain text",
        ),
        (
            vec![
                "--trusted-proxy",
                "127.0.0.1",
                "--public-url",
                "https://questions.example.com/inbox",
            ],
            "root of its host",
        ),
        (
            vec!["--metrics-bind", "0.0.0.0:0"],
            "not a loopback address",
        ),
        (
            vec![
                "--trusted-proxy",
                "127.0.0.1",
                "--oidc-issuer",
                "https://accounts.example.com",
                "--oidc-client-id",
                "questions",
                "--oidc-client-secret-env",
                "HOME",
            ],
            "needs --public-url",
        ),
    ] {
        let mut all = vec!["serve", "--bind", "127.0.0.1:0"];
        all.extend(args.iter().copied());
        let run = l.run(all);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.error_code(), "usage", "{args:?}");
        assert!(
            run.json["error"].as_str().unwrap().contains(says),
            "{run:?}"
        );
    }
}

/// The metrics' text, with the server's token.
fn metrics(s: &Served) -> String {
    let r = s.request(
        "GET",
        "/metrics",
        &[&format!("Authorization: Bearer {TOKEN}")],
        "",
    );
    assert_eq!(r.status, 200, "{r:?}");
    r.body
}

#[test]
fn sigterm_drains_readiness_first_then_lets_the_waits_go_and_a_waiter_goes_on() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let id = l.log("ci-1", "Deploy build 42?");
    let port = crate::common::free_port();
    let bind = format!("127.0.0.1:{port}");
    let (s, log) = logged(&l, &["--bind", &bind, "--drain-seconds", "3"]);
    for path in ["/healthz", "/readyz"] {
        // No token, and any Host: a load balancer's check.
        let r = s.request("GET", path, &["Host: 10.1.2.3:9"], "");
        assert_eq!((r.status, r.json()), (200, json!({"ok": true})), "{path}");
    }
    let mut waiter = Command::new(BIN)
        .env("QUESTIONS_NOW", NOW)
        .env("QUESTIONS_TOKEN", &agent)
        .env_remove("QUESTIONS_DB")
        .args(["--db", &format!("http://{bind}")])
        .args(["check", "--stage", "ci-1", "--wait", "--timeout", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The wait is held at the server.
    let held = Instant::now();
    while !metrics(&s).contains("questions_waiters 1") {
        assert!(held.elapsed() < Duration::from_secs(20), "{}", metrics(&s));
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = Instant::now();
    Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    // Readiness says so at once (the load balancer takes the server out); health does not.
    let drained = Instant::now();
    loop {
        let r = s.request("GET", "/readyz", &[], "");
        if r.status == 503 {
            assert!(r.body.contains("draining"), "{r:?}");
            break;
        }
        assert!(drained.elapsed() < Duration::from_secs(5), "{r:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(s.request("GET", "/healthz", &[], "").status, 200);
    // The held wait is let go with the word to send it again: 503 and Retry-After.
    let let_go = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap();
        if text.lines().any(|l| l.contains("POST /v1/call 503")) {
            break;
        }
        assert!(let_go.elapsed() < Duration::from_secs(5), "{text}");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        signalled.elapsed() < Duration::from_secs(3),
        "the wait was let go within the grace, not at its end"
    );
    // The server stops after its grace; the waiter is still waiting.
    let code = s.stop();
    assert_eq!(code, 0);
    assert!(waiter.try_wait().unwrap().is_none(), "the waiter went on");
    // The answer is given while no server runs; a server comes back on the same port.
    l.ok(["answer", "--id", &id.to_string(), "--answer", "yes"]);
    let _back = Served::start(&l, &["--bind", &bind]);
    let out = waiter.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout} {stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["ok"], true, "{doc}");
    assert!(!stderr.contains("error"), "{stderr}");
}

#[test]
fn metrics_are_prometheus_text_for_the_server_s_token_or_a_bind_of_their_own() {
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let dana = token(&l, &["dana-phone", "--person", "dana"]);
    l.log("ci-1", "Deploy build 42?");
    l.log("ci-1", "Tag it?");
    let id = l.log("design", "Which database?");
    let mbind = format!("127.0.0.1:{}", crate::common::free_port());
    let s = Served::start(&l, &["--metrics-bind", &mbind]);
    // An agent's refused request, and an answer the server sees happen.
    let forbidden = json!({"op": "group", "args": {"identity": {"person": "dana"},
        "name": "mine", "change": {"create": {"admins": ["dana"]}}, "people": ["dana"]}});
    let (status, doc) = call(&s, Some(&agent), &forbidden);
    assert_eq!(status, 403, "{doc}");
    assert_eq!(guess(&s, 0, &[]), 401);
    l.ok(["answer", "--id", &id.to_string(), "--answer", "PostgreSQL"]);
    let answered = Instant::now();
    let mut text = metrics(&s);
    while !text.contains("questions_answer_seconds_count 1") {
        assert!(answered.elapsed() < Duration::from_secs(20), "{text}");
        std::thread::sleep(Duration::from_millis(20));
        text = metrics(&s);
    }
    assert!(
        text.contains("questions_pending{stage=\"ci-1\"} 2"),
        "{text}"
    );
    assert!(!text.contains("stage=\"design\""), "{text}");
    assert!(
        text.contains("questions_refusals_total{code=\"unauthorized\",role=\"none\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("questions_refusals_total{code=\"forbidden\",role=\"agent\"} 1"),
        "{text}"
    );
    // Only the server's own token reads them on its port; anyone on --metrics-bind.
    let r = s.request("GET", "/metrics", &[], "");
    assert_eq!(r.status, 401, "{r:?}");
    let r = s.request(
        "GET",
        "/metrics",
        &[&format!("Authorization: Bearer {dana}")],
        "",
    );
    assert_eq!(r.status, 403, "{r:?}");
    let own = ureq_get(&format!("http://{mbind}/metrics"));
    assert!(own.contains("# TYPE questions_waiters gauge"), "{own}");
    for secret in [TOKEN, agent.as_str(), dana.as_str()] {
        assert!(!text.contains(secret) && !own.contains(secret));
    }
    // Prometheus' own parser reads every family.
    let Some(python) =
        crate::mcp_clients::client(crate::mcp_clients::clients().join("venv/bin/python"))
    else {
        return;
    };
    let parse = "import sys\n\
        from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
        names = sorted(f.name for f in text_string_to_metric_families(sys.stdin.read()))\n\
        print(' '.join(names))\n";
    let mut child = Command::new(python)
        .args(["-c", parse])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let names = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for family in [
        "questions_answer_seconds",
        "questions_http_request_duration_seconds",
        "questions_http_requests",
        "questions_pending",
        "questions_refusals",
        "questions_waiters",
    ] {
        assert!(
            names.split(' ').any(|n| n.trim() == family),
            "{family}: {names}"
        );
    }
}

/// A GET with no headers of ours, over a plain socket.
fn ureq_get(url: &str) -> String {
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    use std::io::{Read, Write};
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text
}

/// `contrib/deploy`'s files: the arguments each starts `serve` with, run for real.
fn starts_with(l: &Ledger, args: &[String]) {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace(":8466", ":0").replace("0.0.0.0:", "127.0.0.1:"))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = Served::start(l, &args);
    assert_eq!(s.request("GET", "/healthz", &[], "").status, 200);
}

#[test]
fn the_deployment_files_start_the_server_they_describe() {
    let l = Ledger::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/deploy");
    let unit = std::fs::read_to_string(root.join("questions.service")).unwrap();
    let exec = unit
        .replace("\\\n", " ")
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap()
        .to_string();
    let words: Vec<String> = exec.split_whitespace().skip(2).map(String::from).collect();
    assert!(words.iter().any(|w| w == "--trusted-proxy"), "{exec}");
    starts_with(&l, &words);
    // The container's entry point, given what its comment says to add.
    let file = std::fs::read_to_string(root.join("Containerfile")).unwrap();
    let entry = file
        .split("ENTRYPOINT")
        .nth(1)
        .unwrap()
        .replace("\\\n", " ");
    let entry: Vec<String> = serde_json::from_str(entry.trim()).unwrap();
    assert_eq!(entry[..2], ["questions", "serve"]);
    let mut words: Vec<String> = entry[2..].to_vec();
    words.extend(
        [
            "--trusted-proxy",
            "10.0.0.0/8",
            "--public-url",
            "https://questions.example.com",
        ]
        .map(String::from),
    );
    starts_with(&l, &words);
    // systemd reads the unit and rates its sandbox (where systemd-analyze is).
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        return crate::common::skip("systemd-analyze is not installed");
    };
    assert!(version.status.success());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("questions.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/questions", BIN)).unwrap();
    let verify = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{verify:?}");
    let security = Command::new("systemd-analyze")
        .args(["security", "--offline=yes", "--threshold=20"])
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&security.stdout);
    assert!(
        security.status.success(),
        "exposure above 2 (of 10): {said}"
    );
}

/// Waits held on a server, as its metrics say.
fn held(s: &Served) -> usize {
    metrics(s)
        .lines()
        .find_map(|l| l.strip_prefix("questions_waiters "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// What the waiters that have already ended said: why some are not held.
fn ended(waiters: &mut [std::process::Child]) -> Vec<String> {
    use std::io::Read;
    let mut said = Vec::new();
    for w in waiters.iter_mut() {
        if let Ok(Some(status)) = w.try_wait() {
            let mut text = String::new();
            if let Some(mut e) = w.stderr.take() {
                let _ = e.read_to_string(&mut text);
            }
            said.push(format!("{status}: {text}"));
        }
    }
    said
}

#[test]
fn unpooled_two_servers_behind_haproxy_hand_their_waiters_over_on_sigterm() {
    // 200 waiters' looks through two servers want more client connections than the
    // PgBouncer pass's pooler allows: run on SQLite and PostgreSQL itself.
    crate::unpooled!();
    if Command::new("haproxy").arg("-v").output().is_err() {
        return crate::common::skip("haproxy is not installed");
    }
    const WAITERS: usize = 200;
    let l = Ledger::new();
    let agent = token(&l, &["ci-runner", "--agent"]);
    let id = l.log("deploy", "Deploy build 42?");
    let Some((ca, cert, key)) = crate::common::throwaway_ca(l.dir.path(), "haproxy") else {
        return crate::common::skip("openssl is not installed");
    };
    let mut pem = std::fs::read(&cert).unwrap();
    pem.extend(std::fs::read(&key).unwrap());
    let pem_path = l.dir.path().join("haproxy.pem");
    std::fs::write(&pem_path, pem).unwrap();
    let front = crate::common::free_port();
    let public = format!("https://127.0.0.1:{front}");
    let server = |port: u16| {
        let bind = format!("127.0.0.1:{port}");
        Served::start(
            &l,
            &[
                "--bind",
                &bind,
                "--trusted-proxy",
                "127.0.0.1",
                "--public-url",
                &public,
                "--drain-seconds",
                "3",
                "--log-format",
                "none",
            ],
        )
    };
    let (pa, pb) = (crate::common::free_port(), crate::common::free_port());
    let a = server(pa);
    let b = server(pb);
    let config = format!(
        "global\n    maxconn 4096\ndefaults\n    mode http\n    timeout connect 2s\n\
         \x20   timeout client 75s\n    timeout server 75s\n\
         frontend questions\n    bind 127.0.0.1:{front} ssl crt {}\n    option forwardfor\n\
         \x20   http-request set-header X-Forwarded-Proto https\n    default_backend servers\n\
         backend servers\n    option httpchk GET /readyz\n\
         \x20   retry-on conn-failure empty-response response-timeout\n    option redispatch\n\
         \x20   server a 127.0.0.1:{pa} check inter 300ms fall 3 rise 2\n\
         \x20   server b 127.0.0.1:{pb} check inter 300ms fall 3 rise 2\n",
        pem_path.display()
    );
    let cfg = l.dir.path().join("haproxy.cfg");
    std::fs::write(&cfg, config).unwrap();
    let checked = Command::new("haproxy")
        .arg("-c")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(checked.status.success(), "{checked:?}");
    let mut haproxy = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // HAProxy serves once its first check of each server passed.
    let up = Instant::now();
    loop {
        let through = Command::new(BIN)
            .env("QUESTIONS_CA", &ca)
            .env("QUESTIONS_TOKEN", &agent)
            .env_remove("QUESTIONS_DB")
            .args(["--db", &public, "info"])
            .output()
            .unwrap();
        if through.status.success() {
            break;
        }
        assert!(up.elapsed() < Duration::from_secs(20), "{through:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut waiters: Vec<std::process::Child> = (0..WAITERS)
        .map(|_| {
            Command::new(BIN)
                .env("QUESTIONS_CA", &ca)
                .env("QUESTIONS_TOKEN", &agent)
                .env_remove("QUESTIONS_DB")
                .args(["--db", &public])
                .args(["check", "--stage", "deploy", "--wait", "--timeout", "300"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let start = Instant::now();
    while held(&a) + held(&b) < WAITERS {
        assert!(
            start.elapsed() < Duration::from_mins(1),
            "{} + {} held; ended early: {:?}",
            held(&a),
            held(&b),
            ended(&mut waiters)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(held(&a) > 0 && held(&b) > 0, "HAProxy spread them");
    // A deploy stops one server: its waits go to the other.
    assert_eq!(a.stop(), 0);
    let moved = Instant::now();
    while held(&b) < WAITERS {
        assert!(
            moved.elapsed() < Duration::from_secs(20),
            "{} held; ended early: {:?}",
            held(&b),
            ended(&mut waiters)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    l.ok([
        "answer",
        "--id",
        &id.to_string(),
        "--answer",
        "yes",
        "--by",
        "dana",
    ]);
    let answered = Instant::now();
    for waiter in waiters {
        let out = waiter.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stdout} {stderr}");
        assert!(stderr.is_empty(), "the wait noticed: {stderr}");
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(doc["gate"], "pass", "{doc}");
    }
    let last = answered.elapsed();
    assert!(
        last < Duration::from_secs(2),
        "the last waiter passed {last:?} after the answer"
    );
    let events = l.ok(["history", "--stage", "deploy"])["events"].clone();
    let answers = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "answered")
        .count();
    assert_eq!(answers, 1, "nothing recorded twice: {events}");
    let _ = haproxy.kill();
    let _ = haproxy.wait();
    drop(b);
}
