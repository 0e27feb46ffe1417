//! Email: SMTP out, IMAP IDLE in, over rustls (`tls = "required"`: implicit TLS on ports
//! 465 and 993, STARTTLS elsewhere; `"implicit"` or `"starttls"` say which for both
//! servers; plain TCP only with `"none"`, on loopback). A server that does not start TLS
//! is left before anything else is said: never a fallback to plain text. One message per card, threaded by `Message-ID`, with a
//! signed per-recipient `Reply-To` (`local+<delivery>.<signature>@domain`); a reply is
//! heard only when the trusted `authserv_id`'s topmost `Authentication-Results` says
//! `dkim=pass` for a domain aligned with `From`, its address token is this relay's, and
//! its `In-Reply-To`/`References` name that card. A person is `email:<address>`.
//!
//! The two protocols are small enough to speak here (a few commands each) rather than
//! link an SMTP and an IMAP crate with their own TLS stacks; messages are read with
//! `mail-parser` (MIME, quoted-printable, base64, charsets).

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mail_parser::MessageParser;

use crate::output;
use questions_core::model::{self, Question};
use questions_core::ops::relay::{self, Binding, ButtonKey, FromChannel, Given, Outcome};
use questions_core::ops::Ledger;

use super::kit::buttons::verdict;
use super::kit::{card_text, clip, pairing, plain, Res};

mod config;
mod conn;
mod imap;
mod reply;
mod smtp;

pub(crate) use config::open;
use imap::Imap;
use reply::{above_quote, message_ids, unfold, vouched_for};
use smtp::{compose, smtp_send, Compose};

const CHANNEL: model::Channel = model::Channel::Email;

/// The line above the quoted card: everything from it down is not the reply.
pub(crate) const MARKER: &str = "-- Reply above this line --";
/// What a card says of typed answers, after its options.
const HOW_TO_REPLY: &str =
    "Reply above this line with the option's number or label, or your answer.";
const HOW_TO_APPROVE: &str = "Reply APPROVE, or REJECT and a reason.";
const HOW_TO_PICK: &str = "Reply above this line with the option's number or label.";
/// Every network read and write waits at most this long (an IDLE waits in rounds of a
/// second).
const IO_TIMEOUT: Duration = Duration::from_mins(1);

/// How the relay speaks TLS to its mail servers (`[email] tls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tls {
    /// Implicit TLS on 465 (SMTP submission) and 993 (IMAPS), STARTTLS on other ports.
    Required,
    /// TLS from the first byte, on any port.
    Implicit,
    /// STARTTLS, on any port.
    Starttls,
    /// Plain text (loopback hosts only; the config checks).
    None,
}

impl Tls {
    /// How a connection to `port` starts: `Some(true)` in TLS, `Some(false)` plain and
    /// then STARTTLS, `None` plain throughout.
    fn implicit(self, port: u16) -> Option<bool> {
        match self {
            Tls::Required => Some(matches!(port, 465 | 993)),
            Tls::Implicit => Some(true),
            Tls::Starttls => Some(false),
            Tls::None => None,
        }
    }
}

/// The TLS client: the webpki roots and `extra` (a private CA's, from `ca_file`).
/// Verification is never turned off.
pub(crate) fn tls_config(
    extra: Vec<rustls::pki_types::CertificateDer<'static>>,
) -> Res<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let (_, unusable) = roots.add_parsable_certificates(extra);
    if unusable > 0 {
        return Err(format!("{unusable} of its certificates cannot be used"));
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

/// `host:port`, as the config names it.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
}

pub(crate) struct Email {
    smtp: Endpoint,
    imap: Endpoint,
    /// The relay's own address, lower case, and its parts.
    address: String,
    local: String,
    domain: String,
    username: String,
    /// Never printed.
    password: String,
    tls: Tls,
    /// The roots a server's certificate is checked against: webpki's and `ca_file`'s.
    tls_config: Arc<rustls::ClientConfig>,
    authserv_id: String,
    /// How long one IDLE waits before it is renewed.
    idle: Duration,
    session: Mutex<Option<Imap>>,
}

