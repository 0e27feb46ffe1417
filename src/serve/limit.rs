//! How many connections the inbox keeps open, and for whom. Each one is bounded: its
//! request's header must arrive within `HEADER_TIMEOUT`, at most `MAX_CONNECTIONS` are
//! open at once, and at most `MAX_PER_CLIENT` of them come from one client. So half-sent
//! requests cannot use up the process's files, and one address that keeps opening them
//! (no token is needed to connect) holds a quarter of the places at most: everyone else's
//! requests are still served.
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
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most connections served at once; more are closed as they arrive.
pub(super) const MAX_CONNECTIONS: usize = 256;
/// The most connections served at once from one client (see the module's comment).
pub(super) const MAX_PER_CLIENT: usize = 64;
/// How long a request's header may take to arrive (a connection kept open between
/// requests waits as long for the next one).
pub(super) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The connections open: in all, and by client.
pub(super) struct Limits {
    all: Arc<Semaphore>,
    by_client: Mutex<HashMap<IpAddr, usize>>,
}

/// A connection's place, given back when it is dropped.
pub(super) struct Place {
    limits: Arc<Limits>,
    client: IpAddr,
    _permit: OwnedSemaphorePermit,
}

impl Limits {
    pub(super) fn new() -> Arc<Limits> {
        Arc::new(Limits {
            all: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            by_client: Mutex::new(HashMap::new()),
        })
    }

    /// A place for a connection from `peer`; none when its client has `MAX_PER_CLIENT`
    /// open already, or the server `MAX_CONNECTIONS`.
    pub(super) fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Place> {
        let client = client(peer);
        let mut open = self.open();
        if open.get(&client).is_some_and(|&n| n >= MAX_PER_CLIENT) {
            return None;
        }
        let permit = Arc::clone(&self.all).try_acquire_owned().ok()?;
        *open.entry(client).or_insert(0) += 1;
        Some(Place {
            limits: Arc::clone(self),
            client,
            _permit: permit,
        })
    }

    /// Waits until every place is given back, or `within` has passed.
    pub(super) async fn drained(&self, within: Duration) {
        let _ = tokio::time::timeout(within, self.all.acquire_many(MAX_CONNECTIONS as u32)).await;
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        // The map is whole after every change: a panic elsewhere leaves nothing half done.
        self.by_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.limits.open();
        if let Some(n) = open.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.client);
            }
        }
    }
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
            .map(|_| limits.admit(ip("127.0.0.2")).unwrap())
            .collect();
        assert!(limits.admit(ip("127.0.0.2")).is_none(), "over its share");
        let other = limits
            .admit(ip("127.0.0.1"))
            .expect("another client's place");
        // Places given back are forgotten.
        drop(flood);
        assert!(limits.open().get(&ip("127.0.0.2")).is_none(), "forgotten");
        let mut rest = vec![other];
        for n in 1..MAX_CONNECTIONS {
            let peer = IpAddr::V4([10, 0, (n / 250) as u8, (n % 250) as u8].into());
            rest.push(limits.admit(peer).unwrap());
        }
        assert!(limits.admit(ip("10.9.9.9")).is_none(), "the server is full");
        rest.pop();
        assert!(limits.admit(ip("10.9.9.9")).is_some());
    }
}
