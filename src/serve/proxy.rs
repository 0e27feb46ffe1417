//! The server as its users reach it: through proxies it trusts (`--trusted-proxy`) and
//! under a public URL (`--public-url`).
//!
//! A request's client is the address it came from, unless that address is a trusted
//! proxy: then the proxy's word is taken for where the request came from, read from
//! `Forwarded` (RFC 7239) or, without it, `X-Forwarded-For`, from the nearest hop back:
//! each trusted hop hands over to the one before it, and the first address not trusted is
//! the client (for the limits, the count of refused tokens, the request log). A hop that
//! names no address (`unknown`, an obfuscated name) ends the walk at the proxy that wrote
//! it. From an address not trusted, every forwarded header is ignored: a client cannot
//! name itself loopback, or a new address for each guess.
//!
//! The scheme and host the client used come from the same hop (`proto=`, `host=`), or
//! from `X-Forwarded-Proto` and `X-Forwarded-Host` as the nearest trusted proxy last set
//! them.

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;

use questions_core::error::{Error, Result};

/// `--trusted-proxy` and `--public-url`, checked.
#[derive(Debug, Default, Clone)]
pub(crate) struct Front {
    pub trusted: Vec<IpNet>,
    pub public: Option<Public>,
}

/// `--public-url`: the origin users reach the server at.
#[derive(Debug, Clone)]
pub(crate) struct Public {
    pub https: bool,
    /// The host as a Host header names it, lower case, with its port unless it is the
    /// scheme's own.
    pub authority: String,
    /// `https://host[:port]`, no slash at the end.
    pub origin: String,
}

/// What a request says of where it came from, as far as it is believed.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// The client (see the module's comment).
    pub client: IpAddr,
    /// Whether the request came through a trusted proxy that said so.
    pub forwarded: bool,
    /// The scheme the client used, when a trusted proxy said (`https` or `http`).
    pub proto: Option<String>,
    /// The Host the client sent, when a trusted proxy said.
    pub host: Option<String>,
}

impl Front {
    /// Reads `--trusted-proxy` ranges (an address alone is its own range) and
    /// `--public-url`, refusing what would trust everyone or send tokens in plain text.
    pub(crate) fn new(trusted: &[String], public: Option<&str>, tls: bool) -> Result<Front> {
        let mut ranges = Vec::new();
        for text in trusted.iter().flat_map(|t| t.split(',')).map(str::trim) {
            if text.is_empty() {
                continue;
            }
            let range = text
                .parse::<IpNet>()
                .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    Error::usage(format!(
                        "--trusted-proxy '{text}' is not an address or a range (CIDR: \
                         10.0.0.0/8, fd00::/8, 127.0.0.1)"
                    ))
                })?;
            if range.prefix_len() == 0 {
                return Err(Error::usage(format!(
                    "--trusted-proxy {text} trusts every address: anyone could name \
                     themselves any client. Name the proxies' own addresses or ranges"
                )));
            }
            ranges.push(range.trunc());
        }
        let public = public
            .map(|p| Public::parse(p, tls, !ranges.is_empty()))
            .transpose()?;
        Ok(Front {
            trusted: ranges,
            public,
        })
    }

    pub(crate) fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.trusted.iter().any(|range| range.contains(&ip))
    }

    /// Where a request from `peer` with `headers` came from (see the module's comment).
    pub(crate) fn seen(&self, peer: IpAddr, headers: &HeaderMap) -> Seen {
        let mut seen = Seen {
            client: canonical(peer),
            forwarded: false,
            proto: None,
            host: None,
        };
        if !self.trusts(peer) {
            return seen;
        }
        let hops = forwarded(headers).unwrap_or_else(|| x_forwarded(headers));
        for hop in hops.iter().rev() {
            seen.forwarded = true;
            seen.proto.clone_from(&hop.proto);
            seen.host.clone_from(&hop.host);
            let Some(ip) = hop.address else { break };
            seen.client = canonical(ip);
            if !self.trusts(ip) {
                break;
            }
        }
        seen
    }
}