impl Email {
    #[allow(clippy::too_many_arguments)]
    fn new(
        smtp: Endpoint,
        imap: Endpoint,
        address: &str,
        username: String,
        password: String,
        tls: Tls,
        tls_config: Arc<rustls::ClientConfig>,
        authserv_id: &str,
        idle: Duration,
    ) -> Email {
        let address = address.trim().to_lowercase();
        let (local, domain) = address.split_once('@').unwrap_or((&address, ""));
        Email {
            smtp,
            imap,
            local: local.to_string(),
            domain: domain.to_string(),
            address: address.clone(),
            username,
            password,
            tls,
            tls_config,
            authserv_id: authserv_id.to_string(),
            idle,
            session: Mutex::new(None),
        }
    }

    /// A new Message-ID (without its brackets): `<what>.<random>@<domain>`.
    fn message_id(&self, what: &str) -> Res<String> {
        let mut bytes = [0u8; 8];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| format!("cannot read random bytes: {e}"))?;
        let tail: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(format!("{what}.{tail}@{}", self.domain))
    }

    /// One message over SMTP to `to`.
    fn send(&self, to: &str, message: &str) -> Res<()> {
        smtp_send(self, to, message).map_err(|e| format!("SMTP: {e}"))
    }

    /// Says `text` back to a vouched-for sender, in the thread of their message.
    fn tell(&self, to: &str, subject: Option<&str>, in_reply_to: Option<&str>, text: &str) {
        let subject = format!(
            "Re: {}",
            subject
                .map(|s| s.trim_start_matches("Re: ").trim())
                .filter(|s| !s.is_empty())
                .unwrap_or("questions")
        );
        let Ok(id) = self.message_id("reply") else {
            return;
        };
        let message = compose(&Compose {
            from: &self.address,
            to,
            subject: &subject,
            message_id: &id,
            reply_to: None,
            in_reply_to,
            body: text,
        });
        if let Err(why) = self.send(to, &message) {
            output::note(&format!("relay: email: a reply was not sent ({why})"));
        }
    }

    /// The reply address of a card: `local+<delivery>.<signature>@domain`.
    fn reply_address(&self, delivery: i64, key: &ButtonKey) -> String {
        format!(
            "{}+{delivery}.{}@{}",
            self.local,
            key.sign(delivery, relay::REPLY_VALUE),
            self.domain
        )
    }

    /// The token of the first of `addresses` that is one of this relay's reply addresses.
    fn token_in<'a>(&self, addresses: impl Iterator<Item = &'a str>) -> Option<String> {
        addresses.into_iter().find_map(|a| {
            let a = a.trim().trim_matches(['<', '>']).to_lowercase();
            let (local, domain) = a.rsplit_once('@')?;
            let token = local.strip_prefix(&format!("{}+", self.local))?;
            (domain == self.domain).then(|| token.to_string())
        })
    }

    /// One message of the INBOX, through the core; what it records and the read position
    /// past it are committed together, before anything is said back.
    fn handle(&self, ledger: &mut Ledger, validity: u64, uid: u64, raw: &[u8]) -> Res<()> {
        let db = |e: questions_core::error::Error| e.message;
        let position = format!("{validity}:{uid}");
        let Some(message) = MessageParser::default().parse(raw) else {
            return relay::pass(ledger, CHANNEL, &position).map_err(db);
        };
        let headers: Vec<(String, String)> = message
            .headers_raw()
            .map(|(n, v)| (n.to_string(), unfold(v)))
            .collect();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_string())
        };
        let senders: Vec<String> = message
            .from()
            .map(|a| {
                a.iter()
                    .filter_map(|a| a.address())
                    .map(str::to_lowercase)
                    .collect()
            })
            .unwrap_or_default();
        // Mail that answers mail by itself (an out-of-office, a bounce), the relay's own,
        // and mail with no single sender: never an answer, never answered.
        let automatic = header("Auto-Submitted").is_some_and(|v| !v.eq_ignore_ascii_case("no"))
            || header("Precedence").is_some_and(|v| {
                ["bulk", "junk", "list", "auto_reply"].contains(&v.to_lowercase().as_str())
            });
        let [from] = senders.as_slice() else {
            return relay::pass(ledger, CHANNEL, &position).map_err(db);
        };
        if automatic || *from == self.address || from.rsplit_once('@').is_none() {
            return relay::pass(ledger, CHANNEL, &position).map_err(db);
        }
        questions_core::fault::point("relay-heard");
        let message_id = message.message_id().map(str::to_string);
        let identity = format!("email:{from}");
        let vouched = vouched_for(&headers, &self.authserv_id, from);
        let event_id = match (&vouched, &message_id) {
            // The same message delivered twice (same sender, same Message-ID) is one event.
            (Ok(()), Some(id)) => format!("message:{from}:{id}"),
            _ => format!("imap:{validity}:{uid}"),
        };
        let event = |binding: Binding, given: Given| FromChannel {
            channel: CHANNEL,
            identity: identity.clone(),
            event_id: event_id.clone(),
            binding,
            given,
            position: Some(position.clone()),
        };
        if let Err(why) = vouched {
            // Never mail an address nobody vouched for: that is backscatter.
            relay::refuse(
                ledger,
                &event(Binding::None, Given::Text(String::new())),
                &why,
            )
            .map_err(db)?;
            return Ok(());
        }
        let text = message
            .body_text(0)
            .map(|t| above_quote(&t))
            .unwrap_or_default();
        let mut addressed: Vec<String> = Vec::new();
        for list in [message.to(), message.cc()].into_iter().flatten() {
            addressed.extend(list.iter().filter_map(|a| a.address()).map(str::to_string));
        }
        addressed.extend(
            headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("Delivered-To"))
                .map(|(_, v)| v.clone()),
        );
        let token = self.token_in(addressed.iter().map(String::as_str));
        let mut replying_to: Vec<String> = Vec::new();
        for name in ["In-Reply-To", "References"] {
            for (_, v) in headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)) {
                replying_to.extend(message_ids(v));
            }
        }
        let subject = message.subject().map(str::to_string);
        let heard = if text.is_empty() {
            let why = "your reply had no text above the quoted card; nothing was recorded";
            let outcome = relay::refuse(
                ledger,
                &event(Binding::None, Given::Text(String::new())),
                why,
            )
            .map_err(db)?;
            let linked = relay::people_list(ledger)
                .map_err(db)?
                .links
                .iter()
                .any(|l| l.identity == identity);
            if outcome != Outcome::Repeated && linked {
                self.tell(from, subject.as_deref(), message_id.as_deref(), why);
            }
            return Ok(());
        } else if let Some(token) = token {
            let approval = token
                .split_once('.')
                .and_then(|(d, _)| d.parse::<i64>().ok())
                .map(|d| relay::card(ledger, d))
                .transpose()
                .map_err(db)?
                .flatten()
                .and_then(|(_, q)| q)
                .is_some_and(|q| q.state.approval.is_some());
            let given = if approval {
                verdict(&text)
            } else {
                Given::Text(text.clone())
            };
            relay::hear(ledger, &event(Binding::Token { token, replying_to }, given)).map_err(db)?
        } else if let Some(code) = pairing::code_in(&text) {
            relay::redeem(
                ledger,
                &event(Binding::None, Given::Text(String::new())),
                &code,
            )
            .map_err(db)?
        } else {
            relay::hear(ledger, &event(Binding::None, Given::Text(text.clone()))).map_err(db)?
        };
        // Only a linked person is answered: an address nobody linked learns nothing (its
        // domain may sign for anyone who asks).
        if heard.outcome != Outcome::Repeated && heard.person.is_some() {
            self.tell(
                from,
                subject.as_deref(),
                message_id.as_deref(),
                &heard.reply,
            );
        }
        Ok(())
    }

    /// The IMAP session, logged in with the INBOX selected (made when there is none).
    fn session<'a>(&self, slot: &'a mut Option<Imap>) -> Res<&'a mut Imap> {
        if slot.is_none() {
            *slot = Some(Imap::open(self)?);
        }
        slot.as_mut().ok_or_else(|| "no IMAP session".to_string())
    }

    fn read_round(&self, ledger: &mut Ledger, imap: &mut Imap) -> Res<()> {
        let db = |e: questions_core::error::Error| e.message;
        let validity = imap.validity;
        let stored = relay::position(ledger, CHANNEL).map_err(db)?;
        let last = match stored.as_deref().and_then(|p| p.split_once(':')) {
            Some((v, uid)) if v.parse() == Ok(validity) => uid.parse::<u64>().unwrap_or(0),
            // A mailbox made again (another UIDVALIDITY): all of it is new; a message
            // heard before is the same event by its Message-ID.
            Some(_) => 0,
            // The first start: only what arrives from now on.
            None => {
                let last = imap.next_uid.saturating_sub(1);
                relay::pass(ledger, CHANNEL, &format!("{validity}:{last}")).map_err(db)?;
                last
            }
        };
        let messages = imap.fetch_after(last)?;
        for (uid, raw) in &messages {
            self.handle(ledger, validity, *uid, raw)?;
        }
        if messages.is_empty() {
            imap.wait(self.idle)?;
        }
        Ok(())
    }
}

