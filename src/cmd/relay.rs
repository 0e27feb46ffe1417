//! `questions relay --config FILE`: reads the config, takes each channel's secret from the
//! environment variable it names, and runs the relay (src/relay).

use std::path::Path;
use std::sync::Arc;

use super::Outcome;
use crate::output;
use crate::relay::{
    self, email, email::Email, email::Endpoint, slack::Slack, telegram::Telegram, Channel,
};
use questions_core::error::{Error, Result};
use questions_core::ops::Ledger;

const TELEGRAM_API: &str = "https://api.telegram.org";
const SLACK_API: &str = "https://slack.com/api";
/// Seconds a `getUpdates` long poll waits for an update.
const POLL_TIMEOUT: u64 = 25;

pub(super) fn run(ledger: &mut Ledger, config: &Path, stages: &[String]) -> Result<Outcome> {
    let channels = read_config(config)?;
    relay::run(ledger, channels, stages)?;
    Ok(Outcome::ok(serde_json::json!({})))
}

/// The channels a config names, each with its secret read from the environment. Any key
/// it does not know, or a value of the wrong kind, is a usage error naming that key.
fn read_config(path: &Path) -> Result<Vec<Arc<dyn Channel>>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(format!(
            "cannot read the relay config {}: {e}",
            path.display()
        ))
    })?;
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        Error::usage(format!(
            "the relay config {} is not TOML: {}",
            path.display(),
            e.message()
        ))
    })?;
    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    for (name, item) in doc.iter() {
        let Some(table) = item.as_table() else {
            return Err(Error::usage(format!(
                "relay config: '{name}' is not a table: write [telegram] and its keys"
            )));
        };
        match name {
            "telegram" => channels.push(Arc::new(telegram(table)?)),
            "slack" => channels.push(Arc::new(slack(table)?)),
            "email" => channels.push(Arc::new(email(table)?)),
            "matrix" => channels.push(Arc::new(relay::matrix::matrix(table)?)),
            other => {
                return Err(Error::usage(format!(
                "relay config: unknown channel [{other}]: the channels are [telegram], [slack], [email] and [matrix]"
            )))
            }
        }
    }
    if channels.is_empty() {
        return Err(Error::usage(
            "relay config: no channel: add [telegram] with token_env = \"VAR\"",
        ));
    }
    Ok(channels)
}

fn telegram(table: &toml_edit::Table) -> Result<Telegram> {
    let mut api = TELEGRAM_API.to_string();
    let mut token_env: Option<String> = None;
    let mut poll_timeout = POLL_TIMEOUT;
    for (key, value) in table {
        let bad = |what: &str| Error::usage(format!("relay config: telegram.{key} must be {what}"));
        match key {
            "api" => {
                let v = value.as_str().ok_or_else(|| bad("a URL string"))?;
                api = api_url(v)
                    .map_err(|why| bad(&format!("an http:// or https:// URL ({why})")))?;
            }
            "token_env" => {
                token_env = Some(
                    value
                        .as_str()
                        .filter(|v| !v.trim().is_empty())
                        .ok_or_else(|| bad("the name of an environment variable"))?
                        .to_string(),
                );
            }
            "poll_timeout" => {
                poll_timeout = value
                    .as_integer()
                    .filter(|n| (0..=50).contains(n))
                    .ok_or_else(|| bad("a number of seconds from 0 to 50"))?
                    as u64;
            }
            other => {
                return Err(Error::usage(format!(
                    "relay config: unknown key telegram.{other} (api, token_env, poll_timeout)"
                )))
            }
        }
    }
    let var = token_env.ok_or_else(|| {
        Error::usage("relay config: telegram.token_env is missing: the environment variable holding the bot's token")
    })?;
    let token = std::env::var(&var).ok().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
        Error::usage(format!(
            "relay config: telegram.token_env names {var}, which is not set: export the bot's token in it"
        ))
    })?;
    if token.contains(|c: char| c.is_whitespace() || c == '/') {
        return Err(Error::usage(format!(
            "relay config: telegram.token_env: {var} does not hold a bot token"
        )));
    }
    Ok(Telegram::new(&api, token.trim(), poll_timeout))
}

