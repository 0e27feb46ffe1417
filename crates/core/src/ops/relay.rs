//! The relay's operations (§14): people's channel identities, pairing codes, the cards
//! put to people, and the one operation that records what a person did on a channel.
//! Every rule is checked here, in the transaction that records the answer: a channel's
//! front end only translates the provider's events into a `FromChannel` and says back
//! the `Heard` reply.

use std::collections::BTreeSet;

use serde::Serialize;

use super::change::{change_in, Act, PersonsChange, Shown};
use super::expire_due;
use super::people::{delegates_of, Identity};
use super::secret::{hex, random, sha256_hex};
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{
    check_name, Actor, AnswerInput, Ballot, Channel, Question, Relayed, Status, Verdict,
};
use crate::store::{Delivery, Filter, Ledger, Link, Tx};

pub use super::people::{channel_identity, PEOPLE_ADMINS};

/// How long a pairing code is valid.
pub const PAIRING_VALID: std::time::Duration = std::time::Duration::from_mins(10);

/// The key that signs the buttons' values, by its name (`key:buttons` in `relay_state`).
const BUTTON_KEY: &str = "buttons";

/// The channels a relay serves, as their identities are prefixed.
pub fn relay_channel(name: &str) -> Option<Channel> {
    Relayed::named(name).map(Relayed::channel)
}

/// Who `identity` stands for, and whether they may change `name`'s links: themself, or an
/// admin of the group `people` (which only the ledger's owner makes).
fn may_change_links(tx: &Tx, identity: &Identity, name: &str) -> Result<String> {
    let caller = identity.resolve(tx)?;
    if caller == name || tx.is_group_admin(PEOPLE_ADMINS, &caller, identity.is_local())? {
        return Ok(caller);
    }
    Err(Error::new(
        ErrorCode::Forbidden,
        format!(
            "{caller} may not change {name}'s channel links: only {name} themself, or an \
             admin of the group '{PEOPLE_ADMINS}', whom the ledger's owner names (questions \
             group create {PEOPLE_ADMINS} --admins NAME,…)"
        ),
    ))
}

/// What `people link|unlink` did.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PeopleChanged {
    pub person: String,
    pub identity: String,
    /// Whether the ledger changed (linking what is linked, or unlinking what is not,
    /// changes nothing and records nothing).
    pub changed: bool,
    pub links: Vec<Link>,
}

/// `people link|unlink NAME CHANNEL:ID`: guarded as a group change is (§12), by who the
/// channel vouches for; every change is a `people` event.
pub fn people_link(
    ledger: &mut Ledger,
    identity: &Identity,
    channel: Channel,
    name: &str,
    channel_id: &str,
    link: bool,
) -> Result<PeopleChanged> {
    check_name(name, "person").map_err(Error::usage)?;
    let id = channel_identity(channel_id)?;
    let at = clock::now();
    ledger.write(|tx| {
        let caller = may_change_links(tx, identity, name)?;
        let actor = Actor {
            by: Some(caller),
            channel,
            at: at.clone(),
        };
        let on_record = tx.person_of(&id)?;
        let changed = if link {
            match on_record.as_deref() {
                Some(p) if p == name => false,
                Some(other) => {
                    return Err(Error::conflict(format!(
                        "{id} is linked to {other}: one identity is one person; nothing was \
                         changed (unlink it from {other} first)"
                    )))
                }
                None => {
                    tx.insert_link(&id, name, &at)?;
                    true
                }
            }
        } else {
            tx.delete_link(&id, name)?
        };
        if changed {
            tx.people_event(
                &actor,
                &serde_json::json!({
                    "person": name,
                    "identity": id,
                    if link { "linked" } else { "unlinked" }: true,
                }),
            )?;
        }
        Ok(PeopleChanged {
            person: name.to_string(),
            identity: id.clone(),
            changed,
            links: tx
                .links()?
                .into_iter()
                .filter(|l| l.person == name)
                .collect(),
        })
    })
}

/// `people list`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct People {
    pub count: usize,
    pub links: Vec<Link>,
    /// Who stands in for whom, and until when (§14a); ended ones are left out.
    pub delegations: Vec<crate::store::Delegation>,
    /// Whose cards wait inside which daily window (§14a).
    pub quiet: Vec<crate::store::QuietHours>,
}

pub fn people_list(ledger: &mut Ledger) -> Result<People> {
    let now = clock::now();
    let (links, delegations, quiet) =
        ledger.read(|tx| Ok((tx.links()?, tx.delegations()?, tx.quiet_hours()?)))?;
    Ok(People {
        count: links.len(),
        links,
        delegations: delegations.into_iter().filter(|d| d.until > now).collect(),
        quiet,
    })
}

/// A one-time pairing code (`relay pair`): shown once, stored as its hash.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Pairing {
    pub channel: String,
    pub person: String,
    pub code: String,
    pub expires_at: String,
    /// What the person sends the bot.
    pub send: String,
}

/// Letters that cannot be mistaken for one another on a phone.
pub const CODE_LETTERS: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// How many letters a pairing code has.
pub const CODE_LENGTH: usize = 10;

/// Makes a pairing code for `name` on `channel`, guarded as a link is.
pub fn pairing_code(
    ledger: &mut Ledger,
    identity: &Identity,
    on: Channel,
    channel: &str,
    name: &str,
) -> Result<Pairing> {
    check_name(name, "person").map_err(Error::usage)?;
    let Some(relayed) = Relayed::named(channel) else {
        return Err(Error::usage(format!(
            "'{channel}' is not a relay channel: {}",
            Relayed::listed("or", str::to_string)
        )));
    };
    let code: String = random(CODE_LENGTH)?
        .iter()
        .map(|b| CODE_LETTERS[usize::from(*b) % CODE_LETTERS.len()] as char)
        .collect();
    let at = clock::now();
    let expires_at = clock::after(&at, PAIRING_VALID);
    ledger.write(|tx| {
        let caller = may_change_links(tx, identity, name)?;
        tx.insert_pairing(&sha256_hex(&code), channel, name, &expires_at)?;
        tx.people_event(
            &Actor {
                by: Some(caller),
                channel: on,
                at: at.clone(),
            },
            &serde_json::json!({"person": name, "pairing": channel, "expires_at": expires_at}),
        )
    })?;
    Ok(Pairing {
        channel: channel.to_string(),
        person: name.to_string(),
        send: relayed.pairing_message(&code),
        code,
        expires_at,
    })
}