impl Public {
    fn parse(text: &str, tls: bool, behind_proxy: bool) -> Result<Public> {
        let bad = |why: &str| Error::usage(format!("--public-url {text}: {why}"));
        let url = url::Url::parse(text.trim())
            .map_err(|e| bad(&format!("{e}; give one like https://questions.example.com")))?;
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            _ => return Err(bad("its scheme is neither https nor http")),
        };
        let Some(host) = url.host_str() else {
            return Err(bad("it names no host"));
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("a URL of the server holds no user or password"));
        }
        if url.query().is_some() || url.fragment().is_some() || url.path() != "/" {
            return Err(bad(
                "the server answers at the root of its host: give the origin alone, with no \
                 path, query or fragment",
            ));
        }
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !https && !loopback {
            return Err(bad(
                "tokens and cookies would cross the network in plain text: give https://, \
                 with TLS here (--tls-cert) or at the proxy in front (--trusted-proxy)",
            ));
        }
        if https && !tls && !behind_proxy {
            return Err(bad(
                "nothing on the way speaks TLS: give --tls-cert and --tls-key, or name the \
                 TLS-terminating proxy in front with --trusted-proxy",
            ));
        }
        let host = host.to_ascii_lowercase();
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        };
        let scheme = if https { "https" } else { "http" };
        Ok(Public {
            https,
            origin: format!("{scheme}://{authority}"),
            authority,
        })
    }

    /// Whether a Host header (as a client sent it) names this URL's host.
    pub(crate) fn names(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let default = if self.https { ":443" } else { ":80" };
        host == self.authority || host.strip_suffix(default) == Some(self.authority.as_str())
    }
}

/// An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// One proxy's word about the connection it received.
#[derive(Debug, Default)]
struct Hop {
    address: Option<IpAddr>,
    proto: Option<String>,
    host: Option<String>,
}

/// Every value of `name`, in order, split at commas outside quotes.
fn values(headers: &HeaderMap, name: &str) -> Option<Vec<String>> {
    let mut all = Vec::new();
    let mut any = false;
    for value in headers.get_all(name) {
        any = true;
        // A header that is not text is a hop no one can read.
        let text = value.to_str().unwrap_or("unknown");
        let (mut quoted, mut item) = (false, String::new());
        for c in text.chars() {
            match c {
                '"' => {
                    quoted = !quoted;
                    item.push(c);
                }
                ',' if !quoted => all.push(std::mem::take(&mut item)),
                _ => item.push(c),
            }
        }
        all.push(item);
    }
    any.then_some(all)
}

/// `Forwarded`'s hops, or none when there is no such header.
fn forwarded(headers: &HeaderMap) -> Option<Vec<Hop>> {
    let elements = values(headers, "forwarded")?;
    Some(
        elements
            .iter()
            .map(|element| {
                let mut hop = Hop::default();
                for pair in element.split(';') {
                    let Some((key, value)) = pair.split_once('=') else {
                        continue;
                    };
                    let value = value.trim().trim_matches('"').to_string();
                    match key.trim().to_ascii_lowercase().as_str() {
                        "for" => hop.address = node(&value),
                        "proto" => hop.proto = Some(value.to_ascii_lowercase()),
                        "host" => hop.host = Some(value),
                        _ => {}
                    }
                }
                hop
            })
            .collect(),
    )
}

/// `X-Forwarded-For`'s hops, the nearest carrying `X-Forwarded-Proto` and `-Host`.
fn x_forwarded(headers: &HeaderMap) -> Vec<Hop> {
    let mut hops: Vec<Hop> = values(headers, "x-forwarded-for")
        .unwrap_or_default()
        .iter()
        .map(|v| Hop {
            address: node(v.trim()),
            ..Hop::default()
        })
        .collect();
    let last = |name| {
        values(headers, name)
            .and_then(|v| v.last().map(|s| s.trim().to_string()))
            .filter(|s| !s.is_empty())
    };
    let (proto, host) = (last("x-forwarded-proto"), last("x-forwarded-host"));
    if hops.is_empty() && (proto.is_some() || host.is_some()) {
        // A proxy that names the scheme and host but not the client: the client is the
        // proxy's peer, which it did not say; the proxy stays the client.
        hops.push(Hop::default());
    }
    if let Some(nearest) = hops.last_mut() {
        nearest.proto = proto.map(|p| p.to_ascii_lowercase());
        nearest.host = host;
    }
    hops
}

