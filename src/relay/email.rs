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

use crate::strings::base64;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mail_parser::MessageParser;

use crate::output;
use questions_core::model::{self, Question};
use questions_core::ops::relay::{self, Binding, ButtonKey, FromChannel, Given, Outcome};
use questions_core::ops::Ledger;

use super::{card_text, clip, plain};

type Res<T> = std::result::Result<T, String>;

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
    pub(crate) fn new(
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
        } else if let Some(code) = super::slack::pairing_code(&text) {
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

/// An approval's reply: `APPROVE` alone on its first line (a comment may follow on the
/// next ones), or `REJECT` and a reason; anything else as typed, which the core refuses
/// saying why: a first word is not a vote ("Approved by legal? Not yet." approves
/// nothing).
pub(super) fn verdict(text: &str) -> Given {
    let trimmed = text.trim();
    let (first, rest) = trimmed.split_once('\n').unwrap_or((trimmed, ""));
    let first = first.trim();
    let word = first.trim_end_matches(['.', '!']).to_uppercase();
    if word == "APPROVE" || word == "APPROVED" {
        return Given::Approve;
    }
    let split = first
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(first.len());
    let (word, after) = first.split_at(split);
    let rejects = matches!(word.to_uppercase().as_str(), "REJECT" | "REJECTED");
    if rejects && (after.is_empty() || after.starts_with([' ', '\t', ':', '-', '—', '.', ','])) {
        let reason = format!(
            "{}\n{}",
            after
                .trim_start_matches([' ', '\t', ':', '-', '—', '.', ','])
                .trim(),
            rest.trim()
        );
        let reason = reason.trim();
        return Given::Reject((!reason.is_empty()).then(|| reason.to_string()));
    }
    Given::Text(trimmed.to_string())
}

/// The reply above the quote: lines quoted with `>` dropped, and everything from an
/// "On … wrote:" line, the card's marker line, a forwarded or original-message line, an
/// Outlook header block (From/Sent/To/Subject, in a few languages) or its rule of
/// underscores, a phone's "Sent from my …" line, or a signature separator down.
pub(crate) fn above_quote(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept: Vec<&str> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        let attribution = t.ends_with("wrote:")
            && (t.starts_with("On ")
                || kept
                    .last()
                    .is_some_and(|prev| prev.trim_start().starts_with("On ")));
        if attribution && !t.starts_with("On ") {
            kept.pop();
        }
        if attribution
            || t.contains(MARKER)
            || line.trim_end_matches(' ') == "--"
            || (t.starts_with("-----") && t.to_lowercase().contains("original message"))
            || (t.len() >= 10 && t.chars().all(|c| c == '_'))
            || header_block(&lines[i..])
            || sent_from(t)
        {
            break;
        }
        if t.starts_with('>') {
            continue;
        }
        kept.push(line);
    }
    kept.join("\n").trim().to_string()
}

/// The labels of a quoted message's header block as Outlook writes it above the quote:
/// who it was from, then when it was sent, to whom, about what (English, German, French,
/// Spanish, Portuguese, Italian, Dutch, Swedish).
const FROM_LABELS: &[&str] = &["from", "von", "de", "da", "van", "från", "fra"];
const HEADER_LABELS: &[&str] = &[
    "sent",
    "date",
    "to",
    "cc",
    "subject",
    "gesendet",
    "datum",
    "an",
    "betreff",
    "envoyé",
    "à",
    "objet",
    "enviado",
    "fecha",
    "para",
    "asunto",
    "inviato",
    "data",
    "a",
    "oggetto",
    "verzonden",
    "aan",
    "onderwerp",
    "skickat",
    "till",
    "ämne",
];

/// The label of a header-like line (`From: …`, `*Sent:* …`, `De : …`), lower case.
fn header_label(line: &str) -> Option<String> {
    let t = line.trim().trim_start_matches('*');
    let (label, _) = t.split_once(':')?;
    let label = label.trim().trim_end_matches('*').trim().to_lowercase();
    (!label.is_empty() && label.chars().count() <= 12).then_some(label)
}

/// Whether `lines` start with a header block: a From line, and a Sent, Date, To or
/// Subject line among the next three.
fn header_block(lines: &[&str]) -> bool {
    let Some(first) = lines.first().and_then(|l| header_label(l)) else {
        return false;
    };
    FROM_LABELS.contains(&first.as_str())
        && lines
            .iter()
            .skip(1)
            .take(3)
            .any(|l| header_label(l).is_some_and(|label| HEADER_LABELS.contains(&label.as_str())))
}

