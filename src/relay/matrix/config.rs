//! `[matrix]` of the relay's config: `homeserver` (the bot account's homeserver, `https://`;
//! `http://` only for a loopback host), `token_env` (the environment variable holding the
//! bot account's access token), `poll_timeout` (seconds of `/sync`'s long poll, 0 to 50).

use questions_core::error::Result;
use questions_core::model::Relayed;

use super::Matrix;
use crate::relay::kit::config::{base_url, Config, Secret};

/// Seconds a `/sync` long poll waits for an event, by default.
const POLL_TIMEOUT: i64 = 25;

pub(crate) fn open(table: &toml_edit::Table) -> Result<Matrix> {
    let config = Config::new(
        Relayed::Matrix,
        table,
        &["homeserver", "token_env", "poll_timeout"],
    )?;
    let homeserver = config
        .text("homeserver", "a URL string")?
        .ok_or_else(|| config.missing("homeserver", "the bot account's homeserver, https://…"))?;
    let homeserver = homeserver_url(&homeserver).map_err(|why| {
        config.bad(
            "homeserver",
            &format!("an https:// URL (http:// only for a loopback host): {why}"),
        )
    })?;
    let poll_timeout = config.integer("poll_timeout", 0..=50, "seconds", POLL_TIMEOUT)?;
    let token = config.secret(
        "token_env",
        "bot account's access token",
        Secret::Token {
            also: &[],
            is: "an access token",
        },
    )?;
    Ok(Matrix::new(&homeserver, &token, poll_timeout as u64))
}

/// The homeserver's base URL: `https://` and a host (a name, an IPv4 address or a
/// bracketed IPv6 one), a port if any, a path if any; `http://` only for a loopback host;
/// no user, query or fragment. Else why not.
fn homeserver_url(text: &str) -> std::result::Result<String, &'static str> {
    let url = base_url(text)?;
    if !url.tls && !url.loopback() {
        return Err("http:// names a host that is not this machine's loopback");
    }
    Ok(text.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::homeserver_url;

    #[test]
    fn http_is_for_loopback_only() {
        assert!(homeserver_url("https://matrix.example.org").is_ok());
        assert!(homeserver_url("http://127.0.0.1:8008").is_ok());
        assert!(homeserver_url("http://[::1]:8008/").is_ok());
        assert!(homeserver_url("http://localhost").is_ok());
        assert!(homeserver_url("http://matrix.example.org").is_err());
        assert!(homeserver_url("http://10.0.0.1:8008").is_err());
        assert!(homeserver_url("ftp://matrix.example.org").is_err());
        assert!(homeserver_url("https://user@matrix.example.org").is_err());
    }
}
