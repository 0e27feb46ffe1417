//! What is said back to senders, sent by a thread of its own: a reply waiting for a
//! provider's rate (or a 429) never holds back the reading of the next event (a
//! stranger's forty messages, then a person's click); and a sender nobody linked, told
//! once a minute at most.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::Res;
use crate::output;
use questions_core::model::Relayed;

/// How often a sender nobody linked is told they cannot answer.
pub(crate) const REFUSE_AGAIN_AFTER: Duration = Duration::from_mins(1);

type Sender<M> = Arc<dyn Fn(M) -> Res<()> + Send + Sync>;

/// A queue of replies and the thread that sends them with `send`.
pub(crate) struct Outbox<M: Send + 'static> {
    channel: Relayed,
    queue: Mutex<Option<mpsc::Sender<M>>>,
    send: Sender<M>,
}

impl<M: Send + 'static> Outbox<M> {
    pub(crate) fn new(
        channel: Relayed,
        send: impl Fn(M) -> Res<()> + Send + Sync + 'static,
    ) -> Outbox<M> {
        Outbox {
            channel,
            queue: Mutex::new(None),
            send: Arc::new(send),
        }
    }

    /// Queues `reply`; false (said on stderr) when its thread is gone. The thread starts on
    /// first use, after the runner blocked the stopping signals: a thread started before
    /// would take them. A reply that fails is noted, not retried: what it would say is on
    /// the card too.
    pub(crate) fn send(&self, reply: M) -> bool {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.is_none() {
            let (into, queued) = mpsc::channel::<M>();
            let send = Arc::clone(&self.send);
            let channel = self.channel.as_str();
            std::thread::spawn(move || {
                for reply in queued {
                    if let Err(why) = send(reply) {
                        output::note(&format!("relay: {channel}: a reply was not sent ({why})"));
                    }
                }
            });
            *queue = Some(into);
        }
        let sent = queue.as_ref().map(|q| q.send(reply));
        if matches!(sent, Some(Ok(()))) {
            return true;
        }
        output::note(&format!(
            "relay: {}: a reply was not sent (its sender stopped)",
            self.channel.as_str()
        ));
        false
    }
}

/// When each sender nobody linked was last refused.
#[derive(Default)]
pub(crate) struct Refusals(Mutex<HashMap<String, Instant>>);

impl Refusals {
    /// Whether a refusal may be said to `who`, a sender nobody linked: once a minute.
    pub(crate) fn may_refuse(&self, who: &str) -> bool {
        let mut told = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        told.retain(|_, at| now.duration_since(*at) < REFUSE_AGAIN_AFTER);
        if told.contains_key(who) {
            return false;
        }
        told.insert(who.to_string(), now);
        true
    }
}