/// The address of a node (`192.0.2.1`, `192.0.2.1:80`, `[2001:db8::1]:80`, `2001:db8::1`);
/// none for `unknown` or an obfuscated name.
fn node(text: &str) -> Option<IpAddr> {
    let text = text.trim().trim_matches('"');
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = text.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (ip, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    ip.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn front(trusted: &[&str]) -> Front {
        let trusted: Vec<String> = trusted.iter().map(|s| (*s).to_string()).collect();
        Front::new(&trusted, None, false).unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn from_an_address_not_trusted_every_forwarded_header_is_ignored() {
        let f = front(&["10.0.0.0/8"]);
        let h = headers(&[
            ("x-forwarded-for", "127.0.0.1"),
            ("forwarded", "for=127.0.0.1;proto=https;host=evil.example"),
            ("x-forwarded-proto", "https"),
        ]);
        let seen = f.seen(ip("203.0.113.9"), &h);
        assert_eq!(seen.client, ip("203.0.113.9"));
        assert!(!seen.forwarded);
        assert_eq!(seen.proto, None);
        assert_eq!(seen.host, None);
    }

    #[test]
    fn the_client_is_the_nearest_address_not_trusted() {
        let f = front(&["10.0.0.0/8", "127.0.0.1"]);
        // The client put a made-up address first; two trusted proxies appended theirs.
        let h = headers(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7, 10.1.1.1")]);
        let seen = f.seen(ip("127.0.0.1"), &h);
        assert_eq!(seen.client, ip("198.51.100.7"));
        // The same in Forwarded's form, split over two lines, with ports and IPv6.
        let h = headers(&[
            (
                "forwarded",
                "for=1.2.3.4, for=\"[2001:db8::7]:4711\";proto=https",
            ),
            ("forwarded", "for=10.1.1.1:80;proto=http"),
        ]);
        let seen = f.seen(ip("::ffff:127.0.0.1"), &h);
        assert_eq!(seen.client, ip("2001:db8::7"));
        assert_eq!(seen.proto.as_deref(), Some("https"));
        // Forwarded wins over X-Forwarded-For when both are sent.
        let h = headers(&[
            ("forwarded", "for=198.51.100.8"),
            ("x-forwarded-for", "127.0.0.2"),
        ]);
        assert_eq!(f.seen(ip("10.0.0.1"), &h).client, ip("198.51.100.8"));
    }

    #[test]
    fn a_hop_that_names_no_address_ends_at_the_proxy_that_wrote_it() {
        let f = front(&["10.0.0.0/8"]);
        let h = headers(&[("forwarded", "for=unknown, for=_hidden")]);
        assert_eq!(f.seen(ip("10.0.0.5"), &h).client, ip("10.0.0.5"));
        let h = headers(&[("x-forwarded-for", "not an address")]);
        assert_eq!(f.seen(ip("10.0.0.5"), &h).client, ip("10.0.0.5"));
        // Every hop trusted: the farthest one is the client.
        let h = headers(&[("x-forwarded-for", "10.9.9.9, 10.0.0.2")]);
        assert_eq!(f.seen(ip("10.0.0.5"), &h).client, ip("10.9.9.9"));
    }

    #[test]
    fn a_range_that_trusts_everyone_is_refused_and_so_is_nonsense() {
        for all in ["0.0.0.0/0", "::/0", "10.0.0.0/8,0.0.0.0/0"] {
            let e = Front::new(&[all.to_string()], None, false).unwrap_err();
            assert_eq!(e.code, questions_core::error::ErrorCode::Usage);
            assert!(e.message.contains("trusts every address"), "{}", e.message);
        }
        let e = Front::new(&["10.0.0.300/8".into()], None, false).unwrap_err();
        assert!(
            e.message.contains("not an address or a range"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_public_url_with_no_tls_on_the_way_is_refused() {
        let proxy = ["127.0.0.1".to_string()];
        let plain = Front::new(&proxy, Some("http://questions.example.com"), false);
        assert!(plain.unwrap_err().message.contains("plain text"));
        let none = Front::new(&[], Some("https://questions.example.com"), false);
        assert!(none
            .unwrap_err()
            .message
            .contains("nothing on the way speaks TLS"));
        let path = Front::new(&proxy, Some("https://q.example.com/inbox"), false);
        assert!(path.unwrap_err().message.contains("root of its host"));
        for ok in [
            Front::new(&proxy, Some("https://Q.example.com/"), false),
            Front::new(&[], Some("https://q.example.com:8443"), true),
            Front::new(&[], Some("http://localhost:8466"), false),
        ] {
            ok.unwrap();
        }
        let p = Front::new(&proxy, Some("https://Q.example.com"), false)
            .unwrap()
            .public
            .unwrap();
        assert_eq!(p.origin, "https://q.example.com");
        assert!(p.names("q.example.com") && p.names("Q.EXAMPLE.com:443"));
        assert!(!p.names("q.example.com:8443") && !p.names("evil.example"));
    }
}