impl super::Channel for Email {
    fn kind(&self) -> model::Channel {
        CHANNEL
    }

    fn send_card(&self, card: &relay::Card) -> Res<String> {
        let key = &card.key;
        let to = card
            .delivery
            .identity
            .strip_prefix("email:")
            .ok_or("not an email identity")?;
        let id = match card.reminder {
            // A reminder is a message of its own, in the thread of the card before it.
            Some((n, _)) => self.message_id(&format!("card.{}.r{n}", card.delivery.id))?,
            None => self.message_id(&format!("card.{}", card.delivery.id))?,
        };
        let q = &card.question;
        let (subject, body) = match card.note() {
            Some(note) => (
                format!("Still waiting: {}", subject_of(q.id, Some(q))),
                format!("{note}\n\n{}", card_body(q)),
            ),
            None => (subject_of(q.id, Some(q)), card_body(q)),
        };
        let message = compose(&Compose {
            from: &self.address,
            to,
            subject: &subject,
            message_id: &id,
            reply_to: Some(&self.reply_address(card.delivery.id, key)),
            in_reply_to: card.reminder.and(card.delivery.message_ref.as_deref()),
            body: &body,
        });
        self.send(to, &message)?;
        Ok(id)
    }

    fn send_note(&self, identity: &str, text: &str) -> Res<()> {
        let to = identity
            .strip_prefix("email:")
            .ok_or("not an email identity")?;
        let id = self.message_id("digest")?;
        let subject = text.lines().next().unwrap_or("questions");
        let message = compose(&Compose {
            from: &self.address,
            to,
            subject,
            message_id: &id,
            reply_to: None,
            in_reply_to: None,
            body: text,
        });
        self.send(to, &message)
    }

