//! `serve`: the web inbox's API and its guards, over plain HTTP from the test (the page in
//! a real browser is in browser.rs).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{Ledger, BIN, NOW};

pub(crate) const TOKEN: &str = "test-token-0123456789";

/// A running `questions serve` on a free port, stopped (SIGTERM) when dropped.
pub(crate) struct Served {
    child: Child,
    pub url: String,
    pub port: u16,
}

/// One HTTP response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// The form token the inbox gives a browser that sends `cookie` (a `Cookie: …` line):
/// every change it posts with that cookie carries it.
pub(crate) fn form_token(s: &Served, cookie: &str) -> String {
    let page = s.request("GET", "/", &[cookie, "Accept: text/html"], "");
    page.body
        .split("data-csrf=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("the page's form token: {} {}", page.status, page.body))
        .to_string()
}

impl Served {
    pub(crate) fn start(ledger: &Ledger, more: &[&str]) -> Served {
        Served::start_with(ledger, more, Some(TOKEN))
    }

    pub(crate) fn start_with(ledger: &Ledger, more: &[&str], token: Option<&str>) -> Served {
        Served::start_logged(ledger, more, token, Stdio::inherit())
    }

    /// As `start_with`, its stderr going to `stderr`.
    pub(crate) fn start_logged(
        ledger: &Ledger,
        more: &[&str],
        token: Option<&str>,
        stderr: Stdio,
    ) -> Served {
        Served::start_at(ledger, more, token, stderr, NOW)
    }

    /// As `start_logged`, its clock pinned at `now`.
    pub(crate) fn start_at(
        ledger: &Ledger,
        more: &[&str],
        token: Option<&str>,
        stderr: Stdio,
        now: &str,
    ) -> Served {
        let mut cmd = std::process::Command::new(BIN);
        cmd.current_dir(ledger.dir.path())
            .env("QUESTIONS_NOW", now)
            .env_remove("QUESTIONS_DB")
            .env_remove("QUESTIONS_USER")
            .env_remove("QUESTIONS_SERVE_TOKEN")
            .arg("--db")
            .arg(ledger.db())
            .arg("serve")
            .args(more)
            .stdout(Stdio::piped())
            .stderr(stderr);
        if !more.contains(&"--bind") {
            cmd.args(["--bind", "127.0.0.1:0"]);
        }
        if let Some(token) = token {
            cmd.env("QUESTIONS_SERVE_TOKEN", token);
        }
        let mut child = cmd.spawn().expect("serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let start: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the start line is JSON ({e}): {line:?}"));
        assert_eq!(start["ok"], true);
        assert_eq!(start["procedure"], "serve");
        let url = start["url"].as_str().unwrap().to_string();
        let listen: std::net::SocketAddr = start["listen"].as_str().unwrap().parse().unwrap();
        let port = listen.port();
        Served { child, url, port }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `http(s)://127.0.0.1:PORT`, as it serves.
    pub(crate) fn base(&self) -> String {
        let scheme = if self.url.starts_with("https:") {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// A raw request: the test says every header, Host included.
    pub(crate) fn raw(&self, request: &str) -> Reply {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        // A refused request may be answered before its body is read: the rest may not go.
        let _ = stream.write_all(request.as_bytes());
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {text:?}"));
        Reply {
            status,
            head: head.to_string(),
            body: body.to_string(),
        }
    }

    /// A request with the given extra header lines and body.
    pub(crate) fn request(&self, method: &str, path: &str, headers: &[&str], body: &str) -> Reply {
        let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers
            .iter()
            .any(|h| h.to_lowercase().starts_with("host:"))
        {
            request.push_str(&format!("Host: 127.0.0.1:{}\r\n", self.port));
        }
        for h in headers {
            request.push_str(h);
            request.push_str("\r\n");
        }
        if !body.is_empty() || method == "POST" {
            request.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        request.push_str("\r\n");
        request.push_str(body);
        self.raw(&request)
    }

    /// An API call with the bearer token.
    pub(crate) fn api(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let bearer = format!("Authorization: Bearer {TOKEN}");
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let reply = self.request(
            method,
            path,
            &[&bearer, "Content-Type: application/json"],
            &body,
        );
        let doc = reply.json();
        // The web's documents are the command line's: each is checked against schema/.
        let schema = match (reply.status, doc["procedure"].as_str()) {
            (200, Some(procedure)) => Some(procedure),
            (200, None) => None,
            _ => Some("error"),
        };
        if let Some(name) = schema.filter(|n| *n != "serve") {
            crate::schema::assert_valid(name, &doc);
        }
        (reply.status, doc)
    }

    /// Stops the server as a person would (SIGTERM) and returns its exit code.
    pub(crate) fn stop(mut self) -> i32 {
        let code = self.terminate();
        std::mem::forget(self);
        code
    }

    fn terminate(&mut self) -> i32 {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.terminate();
    }
}

fn with_options(l: &Ledger) -> i64 {
    l.log_with(
        "design",
        "Which database?",
        &["--option", "PostgreSQL (Recommended)", "--option", "SQLite"],
    )
}

#[test]
fn serve_prints_its_url_and_stops_cleanly_on_sigterm() {
    let l = Ledger::new();
    let served = Served::start(&l, &[]);
    assert!(
        served.url.ends_with(&format!("/?token={TOKEN}")),
        "{}",
        served.url
    );
    assert_eq!(served.stop(), 0);
}

#[test]
fn the_token_is_new_on_every_start_unless_given() {
    let l = Ledger::new();
    let token = |s: &Served| s.url.rsplit_once("token=").unwrap().1.to_string();
    let a = Served::start_with(&l, &[], None);
    let b = Served::start_with(&l, &[], None);
    assert_ne!(token(&a), token(&b));
    assert!(token(&a).len() >= 32);
    let c = Served::start(&l, &[]);
    assert_eq!(token(&c), TOKEN);
}

#[test]
fn a_token_that_cannot_go_into_a_url_is_refused() {
    let l = Ledger::new();
    let mut cmd = l.command();
    cmd.env("QUESTIONS_SERVE_TOKEN", "a b;c")
        .args(["serve", "--bind", "127.0.0.1:0"]);
    let run = crate::common::finish(cmd);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.error_code(), "usage");
    l.assert_not_created();
}

#[test]
fn api_lists_answers_and_records_channel_web_and_the_user() {
    let l = Ledger::new();
    let id = with_options(&l);
    let other = l.log("intake", "What is the goal?");
    let s = Served::start(&l, &["--user", "alice"]);
    let (status, list) = s.api("GET", "/api/questions?stage=design&status=pending", None);
    assert_eq!(status, 200);
    assert_eq!(list["count"], 1);
    assert_eq!(list["questions"][0]["id"], id);

    let path = format!("/api/questions/{id}/answer");
    let (status, done) = s.api("POST", &path, Some(json!({"select": "PostgreSQL"})));
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["question"]["answer"], "PostgreSQL");
    let stored = l.question(id);
    assert_eq!(stored["status"], "answered");
    assert_eq!(stored["channel"], "web");
    assert_eq!(stored["answered_by"], "alice");

    let path = format!("/api/questions/{other}/answer");
    let (status, done) = s.api("POST", &path, Some(json!({"answer": "A dashboard"})));
    assert_eq!(status, 200, "{done}");
    assert_eq!(l.question(other)["answer"], "A dashboard");
    let gate = l.run(["check", "--stage", "intake"]);
    assert_eq!(gate.code, 0, "{gate:?}");
}

#[test]
fn api_maps_errors_to_statuses_and_a_second_answer_never_overwrites() {
    let l = Ledger::new();
    let id = with_options(&l);
    let free = l.log_with(
        "design",
        "Which port?",
        &["--option", "80", "--no-freeform"],
    );
    let s = Served::start(&l, &[]);
    let answer =
        |id: i64, body: Value| s.api("POST", &format!("/api/questions/{id}/answer"), Some(body));

    let (status, err) = answer(999, json!({"answer": "x"}));
    assert_eq!(
        (status, err["error_code"].as_str()),
        (404, Some("not_found"))
    );
    let (status, err) = answer(free, json!({"answer": "8080"}));
    assert_eq!(
        (status, err["error_code"].as_str()),
        (422, Some("invalid_answer"))
    );
    let (status, err) = answer(id, json!({"answer": "  "}));
    assert_eq!(
        (status, err["error_code"].as_str()),
        (422, Some("invalid_answer"))
    );

    l.ok(["answer", "--id", &id.to_string(), "--answer", "SQLite"]);
    let (status, err) = answer(id, json!({"select": "PostgreSQL"}));
    assert_eq!(status, 409, "{err}");
    assert_eq!(err["error_code"], "conflict");
    assert_eq!(err["answer"], "SQLite");
    assert_eq!(err["question"]["answer"], "SQLite");
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains("already answered: \"SQLite\""),
        "{err}"
    );
    assert_eq!(l.question(id)["answer"], "SQLite");
    assert_eq!(l.question(id)["channel"], "cli");
}

#[test]
fn api_skips_and_declines_with_reasons() {
    let l = Ledger::new();
    let a = l.log("s", "A?");
    let b = l.log("s", "B?");
    let s = Served::start(&l, &[]);
    let (status, done) = s.api(
        "POST",
        &format!("/api/questions/{a}/skip"),
        Some(json!({"reason": "later"})),
    );
    assert_eq!(status, 200, "{done}");
    assert_eq!(l.question(a)["skip_reason"], "later");
    let (status, err) = s.api(
        "POST",
        &format!("/api/questions/{b}/decline"),
        Some(json!({})),
    );
    assert_eq!(
        (status, err["error_code"].as_str()),
        (422, Some("invalid_answer"))
    );
    let (status, _) = s.api(
        "POST",
        &format!("/api/questions/{b}/decline"),
        Some(json!({"reason": "two questions in one"})),
    );
    assert_eq!(status, 200);
    assert_eq!(l.question(b)["status"], "declined");
    assert_eq!(l.question(b)["decline_reason"], "two questions in one");
    assert_eq!(l.question(b)["channel"], "web");
}

#[test]
fn with_users_each_person_s_answers_are_recorded_as_them_through_the_page_and_the_api() {
    let l = Ledger::new();
    let ids: Vec<i64> = (0..8)
        .map(|n| l.log_with("s", &format!("Q{n}?"), &["--proposed", "yes"]))
        .collect();
    let users = crate::approvals::users_file(
        &l,
        "ann ann-token-0123456789
ben ben-token-0123456789
",
        0o600,
    );
    let s = Served::start(&l, &["--users", &users, "--user", "operator"]);
    let form = "Content-Type: application/x-www-form-urlencoded";
    let ann =
        "Cookie: questions_token_PORT=ann-token-0123456789".replace("PORT", &s.port.to_string());
    // Through the page's forms, with ann's cookie: every kind of change is hers.
    let csrf = format!("csrf={}", form_token(&s, &ann));
    for (id, action, body) in [
        (ids[0], "answer", "answer=no"),
        (ids[1], "accept", ""),
        (ids[2], "skip", "reason=later"),
        (ids[3], "decline", "reason=two+in+one"),
    ] {
        let body = format!("{body}&{csrf}");
        let reply = s.request("POST", &format!("/q/{id}/{action}"), &[&ann, form], &body);
        assert_eq!(reply.status, 303, "{action}: {reply:?}");
    }
    // Through the API, with ben's bearer token: his.
    let ben = "Authorization: Bearer ben-token-0123456789";
    let json_type = "Content-Type: application/json";
    for (id, action, body) in [
        (ids[4], "answer", json!({"answer": "no"})),
        (ids[5], "skip", json!({"reason": "later"})),
        (ids[6], "decline", json!({"reason": "two in one"})),
    ] {
        let path = format!("/api/questions/{id}/{action}");
        let reply = s.request("POST", &path, &[ben, json_type], &body.to_string());
        assert_eq!(reply.status, 200, "{action}: {reply:?}");
    }
    // The server's own token names nobody: its changes are the server's user's.
    let (status, _) = s.api(
        "POST",
        &format!("/api/questions/{}/answer", ids[7]),
        Some(json!({"answer": "no"})),
    );
    assert_eq!(status, 200);
    let recorded: Vec<(Value, Value, Value)> = ids
        .iter()
        .map(|&id| {
            let q = l.question(id);
            (
                q["status"].clone(),
                q["answered_by"].clone(),
                q["channel"].clone(),
            )
        })
        .collect();
    let by = |status: &str, who: &str| (json!(status), json!(who), json!("web"));
    assert_eq!(
        recorded,
        [
            by("answered", "ann"),
            by("answered", "ann"),
            by("skipped", "ann"),
            by("declined", "ann"),
            by("answered", "ben"),
            by("skipped", "ben"),
            by("declined", "ben"),
            by("answered", "operator"),
        ]
    );
    // The history says the same.
    for (n, &id) in ids.iter().enumerate() {
        let history = l.ok(["history", "--id", &id.to_string()]);
        let last = history["events"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["answered_by"], recorded[n].1, "{last}");
    }
}

#[test]
fn a_stage_inbox_answers_only_its_stage() {
    let l = Ledger::new();
    let mine = l.log("intake", "Mine?");
    let theirs = l.log("design", "Theirs?");
    let s = Served::start(&l, &["--stage", "intake"]);
    let (_, list) = s.api("GET", "/api/questions", None);
    let listed: Vec<i64> = list["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, vec![mine]);
    let (status, _) = s.api(
        "POST",
        &format!("/api/questions/{theirs}/answer"),
        Some(json!({"answer": "x"})),
    );
    assert_eq!(status, 404);
    assert_eq!(l.question(theirs)["status"], "pending");
}

#[test]
fn every_request_needs_the_token() {
    let l = Ledger::new();
    l.log("s", "Secret?");
    let s = Served::start(&l, &[]);
    for path in ["/", "/api/questions"] {
        let reply = s.request("GET", path, &[], "");
        assert_eq!(reply.status, 401, "{path}: {reply:?}");
        assert!(!reply.body.contains("Secret?"));
        let reply = s.request("GET", path, &["Authorization: Bearer wrong"], "");
        assert_eq!(reply.status, 401, "{path}");
        let reply = s.request("GET", path, &["Cookie: questions_token_1=wrong"], "");
        assert_eq!(reply.status, 401, "{path}");
    }
    let reply = s.request("GET", "/?token=wrong", &[], "");
    assert_eq!(reply.status, 401);
    // A browser is told on a page what to do.
    let reply = s.request("GET", "/", &["Accept: text/html,*/*"], "");
    assert_eq!(reply.status, 401);
    assert!(reply
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(
        reply
            .body
            .contains("open the URL that &#39;questions serve&#39; printed"),
        "{}",
        reply.body
    );
}

#[test]
fn the_first_visit_s_token_becomes_a_strict_http_only_cookie_and_leaves_the_address_bar() {
    let l = Ledger::new();
    l.log("s", "Seen?");
    let s = Served::start(&l, &[]);
    let reply = s.request("GET", &format!("/?token={TOKEN}"), &[], "");
    assert_eq!(reply.status, 303, "{reply:?}");
    assert_eq!(reply.header("location").as_deref(), Some("/"));
    let cookie = reply.header("set-cookie").unwrap();
    assert!(
        cookie.starts_with(&format!("questions_token_{}={TOKEN};", s.port)),
        "{cookie}"
    );
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    let pair = cookie.split(';').next().unwrap();
    let page = s.request("GET", "/", &[&format!("Cookie: {pair}")], "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Seen?"));
}

#[test]
fn a_host_that_is_not_this_server_is_refused_against_dns_rebinding() {
    let l = Ledger::new();
    let s = Served::start(&l, &[]);
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let port = s.port;
    for host in [
        format!("evil.example:{port}"),
        format!("127.0.0.2:{port}"),
        "127.0.0.1:1".into(),
    ] {
        let reply = s.request(
            "GET",
            "/api/questions",
            &[&format!("Host: {host}"), &bearer],
            "",
        );
        assert_eq!(reply.status, 403, "{host}: {reply:?}");
    }
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let reply = s.request(
            "GET",
            "/api/questions",
            &[&format!("Host: {host}"), &bearer],
            "",
        );
        assert_eq!(reply.status, 200, "{host}: {reply:?}");
    }
}

#[test]
fn a_post_from_another_origin_is_refused() {
    let l = Ledger::new();
    let id = l.log("s", "Forged?");
    let s = Served::start(&l, &[]);
    let cookie = format!("Cookie: questions_token_{}={TOKEN}", s.port);
    let form = "Content-Type: application/x-www-form-urlencoded";
    let path = format!("/q/{id}/answer");
    for from in [
        &["Origin: http://evil.example"][..],
        &["Origin: null"],
        &["Sec-Fetch-Site: cross-site"],
        &["Sec-Fetch-Site: same-site", "Origin: http://sub.127.0.0.1"],
    ] {
        let mut headers = vec![cookie.as_str(), form];
        headers.extend_from_slice(from);
        let reply = s.request("POST", &path, &headers, "answer=yes");
        assert_eq!(reply.status, 403, "{from:?}: {reply:?}");
        let api = format!("Authorization: Bearer {TOKEN}");
        let mut headers = vec![api.as_str(), "Content-Type: application/json"];
        headers.extend_from_slice(from);
        let reply = s.request(
            "POST",
            &format!("/api/questions/{id}/answer"),
            &headers,
            r#"{"answer":"yes"}"#,
        );
        assert_eq!(reply.status, 403, "{from:?}: {reply:?}");
    }
    assert_eq!(l.question(id)["status"], "pending");
    let origin = format!("Origin: http://127.0.0.1:{}", s.port);
    // From this origin, the cookie alone is not enough either: the page's form token
    // comes with it (a form another page made, or one from before a new sign-in, lacks it).
    let same = [
        cookie.as_str(),
        form,
        &origin,
        "Sec-Fetch-Site: same-origin",
    ];
    for body in [
        "answer=yes",
        "answer=yes&csrf=0123456789abcdef0123456789abcdef",
    ] {
        let reply = s.request("POST", &path, &same, body);
        assert_eq!(reply.status, 403, "{body}: {reply:?}");
        assert!(reply.body.contains("reload the page"), "{}", reply.body);
    }
    assert_eq!(l.question(id)["status"], "pending");
    let body = format!("answer=yes&csrf={}", form_token(&s, &cookie));
    let reply = s.request("POST", &path, &same, &body);
    assert_eq!(reply.status, 303, "{reply:?}");
    assert_eq!(l.question(id)["answer"], "yes");
}

#[test]
fn a_body_over_64_kib_is_refused() {
    let l = Ledger::new();
    let id = l.log("s", "Long?");
    let s = Served::start(&l, &[]);
    let big = json!({"answer": "x".repeat(64 * 1024)});
    let (status, _) = s.api("POST", &format!("/api/questions/{id}/answer"), Some(big));
    assert_eq!(status, 413);
    assert_eq!(l.question(id)["status"], "pending");
    let fits = json!({"answer": "x".repeat(60 * 1024)});
    let (status, _) = s.api("POST", &format!("/api/questions/{id}/answer"), Some(fits));
    assert_eq!(status, 200);
}

#[test]
fn a_remote_bind_needs_allow_remote() {
    let l = Ledger::new();
    let run = l.run(["serve", "--bind", "0.0.0.0:0"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.error_code(), "usage");
    assert!(run.json["error"]
        .as_str()
        .unwrap()
        .contains("--allow-remote"));
}

#[test]
fn with_allow_remote_it_binds_every_address_and_takes_address_literals_not_names() {
    let l = Ledger::new();
    let s = Served::start(&l, &["--bind", "0.0.0.0:0", "--allow-remote"]);
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let port = s.port;
    for (host, status) in [
        (format!("127.0.0.1:{port}"), 200),
        (format!("192.0.2.7:{port}"), 200),
        (format!("localhost:{port}"), 200),
        (format!("rebound.example:{port}"), 403),
    ] {
        let reply = s.request(
            "GET",
            "/api/questions",
            &[&format!("Host: {host}"), &bearer],
            "",
        );
        assert_eq!(reply.status, status, "{host}: {reply:?}");
    }
}

#[test]
fn the_default_bind_is_loopback_on_the_documented_port() {
    let help = Ledger::new().run(["serve", "--help"]).stdout;
    assert!(help.contains("127.0.0.1:8466]"), "{help}");
    let readme = include_str!("../../README.md");
    assert!(
        readme.contains("127.0.0.1:8466"),
        "the README names the port"
    );
}

#[test]
fn every_ledger_text_is_escaped_and_no_script_runs_inline() {
    let l = Ledger::new();
    l.log_with(
        "<b>stage</b>",
        "<script>alert(1)</script>",
        &[
            "--context",
            "\"><img src=x onerror=alert(2)>",
            "--option",
            "<i>opt</i>",
            "--header",
            "<h1>",
        ],
    );
    let s = Served::start(&l, &[]);
    let page = s.request("GET", "/", &[&format!("Authorization: Bearer {TOKEN}")], "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // The context is Markdown, whose raw HTML is shown as text.
    assert!(page.body.contains("&gt;&lt;img src=x onerror=alert(2)&gt;"));
    assert!(page.body.contains("value=\"&lt;i&gt;opt&lt;/i&gt;\""));
    assert!(!page.body.contains("<script>alert"));
    assert!(!page.body.contains("<img"));
    // Scripts only from files, none inline.
    assert!(!page.body.contains("<script>"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let js = s.request("GET", "/assets/inbox.js", &[], "");
    assert_eq!(js.status, 200);
    assert!(js
        .header("content-type")
        .unwrap()
        .starts_with("text/javascript"));
}

#[test]
fn the_page_works_without_javascript_post_then_redirect() {
    let l = Ledger::new();
    let id = with_options(&l);
    let s = Served::start(&l, &["--user", "bob"]);
    let cookie = format!("Cookie: questions_token_{}={TOKEN}", s.port);
    let form = "Content-Type: application/x-www-form-urlencoded";
    let page = s.request("GET", "/", &[&cookie], "");
    assert!(page.body.contains(&format!("action=\"/q/{id}/answer\"")));
    assert!(page.body.contains("type=\"radio\""));
    let csrf = form_token(&s, &cookie);
    assert!(page
        .body
        .contains(&format!("name=\"csrf\" value=\"{csrf}\"")));
    let reply = s.request(
        "POST",
        &format!("/q/{id}/answer"),
        &[&cookie, form],
        &format!("select=SQLite&answer=&csrf={csrf}"),
    );
    assert_eq!(reply.status, 303, "{reply:?}");
    assert_eq!(
        reply.header("location").as_deref(),
        Some(&*format!("/?answered={id}"))
    );
    assert_eq!(l.question(id)["answer"], "SQLite");
    assert_eq!(l.question(id)["answered_by"], "bob");
    // A second answer: the page says what is on record, with 409.
    let again = s.request(
        "POST",
        &format!("/q/{id}/answer"),
        &[&cookie, form],
        &format!("select=PostgreSQL&csrf={csrf}"),
    );
    assert_eq!(again.status, 409);
    assert!(
        again.body.contains("already answered: &quot;SQLite&quot;"),
        "{}",
        again.body
    );
    assert_eq!(l.question(id)["answer"], "SQLite");
}

#[test]
fn fifty_api_clients_answer_a_thousand_questions_and_lose_nothing() {
    const CLIENTS: usize = 50;
    const QUESTIONS: usize = 1000;
    let l = Ledger::new();
    let questions: Vec<Value> = (0..QUESTIONS)
        .map(|i| match i % 2 {
            0 => json!({"question": format!("Free {i}?")}),
            _ => json!({"question": format!("Pick {i}?"), "options": [{"label": "Yes"}, {"label": "No"}]}),
        })
        .collect();
    let logged = l.ok_stdin(
        ["ingest", "--stage", "load", "--format", "ask-user"],
        json!({ "questions": questions }).to_string(),
    );
    let ids: Vec<i64> = logged["question_ids"]
        .as_array()
        .unwrap_or_else(|| panic!("{logged}"))
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), QUESTIONS);
    let s = std::sync::Arc::new(Served::start(&l, &[]));
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let ids = std::sync::Arc::new(ids);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (s, next, ids) = (s.clone(), next.clone(), ids.clone());
            std::thread::spawn(move || loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(&id) = ids.get(n) else { return };
                let body = match n % 2 {
                    0 => json!({"answer": format!("answer {id}")}),
                    _ => json!({"select": "Yes"}),
                };
                let (status, out) =
                    s.api("POST", &format!("/api/questions/{id}/answer"), Some(body));
                assert_eq!(status, 200, "question {id}: {out}");
            })
        })
        .collect();
    for c in clients {
        c.join().expect("no client failed");
    }
    let (status, list) = s.api("GET", "/api/questions?stage=load", None);
    assert_eq!(status, 200);
    let all = list["questions"].as_array().unwrap();
    assert_eq!(all.len(), QUESTIONS);
    for (n, q) in all.iter().enumerate() {
        let expected = match n % 2 {
            0 => format!("answer {}", q["id"]),
            _ => "Yes".to_string(),
        };
        assert_eq!(q["status"], "answered", "{q}");
        assert_eq!(q["answer"], expected.as_str(), "{q}");
        assert_eq!(q["channel"], "web");
    }
    let history = l.ok(["history", "--stage", "load"]);
    let answered = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "answered")
        .count();
    assert_eq!(answered, QUESTIONS, "one answer event each, none repeated");
}

