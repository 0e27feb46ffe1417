//! OAuth for MCP hosts (§17): `serve` as the authorization server of its own `/mcp`. A
//! host registers as a client (RFC 7591), sends the person to consent (signed in as
//! themself, §17's sign-in), and trades the code (PKCE S256 only) for a person token of
//! an hour and a refresh token, rotated, of the same family (`signin::refresh`). The
//! front end speaks HTTP; the rules are here.

use std::time::Duration;

use super::secret::{hex, random, sha256_hex};
use super::signin::{self, Grant, Kind, SignedIn, Vouched, OAUTH_LIFETIME, REFRESH_LIFETIME};
use super::token::SECRET_PREFIX;
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::store::{Ledger, StoredClient, StoredCode};

/// How long a code waits to be traded.
pub const CODE_LIFETIME: Duration = Duration::from_mins(1);

/// The scopes a host may be granted: reading the person's questions, and answering and
/// voting as them.
pub const SCOPES: &[&str] = &["questions:read", "questions:answer"];

/// A client as registered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Client {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
}

/// Whether `uri` may be a client's redirect: https, or http to this machine's loopback
/// (a native app's), never with a fragment.
fn redirect_ok(uri: &str) -> bool {
    let lower = uri.to_ascii_lowercase();
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|p| {
            lower
                .strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/']))
        });
    (lower.starts_with("https://") || loopback)
        && !uri.contains('#')
        && uri.len() <= 2048
        && !uri.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// Registers a client (RFC 7591): its name (shown on the consent page, trusted for
/// nothing else) and its redirect URIs, matched exactly later.
pub fn register(ledger: &mut Ledger, name: &str, redirect_uris: &[String]) -> Result<Client> {
    if redirect_uris.is_empty() || redirect_uris.len() > 10 {
        return Err(Error::usage("a client names 1 to 10 redirect_uris"));
    }
    if let Some(bad) = redirect_uris.iter().find(|u| !redirect_ok(u)) {
        return Err(Error::usage(format!(
            "redirect URI {bad} is neither https:// nor http:// to this machine's loopback \
             (or holds a fragment)"
        )));
    }
    let name: String = name
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect();
    let client = StoredClient {
        client_id: format!("qcl_{}", hex(&random(16)?)),
        name: if name.is_empty() {
            "an MCP host".into()
        } else {
            name
        },
        redirect_uris: redirect_uris.to_vec(),
    };
    let now = clock::now();
    ledger.write(|tx| tx.insert_client(&client, &now))?;
    Ok(Client {
        client_id: client.client_id,
        client_name: client.name,
        redirect_uris: client.redirect_uris,
    })
}

/// The client `client_id`, if registered.
pub fn client(ledger: &mut Ledger, client_id: &str) -> Result<Option<Client>> {
    Ok(ledger.read(|tx| tx.client(client_id))?.map(|c| Client {
        client_id: c.client_id,
        client_name: c.name,
        redirect_uris: c.redirect_uris,
    }))
}

/// What an authorization request asks, checked before the person is asked anything: a
/// registered client, a redirect URI it registered (exactly), a PKCE S256 challenge, and
/// scopes among `SCOPES` (none: all of them).
pub fn check_request(
    ledger: &mut Ledger,
    client_id: &str,
    redirect_uri: &str,
    challenge: Option<&str>,
    method: Option<&str>,
    scope: Option<&str>,
) -> Result<(Client, String)> {
    let Some(found) = client(ledger, client_id)? else {
        return Err(Error::usage(format!(
            "no client {client_id} is registered here"
        )));
    };
    if !found.redirect_uris.iter().any(|u| u == redirect_uri) {
        return Err(Error::usage(
            "the redirect URI is not one the client registered (they must match exactly)",
        ));
    }
    let challenge_ok = challenge.is_some_and(|c| (43..=128).contains(&c.len()));
    if !challenge_ok || method != Some("S256") {
        return Err(Error::usage(
            "PKCE is required: code_challenge with code_challenge_method=S256",
        ));
    }
    let asked: Vec<&str> = scope.unwrap_or("").split_whitespace().collect();
    if let Some(other) = asked.iter().find(|s| !SCOPES.contains(s)) {
        return Err(Error::usage(format!(
            "scope {other} is not one this server grants ({})",
            SCOPES.join(" ")
        )));
    }
    let scope = if asked.is_empty() {
        SCOPES.join(" ")
    } else {
        asked.join(" ")
    };
    Ok((found, scope))
}