/// The key that signs buttons, made on first use and kept in the ledger: a relay that
/// restarts (or another on the same ledger) checks the buttons of cards already out.
#[derive(Clone)]
pub struct ButtonKey(Vec<u8>);

impl std::fmt::Debug for ButtonKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ButtonKey(…)")
    }
}

impl ButtonKey {
    fn mac(&self, delivery: i64, value: &str) -> [u8; 32] {
        hmac_sha256(&self.0, format!("{delivery}:{value}").as_bytes())
    }

    /// The signature of a button's `value` on the card of `delivery`: 10 bytes in hex,
    /// so that a whole button (`<delivery>:<value>:<signature>`) fits Telegram's 64 bytes.
    pub fn sign(&self, delivery: i64, value: &str) -> String {
        hex(&self.mac(delivery, value)[..SIGNATURE_BYTES])
    }

    fn verify(&self, delivery: i64, value: &str, signature: &str) -> bool {
        let Some(given) = unhex(signature) else {
            return false;
        };
        let expected = self.mac(delivery, value);
        // In constant time: how much of a signature matched says nothing.
        given.len() == SIGNATURE_BYTES
            && given
                .iter()
                .zip(&expected[..SIGNATURE_BYTES])
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

/// HMAC-SHA256 (RFC 2104) over the core's own SHA-256: a dozen lines instead of the
/// `hmac` crate and its two constant-time helpers in every build of the command line.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

const SIGNATURE_BYTES: usize = 10;

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn key_in(tx: &Tx) -> Result<Option<ButtonKey>> {
    Ok(tx
        .relay_key(BUTTON_KEY)?
        .and_then(|k| unhex(&k))
        .map(ButtonKey))
}

/// The ledger's button key, made when there is none.
pub fn button_key(ledger: &mut Ledger) -> Result<ButtonKey> {
    if let Some(key) = ledger.read(key_in)? {
        return Ok(key);
    }
    let fresh = hex(&random(32)?);
    ledger.write(|tx| {
        tx.insert_relay_key(BUTTON_KEY, &fresh, &clock::now())?;
        key_in(tx)?.ok_or_else(|| Error::db("the relay's key was not written"))
    })
}

/// How a person's action is tied to a card that was sent to them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// A button's value, as the card carried it: `<delivery>:<value>:<signature>`.
    Button(String),
    /// A reply to the card's message (the provider's reference to it).
    Reply(String),
    /// An email reply: the token of the address it was sent to (`<delivery>.<signature>`,
    /// signed over `REPLY_VALUE`) and the message ids it names in `In-Reply-To` and
    /// `References`, which must include that card's.
    Token {
        token: String,
        replying_to: Vec<String>,
    },
    /// Nothing ties it to a card (a message on its own).
    None,
}

/// What the person gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given {
    /// Options by their number (1-based): one, or several for a multi-select.
    Options(Vec<usize>),
    /// Typed text: recorded verbatim, or the option it is exactly the number or label of.
    Text(String),
    Approve,
    /// A rejection, with the reason typed if any.
    Reject(Option<String>),
    /// The card's proposed value, taken.
    Proposed,
}

/// One provider event that may record an answer.
#[derive(Debug, Clone)]
pub struct FromChannel {
    pub channel: Channel,
    /// The sender's provider id, as `channel_identity` writes it.
    pub identity: String,
    /// The provider's event id (Telegram: `update:<update_id>`): kept once.
    pub event_id: String,
    pub binding: Binding,
    pub given: Given,
    /// The channel's read position after this event, stored in the same transaction.
    pub position: Option<String>,
}

/// What became of an event, and what to tell its sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Recorded,
    /// The same event again (a redelivery): nothing changed.
    Repeated,
    /// The question had left pending before (a second click, another device).
    Settled,
    Refused,
}

#[derive(Debug, Clone)]
pub struct Heard {
    pub outcome: Outcome,
    pub question_id: Option<i64>,
    pub person: Option<String>,
    /// The question as it stands after the event, when it names one.
    pub question: Option<Question>,
    /// What the channel says back to the sender.
    pub reply: String,
}

/// The value a reply address's token is signed over (`ButtonKey::sign(delivery,
/// REPLY_VALUE)`): never a button's value, so a token is no button and a button no token.
pub const REPLY_VALUE: &str = "reply";

/// A button's parts: the delivery it belongs to, its value, its signature.
pub fn split_button(data: &str) -> Option<(i64, &str, &str)> {
    let mut parts = data.splitn(3, ':');
    let delivery = parts.next()?.parse().ok()?;
    let value = parts.next()?;
    let signature = parts.next()?;
    Some((delivery, value, signature))
}

/// What a settled question's card says, and a later click is told.
pub fn settled_words(q: Option<&Question>) -> String {
    let Some(q) = q else {
        return "this question is no longer in the ledger (cleared)".to_string();
    };
    let mut who = q
        .state
        .answered_by
        .as_deref()
        .unwrap_or("nobody")
        .to_string();
    // A delegate's vote that settled it is theirs, for the approver it counts for.
    if let Some(p) = q.state.approval.as_ref().and_then(|a| {
        a.votes
            .iter()
            .rev()
            .find(|v| v.by == who)
            .and_then(|v| v.on_behalf_of.as_deref())
    }) {
        who = format!("{who} for {p}");
    }
    let via = q.state.channel.map_or("", Channel::as_str);
    let what = match q.state.status {
        Status::Answered => format!(
            "already answered by {who} via {via}: {}",
            q.state.answer.as_deref().unwrap_or("")
        ),
        Status::Skipped => format!("already skipped by {who} via {via}"),
        Status::Declined => format!("already declined by {who} via {via}"),
        Status::Pending => "still pending".to_string(),
    };
    what
}

