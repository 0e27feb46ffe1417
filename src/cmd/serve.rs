use super::{Outcome, Who};
use crate::cli::{LogFormat, ServeArgs};
use crate::serve;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops::Ledger;

/// Serves the inbox until SIGINT or SIGTERM; the start line with the URL is printed by
/// the server itself, once it listens.
pub(super) fn run(ledger: &mut Ledger, who: &Who, args: ServeArgs) -> Result<Outcome> {
    let caller = match args.user {
        Some(name) => questions_core::ops::Caller {
            by: Some(name),
            channel: Channel::Web,
        },
        None => who.via(Channel::Web),
    };
    serve::run(
        ledger,
        serve::Config {
            bind: args.bind,
            stage: args.stage,
            caller,
            allow_remote: args.allow_remote,
            token: std::env::var("QUESTIONS_SERVE_TOKEN")
                .ok()
                .filter(|t| !t.trim().is_empty()),
            users: match &args.users {
                Some(path) => serve::votes::read_users(path)?,
                None => Vec::new(),
            },
            tls: match (args.tls_cert, args.tls_key) {
                (Some(cert), Some(key)) => Some(serve::tls::Files { cert, key }),
                _ => None,
            },
            trusted_proxy: args.trusted_proxy,
            public_url: args.public_url,
            log: match args.log_format {
                LogFormat::Text => serve::LogFormat::Text,
                LogFormat::Json => serve::LogFormat::Json,
                LogFormat::None => serve::LogFormat::None,
            },
            drain: std::time::Duration::from_secs(args.drain_seconds),
            metrics_bind: args.metrics_bind,
        },
    )?;
    Ok(Outcome::text(String::new()))
}