    /// A mail cannot be edited, and a reminder is in the card's thread: nothing to say
    /// of the mail before it.
    fn retire_card(&self, _: &relay::Closing) -> Res<()> {
        Ok(())
    }

    /// A sent email cannot be edited: the card's thread gets one short message saying
    /// how its question was settled. Not when the person settled it by replying to
    /// this very card: they were told already.
    fn close_card(&self, closing: &relay::Closing) -> Res<()> {
        let d = &closing.delivery;
        let (Some(card_id), Some(to)) =
            (d.message_ref.as_deref(), d.identity.strip_prefix("email:"))
        else {
            return Ok(());
        };
        if let Some(q) = &closing.question {
            if q.state.channel == Some(CHANNEL)
                && q.state.answered_by.as_deref() == Some(d.person.as_str())
                && q.fingerprint() == d.fingerprint
            {
                return Ok(());
            }
        }
        let id = self.message_id(&format!("settled.{}", d.id))?;
        let subject = format!(
            "Re: {}",
            subject_of(d.question_id, closing.question.as_ref())
        );
        let body = format!(
            "Question {}: {}.\n\nNothing more to answer on this card.\n",
            d.question_id, closing.words
        );
        let message = compose(&Compose {
            from: &self.address,
            to,
            subject: &subject,
            message_id: &id,
            reply_to: None,
            in_reply_to: Some(card_id),
            body: &body,
        });
        self.send(to, &message)
    }