/// Records what a person did on a channel (§14), checking in one write transaction that
/// the sender is linked to a person, the action is bound to a card sent to that person,
/// the question is still pending and still the one on the card, not expired, and (for a
/// vote) that §12 lets them vote; the event id is kept once and the read position moves
/// with it. Anything else is a `refused` event, and `Heard::reply` says why.
pub fn hear(ledger: &mut Ledger, event: &FromChannel) -> Result<Heard> {
    let now = clock::now();
    let channel = event.channel.as_str();
    ledger.write(|tx| {
        let heard = hear_in(tx, event, &now)?;
        if heard.outcome != Outcome::Repeated {
            tx.insert_relay_event(
                channel,
                &event.event_id,
                heard.question_id.unwrap_or(0),
                heard.person.as_deref(),
                match heard.outcome {
                    Outcome::Recorded => "recorded",
                    Outcome::Settled => "settled",
                    Outcome::Refused | Outcome::Repeated => "refused",
                },
                &now,
            )?;
        }
        if let Some(position) = &event.position {
            tx.set_relay_position(channel, position, &now)?;
        }
        Ok(heard)
    })
}

fn hear_in(tx: &Tx, event: &FromChannel, now: &str) -> Result<Heard> {
    let channel = event.channel.as_str();
    if let Some((question_id, person, outcome)) = tx.relay_event(channel, &event.event_id)? {
        let question = tx.question(question_id)?;
        let reply = match (outcome.as_str(), &person) {
            ("recorded", Some(p)) => format!("already answered by {p}"),
            _ => settled_words(question.as_ref()),
        };
        return Ok(Heard {
            outcome: Outcome::Repeated,
            question_id: Some(question_id).filter(|id| *id != 0),
            person,
            question,
            reply,
        });
    }
    expire_due(tx, now)?;
    let person = tx.person_of(&event.identity)?;
    let actor = Actor {
        by: person.clone(),
        channel: event.channel,
        at: now.to_string(),
    };
    let about = serde_json::json!({"identity": event.identity, "event": event.event_id});
    let refuse = |question: Option<&Question>, why: String| -> Result<Heard> {
        let mut detail = about.clone();
        detail["refused"] = why.clone().into();
        tx.refused_event(
            question.map_or(0, |q| q.id),
            question.map(|q| q.stage.as_str()),
            &actor,
            &detail,
        )?;
        Ok(Heard {
            outcome: Outcome::Refused,
            question_id: question.map(|q| q.id),
            person: person.clone(),
            question: question.cloned(),
            reply: why,
        })
    };
    let Some(who) = person.clone() else {
        return refuse(
            None,
            format!(
                "this {channel} account is not linked to anyone in the ledger, so it cannot \
                 answer; ask for a pairing code (questions relay pair {channel} NAME)"
            ),
        );
    };
    let (delivery, value) = match &event.binding {
        Binding::Button(data) => {
            let key = key_in(tx)?;
            let parts = split_button(data);
            let Some(((id, value, signature), key)) = parts.zip(key) else {
                return refuse(None, "this button is not one of this ledger's cards".into());
            };
            if !key.verify(id, value, signature) {
                return refuse(
                    None,
                    "this button's value is not one this relay signed".into(),
                );
            }
            (tx.delivery(id)?, Some(value.to_string()))
        }
        Binding::Reply(reference) => (tx.delivery_by_ref(channel, reference)?, None),
        Binding::Token { token, replying_to } => {
            let parsed = token
                .split_once('.')
                .and_then(|(d, s)| Some((d.parse::<i64>().ok()?, s)));
            let Some(((id, signature), key)) = parsed.zip(key_in(tx)?) else {
                return refuse(
                    None,
                    "this reply address is not one of this ledger's".into(),
                );
            };
            if !key.verify(id, REPLY_VALUE, signature) {
                return refuse(
                    None,
                    "this reply address was not signed by this relay".into(),
                );
            }
            let delivery = tx.delivery(id)?.filter(|d| {
                d.message_ref
                    .as_ref()
                    .is_some_and(|r| replying_to.iter().any(|m| m == r))
            });
            if delivery.is_none() {
                return refuse(
                    None,
                    "this reply is not in the thread of the card its address belongs to \
                     (In-Reply-To names another message)"
                        .into(),
                );
            }
            (delivery, None)
        }
        Binding::None => (None, None),
    };
    let Some(delivery) = delivery.filter(|d| d.channel == channel) else {
        return refuse(
            None,
            "this is not an answer to a question card sent to you: answer with the card's \
             buttons, or reply to the card"
                .into(),
        );
    };
    let question = tx.question(delivery.question_id)?;
    if delivery.person != who {
        return refuse(
            question.as_ref(),
            format!("this card was sent to {}, not to {who}", delivery.person),
        );
    }
    let Some(q) = question else {
        return refuse(
            None,
            format!(
                "question {} is no longer in the ledger (cleared); nothing was recorded",
                delivery.question_id
            ),
        );
    };
    if q.fingerprint() != delivery.fingerprint {
        return refuse(
            Some(&q),
            format!(
                "question {} is no longer the question on this card; nothing was recorded",
                q.id
            ),
        );
    }
    if q.state.status != Status::Pending {
        let reply = settled_words(Some(&q));
        return Ok(Heard {
            outcome: Outcome::Settled,
            question_id: Some(q.id),
            person: Some(who),
            question: Some(q),
            reply,
        });
    }
    if q.is_expired(now) {
        return refuse(
            Some(&q),
            format!("question {}'s time is up; nothing was recorded", q.id),
        );
    }
    let given = match value.as_deref() {
        Some(v) => match button_given(v, &q) {
            Some(g) => g,
            None => return refuse(Some(&q), "this button does not answer this card".into()),
        },
        None => event.given.clone(),
    };
    let act = match (&q.state.approval, given) {
        (Some(_), Given::Approve) => Act::Vote(
            Identity::Person(who.clone()),
            Ballot {
                verdict: Verdict::Approve,
                comment: None,
            },
        ),
        (Some(_), Given::Reject(reason)) => Act::Vote(
            Identity::Person(who.clone()),
            Ballot {
                verdict: Verdict::Reject,
                comment: Some(
                    reason
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or_else(|| format!("rejected on {channel}")),
                ),
            },
        ),
        (Some(_), given) => {
            let said = match &given {
                Given::Text(t) if !t.trim().is_empty() => {
                    format!(" ('{}' is neither)", excerpt(t, 60))
                }
                _ => String::new(),
            };
            return refuse(
                Some(&q),
                format!(
                    "question {} is an approval: only Approve or Reject is a vote (the card's \
                     buttons; by email, a reply of APPROVE alone, or REJECT and a reason){said}; \
                     nothing was recorded",
                    q.id
                ),
            );
        }
        (None, Given::Approve | Given::Reject(_)) => {
            return refuse(Some(&q), "this question is not an approval".into())
        }
        (None, Given::Proposed) => Act::AcceptProposed,
        (None, Given::Options(numbers)) => {
            let mut select = Vec::new();
            for n in numbers {
                let Some(o) = n.checked_sub(1).and_then(|i| q.options.get(i)) else {
                    return refuse(Some(&q), format!("question {} has no option {n}", q.id));
                };
                select.push(o.label.clone());
            }
            Act::Answer(AnswerInput { text: None, select })
        }
        (None, Given::Text(text)) => match typed(&q, text) {
            Ok(input) => Act::Answer(input),
            Err(why) => return refuse(Some(&q), why),
        },
    };
    let req = PersonsChange {
        shown: Shown::one(None, q.id, Some(delivery.fingerprint.clone())),
        ..PersonsChange::of(q.id, act)
    };
    // A delegate's answer is theirs, on behalf of the person they stand in for.
    let mut detail = about.clone();
    if let Some(person) = super::routing::stands_in_for(tx, &q, &who, now)? {
        detail["on_behalf_of"] = person.into();
    }
    match change_in(tx, &actor, &req, Some(&detail))? {
        Ok(after) => Ok(Heard {
            outcome: Outcome::Recorded,
            question_id: Some(after.id),
            person: Some(who),
            reply: match after.state.status {
                Status::Pending => format!("your vote on question {} is recorded", after.id),
                _ => format!(
                    "recorded: {}",
                    settled_words(Some(&after)).trim_start_matches("already ")
                ),
            },
            question: Some(after),
        }),
        Err(e) if e.code == ErrorCode::DbError => Err(e),
        Err(e) => {
            // A vote refused is in the history already (`approval::cast`).
            if !matches!(req.act, Act::Vote(..)) {
                let mut detail = about.clone();
                detail["refused"] = e.message.clone().into();
                tx.refused_event(q.id, Some(&q.stage), &actor, &detail)?;
            }
            Ok(Heard {
                outcome: Outcome::Refused,
                question_id: Some(q.id),
                person: Some(who),
                question: Some(q),
                reply: e.message,
            })
        }
    }
}

