//! The ledger's tokens (§15): made, listed and revoked only with direct access to the
//! ledger, shown once, kept as a hash; and the one place a secret is turned into who
//! calls (`authenticate`).

use std::time::Duration;

use serde::Serialize;

use super::principal::{AgentToken, PersonToken, Principal};
use super::secret::{hex, random, sha256_hex};
use super::Caller;
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::model::check_name;
use crate::store::{Ledger, StoredToken, TokenRole};

/// How every secret begins, so that secret scanners (and people) recognise one.
pub const SECRET_PREFIX: &str = "qtok_";

/// The one message for a missing, unknown, expired or revoked token: which of them it
/// was would tell a prober which names and secrets exist.
pub const UNAUTHORIZED: &str =
    "no valid token: set QUESTIONS_TOKEN (or QUESTIONS_TOKEN_FILE) to a token this ledger \
     issued and has not revoked, nor let expire";

/// How long a person token works when its maker names no lifetime: its secret is sent
/// by hand and kept on a phone, so it ends by itself unless it is meant not to.
const PERSON_TOKEN_LIFETIME: Duration = Duration::from_hours(90 * 24);

/// The lifetime a new token gets when none is named: a person's, 90 days; an agent's,
/// none (a CI runner's token is the pipeline's to rotate).
pub fn default_lifetime(grant: &Grant) -> Option<Duration> {
    match grant {
        Grant::Person(_) => Some(PERSON_TOKEN_LIFETIME),
        Grant::Agent { .. } => None,
    }
}

/// What a new token may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// An agent, within these stage patterns (none: every stage).
    Agent { stages: Vec<String> },
    /// This person.
    Person(String),
}

/// A change of the ledger's tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum TokenRequest {
    Create {
        name: String,
        grant: Grant,
        expires_in: Option<Duration>,
    },
    List,
    Revoke {
        name: String,
    },
    /// A person's tokens and sessions (`people sessions NAME`); with `source`, those of
    /// that source alone (`people grants NAME`: `oauth`, the MCP hosts they let in).
    Sessions {
        person: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
    /// Every token and session of a person, ended at once (`people revoke NAME`).
    RevokePerson {
        person: String,
    },
}

