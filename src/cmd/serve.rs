use super::{Outcome, Who};
use crate::cli::{LogFormat, ServeArgs};
use crate::serve;
use questions_core::error::{Error, Result};
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
            signin: sign_in(
                args.oidc_issuer,
                args.oidc_client_id,
                args.oidc_client_secret_env,
                args.oidc_client_secret_file,
                args.oidc_allow_domain,
                (args.session_idle, args.session_lifetime),
            )?,
        },
    )?;
    Ok(Outcome::text(String::new()))
}

/// `--oidc-…`: the provider's settings, the client secret read from where it is kept
/// (an environment variable or a file, never a flag's value: those show in `ps`).
fn sign_in(
    issuer: Option<String>,
    client_id: Option<String>,
    secret_env: Option<String>,
    secret_file: Option<std::path::PathBuf>,
    allow_domains: Vec<String>,
    (idle, absolute): (std::time::Duration, std::time::Duration),
) -> Result<Option<serve::signin::Settings>> {
    let (Some(issuer), Some(client_id)) = (issuer, client_id) else {
        if secret_env.is_some() || secret_file.is_some() || !allow_domains.is_empty() {
            return Err(Error::usage(
                "--oidc-client-secret-env, --oidc-client-secret-file and --oidc-allow-domain \
                 go with --oidc-issuer and --oidc-client-id",
            ));
        }
        return Ok(None);
    };
    let secret = match (secret_env, secret_file) {
        (Some(name), None) => std::env::var(&name).map_err(|_| {
            Error::usage(format!(
                "--oidc-client-secret-env {name}: the environment has no {name}"
            ))
        })?,
        (None, Some(path)) => std::fs::read_to_string(&path).map_err(|e| {
            Error::usage(format!("--oidc-client-secret-file {}: {e}", path.display()))
        })?,
        _ => {
            return Err(Error::usage(
                "--oidc-issuer needs the client secret: --oidc-client-secret-env NAME (the \
                 variable that holds it) or --oidc-client-secret-file FILE",
            ))
        }
    };
    let secret = secret.trim().to_string();
    if secret.is_empty() {
        return Err(Error::usage("the OpenID client secret is empty"));
    }
    if idle > absolute {
        return Err(Error::usage(
            "--session-idle is longer than --session-lifetime",
        ));
    }
    Ok(Some(serve::signin::Settings {
        issuer,
        client_id,
        client_secret: secret,
        allow_domains: allow_domains
            .into_iter()
            .map(|d| d.trim().trim_start_matches('@').to_lowercase())
            .filter(|d| !d.is_empty())
            .collect(),
        idle,
        absolute,
    }))
}