/// Typed text: the option whose number or label it is exactly, else the text verbatim.
/// A number is written as the card numbers its options (`2`: no sign, no leading zero);
/// a reply that is one option's number and another's label is ambiguous, and refused
/// with the reason rather than guessed. A multi-select takes numbers separated by commas.
fn typed(q: &Question, text: String) -> std::result::Result<AnswerInput, String> {
    let trimmed = text.trim();
    let pick = |labels: Vec<String>| AnswerInput {
        text: None,
        select: labels,
    };
    if !q.options.is_empty() {
        let by_number = |word: &str| -> Option<usize> {
            let canonical = !word.is_empty()
                && word.chars().all(|c| c.is_ascii_digit())
                && !word.starts_with('0');
            canonical
                .then(|| word.parse::<usize>().ok())
                .flatten()
                .filter(|n| (1..=q.options.len()).contains(n))
        };
        let by_label = |word: &str| q.options.iter().position(|o| o.label.trim() == word);
        let ambiguous = |word: &str, n: usize, other: usize| {
            format!(
                "'{word}' is both option {n}'s number ({}) and option {}'s label: nothing was \
                 recorded; reply with the option's whole label, or use the card's buttons",
                q.options[n - 1].label,
                other + 1
            )
        };
        match (by_number(trimmed), by_label(trimmed)) {
            (Some(n), Some(i)) if i + 1 != n => return Err(ambiguous(trimmed, n, i)),
            (Some(n), _) => return Ok(pick(vec![q.options[n - 1].label.clone()])),
            (None, Some(i)) => return Ok(pick(vec![q.options[i].label.clone()])),
            (None, None) => {}
        }
        if q.multi_select && trimmed.contains(',') {
            let words: Vec<&str> = trimmed.split(',').map(str::trim).collect();
            if let Some(numbers) = words
                .iter()
                .map(|w| by_number(w))
                .collect::<Option<Vec<_>>>()
            {
                for (word, n) in words.iter().zip(&numbers) {
                    if let Some(i) = by_label(word).filter(|i| i + 1 != *n) {
                        return Err(ambiguous(word, *n, i));
                    }
                }
                return Ok(pick(
                    numbers
                        .iter()
                        .map(|n| q.options[n - 1].label.clone())
                        .collect(),
                ));
            }
        }
    }
    Ok(AnswerInput {
        text: Some(text),
        select: Vec::new(),
    })
}

