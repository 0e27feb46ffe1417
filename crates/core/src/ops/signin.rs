//! Signing in (§17): who a person the team's OpenID provider vouches for is on this
//! ledger, and the token a sign-in makes (a browser's session, or `questions login`'s).
//! The front end speaks the protocol and verifies the provider's ID token; what it may
//! then say of the person, and every rule after that, is here.
//!
//! A person is found by the links the ledger already keeps: `oidc:<issuer>#<sub>`, else
//! `email:<address>` when the provider says the address is verified. The first sign-in
//! by email records the `sub` it came with, so that the address, given later to someone
//! else at the same provider, finds nobody. Everyone else is refused, and the refusal is
//! in the history.

use std::time::Duration;

use serde::Serialize;

use super::secret::{hex, random, sha256_hex};
use super::token::SECRET_PREFIX;
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{Actor, Channel};
use crate::store::{Ledger, StoredSignIn, StoredToken, TokenRole, Tx};

/// How every sign-in's token is named: `signin-web-…`, `signin-login-…`.
pub const SIGN_IN_PREFIX: &str = "signin-";

/// What a provider vouched for, read from an ID token the front end verified (its
/// signature, issuer, audience, times and nonce).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vouched {
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
}

/// What a sign-in makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A browser's session: over when unused for `idle`, and at `absolute` whatever.
    Web { idle: Duration, absolute: Duration },
    /// `questions login`: a token for `lifetime`, and a refresh token that makes another
    /// until `refresh` after the sign-in.
    Login {
        lifetime: Duration,
        refresh: Duration,
    },
    /// An MCP host's OAuth grant (§17): as `Login`, for one client and its scope.
    OAuth {
        lifetime: Duration,
        refresh: Duration,
    },
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Web { .. } => "web",
            Kind::Login { .. } => "login",
            Kind::OAuth { .. } => "oauth",
        }
    }
}

/// How long a `questions login` token works before its refresh token makes another.
pub const LOGIN_LIFETIME: Duration = Duration::from_hours(12);

/// How long an MCP host's OAuth access token works (its refresh token makes another).
pub const OAUTH_LIFETIME: Duration = Duration::from_hours(1);

/// How long a refresh token chain lasts from the sign-in: then the person signs in again.
pub const REFRESH_LIFETIME: Duration = Duration::from_hours(30 * 24);

/// What a grant adds to a sign-in's token: its refresh family, an OAuth client and scope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Grant {
    pub family: Option<String>,
    pub client_id: Option<String>,
    pub scope: Option<String>,
}

/// Who may sign in besides being linked: an email domain among these (none: any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admit {
    pub domains: Vec<String>,
}

/// A sign-in's token: the only document that holds its secrets.
#[derive(Debug, Clone, Serialize)]
pub struct SignedIn {
    pub person: String,
    /// The token's name, as `token list` and `people sessions` show it.
    pub name: String,
    pub expires_at: String,
    /// The secret: a cookie's value, or a bearer token.
    pub token: String,
    /// `questions login`'s refresh token.
    pub refresh_token: Option<String>,
    pub refresh_expires_at: Option<String>,
}

/// The identity a provider's person is linked by.
pub fn oidc_identity(issuer: &str, subject: &str) -> String {
    format!("oidc:{issuer}#{subject}")
}

/// Checks an `oidc:<issuer>#<sub>` identity as `people link` is given it.
pub(super) fn check_oidc(id: &str) -> std::result::Result<String, String> {
    let Some((issuer, subject)) = id.rsplit_once('#') else {
        return Err("an OpenID identity is oidc:<issuer>#<sub>".into());
    };
    let scheme_ok = issuer.starts_with("https://") || issuer.starts_with("http://");
    if !scheme_ok || issuer.len() <= "https://".len() || issuer.contains(char::is_whitespace) {
        return Err(
            "its issuer is the provider's URL (https://…), as its discovery names it".into(),
        );
    }
    if subject.is_empty() || subject.len() > 255 || subject.chars().any(char::is_control) {
        return Err("its sub is the provider's id of the person (1 to 255 characters)".into());
    }
    Ok(oidc_identity(issuer, subject))
}