/// An API's base URL as the config gives it: `http://` or `https://`, a host (a name, an
/// IPv4 address or a bracketed IPv6 one), a port if any, a path if any; no user, query or
/// fragment (the token is put after it). Else why not.
fn api_url(text: &str) -> std::result::Result<String, &'static str> {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or("another scheme")?;
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it holds a space or a control character");
    }
    if text.contains(['?', '#', '@', '\\']) {
        return Err("a user, a query or a fragment");
    }
    let authority = rest.split('/').next().unwrap_or("");
    let (host, port) = match authority.find(']') {
        Some(end) if authority.starts_with('[') => {
            let (host, after) = authority.split_at(end + 1);
            match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if after.is_empty() => (host, None),
                None => return Err("it names no host"),
            }
        }
        _ => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if let Some(port) = port {
        if port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err("its port is not a number from 1 to 65535");
        }
    }
    let bracketed = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .map(|h| h.parse::<std::net::Ipv6Addr>().is_ok());
    let named = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if !bracketed.unwrap_or(named) {
        return Err("it names no host");
    }
    Ok(text.to_string())
}

/// `[slack]`: `api` (the Web API's base), `app_token_env` (the app-level token, for Socket
/// Mode) and `bot_token_env` (the bot token, for the Web API).
fn slack(table: &toml_edit::Table) -> Result<Slack> {
    let mut api = SLACK_API.to_string();
    let mut app_env: Option<String> = None;
    let mut bot_env: Option<String> = None;
    for (key, value) in table {
        let bad = |what: &str| Error::usage(format!("relay config: slack.{key} must be {what}"));
        let var = || {
            value
                .as_str()
                .filter(|v| !v.trim().is_empty())
                .map(str::to_string)
                .ok_or_else(|| bad("the name of an environment variable"))
        };
        match key {
            "api" => {
                let v = value.as_str().ok_or_else(|| bad("a URL string"))?;
                api = api_url(v)
                    .map_err(|why| bad(&format!("an http:// or https:// URL ({why})")))?;
            }
            "app_token_env" => app_env = Some(var()?),
            "bot_token_env" => bot_env = Some(var()?),
            other => {
                return Err(Error::usage(format!(
                    "relay config: unknown key slack.{other} (api, app_token_env, bot_token_env)"
                )))
            }
        }
    }
    let token = |key: &str, var: Option<String>, what: &str| -> Result<String> {
        let var = var.ok_or_else(|| {
            Error::usage(format!(
                "relay config: slack.{key} is missing: the environment variable holding the {what}"
            ))
        })?;
        let token = std::env::var(&var)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Error::usage(format!(
                    "relay config: slack.{key} names {var}, which is not set: export the {what} in it"
                ))
            })?;
        if token.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return Err(Error::usage(format!(
                "relay config: slack.{key}: {var} does not hold a token"
            )));
        }
        Ok(token)
    };
    let app = token("app_token_env", app_env, "app-level token (xapp-…)")?;
    let bot = token("bot_token_env", bot_env, "bot token (xoxb-…)")?;
    Ok(Slack::new(&api, &app, &bot))
}

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
fn email(table: &toml_edit::Table) -> Result<Email> {
    let mut smtp: Option<Endpoint> = None;
    let mut imap: Option<Endpoint> = None;
    let mut address: Option<String> = None;
    let mut user_env: Option<String> = None;
    let mut password_env: Option<String> = None;
    let mut tls = email::Tls::Required;
    let mut ca: Vec<rustls::pki_types::CertificateDer<'static>> = Vec::new();
    let mut authserv_id: Option<String> = None;
    let mut idle = IDLE_SECONDS;
    for (key, value) in table {
        let bad = |what: &str| Error::usage(format!("relay config: email.{key} must be {what}"));
        let text = || {
            value
                .as_str()
                .map(str::trim)
                .filter(|v| !v.is_empty() && !v.contains(|c: char| c.is_control()))
                .map(str::to_string)
        };
        let endpoint = || -> Result<Endpoint> {
            let v = text().ok_or_else(|| bad("host:port"))?;
            let (host, port) = v.rsplit_once(':').ok_or_else(|| bad("host:port"))?;
            let port = port.parse::<u16>().ok().filter(|p| *p > 0);
            match port {
                Some(port) if !host.is_empty() && !host.contains(char::is_whitespace) => {
                    Ok(Endpoint {
                        host: host
                            .trim_start_matches('[')
                            .trim_end_matches(']')
                            .to_string(),
                        port,
                    })
                }
                _ => Err(bad("host:port")),
            }
        };
        match key {
            "smtp" => smtp = Some(endpoint()?),
            "imap" => imap = Some(endpoint()?),
            "address" => {
                let v = text().ok_or_else(|| bad("the relay's email address"))?;
                let ok = v.split_once('@').is_some_and(|(l, d)| {
                    !l.is_empty()
                        && !l.contains('+')
                        && d.contains('.')
                        && !v.contains(|c: char| c.is_whitespace() || "<>\"(),;:".contains(c))
                });
                if !ok {
                    return Err(bad("an address like relay@example.org (with no '+')"));
                }
                address = Some(v.to_lowercase());
            }
            "username_env" => {
                user_env = Some(text().ok_or_else(|| bad("the name of an environment variable"))?);
            }
            "password_env" => {
                password_env =
                    Some(text().ok_or_else(|| bad("the name of an environment variable"))?);
            }
            "tls" => {
                tls = match value.as_str() {
                    Some("required") => email::Tls::Required,
                    Some("implicit") => email::Tls::Implicit,
                    Some("starttls") => email::Tls::Starttls,
                    Some("none") => email::Tls::None,
                    _ => return Err(bad("\"required\", \"implicit\", \"starttls\" or \"none\"")),
                }
            }
            "ca_file" => {
                let path = text().ok_or_else(|| bad("the path of a PEM file of certificates"))?;
                ca = ca_file(&path)?;
            }
            "authserv_id" => {
                let v = text().ok_or_else(|| bad("the authserv-id of the receiving server"))?;
                if v.contains(|c: char| c.is_whitespace() || c == ';') {
                    return Err(bad("one authserv-id, like mx.example.org"));
                }
                authserv_id = Some(v);
            }
            "idle_seconds" => {
                idle = value
                    .as_integer()
                    .filter(|n| (1..=40).contains(n))
                    .ok_or_else(|| bad("a number of seconds from 1 to 40"))?;
            }
            other => {
                return Err(Error::usage(format!(
                    "relay config: unknown key email.{other} (smtp, imap, address, \
                     username_env, password_env, tls, ca_file, authserv_id, idle_seconds)"
                )))
            }
        }
    }
    let missing = |key: &str, what: &str| {
        Error::usage(format!("relay config: email.{key} is missing: {what}"))
    };
    let smtp = smtp.ok_or_else(|| missing("smtp", "the SMTP server, host:port"))?;
    let imap = imap.ok_or_else(|| missing("imap", "the IMAP server, host:port"))?;
    let address = address.ok_or_else(|| missing("address", "the relay's email address"))?;
    let authserv_id = authserv_id.ok_or_else(|| {
        missing(
            "authserv_id",
            "the authserv-id of the server whose Authentication-Results are trusted",
        )
    })?;
    if tls == email::Tls::None {
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
    let secret = |key: &str, var: Option<String>, what: &str| -> Result<String> {
        let var = var
            .ok_or_else(|| missing(key, &format!("the environment variable holding the {what}")))?;
        let value = std::env::var(&var)
            .ok()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                Error::usage(format!(
                "relay config: email.{key} names {var}, which is not set: export the {what} in it"
            ))
            })?;
        if value.contains(['\r', '\n', '\0']) {
            return Err(Error::usage(format!(
                "relay config: email.{key}: {var} holds a line break"
            )));
        }
        Ok(value)
    };
    let username = secret("username_env", user_env, "mailbox's user name")?;
    let password = secret("password_env", password_env, "mailbox's password")?;
    let tls_config = email::tls_config(ca)
        .map_err(|e| Error::usage(format!("relay config: email.ca_file: {e}")))?;
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
