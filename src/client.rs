//! The blocking HTTPS client `--db https://…` and `serve`'s sign-in share (ureq, rustls):
//! proxies from the environment, and the roots it trusts (the web's, or `QUESTIONS_CA`'s
//! certificates for a private CA).

use std::time::Duration;

use questions_core::error::{Error, Result};

/// The client: proxies from the environment, and the roots it trusts.
pub(crate) fn agent() -> Result<ureq::Agent> {
    Ok(builder()?.build().into())
}

/// The client's settings, for a caller that adds its own.
pub(crate) fn builder() -> Result<ureq::config::ConfigBuilder<ureq::typestate::AgentScope>> {
    use ureq::tls::{RootCerts, TlsConfig};
    let roots = match std::env::var_os("QUESTIONS_CA").filter(|f| !f.is_empty()) {
        None => RootCerts::WebPki,
        Some(file) => {
            let path = std::path::Path::new(&file);
            let pem = std::fs::read(path).map_err(|e| {
                Error::usage(format!("cannot read QUESTIONS_CA {}: {e}", path.display()))
            })?;
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(Error::usage(format!(
                    "QUESTIONS_CA {} holds no PEM certificate",
                    path.display()
                )));
            }
            RootCerts::new_with_certs(&certs)
        }
    };
    Ok(ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(10)))
        .proxy(ureq::Proxy::try_from_env())
        .tls_config(TlsConfig::builder().root_certs(roots).build())
        .user_agent(concat!("questions/", env!("CARGO_PKG_VERSION"))))
}