/// Who `who` is on this ledger, and a new token for them; a stranger, an address the
/// provider has not verified, one given again to someone else, or a domain not admitted
/// is refused (`forbidden`), and the refusal is recorded with what the provider said.
pub fn sign_in(ledger: &mut Ledger, who: &Vouched, admit: &Admit, kind: Kind) -> Result<SignedIn> {
    let now = clock::now();
    let found = ledger.write(|tx| match find(tx, who, admit, &now)? {
        Ok(person) => mint(tx, &person, who, kind, &now, &Grant::default()).map(Ok),
        Err(why) => {
            let actor = Actor {
                by: None,
                channel: Channel::Web,
                at: now.clone(),
            };
            tx.refused_event(
                0,
                None,
                &actor,
                &serde_json::json!({
                    "sign_in": kind.as_str(),
                    "issuer": who.issuer,
                    "subject": who.subject,
                    "email": who.email,
                    "email_verified": who.email_verified,
                    "reason": why,
                }),
            )?;
            Ok(Err(why))
        }
    })?;
    found.map_err(|why| Error::new(ErrorCode::Forbidden, why))
}

/// The person `who` is, or why nobody is.
fn find(
    tx: &Tx,
    who: &Vouched,
    admit: &Admit,
    now: &str,
) -> Result<std::result::Result<String, String>> {
    let ask = "ask whoever runs this ledger to link you (questions people link NAME …)";
    let email = who.email.as_deref().map(|e| e.trim().to_lowercase());
    if !admit.domains.is_empty() {
        let domain = email
            .as_deref()
            .filter(|_| who.email_verified)
            .and_then(|e| e.rsplit_once('@'))
            .map(|(_, d)| d.to_string());
        if !domain.is_some_and(|d| admit.domains.iter().any(|a| a.eq_ignore_ascii_case(&d))) {
            return Ok(Err(format!(
                "this server admits people of {} only, by an address the provider has \
                 verified: {ask}",
                admit.domains.join(", ")
            )));
        }
    }
    let by_sub = oidc_identity(&who.issuer, &who.subject);
    if let Some(person) = tx.person_of(&by_sub)? {
        return Ok(Ok(person));
    }
    let Some(email) = email.filter(|e| e.contains('@')) else {
        return Ok(Err(format!(
            "{} at {} is nobody this ledger knows: {ask} as oidc:{}#{}",
            who.subject, who.issuer, who.issuer, who.subject
        )));
    };
    let by_email = format!("email:{email}");
    let Some(person) = tx.person_of(&by_email)? else {
        return Ok(Err(format!(
            "{email} ({} at {}) is nobody this ledger knows: {ask}",
            who.subject, who.issuer
        )));
    };
    if !who.email_verified {
        return Ok(Err(format!(
            "the provider has not verified {email}, so it does not say who you are: verify \
             it there, or {ask} by oidc:{}#{}",
            who.issuer, who.subject
        )));
    }
    let at_issuer = format!("oidc:{}#", who.issuer);
    if tx
        .links()?
        .iter()
        .any(|l| l.person == person && l.identity.starts_with(&at_issuer))
    {
        return Ok(Err(format!(
            "{email} signed in before as another account of {}: an address given again to \
             someone else is not its first holder; {ask}",
            who.issuer
        )));
    }
    // The first sign-in by email: from now on this account is the one.
    tx.insert_link(&by_sub, &person, now)?;
    tx.people_event(
        &Actor {
            by: Some(person.clone()),
            channel: Channel::Web,
            at: now.to_string(),
        },
        &serde_json::json!({
            "person": person,
            "identity": by_sub,
            "linked": true,
            "by_sign_in": by_email,
        }),
    )?;
    Ok(Ok(person))
}

