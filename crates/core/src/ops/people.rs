//! People as the operations know them: who a caller is (`Identity`), who administers
//! everyone's links (`PEOPLE_ADMINS`), how a channel identity is written, and whom a
//! person's cards reach by delegation. Approvals, links, quiet hours and routing all
//! speak of people this way, so it sits below each of them.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::Relayed;
use crate::store::{Delegation, Ledger, Tx};

/// Who casts a vote (or asks for an approval), as far as the channel can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Identity {
    /// The command line: on PostgreSQL the database role the connection logged in as
    /// (`session_user`), so that roles and grants are the control; on a file, this name
    /// (the operating-system user).
    Local(String),
    /// A person the channel vouches for: a `serve --users` token's, MCP's configured user.
    Person(String),
}

impl Identity {
    /// Whether this is the command line's own caller (a role or a uid), not a person a
    /// channel vouches for.
    pub(super) fn is_local(&self) -> bool {
        matches!(self, Identity::Local(_))
    }

    /// Whether this caller owns the ledger (`Tx::caller_owns_ledger`): only the command
    /// line's own caller can, never a name a channel gives.
    pub(super) fn owns_ledger(&self, tx: &Tx) -> Result<bool> {
        Ok(self.is_local() && tx.caller_owns_ledger()?)
    }

    /// The name, read inside the transaction that uses it.
    pub(super) fn resolve(&self, tx: &Tx) -> Result<String> {
        match self {
            Identity::Person(name) => Ok(name.clone()),
            Identity::Local(name) => Ok(tx.session_user()?.unwrap_or_else(|| name.clone())),
        }
    }
}

/// The name `identity` stands for on this ledger: who asks for an approval logged
/// without `--requester`.
pub fn identify(ledger: &mut Ledger, identity: &Identity) -> Result<String> {
    match identity {
        Identity::Person(name) => Ok(name.clone()),
        Identity::Local(_) => ledger.read(|tx| identity.resolve(tx)),
    }
}

/// Who may link or unlink anyone's channels: the admins of this group, which only the
/// ledger's owner makes (`group create people --admins NAME,…`); everyone else links
/// only themself.
pub const PEOPLE_ADMINS: &str = "people";

/// A channel identity as the ledger keeps it, from what a person writes: the provider's
/// stable id, never a display name. `telegram:<user id>`, `slack:<team>/<user>`,
/// `email:<address>` (lower case), and `github:<login>` (lower case: GitHub's logins are
/// case-insensitive), which no relay serves: it maps a CI run's initiator to a person.
pub fn channel_identity(text: &str) -> Result<String> {
    let bad = |why: &str| {
        let forms: Vec<&str> = Relayed::all().iter().map(|r| r.identity_form()).collect();
        Error::usage(format!(
            "'{text}' is not a channel identity: {why} ({}, github:<login>, oidc:<issuer>#<sub>)",
            forms.join(", ")
        ))
    };
    let text = text.trim();
    let (channel, id) = text
        .split_once(':')
        .ok_or_else(|| bad("it names no channel"))?;
    let channel = channel.to_lowercase();
    if channel == "oidc" {
        // Who an OpenID provider says signed in (§17): its issuer and its `sub`, both as
        // the provider writes them.
        return super::signin::check_oidc(id).map_err(|why| bad(&why));
    }
    if channel == "github" {
        // GitHub's rule for a login: letters, digits and single inner hyphens, at most 39
        // characters.
        let ok = !id.is_empty()
            && id.len() <= 39
            && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !id.starts_with('-')
            && !id.ends_with('-')
            && !id.contains("--");
        if !ok {
            return Err(bad(
                "a GitHub login is letters, digits and single inner hyphens",
            ));
        }
        return Ok(format!("github:{}", id.to_lowercase()));
    }
    let Some(relayed) = Relayed::named(&channel) else {
        return Err(bad("the channel is not one the relay knows"));
    };
    let id = relayed.identity(id).map_err(bad)?;
    Ok(format!("{}:{id}", relayed.as_str()))
}

/// How many delegations a card follows from the person it is for: a delegate's
/// delegate's delegate, and no further.
pub const DELEGATION_HOPS: usize = 3;

/// `person`'s delegate now, if any.
pub(super) fn active(all: &[Delegation], person: &str, now: &str) -> Option<String> {
    all.iter()
        .find(|d| d.person == person && d.until.as_str() > now)
        .map(|d| d.delegate.clone())
}

/// `person` and whom their cards reach by delegation, in order.
pub(super) fn chain(all: &[Delegation], person: &str, now: &str) -> Vec<String> {
    let mut out = vec![person.to_string()];
    while let Some(next) = active(all, out.last().map_or("", String::as_str), now) {
        if out.contains(&next) || out.len() > all.len() {
            break;
        }
        out.push(next);
    }
    out
}

/// Whom `person`'s cards reach besides them by the delegations in force: at most
/// `DELEGATION_HOPS` of them, nearest first.
pub(super) fn delegates_of(all: &[Delegation], person: &str, now: &str) -> Vec<String> {
    chain(all, person, now)
        .into_iter()
        .skip(1)
        .take(DELEGATION_HOPS)
        .collect()
}
