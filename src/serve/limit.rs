//! How many connections the inbox keeps open, and for whom. Each one is bounded: its
//! request's header must arrive within `HEADER_TIMEOUT`, at most `MAX_CONNECTIONS` are
//! open at once, and at most `MAX_PER_CLIENT` of them come from one client. So half-sent
//! requests cannot use up the process's files, and one address that keeps opening them
//! (no token is needed to connect) holds a quarter of the places at most: everyone else's
//! requests are still served.
//!
//! A connection whose request carries a token the ledger issued (`/v1/call`) leaves its
//! client's count for its token's: at most `MAX_PER_TOKEN` per token, `MAX_WITH_TOKEN` in
//! all, so a CI runner's thousand waiters behind one address are served while the
//! unauthenticated keep the limits above. Tokens refused are counted per client too:
//! after `MAX_REFUSED` in a minute, the client is slowed, never its holders: a token the
//! server honoured in the last `HONOURED_FOR` is looked up at once as ever, any other
//! only after `TARPIT`, and one refused then is answered 429 (`unavailable`, with the time
//! to wait) until the minute is over. So one job looping on an expired token behind a
//! proxy never locks out the valid tokens that come through the same address, and a
//! guesser gets a look a second for each connection it may hold. A token's requests
//! refused as `forbidden`, each of which writes a `refused` event, are counted per token:
//! past `MAX_REFUSED` a minute, the token waits (429) and the history does not fill.
//!
//! A client is the address a connection comes from: an IPv4 address, or an IPv6 address's
//! /64 (one machine's usual share; the IPv6 form of an IPv4 address counts as that IPv4
//! address). Everyone who reaches the inbox through one address shares its limit: on
//! loopback, every browser and script on this machine and everyone who comes through an
//! SSH tunnel (sshd connects from 127.0.0.1); behind a proxy, everyone behind it. A browser
//! keeps at most 6 connections to a server, so that is a dozen busy people, or fifty
//! scripts at once. It is no defence against someone on this machine, who may connect
//! from any 127.x.y.z, nor against one who holds four addresses' worth of connections.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most connections served at once without a ledger's token; more are closed as
/// they arrive.
pub(super) const MAX_CONNECTIONS: usize = 256;
/// The most connections served at once from one client (see the module's comment).
pub(super) const MAX_PER_CLIENT: usize = 64;
/// The most connections served at once with a ledger's token, in all and per token.
pub(super) const MAX_WITH_TOKEN: usize = 4096;
pub(super) const MAX_PER_TOKEN: usize = 2048;
/// The most tokens refused from one client in `REFUSED_WINDOW`.
pub(super) const MAX_REFUSED: u32 = 20;
pub(super) const REFUSED_WINDOW: Duration = Duration::from_mins(1);
/// How long a client past `MAX_REFUSED` waits before a token the server has not honoured
/// lately is looked up (see the module's comment).
pub(super) const TARPIT: Duration = Duration::from_secs(1);
/// How long a token honoured stays known: from a slowed client it is looked up at once.
pub(super) const HONOURED_FOR: Duration = Duration::from_mins(10);
/// The most tokens known as honoured at once (older ones are forgotten first).
const MOST_HONOURED: usize = 4096;
/// How long a request's header may take to arrive (a connection kept open between
/// requests waits as long for the next one).
pub(super) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The connections open: in all, by client and by token; and the tokens refused by
/// client.
pub(super) struct Limits {
    all: Arc<Semaphore>,
    with_token: Arc<Semaphore>,
    by_client: Mutex<HashMap<IpAddr, usize>>,
    by_token: Mutex<HashMap<String, usize>>,
    refused: Mutex<HashMap<IpAddr, (Instant, u32)>>,
    /// Requests refused (`forbidden`) by token: each is a `refused` event in the history.
    forbidden: Mutex<HashMap<String, (Instant, u32)>>,
    /// The tokens honoured lately, by a keyed hash of their secret (never the secret):
    /// a hash that collides only spares a wait, the token is still looked up.
    honoured: Mutex<HashMap<u64, Instant>>,
    keys: std::collections::hash_map::RandomState,
}