#[test]
fn two_host_headers_are_refused() {
    let l = Ledger::new();
    let s = Served::start(&l, &[]);
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let port = s.port;
    let reply = s.request(
        "GET",
        "/api/questions",
        &[
            &format!("Host: 127.0.0.1:{port}"),
            &format!("Host: evil.example:{port}"),
            &bearer,
        ],
        "",
    );
    assert_eq!(reply.status, 403, "{reply:?}");
}

#[test]
fn a_short_token_is_refused_and_a_remote_bind_warns() {
    let l = Ledger::new();
    let run = l
        .command()
        .env("QUESTIONS_SERVE_TOKEN", "short-token")
        .args(["serve", "--bind", "127.0.0.1:0"])
        .timeout(Duration::from_secs(10))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    let json: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(json["error_code"], "usage");
    assert!(json["error"].as_str().unwrap().contains("16"), "{json}");

    let mut child = std::process::Command::new(BIN)
        .current_dir(l.dir.path())
        .env("QUESTIONS_SERVE_TOKEN", TOKEN)
        .arg("--db")
        .arg(l.db())
        .args(["serve", "--bind", "0.0.0.0:0", "--allow-remote"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("0.0.0.0"),
        "{stderr}"
    );
}

/// Whether the server has closed this connection, waiting `within` at most to see it.
fn closed(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    // Its end, after whatever the server said first.
    let mut said = Vec::new();
    match stream.read_to_end(&mut said) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

/// The server's open file descriptors.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn half_sent_requests_are_bounded_in_number_and_time() {
    let l = Ledger::new();
    let s = Served::start(&l, &[]);
    let pid = s.pid();
    // The count to come back to is taken once a request has opened the ledger it serves.
    assert_eq!(s.api("GET", "/api/questions", None).0, 200);
    let before = open_files(pid);
    // Far more half-sent requests than the server keeps from one address: the rest are
    // closed at once.
    let mut idle = Vec::new();
    for _ in 0..400 {
        let mut stream = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        let _ = stream.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        idle.push(stream);
    }
    // Counted once the server has taken every one of them in: all but the 64 it keeps
    // from one address (`MAX_PER_CLIENT`) are closed, well before the header timeout.
    let kept = 64;
    let mut open: Vec<usize> = (0..idle.len()).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while open.len() > kept {
        assert!(
            Instant::now() < deadline,
            "{} of 400 half-sent requests still open",
            open.len()
        );
        open.retain(|&i| !closed(&mut idle[i], Duration::from_millis(1)));
    }
    let during = open_files(pid);
    assert!(
        during < before + 300,
        "{before} files before, {during} with 400 idle clients"
    );
    // Their headers never come: within the header timeout (10 s) the rest are closed too,
    // each seen as it closes, and a person gets the inbox again.
    let deadline = Instant::now() + Duration::from_secs(15);
    for &i in &open {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            closed(&mut idle[i], left.max(Duration::from_millis(1))),
            "a half-sent request was still open 15 s on"
        );
    }
    let (status, _) = s.api("GET", "/api/questions", None);
    assert_eq!(status, 200);
    // The server's side of each is closed too (on a loaded machine, moments after the
    // client's side sees it close).
    let deadline = Instant::now() + Duration::from_secs(10);
    while open_files(pid) >= before + 10 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = open_files(pid);
    let files: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .collect();
    assert!(
        after < before + 10,
        "{before} files before, {after} after: {files:?}"
    );
}

