//! `questions relay` on email (§14), against real servers on loopback
//! (tests/fixtures/mailhost.py): dovecot serving IMAP (IDLE) from Maildirs, and an
//! aiosmtpd MTA that verifies DKIM with python3-dkim, stamps `Authentication-Results`
//! for `mx.relay.test` and delivers into dovecot's Maildirs. The person's mail client
//! signs with python3-dkim. What every channel promises is the channel suite's
//! (channel_suite.rs, run here through `Email` below); what mail alone does is a test
//! here. They run on the engine the pass gives (SQLite, PostgreSQL, PgBouncer).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::channel_suite::{ChannelUnderTest, Who};
use crate::common::*;
use crate::relay_harness::{self, me, Relay};
use serde_json::Value;

const AUTHSERV: &str = "mx.relay.test";
const RELAY: &str = "relay@relay.test";
const ME: &str = "me@person.test";
const BOB: &str = "bob@person.test";
const STRANGER: &str = "stranger@person.test";
const PASSWORD: &str = "secret-relay";
const PYTHON: &str = "/usr/bin/python3";

/// Why the mail host cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !Path::new("/usr/sbin/dovecot").exists() {
        return Some("dovecot is not installed (Debian dovecot-imapd)".into());
    }
    let modules = Command::new(PYTHON)
        .args(["-c", "import aiosmtpd, dkim"])
        .output();
    if !modules.is_ok_and(|o| o.status.success()) {
        return Some(
            "python3-aiosmtpd and python3-dkim are not installed (Debian packages)".into(),
        );
    }
    if Command::new("openssl").arg("version").output().is_err() {
        return Some("openssl is not installed".into());
    }
    None
}

struct MailHost {
    child: Child,
    dir: PathBuf,
    smtp: u16,
    imap: u16,
    /// With `--tls`: the servers the relay reaches over TLS.
    tls: Option<TlsPorts>,
}

/// mailhost.py `--tls`: submission with STARTTLS required, SMTP in implicit TLS, IMAPS,
/// all with a certificate the throw-away CA `ca` signed (dovecot's `imap` port is then
/// STARTTLS with `ssl = required`).
struct TlsPorts {
    submission: u16,
    smtps: u16,
    imaps: u16,
    ca: String,
}

impl MailHost {
    fn start(l: &Ledger) -> MailHost {
        MailHost::with(l, &[])
    }

    /// With more of mailhost.py's flags (`--no-idle`).
    fn with(l: &Ledger, flags: &[&str]) -> MailHost {
        let dir = l.dir.path().join("mailhost");
        let mut child = Command::new(PYTHON)
            .arg(fixture_path())
            .arg("serve")
            .arg(&dir)
            .arg(AUTHSERV)
            .args([
                format!("relay:{RELAY}"),
                format!("me:{ME}"),
                format!("bob:{BOB}"),
                format!("stranger:{STRANGER}"),
            ])
            .args(["--domains", "person.test", "evil.test"])
            .arg("--key-cache")
            .arg(Path::new(env!("CARGO_TARGET_TMPDIR")).join("dkim-keys"))
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let ports: Value = serde_json::from_str(&first)
            .unwrap_or_else(|_| panic!("the mail host did not start: {first}"));
        let port = |name: &str| u16::try_from(ports[name].as_u64().unwrap()).unwrap();
        MailHost {
            child,
            dir,
            smtp: port("smtp"),
            imap: port("imap"),
            tls: ports["ca"].as_str().map(|ca| TlsPorts {
                submission: port("submission"),
                smtps: port("smtps"),
                imaps: port("imaps"),
                ca: ca.to_string(),
            }),
        }
    }