/// The person whose session holds `secret` consents: a code for the client, for a minute.
pub fn consent(
    ledger: &mut Ledger,
    secret: &str,
    client_id: &str,
    redirect_uri: &str,
    challenge: &str,
    scope: &str,
) -> Result<String> {
    let super::Principal::Person(person) = super::token::authenticate(ledger, Some(secret))? else {
        return Err(Error::new(
            ErrorCode::Forbidden,
            "only a person grants a host access",
        ));
    };
    let code = format!("{SECRET_PREFIX}c_{}", hex(&random(32)?));
    let now = clock::now();
    ledger.write(|tx| {
        let record = tx.sign_in(&person.name)?;
        let stored = StoredCode {
            client_id: client_id.to_string(),
            redirect_uri: redirect_uri.to_string(),
            challenge: challenge.to_string(),
            person: person.person.clone(),
            issuer: record
                .as_ref()
                .map_or_else(|| "token".to_string(), |r| r.issuer.clone()),
            subject: record.map_or_else(|| person.name.clone(), |r| r.subject),
            scope: scope.to_string(),
            expires_at: clock::after(&now, CODE_LIFETIME),
            used: false,
        };
        tx.insert_code(&sha256_hex(&code), &stored)
    })?;
    Ok(code)
}

/// base64url without padding (RFC 4648 §5), as PKCE's S256 writes a digest.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// The code traded for a token (RFC 6749 §4.1.3 with PKCE): once, by the client it was
/// given to, with the redirect URI it was given for, and the verifier of its challenge.
/// A code used twice ends what its first use made (RFC 6749 §4.1.2).
pub fn redeem(
    ledger: &mut Ledger,
    code: &str,
    verifier: &str,
    client_id: &str,
    redirect_uri: &str,
) -> Result<SignedIn> {
    let refused = |why: &str| Error::new(ErrorCode::Unauthorized, why.to_string());
    let hash = sha256_hex(code.trim());
    let now = clock::now();
    let done = ledger.write(|tx| {
        let Some(stored) = tx.code(&hash)? else {
            return Ok(Err("the code is unknown"));
        };
        if stored.used {
            // Replayed: whatever the first use made is ended (its family).
            let family_of = |t: &crate::store::StoredSignIn| {
                t.client_id.as_deref() == Some(stored.client_id.as_str())
                    && t.kind == "oauth"
                    && t.subject == stored.subject
            };
            for record in tx.sign_ins()? {
                if family_of(&record) {
                    if let Some(token) = tx.token(&record.token)? {
                        signin::end(tx, &token, &now, "code_replayed")?;
                    }
                }
            }
            return Ok(Err("the code was used already"));
        }
        tx.use_code(&hash)?;
        if stored.expires_at.as_str() <= now.as_str() {
            return Ok(Err("the code is past its time"));
        }
        if stored.client_id != client_id || stored.redirect_uri != redirect_uri {
            return Ok(Err("the code was given to another client or redirect URI"));
        }
        use sha2::{Digest, Sha256};
        let derived = base64url(&Sha256::digest(verifier.trim().as_bytes()));
        if derived != stored.challenge {
            return Ok(Err("the code_verifier is not the challenge's"));
        }
        let who = Vouched {
            issuer: stored.issuer.clone(),
            subject: stored.subject.clone(),
            email: None,
            email_verified: false,
        };
        let grant = Grant {
            family: None,
            client_id: Some(stored.client_id.clone()),
            scope: Some(stored.scope.clone()),
        };
        let kind = Kind::OAuth {
            lifetime: OAUTH_LIFETIME,
            refresh: REFRESH_LIFETIME,
        };
        signin::mint(tx, &stored.person, &who, kind, &now, &grant).map(Ok)
    })?;
    done.map_err(refused)
}

/// Whether the token `name` may answer and vote: any token but an OAuth grant without
/// `questions:answer`.
pub(super) fn may_answer(tx: &crate::store::Tx, name: &str) -> Result<bool> {
    if !name.starts_with(signin::SIGN_IN_PREFIX) {
        return Ok(true);
    }
    Ok(tx.sign_in(name)?.is_none_or(|r| {
        r.kind != "oauth"
            || r.scope
                .as_deref()
                .is_some_and(|s| s.split_whitespace().any(|x| x == "questions:answer"))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_is_rfc_7636_s_example() {
        use sha2::{Digest, Sha256};
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            base64url(&Sha256::digest(verifier.as_bytes())),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
    }

    #[test]
    fn a_redirect_is_https_or_loopback_http_without_a_fragment() {
        assert!(redirect_ok("https://claude.ai/api/mcp/auth_callback"));
        assert!(redirect_ok("http://127.0.0.1:33418/callback"));
        assert!(redirect_ok("http://localhost/cb"));
        assert!(!redirect_ok("http://127.0.0.1.evil.example/cb"));
        assert!(!redirect_ok("http://evil.example/cb"));
        assert!(!redirect_ok("https://evil.example/cb#x"));
        assert!(!redirect_ok("javascript:alert(1)"));
    }
}