/// A mail app's line under what was written ("Sent from my iPhone", "Get Outlook for
/// Android", and their translations).
fn sent_from(line: &str) -> bool {
    let t = line.to_lowercase();
    t.chars().count() <= 80
        && ([
            "sent from my ",
            "sent from outlook",
            "sent from mail for",
            "sent from yahoo",
            "sent with ",
            "sent via ",
            "get outlook for ",
            "envoyé de mon ",
            "envoyé depuis ",
            "enviado desde mi ",
            "enviado do meu ",
            "inviato da ",
            "verzonden vanaf mijn ",
            "skickat från min ",
        ]
        .iter()
        .any(|p| t.starts_with(p))
            || (t.starts_with("von meinem ") && t.trim_end_matches('.').ends_with("gesendet")))
}

/// Message ids named in an `In-Reply-To` or `References` value, without their brackets.
fn message_ids(value: &str) -> Vec<String> {
    value
        .split('<')
        .skip(1)
        .filter_map(|part| part.split_once('>').map(|(id, _)| id.trim().to_string()))
        .filter(|id| !id.is_empty())
        .collect()
}

/// A header's value on one line.
fn unfold(value: &str) -> String {
    value
        .replace("\r\n", "")
        .replace('\n', "")
        .replace('\t', " ")
        .trim()
        .to_string()
}

/// Text without its comments (RFC 5322 parenthesised, possibly nested).
fn uncommented(text: &str) -> String {
    let mut depth = 0usize;
    let mut quoted = false;
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '"' if depth == 0 => {
                quoted = !quoted;
                out.push(c);
            }
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `from` is vouched for: the topmost `Authentication-Results` header whose
/// authserv-id is `authserv_id` has `dkim=pass` with a `header.d` (or `header.i`'s
/// domain) equal to `from`'s domain or a parent of it (relaxed alignment). Headers of
/// any other authserv-id, and any of ours below the topmost, are not read: a sender
/// writes what they like there. A message with more than one `From` header is never
/// vouched for. Else why not.
pub(crate) fn vouched_for(
    headers: &[(String, String)],
    authserv_id: &str,
    from: &str,
) -> Result<(), String> {
    let Some((_, domain)) = from.rsplit_once('@') else {
        return Err("the From address has no domain".into());
    };
    // A second From (one DKIM did not sign, above the one it did) would let a sender of a
    // shared domain speak as another of its users.
    let froms = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("From"))
        .count();
    if froms != 1 {
        return Err(format!(
            "the sender is not vouched for: the message has {froms} From headers"
        ));
    }
    let domain = domain.to_lowercase();
    let trusted = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Authentication-Results"))
        .map(|(_, v)| uncommented(v))
        .find(|v| {
            v.split(';')
                .next()
                .and_then(|id| id.split_whitespace().next())
                .is_some_and(|id| id.eq_ignore_ascii_case(authserv_id))
        });
    let Some(results) = trusted else {
        return Err(format!(
            "the sender is not vouched for: no Authentication-Results from {authserv_id}"
        ));
    };
    let mut said = Vec::new();
    for resinfo in results.split(';').skip(1) {
        let mut words = resinfo.split_whitespace();
        let Some((method, result)) = words.next().and_then(|w| w.split_once('=')) else {
            continue;
        };
        if !method.eq_ignore_ascii_case("dkim") {
            continue;
        }
        said.push(result.to_lowercase());
        if !result.eq_ignore_ascii_case("pass") {
            continue;
        }
        let signer = words.find_map(|w| {
            let (prop, value) = w.split_once('=')?;
            let value = value.trim_matches('"').to_lowercase();
            if prop.eq_ignore_ascii_case("header.d") {
                Some(value)
            } else if prop.eq_ignore_ascii_case("header.i") {
                value.rsplit_once('@').map(|(_, d)| d.to_string())
            } else {
                None
            }
        });
        if let Some(d) = signer {
            if !d.is_empty() && (domain == d || domain.ends_with(&format!(".{d}"))) {
                return Ok(());
            }
        }
    }
    Err(format!(
        "the sender is not vouched for: {authserv_id} found no passing DKIM signature of \
         the From domain {domain} (dkim={})",
        if said.is_empty() {
            "none".to_string()
        } else {
            said.join(",")
        }
    ))
}