    /// The messages in `user`'s mailbox, oldest first.
    fn mailbox(&self, user: &str) -> Vec<Value> {
        let maildir = self.dir.join("mail").join(user).join("Maildir");
        let out = Command::new(PYTHON)
            .arg(fixture_path())
            .arg("read")
            .arg(&maildir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    /// Waits until `user`'s mailbox has a message `f` picks; it.
    fn until(&self, user: &str, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(m) = self.mailbox(user).into_iter().find(|m| f(m)) {
                return m;
            }
            assert!(
                Instant::now() < end,
                "{user} never got {what}: {:#?}",
                self.mailbox(user)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The card of question `id` in `user`'s mailbox.
    fn card(&self, user: &str, id: i64) -> Value {
        let head = format!("Question {id} ");
        self.until(user, &format!("the card of question {id}"), |m| {
            m["subject"].as_str().unwrap().starts_with(&head)
        })
    }

    /// Sends a message as `from`; `sign`: the domain whose key signs it.
    fn send(&self, mail: &Mail) -> String {
        let mut cmd = Command::new(PYTHON);
        cmd.arg(fixture_path())
            .arg("send")
            .arg(self.smtp.to_string())
            .args(["--from", mail.from, "--to", mail.to, "--body", mail.body]);
        if let Some(r) = mail.in_reply_to {
            cmd.args(["--in-reply-to", r]);
        }
        if let Some(domain) = mail.sign {
            let key = self.dir.join("keys").join(format!("{domain}.pem"));
            cmd.arg("--sign").arg(format!("{domain}={}", key.display()));
        }
        if let Some(a) = mail.alter {
            cmd.args(["--alter", a]);
        }
        for h in mail.headers {
            cmd.args(["--header", h]);
        }
        if let Some(id) = mail.message_id {
            cmd.args(["--message-id", id]);
        }
        cmd.args(["--times", &mail.times.to_string()]);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sent: Value = serde_json::from_slice(&out.stdout).unwrap();
        sent["message_id"].as_str().unwrap().to_string()
    }

    /// What the MTA stamped on each message it took, in order.
    fn stamped(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("mta.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|s| s["from"] != WARM_UP)
            .collect()
    }
}

impl Drop for MailHost {
    fn drop(&mut self) {
        // Its stdin closed, the host stops dovecot and itself.
        drop(self.child.stdin.take());
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mailhost.py")
}

/// A message from the person's mail client.
struct Mail<'a> {
    from: &'a str,
    to: &'a str,
    body: &'a str,
    in_reply_to: Option<&'a str>,
    sign: Option<&'a str>,
    alter: Option<&'a str>,
    headers: &'a [&'a str],
    message_id: Option<&'a str>,
    times: u32,
}

impl<'a> Mail<'a> {
    /// A reply to `card`, signed by its sender's domain.
    fn reply(from: &'a str, card: &'a Value, body: &'a str) -> Mail<'a> {
        Mail {
            from,
            to: card["reply_to"].as_str().unwrap(),
            body,
            in_reply_to: card["message_id"].as_str(),
            sign: Some("person.test"),
            alter: None,
            headers: &[],
            message_id: None,
            times: 1,
        }
    }

    /// A new message to the relay's address, signed by its sender's domain.
    fn to_relay(from: &'a str, body: &'a str) -> Mail<'a> {
        Mail {
            from,
            to: RELAY,
            body,
            in_reply_to: None,
            sign: Some("person.test"),
            alter: None,
            headers: &[],
            message_id: None,
            times: 1,
        }
    }
}

impl Relay {
    /// Once it reads the mailbox: a relay's first start reads only the mail that arrives
    /// after it opened the mailbox, and its start line comes before that.
    fn email(l: &Ledger, host: &MailHost, env: &[(&str, &str)]) -> Relay {
        let relay = Relay::with_config(l, host.smtp, host.imap, "tls = \"none\"\n", env);
        reading(l, host);
        relay
    }

    /// With the SMTP and IMAP ports given and `more` lines in `[email]` (`tls`,
    /// `ca_file`).
    fn with_config(l: &Ledger, smtp: u16, imap: u16, more: &str, env: &[(&str, &str)]) -> Relay {
        let config = format!(
            "[email]\nsmtp = \"127.0.0.1:{smtp}\"\nimap = \"127.0.0.1:{imap}\"\naddress = \"{RELAY}\"\n\
             username_env = \"MAIL_USER\"\npassword_env = \"MAIL_PASSWORD\"\n{more}\
             authserv_id = \"{AUTHSERV}\"\n"
        );
        let env: Vec<(&str, &str)> = [("MAIL_USER", "relay")]
            .into_iter()
            .chain(env.iter().copied())
            .collect();
        Relay::run(l, "email", &config, &[("MAIL_PASSWORD", PASSWORD)], &env)
    }
}

/// The runner is `me` at ME and bob is BOB, linked by the runner as an admin of the
/// group `people`.
fn people(l: &Ledger) -> String {
    relay_harness::people(l, &format!("email:{ME}"), &format!("email:{BOB}"))
}

fn events_of(l: &Ledger, id: i64) -> Vec<Value> {
    l.ok(["history", "--id", &id.to_string()])["events"]
        .as_array()
        .unwrap()
        .clone()
}

fn kinds(l: &Ledger, id: i64, kind: &str) -> usize {
    events_of(l, id)
        .iter()
        .filter(|e| e["event"] == kind)
        .count()
}

/// Every event of the ledger (`questions events`).
fn all_events(l: &Ledger) -> Vec<Value> {
    let out = l.command().arg("events").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits until the running relay reads its mailbox: a message from WARM_UP, nobody
/// linked, sent again each second until the relay records its refusal. The tests'
/// own counts leave WARM_UP's mail and refusals out.
fn reading(l: &Ledger, host: &MailHost) {
    let identity = format!("email:{WARM_UP}");
    let refused = || {
        all_events(l)
            .iter()
            .any(|e| e["event"] == "refused" && e["detail"]["identity"] == identity.as_str())
    };
    let end = Instant::now() + Duration::from_mins(1);
    loop {
        host.send(&Mail::to_relay(WARM_UP, "hello"));
        let again = Instant::now() + Duration::from_secs(1);
        while Instant::now() < again {
            if refused() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(Instant::now() < end, "the relay never read its mailbox");
    }
}

/// Waits until `n` refused events name email identities (WARM_UP's aside); them.
fn refused(l: &Ledger, n: usize) -> Vec<Value> {
    let end = Instant::now() + Duration::from_secs(20);
    let warm_up = format!("email:{WARM_UP}");
    loop {
        let found: Vec<Value> = all_events(l)
            .into_iter()
            .filter(|e| {
                e["event"] == "refused"
                    && e["channel"] == "email"
                    && e["detail"]["identity"] != warm_up.as_str()
            })
            .collect();
        if found.len() >= n {
            return found;
        }
        assert!(
            Instant::now() < end,
            "only {} refused events: {found:?}",
            found.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn freeform(l: &Ledger, stage: &str, text: &str) -> i64 {
    l.log(stage, text)
}

/// Whether a message is the relay saying an answer was recorded.
fn recorded(m: &Value) -> bool {
    m["body"]
        .as_str()
        .unwrap()
        .trim_start()
        .starts_with("recorded")
}

/// What `read_past` answers its own question with.
const MARKER: &str = "marker-answer";

/// Logs a question of its own, replies to its card as the runner and waits for the
/// relay's "recorded": the relay, which reads its mailbox in order, has read past every
/// message that came before this one (and sent what it had to say of them).
fn read_past(l: &Ledger, host: &MailHost, text: &str) {
    let id = l.log("marker", text);
    let card = host.card("me", id);
    let sent = host.send(&Mail::reply(ME, &card, MARKER));
    host.until("me", "the marker recorded", |m| {
        m["in_reply_to"] == sent.as_str() && recorded(m)
    });
    assert_eq!(l.question(id)["answer"], MARKER);
}

#[test]
fn relay_email_a_reply_is_recorded_as_its_text_above_the_quote() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    let me = people(&l);
    let id = freeform(&l, "design", "Which database, and why?");
    let relay = Relay::email(&l, &host, &[]);
    let card = host.card("me", id);
    assert_eq!(card["from"], RELAY);
    assert_eq!(card["auto_submitted"], "auto-generated");
    let reply_to = card["reply_to"].as_str().unwrap();
    assert!(
        reply_to.starts_with("relay+") && reply_to.ends_with("@relay.test"),
        "{reply_to}"
    );
    let body = card["body"].as_str().unwrap();
    assert!(body.contains("Which database, and why?"), "{body}");
    assert!(body.contains("Reply above this line"), "{body}");
    // Bob's card has another reply address: one per person and card.
    assert_ne!(host.card("bob", id)["reply_to"], card["reply_to"]);
    let quoted: String = body.lines().map(|l| format!("> {l}\n")).collect();
    let text = format!(
        "PostgreSQL 16, for its JSON\noperators.\n\nOn Fri, 27 Nov 2026, relay <{RELAY}> wrote:\n{quoted}"
    );
    host.send(&Mail::reply(ME, &card, &text));
    let said = host.until("me", "the relay's answer", recorded);
    assert!(!said["in_reply_to"].as_str().unwrap().is_empty());
    let q = l.question(id);
    assert_eq!(q["answer"], "PostgreSQL 16, for its JSON\noperators.");
    assert_eq!(q["answered_by"], me.as_str());
    assert_eq!(q["channel"], "email");
    let answered = events_of(&l, id)
        .into_iter()
        .find(|e| e["event"] == "answered")
        .unwrap();
    assert_eq!(answered["detail"]["identity"], format!("email:{ME}"));
    assert_eq!(relay.stop().code(), Some(0));
}

#[test]
fn relay_email_senders_not_vouched_for_record_nothing_and_get_no_mail() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    people(&l);
    let id = freeform(&l, "design", "Which database?");
    let _relay = Relay::email(&l, &host, &[]);
    let card = host.card("me", id);
    let forged = format!("Authentication-Results: {AUTHSERV}; dkim=pass header.d=person.test");
    let forged = [forged.as_str()];
    let sends = [
        // Signed by its own domain, vouched for, and linked to nobody.
        Mail::reply(STRANGER, &card, "SQLite"),
        // Unsigned.
        Mail {
            sign: None,
            ..Mail::reply(ME, &card, "SQLite")
        },
        // Changed after it was signed: dkim=fail.
        Mail {
            alter: Some("MySQL=SQLite"),
            ..Mail::reply(ME, &card, "MySQL")
        },
        // Unsigned, with a passing result of the trusted authserv-id written below the
        // MTA's own.
        Mail {
            sign: None,
            headers: &forged,
            ..Mail::reply(ME, &card, "SQLite")
        },
        // Signed by a domain that is not the From's.
        Mail {
            sign: Some("evil.test"),
            ..Mail::reply(ME, &card, "SQLite")
        },
    ];
    for mail in &sends {
        host.send(mail);
    }
    let said: Vec<String> = host
        .stamped()
        .iter()
        .filter(|s| s["from"] != RELAY)
        .map(|s| s["results"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        said,
        [
            format!("{AUTHSERV}; dkim=pass header.d=person.test"),
            format!("{AUTHSERV}; dkim=none"),
            format!("{AUTHSERV}; dkim=fail header.d=person.test"),
            format!("{AUTHSERV}; dkim=none"),
            format!("{AUTHSERV}; dkim=pass header.d=evil.test"),
        ]
    );
    let refused = refused(&l, 5);
    let whys: Vec<&str> = refused
        .iter()
        .map(|e| e["detail"]["refused"].as_str().unwrap())
        .collect();
    assert!(whys[0].contains("not linked"), "{whys:?}");
    for why in &whys[1..] {
        assert!(why.contains("not vouched for"), "{whys:?}");
    }
    assert!(refused.iter().all(|e| e["answered_by"].is_null()));
    assert_eq!(l.question(id)["status"], "pending", "nothing was recorded");
    // The relay was reading all along: my signed reply, after them, is recorded.
    host.send(&Mail::reply(ME, &card, "SQLite"));
    host.until("me", "the relay's answer", recorded);
    assert_eq!(l.question(id)["answer"], "SQLite");
    // Read in order, the refused were behind it: nobody was mailed back for them. My
    // mailbox holds the card and the answer to my reply, the stranger's nothing.
    let mine = host.mailbox("me");
    assert_eq!(mine.len(), 2, "{mine:?}");
    assert!(recorded(&mine[1]), "{mine:?}");
    assert!(host.mailbox("stranger").is_empty());
}

/// What binds a reply to its card in mail: its reply address and its thread (the channel
/// suite has a forged address and another person's card).
#[test]
fn relay_email_a_reply_out_of_its_cards_thread_or_without_a_reply_address_or_text_records_nothing()
{
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    people(&l);
    let id = freeform(&l, "design", "Which database?");
    let _relay = Relay::email(&l, &host, &[]);
    let card = host.card("me", id);
    let bobs = host.card("bob", id);
    // My reply address, in the thread of bob's card.
    host.send(&Mail {
        in_reply_to: bobs["message_id"].as_str(),
        ..Mail::reply(ME, &card, "SQLite")
    });
    // No reply address at all, though in the card's thread.
    host.send(&Mail {
        to: RELAY,
        ..Mail::reply(ME, &card, "SQLite")
    });
    // Mine, bound to my card, with nothing above the quote.
    host.send(&Mail::reply(
        ME,
        &card,
        "On Fri, 27 Nov 2026, relay wrote:\n> Which database?",
    ));
    let refused = refused(&l, 3);
    let whys: Vec<&str> = refused
        .iter()
        .map(|e| e["detail"]["refused"].as_str().unwrap())
        .collect();
    assert!(whys[0].contains("not in the thread"), "{whys:?}");
    assert!(
        whys[1].contains("not an answer to a question card"),
        "{whys:?}"
    );
    assert_eq!(l.question(id)["status"], "pending");
    // Linked and vouched for, I am told why a reply was refused (the empty one here).
    host.until("me", "why", |m| {
        m["body"].as_str().unwrap().contains("no text above")
    });
}

#[test]
fn relay_email_a_pairing_code_is_taken_from_a_signed_message_alone() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    let me = me(&l);
    let paired = l.ok(["relay", "pair", "email", &me]);
    let code = paired["code"].as_str().unwrap().to_string();
    let _relay = Relay::email(&l, &host, &[]);
    // Unsigned, the code is not taken (and nobody is mailed).
    let body = format!("my code: {code}");
    let unsigned = Mail {
        to: RELAY,
        in_reply_to: None,
        sign: None,
        alter: None,
        headers: &[],
        message_id: None,
        times: 1,
        from: ME,
        body: &body,
    };
    host.send(&unsigned);
    refused(&l, 1);
    assert!(!l.ok(["people", "list"]).to_string().contains(ME));
    host.send(&Mail {
        sign: Some("person.test"),
        ..unsigned
    });
    host.until("me", "linked", |m| {
        m["body"].as_str().unwrap().contains("linked")
    });
    assert!(l
        .ok(["people", "list"])
        .to_string()
        .contains(&format!("email:{ME}")));
    // A card comes to the address now.
    let id = freeform(&l, "design", "Which database?");
    host.card("me", id);
}

#[test]
fn relay_email_an_approver_rejects_with_a_reason() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    let me = people(&l);
    let logged = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Deploy build 42?",
        "--approval",
        "--approvers",
        &format!("{me},bob"),
        "--min",
        "1",
    ]);
    let id = logged["question_id"].as_i64().unwrap();
    let _relay = Relay::email(&l, &host, &[]);
    let bobs = host.card("bob", id);
    assert!(bobs["body"]
        .as_str()
        .unwrap()
        .contains("Reply APPROVE, or REJECT and a reason"));
    host.send(&Mail::reply(
        BOB,
        &bobs,
        "Reject: the migration is not reviewed yet.\n\n> Question",
    ));
    host.until("bob", "the answer", recorded);
    let q = l.question(id);
    assert_eq!(q["approval"]["votes"][0]["by"], "bob");
    assert_eq!(q["approval"]["votes"][0]["vote"], "reject");
    assert_eq!(
        q["approval"]["votes"][0]["comment"],
        "the migration is not reviewed yet."
    );
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 1);
}

#[test]
fn relay_email_a_server_without_idle_is_polled() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::with(&l, &["--no-idle"]);
    let me = people(&l);
    let id = freeform(&l, "design", "Which database?");
    let relay = Relay::email(&l, &host, &[]);
    let card = host.card("me", id);
    host.send(&Mail::reply(ME, &card, "SQLite"));
    host.until("me", "the answer", recorded);
    assert_eq!(l.question(id)["answered_by"], me.as_str());
    assert_eq!(relay.stop().code(), Some(0));
    // dovecot logs the relay's session when it ends, with the command it was in.
    let log = host.dir.join("dovecot.log");
    let end = Instant::now() + Duration::from_secs(10);
    let said = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = text
            .lines()
            .find(|l| l.contains("imap(relay)") && l.contains("Disconnected"))
        {
            break line.to_string();
        }
        assert!(
            Instant::now() < end,
            "dovecot never logged the relay's logout: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !said.contains("IDLE"),
        "the relay idled where IDLE was not offered: {said}"
    );
}

/// The email transcript in docs/guide/relay.md is a real run against the mail servers
/// of tests/fixtures/mailhost.py: a change of what the relay sends, says or records that
/// leaves the guide behind fails here (`QUESTIONS_WRITE_DOCS=1` writes the run there
/// instead).
#[test]
fn relay_email_the_guide_s_transcript_is_what_the_relay_does() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    let admin = me(&l);
    let mut out = String::new();
    l.ok(["group", "create", "people", "--admins", &admin]);
    let pair = l.run(["relay", "pair", "email", "alice"]);
    out.push_str(&format!(
        "$ questions relay pair email alice\n{}\n",
        pair.stdout.trim_end()
    ));
    let code = pair.json["code"].as_str().unwrap().to_string();
    let id = l.log("deploy", "Which region first?");
    out.push_str("$ questions log --stage deploy --question 'Which region first?'\n");
    let relay = Relay::email(&l, &host, &[]);
    out.push_str("$ questions relay --config relay.toml &\n{\"ok\":true,\"procedure\":\"relay\",\"channels\":[\"email\"]}\n");
    let body = format!("{code}\n");
    host.send(&Mail::to_relay(ME, &body));
    let linked = host.until("me", "linked", |m| {
        m["body"].as_str().unwrap().contains("linked")
    });
    out.push_str(&format!(
        "# alice mails {RELAY} the code from {ME} (her domain signs with DKIM); the answer:\n#   {}\n",
        linked["body"].as_str().unwrap().trim()
    ));
    let card = host.card("me", id);
    out.push_str("# her card:\n");
    for key in ["from", "to", "subject", "reply_to", "message_id"] {
        out.push_str(&format!("#   {key}: {}\n", card[key].as_str().unwrap()));
    }
    out.push_str(&format!(
        "#\n#   {}\n",
        card["body"]
            .as_str()
            .unwrap()
            .trim()
            .replace('\n', "\n#   ")
    ));
    let quoted: String = card["body"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| format!("> {l}\n"))
        .collect();
    let text =
        format!("eu-west first, then the rest.\n\nOn Fri, 27 Nov 2026, {RELAY} wrote:\n{quoted}");
    host.send(&Mail::reply(ME, &card, &text));
    let said = host.until("me", "the answer", recorded);
    out.push_str(&format!(
        "# she replies \"eu-west first, then the rest.\" above the quote; the relay answers in the thread:\n#   {}\n",
        said["body"].as_str().unwrap().trim()
    ));
    // A forged one: unsigned, from her address.
    host.send(&Mail {
        sign: None,
        ..Mail::reply(ME, &card, "us-east first")
    });
    let refused = refused(&l, 1);
    let answered = events_of(&l, id)
        .into_iter()
        .find(|e| e["event"] == "answered")
        .unwrap();
    out.push_str(&format!(
        "$ questions history --id {id}   # its answered event, shortened:\n{}\n",
        serde_json::json!({
            "event": answered["event"], "answered_by": answered["answered_by"],
            "channel": answered["channel"], "answer": answered["after"]["answer"],
            "detail": answered["detail"],
        })
    ));
    out.push_str(&format!(
        "# the same reply unsigned, from her address: nothing recorded, nobody mailed; `questions events` shows\n{}\n",
        serde_json::json!({
            "event": refused[0]["event"], "channel": refused[0]["channel"],
            "answered_by": refused[0]["answered_by"], "detail": refused[0]["detail"],
        })
    ));
    relay.stop();
    // The code, the card's signature and ids, and the mail's ids are new on every run:
    // the guide shows one run's.
    let mut out = out.replace(&code, "HU32TCQT29");
    for (run, shown) in [
        (&card["reply_to"], "relay+1.f9b590107ccb7ba06c76@relay.test"),
        (&card["message_id"], "<card.1.1a5952e8e8b92f5d@relay.test>"),
        (
            &answered["detail"]["event"],
            "message:me@person.test:179575525559.30351.15415578674470113181@person.test",
        ),
        (&refused[0]["detail"]["event"], "imap:1795755254:3"),
    ] {
        out = out.replace(run.as_str().unwrap(), shown);
    }
    crate::docs::assert_documented("docs/guide/relay.md", "transcript: email", &out);
}

#[test]
#[ignore = "a benchmark: prints the relay's idle CPU and how soon a reply is in the ledger"]
fn relay_email_bench_idle_cpu_and_reply_latency() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    people(&l);
    let ids: Vec<i64> = (0..10)
        .map(|i| freeform(&l, "design", &format!("Question number {i}?")))
        .collect();
    let relay = Relay::email(&l, &host, &[]);
    let cards: Vec<Value> = ids.iter().map(|id| host.card("me", *id)).collect();
    let ticks = || relay.cpu_ticks();
    std::thread::sleep(Duration::from_secs(2));
    let before = ticks();
    std::thread::sleep(Duration::from_secs(20));
    let used = ticks() - before;
    println!("idle for 20 s (in IMAP IDLE): {used} clock ticks of CPU (1 tick = 10 ms)");
    let mut took = Vec::new();
    for (id, card) in ids.iter().zip(&cards) {
        host.send(&Mail::reply(ME, card, "yes"));
        // From the MTA's hand-over (send returns once it has delivered) to the answer.
        let sent = Instant::now();
        while l.question(*id)["status"] != "answered" {
            assert!(sent.elapsed() < Duration::from_secs(20));
            std::thread::sleep(Duration::from_millis(5));
        }
        took.push(sent.elapsed());
    }
    took.sort();
    println!(
        "a signed reply delivered to the relay's Maildir, to its answer in the ledger: median {:?}, max {:?} (10 replies)",
        took[took.len() / 2],
        took[took.len() - 1]
    );
    relay.stop();
}

