//! `questions relay` (§14): puts pending questions to people on the channels they use and
//! records their answers there. Outbound connections only; every rule is the core's
//! (`ops::relay::hear`): a channel translates its provider's events and says back what the
//! core answered. Each channel is one folder implementing `Channel`, reading its own
//! config section, and calling the kit (src/relay/kit) for what every channel does alike;
//! `open` is the one line that registers it.

pub(crate) mod email;
pub(crate) mod kit;
pub(crate) mod matrix;
pub(crate) mod slack;
pub(crate) mod telegram;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::output;
use questions_core::error::{Error, Result};
use questions_core::model;
use questions_core::ops::{self, relay, Ledger, Step};

/// What one channel does; the runner holds its lease, follows the ledger for it, and
/// stops it.
pub(crate) trait Channel: Send + Sync {
    fn kind(&self) -> model::Channel;
    /// Sends a card, signed with `card.key`; the provider's reference to its message.
    fn send_card(&self, card: &relay::Card) -> std::result::Result<String, String>;
    /// Sends `identity` a message with no buttons (a quiet hours' digest, §14a).
    fn send_note(&self, identity: &str, text: &str) -> std::result::Result<(), String>;
    /// Edits a card to say its question is settled, without its buttons.
    fn close_card(&self, closing: &relay::Closing) -> std::result::Result<(), String>;
    /// The message of a card reposted as a reminder, which the repost replaces: by
    /// default closed as a settled card is, saying where to answer now.
    fn retire_card(&self, old: &relay::Closing) -> std::result::Result<(), String> {
        self.close_card(old)
    }
    /// One round of reading the provider (a long poll): each event through the core,
    /// buttons checked against `key`, the ledger's as this round began.
    fn poll(&self, ledger: &mut Ledger, key: &relay::ButtonKey) -> std::result::Result<(), String>;
    /// Whether a failed poll says another program reads this channel's events (which a
    /// relay of this ledger cannot be while this one holds the lease): then the relay
    /// ends, saying so, rather than take and refuse another ledger's answers.
    fn read_by_another(&self, _why: &str) -> bool {
        false
    }
}

/// Opens the channel `kind` from its section of the relay config. A channel added to
/// `model::Relayed` is a compile error here until its line is written.
pub(crate) fn open(kind: model::Relayed, table: &toml_edit::Table) -> Result<Arc<dyn Channel>> {
    Ok(match kind {
        model::Relayed::Telegram => Arc::new(telegram::open(table)?),
        model::Relayed::Slack => Arc::new(slack::open(table)?),
        model::Relayed::Email => Arc::new(email::open(table)?),
        model::Relayed::Matrix => Arc::new(matrix::open(table)?),
    })
}

/// How long a lease lasts; renewed well before.
const LEASE: Duration = Duration::from_mins(1);
const RENEW_AFTER: Duration = Duration::from_secs(20);
/// The longest the follower goes without reading the ledger (a card whose send failed is
/// tried again then).
const LOOK_AGAIN: Duration = Duration::from_secs(10);

/// Who this relay is, in the leases: `<host>:<pid>:<pid namespace>:<random>`. The host
/// name and pid alone do not tell two relays apart (two containers with one host name
/// both run as pid 1), so a random instance id is part of it; the pid namespace says
/// whose `/proc` can tell that the process is gone.
fn holder() -> String {
    let mut bytes = [0u8; 8];
    let random = match std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
    {
        Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        // No random bytes: the time, finer than two starts can share.
        Err(_) => format!(
            "{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ),
    };
    format!(
        "{}:{}:{}:{random}",
        holder_name(),
        std::process::id(),
        pid_namespace().unwrap_or_else(|| "?".into())
    )
}

/// This process's pid namespace (the inode `/proc/self/ns/pid` names).
fn pid_namespace() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let link = link.to_string_lossy();
    let inode = link.strip_prefix("pid:[")?.strip_suffix(']')?;
    inode
        .chars()
        .all(|c| c.is_ascii_digit())
        .then(|| inode.to_string())
}