/// The first line of `text`, at most `n` characters, marked where it was cut.
fn excerpt(text: &str, n: usize) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    let cut = line.chars().count() > n || text.trim().lines().nth(1).is_some();
    let mut out: String = line.chars().take(n).collect();
    if cut {
        out.push('…');
    }
    out
}

/// A signed button's value, read: `o<n>` an option, `m<mask>` the options of a
/// multi-select's bits, `a`/`r` approve/reject, `p` the proposal.
fn button_given(value: &str, q: &Question) -> Option<Given> {
    let (kind, rest) = value.split_at_checked(1)?;
    match kind {
        "o" => Some(Given::Options(vec![rest.parse().ok()?])),
        "m" => {
            let mask = u64::from_str_radix(rest, 16).ok()?;
            let picked: Vec<usize> = (0..q.options.len().min(64))
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| i + 1)
                .collect();
            (!picked.is_empty()).then_some(Given::Options(picked))
        }
        "a" if rest.is_empty() => Some(Given::Approve),
        "r" if rest.is_empty() => Some(Given::Reject(None)),
        "p" if rest.is_empty() => Some(Given::Proposed),
        _ => None,
    }
}

/// Links the identity a pairing code came from (`/start CODE`): the event id is kept
/// once and the read position moves with it, as for an answer.
pub fn redeem(ledger: &mut Ledger, event: &FromChannel, code: &str) -> Result<Heard> {
    let now = clock::now();
    let channel = event.channel.as_str();
    ledger.write(|tx| {
        let heard = if let Some((_, person, _)) = tx.relay_event(channel, &event.event_id)? {
            Heard {
                outcome: Outcome::Repeated,
                question_id: None,
                reply: format!("linked to {}", person.as_deref().unwrap_or("nobody")),
                person,
                question: None,
            }
        } else {
            let code = code.trim().to_uppercase();
            let code_hash = sha256_hex(&code);
            // Spent only by the link it makes: a try on another channel, or from an
            // account linked to someone else, leaves it for its person.
            let person = tx.pairing(&code_hash, channel, &now)?;
            let actor = Actor {
                by: person.clone(),
                channel: event.channel,
                at: now.clone(),
            };
            let on_record = tx.person_of(&event.identity)?;
            let heard = match (&person, on_record) {
                (None, _) => {
                    tx.refused_event(
                        0,
                        None,
                        &actor,
                        &serde_json::json!({
                            "identity": event.identity, "event": event.event_id,
                            "refused": "pairing code unknown, used or expired",
                        }),
                    )?;
                    Heard {
                        outcome: Outcome::Refused,
                        question_id: None,
                        person: None,
                        question: None,
                        reply: "this code is unknown, used or expired: ask for a new one \
                                (questions relay pair)"
                            .into(),
                    }
                }
                (Some(p), Some(other)) if *p != other => Heard {
                    outcome: Outcome::Refused,
                    question_id: None,
                    person: Some(other.clone()),
                    question: None,
                    reply: format!("this account is linked to {other} already: unlink it first"),
                },
                (Some(p), already) => {
                    tx.spend_pairing(&code_hash)?;
                    if already.is_none() {
                        tx.insert_link(&event.identity, p, &now)?;
                        tx.people_event(
                            &actor,
                            &serde_json::json!({
                                "person": p, "identity": event.identity, "linked": true,
                                "via": "pairing", "event": event.event_id,
                            }),
                        )?;
                    }
                    Heard {
                        outcome: Outcome::Recorded,
                        question_id: None,
                        person: Some(p.clone()),
                        question: None,
                        reply: format!(
                            "linked: this account is {p} in the ledger; questions for {p} \
                             will come here"
                        ),
                    }
                }
            };
            tx.insert_relay_event(
                channel,
                &event.event_id,
                0,
                heard.person.as_deref(),
                if heard.outcome == Outcome::Recorded {
                    "linked"
                } else {
                    "refused"
                },
                &now,
            )?;
            heard
        };
        if let Some(position) = &event.position {
            tx.set_relay_position(channel, position, &now)?;
        }
        Ok(heard)
    })
}

/// Records an event a channel refuses before `hear`: one whose sender the channel cannot
/// vouch for (an email without a passing, aligned DKIM result from the trusted
/// `authserv_id`), or one that says nothing (an email reply with no text). A `refused`
/// event naming the identity claimed and `why`, the event id kept once and the read
/// position moved with it, as `hear` does; nothing else changes. The person is never
/// taken from the identity here: it is not vouched for.
pub fn refuse(ledger: &mut Ledger, event: &FromChannel, why: &str) -> Result<Outcome> {
    let now = clock::now();
    let channel = event.channel.as_str();
    ledger.write(|tx| {
        let outcome = if tx.relay_event(channel, &event.event_id)?.is_some() {
            Outcome::Repeated
        } else {
            let actor = Actor {
                by: None,
                channel: event.channel,
                at: now.clone(),
            };
            tx.refused_event(
                0,
                None,
                &actor,
                &serde_json::json!({
                    "identity": event.identity, "event": event.event_id, "refused": why,
                }),
            )?;
            tx.insert_relay_event(channel, &event.event_id, 0, None, "refused", &now)?;
            Outcome::Refused
        };
        if let Some(position) = &event.position {
            tx.set_relay_position(channel, position, &now)?;
        }
        Ok(outcome)
    })
}

/// Moves a channel's read position past events that record nothing (a reaction, an
/// edit, a message the relay does not act on).
pub fn pass(ledger: &mut Ledger, channel: Channel, position: &str) -> Result<()> {
    let now = clock::now();
    ledger.write(|tx| tx.set_relay_position(channel.as_str(), position, &now))
}

/// Where a channel's reading stopped.
pub fn position(ledger: &mut Ledger, channel: Channel) -> Result<Option<String>> {
    ledger.read(|tx| tx.relay_position(channel.as_str()))
}

