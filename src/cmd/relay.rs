//! `questions relay --config FILE`: reads the config, takes each channel's secret from the
//! environment variable it names, and runs the relay (src/relay).

use std::path::Path;
use std::sync::Arc;

use super::Outcome;
use crate::relay::{self, slack::Slack, telegram::Telegram, Channel};
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
            "email" => {
                return Err(Error::usage(format!(
                "relay config: [{name}] is not in this build yet: only [telegram] and [slack] are"
            )))
            }
            other => {
                return Err(Error::usage(format!(
                "relay config: unknown channel [{other}]: the channels are [telegram] and [slack]"
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
                if !v.starts_with("https://") && !v.starts_with("http://") {
                    return Err(bad("an http:// or https:// URL"));
                }
                api = v.to_string();
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
                if !v.starts_with("https://") && !v.starts_with("http://") {
                    return Err(bad("an http:// or https:// URL"));
                }
                api = v.to_string();
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