    fn poll(&self, ledger: &mut Ledger, _key: &ButtonKey) -> Res<()> {
        let mut slot = self
            .session
            .lock()
            .map_err(|_| "the IMAP session was lost")?;
        let imap = self.session(&mut slot)?;
        let read = self.read_round(ledger, imap);
        if read.is_err() {
            // A connection in an unknown state is not used again.
            *slot = None;
        }
        read
    }
}

/// The card's subject: its question, clipped.
fn subject_of(id: i64, q: Option<&Question>) -> String {
    match q {
        Some(q) => format!(
            "Question {id} · {}: {}",
            q.stage.trim(),
            clip(q.question.lines().next().unwrap_or(""), 80)
        ),
        None => format!("Question {id}"),
    }
}

/// The card's text, after the marker line a reply is written above.
fn card_body(q: &Question) -> String {
    let mut body = format!(
        "{MARKER}\n\n{}",
        card_text(q, HOW_TO_REPLY, usize::MAX, plain)
    );
    if q.state.approval.is_some() {
        body.push_str(&format!("\n\n{HOW_TO_APPROVE}"));
    } else if !q.options.is_empty() && !q.allow_freeform {
        body.push_str(&format!("\n\n{HOW_TO_PICK}"));
    }
    body.push('\n');
    body
}

#[cfg(test)]
mod tests {
    use super::smtp::encoded_word;
    use super::*;
    use crate::strings::base64;