/// Runs until SIGINT or SIGTERM (then exits 0 from the signal's thread).
pub(crate) fn run(
    ledger: &mut Ledger,
    channels: Vec<Arc<dyn Channel>>,
    stages: &[String],
) -> Result<()> {
    ops::create(ledger)?;
    relay::button_key(ledger)?;
    let me = holder();
    let names: Vec<&str> = channels.iter().map(|c| c.kind().as_str()).collect();
    output::text_out(&format!(
        "{}\n",
        serde_json::json!({"ok": true, "procedure": "relay", "channels": names})
    ));
    let held: Vec<Arc<AtomicBool>> = channels
        .iter()
        .map(|_| Arc::new(AtomicBool::new(false)))
        .collect();
    stop_on_signals(ledger, &channels, &me)?;
    let fatal: Arc<std::sync::Mutex<Option<Error>>> = Arc::new(std::sync::Mutex::new(None));
    // Each channel's first try at its lease, before the ledger is followed: a lease taken
    // between the follower's first read and its wait would wake it only at LOOK_AGAIN.
    let tried = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for (channel, held) in channels.iter().zip(&held) {
        let channel = Arc::clone(channel);
        let held = Arc::clone(held);
        let tried = Arc::clone(&tried);
        let fatal = Arc::clone(&fatal);
        let mut ledger = Ledger::new(ledger.location().clone());
        let me = me.clone();
        std::thread::spawn(move || {
            read_channel(&mut ledger, channel.as_ref(), &me, &held, &tried, &fatal);
        });
    }
    let started = Instant::now();
    while tried.load(Ordering::SeqCst) < channels.len() && started.elapsed() < LOOK_AGAIN {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stages = (!stages.is_empty()).then_some(stages);
    let mut failing = HashMap::new();
    ops::follow(ledger, None, LOOK_AGAIN, |ledger, seen| {
        let ended = fatal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(e) = ended {
            for channel in &channels {
                let _ = relay::release(ledger, channel.kind(), &me);
            }
            return Err(e);
        }
        if seen.replaced(ledger) {
            output::note(&format!(
                "relay: the ledger {} was reset or replaced; its cards out answer nothing now, \
                 and the ledger there now is followed",
                ledger.location().display()
            ));
        }
        // Reminders and escalations due, recorded once whichever relay comes first: only
        // by one that holds a channel.
        if held.iter().any(|h| h.load(Ordering::SeqCst)) {
            if let Err(e) = ops::route(ledger) {
                if ledger.follow().unwrap_or(false) {
                    return Ok(Step::More);
                }
                return Err(e);
            }
        }
        for (channel, held) in channels.iter().zip(&held) {
            if held.load(Ordering::SeqCst) {
                if let Err(e) = deliver(ledger, channel.as_ref(), stages, &mut failing) {
                    // Reset while it read or wrote: the next step reads the ledger there now.
                    if ledger.follow().unwrap_or(false) {
                        return Ok(Step::More);
                    }
                    return Err(e);
                }
            }
        }
        Ok(Step::Wait(()))
    })
}

/// A recipient whose card could not be sent or closed (a chat that blocked the bot, an id
/// the provider does not know): their cards wait until `again_at`, the others' go on.
struct Failing {
    again_at: Instant,
    pause: Duration,
}

/// The first pause before a failing recipient's cards are tried again, doubled after each
/// failure up to the longest.
const FIRST_RETRY: Duration = Duration::from_secs(2);
const LONGEST_RETRY: Duration = Duration::from_mins(10);

/// Whether `identity`'s cards wait for their next try.
fn waiting(failing: &HashMap<String, Failing>, identity: &str) -> bool {
    failing
        .get(identity)
        .is_some_and(|f| f.again_at > Instant::now())
}

/// Notes a failure to reach `identity`: said on stderr the first time only, until a card
/// reaches them again; their next try is put off.
fn failed(failing: &mut HashMap<String, Failing>, identity: &str, say: impl FnOnce() -> String) {
    if let Some(f) = failing.get_mut(identity) {
        f.pause = (f.pause * 2).min(LONGEST_RETRY);
        f.again_at = Instant::now() + f.pause;
    } else {
        output::note(&say());
        failing.insert(
            identity.to_string(),
            Failing {
                again_at: Instant::now() + FIRST_RETRY,
                pause: FIRST_RETRY,
            },
        );
    }
}

/// A recipient reached again after failures.
fn reached(failing: &mut HashMap<String, Failing>, kind: model::Channel, identity: &str) {
    if failing.remove(identity).is_some() {
        output::note(&format!(
            "relay: {}: {} is reached again",
            kind.as_str(),
            output::sanitize(identity, false)
        ));
    }
}

/// Sends the cards due and closes the cards settled, on one channel. A card that cannot
/// reach its recipient holds back only that recipient's cards (tried again with a growing
/// pause), never another person's.
fn deliver(
    ledger: &mut Ledger,
    channel: &dyn Channel,
    stages: Option<&[String]>,
    failing: &mut HashMap<String, Failing>,
) -> Result<()> {
    let kind = channel.kind();
    // A digest's header before the cards it held (recorded first: a relay killed
    // between the two sends the cards without their header, never the header twice).
    for digest in relay::digests_to_send(ledger, kind, stages)? {
        for who in &digest.identities {
            if let Err(why) = channel.send_note(who, &digest.words()) {
                output::note(&format!(
                    "relay: {}: the digest for {} was not sent ({why}); its cards follow",
                    kind.as_str(),
                    digest.person
                ));
            }
        }
    }
    for card in relay::cards_to_send(ledger, kind, stages)? {
        let who = card.delivery.identity.as_str();
        if waiting(failing, who) {
            continue;
        }
        match channel.send_card(&card) {
            Ok(reference) => {
                if let Err(e) = relay::card_sent(ledger, card.delivery.id, &reference) {
                    // Unrecorded, the card would stay live beside the copy sent next time,
                    // which alone is closed when its question settles: it is closed now.
                    let _ = channel.close_card(&unrecorded(card, reference));
                    return Err(e);
                }
                reached(failing, kind, who);
            }
            Err(why) => failed(failing, who, || {
                not_done(kind, "card", "sent", card.question.id, &card.delivery, &why)
            }),
        }
    }
    for card in relay::reminders_to_send(ledger, kind)? {
        let who = card.delivery.identity.as_str();
        if waiting(failing, who)
            || stages.is_some_and(|s| !s.iter().any(|s| s == card.question.stage.trim()))
        {
            continue;
        }
        match channel.send_card(&card) {
            Ok(reference) => {
                let old = match relay::reminder_sent(ledger, &card, &reference) {
                    Ok(old) => old,
                    Err(e) => {
                        // As a card's: the copy the ledger does not hold is closed.
                        let _ = channel.close_card(&unrecorded(card, reference));
                        return Err(e);
                    }
                };
                reached(failing, kind, who);
                // The message before loses its buttons; a failure leaves them, which still
                // answer the same card.
                if let Some(old) = old.filter(|d| d.state == "open") {
                    let _ = channel.retire_card(&relay::Closing {
                        delivery: old,
                        question: Some(card.question.clone()),
                        words: "reminded: the newer card below is the one to answer".into(),
                    });
                }
            }
            Err(why) => failed(failing, who, || {
                not_done(
                    kind,
                    "reminder",
                    "sent",
                    card.question.id,
                    &card.delivery,
                    &why,
                )
            }),
        }
    }
    for closing in relay::cards_to_close(ledger, kind)? {
        let who = closing.delivery.identity.as_str();
        if waiting(failing, who) {
            continue;
        }
        match channel.close_card(&closing) {
            Ok(()) => {
                relay::card_closed(ledger, closing.delivery.id)?;
                reached(failing, kind, who);
            }
            Err(why) => failed(failing, who, || {
                let question = closing.delivery.question_id;
                not_done(kind, "card", "closed", question, &closing.delivery, &why)
            }),
        }
    }
    Ok(())
}

/// What stderr says once of a recipient's card (or reminder) that was not sent or closed.
fn not_done(
    kind: model::Channel,
    what: &str,
    done: &str,
    question: i64,
    delivery: &ops::Delivery,
    why: &str,
) -> String {
    format!(
        "relay: {}: the {what} of question {question} for {} ({}) was not {done} ({why}); \
         trying again with a growing pause, everyone else's cards go on",
        kind.as_str(),
        delivery.person,
        output::sanitize(&delivery.identity, false)
    )
}

/// The closing of a card sent but not recorded in the ledger: its buttons go, and it
/// says a copy follows.
fn unrecorded(card: relay::Card, reference: String) -> relay::Closing {
    let mut delivery = card.delivery;
    delivery.message_ref = Some(reference);
    relay::Closing {
        delivery,
        question: Some(card.question),
        words: "not recorded in the ledger, so this card answers nothing; a new card follows"
            .to_string(),
    }
}

/// Holds the channel's lease (waiting while another relay holds it) and reads it.
fn read_channel(
    ledger: &mut Ledger,
    channel: &dyn Channel,
    me: &str,
    held: &AtomicBool,
    tried: &std::sync::atomic::AtomicUsize,
    fatal: &std::sync::Mutex<Option<Error>>,
) {
    let mut first = true;
    let kind = channel.kind();
    let mut said_waiting = false;
    let mut renewed: Option<Instant> = None;
    let mut backoff = Duration::from_millis(500);
    let mut gone: Option<String> = None;
    loop {
        // A reset (or a replaced file) under the relay: read and write the ledger there
        // now, its lease taken anew; never the one that is gone.
        if ledger.follow().unwrap_or(false) {
            output::note(&format!(
                "relay: {}: the ledger was reset or replaced; reading into the ledger there now",
                kind.as_str()
            ));
            renewed = None;
        }
        if renewed.is_none_or(|at| at.elapsed() >= RENEW_AFTER) {
            let leased = relay::lease(ledger, kind, me, LEASE, gone.as_deref());
            if matches!(leased, Ok(None)) && !held.swap(true, Ordering::SeqCst) && !first {
                // Taken over from another relay: a write after `held` is set wakes the
                // follower, which then sends this channel's cards.
                let _ = relay::lease(ledger, kind, me, LEASE, None);
            }
            if std::mem::take(&mut first) {
                tried.fetch_add(1, Ordering::SeqCst);
            }
            match leased {
                Ok(None) => {
                    if said_waiting {
                        output::note(&format!("relay: {} is ours now", kind.as_str()));
                        said_waiting = false;
                    }
                    renewed = Some(Instant::now());
                    held.store(true, Ordering::SeqCst);
                }
                Ok(Some((other, until))) => {
                    held.store(false, Ordering::SeqCst);
                    renewed = None;
                    if stopped_here(&other) {
                        gone = Some(other);
                        continue;
                    }
                    if !said_waiting {
                        output::note(&format!(
                            "relay: {} is held by the relay {} (until {until}); waiting for it",
                            kind.as_str(),
                            output::sanitize(&other, false)
                        ));
                        said_waiting = true;
                    }
                    std::thread::sleep(Duration::from_secs(2));
                    continue;
                }
                Err(e) => {
                    output::note(&format!("relay: {}: {}", kind.as_str(), e.message));
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    continue;
                }
            }
        }
        let polled = relay::button_key(ledger)
            .map_err(|e| e.message)
            .and_then(|key| channel.poll(ledger, &key));
        match polled {
            Ok(()) => backoff = Duration::from_millis(500),
            // Still this relay's lease: the other reader is not a relay of this ledger.
            Err(why)
                if channel.read_by_another(&why)
                    && matches!(relay::lease(ledger, kind, me, LEASE, None), Ok(None)) =>
            {
                held.store(false, Ordering::SeqCst);
                *fatal
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Some(Error::conflict(format!(
                        "relay: {}: another program reads this channel's events ({why}) while \
                         this relay holds it for the ledger {}: most likely a relay of another \
                         ledger with the same token, which would take and refuse this ledger's \
                         answers (and this relay its). One bot or app serves one ledger: give \
                         each ledger's relay its own",
                        kind.as_str(),
                        ledger.location().display()
                    )));
                // A write the follower wakes to; it ends the relay.
                let _ = relay::release(ledger, kind, me);
                return;
            }
            Err(why) => {
                output::note(&format!(
                    "relay: {}: {why}; trying again in {:.1}s",
                    kind.as_str(),
                    backoff.as_secs_f64()
                ));
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

/// Whether `holder` is a relay of this machine and pid namespace whose process is no
/// more (killed): its lease need not run out before another relay takes the channel. A
/// holder of another namespace, or named the older way (`<host>:<pid>`), is waited for.
fn stopped_here(holder: &str) -> bool {
    let mut parts = holder.rsplitn(4, ':');
    let (Some(_random), Some(namespace), Some(pid), Some(host)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    host == holder_name()
        && pid_namespace().is_some_and(|mine| mine == namespace)
        && pid.parse::<u32>().is_ok()
        && !Path::new(&format!("/proc/{pid}")).exists()
}

fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    if host.is_empty() {
        "relay".into()
    } else {
        host
    }
}

/// SIGINT and SIGTERM end the relay with exit 0, its leases let go. They are blocked in
/// every thread and waited for by one of their own.
fn stop_on_signals(ledger: &Ledger, channels: &[Arc<dyn Channel>], me: &str) -> Result<()> {
    // SAFETY: plain libc calls on a signal set this function owns.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGINT);
        libc::sigaddset(&raw mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut()) != 0 {
            return Err(Error::io("cannot block SIGINT and SIGTERM"));
        }
        set
    };
    let location = ledger.location().clone();
    let kinds: Vec<model::Channel> = channels.iter().map(|c| c.kind()).collect();
    let me = me.to_string();
    std::thread::spawn(move || {
        let mut signal: libc::c_int = 0;
        // SAFETY: waits on the set blocked above.
        unsafe { libc::sigwait(&raw const set, &raw mut signal) };
        let mut ledger = Ledger::new(location);
        for kind in kinds {
            let _ = relay::release(&mut ledger, kind, &me);
        }
        std::process::exit(0);
    });
    Ok(())
}
