//! `[email]`, the email channel's section of the relay config.

use questions_core::error::{Error, Result};
use questions_core::model::Relayed;

use super::{tls_config, Email, Endpoint, Tls};
use crate::output;
use crate::relay::kit::config::{Config, Secret};

/// Seconds an IMAP IDLE waits before it is renewed: a poll, as Telegram's, well within the
/// channel's lease (a minute, renewed between polls).
const IDLE_SECONDS: i64 = 25;

/// Whether `host` is this machine's loopback.
fn loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `[email]`: `smtp` and `imap` (`host:port`), `address` (the relay's mailbox, whose
/// `local+token@domain` addresses reach it), `username_env` and `password_env` (the
/// mailbox's login, also SMTP's where the server offers AUTH), `tls` (`required`, the
/// default: implicit TLS on 465 and 993, STARTTLS elsewhere; `implicit` or `starttls` for
/// both servers on any port; `none` only for loopback hosts), `ca_file` (PEM certificates
/// trusted besides the webpki roots), `authserv_id` (whose `Authentication-Results` are
/// trusted), `idle_seconds`.
pub(crate) fn open(table: &toml_edit::Table) -> Result<Email> {
    let config = Config::new(
        Relayed::Email,
        table,
        &[
            "smtp",
            "imap",
            "address",
            "username_env",
            "password_env",
            "tls",
            "ca_file",
            "authserv_id",
            "idle_seconds",
        ],
    )?;
    let endpoint = |key: &str| -> Result<Option<Endpoint>> {
        let Some(v) = config.text(key, "host:port")? else {
            return Ok(None);
        };
        let (host, port) = v
            .rsplit_once(':')
            .ok_or_else(|| config.bad(key, "host:port"))?;
        match port.parse::<u16>().ok().filter(|p| *p > 0) {
            Some(port) if !host.is_empty() && !host.contains(char::is_whitespace) => {
                Ok(Some(Endpoint {
                    host: host
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_string(),
                    port,
                }))
            }
            _ => Err(config.bad(key, "host:port")),
        }
    };
    let smtp = endpoint("smtp")?;
    let imap = endpoint("imap")?;
    let address = match config.text("address", "the relay's email address")? {
        Some(v) => {
            let ok = v.split_once('@').is_some_and(|(l, d)| {
                !l.is_empty()
                    && !l.contains('+')
                    && d.contains('.')
                    && !v.contains(|c: char| c.is_whitespace() || "<>\"(),;:".contains(c))
            });
            if !ok {
                return Err(
                    config.bad("address", "an address like relay@example.org (with no '+')")
                );
            }
            Some(v.to_lowercase())
        }
        None => None,
    };
    let tls = config.choice(
        "tls",
        &[
            ("required", Tls::Required),
            ("implicit", Tls::Implicit),
            ("starttls", Tls::Starttls),
            ("none", Tls::None),
        ],
        Tls::Required,
    )?;
    let ca = match config.text("ca_file", "the path of a PEM file of certificates")? {
        Some(path) => ca_file(&path)?,
        None => Vec::new(),
    };
    let authserv_id = match config.text("authserv_id", "the authserv-id of the receiving server")? {
        Some(v) if v.contains(|c: char| c.is_whitespace() || c == ';') => {
            return Err(config.bad("authserv_id", "one authserv-id, like mx.example.org"));
        }
        v => v,
    };
    let idle = config.integer("idle_seconds", 1..=40, "seconds", IDLE_SECONDS)?;
    let smtp = smtp.ok_or_else(|| config.missing("smtp", "the SMTP server, host:port"))?;
    let imap = imap.ok_or_else(|| config.missing("imap", "the IMAP server, host:port"))?;
    let address = address.ok_or_else(|| config.missing("address", "the relay's email address"))?;
    let authserv_id = authserv_id.ok_or_else(|| {
        config.missing(
            "authserv_id",
            "the authserv-id of the server whose Authentication-Results are trusted",
        )
    })?;
    if tls == Tls::None {
        for (key, at) in [("smtp", &smtp), ("imap", &imap)] {
            if !loopback(&at.host) {
                return Err(Error::usage(format!(
                    "relay config: email.tls = \"none\" is accepted only for loopback hosts, \
                     and email.{key} is {}: remove tls (TLS is required)",
                    at.host
                )));
            }
        }
    }
    let username = config.secret("username_env", "mailbox's user name", Secret::Password)?;
    let password = config.secret("password_env", "mailbox's password", Secret::Password)?;
    let tls_config = tls_config(ca).map_err(|e| config.refused("ca_file", &e))?;
    Ok(Email::new(
        smtp,
        imap,
        &address,
        username,
        password,
        tls,
        tls_config,
        &authserv_id,
        std::time::Duration::from_secs(idle as u64),
    ))
}

/// The certificates of `[email] ca_file` (PEM), trusted besides the webpki roots, as
/// PostgreSQL's `sslrootcert` is: a private CA's.
fn ca_file(path: &str) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    let certs: Vec<rustls::pki_types::CertificateDer<'static>> =
        rustls::pki_types::CertificateDer::pem_file_iter(path)
            .and_then(|iter| iter.collect())
            .map_err(|e| {
                Error::usage(format!(
                    "relay config: email.ca_file: cannot read the certificates in {}: {e}",
                    output::sanitize(path, false)
                ))
            })?;
    if certs.is_empty() {
        return Err(Error::usage(format!(
            "relay config: email.ca_file: {} holds no PEM certificate",
            output::sanitize(path, false)
        )));
    }
    Ok(certs)
}