struct Compose<'a> {
    from: &'a str,
    to: &'a str,
    subject: &'a str,
    /// Without its brackets.
    message_id: &'a str,
    reply_to: Option<&'a str>,
    in_reply_to: Option<&'a str>,
    body: &'a str,
}

/// A plain-text message in UTF-8 (its body in base64, its subject an encoded word when
/// it is not ASCII), marked as sent by a program (RFC 3834).
fn compose(m: &Compose) -> String {
    let mut out = String::new();
    out.push_str(&format!("From: {}\r\n", m.from));
    out.push_str(&format!("To: {}\r\n", m.to));
    out.push_str(&format!("Subject: {}\r\n", encoded_word(m.subject)));
    out.push_str(&format!("Date: {}\r\n", chrono::Utc::now().to_rfc2822()));
    out.push_str(&format!("Message-ID: <{}>\r\n", m.message_id));
    if let Some(r) = m.reply_to {
        out.push_str(&format!("Reply-To: {r}\r\n"));
    }
    if let Some(r) = m.in_reply_to {
        out.push_str(&format!("In-Reply-To: <{r}>\r\nReferences: <{r}>\r\n"));
    }
    out.push_str("Auto-Submitted: auto-generated\r\n");
    out.push_str("MIME-Version: 1.0\r\n");
    out.push_str("Content-Type: text/plain; charset=utf-8\r\n");
    out.push_str("Content-Transfer-Encoding: base64\r\n\r\n");
    let body = base64(
        m.body
            .replace("\r\n", "\n")
            .replace('\n', "\r\n")
            .as_bytes(),
    );
    for chunk in body.as_bytes().chunks(76) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push_str("\r\n");
    }
    out
}

fn encoded_word(text: &str) -> String {
    let text: String = text.chars().filter(|c| !c.is_control()).collect();
    if text.is_ascii() {
        return text;
    }
    // Encoded words of at most 75 characters: 45 bytes of UTF-8 each, cut on a char.
    let mut words = Vec::new();
    let mut chunk = String::new();
    for c in text.chars() {
        if chunk.len() + c.len_utf8() > 45 {
            words.push(format!("=?UTF-8?B?{}?=", base64(chunk.as_bytes())));
            chunk.clear();
        }
        chunk.push(c);
    }
    if !chunk.is_empty() {
        words.push(format!("=?UTF-8?B?{}?=", base64(chunk.as_bytes())));
    }
    words.join("\r\n ")
}

/// A connection, plain or TLS, read line by line.
struct Conn {
    stream: Stream,
    buffer: Vec<u8>,
    host: String,
    port: u16,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Gone,
}

