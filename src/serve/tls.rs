//! `serve --tls-cert FILE --tls-key FILE` (§15): TLS on the server's own port, for the
//! inbox, its API and the ledger's API alike. The pair is read at start (a file missing,
//! unreadable, not PEM, or a key that is not the certificate's is a usage error then),
//! and again when either file changes: a renewed certificate is served from the next
//! connection on, with no restart. A pair that fails to load later keeps the one in use,
//! and says so on stderr once if it is still there a second later (a renewal that writes
//! the key, then the certificate, is not a failure).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

use questions_core::error::{Error, Result};

/// How often, at most, the files are looked at again (by a handshake: an idle server
/// reads nothing).
const LOOK_AGAIN_AFTER: Duration = Duration::from_secs(1);

/// The certificate chain and key files `serve` was given.
#[derive(Debug, Clone)]
pub(crate) struct Files {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The acceptor of TLS connections over `files`, read once now: a pair that cannot be
/// served is a usage error before anything listens.
pub(super) fn acceptor(files: Files) -> Result<TlsAcceptor> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let stamp = stamp(&files);
    let pair = load(&files, &provider).map_err(Error::usage)?;
    let resolver = Reloading {
        state: Mutex::new(State {
            pair: Arc::new(pair),
            stamp,
            looked: Instant::now(),
            failed: None,
        }),
        files,
        provider: Arc::clone(&provider),
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::usage(format!("cannot set up TLS: {e}")))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// What identifies a version of each file: a renewal replaces, renames or rewrites it.
type Stamp = [Option<(SystemTime, u64, u64)>; 2];

fn stamp(files: &Files) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let one = |path: &Path| {
        let meta = std::fs::metadata(path).ok()?;
        Some((meta.modified().ok()?, meta.len(), meta.ino()))
    };
    [one(&files.cert), one(&files.key)]
}

/// The pair in `files`, or why it cannot be served (naming the flag and the file, never
/// what the key holds).
fn load(files: &Files, provider: &CryptoProvider) -> std::result::Result<CertifiedKey, String> {
    let read = |flag: &str, path: &Path| {
        std::fs::read(path).map_err(|e| format!("cannot read {flag} {}: {e}", path.display()))
    };
    let cert_pem = read("--tls-cert", &files.cert)?;
    let key_pem = read("--tls-key", &files.key)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| {
            format!(
                "--tls-cert {} is not a PEM certificate chain: {e}",
                files.cert.display()
            )
        })?;
    if chain.is_empty() {
        return Err(format!(
            "--tls-cert {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            files.cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| {
        format!(
            "--tls-key {} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)",
            files.key.display()
        )
    })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => format!(
            "--tls-key {} is not the key of the certificate in --tls-cert {}",
            files.key.display(),
            files.cert.display()
        ),
        e => format!(
            "--tls-cert {} and --tls-key {} cannot be served: {e}",
            files.cert.display(),
            files.key.display()
        ),
    })
}

/// Hands each handshake the pair in use, reading the files again when they changed
/// (looked at once a second at most).
#[derive(Debug)]
struct Reloading {
    files: Files,
    provider: Arc<CryptoProvider>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    pair: Arc<CertifiedKey>,
    /// The files' versions the pair was read from.
    stamp: Stamp,
    looked: Instant,
    /// The versions that last failed to load, not tried again until they change, and
    /// why, until that is said.
    failed: Option<(Stamp, Option<String>)>,
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut guard = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = &mut *guard;
        if state.looked.elapsed() >= LOOK_AGAIN_AFTER {
            state.looked = Instant::now();
            let now = stamp(&self.files);
            match &mut state.failed {
                Some((failed, unsaid)) if *failed == now => {
                    if let Some(why) = unsaid.take() {
                        crate::output::note(&format!(
                            "the TLS certificate was not reloaded, the one in use is kept: \
                             {why}"
                        ));
                    }
                }
                _ if now != state.stamp => match load(&self.files, &self.provider) {
                    Ok(pair) => {
                        state.pair = Arc::new(pair);
                        state.stamp = now;
                        state.failed = None;
                    }
                    Err(why) => state.failed = Some((now, Some(why))),
                },
                _ => {}
            }
        }
        Some(Arc::clone(&state.pair))
    }
}

/// A connection, in plain text or TLS: the server serves either the same way.
pub(super) trait Stream:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send
{
}
impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for S {}