/// A card to send: its delivery row (state `sending`), the question, and the key its
/// buttons and reply address are signed with: the ledger's own, read in the transaction
/// that reserved the delivery, so that no card is signed with a key of a ledger that a
/// reset replaced.
#[derive(Debug, Clone)]
pub struct Card {
    pub delivery: Delivery,
    pub question: Question,
    pub key: ButtonKey,
    /// A repost by the question's policy (§14a): its reminder, and of how many.
    pub reminder: Option<(u32, u32)>,
}

impl Card {
    /// What a reposted card says above the question.
    pub fn note(&self) -> Option<String> {
        self.reminder
            .map(|(n, of)| format!("Still waiting for your answer (reminder {n} of {of})"))
    }
}

/// The cards a channel has to send: one per pending question (of `stages`, when given)
/// and linked person who may answer it (an approval's eligible approvers, never its
/// requester), each reserved as a delivery row before it is sent, and those reserved
/// before and never sent (a relay stopped in between).
pub fn cards_to_send(
    ledger: &mut Ledger,
    channel: Channel,
    stages: Option<&[String]>,
) -> Result<Vec<Card>> {
    let name = channel.as_str();
    let plan = |tx: &Tx| -> Result<(Vec<Delivery>, bool)> {
        let now = clock::now();
        let quiet = tx.quiet_hours()?;
        let slots = if quiet.is_empty() {
            Vec::new()
        } else {
            tx.routing_slots()?
        };
        let missing = wanted(tx, channel, stages, &now)?
            .into_iter()
            .filter(|(d, q)| {
                // Held in quiet hours; and once held, never sent after its expiry.
                let held = super::quiet::holds(&quiet, &slots, channel, &d.person, q, &now);
                let expired =
                    q.is_expired(&now) && super::quiet::has_quiet_hours(&quiet, &d.person);
                !held && !expired
            })
            .map(|(d, _)| d)
            .collect();
        let unsent = !tx.deliveries_in(name, "sending")?.is_empty();
        Ok((missing, unsent))
    };
    super::settle(ledger)?;
    let (missing, unsent) = ledger.read(plan)?;
    if missing.is_empty() && !unsent {
        return Ok(Vec::new());
    }
    let now = clock::now();
    let fresh = hex(&random(32)?);
    ledger.write(|tx| {
        for d in &missing {
            tx.reserve_delivery(d, &now)?;
        }
        let key = if let Some(key) = key_in(tx)? {
            key
        } else {
            tx.insert_relay_key(BUTTON_KEY, &fresh, &now)?;
            key_in(tx)?.ok_or_else(|| Error::db("the relay's key was not written"))?
        };
        let mut cards = Vec::new();
        for d in tx.deliveries_in(name, "sending")? {
            match tx.question(d.question_id)? {
                Some(q)
                    if q.state.status == Status::Pending && q.fingerprint() == d.fingerprint =>
                {
                    cards.push(Card {
                        delivery: d,
                        question: q,
                        key: key.clone(),
                        reminder: None,
                    });
                }
                // Settled before it was sent: nothing to send or close.
                _ => tx.set_delivery(d.id, "closed", None, &now)?,
            }
        }
        Ok(cards)
    })
}

/// The cards `channel` would send now were nothing held: one per pending question (of
/// `stages`, when given) and linked person who may answer it and has no card for it yet,
/// with the question.
fn wanted(
    tx: &Tx,
    channel: Channel,
    stages: Option<&[String]>,
    now: &str,
) -> Result<Vec<(Delivery, Question)>> {
    let name = channel.as_str();
    let prefix = format!("{name}:");
    let mut pending = tx.questions(&Filter {
        status: Some(Status::Pending),
        ..Filter::default()
    })?;
    if let Some(stages) = stages {
        pending.retain(|q| stages.iter().any(|s| s == q.stage.trim()));
    }
    let links: Vec<Link> = tx
        .links()?
        .into_iter()
        .filter(|l| l.identity.starts_with(&prefix))
        .collect();
    let known: BTreeSet<(String, i64, String)> = tx
        .deliveries_of(name)?
        .into_iter()
        .map(|d| (d.identity, d.question_id, d.fingerprint))
        .collect();
    let voters = super::approval::voters(tx, pending.iter())?;
    let policies = tx.policies()?;
    let slots = if policies.is_empty() {
        Vec::new()
    } else {
        tx.routing_slots()?
    };
    let delegations = tx.delegations()?;
    let mut missing = Vec::new();
    for q in &pending {
        let fingerprint = q.fingerprint();
        // Its policy's people (and, once escalated, its backups), when it names any,
        // and their delegates.
        let routed = super::routing::routed_to(tx, &policies, &slots, q)?.map(|mut r| {
            let standing_in: Vec<String> = r
                .iter()
                .flat_map(|p| delegates_of(&delegations, p, now))
                .collect();
            r.extend(standing_in);
            r
        });
        // An approval's voters and their delegates (§14a), never who asked for it or
        // logged it.
        let delegate_of_voter = |person: &str, eligible: &BTreeSet<String>| {
            eligible.iter().any(|p| {
                delegates_of(&delegations, p, now)
                    .iter()
                    .any(|d| d == person)
            })
        };
        for l in &links {
            let may = match (&q.state.approval, voters.get(&q.id)) {
                (Some(a), Some(eligible)) => {
                    !a.asked_by(&l.person)
                        && (eligible.contains(&l.person) || delegate_of_voter(&l.person, eligible))
                }
                (Some(_), None) => false,
                (None, _) => true,
            } && routed.as_ref().is_none_or(|r| r.contains(&l.person));
            if may && !known.contains(&(l.identity.clone(), q.id, fingerprint.clone())) {
                missing.push((
                    Delivery {
                        id: 0,
                        question_id: q.id,
                        fingerprint: fingerprint.clone(),
                        person: l.person.clone(),
                        channel: name.to_string(),
                        identity: l.identity.clone(),
                        message_ref: None,
                        state: "sending".into(),
                    },
                    q.clone(),
                ));
            }
        }
    }
    Ok(missing)
}