pub(super) fn mint(
    tx: &Tx,
    person: &str,
    who: &Vouched,
    kind: Kind,
    now: &str,
    grant: &Grant,
) -> Result<SignedIn> {
    let (lifetime, idle, refresh) = match kind {
        Kind::Web { idle, absolute } => (absolute, Some(idle), None),
        Kind::Login { lifetime, refresh } | Kind::OAuth { lifetime, refresh } => {
            (lifetime, None, Some(refresh))
        }
    };
    let name = format!("{SIGN_IN_PREFIX}{}-{}", kind.as_str(), hex(&random(6)?));
    // A refresh chain's tokens are one family: the first names it.
    let family = refresh.map(|_| grant.family.clone().unwrap_or_else(|| name.clone()));
    let secret = format!("{SECRET_PREFIX}{}", hex(&random(32)?));
    let refresh_token = refresh
        .map(|_| random(32).map(|b| format!("{SECRET_PREFIX}r_{}", hex(&b))))
        .transpose()?;
    let token = StoredToken {
        name: name.clone(),
        role: TokenRole::Person,
        stages: Vec::new(),
        person: Some(person.to_string()),
        created_at: now.to_string(),
        expires_at: Some(clock::after(now, lifetime)),
        last_used_at: None,
    };
    tx.insert_token(&token, &sha256_hex(&secret))?;
    let record = StoredSignIn {
        token: name.clone(),
        kind: kind.as_str().to_string(),
        issuer: who.issuer.clone(),
        subject: who.subject.clone(),
        idle_seconds: idle.map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        refresh_expires_at: refresh.map(|d| clock::after(now, d)),
        family,
        client_id: grant.client_id.clone(),
        scope: grant.scope.clone(),
    };
    tx.insert_sign_in(&record, refresh_token.as_deref().map(sha256_hex).as_deref())?;
    tx.token_event(
        &Actor {
            by: Some(person.to_string()),
            channel: Channel::Web,
            at: now.to_string(),
        },
        &serde_json::json!({
            "token": name,
            "created": true,
            "role": TokenRole::Person,
            "person": person,
            "sign_in": kind.as_str(),
            "issuer": who.issuer,
            "client_id": grant.client_id,
            "expires_at": token.expires_at,
        }),
    )?;
    Ok(SignedIn {
        person: person.to_string(),
        name,
        expires_at: token.expires_at.unwrap_or_default(),
        token: secret,
        refresh_token,
        refresh_expires_at: record.refresh_expires_at,
    })
}

/// Ends the session (or login) whose secret is `secret`: `Sign out`, `questions logout`.
/// An unknown secret, or a token no sign-in made, is left alone (false).
pub fn sign_out(ledger: &mut Ledger, secret: &str) -> Result<bool> {
    let hash = sha256_hex(secret.trim());
    let now = clock::now();
    ledger.write(|tx| {
        // The token itself, or a login's refresh token (RFC 7009 takes either).
        let token = match tx.token_by_hash(&hash)? {
            Some(token) => Some(token),
            None => match tx.sign_in_by_refresh(&hash)? {
                Some(record) => tx.token(&record.token)?,
                None => None,
            },
        };
        let Some(token) = token else {
            return Ok(false);
        };
        if tx.sign_in(&token.name)?.is_none() {
            return Ok(false);
        }
        end(tx, &token, &now, "signed_out")?;
        Ok(true)
    })
}

