//! `people link|unlink|list` and `relay`: who answers through which channel (§14), and
//! the relay itself (its own feature).

use super::Outcome;
use crate::cli::{PeopleAction, PeopleArgs, RelayAction, RelayArgs};
use questions_core::error::{Error, Result};
use questions_core::model::Channel;
use questions_core::ops::{self, relay, Ledger};

/// `people`: a link decides who answers through a channel, so it is guarded as a group
/// change is: as the PostgreSQL role, else the operating-system user; `--by` is refused.
pub(super) fn people(ledger: &mut Ledger, by_from_flag: bool, args: PeopleArgs) -> Result<Outcome> {
    if args.action == PeopleAction::List {
        if args.name.is_some() {
            return Err(Error::usage("people list takes no NAME"));
        }
        return Ok(Outcome::ok(relay::people_list(ledger)?));
    }
    if matches!(
        args.action,
        PeopleAction::Sessions | PeopleAction::Grants | PeopleAction::Revoke
    ) {
        if by_from_flag {
            return Err(Error::usage(
                "--by is refused for 'people sessions', 'grants' and 'revoke': they are recorded \
                 as the operating-system user who runs them",
            ));
        }
        let Some(person) = args.name else {
            return Err(Error::usage(
                "name the person: questions people sessions|grants|revoke NAME",
            ));
        };
        if args.identity.is_some() || args.tz.is_some() || args.to.is_some() {
            return Err(Error::usage(
                "questions people sessions|grants|revoke NAME takes nothing else",
            ));
        }
        let req = match args.action {
            PeopleAction::Sessions => ops::TokenRequest::Sessions {
                person,
                source: None,
            },
            PeopleAction::Grants => ops::TokenRequest::Sessions {
                person,
                source: Some("oauth".into()),
            },
            _ => ops::TokenRequest::RevokePerson { person },
        };
        return super::token::of_person(ledger, req);
    }
    let identity = super::approve::voter(by_from_flag, "people")?;
    if args.action == PeopleAction::Delegate {
        let Some(name) = args.name else {
            return Err(Error::usage(
                "name the person: questions people delegate NAME --to OTHER --until INSTANT \
                 (or NAME off)",
            ));
        };
        let to = match (args.identity.as_deref(), args.to, args.until) {
            (Some("off"), None, None) => None,
            (None, Some(to), Some(until)) => Some((to, until)),
            _ => {
                return Err(Error::usage(
                    "questions people delegate NAME --to OTHER --until INSTANT, or \
                     questions people delegate NAME off",
                ))
            }
        };
        return Ok(Outcome::ok(ops::delegate(
            ledger,
            &identity,
            Channel::Cli,
            &name,
            to.as_ref().map(|(t, u)| (t.as_str(), u.as_str())),
        )?));
    }
    if args.action == PeopleAction::Quiet {
        const USAGE: &str = "questions people quiet NAME HH:MM-HH:MM --tz ZONE, or questions \
                             people quiet NAME off";
        let Some(name) = args.name else {
            return Err(Error::usage(format!("name the person: {USAGE}")));
        };
        let hours = match (args.identity.as_deref(), args.tz.as_deref()) {
            (Some("off"), None) => None,
            (Some(window), Some(tz)) => Some((window, tz)),
            _ => return Err(Error::usage(USAGE)),
        };
        if args.to.is_some() || args.until.is_some() {
            return Err(Error::usage(format!(
                "--to and --until go with 'people delegate': {USAGE}"
            )));
        }
        return Ok(Outcome::ok(ops::set_quiet(
            ledger,
            &identity,
            Channel::Cli,
            &name,
            hours,
        )?));
    }
    if args.tz.is_some() {
        return Err(Error::usage("--tz goes with 'people quiet'"));
    }
    if args.to.is_some() || args.until.is_some() {
        return Err(Error::usage("--to and --until go with 'people delegate'"));
    }
    let (Some(name), Some(channel_id)) = (args.name, args.identity) else {
        return Err(Error::usage(
            "name the person and the identity: questions people link|unlink NAME CHANNEL:ID",
        ));
    };
    Ok(Outcome::ok(relay::people_link(
        ledger,
        &identity,
        Channel::Cli,
        name.trim(),
        &channel_id,
        args.action == PeopleAction::Link,
    )?))
}

/// `relay pair CHANNEL NAME`, or the relay itself.
pub(super) fn relay(ledger: &mut Ledger, by_from_flag: bool, args: RelayArgs) -> Result<Outcome> {
    match args.action {
        Some(RelayAction::Pair { channel, name }) => {
            let identity = super::approve::voter(by_from_flag, "relay pair")?;
            let pairing =
                relay::pairing_code(ledger, &identity, Channel::Cli, channel.trim(), name.trim())?;
            Ok(Outcome::ok(pairing))
        }
        None => run(ledger, args),
    }
}

#[cfg(feature = "relay")]
fn run(ledger: &mut Ledger, args: RelayArgs) -> Result<Outcome> {
    let Some(config) = args.config else {
        return Err(Error::usage(
            "relay needs --config FILE (or: questions relay pair CHANNEL NAME)",
        ));
    };
    super::relay::run(ledger, &config, &args.stage)
}

#[cfg(not(feature = "relay"))]
fn run(_: &mut Ledger, _: RelayArgs) -> Result<Outcome> {
    Err(super::not_built("relay"))
}
