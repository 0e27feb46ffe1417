//! TLS to PostgreSQL as libpq users know it: `sslmode` (`disable`, `prefer`, `require`,
//! `verify-ca`, `verify-full`) and `sslrootcert`, in a URL's query or a key=value string,
//! with libpq's meanings, over rustls (no system OpenSSL).
//!
//! - `disable`: plain text only. `prefer` (libpq's default): TLS when the server offers
//!   it, else plain text; the certificate is not checked. `require`: TLS or nothing; the
//!   certificate is checked against `sslrootcert` when one is given (as libpq does).
//! - `verify-ca`: TLS, and the certificate must chain to a trusted CA. `verify-full`: and
//!   it must name the host connected to.
//! - Trusted CAs: `sslrootcert`, else `~/.postgresql/root.crt`, else Mozilla's roots
//!   (`sslrootcert=system` asks for those).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum SslMode {
    Disable,
    #[default]
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(Error::usage(format!(
                "sslmode '{other}' is not one of disable, prefer, require, verify-ca, verify-full"
            )))
            }
        })
    }

    /// What the PostgreSQL client itself is told: whether TLS may, must or must not be used.
    pub(super) fn client_mode(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        }
    }
}

/// The TLS settings of a location, taken out of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Tls {
    pub mode: SslMode,
    pub root_cert: Option<String>,
}

/// Splits `sslmode` and `sslrootcert` out of a location (which the PostgreSQL client
/// would refuse or ignore), returning the rest and the settings.
pub(super) fn split(location: &str) -> Result<(String, Tls)> {
    let mut tls = Tls::default();
    let mut take = |key: &str, value: &str| -> Result<bool> {
        match key {
            "sslmode" => tls.mode = SslMode::parse(value)?,
            "sslrootcert" => tls.root_cert = Some(value.to_string()),
            _ => return Ok(false),
        }
        Ok(true)
    };
    let trimmed = location.trim();
    let lower = trimmed.to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        let Some((base, query)) = trimmed.split_once('?') else {
            return Ok((trimmed.to_string(), tls));
        };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(key, &percent_decode(value))? {
                kept.push(pair);
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return Ok((rest, tls));
    }
    // key=value words; a quoted value may hold spaces.
    let mut kept = Vec::new();
    for word in key_value_words(trimmed) {
        match word.split_once('=') {
            Some((key, value)) if take(key.trim(), unquote(value.trim()).as_str())? => {}
            _ => kept.push(word),
        }
    }
    Ok((kept.join(" "), tls))
}

fn key_value_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quoted => {
                word.push(c);
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            '\'' => {
                quoted = !quoted;
                word.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    // `key = value` with spaces around '=' joins back into one word.
    let mut joined: Vec<String> = Vec::new();
    for w in words {
        match joined.last_mut() {
            Some(last) if last.ends_with('=') || w.starts_with('=') => last.push_str(&w),
            _ => joined.push(w),
        }
    }
    joined
}

fn unquote(value: &str) -> String {
    let inner = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .unwrap_or(value);
    inner.replace("\\'", "'").replace("\\\\", "\\")
}

fn percent_decode(value: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rustls configuration for these settings.
pub(super) fn client_config(tls: &Tls) -> Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::db(format!("cannot set up TLS: {e}")))?;
    let roots = match (tls.mode, &tls.root_cert) {
        // Not checked: libpq's prefer, and require without a CA to check against.
        (SslMode::Disable | SslMode::Prefer, _) | (SslMode::Require, None) => None,
        _ => Some(Arc::new(roots(tls.root_cert.as_deref())?)),
    };
    let verifier: Arc<dyn ServerCertVerifier> = match roots {
        None => Arc::new(Unchecked(provider)),
        Some(roots) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| Error::db(format!("cannot set up TLS: {e}")))?;
            match tls.mode {
                SslMode::VerifyFull => webpki,
                _ => Arc::new(AnyName(webpki)),
            }
        }
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// The CAs a certificate is checked against.
fn roots(root_cert: Option<&str>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    let file = match root_cert {
        Some("system") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".postgresql/root.crt"))
            .filter(|p| p.is_file()),
    };
    let Some(file) = file else {
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        return Ok(store);
    };
    let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(&file)
        .and_then(|iter| iter.collect())
        .map_err(|e| {
            Error::db(format!(
                "cannot read the CA certificates in sslrootcert {}: {e}",
                file.display()
            ))
        })?;
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(Error::db(format!(
            "sslrootcert {} holds no certificate that can be used",
            file.display()
        )));
    }
    Ok(store)
}

/// What a failed handshake means, in the words of the settings that refused it.
pub(super) fn explain(
    e: &(dyn std::error::Error + 'static),
    tls: &Tls,
    host: &str,
) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        // An I/O error's `source` skips the error it wraps: look inside it too.
        let rustls = err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(rustls::Error::InvalidCertificate(cert)) = rustls {
            let ca = tls.root_cert.as_deref().unwrap_or("the default CAs");
            return Some(match cert {
                CertificateError::UnknownIssuer => format!(
                    "the server's certificate is not signed by a trusted CA ({ca}); \
                     sslmode={} refuses it",
                    mode_name(tls.mode)
                ),
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => format!(
                    "the server's certificate does not name the host '{host}' (sslmode=verify-full); \
                     connect by a name it holds, or use verify-ca"
                ),
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "the server's certificate has expired".to_string()
                }
                other => format!("the server's certificate was refused: {other:?}"),
            });
        }
        if err.to_string().contains("server does not support TLS") {
            return Some(format!(
                "the server does not offer TLS, and sslmode={} never falls back to plain text",
                mode_name(tls.mode)
            ));
        }
        source = err.source();
    }
    None
}

fn mode_name(mode: SslMode) -> &'static str {
    match mode {
        SslMode::Disable => "disable",
        SslMode::Prefer => "prefer",
        SslMode::Require => "require",
        SslMode::VerifyCa => "verify-ca",
        SslMode::VerifyFull => "verify-full",
    }
}

/// `verify-ca`: the chain must be trusted; the name in it need not be the host's.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer`, and `require` without a CA: encrypted, the certificate not checked (libpq's
/// meaning); the handshake's signatures still are.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_settings_come_out_of_urls_and_key_value_strings() {
        let (rest, tls) =
            split("postgres://u:p@h:5432/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&connect_timeout=3")
                .unwrap();
        assert_eq!(rest, "postgres://u:p@h:5432/db?connect_timeout=3");
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.root_cert.as_deref(), Some("/tmp/ca.pem"));

        let (rest, tls) =
            split("host=h dbname=d sslmode = verify-ca sslrootcert='/a b/ca.pem' password=x")
                .unwrap();
        assert_eq!(rest, "host=h dbname=d password=x");
        assert_eq!(tls.mode, SslMode::VerifyCa);
        assert_eq!(tls.root_cert.as_deref(), Some("/a b/ca.pem"));

        let (rest, tls) = split("postgres://h/db").unwrap();
        assert_eq!(
            (rest.as_str(), tls.mode),
            ("postgres://h/db", SslMode::Prefer)
        );
        assert!(split("postgres://h/db?sslmode=sometimes").is_err());
    }
}