/// Whose count a connection is in.
enum Holder {
    Client {
        client: IpAddr,
        _permit: OwnedSemaphorePermit,
    },
    Token {
        token: String,
        _permit: OwnedSemaphorePermit,
    },
    /// Between the two, for a moment.
    Leaving,
}

/// A connection's place, given back when it is dropped. Shared by the connection's
/// requests (see `Conn`).
pub(super) struct Place {
    limits: Arc<Limits>,
    holder: Mutex<Holder>,
}

/// What a request knows of its connection: its place (where it comes from is
/// `proxy::Seen`'s).
#[derive(Clone)]
pub(super) struct Conn(pub(super) Arc<Place>);

impl Limits {
    pub(super) fn new() -> Arc<Limits> {
        Arc::new(Limits {
            all: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            with_token: Arc::new(Semaphore::new(MAX_WITH_TOKEN)),
            by_client: Mutex::new(HashMap::new()),
            by_token: Mutex::new(HashMap::new()),
            refused: Mutex::new(HashMap::new()),
            forbidden: Mutex::new(HashMap::new()),
            honoured: Mutex::new(HashMap::new()),
            keys: std::collections::hash_map::RandomState::new(),
        })
    }

    /// A place for a connection from `peer`; none when its client has `MAX_PER_CLIENT`
    /// open already, or the server `MAX_CONNECTIONS`.
    /// A trusted proxy's connections (`proxy`) are not held to `MAX_PER_CLIENT`: everyone
    /// behind it comes through them.
    pub(super) fn admit(self: &Arc<Self>, peer: IpAddr, proxy: bool) -> Option<Place> {
        let client = client(peer);
        let mut open = lock(&self.by_client);
        if !proxy && open.get(&client).is_some_and(|&n| n >= MAX_PER_CLIENT) {
            return None;
        }
        let permit = Arc::clone(&self.all).try_acquire_owned().ok()?;
        *open.entry(client).or_insert(0) += 1;
        Some(Place {
            limits: Arc::clone(self),
            holder: Mutex::new(Holder::Client {
                client,
                _permit: permit,
            }),
        })
    }

    /// Waits until every place is given back, or `within` has passed.
    pub(super) async fn drained(&self, within: Duration) {
        let _ = tokio::time::timeout(within, async {
            let _all = self.all.acquire_many(MAX_CONNECTIONS as u32).await;
            let _with = self.with_token.acquire_many(MAX_WITH_TOKEN as u32).await;
        })
        .await;
    }

    /// Whether `peer`'s client may try a token now: fewer than `MAX_REFUSED` refused in
    /// the last `REFUSED_WINDOW`.
    pub(super) fn may_try(&self, peer: IpAddr) -> bool {
        below(&self.refused, &client(peer))
    }

    /// Counts a token refused from `peer`.
    pub(super) fn refused(&self, peer: IpAddr) {
        count(&self.refused, client(peer));
    }

    /// How long before `peer`'s client may try tokens at once again (zero: it may now).
    pub(super) fn refused_for(&self, peer: IpAddr) -> Duration {
        let counts = lock(&self.refused);
        counts
            .get(&client(peer))
            .filter(|&&(_, n)| n >= MAX_REFUSED)
            .map_or(Duration::ZERO, |(since, _)| {
                REFUSED_WINDOW.saturating_sub(since.elapsed())
            })
    }

    /// How long a call from `peer` with `token` waits before the token is looked up: none,
    /// unless the client is past `MAX_REFUSED` and the token was not honoured lately.
    pub(super) fn wait_before(&self, peer: IpAddr, token: Option<&str>) -> Duration {
        if self.may_try(peer) || token.is_some_and(|t| self.known(t)) {
            Duration::ZERO
        } else {
            TARPIT
        }
    }

