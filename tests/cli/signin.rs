//! Signing in with an OpenID provider (§17): `serve --oidc-issuer`. Against a real
//! provider nobody here wrote (panva's `oidc-provider` from npm, `scripts/oidc-provider`)
//! and a hostile stand-in that hands out forged ID tokens (`tests/fixtures/oidc/
//! hostile.mjs`), both on loopback, each started by its test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{free_port, Ledger};
use crate::serve::{Reply, Served};

const CLIENT_ID: &str = "questions-test";
const CLIENT_SECRET: &str = "client-secret-5f2b9c1d7e";

/// A provider on loopback, stopped when dropped (its stdin held open: it ends with it).
pub(crate) struct Idp {
    child: Child,
    pub issuer: String,
}

impl Idp {
    /// `scripts/oidc-provider [hostile]`, with the redirect URI of a server on `port`.
    pub(crate) fn start(hostile: Option<&str>, port: u16, more: &[(&str, &str)]) -> Option<Idp> {
        if Command::new("node").arg("--version").output().is_err() {
            crate::common::skip("node is not installed");
            return None;
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/oidc-provider");
        let mut cmd = Command::new(script);
        if let Some(attack) = hostile {
            cmd.arg("hostile").env("OIDC_ATTACK", attack);
        }
        cmd.env("OIDC_PORT", "0")
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env(
                "OIDC_REDIRECT_URIS",
                format!(
                    "http://127.0.0.1:{port}/signin/callback,https://127.0.0.1:{port}/signin/callback"
                ),
            )
            .envs(more.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("scripts/oidc-provider starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the provider's ready line ({e}): {line:?}"));
        let issuer = ready["issuer"].as_str().unwrap().to_string();
        Some(Idp { child, issuer })
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve` on `port` signing people in with `idp`.
pub(crate) fn served(l: &Ledger, idp: &Idp, port: u16, more: &[&str]) -> Served {
    let secret = l.dir.path().join("oidc-secret");
    std::fs::write(&secret, format!("{CLIENT_SECRET}\n")).unwrap();
    let bind = format!("127.0.0.1:{port}");
    let mut args = vec![
        "--bind",
        &bind,
        "--oidc-issuer",
        &idp.issuer,
        "--oidc-client-id",
        CLIENT_ID,
        "--oidc-client-secret-file",
        secret.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    Served::start(l, &args)
}

/// As `served`, its clock at `now` and its log in `log`.
fn served_at(l: &Ledger, idp: &Idp, port: u16, now: &str, log: &std::path::Path) -> Served {
    let secret = l.dir.path().join("oidc-secret");
    std::fs::write(&secret, format!("{CLIENT_SECRET}\n")).unwrap();
    let bind = format!("127.0.0.1:{port}");
    let args = [
        "--bind",
        &bind,
        "--oidc-issuer",
        &idp.issuer,
        "--oidc-client-id",
        CLIENT_ID,
        "--oidc-client-secret-file",
        secret.to_str().unwrap(),
        "--log-format",
        "json",
    ];
    let stderr = std::fs::File::create(log).unwrap();
    Served::start_at(
        l,
        &args,
        Some(crate::serve::TOKEN),
        Stdio::from(stderr),
        now,
    )
}

/// Who may link people: the test's own user, as admin of the group `people`.
pub(crate) fn link(l: &Ledger, person: &str, identity: &str) {
    let me = crate::relay_harness::me(l);
    let _ = l.run(["group", "create", "people", "--admins", &me]);
    l.ok(["people", "link", person, identity]);
}

/// A plain GET to a URL on loopback, as a browser's address bar would, not following
/// redirects; with the cookies given.
fn get(url: &str, cookies: &str) -> Reply {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_once('/').map_or((rest, "/"), |(h, p)| (h, p));
    let path = format!("/{}", path.trim_start_matches('/'));
    let mut stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    if !cookies.is_empty() {
        request.push_str(&format!("Cookie: {cookies}\r\n"));
    }
    request.push_str("Accept: text/html\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Reply {
        status: head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap(),
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// Every `Set-Cookie` of a reply, as `name=value` (attributes in `.1`).
fn set_cookies(reply: &Reply) -> Vec<(String, String)> {
    reply
        .head
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("set-cookie").then(|| {
                let v = v.trim();
                let (pair, attrs) = v.split_once(';').unwrap_or((v, ""));
                (pair.to_string(), attrs.to_string())
            })
        })
        .collect()
}

fn location(reply: &Reply) -> String {
    reply
        .header("location")
        .unwrap_or_else(|| panic!("a redirect: {} {}", reply.status, reply.head))
}

/// One sign-in through a provider that asks nothing (the stand-in): `/signin?to=…`, off
/// to `/authorize`, back to the callback with the flow's cookie. The callback's reply.
fn through(s: &Served, to: &str) -> (Reply, String) {
    let start = s.request(
        "GET",
        &format!("/signin?to={to}"),
        &["Accept: text/html"],
        "",
    );
    assert_eq!(start.status, 303, "{}", start.head);
    let flow = set_cookies(&start)
        .into_iter()
        .find(|(pair, _)| pair.starts_with("questions_signin_"))
        .expect("the flow's cookie")
        .0;
    let authorize = location(&start);
    let back = get(&authorize, "");
    assert_eq!(back.status, 303, "{}", back.head);
    let callback = location(&back);
    let path = callback
        .strip_prefix(&s.base())
        .unwrap_or_else(|| panic!("back to this server: {callback}"))
        .to_string();
    let cookie = format!("Cookie: {flow}");
    (
        s.request("GET", &path, &["Accept: text/html", &cookie], ""),
        flow,
    )
}

/// The session cookie a finished sign-in set, as `name=value`.
fn session(reply: &Reply) -> Option<String> {
    set_cookies(reply)
        .into_iter()
        .find(|(pair, _)| pair.starts_with("questions_token_") && !pair.ends_with('='))
        .map(|(pair, _)| pair)
}

fn tokens(l: &Ledger) -> Vec<Value> {
    l.ok(["token", "list"])["tokens"]
        .as_array()
        .unwrap()
        .clone()
}

/// Every event of the ledger, as the text `events` prints.
fn history_text(l: &Ledger) -> String {
    let run = l.run(["events"]);
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
}

#[test]
fn a_person_linked_by_email_signs_in_answers_as_themself_and_signs_out() {
    let port = free_port();
    let Some(idp) = Idp::start(Some("good"), port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    let id = l.log("deploy", "Deploy build 42?");
    let s = served(&l, &idp, port, &["--log-format", "json"]);
    // A browser with no session is sent to sign in, and back to where it was.
    let page = s.request("GET", "/?answered=1", &["Accept: text/html"], "");
    assert_eq!(page.status, 303);
    assert_eq!(location(&page), "/signin?to=%2F%3Fanswered%3D1");
    let (back, flow) = through(&s, "%2F%3Fanswered%3D1");
    assert_eq!(back.status, 303, "{}", back.body);
    assert_eq!(location(&back), "/?answered=1");
    let cookies = set_cookies(&back);
    let (pair, attrs) = cookies
        .iter()
        .find(|(p, _)| p.starts_with("questions_token_"))
        .expect("a session cookie");
    assert!(
        attrs.contains("HttpOnly") && attrs.contains("SameSite=Lax"),
        "{attrs}"
    );
    assert!(attrs.contains("Max-Age=604800"), "7 days: {attrs}");
    // The flow's cookie is spent.
    assert!(cookies
        .iter()
        .any(|(p, a)| p.starts_with("questions_signin_")
            && p.ends_with('=')
            && a.contains("Max-Age=0")));
    let cookie = format!("Cookie: {pair}");
    let inbox = s.request("GET", "/", &["Accept: text/html", &cookie], "");
    assert_eq!(inbox.status, 200);
    assert!(
        inbox.body.contains("Signed in as <strong>alice</strong>"),
        "{}",
        inbox.body
    );
    assert!(inbox.body.contains("action=\"/signout\""));
    // The first sign-in by email records the account it came with.
    let people = l.ok(["people", "list"]).to_string();
    assert!(
        people.contains(&format!("oidc:{}#alice", idp.issuer)),
        "{people}"
    );
    // `token list` and `people sessions` say where the session came from.
    let listed = tokens(&l);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["source"], "web");
    assert_eq!(listed[0]["person"], "alice");
    assert_eq!(listed[0]["issuer"], idp.issuer.as_str());
    let sessions = l.ok(["people", "sessions", "alice"]);
    assert_eq!(sessions["count"], 1, "{sessions}");
    // An answer in the session is alice's, through the web.
    let csrf = crate::serve::form_token(&s, &cookie);
    let fields = format!("answer=yes&ledger=&fingerprint=&csrf={csrf}");
    let answered = s.request(
        "POST",
        &format!("/q/{id}/answer"),
        &[
            &cookie,
            "Content-Type: application/x-www-form-urlencoded",
            "Sec-Fetch-Site: same-origin",
        ],
        &fields,
    );
    assert_eq!(answered.status, 303, "{}", answered.body);
    let shown = l.ok(["list", "--status", "answered"]);
    assert_eq!(shown["questions"][0]["answered_by"], "alice", "{shown}");
    let history = l.ok(["history", "--id", &id.to_string()]).to_string();
    assert!(history.contains("\"channel\":\"web\""), "{history}");
    // Signing out ends the session on the ledger: the cookie no longer opens anything.
    let out = s.request(
        "POST",
        "/signout",
        &[&cookie, "Sec-Fetch-Site: same-origin", "Accept: text/html"],
        &format!("csrf={csrf}"),
    );
    assert_eq!(out.status, 200, "{}", out.body);
    assert!(tokens(&l).is_empty());
    let after = s.request("GET", "/", &["Accept: text/html", &cookie], "");
    assert_eq!(after.status, 303, "sent to sign in again");
    let api = s.request("GET", "/api/questions", &[&cookie], "");
    assert_eq!(api.status, 401);
    // Nothing secret in what the server printed, nor in the ledger's history.
    drop(s);
    let secret_value = pair.split_once('=').unwrap().1;
    let history = history_text(&l);
    for secret in [CLIENT_SECRET, secret_value, flow.split_once('=').unwrap().1] {
        assert!(!history.contains(secret), "a secret in the history");
    }
}

/// A forged or wrong ID token: refused with a clear page, no session, nothing recorded
/// as the person the token names.
fn refused_for(attack: &str, extra: &[(&str, &str)], linked: &[(&str, &str)]) -> (Reply, Ledger) {
    let port = free_port();
    let idp = Idp::start(Some(attack), port, extra).expect("node is here");
    let l = Ledger::new();
    for (person, identity) in linked {
        link(&l, person, identity);
    }
    let s = served(&l, &idp, port, &[]);
    let (back, _) = through(&s, "%2F");
    assert!(
        session(&back).is_none(),
        "{attack}: a session was set: {}",
        back.head
    );
    assert!(tokens(&l).is_empty(), "{attack}: a token was made");
    (back, l)
}

fn node_here() -> bool {
    let here = Command::new("node").arg("--version").output().is_ok();
    if !here {
        crate::common::skip("node is not installed");
    }
    here
}

#[test]
fn sqlite_only_forged_id_tokens_are_refused_and_nobody_is_signed_in() {
    if !node_here() {
        return;
    }
    let alice = [("alice", "email:alice@example.com")];
    for (attack, said) in [
        ("wrong-key", "signature"),
        ("alg-none", "signature"),
        ("other-aud", "audience"),
        ("expired", "expired"),
        ("nonce-replay", "nonce"),
        ("no-nonce", "nonce"),
        ("other-iss", "issuer"),
    ] {
        let (back, l) = refused_for(attack, &[], &alice);
        assert_eq!(back.status, 403, "{attack}: {}", back.body);
        assert!(
            back.body.to_lowercase().contains(said),
            "{attack}: {}",
            back.body
        );
        let history = history_text(&l);
        assert!(
            !history.contains("\"by\":\"alice\",\"channel\":\"web\""),
            "{history}"
        );
    }
}

#[test]
fn sqlite_only_a_stranger_an_unverified_email_and_a_recycled_one_are_refused_and_recorded() {
    if !node_here() {
        return;
    }
    // A stranger: told who to ask, and the refusal is in the history.
    let (back, l) = refused_for(
        "good",
        &[("OIDC_SUB", "eve"), ("OIDC_EMAIL", "eve@elsewhere.example")],
        &[("alice", "email:alice@example.com")],
    );
    assert_eq!(back.status, 403);
    assert!(
        back.body.contains("nobody this ledger knows"),
        "{}",
        back.body
    );
    assert!(back.body.contains("questions people link"), "{}", back.body);
    let history = history_text(&l);
    assert!(history.contains("eve@elsewhere.example"), "{history}");
    assert!(history.contains("\"event\":\"refused\""), "{history}");
    // An address the provider has not verified says nothing of who signs in.
    let (back, _) = refused_for(
        "unverified-email",
        &[],
        &[("alice", "email:alice@example.com")],
    );
    assert_eq!(back.status, 403);
    assert!(back.body.contains("not verified"), "{}", back.body);
    // alice signed in once (her sub recorded); the same address on another account of
    // the same provider later is not alice.
    let port = free_port();
    let idp = Idp::start(Some("good"), port, &[]).unwrap();
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    let s = served(&l, &idp, port, &[]);
    let (first, _) = through(&s, "%2F");
    assert!(session(&first).is_some(), "{}", first.body);
    let switched = get(
        &format!(
            "{}/attack?sub=alice-recycled&email=alice@example.com",
            idp.issuer
        ),
        "",
    );
    assert_eq!(switched.status, 200, "{}", switched.body);
    let (recycled, _) = through(&s, "%2F");
    assert_eq!(recycled.status, 403, "{}", recycled.body);
    assert!(
        recycled.body.contains("another account"),
        "{}",
        recycled.body
    );
    assert_eq!(tokens(&l).len(), 1, "only the first sign-in made a session");
}

#[test]
fn sqlite_only_a_key_the_provider_rolls_in_is_fetched_and_a_domain_not_admitted_is_refused() {
    let port = free_port();
    let Some(idp) = Idp::start(Some("good"), port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    let s = served(&l, &idp, port, &[]);
    let (first, _) = through(&s, "%2F");
    assert!(session(&first).is_some(), "{}", first.body);
    // The provider rolls a new key in: a token signed with it names a kid the server has
    // not seen; it reads the keys again, and the sign-in holds.
    assert_eq!(
        get(&format!("{}/attack?mode=rotated", idp.issuer), "").status,
        200
    );
    let (rotated, _) = through(&s, "%2F");
    assert!(session(&rotated).is_some(), "{}", rotated.body);
    drop(s);
    // Only verified addresses of the domains admitted, even for a person linked.
    let s = served(&l, &idp, port, &["--oidc-allow-domain", "corp.example"]);
    let (refused, _) = through(&s, "%2F");
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("corp.example"), "{}", refused.body);
    drop(s);
    let s = served(&l, &idp, port, &["--oidc-allow-domain", "Example.com"]);
    let (admitted, _) = through(&s, "%2F");
    assert!(session(&admitted).is_some(), "{}", admitted.body);
}

#[test]
fn sqlite_only_a_callback_this_browser_did_not_start_and_an_open_redirect_are_refused() {
    let port = free_port();
    let Some(idp) = Idp::start(Some("good"), port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    let s = served(&l, &idp, port, &[]);
    // Login CSRF: a callback with a code from someone else's sign-in, and no flow cookie.
    let start = s.request("GET", "/signin", &["Accept: text/html"], "");
    let back = get(&location(&start), "");
    let path = location(&back).strip_prefix(&s.base()).unwrap().to_string();
    let forced = s.request("GET", &path, &["Accept: text/html"], "");
    assert_eq!(forced.status, 400, "{}", forced.body);
    assert!(
        forced.body.contains("not begun in this browser"),
        "{}",
        forced.body
    );
    // A state that is not the flow's.
    let (pair, _) = set_cookies(&start).into_iter().next().unwrap();
    let other = s.request("GET", "/signin", &["Accept: text/html"], "");
    let back = get(&location(&other), "");
    let path = location(&back).strip_prefix(&s.base()).unwrap().to_string();
    let mismatched = s.request(
        "GET",
        &path,
        &["Accept: text/html", &format!("Cookie: {pair}")],
        "",
    );
    assert_eq!(mismatched.status, 400, "{}", mismatched.body);
    assert!(mismatched.body.contains("another sign-in"));
    assert!(tokens(&l).is_empty());
    // The return address is a path of this server, whatever was asked.
    for evil in [
        "%2F%2Fevil.example%2F",
        "https%3A%2F%2Fevil.example%2F",
        "%2F%5Cevil.example",
    ] {
        let (back, _) = through(&s, evil);
        assert_eq!(back.status, 303);
        assert_eq!(location(&back), "/", "{evil}");
    }
}

#[test]
fn sqlite_only_a_session_of_another_server_and_a_revoked_one_open_nothing() {
    let port = free_port();
    let Some(idp) = Idp::start(Some("good"), port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    let s = served(&l, &idp, port, &[]);
    let (back, _) = through(&s, "%2F");
    let pair = session(&back).expect("signed in");
    let value = pair.split_once('=').unwrap().1.to_string();
    // Another ledger's server (same cookie name on its own port) knows nothing of it.
    let other = Ledger::new();
    let o = Served::start(&other, &[]);
    let cookie = format!("Cookie: questions_token_{}={value}", o.port);
    let refused = o.request("GET", "/api/questions", &[&cookie], "");
    assert_eq!(refused.status, 401);
    // `people revoke` ends every session and token of the person at once.
    l.ok(["token", "create", "alice-phone", "--person", "alice"]);
    assert_eq!(l.ok(["people", "sessions", "alice"])["count"], 2);
    let revoked = l.ok(["people", "revoke", "alice"]);
    assert_eq!(revoked["revoked"].as_array().unwrap().len(), 2, "{revoked}");
    let cookie = format!("Cookie: {pair}");
    let after = s.request("GET", "/api/questions", &[&cookie], "");
    assert_eq!(after.status, 401);
    let page = s.request("GET", "/", &["Accept: text/html", &cookie], "");
    assert_eq!(page.status, 303);
    assert_eq!(l.ok(["people", "sessions", "alice"])["count"], 0);
}

#[test]
fn serve_refuses_a_provider_it_cannot_trust_or_reach_and_a_secret_on_the_command_line() {
    let l = Ledger::new();
    let plain = l.run([
        "serve",
        "--oidc-issuer",
        "http://idp.example.com",
        "--oidc-client-id",
        "x",
        "--oidc-client-secret-env",
        "HOME",
    ]);
    assert_eq!(plain.code, 2, "{plain:?}");
    assert!(plain.json["error"].as_str().unwrap().contains("https://"));
    let no_secret = l.run([
        "serve",
        "--oidc-issuer",
        "https://idp.example.com",
        "--oidc-client-id",
        "x",
    ]);
    assert_eq!(no_secret.code, 2, "{no_secret:?}");
    assert!(no_secret.json["error"]
        .as_str()
        .unwrap()
        .contains("--oidc-client-secret-env"));
    let missing = l.run([
        "serve",
        "--oidc-issuer",
        "https://idp.example.com",
        "--oidc-client-id",
        "x",
        "--oidc-client-secret-env",
        "NO_SUCH_VARIABLE_HERE",
    ]);
    assert_eq!(missing.code, 2, "{missing:?}");
    // Nobody there: said at start, not at the first sign-in.
    let port = free_port();
    let gone = l.run([
        "serve",
        "--oidc-issuer",
        &format!("http://127.0.0.1:{port}"),
        "--oidc-client-id",
        "x",
        "--oidc-client-secret-env",
        "HOME",
    ]);
    assert_eq!(gone.code, 1, "{gone:?}");
    assert_eq!(gone.error_code(), "unavailable");
    assert!(gone.json["error"].as_str().unwrap().contains("discovery"));
}

/// Types into the field `css` of the page.
async fn type_in(c: &fantoccini::Client, css: &str, text: &str) {
    c.find(fantoccini::Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .send_keys(text)
        .await
        .unwrap();
}

async fn click(c: &fantoccini::Client, css: &str) {
    c.find(fantoccini::Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap();
}

/// At the provider's own login form (oidc-provider's): the account, any password.
async fn sign_in_at_provider(c: &fantoccini::Client, account: &str) {
    use crate::browser::{eventually, present};
    eventually(
        Duration::from_secs(20),
        "the provider's login form",
        || async { present(c, "input[name=login]").await },
    )
    .await;
    type_in(c, "input[name=login]", account).await;
    type_in(c, "input[name=password]", "any password").await;
    click(c, "button[type=submit]").await;
}

#[test]
fn sqlite_only_chromium_signs_alice_in_at_a_real_provider_and_refuses_a_stranger_and_a_person_taken_out(
) {
    use crate::browser::{eventually, present, text, with_browser_args};
    if !crate::browser::chromium_here() {
        return;
    }
    let port = free_port();
    let Some(idp) = Idp::start(None, port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    link(&l, "bob", "email:bob@example.com");
    let id = l.log("deploy", "Deploy build 42?");
    let Some((ca, cert, key)) = crate::common::throwaway_ca(l.dir.path(), "signin") else {
        return crate::common::skip("openssl is not installed");
    };
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let s = served(
        &l,
        &idp,
        port,
        &["--tls-cert", cert, "--tls-key", key, "--log-format", "none"],
    );
    let inbox = format!("https://127.0.0.1:{port}/");
    let ledger = &l;
    let ca = ca.as_path();
    let shots = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let tls = ["--ignore-certificate-errors", "--window-size=390,844"];
    // alice opens the inbox, is sent to the provider's own form, and comes back signed in.
    with_browser_args(true, &tls, |c| async move {
        c.goto(&inbox).await.unwrap();
        sign_in_at_provider(&c, "alice").await;
        eventually(Duration::from_secs(20), "back in the inbox", || async {
            present(&c, "form.who").await
        })
        .await;
        assert!(text(&c, "form.who").await.contains("alice"));
        let png = c.screenshot().await.unwrap();
        std::fs::write(shots.join("signed-in-phone.png"), png).unwrap();
        type_in(&c, &format!("#q{id}t"), "yes, ship it").await;
        click(&c, &format!("#q-{id} button.primary")).await;
        eventually(
            Duration::from_secs(10),
            "the answer is confirmed",
            || async { present(&c, "#flash.done").await },
        )
        .await;
        // On her laptop, `questions login`: the code it shows, approved in this browser.
        let config = tempfile::tempdir().unwrap();
        let base = format!("https://127.0.0.1:{port}");
        let mut child = login_trusting(ledger, config.path(), &base, Some(ca));
        let code = shown_code(&mut child);
        c.goto(&format!("{base}/device?code={code}")).await.unwrap();
        let shown = text(&c, "main").await;
        assert!(shown.contains("alice"), "{shown}");
        assert_eq!(
            c.find(fantoccini::Locator::Css("#code"))
                .await
                .unwrap()
                .prop("value")
                .await
                .unwrap()
                .as_deref(),
            Some(code.as_str())
        );
        let png = c.screenshot().await.unwrap();
        std::fs::write(shots.join("device-phone.png"), png).unwrap();
        click(&c, "button[value=approve]").await;
        eventually(Duration::from_secs(10), "approved", || async {
            c.source()
                .await
                .unwrap_or_default()
                .contains("signed in as alice")
        })
        .await;
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        c.goto(&inbox).await.unwrap();
        eventually(Duration::from_secs(10), "the inbox again", || async {
            present(&c, "form.who").await
        })
        .await;
        click(&c, "form.who button").await;
        eventually(Duration::from_secs(10), "signed out", || async {
            c.source()
                .await
                .unwrap_or_default()
                .contains("You are signed out")
        })
        .await;
    });
    let q = l.question(id);
    assert_eq!(q["answer"], "yes, ship it");
    assert_eq!(q["answered_by"], "alice");
    assert_eq!(q["channel"], "web");
    let left = tokens(&l);
    assert_eq!(
        left.len(),
        1,
        "signing out ended the session, not the login: {left:?}"
    );
    assert_eq!(left[0]["source"], "login");
    l.ok(["people", "revoke", "alice"]);
    // A stranger signs in at the provider and is told who to ask; it is recorded.
    with_browser_args(true, &tls, |c| async move {
        c.goto(&format!("https://127.0.0.1:{port}/")).await.unwrap();
        sign_in_at_provider(&c, "eve").await;
        eventually(Duration::from_secs(20), "the refusal", || async {
            c.source()
                .await
                .unwrap_or_default()
                .contains("nobody this ledger knows")
        })
        .await;
    });
    assert!(history_text(&l).contains("eve@elsewhere.example"));
    // bob signs in; he is taken out (every session ended, his link removed): his next
    // request is refused, though the provider still knows him.
    l.ok(["log", "--stage", "deploy", "--question", "Roll back?"]);
    let issuer = idp.issuer.clone();
    with_browser_args(true, &tls, |c| async move {
        c.goto(&format!("https://127.0.0.1:{port}/")).await.unwrap();
        sign_in_at_provider(&c, "bob").await;
        eventually(Duration::from_secs(20), "bob in the inbox", || async {
            present(&c, "form.who").await
        })
        .await;
        let revoked = ledger.ok(["people", "revoke", "bob"]);
        assert_eq!(revoked["revoked"].as_array().unwrap().len(), 1);
        ledger.ok(["people", "unlink", "bob", "email:bob@example.com"]);
        let oidc = format!("oidc:{issuer}#bob");
        ledger.ok(["people", "unlink", "bob", &oidc]);
        c.refresh().await.unwrap();
        eventually(Duration::from_secs(20), "bob refused", || async {
            c.source()
                .await
                .unwrap_or_default()
                .contains("nobody this ledger knows")
        })
        .await;
    });
    assert!(tokens(&l).is_empty());
    drop(s);
}

/// `questions login URL` run as a person would, its credentials under `config`.
fn login(l: &Ledger, config: &std::path::Path, base: &str) -> Child {
    login_trusting(l, config, base, None)
}

/// As `login`, trusting the CA `ca` (a server over TLS with a throw-away CA).
fn login_trusting(
    l: &Ledger,
    config: &std::path::Path,
    base: &str,
    ca: Option<&std::path::Path>,
) -> Child {
    let mut cmd = Command::new(crate::common::BIN);
    if let Some(ca) = ca {
        cmd.env("QUESTIONS_CA", ca);
    }
    cmd.current_dir(l.dir.path())
        .env("XDG_CONFIG_HOME", config)
        .env_remove("QUESTIONS_TOKEN")
        .env_remove("QUESTIONS_TOKEN_FILE")
        .env_remove("QUESTIONS_DB")
        .env_remove("BROWSER")
        .env_remove("DISPLAY")
        .args(["login", base, "--no-browser"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The code `questions login` shows, read from its stderr as a person reads it.
fn shown_code(child: &mut Child) -> String {
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "no code shown: {said}"
        );
        said.push_str(&line);
        if let Some(at) = line.find("the code ") {
            let code: String = line[at + 9..].chars().take(9).collect();
            std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
            return code;
        }
    }
}

/// The person whose session `cookie` is approves `code` on the server's page.
fn approve(s: &Served, cookie: &str, code: &str) -> Reply {
    let page = s.request(
        "GET",
        &format!("/device?code={code}"),
        &[cookie, "Accept: text/html"],
        "",
    );
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(code), "{}", page.body);
    let csrf = page
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the page's form token")
        .to_string();
    s.request(
        "POST",
        "/device",
        &[
            cookie,
            "Content-Type: application/x-www-form-urlencoded",
            "Sec-Fetch-Site: same-origin",
            "Accept: text/html",
        ],
        &format!("user_code={code}&decision=approve&csrf={csrf}"),
    )
}

fn remote(l: &Ledger, config: &std::path::Path, base: &str, args: &[&str]) -> crate::common::Run {
    let mut cmd = assert_cmd::Command::new(crate::common::BIN);
    cmd.current_dir(l.dir.path())
        .env("XDG_CONFIG_HOME", config)
        .env_remove("QUESTIONS_TOKEN")
        .env_remove("QUESTIONS_TOKEN_FILE")
        .env_remove("QUESTIONS_DB")
        .arg("--db")
        .arg(base)
        .args(args);
    crate::common::finish(cmd)
}

#[test]
fn questions_login_gets_a_person_s_own_token_that_logout_and_revoke_end() {
    use std::os::unix::fs::PermissionsExt;
    let port = free_port();
    let Some(idp) = Idp::start(Some("good"), port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    let id = l.log("deploy", "Deploy build 42?");
    let s = served(&l, &idp, port, &[]);
    let base = s.base();
    let (back, _) = through(&s, "%2F");
    let cookie = format!("Cookie: {}", session(&back).expect("alice's browser"));
    let config = tempfile::tempdir().unwrap();
    // Nobody logged in: the message says how to.
    let none = remote(&l, config.path(), &base, &["list"]);
    assert_eq!(none.error_code(), "unauthorized", "{none:?}");
    assert!(none.json["error"]
        .as_str()
        .unwrap()
        .contains("questions login"));
    // alice runs `questions login`, reads the code, approves it in her browser.
    let mut child = login(&l, config.path(), &base);
    let code = shown_code(&mut child);
    assert_eq!(code.len(), 9, "{code}");
    let approved = approve(&s, &cookie, &code);
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert!(
        approved.body.contains("signed in as alice"),
        "{}",
        approved.body
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["procedure"], "login");
    assert_eq!(done["person"], "alice");
    let file = config.path().join("questions/credentials.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let access = kept["servers"][&base]["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let refresh = kept["servers"][&base]["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!printed.contains(&access) && !printed.contains(&refresh));
    // The code is spent: approving it again finds nothing.
    let again = approve(&s, &cookie, &code);
    assert_eq!(again.status, 404, "{}", again.body);
    // Every command with --db https://… now acts as alice.
    let answered = remote(
        &l,
        config.path(),
        &base,
        &["answer", "--id", &id.to_string(), "--answer", "yes"],
    );
    assert_eq!(answered.code, 0, "{answered:?}");
    assert_eq!(l.question(id)["answered_by"], "alice");
    let listed = tokens(&l);
    let made = listed
        .iter()
        .find(|t| t["source"] == "login")
        .expect("a login token");
    assert_eq!(made["person"], "alice");
    assert!(made["expires_at"].is_string());
    // logout: revoked on the server and forgotten here.
    let out = remote(&l, config.path(), &base, &["logout"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json["revoked"], true, "{out:?}");
    assert!(!tokens(&l).iter().any(|t| t["source"] == "login"));
    let after = remote(&l, config.path(), &base, &["list"]);
    assert_eq!(after.error_code(), "unauthorized");
    // Logged in again, then taken out with `people revoke`: the next call is refused.
    let mut child = login(&l, config.path(), &base);
    let code = shown_code(&mut child);
    assert_eq!(approve(&s, &cookie, &code).status, 200);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(remote(&l, config.path(), &base, &["list"]).code, 0);
    l.ok(["people", "revoke", "alice"]);
    let revoked = remote(&l, config.path(), &base, &["list"]);
    assert_eq!(revoked.error_code(), "unauthorized", "{revoked:?}");
    assert!(
        revoked.json["error"]
            .as_str()
            .unwrap()
            .contains("questions login"),
        "{revoked:?}"
    );
    // The refresh token is spent with it.
    let refreshed = s.request(
        "POST",
        "/oauth/token",
        &["Content-Type: application/x-www-form-urlencoded"],
        &format!("grant_type=refresh_token&refresh_token={refresh}"),
    );
    assert_eq!(refreshed.status, 400);
    assert_eq!(refreshed.json()["error"], "invalid_grant");
    // No secret of the login in the history.
    let history = history_text(&l);
    assert!(!history.contains(&access) && !history.contains(&refresh));
}

#[test]
fn sqlite_only_a_session_unused_past_its_idle_time_or_past_its_life_opens_nothing_and_no_secret_is_logged(
) {
    let port = free_port();
    let Some(idp) = Idp::start(Some("good"), port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    l.log("deploy", "Deploy build 42?");
    let log = l.dir.path().join("serve.log");
    let start = "2026-11-21T08:00:00.000Z";
    let s = served_at(&l, &idp, port, start, &log);
    let (back, flow) = through(&s, "%2F");
    let pair = session(&back).expect("signed in");
    let cookie = format!("Cookie: {pair}");
    assert_eq!(
        s.request("GET", "/api/questions", &[&cookie], "").status,
        200
    );
    drop(s);
    // The same cookie, the same ledger, later: 11 h unused still opens the inbox (and
    // counts as use), 12 h past that use is over.
    for (now, status) in [
        ("2026-11-21T19:00:00.000Z", 200),
        ("2026-11-22T06:59:00.000Z", 200),
        ("2026-11-22T19:30:00.000Z", 401),
    ] {
        let s = served_at(&l, &idp, port, now, &l.dir.path().join("later.log"));
        let reply = s.request("GET", "/api/questions", &[&cookie], "");
        assert_eq!(reply.status, status, "at {now}: {}", reply.body);
    }
    let listed = l.run_at("2026-11-22T19:30:00.000Z", ["token", "list"]);
    assert_eq!(listed.json["tokens"][0]["expired"], true, "{listed:?}");
    // Signed in afresh and used every few hours, it still ends 7 days after the sign-in.
    let s = served_at(&l, &idp, port, start, &log);
    let (back, _) = through(&s, "%2F");
    let pair = session(&back).expect("signed in again");
    drop(s);
    let cookie = format!("Cookie: {pair}");
    let s = served_at(
        &l,
        &idp,
        port,
        "2026-11-28T07:59:00.000Z",
        &l.dir.path().join("l.log"),
    );
    assert_eq!(
        s.request("GET", "/api/questions", &[&cookie], "").status,
        401
    );
    drop(s);
    // What the provider saw (its codes) and every secret of the sign-in: in no log line,
    // no event, no page.
    let seen = get(&format!("{}/log", idp.issuer), "").body;
    let codes: Vec<String> = seen
        .split("\"code\":\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .map(str::to_string)
        .collect();
    assert!(!codes.is_empty(), "{seen}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("/signin/callback"), "{logged}");
    let history = history_text(&l);
    let session_secret = pair.split_once('=').unwrap().1.to_string();
    let flow_secret = flow.split_once('=').unwrap().1.to_string();
    let mut secrets = vec![CLIENT_SECRET.to_string(), session_secret, flow_secret];
    secrets.extend(codes);
    for secret in &secrets {
        for (what, text) in [("the server's log", &logged), ("the history", &history)] {
            assert!(!text.contains(secret.as_str()), "a secret in {what}");
        }
    }
}

/// The MCP Python SDK's OAuth client against `url`, the person's browser holding
/// `cookie`; its output lines.
#[cfg(feature = "mcp")]
fn python_oauth(url: &str, cookie: &str, calls: &[Value], consent: &str) -> Option<Vec<Value>> {
    let python = crate::mcp_clients::client(crate::mcp_clients::clients().join("venv/bin/python"))?;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/mcp_python_oauth.py"
    );
    let mut child = Command::new(python)
        .arg(script)
        .arg(url)
        .env("QUESTIONS_TEST_COOKIE", cookie)
        .env("QUESTIONS_TEST_CONSENT", consent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(calls).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

/// A form POST to the server, its reply's JSON.
#[cfg(feature = "mcp")]
fn form(s: &Served, path: &str, body: &str) -> (u16, Value) {
    let reply = s.request(
        "POST",
        path,
        &["Content-Type: application/x-www-form-urlencoded"],
        body,
    );
    let doc = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    (reply.status, doc)
}

#[test]
#[cfg(feature = "mcp")]
fn an_mcp_host_signs_in_with_the_python_sdk_s_oauth_client_and_answers_as_the_person() {
    let port = free_port();
    let Some(idp) = Idp::start(Some("good"), port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    let id = l.log("deploy", "Which region?");
    let s = served(&l, &idp, port, &[]);
    let base = s.base();
    // Discovery: what a host reads first.
    let bare = s.request("POST", "/mcp", &["Content-Type: application/json"], "{}");
    assert_eq!(bare.status, 401);
    let how = bare.header("www-authenticate").expect("a challenge");
    assert!(
        how.contains(&format!(
            "resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{how}"
    );
    let prm = s.request("GET", "/.well-known/oauth-protected-resource/mcp", &[], "");
    assert_eq!(prm.status, 200);
    assert!(prm.header("cache-control").unwrap().contains("max-age"));
    let prm = prm.json();
    assert_eq!(prm["resource"], format!("{base}/mcp"));
    assert_eq!(prm["authorization_servers"][0], base.as_str());
    let asm = s
        .request("GET", "/.well-known/oauth-authorization-server", &[], "")
        .json();
    for field in [
        "issuer",
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
    ] {
        assert!(asm[field].is_string(), "{field}: {asm}");
    }
    assert_eq!(asm["issuer"], base.as_str());
    assert_eq!(
        asm["code_challenge_methods_supported"],
        serde_json::json!(["S256"])
    );
    // alice's browser is signed in; the SDK registers, sends her to consent, trades the
    // code, and its session is hers.
    let (back, _) = through(&s, "%2F");
    let cookie = session(&back).expect("alice's browser");
    let calls = [
        serde_json::json!({"list_tools": true}),
        serde_json::json!({"tool": "record_answers",
            "arguments": {"stage": "deploy", "answers": {id.to_string(): "eu"}}}),
    ];
    let Some(out) = python_oauth(&format!("{base}/mcp"), &cookie, &calls, "allow") else {
        return;
    };
    assert_eq!(out[0]["consent"], "Connect Python SDK host?", "{out:?}");
    let tools = out[1]["tools"].as_array().unwrap();
    assert!(
        tools.contains(&serde_json::json!("record_answers")),
        "{tools:?}"
    );
    assert!(tools.contains(&serde_json::json!("vote")), "{tools:?}");
    assert_eq!(out[2]["is_error"], false, "{}", out[2]);
    let q = l.question(id);
    assert_eq!(q["answered_by"], "alice", "{q}");
    let access = out[3]["tokens"]["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let refresh = out[3]["tokens"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();
    let client_id = out[3]["client_id"].as_str().unwrap().to_string();
    let listed = tokens(&l);
    let grant = listed
        .iter()
        .find(|t| t["source"] == "oauth")
        .expect("the host's grant");
    assert_eq!(grant["person"], "alice");
    let grants = l.ok(["people", "grants", "alice"]);
    assert_eq!(
        grants["count"], 1,
        "only the host's grant, not her browser's session: {grants}"
    );
    assert_eq!(grants["tokens"][0]["source"], "oauth");
    // A refresh token rotates; the spent one used again ends the whole family.
    let (status, fresh) = form(
        &s,
        "/oauth/token",
        &format!("grant_type=refresh_token&refresh_token={refresh}"),
    );
    assert_eq!(status, 200, "{fresh}");
    let newer = fresh["access_token"].as_str().unwrap().to_string();
    assert_ne!(newer, access);
    let (status, reused) = form(
        &s,
        "/oauth/token",
        &format!("grant_type=refresh_token&refresh_token={refresh}"),
    );
    assert_eq!(
        (status, &reused["error"]),
        (400, &serde_json::json!("invalid_grant"))
    );
    let bearer = format!("Authorization: Bearer {newer}");
    let after = s.request(
        "POST",
        "/mcp",
        &[&bearer, "Content-Type: application/json"],
        "{}",
    );
    assert_eq!(after.status, 401, "the family ended with the reuse");
    assert!(!tokens(&l).iter().any(|t| t["source"] == "oauth"));
    // Nothing of the grant's secrets in the history.
    let history = history_text(&l);
    for secret in [&access, &refresh, &newer] {
        assert!(!history.contains(secret.as_str()));
    }
    let _ = client_id;
}

#[test]
#[cfg(feature = "mcp")]
fn an_authorization_request_that_does_not_hold_is_refused_before_the_person_is_asked() {
    let port = free_port();
    let Some(idp) = Idp::start(Some("good"), port, &[]) else {
        return;
    };
    let l = Ledger::new();
    link(&l, "alice", "email:alice@example.com");
    let s = served(&l, &idp, port, &[]);
    let base = s.base();
    let (back, _) = through(&s, "%2F");
    let cookie = format!("Cookie: {}", session(&back).unwrap());
    let registered = s.request(
        "POST",
        "/oauth/register",
        &["Content-Type: application/json"],
        r#"{"client_name":"Evil <b>host</b>","redirect_uris":["https://host.example/cb"]}"#,
    );
    assert_eq!(registered.status, 201, "{}", registered.body);
    let client = registered.json()["client_id"].as_str().unwrap().to_string();
    for bad in [
        r#"{"redirect_uris":["http://evil.example/cb"]}"#,
        r#"{"redirect_uris":["https://host.example/cb#frag"]}"#,
        r#"{"redirect_uris":[]}"#,
    ] {
        let refused = s.request(
            "POST",
            "/oauth/register",
            &["Content-Type: application/json"],
            bad,
        );
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
    }
    // PKCE: the RFC 7636 example pair.
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let ask = |redirect: &str, extra: &str| {
        let path = format!(
            "/oauth/authorize?response_type=code&client_id={client}&redirect_uri={}\
             &code_challenge={challenge}&code_challenge_method=S256&state=st{extra}",
            enc(redirect)
        );
        s.request("GET", &path, &[&cookie, "Accept: text/html"], "")
    };
    // Another path, another port, another host, no PKCE, plain PKCE, another resource.
    for (redirect, extra) in [
        ("https://host.example/cb2", ""),
        ("https://host.example:8443/cb", ""),
        ("https://evil.example/cb", ""),
    ] {
        let page = ask(redirect, extra);
        assert_eq!(page.status, 400, "{redirect}: {}", page.body);
        assert!(page.header("location").is_none());
    }
    let no_pkce = s.request(
        "GET",
        &format!(
            "/oauth/authorize?response_type=code&client_id={client}&redirect_uri={}",
            enc("https://host.example/cb")
        ),
        &[&cookie, "Accept: text/html"],
        "",
    );
    assert_eq!(no_pkce.status, 400);
    let other_resource = ask(
        "https://host.example/cb",
        "&resource=https%3A%2F%2Fother.example%2Fmcp",
    );
    assert_eq!(other_resource.status, 400);
    // The page names the host's claims as text and cannot be framed.
    let page = ask("https://host.example/cb", "&scope=questions%3Aread");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Evil &lt;b&gt;host&lt;/b&gt;"),
        "{}",
        page.body
    );
    assert!(page.body.contains("not answer or vote"));
    assert!(page
        .header("content-security-policy")
        .unwrap()
        .contains("frame-ancestors 'none'"));
    // Allowed read-only: the code once, with its verifier, for its redirect.
    let csrf = crate::serve::form_token(&s, &cookie);
    let allow = format!(
        "response_type=code&client_id={client}&redirect_uri={}&code_challenge={challenge}\
         &code_challenge_method=S256&scope=questions%3Aread&state=st&decision=allow&csrf={csrf}",
        enc("https://host.example/cb")
    );
    let decided = s.request(
        "POST",
        "/oauth/authorize",
        &[
            &cookie,
            "Content-Type: application/x-www-form-urlencoded",
            "Sec-Fetch-Site: same-origin",
        ],
        &allow,
    );
    assert_eq!(decided.status, 303, "{}", decided.body);
    let to = decided.header("location").unwrap();
    assert!(to.starts_with("https://host.example/cb?code="), "{to}");
    assert!(to.contains("state=st") && to.contains("iss="), "{to}");
    let code = to
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    let trade = |verifier: &str, redirect: &str| {
        form(
            &s,
            "/oauth/token",
            &format!(
                "grant_type=authorization_code&code={code}&code_verifier={verifier}\
                 &redirect_uri={}&client_id={client}",
                enc(redirect)
            ),
        )
    };
    let (status, wrong) = trade(
        "another-verifier-of-forty-three-characters-xx",
        "https://host.example/cb",
    );
    assert_eq!(
        (status, &wrong["error"]),
        (400, &serde_json::json!("invalid_grant"))
    );
    // Spent by the failed try: a code is tried once.
    let (status, _) = trade(verifier, "https://host.example/cb");
    assert_eq!(status, 400);
    // A fresh code, traded right; then a read-only token may not answer through /mcp.
    let decided = s.request(
        "POST",
        "/oauth/authorize",
        &[
            &cookie,
            "Content-Type: application/x-www-form-urlencoded",
            "Sec-Fetch-Site: same-origin",
        ],
        &allow,
    );
    let to = decided.header("location").unwrap();
    let code2 = to
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    let (status, issued) = form(
        &s,
        "/oauth/token",
        &format!(
            "grant_type=authorization_code&code={code2}&code_verifier={verifier}\
             &redirect_uri={}&client_id={client}",
            enc("https://host.example/cb")
        ),
    );
    assert_eq!(status, 200, "{issued}");
    assert_eq!(issued["token_type"], "Bearer");
    assert!(issued["expires_in"].as_i64().unwrap() <= 3600);
    let bearer = format!(
        "Authorization: Bearer {}",
        issued["access_token"].as_str().unwrap()
    );
    let works = s.request(
        "POST",
        "/mcp",
        &[&bearer, "Content-Type: application/json"],
        "{}",
    );
    assert_ne!(
        works.status, 401,
        "the grant's token opens /mcp: {}",
        works.body
    );
    let (status, replay) = form(
        &s,
        "/oauth/token",
        &format!(
            "grant_type=authorization_code&code={code2}&code_verifier={verifier}\
             &redirect_uri={}&client_id={client}",
            enc("https://host.example/cb")
        ),
    );
    assert_eq!(status, 400, "a code replayed: {replay}");
    // The replay ended what the code made.
    let r = s.request(
        "POST",
        "/mcp",
        &[&bearer, "Content-Type: application/json"],
        "{}",
    );
    assert_eq!(r.status, 401, "{}", r.body);
    let _ = base;
}

/// `text` as a query's value.
pub(crate) fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