/// The digests `channel` sends now (§14a): for each person whose quiet hours ended
/// within the hour and whose cards were held, one message listing them, recorded once
/// (two relays or a restart send none twice). The relay sends these before
/// `cards_to_send`, whose held cards then follow.
pub fn digests_to_send(
    ledger: &mut Ledger,
    channel: Channel,
    stages: Option<&[String]>,
) -> Result<Vec<super::quiet::Digest>> {
    super::settle(ledger)?;
    let now = clock::now();
    super::quiet::digests_due(ledger, channel, &now, |tx, person| {
        let mut held: Vec<Question> = wanted(tx, channel, stages, &now)?
            .into_iter()
            .filter(|(d, q)| d.person == person && !q.is_expired(&now))
            .map(|(_, q)| q)
            .collect();
        // A reminder that fell due in the window was held as a card is: its question is
        // listed, and its repost follows the header as that question's card (once).
        held.extend(
            reminders_due(tx, channel, &now, false)?
                .into_iter()
                .filter(|(d, q, _)| {
                    d.person == person
                        && stages.is_none_or(|s| s.iter().any(|s| s == q.stage.trim()))
                })
                .map(|(_, q, _)| q),
        );
        Ok(held)
    })
}

/// The open cards of a channel to repost as reminders (§14a): those whose question is
/// still pending as delivered, at a reminder the card has not been reposted for. The
/// cards sent this round are among them only from the next reminder on.
pub fn reminders_to_send(ledger: &mut Ledger, channel: Channel) -> Result<Vec<Card>> {
    let now = clock::now();
    ledger.read(|tx| {
        let Some(key) = key_in(tx)? else {
            return Ok(Vec::new());
        };
        Ok(reminders_due(tx, channel, &now, true)?
            .into_iter()
            .map(|(delivery, question, at)| Card {
                delivery,
                question,
                key: key.clone(),
                reminder: Some(at),
            })
            .collect())
    })
}

/// An open card due a repost: the reminder it is at, and of how many.
type ReminderDue = (Delivery, Question, (u32, u32));

/// The open cards of `channel` at a reminder they were not reposted for; those quiet
/// hours hold left out when `quiet` (a digest asks for them all: what the window held).
fn reminders_due(tx: &Tx, channel: Channel, now: &str, quiet: bool) -> Result<Vec<ReminderDue>> {
    let policies = tx.policies()?;
    if policies.is_empty() {
        return Ok(Vec::new());
    }
    let slots = tx.routing_slots()?;
    let hours = if quiet { tx.quiet_hours()? } else { Vec::new() };
    let mut out = Vec::new();
    for d in tx.deliveries_in(channel.as_str(), "open")? {
        let Some(q) = tx.question(d.question_id)? else {
            continue;
        };
        // Inside quiet hours a reminder waits, as a card does (urgent ones aside).
        if super::quiet::holds(&hours, &slots, channel, &d.person, &q, now) {
            continue;
        }
        if q.state.status != Status::Pending
            || q.fingerprint() != d.fingerprint
            || q.is_expired(now)
        {
            continue;
        }
        let (n, of) = super::routing::reminder_of(&policies, &slots, &q);
        if n == 0 || i64::from(n) <= tx.reminded(d.id)? {
            continue;
        }
        out.push((d, q, (n, of)));
    }
    Ok(out)
}

/// A reminder was reposted: the card is the new message from now on (a reply or a
/// button of either still answers it, bound to the same delivery), and it is not
/// reposted again for this reminder. The card as it was, whose old message the channel
/// retires.
pub fn reminder_sent(
    ledger: &mut Ledger,
    card: &Card,
    message_ref: &str,
) -> Result<Option<Delivery>> {
    if crate::fault::fails("reminder-sent") {
        return Err(Error::db(
            "the ledger could not be written (QUESTIONS_TEST_FAIL)",
        ));
    }
    let now = clock::now();
    let n = i64::from(card.reminder.map_or(0, |(n, _)| n));
    ledger.write(|tx| {
        let before = tx.delivery(card.delivery.id)?;
        tx.set_delivery(card.delivery.id, "open", Some(message_ref), &now)?;
        tx.set_reminded(card.delivery.id, n, &now)?;
        Ok(before)
    })
}

/// A card was sent: the provider's reference to its message.
pub fn card_sent(ledger: &mut Ledger, delivery: i64, message_ref: &str) -> Result<()> {
    if crate::fault::fails("card-sent") {
        return Err(Error::db(
            "the ledger could not be written (QUESTIONS_TEST_FAIL)",
        ));
    }
    let now = clock::now();
    ledger.write(|tx| {
        tx.set_delivery(delivery, "open", Some(message_ref), &now)?;
        // A card is as new as a reminder: one sent after a reminder fell due (to an
        // escalation's backup, after quiet hours, a relay that was down) is not reposted
        // for it at once; the next reminder reaches it at its own slot.
        let policies = tx.policies()?;
        if policies.is_empty() {
            return Ok(());
        }
        let Some(d) = tx.delivery(delivery)? else {
            return Ok(());
        };
        let Some(q) = tx.question(d.question_id)? else {
            return Ok(());
        };
        let (n, _) = super::routing::reminder_of(&policies, &tx.routing_slots()?, &q);
        if n > 0 {
            tx.set_reminded(delivery, i64::from(n), &now)?;
        }
        Ok(())
    })
}

/// A card to close: its question left pending (or the ledger), or changed, or its time
/// is up; `words` says so.
#[derive(Debug, Clone)]
pub struct Closing {
    pub delivery: Delivery,
    pub question: Option<Question>,
    pub words: String,
}