/// A request from `from`, on its own connection: its status, or none when the server
/// closed the connection without answering.
async fn request_from(from: &str, port: u16, request: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    let mut stream = socket.connect(([127, 0, 0, 1], port).into()).await.unwrap();
    let _ = stream.write_all(request.as_bytes()).await;
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply).await;
    String::from_utf8_lossy(&reply)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
}

#[test]
fn one_address_flooding_half_sent_requests_does_not_lock_out_another() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // More at once than the server keeps open in all (256); each one the server closes is
    // opened again, up to REOPENS in all.
    const FLOOD: usize = 300;
    const REOPENS: usize = 20_000;
    const REQUESTS: usize = 20;
    let l = Ledger::new();
    let s = Served::start(&l, &[]);
    let port = s.port;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        // How many of the flood's connections the server has closed; and the end.
        let (closed, mut seen) = tokio::sync::watch::channel(0usize);
        let (stop, _) = tokio::sync::watch::channel(false);
        let opened = Arc::new(AtomicUsize::new(0));
        let flood: Vec<_> = (0..FLOOD)
            .map(|_| {
                let (closed, mut stop, opened) = (closed.clone(), stop.subscribe(), opened.clone());
                tokio::spawn(async move {
                    while !*stop.borrow() && opened.fetch_add(1, Ordering::SeqCst) < REOPENS {
                        let socket = tokio::net::TcpSocket::new_v4().unwrap();
                        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
                        let Ok(mut stream) = socket.connect(([127, 0, 0, 1], port).into()).await
                        else {
                            continue;
                        };
                        // Half a request: the header never ends.
                        let _ = stream
                            .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                            .await;
                        let mut byte = [0u8; 1];
                        tokio::select! {
                            _ = stream.read(&mut byte) => closed.send_modify(|n| *n += 1),
                            _ = stop.changed() => return,
                        }
                    }
                })
            })
            .collect();
        let ask = format!(
            "GET /api/questions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Authorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        );
        // The server is full: it has closed what it could not keep.
        let _ = seen.wait_for(|&n| n >= FLOOD - 256).await;
        for n in 0..REQUESTS {
            // Each request while the flood goes on: more of it closed and opened again.
            let now = *seen.borrow_and_update();
            let _ = seen
                .wait_for(|&c| c >= now + 10 || opened.load(Ordering::SeqCst) >= REOPENS)
                .await;
            let status = request_from("127.0.0.1", port, &ask).await;
            assert_eq!(status, Some(200), "request {n} from another address");
        }
        let _ = stop.send(true);
        for task in flood {
            task.await.unwrap();
        }
    });
    // The server serves on once the flood is over.
    assert_eq!(s.api("GET", "/api/questions", None).0, 200);
}

