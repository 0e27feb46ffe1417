use std::time::Duration;

use super::Outcome;
use crate::cli::WatchArgs;
use crate::watch::{secret_from, Target, Watcher};
use questions_core::error::{Error, Result};
use questions_core::ops::Ledger;

pub(super) fn run(ledger: &mut Ledger, args: WatchArgs) -> Result<Outcome> {
    Ok(Outcome::ok(watcher(args)?.run(ledger)?))
}

/// `watch` over https:// (§15): the server's history, the position kept there.
#[cfg(feature = "remote")]
pub(super) fn served(db: &std::ffi::OsStr, args: WatchArgs) -> Result<Outcome> {
    let watcher = watcher(args)?;
    let server = crate::remote::Remote::new(db)?;
    Ok(Outcome::ok(watcher.run_served(&server)?))
}

fn watcher(args: WatchArgs) -> Result<Watcher> {
    let target = match (args.exec, args.webhook) {
        (Some(command), _) => Target::Exec(command),
        (None, Some(url)) => {
            let lower = url.trim().to_ascii_lowercase();
            if !lower.starts_with("http://") && !lower.starts_with("https://") {
                return Err(Error::usage(format!(
                    "--webhook takes an http:// or https:// URL, not '{}'",
                    crate::output::sanitize(&url, false)
                )));
            }
            Target::Webhook(url.trim().to_string())
        }
        (None, None) => return Err(Error::usage("give --exec CMD or --webhook URL")),
    };
    Ok(Watcher {
        name: args.name,
        target,
        on: args.on.map(|k| k.0),
        stage: args.stage,
        required_only: args.required,
        format: args.format,
        secret: args.secret_env.as_deref().map(secret_from).transpose()?,
        from_start: args.from_start,
        run_for: args.timeout.map(Duration::from_secs_f64),
        request_timeout: Duration::from_secs_f64(args.webhook_timeout),
    })
}