/// The open cards of a channel whose question is no longer pending as delivered.
pub fn cards_to_close(ledger: &mut Ledger, channel: Channel) -> Result<Vec<Closing>> {
    super::settle(ledger)?;
    let now = clock::now();
    ledger.read(|tx| {
        let mut out = Vec::new();
        for d in tx.deliveries_in(channel.as_str(), "open")? {
            let q = tx.question(d.question_id)?;
            let words = match &q {
                None => settled_words(None),
                Some(q) if q.fingerprint() != d.fingerprint => {
                    "this question was replaced by another; this card no longer answers it"
                        .to_string()
                }
                Some(q) if q.state.status != Status::Pending => settled_words(Some(q))
                    .trim_start_matches("already ")
                    .to_string(),
                Some(q) if q.is_expired(&now) => "its time is up".to_string(),
                Some(_) => continue,
            };
            out.push(Closing {
                delivery: d,
                question: q,
                words,
            });
        }
        Ok(out)
    })
}

/// The cards of a channel out and open (a reconnected channel reads their threads).
pub fn open_cards(ledger: &mut Ledger, channel: Channel) -> Result<Vec<Delivery>> {
    ledger.read(|tx| tx.deliveries_in(channel.as_str(), "open"))
}

/// A prompt for a typed answer to a card was sent: a reply to it answers the card.
pub fn prompt_sent(ledger: &mut Ledger, delivery: i64, message_ref: &str) -> Result<()> {
    ledger.write(|tx| tx.set_prompt(delivery, message_ref))
}

/// The card of a delivery, with its question as it stands (none once it is gone).
pub fn card(ledger: &mut Ledger, delivery: i64) -> Result<Option<(Delivery, Option<Question>)>> {
    ledger.read(|tx| {
        let Some(d) = tx.delivery(delivery)? else {
            return Ok(None);
        };
        let q = tx.question(d.question_id)?;
        Ok(Some((d, q)))
    })
}

/// The card `channel` sent as the message `reference` (what a reply to it is bound by),
/// with its question as it stands.
pub fn card_by_ref(
    ledger: &mut Ledger,
    channel: Channel,
    reference: &str,
) -> Result<Option<(Delivery, Option<Question>)>> {
    ledger.read(|tx| {
        let Some(d) = tx.delivery_by_ref(channel.as_str(), reference)? else {
            return Ok(None);
        };
        let q = tx.question(d.question_id)?;
        Ok(Some((d, q)))
    })
}

/// Whether a button's value was signed by this ledger's key for that card (a toggle of a
/// multi-select changes only the card, and records nothing, but only its own).
pub fn verify_button(key: &ButtonKey, data: &str) -> Option<(i64, String)> {
    let (delivery, value, signature) = split_button(data)?;
    key.verify(delivery, value, signature)
        .then(|| (delivery, value.to_string()))
}

/// A card was closed (edited to say so, its buttons gone).
pub fn card_closed(ledger: &mut Ledger, delivery: i64) -> Result<()> {
    let now = clock::now();
    ledger.write(|tx| tx.set_delivery(delivery, "closed", None, &now))
}

/// Takes or renews a channel's lease for `holder` for `lasting`; else who holds it and
/// until when. `gone` names a holder the caller knows has stopped (a relay of this
/// machine whose process is no more): its lease is taken over at once.
pub fn lease(
    ledger: &mut Ledger,
    channel: Channel,
    holder: &str,
    lasting: std::time::Duration,
    gone: Option<&str>,
) -> Result<Option<(String, String)>> {
    let now = clock::now();
    let until = clock::after(&now, lasting);
    ledger.write(|tx| tx.take_lease(channel.as_str(), holder, &until, &now, gone))
}

pub fn release(ledger: &mut Ledger, channel: Channel, holder: &str) -> Result<()> {
    ledger.write(|tx| tx.drop_lease(channel.as_str(), holder))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_user_id_is_an_identity_as_the_homeserver_writes_it() {
        assert_eq!(
            channel_identity("Matrix:@alice:example.org").unwrap(),
            "matrix:@alice:example.org"
        );
        assert_eq!(
            channel_identity("matrix:@bot.1:localhost:8448").unwrap(),
            "matrix:@bot.1:localhost:8448"
        );
        assert_eq!(relay_channel("matrix"), Some(Channel::Matrix));
        for bad in [
            "matrix:alice:example.org",
            "matrix:@alice",
            "matrix:@:example.org",
            "matrix:@al ice:example.org",
            "matrix:@alice:exa mple.org",
            "matrix:@alice:",
        ] {
            assert!(channel_identity(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_github_login_is_an_identity_in_lower_case() {
        assert_eq!(
            channel_identity("GitHub:Octo-Cat").unwrap(),
            "github:octo-cat"
        );
        assert_eq!(
            channel_identity(&format!("github:{}", "a".repeat(39))).unwrap(),
            format!("github:{}", "a".repeat(39))
        );
        for bad in [
            "github:",
            "github:-octo",
            "github:octo-",
            "github:oc--to",
            "github:octo_cat",
            "github:octo cat",
            "github:octo/cat",
        ] {
            assert!(channel_identity(bad).is_err(), "{bad}");
        }
        assert!(channel_identity(&format!("github:{}", "a".repeat(40))).is_err());
        assert!(relay_channel("github").is_none());
    }

    fn unhexed(text: &str) -> Vec<u8> {
        unhex(text).unwrap()
    }

    /// RFC 4231's test cases 1, 2 and 6 (a key longer than a block).
    #[test]
    fn hmac_sha256_is_rfc_4231s() {
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        let key = ButtonKey(unhexed("00ff"));
        let signed = key.sign(12, "o2");
        assert!(key.verify(12, "o2", &signed));
        assert!(!key.verify(12, "o1", &signed));
        assert!(!key.verify(13, "o2", &signed));
    }
}