    /// Remembers `token` as honoured (see `wait_before`).
    pub(super) fn honour(&self, token: &str) {
        let mut honoured = lock(&self.honoured);
        let now = Instant::now();
        if honoured.len() >= MOST_HONOURED {
            honoured.retain(|_, at| now.duration_since(*at) < HONOURED_FOR);
            if honoured.len() >= MOST_HONOURED {
                honoured.clear();
            }
        }
        honoured.insert(self.keys.hash_one(token.trim()), now);
    }

    fn known(&self, token: &str) -> bool {
        lock(&self.honoured)
            .get(&self.keys.hash_one(token.trim()))
            .is_some_and(|at| at.elapsed() < HONOURED_FOR)
    }

    /// How long before `token` may send a request again: zero while fewer than
    /// `MAX_REFUSED` of its requests were `forbidden` in the last `REFUSED_WINDOW` (each
    /// wrote a `refused` event).
    pub(super) fn forbidden_for(&self, token: &str) -> Duration {
        if below(&self.forbidden, &token.to_string()) {
            return Duration::ZERO;
        }
        lock(&self.forbidden)
            .get(token)
            .map_or(Duration::ZERO, |(since, _)| {
                REFUSED_WINDOW.saturating_sub(since.elapsed())
            })
    }

    /// Counts a request of `token` refused as `forbidden`.
    pub(super) fn forbidden(&self, token: &str) {
        count(&self.forbidden, token.to_string());
    }

    fn leave_client(&self, client: IpAddr) {
        let mut open = lock(&self.by_client);
        if let Some(n) = open.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&client);
            }
        }
    }

    fn leave_token(&self, token: &str) {
        let mut open = lock(&self.by_token);
        if let Some(n) = open.get_mut(token) {
            *n -= 1;
            if *n == 0 {
                open.remove(token);
            }
        }
    }
}

impl Place {
    /// Moves the connection into `token`'s count (once: later calls on it keep it
    /// there); false when `token` has `MAX_PER_TOKEN` connections open already, or the
    /// server `MAX_WITH_TOKEN`, and the connection stays where it was.
    pub(super) fn carries(&self, token: &str) -> bool {
        let mut holder = lock(&self.holder);
        match &*holder {
            Holder::Token { token: held, .. } => return held == token,
            Holder::Leaving => return false,
            Holder::Client { .. } => {}
        }
        let limits = &self.limits;
        let mut open = lock(&limits.by_token);
        if open.get(token).is_some_and(|&n| n >= MAX_PER_TOKEN) {
            return false;
        }
        let Ok(permit) = Arc::clone(&limits.with_token).try_acquire_owned() else {
            return false;
        };
        *open.entry(token.to_string()).or_insert(0) += 1;
        drop(open);
        if let Holder::Client { client, .. } = std::mem::replace(
            &mut *holder,
            Holder::Token {
                token: token.to_string(),
                _permit: permit,
            },
        ) {
            limits.leave_client(client);
        }
        true
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        match std::mem::replace(&mut *lock(&self.holder), Holder::Leaving) {
            Holder::Client { client, .. } => self.limits.leave_client(client),
            Holder::Token { token, .. } => self.limits.leave_token(&token),
            Holder::Leaving => {}
        }
    }
}

/// Whether `key` has fewer than `MAX_REFUSED` in the current window (older ones are
/// forgotten).
fn below<K: std::hash::Hash + Eq>(counts: &Mutex<HashMap<K, (Instant, u32)>>, key: &K) -> bool {
    let mut counts = lock(counts);
    let now = Instant::now();
    counts.retain(|_, (since, _)| now.duration_since(*since) < REFUSED_WINDOW);
    counts.get(key).is_none_or(|&(_, n)| n < MAX_REFUSED)
}

fn count<K: std::hash::Hash + Eq>(counts: &Mutex<HashMap<K, (Instant, u32)>>, key: K) {
    let mut counts = lock(counts);
    let now = Instant::now();
    let entry = counts.entry(key).or_insert((now, 0));
    if now.duration_since(entry.0) >= REFUSED_WINDOW {
        *entry = (now, 0);
    }
    entry.1 += 1;
}