/// A refresh token spent for a new token and a new refresh token (the old pair is gone;
/// the chain keeps its first sign-in's end). An unknown or expired one is `unauthorized`;
/// one already spent ends every token of its family (RFC 9700: it was stolen, or the
/// thief used it first).
pub fn refresh(ledger: &mut Ledger, refresh_token: &str) -> Result<SignedIn> {
    let unauthorized = || Error::new(ErrorCode::Unauthorized, super::token::UNAUTHORIZED);
    let hash = sha256_hex(refresh_token.trim());
    let now = clock::now();
    let spent = ledger.write(|tx| {
        let Some(old) = tx.sign_in_by_refresh(&hash)? else {
            if let Some(family) = tx.spent_family(&hash)? {
                for record in tx.sign_ins()? {
                    if record.family.as_deref() == Some(family.as_str()) {
                        if let Some(token) = tx.token(&record.token)? {
                            end(tx, &token, &now, "refresh_reused")?;
                        }
                    }
                }
            }
            return Ok(None);
        };
        let Some(token) = tx.token(&old.token)? else {
            return Ok(None);
        };
        let until = old.refresh_expires_at.clone().unwrap_or_default();
        if until.as_str() <= now.as_str() {
            return Ok(None);
        }
        let person = token.person.clone().unwrap_or_default();
        end(tx, &token, &now, "refreshed")?;
        let family = old.family.clone().unwrap_or_else(|| old.token.clone());
        tx.spend_refresh(&hash, &family, &now)?;
        let left = clock::seconds_between(&now, &until).max(0);
        let refresh = Duration::from_secs(u64::try_from(left).unwrap_or(0));
        let kind = if old.kind == "oauth" {
            Kind::OAuth {
                lifetime: OAUTH_LIFETIME,
                refresh,
            }
        } else {
            Kind::Login {
                lifetime: LOGIN_LIFETIME,
                refresh,
            }
        };
        let who = Vouched {
            issuer: old.issuer.clone(),
            subject: old.subject.clone(),
            email: None,
            email_verified: false,
        };
        let grant = Grant {
            family: Some(family),
            client_id: old.client_id.clone(),
            scope: old.scope.clone(),
        };
        let mut made = mint(tx, &person, &who, kind, &now, &grant)?;
        made.refresh_expires_at = Some(until);
        Ok(Some(made))
    })?;
    spent.ok_or_else(unauthorized)
}

pub(super) fn end(tx: &Tx, token: &StoredToken, now: &str, why: &str) -> Result<()> {
    tx.delete_token(&token.name)?;
    tx.delete_sign_in(&token.name)?;
    tx.token_event(
        &Actor {
            by: token.person.clone(),
            channel: Channel::Web,
            at: now.to_string(),
        },
        &serde_json::json!({"token": token.name, "revoked": true, "role": token.role, why: true}),
    )
}

/// Whether a sign-in's session has gone unused past its idle time (`authenticate`).
pub(super) fn idle_over(tx: &Tx, token: &StoredToken, now: &str) -> Result<bool> {
    if !token.name.starts_with(SIGN_IN_PREFIX) {
        return Ok(false);
    }
    let Some(record) = tx.sign_in(&token.name)? else {
        return Ok(false);
    };
    let Some(idle) = record.idle_seconds else {
        return Ok(false);
    };
    let last = token.last_used_at.as_deref().unwrap_or(&token.created_at);
    let idle = Duration::from_secs(u64::try_from(idle).unwrap_or(0));
    Ok(clock::after(last, idle).as_str() <= now)
}

/// How long a device's code may wait for the person's approval.
pub const DEVICE_LIFETIME: Duration = Duration::from_mins(10);

/// How often the command line may ask whether the person approved (RFC 8628's
/// `interval`); asking sooner is answered `slow_down`.
pub const DEVICE_INTERVAL: Duration = Duration::from_secs(5);

/// A device's sign-in begun: the long code the command line keeps (a secret), and the
/// short one the person reads and confirms in the browser.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceStarted {
    pub device_code: String,
    pub user_code: String,
    pub expires_at: String,
}

/// `questions login` asks for a device's sign-in.
pub fn device_start(ledger: &mut Ledger) -> Result<DeviceStarted> {
    let now = clock::now();
    let device_code = format!("{SECRET_PREFIX}d_{}", hex(&random(32)?));
    // Eight letters a person reads off one screen and finds on another: no vowels (no
    // words), no look-alikes.
    const LETTERS: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";
    let picked = random(8)?;
    let letters: String = picked
        .iter()
        .map(|b| LETTERS[usize::from(*b) % LETTERS.len()] as char)
        .collect();
    let user_code = format!("{}-{}", &letters[..4], &letters[4..]);
    let expires_at = clock::after(&now, DEVICE_LIFETIME);
    let device = crate::store::StoredDevice {
        user_code: user_code.clone(),
        created_at: now.clone(),
        expires_at: expires_at.clone(),
        state: "pending".into(),
        person: None,
        issuer: None,
        subject: None,
        polled_at: None,
    };
    ledger.write(|tx| tx.insert_device(&sha256_hex(&device_code), &device))?;
    Ok(DeviceStarted {
        device_code,
        user_code,
        expires_at,
    })
}