#[test]
fn accept_proposed_takes_only_a_pending_question_s_proposal() {
    let l = Ledger::new();
    let named = l.log_with("s", "What should we call it?", &["--proposed", "orders"]);
    let bare = l.log("s", "Anything else?");
    let s = Served::start(&l, &["--user", "bob"]);
    let cookie = format!("Cookie: questions_token_{}={TOKEN}", s.port);
    let form = "Content-Type: application/x-www-form-urlencoded";
    let csrf = format!("csrf={}", form_token(&s, &cookie));
    let accept = |id: i64| s.request("POST", &format!("/q/{id}/accept"), &[&cookie, form], &csrf);
    // No proposal: nothing to accept, and nothing recorded.
    let none = accept(bare);
    assert_eq!(none.status, 422, "{none:?}");
    assert!(
        none.body.contains("has no proposed value to accept"),
        "{}",
        none.body
    );
    assert_eq!(l.question(bare)["status"], "pending");

    let taken = accept(named);
    assert_eq!(taken.status, 303, "{taken:?}");
    assert_eq!(
        taken.header("location").as_deref(),
        Some(&*format!("/?accepted={named}"))
    );
    let q = l.question(named);
    assert_eq!(
        (&q["answer"], &q["answered_by"], &q["channel"]),
        (&json!("orders"), &json!("bob"), &json!("web"))
    );
    let page = s.request("GET", &format!("/?accepted={named}"), &[&cookie], "");
    assert!(page
        .body
        .contains(&format!("Question {named} answered with its proposal.")));

    // Taken already: a conflict that says what is on record; the answer stands.
    let again = accept(named);
    assert_eq!(again.status, 409, "{again:?}");
    assert!(
        again.body.contains("already answered: &quot;orders&quot;"),
        "{}",
        again.body
    );
    let events = l.ok(["history", "--id", &named.to_string()])["events"].clone();
    assert_eq!(events.as_array().unwrap().len(), 2);
    assert_eq!(events[1]["event"], "defaulted");
}

#[test]
fn a_decline_without_a_reason_is_one_refusal_on_every_front_end() {
    let l = Ledger::new();
    let id = l.log("design", "Which database?");
    for blank in ["", "   "] {
        let run = l.run(["decline", "--id", &id.to_string(), "--reason", blank]);
        assert_eq!(run.code, 1, "{run:?}");
        assert_eq!(run.error_code(), "invalid_answer");
    }
    let s = Served::start(&l, &[]);
    let (status, doc) = s.api(
        "POST",
        &format!("/api/questions/{id}/decline"),
        Some(json!({"reason": "  "})),
    );
    assert_eq!(
        (status, doc["error_code"].as_str()),
        (422, Some("invalid_answer"))
    );
    assert_eq!(l.question(id)["status"], "pending");
}