    fn headers(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn only_the_topmost_result_of_the_trusted_authserv_id_vouches_when_aligned() {
        let ar = "Authentication-Results";
        let ok = |h: &[(&str, &str)], from: &str| {
            let mut all = headers(h);
            all.push(("From".into(), format!("<{from}>")));
            vouched_for(&all, "mx.test", from)
        };
        assert!(ok(
            &[(ar, "mx.test; dkim=pass header.d=person.test")],
            "a@person.test"
        )
        .is_ok());
        // Relaxed alignment: From's domain under the signing domain, not above it.
        assert!(ok(
            &[(ar, "mx.test; dkim=pass header.d=person.test")],
            "a@eu.person.test"
        )
        .is_ok());
        assert!(ok(
            &[(ar, "mx.test; dkim=pass header.d=eu.person.test")],
            "a@person.test"
        )
        .is_err());
        assert!(ok(
            &[(ar, "mx.test; dkim=pass header.d=son.test")],
            "a@person.test"
        )
        .is_err());
        assert!(ok(
            &[(ar, "mx.test; dkim=pass header.i=@person.test")],
            "a@person.test"
        )
        .is_ok());
        assert!(ok(
            &[(ar, "mx.test 1; spf=pass (a comment; with dkim=pass) smtp.mailfrom=x; dkim=pass (good) header.d=\"person.test\"")],
            "a@person.test"
        )
        .is_ok());
        // Failing, another server's, none, or a forged one below the trusted one.
        assert!(ok(
            &[(ar, "mx.test; dkim=fail header.d=person.test")],
            "a@person.test"
        )
        .is_err());
        assert!(ok(
            &[(ar, "other.test; dkim=pass header.d=person.test")],
            "a@person.test"
        )
        .is_err());
        assert!(ok(&[("Subject", "dkim=pass")], "a@person.test").is_err());
        let forged = [
            (ar, "mx.test; dkim=none"),
            (ar, "mx.test; dkim=pass header.d=person.test"),
        ];
        let why = ok(&forged, "a@person.test").unwrap_err();
        assert!(why.contains("dkim=none"), "{why}");
        // Two From headers: the one read may not be the one signed.
        let two = [
            ("From", "<b@person.test>"),
            (ar, "mx.test; dkim=pass header.d=person.test"),
        ];
        let why = ok(&two, "b@person.test").unwrap_err();
        assert!(why.contains("2 From headers"), "{why}");
    }

    #[test]
    fn tls_required_is_implicit_on_465_and_993_and_starttls_elsewhere() {
        assert_eq!(Tls::Required.implicit(465), Some(true));
        assert_eq!(Tls::Required.implicit(993), Some(true));
        assert_eq!(Tls::Required.implicit(587), Some(false));
        assert_eq!(Tls::Required.implicit(143), Some(false));
        assert_eq!(Tls::Implicit.implicit(587), Some(true));
        assert_eq!(Tls::Starttls.implicit(993), Some(false));
        assert_eq!(Tls::None.implicit(993), None);
    }

    #[test]
    fn the_reply_is_what_is_above_the_quote() {
        let text = "Use SQLite.\n\nOn Fri, 27 Nov 2026 at 10:00, Relay <r@x.test> wrote:\n> Question 1\n> more";
        assert_eq!(above_quote(text), "Use SQLite.");
        // An attribution line wrapped in two.
        let text = "Yes\nOn Fri, 27 Nov 2026 at 10:00, Relay\n<r@x.test> wrote:\n> Question 1";
        assert_eq!(above_quote(text), "Yes");
        // Quoted lines within, the card's marker, a signature.
        let text = "> an aside\nFirst line\n  second line\n-- \nMe";
        assert_eq!(above_quote(text), "First line\n  second line");
        let text = format!("2\n\n{MARKER}\n\nQuestion 1");
        assert_eq!(above_quote(&text), "2");
        assert_eq!(above_quote("> only a quote\n> of the card"), "");
        let text = "ok\n\n-----Original Message-----\nFrom: relay";
        assert_eq!(above_quote(text), "ok");
        // Outlook's block above an unquoted card, a phone's line, a bare separator.
        let text = "2\r\n\r\nSent from my iPhone\r\n\r\nFrom: Relay <r@x.test>\r\nSent: Friday, \
                    27 November 2026 10:00\r\nTo: me@x.test\r\nSubject: Question 1\r\n\r\n\
                    Question 1 · design\r\n1. PostgreSQL\r\n2. SQLite";
        assert_eq!(above_quote(text), "2");
        let text = "SQLite\n________________________________\nFrom: relay\nSent: today";
        assert_eq!(above_quote(text), "SQLite");
        let text = "SQLite\n\n*Von:* Relay <r@x.test>\n*Gesendet:* Freitag\n*An:* me";
        assert_eq!(above_quote(text), "SQLite");
        let text = "Oui\n\nDe : Relay\nEnvoyé : vendredi\nÀ : moi\nObjet : Question 1";
        assert_eq!(above_quote(text), "Oui");
        assert_eq!(above_quote("Yes\nVon meinem iPhone gesendet"), "Yes");
        assert_eq!(above_quote("Yes\n--\nAlice"), "Yes");
        // A line that only looks like a header, with none after it, is the person's.
        let text = "From: the ops team's view, PostgreSQL.\nThanks";
        assert_eq!(above_quote(text), text);
    }

    #[test]
    fn an_approvals_reply_is_a_verdict_with_its_reason() {
        assert_eq!(verdict("APPROVE"), Given::Approve);
        assert_eq!(verdict("approved."), Given::Approve);
        assert_eq!(verdict("  Approve!\nShip it on Monday."), Given::Approve);
        assert_eq!(
            verdict("Reject: not reviewed\nyet"),
            Given::Reject(Some("not reviewed\nyet".into()))
        );
        assert_eq!(verdict("REJECT"), Given::Reject(None));
        assert_eq!(
            verdict("Rejected - the tests fail"),
            Given::Reject(Some("the tests fail".into()))
        );
        assert_eq!(verdict("maybe later"), Given::Text("maybe later".into()));
        // A first word is no vote.
        for text in [
            "Approved by legal? Not yet. Ask me again on Monday.",
            "approve once the tests pass",
            "Approve? Not yet",
            "Rejection is premature",
            "Reject? No, approve it",
        ] {
            assert_eq!(verdict(text), Given::Text(text.into()), "{text}");
        }
    }

    #[test]
    fn message_ids_base64_and_encoded_words() {
        assert_eq!(
            message_ids("<a@x> (c) <b@y>\t<c@z>"),
            vec!["a@x".to_string(), "b@y".into(), "c@z".into()]
        );
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(encoded_word("plain"), "plain");
        assert_eq!(encoded_word("Déploi"), "=?UTF-8?B?RMOpcGxvaQ==?=");
    }
}
