//! A channel's section of the relay config, read the same way for every channel: each
//! key known or a usage error listing the known ones; URLs, integers within bounds and
//! enumerations checked; a secret named by its environment variable and read from there,
//! its value never printed. Every error begins "relay config: <channel>.<key>".

use std::ops::RangeInclusive;

use questions_core::error::{Error, Result};
use questions_core::model::Relayed;

/// A channel's section, its keys checked against the channel's known ones.
pub(crate) struct Config<'a> {
    channel: Relayed,
    table: &'a toml_edit::Table,
}

/// What shape a secret has, and so what refuses it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Secret {
    /// A token: one word, the spaces around it trimmed; never a space or a control
    /// character inside, nor any of `also`. `is`: what it is, in "VAR does not hold …".
    Token {
        also: &'static [char],
        is: &'static str,
    },
    /// A password: as it is (spaces count), with no line break.
    Password,
}

impl<'a> Config<'a> {
    /// The section `table` of `channel`, whose keys are `known`.
    pub(crate) fn new(
        channel: Relayed,
        table: &'a toml_edit::Table,
        known: &[&str],
    ) -> Result<Config<'a>> {
        if let Some((key, _)) = table.iter().find(|(key, _)| !known.contains(key)) {
            return Err(Error::usage(format!(
                "relay config: unknown key {}.{key} ({})",
                channel.as_str(),
                known.join(", ")
            )));
        }
        Ok(Config { channel, table })
    }

    /// `<channel>.<key> must be <what>`.
    pub(crate) fn bad(&self, key: &str, what: &str) -> Error {
        Error::usage(format!(
            "relay config: {}.{key} must be {what}",
            self.channel.as_str()
        ))
    }

    /// `<channel>.<key> is missing: <what>`.
    pub(crate) fn missing(&self, key: &str, what: &str) -> Error {
        Error::usage(format!(
            "relay config: {}.{key} is missing: {what}",
            self.channel.as_str()
        ))
    }

    /// `<channel>.<key>: <why>`, for a value of the right kind that does not do.
    pub(crate) fn refused(&self, key: &str, why: &str) -> Error {
        Error::usage(format!(
            "relay config: {}.{key}: {why}",
            self.channel.as_str()
        ))
    }

    /// A text value, trimmed: never blank, never a control character; `what` it must be
    /// when it is not one.
    pub(crate) fn text(&self, key: &str, what: &str) -> Result<Option<String>> {
        let Some(value) = self.table.get(key) else {
            return Ok(None);
        };
        value
            .as_str()
            .map(str::trim)
            .filter(|v| !v.is_empty() && !v.contains(|c: char| c.is_control()))
            .map(|v| Some(v.to_string()))
            .ok_or_else(|| self.bad(key, what))
    }

    /// An API's base URL (`http://` or `https://`, see `api_url`); `default` without one.
    pub(crate) fn url(&self, key: &str, default: &str) -> Result<String> {
        let Some(value) = self.table.get(key) else {
            return Ok(default.to_string());
        };
        let text = value
            .as_str()
            .ok_or_else(|| self.bad(key, "a URL string"))?;
        api_url(text).map_err(|why| self.bad(key, &format!("an http:// or https:// URL ({why})")))
    }

    /// A whole number of `unit` within `range`; `default` without one.
    pub(crate) fn integer(
        &self,
        key: &str,
        range: RangeInclusive<i64>,
        unit: &str,
        default: i64,
    ) -> Result<i64> {
        let Some(value) = self.table.get(key) else {
            return Ok(default);
        };
        value
            .as_integer()
            .filter(|n| range.contains(n))
            .ok_or_else(|| {
                self.bad(
                    key,
                    &format!(
                        "a number of {unit} from {} to {}",
                        range.start(),
                        range.end()
                    ),
                )
            })
    }

    /// One of `choices` by its name; `default` without one.
    pub(crate) fn choice<T: Copy>(
        &self,
        key: &str,
        choices: &[(&str, T)],
        default: T,
    ) -> Result<T> {
        let Some(value) = self.table.get(key) else {
            return Ok(default);
        };
        if let Some(chosen) = value
            .as_str()
            .and_then(|v| choices.iter().find(|(name, _)| *name == v))
        {
            return Ok(chosen.1);
        }
        let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
        let listed = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        };
        Err(self.bad(key, &listed))
    }

    /// The secret in the environment variable that `key` names: `what` it is ("bot's
    /// token"), in the errors, which name the variable and never print its value.
    pub(crate) fn secret(&self, key: &str, what: &str, shape: Secret) -> Result<String> {
        let var = self
            .text(key, "the name of an environment variable")?
            .ok_or_else(|| {
                self.missing(key, &format!("the environment variable holding the {what}"))
            })?;
        let value = std::env::var(&var).ok();
        let value = match shape {
            Secret::Token { .. } => value.map(|v| v.trim().to_string()),
            Secret::Password => value,
        }
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            Error::usage(format!(
                "relay config: {}.{key} names {var}, which is not set: export the {what} in it",
                self.channel.as_str()
            ))
        })?;
        match shape {
            Secret::Token { also, is } => {
                if value
                    .contains(|c: char| c.is_whitespace() || c.is_control() || also.contains(&c))
                {
                    return Err(self.refused(key, &format!("{var} does not hold {is}")));
                }
            }
            Secret::Password => {
                if value.contains(['\r', '\n', '\0']) {
                    return Err(self.refused(key, &format!("{var} holds a line break")));
                }
            }
        }
        Ok(value)
    }
}

/// An API's base URL as the config gives it: `http://` or `https://`, a host (a name, an
/// IPv4 address or a bracketed IPv6 one), a port if any, a path if any; no user, query or
/// fragment (the token is put after it). Else why not.
fn api_url(text: &str) -> std::result::Result<String, &'static str> {
    base_url(text).map(|_| text.to_string())
}

/// What a base URL names: whether it is `https://`, and its host as written (a bracketed
/// IPv6 address with its brackets).
pub(crate) struct BaseUrl<'a> {
    pub(crate) tls: bool,
    pub(crate) host: &'a str,
}

impl BaseUrl<'_> {
    /// Whether the host is this machine's loopback (`localhost`, 127.0.0.0/8, `[::1]`).
    pub(crate) fn loopback(&self) -> bool {
        let bare = self.host.trim_start_matches('[').trim_end_matches(']');
        bare.eq_ignore_ascii_case("localhost")
            || bare
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

/// `text` read as `api_url` reads it; else why not.
pub(crate) fn base_url(text: &str) -> std::result::Result<BaseUrl<'_>, &'static str> {
    let (tls, rest) = match (text.strip_prefix("https://"), text.strip_prefix("http://")) {
        (Some(rest), _) => (true, rest),
        (_, Some(rest)) => (false, rest),
        _ => return Err("another scheme"),
    };
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
    Ok(BaseUrl { tls, host })
}
