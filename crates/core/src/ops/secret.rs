//! Secrets: random bytes from the operating system, and the SHA-256 a secret is kept as.
//! Pairing codes, the buttons' key and the ledger's tokens are all made and kept so.

use crate::error::{Error, Result};

/// Random bytes from the operating system.
pub(super) fn random(n: usize) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::io(format!("cannot read random bytes: {e}")))?;
    Ok(bytes)
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(text.as_bytes()))
}
