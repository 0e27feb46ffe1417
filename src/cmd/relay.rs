//! `questions relay --config FILE`: reads the config and opens each channel it names (each
//! channel reads its own section, `relay::open`), then runs the relay (src/relay).

use std::path::Path;
use std::sync::Arc;

use super::Outcome;
use crate::relay::{self, Channel};
use questions_core::error::{Error, Result};
use questions_core::model::Relayed;
use questions_core::ops::Ledger;

pub(super) fn run(ledger: &mut Ledger, config: &Path, stages: &[String]) -> Result<Outcome> {
    let channels = read_config(config)?;
    relay::run(ledger, channels, stages)?;
    Ok(Outcome::ok(serde_json::json!({})))
}

/// The channels a config names, each with its secret read from the environment. Any key
/// its channel does not know, or a value of the wrong kind, is a usage error naming that
/// key.
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
        let Some(kind) = Relayed::named(name) else {
            return Err(Error::usage(format!(
                "relay config: unknown channel [{name}]: the channels are {}",
                Relayed::listed("and", |n| format!("[{n}]"))
            )));
        };
        channels.push(relay::open(kind, table)?);
    }
    if channels.is_empty() {
        return Err(Error::usage(
            "relay config: no channel: add [telegram] with token_env = \"VAR\"",
        ));
    }
    Ok(channels)
}