/// A user code as a person may type it: any case, with or without its dash.
pub fn normal_user_code(text: &str) -> String {
    let letters: String = text
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    match letters.len() {
        8 => format!("{}-{}", &letters[..4], &letters[4..]),
        _ => letters,
    }
}

/// The person whose browser session holds `secret` approves (or denies) the device
/// sign-in of `user_code`. Only a person may; an unknown or expired code is `not_found`.
pub fn device_decide(
    ledger: &mut Ledger,
    secret: &str,
    user_code: &str,
    approve: bool,
) -> Result<String> {
    let principal = super::token::authenticate(ledger, Some(secret))?;
    let super::Principal::Person(person) = principal else {
        return Err(Error::new(
            ErrorCode::Forbidden,
            "only a person approves a sign-in of the command line",
        ));
    };
    let code = normal_user_code(user_code);
    let now = clock::now();
    ledger.write(|tx| {
        let found = tx.device_by_code(&code)?;
        let Some((hash, mut device)) =
            found.filter(|(_, d)| d.state == "pending" && d.expires_at.as_str() > now.as_str())
        else {
            return Err(Error::not_found(format!(
                "there is no sign-in waiting for the code {code}: it was used, denied or \
                 is more than 10 minutes old; run 'questions login' again"
            )));
        };
        let record = tx.sign_in(&person.name)?;
        device.state = if approve { "approved" } else { "denied" }.into();
        device.person = Some(person.person.clone());
        device.issuer = Some(
            record
                .as_ref()
                .map_or_else(|| "token".to_string(), |r| r.issuer.clone()),
        );
        device.subject = Some(record.map_or_else(|| person.name.clone(), |r| r.subject));
        tx.set_device(&hash, &device)?;
        Ok(person.person.clone())
    })
}

/// What the command line hears when it asks after its device code (RFC 8628 §3.5).
#[derive(Debug, Clone)]
pub enum DevicePoll {
    /// Not yet approved: ask again after the interval.
    Pending,
    /// Asked sooner than the interval.
    SlowDown,
    Denied,
    /// Unknown, spent or past its time.
    Expired,
    Issued(SignedIn),
}

/// The command line asks after `device_code`: once approved, the login's token and
/// refresh token, made once.
pub fn device_poll(
    ledger: &mut Ledger,
    device_code: &str,
    lifetime: Duration,
    refresh: Duration,
) -> Result<DevicePoll> {
    let hash = sha256_hex(device_code.trim());
    let now = clock::now();
    ledger.write(|tx| {
        let Some(mut device) = tx.device_by_hash(&hash)? else {
            return Ok(DevicePoll::Expired);
        };
        if device.expires_at.as_str() <= now.as_str() || device.state == "spent" {
            return Ok(DevicePoll::Expired);
        }
        let soon = device.polled_at.as_deref().is_some_and(|last| {
            clock::after(
                last,
                DEVICE_INTERVAL.saturating_sub(Duration::from_millis(500)),
            )
            .as_str()
                > now.as_str()
        });
        device.polled_at = Some(now.clone());
        match device.state.as_str() {
            "denied" => {
                device.state = "spent".into();
                tx.set_device(&hash, &device)?;
                Ok(DevicePoll::Denied)
            }
            "approved" => {
                device.state = "spent".into();
                tx.set_device(&hash, &device)?;
                let who = Vouched {
                    issuer: device.issuer.clone().unwrap_or_default(),
                    subject: device.subject.clone().unwrap_or_default(),
                    email: None,
                    email_verified: false,
                };
                let person = device.person.clone().unwrap_or_default();
                let kind = Kind::Login { lifetime, refresh };
                mint(tx, &person, &who, kind, &now, &Grant::default()).map(DevicePoll::Issued)
            }
            _ => {
                tx.set_device(&hash, &device)?;
                Ok(if soon {
                    DevicePoll::SlowDown
                } else {
                    DevicePoll::Pending
                })
            }
        }
    })
}