impl Conn {
    fn connect(at: &Endpoint, implicit_tls: bool, tls: &Arc<rustls::ClientConfig>) -> Res<Conn> {
        let tcp = TcpStream::connect((at.host.as_str(), at.port))
            .map_err(|e| format!("cannot connect to {}:{}: {e}", at.host, at.port))?;
        tcp.set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| tcp.set_write_timeout(Some(IO_TIMEOUT)))
            .map_err(|e| e.to_string())?;
        let mut conn = Conn {
            stream: Stream::Plain(tcp),
            buffer: Vec::new(),
            host: at.host.clone(),
            port: at.port,
        };
        if implicit_tls {
            conn.start_tls(tls)?;
        }
        Ok(conn)
    }

    /// Wraps the connection in TLS and completes the handshake before anything else is
    /// said: the server's name and certificate checked against `config`'s roots.
    fn start_tls(&mut self, config: &Arc<rustls::ClientConfig>) -> Res<()> {
        let Stream::Plain(tcp) = std::mem::replace(&mut self.stream, Stream::Gone) else {
            return Err("TLS is on already".into());
        };
        // What the server sent before TLS is not read as if it came over TLS.
        self.buffer.clear();
        let at = format!("{}:{}", self.host, self.port);
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|e| format!("TLS to {at}: {e}"))?;
        let connection = rustls::ClientConnection::new(Arc::clone(config), name)
            .map_err(|e| format!("TLS to {at}: {e}"))?;
        let mut stream = rustls::StreamOwned::new(connection, tcp);
        while stream.conn.is_handshaking() {
            if let Err(e) = stream.conn.complete_io(&mut stream.sock) {
                return Err(tls_failure(&at, &e));
            }
        }
        self.stream = Stream::Tls(Box::new(stream));
        Ok(())
    }

    fn tcp(&self) -> Option<&TcpStream> {
        match &self.stream {
            Stream::Plain(t) => Some(t),
            Stream::Tls(s) => Some(&s.sock),
            Stream::Gone => None,
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> Res<()> {
        let written = match &mut self.stream {
            Stream::Plain(t) => t.write_all(bytes).and_then(|()| t.flush()),
            Stream::Tls(s) => s.write_all(bytes).and_then(|()| s.flush()),
            Stream::Gone => return Err("the connection is gone".into()),
        };
        written.map_err(|e| format!("cannot write to {}: {e}", self.host))
    }

    /// One line, without its CRLF. `Ok(None)`: the read timed out (what was read so far
    /// is kept for the next call).
    fn line(&mut self) -> Res<Option<Vec<u8>>> {
        loop {
            if let Some(at) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                let line = self.buffer[..at].to_vec();
                self.buffer.drain(..at + 2);
                return Ok(Some(line));
            }
            if self.buffer.len() > 1 << 20 {
                return Err("a line longer than a megabyte".into());
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// A line that must come (a timeout is an error).
    fn must_line(&mut self) -> Res<Vec<u8>> {
        let end = Instant::now() + IO_TIMEOUT;
        loop {
            if let Some(line) = self.line()? {
                return Ok(line);
            }
            if Instant::now() > end {
                return Err(format!(
                    "{} said nothing for {}s",
                    self.host,
                    IO_TIMEOUT.as_secs()
                ));
            }
        }
    }

    /// `n` bytes (an IMAP literal).
    fn bytes(&mut self, n: usize) -> Res<Vec<u8>> {
        let end = Instant::now() + IO_TIMEOUT;
        while self.buffer.len() < n {
            if !self.fill()? && Instant::now() > end {
                return Err(format!("{} stopped in a message", self.host));
            }
        }
        Ok(self.buffer.drain(..n).collect())
    }

    /// Reads what the server sent into the buffer; `false` when the read timed out.
    fn fill(&mut self) -> Res<bool> {
        let mut chunk = [0u8; 16 * 1024];
        let read = match &mut self.stream {
            Stream::Plain(t) => t.read(&mut chunk),
            Stream::Tls(s) => s.read(&mut chunk),
            Stream::Gone => return Err("the connection is gone".into()),
        };
        match read {
            Ok(0) => Err(format!("{} closed the connection", self.host)),
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Ok(false)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(format!("cannot read from {}: {e}", self.host)),
        }
    }
}

/// Why a TLS handshake failed, in the config's words when the certificate was refused.
fn tls_failure(at: &str, e: &std::io::Error) -> String {
    let refused = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|r| {
            matches!(
                r,
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
            )
        });
    if refused {
        format!(
            "TLS to {at}: the server's certificate was refused ({e}); a private CA's \
             certificate goes in email.ca_file"
        )
    } else {
        format!("TLS to {at}: the handshake failed ({e})")
    }
}

/// An SMTP reply: its code and its lines' text.
fn smtp_reply(conn: &mut Conn) -> Res<(u16, String)> {
    let mut text = String::new();
    loop {
        let line = String::from_utf8_lossy(&conn.must_line()?).to_string();
        let code: u16 = line.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
        text.push_str(line.get(4..).unwrap_or(""));
        text.push('\n');
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok((code, text));
        }
    }
}

fn smtp_step(conn: &mut Conn, command: &str, want: &[u16], what: &str) -> Res<String> {
    conn.write_all(format!("{command}\r\n").as_bytes())?;
    let (code, text) = smtp_reply(conn)?;
    if !want.contains(&code) {
        return Err(format!(
            "{what} answered {code} {}",
            output::sanitize(text.trim(), false)
        ));
    }
    Ok(text)
}

/// Sends one message: EHLO, STARTTLS (unless implicit TLS, or `tls = "none"`), AUTH
/// PLAIN where the server offers it, MAIL, RCPT, DATA.
fn smtp_send(email: &Email, to: &str, message: &str) -> Res<()> {
    if to.contains(['<', '>', '\r', '\n']) || email.address.contains(['<', '>', '\r', '\n']) {
        return Err("an address with brackets or line breaks".into());
    }
    let tls = email.tls.implicit(email.smtp.port);
    let mut conn = Conn::connect(&email.smtp, tls == Some(true), &email.tls_config)?;
    let (code, _) = smtp_reply(&mut conn)?;
    if code != 220 {
        return Err(format!("the server greeted with {code}"));
    }
    let helo = format!("EHLO {}", email.domain);
    let mut offered = smtp_step(&mut conn, &helo, &[250], "EHLO")?;
    if tls == Some(false) {
        // Refused or not offered: the message is not sent (never in plain text).
        smtp_step(&mut conn, "STARTTLS", &[220], "STARTTLS")?;
        conn.start_tls(&email.tls_config)?;
        offered = smtp_step(&mut conn, &helo, &[250], "EHLO")?;
    }
    let auth = offered
        .lines()
        .any(|l| l.to_uppercase().starts_with("AUTH") && l.to_uppercase().contains("PLAIN"));
    if auth {
        let plain = base64(format!("\0{}\0{}", email.username, email.password).as_bytes());
        smtp_step(&mut conn, &format!("AUTH PLAIN {plain}"), &[235], "AUTH")?;
    }
    smtp_step(
        &mut conn,
        &format!("MAIL FROM:<{}>", email.address),
        &[250],
        "MAIL FROM",
    )?;
    smtp_step(
        &mut conn,
        &format!("RCPT TO:<{to}>"),
        &[250, 251],
        "RCPT TO",
    )?;
    smtp_step(&mut conn, "DATA", &[354], "DATA")?;
    let mut data = String::with_capacity(message.len() + 8);
    for line in message.split("\r\n") {
        if line.starts_with('.') {
            data.push('.');
        }
        data.push_str(line);
        data.push_str("\r\n");
    }
    // `message` ends with CRLF: its last split is empty.
    let data = data.trim_end_matches("\r\n").to_string() + "\r\n.";
    smtp_step(&mut conn, &data, &[250], "the message")?;
    let _ = smtp_step(&mut conn, "QUIT", &[221], "QUIT");
    Ok(())
}

/// What an IMAP command answered: its untagged lines, each with its literals.
struct Untagged {
    line: String,
    literals: Vec<Vec<u8>>,
}

/// An IMAP session: logged in, the INBOX selected.
struct Imap {
    conn: Conn,
    tag: u32,
    validity: u64,
    next_uid: u64,
    idle: bool,
}

/// A string as an IMAP quoted string.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Imap {
    fn open(email: &Email) -> Res<Imap> {
        let tls = email.tls.implicit(email.imap.port);
        let conn = Conn::connect(&email.imap, tls == Some(true), &email.tls_config)?;
        let mut imap = Imap {
            conn,
            tag: 0,
            validity: 0,
            next_uid: 1,
            idle: false,
        };
        let greeting = String::from_utf8_lossy(&imap.conn.must_line()?).to_string();
        if !greeting.starts_with("* OK") && !greeting.starts_with("* PREAUTH") {
            return Err("the IMAP server did not greet with OK".into());
        }
        if tls == Some(false) {
            // Refused or not offered: no LOGIN (never the password in plain text).
            imap.command("STARTTLS")?;
            imap.conn.start_tls(&email.tls_config)?;
        }
        imap.command(&format!(
            "LOGIN {} {}",
            quoted(&email.username),
            quoted(&email.password)
        ))
        .map_err(|_| "the IMAP login was refused (username_env, password_env)".to_string())?;
        let capabilities = imap.command("CAPABILITY")?;
        imap.idle = capabilities.iter().any(|u| {
            u.line
                .to_uppercase()
                .split_whitespace()
                .any(|w| w == "IDLE")
        });
        for u in imap.command("SELECT INBOX")? {
            let upper = u.line.to_uppercase();
            if let Some(n) = number_after(&upper, "[UIDVALIDITY ") {
                imap.validity = n;
            }
            if let Some(n) = number_after(&upper, "[UIDNEXT ") {
                imap.next_uid = n;
            }
        }
        if imap.validity == 0 {
            return Err("SELECT INBOX answered no UIDVALIDITY".into());
        }
        Ok(imap)
    }

    fn next_tag(&mut self) -> String {
        self.tag += 1;
        format!("R{}", self.tag)
    }

    /// A line with its literals (`{n}` at a line's end announces n bytes).
    fn response(&mut self, first: Vec<u8>) -> Res<Untagged> {
        let mut line = first;
        let mut literals = Vec::new();
        loop {
            let announced = (line.last() == Some(&b'}'))
                .then(|| {
                    let open = line.iter().rposition(|b| *b == b'{')?;
                    std::str::from_utf8(&line[open + 1..line.len() - 1])
                        .ok()?
                        .trim_end_matches('+')
                        .parse::<usize>()
                        .ok()
                })
                .flatten();
            let Some(n) = announced else {
                break;
            };
            literals.push(self.conn.bytes(n)?);
            line.extend_from_slice(b" <literal> ");
            let rest = self.conn.must_line()?;
            line.extend_from_slice(&rest);
        }
        Ok(Untagged {
            line: String::from_utf8_lossy(&line).to_string(),
            literals,
        })
    }

    /// Sends a command; its untagged responses, once it is answered OK.
    fn command(&mut self, command: &str) -> Res<Vec<Untagged>> {
        let tag = self.next_tag();
        self.conn
            .write_all(format!("{tag} {command}\r\n").as_bytes())?;
        self.until_tagged(&tag, command)
    }

    fn until_tagged(&mut self, tag: &str, command: &str) -> Res<Vec<Untagged>> {
        let mut untagged = Vec::new();
        loop {
            let first = self.conn.must_line()?;
            let u = self.response(first)?;
            if let Some(rest) = u.line.strip_prefix(&format!("{tag} ")) {
                if rest.to_uppercase().starts_with("OK") {
                    return Ok(untagged);
                }
                let verb = command.split_whitespace().next().unwrap_or("");
                return Err(format!(
                    "IMAP {verb} answered {}",
                    output::sanitize(&clip(rest, 200), false)
                ));
            }
            untagged.push(u);
        }
    }

    /// The messages with a UID above `last`, in UID order, read without marking them
    /// seen.
    fn fetch_after(&mut self, last: u64) -> Res<Vec<(u64, Vec<u8>)>> {
        let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
        for u in self.command(&format!("UID FETCH {}:* (UID BODY.PEEK[])", last + 1))? {
            let upper = u.line.to_uppercase();
            if !upper.contains(" FETCH ") {
                continue;
            }
            let (Some(uid), Some(raw)) =
                (number_after(&upper, "UID "), u.literals.into_iter().next())
            else {
                continue;
            };
            // `n:*` names the last message even when its UID is below n.
            if uid > last {
                out.push((uid, raw));
            }
        }
        out.sort_by_key(|(uid, _)| *uid);
        Ok(out)
    }

    /// Waits for new mail: IDLE until the server says a message exists or `most` has
    /// passed; without IDLE, a NOOP every 3 seconds.
    fn wait(&mut self, most: Duration) -> Res<()> {
        if !self.idle {
            std::thread::sleep(Duration::from_secs(3).min(most));
            self.command("NOOP")?;
            return Ok(());
        }
        let tag = self.next_tag();
        self.conn.write_all(format!("{tag} IDLE\r\n").as_bytes())?;
        let go = self.conn.must_line()?;
        if !go.starts_with(b"+") {
            return Err("IDLE was not accepted".into());
        }
        if let Some(t) = self.conn.tcp() {
            t.set_read_timeout(Some(Duration::from_secs(1)))
                .map_err(|e| e.to_string())?;
        }
        let end = Instant::now() + most;
        let mut heard = Ok(());
        while Instant::now() < end {
            match self.conn.line() {
                Ok(Some(line)) => {
                    let line = String::from_utf8_lossy(&line).to_uppercase();
                    if line.starts_with("* ")
                        && (line.ends_with(" EXISTS") || line.ends_with(" RECENT"))
                    {
                        break;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    heard = Err(e);
                    break;
                }
            }
        }
        heard?;
        if let Some(t) = self.conn.tcp() {
            t.set_read_timeout(Some(IO_TIMEOUT))
                .map_err(|e| e.to_string())?;
        }
        self.conn.write_all(b"DONE\r\n")?;
        self.until_tagged(&tag, "IDLE")?;
        Ok(())
    }
}

/// The number after `label` in `text`.
fn number_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