/// Every map here is whole after every change: a panic elsewhere leaves nothing half done.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The client an address belongs to (see the module's comment).
fn client(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V4(_) => peer,
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                IpAddr::V4(v4)
            } else {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_client_is_an_ipv4_address_or_an_ipv6_address_s_64() {
        assert_eq!(client(ip("127.0.0.2")), ip("127.0.0.2"));
        assert_eq!(client(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(client(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(client(ip("2001:db8:1:2::ffff")), ip("2001:db8:1:2::"));
        assert_ne!(client(ip("2001:db8:1:3::1")), ip("2001:db8:1:2::"));
    }

    #[test]
    fn each_client_has_its_share_and_all_of_them_the_server_s() {
        let limits = Limits::new();
        let flood: Vec<Place> = (0..MAX_PER_CLIENT)
            .map(|_| limits.admit(ip("127.0.0.2"), false).unwrap())
            .collect();
        assert!(
            limits.admit(ip("127.0.0.2"), false).is_none(),
            "over its share"
        );
        let other = limits
            .admit(ip("127.0.0.1"), false)
            .expect("another client's place");
        // Places given back are forgotten.
        drop(flood);
        assert!(
            lock(&limits.by_client).get(&ip("127.0.0.2")).is_none(),
            "forgotten"
        );
        let mut rest = vec![other];
        for n in 1..MAX_CONNECTIONS {
            let peer = IpAddr::V4([10, 0, (n / 250) as u8, (n % 250) as u8].into());
            rest.push(limits.admit(peer, false).unwrap());
        }
        assert!(
            limits.admit(ip("10.9.9.9"), false).is_none(),
            "the server is full"
        );
        rest.pop();
        assert!(limits.admit(ip("10.9.9.9"), false).is_some());
    }
}

#[cfg(test)]
mod token_tests {
    use super::*;

    #[test]
    fn a_token_s_connections_leave_their_client_s_count() {
        let limits = Limits::new();
        let peer: IpAddr = "127.0.0.3".parse().unwrap();
        let waiters: Vec<Place> = (0..MAX_PER_CLIENT * 4)
            .map(|_| {
                let place = limits.admit(peer, false).expect("a place");
                assert!(place.carries("ci"));
                place
            })
            .collect();
        assert_eq!(
            lock(&limits.by_token).get("ci"),
            Some(&(MAX_PER_CLIENT * 4))
        );
        assert!(lock(&limits.by_client).get(&peer).is_none());
        // Its first token holds: a second on the same connection does not move it.
        assert!(!waiters[0].carries("other"));
        drop(waiters);
        assert!(lock(&limits.by_token).is_empty());
    }

    #[test]
    fn refused_tokens_are_counted_by_client() {
        let limits = Limits::new();
        let peer: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..MAX_REFUSED {
            assert!(limits.may_try(peer));
            limits.refused(peer);
        }
        assert!(!limits.may_try(peer), "over its share of refusals");
        assert!(
            limits.may_try("192.0.2.2".parse().unwrap()),
            "another client"
        );
        assert!(limits.refused_for(peer) > Duration::from_secs(50));
        assert_eq!(
            limits.refused_for("192.0.2.2".parse().unwrap()),
            Duration::ZERO
        );
        // The client is slowed, not the holders of the tokens the server honours.
        assert_eq!(limits.wait_before(peer, Some("qtok_guess")), TARPIT);
        assert_eq!(limits.wait_before(peer, None), TARPIT);
        limits.honour("qtok_valid");
        assert_eq!(limits.wait_before(peer, Some("qtok_valid")), Duration::ZERO);
        assert_eq!(limits.wait_before(peer, Some("qtok_guess")), TARPIT);
        assert!(
            !lock(&limits.honoured).is_empty()
                && !format!("{:?}", lock(&limits.honoured)).contains("valid"),
            "the secret itself is never kept"
        );
    }
}