/// A token just made: the only document that ever holds its secret.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenMade {
    pub name: String,
    pub role: TokenRole,
    pub stages: Vec<String>,
    pub person: Option<String>,
    pub expires_at: Option<String>,
    /// The secret, shown this once: the ledger keeps only its hash.
    pub token: String,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Tokens {
    pub count: usize,
    /// Without their secrets.
    pub tokens: Vec<TokenListed>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenListed {
    #[serde(flatten)]
    pub token: StoredToken,
    /// Its time is up (or, for a browser's session, its idle time): it is refused as a
    /// revoked one is.
    pub expired: bool,
    /// Where it came from: `token` (`token create`), `web` (a browser's sign-in) or
    /// `login` (`questions login`).
    pub source: String,
    /// For a sign-in's, the OpenID provider that vouched for the person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PersonSessions {
    pub person: String,
    pub count: usize,
    /// Without their secrets.
    pub tokens: Vec<TokenListed>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PersonRevoked {
    pub person: String,
    /// The tokens and sessions ended.
    pub revoked: Vec<String>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenRevoked {
    pub name: String,
    pub revoked: bool,
}

/// What a token request returns.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum TokenReply {
    Made(TokenMade),
    Listed(Tokens),
    Revoked(TokenRevoked),
    Sessions(PersonSessions),
    RevokedPerson(PersonRevoked),
}

/// Runs a token request for a caller with direct access (the door refuses every other).
pub(super) fn run(ledger: &mut Ledger, caller: &Caller, req: &TokenRequest) -> Result<TokenReply> {
    match req {
        TokenRequest::Create {
            name,
            grant,
            expires_in,
        } => create(ledger, caller, name, grant, *expires_in).map(TokenReply::Made),
        TokenRequest::List => list(ledger).map(TokenReply::Listed),
        TokenRequest::Revoke { name } => revoke(ledger, caller, name).map(TokenReply::Revoked),
        TokenRequest::Sessions { person, source } => {
            let person = person.trim();
            let tokens: Vec<TokenListed> = list(ledger)?
                .tokens
                .into_iter()
                .filter(|t| t.token.person.as_deref() == Some(person))
                .filter(|t| source.as_deref().is_none_or(|s| t.source == s))
                .collect();
            Ok(TokenReply::Sessions(PersonSessions {
                person: person.to_string(),
                count: tokens.len(),
                tokens,
            }))
        }
        TokenRequest::RevokePerson { person } => {
            revoke_person(ledger, caller, person).map(TokenReply::RevokedPerson)
        }
    }
}

fn create(
    ledger: &mut Ledger,
    caller: &Caller,
    name: &str,
    grant: &Grant,
    expires_in: Option<Duration>,
) -> Result<TokenMade> {
    let name = name.trim();
    check_name(name, "token").map_err(Error::usage)?;
    let (role, stages, person) = match grant {
        Grant::Agent { stages } => {
            let stages: Vec<String> = stages.iter().map(|s| s.trim().to_string()).collect();
            for pattern in &stages {
                check_pattern(pattern)?;
            }
            (TokenRole::Agent, stages, None)
        }
        Grant::Person(person) => {
            let person = person.trim();
            check_name(person, "person").map_err(Error::usage)?;
            (TokenRole::Person, Vec::new(), Some(person.to_string()))
        }
    };
    let now = clock::now();
    let token = StoredToken {
        name: name.to_string(),
        role,
        stages,
        person,
        created_at: now.clone(),
        expires_at: expires_in.map(|d| clock::after(&now, d)),
        last_used_at: None,
    };
    let secret = format!("{SECRET_PREFIX}{}", hex(&random(32)?));
    let hash = sha256_hex(&secret);
    let actor = caller.actor(&now);
    ledger.write(|tx| {
        if tx.token(&token.name)?.is_some() {
            return Err(Error::conflict(format!(
                "there is a token named {} already; nothing was made: revoke it first, or \
                 give the new one another name",
                token.name
            )));
        }
        tx.insert_token(&token, &hash)?;
        tx.token_event(
            &actor,
            &serde_json::json!({
                "token": token.name,
                "created": true,
                "role": token.role,
                "stages": token.stages,
                "person": token.person,
                "expires_at": token.expires_at,
            }),
        )
    })?;
    Ok(TokenMade {
        name: token.name,
        role: token.role,
        stages: token.stages,
        person: token.person,
        expires_at: token.expires_at,
        token: secret,
    })
}

/// A stage pattern: a stage's name, or a prefix ending in `*` (`ci-*`).
pub(super) fn check_pattern(pattern: &str) -> Result<()> {
    let body = pattern.strip_suffix('*').unwrap_or(pattern);
    if pattern.is_empty()
        || body.contains('*')
        || pattern.contains(',')
        || pattern.chars().any(char::is_control)
    {
        return Err(Error::usage(format!(
            "'{pattern}' is not a stage pattern: give a stage's name, or a prefix ending in * \
             (ci-*), separated by commas"
        )));
    }
    Ok(())
}

fn list(ledger: &mut Ledger) -> Result<Tokens> {
    let now = clock::now();
    let tokens: Vec<TokenListed> = ledger.read(|tx| {
        let sign_ins = tx.sign_ins()?;
        tx.tokens()?
            .into_iter()
            .map(|token| {
                let made_by = sign_ins.iter().find(|s| s.token == token.name);
                Ok(TokenListed {
                    expired: is_expired(&token, &now)
                        || super::signin::idle_over(tx, &token, &now)?,
                    source: made_by.map_or("token", |s| s.kind.as_str()).to_string(),
                    issuer: made_by.map(|s| s.issuer.clone()),
                    token,
                })
            })
            .collect::<Result<_>>()
    })?;
    Ok(Tokens {
        count: tokens.len(),
        tokens,
    })
}

fn revoke(ledger: &mut Ledger, caller: &Caller, name: &str) -> Result<TokenRevoked> {
    let name = name.trim();
    let actor = caller.actor(&clock::now());
    ledger.write(|tx| {
        let Some(token) = tx.token(name)? else {
            return Err(Error::not_found(format!(
                "there is no token named {name}: 'questions token list' shows them"
            )));
        };
        tx.delete_token(name)?;
        tx.token_event(
            &actor,
            &serde_json::json!({"token": token.name, "revoked": true, "role": token.role}),
        )
    })?;
    Ok(TokenRevoked {
        name: name.to_string(),
        revoked: true,
    })
}

fn revoke_person(ledger: &mut Ledger, caller: &Caller, person: &str) -> Result<PersonRevoked> {
    let person = person.trim();
    check_name(person, "person").map_err(Error::usage)?;
    let actor = caller.actor(&clock::now());
    ledger.write(|tx| {
        let mut revoked = Vec::new();
        for token in tx.tokens()? {
            if token.person.as_deref() != Some(person) {
                continue;
            }
            tx.delete_token(&token.name)?;
            tx.delete_sign_in(&token.name)?;
            revoked.push(token.name);
        }
        tx.token_event(
            &actor,
            &serde_json::json!({"person": person, "revoked": revoked, "role": TokenRole::Person}),
        )?;
        Ok(PersonRevoked {
            person: person.to_string(),
            revoked,
        })
    })
}

fn is_expired(token: &StoredToken, now: &str) -> bool {
    token.expires_at.as_deref().is_some_and(|end| end <= now)
}

/// How often a token's `last_used_at` is written at most: a write per request would make
/// every read a write.
const USED_EVERY: Duration = Duration::from_mins(1);

/// Who holds `secret`: the principal its token stands for. A missing, unknown, expired or
/// revoked token is `unauthorized`, all with one message (`UNAUTHORIZED`). Revocation
/// takes effect at once: every call reads the token anew.
pub fn authenticate(ledger: &mut Ledger, secret: Option<&str>) -> Result<Principal> {
    let unauthorized = || Error::new(ErrorCode::Unauthorized, UNAUTHORIZED);
    let Some(secret) = secret.map(str::trim).filter(|s| !s.is_empty()) else {
        return Err(unauthorized());
    };
    let hash = sha256_hex(secret);
    let now = clock::now();
    let Some(token) = ledger.read(|tx| tx.token_by_hash(&hash))? else {
        return Err(unauthorized());
    };
    if is_expired(&token, &now) || ledger.read(|tx| super::signin::idle_over(tx, &token, &now))? {
        return Err(unauthorized());
    }
    let stale = token
        .last_used_at
        .as_deref()
        .is_none_or(|last| clock::after(last, USED_EVERY).as_str() <= now.as_str());
    if stale {
        ledger.write(|tx| tx.token_used(&token.name, &now))?;
    }
    let answers = token.role == TokenRole::Person
        && ledger.read(|tx| super::oauth::may_answer(tx, &token.name))?;
    Ok(match token.role {
        TokenRole::Agent => Principal::Agent(AgentToken {
            name: token.name,
            stages: token.stages,
        }),
        TokenRole::Person => Principal::Person(PersonToken {
            name: token.name,
            person: token.person.unwrap_or_default(),
            answers,
        }),
    })
}