/// The relay's logins in dovecot's log.
fn imap_logins(host: &MailHost) -> Vec<String> {
    std::fs::read_to_string(host.dir.join("dovecot.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("Login: user=<relay>"))
        .map(str::to_string)
        .collect()
}

/// Each AUTH the submission servers heard: login, whether it passed, whether in TLS.
fn smtp_auths(host: &MailHost) -> Vec<Value> {
    std::fs::read_to_string(host.dir.join("auth.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits until the relay's stderr has a line holding all of `words`; that line.
fn said(relay: &Relay, words: &[&str]) -> String {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let err = relay.stderr();
        if let Some(line) = err.lines().find(|l| words.iter().all(|w| l.contains(w))) {
            return line.to_string();
        }
        assert!(
            Instant::now() < end,
            "the relay never said {words:?}: {err}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A card sent and a reply recorded with `tls` (`starttls` or `implicit`) to the mail
/// host's TLS servers, the private CA in `ca_file`.
fn over_tls(tls: &str) {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::with(&l, &["--tls"]);
    let ports = host.tls.as_ref().unwrap();
    let (smtp, imap) = if tls == "implicit" {
        (ports.smtps, ports.imaps)
    } else {
        (ports.submission, host.imap)
    };
    let me = people(&l);
    let id = freeform(&l, "design", "Which database?");
    let more = format!("tls = \"{tls}\"\nca_file = \"{}\"\n", ports.ca);
    let relay = Relay::with_config(&l, smtp, imap, &more, &[]);
    let card = host.card("me", id);
    host.send(&Mail::reply(ME, &card, "SQLite, for now"));
    host.until("me", "the relay's answer", recorded);
    let q = l.question(id);
    assert_eq!(q["answer"], "SQLite, for now");
    assert_eq!(q["answered_by"], me.as_str());
    assert_eq!(q["channel"], "email");
    // The relay logged in to both servers, each time over TLS.
    let auths = smtp_auths(&host);
    assert!(!auths.is_empty());
    for a in &auths {
        assert_eq!(
            a,
            &serde_json::json!({"login": "relay", "ok": true, "tls": true})
        );
    }
    let logins = imap_logins(&host);
    assert!(!logins.is_empty());
    for login in &logins {
        assert!(login.contains(", TLS"), "{login}");
    }
    assert_eq!(relay.stop().code(), Some(0));
}

#[test]
fn relay_email_tls_starttls_for_smtp_and_imap_records_a_reply() {
    over_tls("starttls");
}

#[test]
fn relay_email_tls_implicit_for_smtp_and_imap_records_a_reply() {
    over_tls("implicit");
}

#[test]
fn relay_email_tls_a_certificate_no_trusted_ca_signed_is_refused_and_nothing_is_sent() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::with(&l, &["--tls"]);
    let ports = host.tls.as_ref().unwrap();
    people(&l);
    let id = freeform(&l, "design", "Which database?");
    for (tls, smtp, imap) in [
        ("starttls", ports.submission, host.imap),
        ("implicit", ports.smtps, ports.imaps),
    ] {
        // No ca_file: the webpki roots alone, which did not sign the server's certificate.
        let relay = Relay::with_config(&l, smtp, imap, &format!("tls = \"{tls}\"\n"), &[]);
        let refused = "the server's certificate was refused (invalid peer certificate: \
                       UnknownIssuer); a private CA's certificate goes in email.ca_file";
        let sending = said(
            &relay,
            &[
                &format!("relay: email: the card of question {id} for "),
                &format!("SMTP: TLS to 127.0.0.1:{smtp}: "),
                refused,
            ],
        );
        assert!(sending.contains("trying again"), "{sending}");
        said(
            &relay,
            &[
                "relay: email: ",
                &format!("TLS to 127.0.0.1:{imap}: "),
                refused,
            ],
        );
        assert_eq!(relay.stop().code(), Some(0));
    }
    // A person's mail reaches the relay's mailbox, unread: the relay never logged in.
    host.send(&Mail {
        sign: Some("person.test"),
        ..Mail {
            from: ME,
            to: RELAY,
            body: "SQLite",
            in_reply_to: None,
            sign: None,
            alter: None,
            headers: &[],
            message_id: None,
            times: 1,
        }
    });
    assert!(host.mailbox("me").is_empty(), "no card was sent");
    assert!(host.stamped().iter().all(|s| s["from"] != RELAY));
    assert!(smtp_auths(&host).is_empty(), "no AUTH was sent");
    assert!(imap_logins(&host).is_empty(), "no LOGIN was sent");
    assert_eq!(l.question(id)["status"], "pending");
    assert!(all_events(&l).iter().all(|e| e["channel"] != "email"));
}

#[test]
fn relay_email_tls_required_to_a_server_offering_no_starttls_sends_nothing_in_plain_text() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    // The plain mail host: neither aiosmtpd nor dovecot (ssl = no) offers STARTTLS.
    let l = Ledger::new();
    let host = MailHost::start(&l);
    people(&l);
    let id = freeform(&l, "design", "Which database?");
    // No tls key: "required", STARTTLS on these ports.
    let relay = Relay::with_config(&l, host.smtp, host.imap, "", &[]);
    said(
        &relay,
        &[
            &format!("relay: email: the card of question {id} for "),
            "(SMTP: STARTTLS answered 454",
        ],
    );
    said(&relay, &["relay: email: IMAP STARTTLS answered "]);
    // A message sent anyway (no AUTH is offered here) would be in the MTA's log.
    assert!(host.stamped().iter().all(|s| s["from"] != RELAY));
    assert!(host.mailbox("me").is_empty());
    assert!(imap_logins(&host).is_empty(), "no LOGIN was sent");
    let dovecot = std::fs::read_to_string(host.dir.join("dovecot.log")).unwrap();
    assert!(!dovecot.contains(PASSWORD), "{dovecot}");
    assert_eq!(l.question(id)["status"], "pending");
    assert_eq!(relay.stop().code(), Some(0));
}

#[test]
fn relay_email_tls_a_bad_ca_file_or_tls_value_is_a_usage_error_naming_the_key() {
    let l = Ledger::new();
    let dir = l.dir.path();
    std::fs::write(dir.join("garbage.pem"), "not a certificate\n").unwrap();
    std::fs::write(
        dir.join("broken.pem"),
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let env = [("MAIL_USER", "relay"), ("MAIL_PASSWORD", PASSWORD)];
    let good =
        "smtp = \"mail.example.org:587\"\nimap = \"mail.example.org:993\"\naddress = \"relay@relay.test\"\n\
         username_env = \"MAIL_USER\"\npassword_env = \"MAIL_PASSWORD\"\nauthserv_id = \"mx\"\n";
    for (more, names) in [
        ("ca_file = \"missing.pem\"", "email.ca_file: cannot read"),
        // A directory cannot be read as a file.
        ("ca_file = \".\"", "email.ca_file: cannot read"),
        (
            "ca_file = \"garbage.pem\"",
            "email.ca_file: garbage.pem holds no PEM certificate",
        ),
        (
            "ca_file = \"broken.pem\"",
            "email.ca_file: 1 of its certificates cannot be used",
        ),
        ("ca_file = \"\"", "email.ca_file must be"),
        (
            "tls = \"insecure\"",
            "email.tls must be \"required\", \"implicit\", \"starttls\" or \"none\"",
        ),
    ] {
        let config = format!("[email]\n{good}{more}\n");
        relay_harness::refuses(&l, &config, &env, &[PASSWORD], names);
    }
}

#[test]
#[ignore = "a benchmark: prints what TLS costs the relay's card sends and its reading of replies"]
fn relay_email_bench_tls_cards_sent_and_reply_latency() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    for tls in ["none", "starttls", "implicit"] {
        let l = Ledger::new();
        if tls == "none" {
            // The plain mail host, as the other tests use it.
            let host = MailHost::start(&l);
            bench_round(&l, &host, host.smtp, host.imap, "tls = \"none\"\n", tls);
            continue;
        }
        let host = MailHost::with(&l, &["--tls"]);
        let ports = host.tls.as_ref().unwrap();
        let (smtp, imap) = if tls == "implicit" {
            (ports.smtps, ports.imaps)
        } else {
            (ports.submission, host.imap)
        };
        let more = format!("tls = \"{tls}\"\nca_file = \"{}\"\n", ports.ca);
        bench_round(&l, &host, smtp, imap, &more, tls);
    }
}

/// 10 cards sent (one SMTP connection each) and 10 replies read, timed.
fn bench_round(l: &Ledger, host: &MailHost, smtp: u16, imap: u16, more: &str, tls: &str) {
    people(l);
    let ids: Vec<i64> = (0..10)
        .map(|i| freeform(l, "design", &format!("Question number {i}?")))
        .collect();
    let started = Instant::now();
    let relay = Relay::with_config(l, smtp, imap, more, &[]);
    let cards: Vec<Value> = ids.iter().map(|id| host.card("me", *id)).collect();
    let sent = started.elapsed();
    let mut took = Vec::new();
    for (id, card) in ids.iter().zip(&cards) {
        host.send(&Mail::reply(ME, card, "yes"));
        let at = Instant::now();
        while l.question(*id)["status"] != "answered" {
            assert!(at.elapsed() < Duration::from_secs(20));
            std::thread::sleep(Duration::from_millis(5));
        }
        took.push(at.elapsed());
    }
    took.sort();
    println!(
        "tls = {tls}: 20 cards (2 people) in their mailboxes {sent:?} after the relay started; \
         a reply to its answer in the ledger: median {:?}, max {:?} (10 replies)",
        took[took.len() / 2],
        took[took.len() - 1]
    );
    relay.stop();
}

#[test]
fn relay_email_an_approval_is_approve_alone_or_reject_and_a_reason_never_a_first_word() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    let me = people(&l);
    let logged = l.ok([
        "log",
        "--stage",
        "deploy",
        "--question",
        "Deploy build 42?",
        "--approval",
        "--approvers",
        &format!("{me},bob"),
        "--min",
        "1",
    ]);
    let id = logged["question_id"].as_i64().unwrap();
    let _relay = Relay::email(&l, &host, &[]);
    let bobs = host.card("bob", id);
    // A first word is not a vote: refused, bob told why, the gate holds.
    host.send(&Mail::reply(
        BOB,
        &bobs,
        "Approved by legal? Not yet. Ask me again on Monday.",
    ));
    let told = host.until("bob", "the refusal", |m| {
        m["body"]
            .as_str()
            .unwrap()
            .contains("only Approve or Reject")
    });
    assert!(
        told["body"].as_str().unwrap().contains("APPROVE alone"),
        "{told}"
    );
    assert_eq!(l.question(id)["approval"]["votes"], serde_json::json!([]));
    assert_eq!(
        l.run(["check", "--stage", "deploy"]).code,
        1,
        "the gate holds"
    );
    assert_eq!(kinds(&l, id, "refused"), 1);
    // APPROVE alone on its first line, the phone's line under it, is a vote.
    host.send(&Mail::reply(BOB, &bobs, "Approve\n\nSent from my iPhone"));
    host.until("bob", "the vote recorded", recorded);
    let q = l.question(id);
    assert_eq!(q["approval"]["votes"][0]["by"], "bob");
    assert_eq!(q["approval"]["votes"][0]["vote"], "approve");
    assert_eq!(l.run(["check", "--stage", "deploy"]).code, 0);
}

#[test]
fn relay_email_outlooks_header_block_and_a_phones_signature_are_not_the_answer() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    let me = people(&l);
    let picked = l.log_with(
        "design",
        "Which database?",
        &["--option", "PostgreSQL", "--option", "SQLite"],
    );
    let free = freeform(&l, "design", "What should the project be called?");
    let _relay = Relay::email(&l, &host, &[]);
    let card = host.card("me", picked);
    // Outlook writes its header block and the card unquoted under the reply.
    let outlook = |text: &str, card: &Value| {
        format!(
            "{text}\r\n\r\nSent from my iPhone\r\n\r\n________________________________\r\n\
             From: {RELAY}\r\nSent: Friday, November 27, 2026 10:00 AM\r\nTo: {ME}\r\n\
             Subject: {}\r\n\r\n{}",
            card["subject"].as_str().unwrap(),
            card["body"].as_str().unwrap()
        )
    };
    host.send(&Mail::reply(ME, &card, &outlook("2", &card)));
    host.until("me", "the answer recorded", recorded);
    let q = l.question(picked);
    assert_eq!(q["answer"], "SQLite", "{q}");
    assert_eq!(q["selected"], serde_json::json!(["SQLite"]));
    assert_eq!(q["answered_by"], me.as_str());
    let free_card = host.card("me", free);
    let text = format!(
        "Call it Ledger.\n\nVon meinem iPhone gesendet\n\nVon: {RELAY}\nGesendet: Freitag\nAn: {ME}\nBetreff: x\n\n{}",
        free_card["body"].as_str().unwrap()
    );
    host.send(&Mail::reply(ME, &free_card, &text));
    let end = Instant::now() + Duration::from_secs(20);
    while l.question(free)["status"] == "pending" {
        assert!(Instant::now() < end, "the second answer was never recorded");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(l.question(free)["answer"], "Call it Ledger.");
}

/// The messages in `user`'s mailbox whose subject starts with `head`, oldest first.
fn subjects(host: &MailHost, user: &str, head: &str) -> Vec<Value> {
    host.mailbox(user)
        .into_iter()
        .filter(|m| m["subject"].as_str().unwrap().starts_with(head))
        .collect()
}

/// Logs a question of its own at `now`, waits for its card to reach `user`, skips it and
/// waits for the message that settles that card: a round of the relay that began after
/// this call (which sends every card due, the held ones' digest first, before it
/// settles) has run to its end.
fn round_passed(l: &Ledger, host: &MailHost, now: &str, user: &str, text: &str) {
    let id = l
        .run_at(now, ["log", "--stage", "marker", "--question", text])
        .json["question_id"]
        .as_i64()
        .unwrap();
    host.card(user, id);
    l.run_at(now, ["skip", "--id", &id.to_string(), "--reason", "marker"]);
    let settled = format!("Re: Question {id} ");
    host.until(user, "the marker settled", |m| {
        m["subject"].as_str().unwrap().starts_with(&settled)
    });
}

#[test]
fn relay_email_quiet_hours_hold_a_card_then_one_digest_and_the_card_answers() {
    if let Some(why) = missing() {
        return skip(&why);
    }
    let l = Ledger::new();
    let host = MailHost::start(&l);
    people(&l);
    // NOW is 00:47 in Berlin: inside bob's night, which ends at 07:00 there (06:00Z).
    l.ok([
        "people",
        "quiet",
        "bob",
        "22:00-07:00",
        "--tz",
        "Europe/Berlin",
    ]);
    let held = freeform(&l, "design", "Which database?");
    let head = format!("Question {held} ");
    let mut night = Relay::email(&l, &host, &[("QUESTIONS_NOW", NOW)]);
    host.card("me", held);
    round_passed(&l, &host, NOW, "me", "Marker at night?");
    assert!(
        subjects(&host, "bob", &head).is_empty(),
        "held in the window"
    );
    assert!(subjects(&host, "bob", "Quiet hours").is_empty());
    night.child.kill().unwrap();
    night.child.wait().unwrap();

    // 30 s after the window's end: the digest, then the held card.
    let morning = "2026-11-22T06:00:30.000Z";
    let mut first = Relay::email(&l, &host, &[("QUESTIONS_NOW", morning)]);
    let card = host.card("bob", held);
    let digest = subjects(&host, "bob", "Quiet hours are over");
    assert_eq!(digest.len(), 1, "{digest:?}");
    let body = digest[0]["body"].as_str().unwrap();
    assert!(body.contains(&format!("#{held} Which database?")), "{body}");
    let order: Vec<&str> = host
        .mailbox("bob")
        .iter()
        .map(|m| m["subject"].as_str().unwrap().to_string())
        .map(|s| {
            if s.starts_with("Quiet") {
                "digest"
            } else {
                "card"
            }
        })
        .collect();
    assert_eq!(order, ["digest", "card"], "the header comes first");
    round_passed(&l, &host, morning, "bob", "Marker after the digest?");
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    // Started again: no second digest, no second card.
    let later_on = "2026-11-22T06:00:50.000Z";
    let second = Relay::email(&l, &host, &[("QUESTIONS_NOW", later_on)]);
    round_passed(&l, &host, later_on, "bob", "Marker in the morning?");
    assert_eq!(subjects(&host, "bob", "Quiet hours are over").len(), 1);
    assert_eq!(subjects(&host, "bob", &head).len(), 1);
    // The held card answers as any card does.
    host.send(&Mail::reply(BOB, &card, "SQLite"));
    host.until("bob", "the relay's answer", recorded);
    let q = l.question(held);
    assert_eq!(q["answer"], "SQLite");
    assert_eq!(q["answered_by"], "bob");
    assert_eq!(q["channel"], "email");
    assert_eq!(second.stop().code(), Some(0));
}

/// Email in the channel suite (channel_suite.rs), through the real servers of
/// tests/fixtures/mailhost.py: a "button" is a reply with the option's number.
pub(crate) struct Email {
    host: MailHost,
    /// Markers logged so far (`passed`): each question of its own.
    markers: std::cell::Cell<u32>,
}

/// A message the suite sent: who sent it, and its Message-ID.
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    who: Who,
    message_id: String,
}

/// `who`'s mailbox on the host and address.
fn account(who: Who) -> (&'static str, &'static str) {
    match who {
        Who::Me => ("me", ME),
        Who::Bob => ("bob", BOB),
        Who::Stranger => ("stranger", STRANGER),
    }
}

/// The address `Email::start` writes from to have the relay read past its first message:
/// of the people's domain, linked to nobody.
const WARM_UP: &str = "first@person.test";

impl Email {
    /// A signed message from `from` to the relay's own address, outside any card; its
    /// Message-ID.
    fn write_from(&self, from: &str, text: &str) -> String {
        self.host.send(&Mail::to_relay(from, text))
    }

    fn send(&self, who: Who, mail: &Mail) -> Sent {
        Sent {
            who,
            message_id: self.host.send(mail),
        }
    }
}

impl ChannelUnderTest for Email {
    const NAME: &'static str = "email";
    const TELLS_STRANGERS: bool = false;
    const HOLDS_A_CONNECTION: bool = true;
    type Sent = Sent;

    fn missing() -> Option<String> {
        missing()
    }

    fn start(l: &Ledger) -> Email {
        let email = Email {
            host: MailHost::start(l),
            markers: std::cell::Cell::new(0),
        };
        // A relay's first start reads only the mail that arrives after it opened the
        // mailbox: a first run stores its read position (a message of nobody linked
        // refused past it), so that each test's relay reads all that comes once it runs.
        let first = email.relay(l, &[]);
        reading(l, &email.host);
        assert_eq!(first.stop().code(), Some(0));
        email
    }

    fn identity(&self, who: Who) -> String {
        format!("email:{}", account(who).1)
    }

    fn relay(&self, l: &Ledger, env: &[(&str, &str)]) -> Relay {
        Relay::email(l, &self.host, env)
    }

    fn card(&self, who: Who, id: i64) -> Value {
        self.host.card(account(who).0, id)
    }

    fn cards(&self, who: Who, id: i64) -> usize {
        subjects(&self.host, account(who).0, &format!("Question {id} ")).len()
    }

    fn options(&self, card: &Value) -> Vec<String> {
        let body = card["body"].as_str().unwrap();
        if body.contains("Reply APPROVE, or REJECT") {
            return vec!["Approve".into(), "Reject".into()];
        }
        body.lines()
            .filter_map(|line| {
                let (n, label) = line.trim().split_once(". ")?;
                (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit())).then(|| label.to_string())
            })
            .collect()
    }

    fn press(&self, who: Who, card: &Value, label: &str) -> Sent {
        // The reply with the option's number; APPROVE or REJECT on an approval's card.
        let options = self.options(card);
        let at = options
            .iter()
            .position(|o| o.contains(label))
            .unwrap_or_else(|| panic!("no option {label} on {card}"));
        let body = match options[at].as_str() {
            "Approve" | "Reject" => options[at].to_uppercase(),
            _ => (at + 1).to_string(),
        };
        self.send(who, &Mail::reply(account(who).1, card, &body))
    }

    fn type_answer(&self, who: Who, card: &Value, text: &str) -> Sent {
        self.send(who, &Mail::reply(account(who).1, card, text))
    }

    fn forgeries(&self, who: Who, card: &Value, label: &str) -> Vec<Sent> {
        // The reply address's signature, its last digit changed.
        let reply_to = card["reply_to"].as_str().unwrap();
        let (head, tail) = reply_to.split_once('@').unwrap();
        let flipped = format!(
            "{}{}@{tail}",
            &head[..head.len() - 1],
            if head.ends_with('0') { "1" } else { "0" }
        );
        let number = (self
            .options(card)
            .iter()
            .position(|o| o.contains(label))
            .unwrap()
            + 1)
        .to_string();
        vec![self.send(
            who,
            &Mail {
                to: &flipped,
                ..Mail::reply(account(who).1, card, &number)
            },
        )]
    }

    fn write(&self, who: Who, text: &str) -> Sent {
        Sent {
            who,
            message_id: self.write_from(account(who).1, text),
        }
    }

    fn pairing(code: &str) -> String {
        format!("my code: {code}")
    }

    fn deliver_twice(&self, who: Who, card: &Value, label: &str) -> (Sent, Sent) {
        // The same message (one Message-ID) delivered twice.
        let number = (self
            .options(card)
            .iter()
            .position(|o| o.contains(label))
            .unwrap()
            + 1)
        .to_string();
        let mut mail = Mail::reply(account(who).1, card, &number);
        mail.times = 2;
        let from = |host: &MailHost| {
            host.stamped()
                .iter()
                .filter(|s| s["from"] == mail.from)
                .count()
        };
        let before = from(&self.host);
        let sent = self.send(who, &mail);
        assert_eq!(from(&self.host), before + 2, "both copies taken");
        (sent.clone(), sent)
    }

    fn told(&self, sent: &Sent) -> String {
        let m = self
            .host
            .until(account(sent.who).0, "the relay's reply", |m| {
                m["in_reply_to"] == sent.message_id.as_str()
            });
        m["body"].as_str().unwrap().to_string()
    }

    fn said_to(&self, who: Who) -> Vec<String> {
        // Markers (`passed`) aside.
        self.host
            .mailbox(account(who).0)
            .iter()
            .filter(|m| !m["subject"].as_str().unwrap().starts_with("Question "))
            .map(|m| m["body"].as_str().unwrap().to_string())
            .filter(|body| !body.contains(MARKER))
            .collect()
    }

    fn passed(&self, l: &Ledger, _: &Sent) {
        // The relay reads its mailbox in order: a later reply of mine recorded.
        let n = self.markers.get() + 1;
        self.markers.set(n);
        read_past(l, &self.host, &format!("Marker {n}?"));
    }

    fn settled(&self, who: Who, id: i64) -> String {
        let user = account(who).0;
        let card = self.host.card(user, id);
        let m = self.host.until(user, "the settled message", |m| {
            m["in_reply_to"] == card["message_id"]
        });
        m["body"].as_str().unwrap().to_string()
    }

    fn bad_configs() -> Vec<(String, &'static str)> {
        let good =
            "smtp = \"127.0.0.1:2525\"\nimap = \"127.0.0.1:1143\"\naddress = \"relay@relay.test\"\n\
             username_env = \"MAIL_USER\"\npassword_env = \"MAIL_PASSWORD\"\n";
        vec![
            (
                format!("[email]\n{good}tls = \"none\"\n"),
                "email.authserv_id",
            ),
            (
                format!(
                    "[email]\n{}tls = \"none\"\nauthserv_id = \"mx\"\n",
                    good.replace("127.0.0.1:2525", "mail.example.org:587")
                ),
                "email.smtp",
            ),
            (
                format!("[email]\n{good}tls = \"maybe\"\nauthserv_id = \"mx\"\n"),
                "email.tls",
            ),
            (
                format!(
                    "[email]\n{}authserv_id = \"mx\"\n",
                    good.replace("MAIL_PASSWORD", "NOT_SET_ANYWHERE")
                ),
                "NOT_SET_ANYWHERE",
            ),
            (
                format!("[email]\n{good}authserv_id = \"mx\"\nimap_port = 1\n"),
                "email.imap_port",
            ),
            (
                format!(
                    "[email]\n{}authserv_id = \"mx\"\n",
                    good.replace("127.0.0.1:1143", "127.0.0.1")
                ),
                "email.imap",
            ),
        ]
    }

    fn config_env() -> Vec<(&'static str, &'static str)> {
        vec![("MAIL_USER", "relay"), ("MAIL_PASSWORD", PASSWORD)]
    }

    fn secrets() -> Vec<&'static str> {
        vec![PASSWORD]
    }
}
