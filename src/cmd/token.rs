//! `token create|list|revoke`: the tokens the ledger issues (§15), made only with direct
//! access to it. The door (`ops::call`) decides that; this translates.

use super::{Outcome, Who};
use crate::cli::{TokenAction, TokenArgs};
use questions_core::error::{Error, Result};
use questions_core::model::Channel;
use questions_core::ops::{self, Caller, Grant, Ledger, Principal, Reply, Request, TokenRequest};

pub(super) fn run(ledger: &mut Ledger, by_from_flag: bool, args: TokenArgs) -> Result<Outcome> {
    // Who may call the ledger is decided as a group's members are: by who runs this
    // (the operating-system user), never by a name given.
    if by_from_flag {
        return Err(Error::usage(
            "--by is refused for 'token': a change of tokens is recorded as the \
             operating-system user who makes it",
        ));
    }
    let req = match args.action {
        TokenAction::Create(create) => {
            let grant = match create.person {
                Some(person) => Grant::Person(person),
                None => Grant::Agent {
                    stages: create.stages,
                },
            };
            TokenRequest::Create {
                expires_in: match create.expires {
                    Some(crate::cli::Expires::After(d)) => Some(d),
                    Some(crate::cli::Expires::Never) => None,
                    None => ops::default_lifetime(&grant),
                },
                name: create.name,
                grant,
            }
        }
        TokenAction::List => TokenRequest::List,
        TokenAction::Revoke { name } => TokenRequest::Revoke { name },
    };
    of_person(ledger, req)
}

/// A token request through the door, as the operating-system user: `token …`, and
/// `people sessions|grants|revoke NAME` (a person's tokens and sign-ins).
pub(super) fn of_person(ledger: &mut Ledger, req: TokenRequest) -> Result<Outcome> {
    let caller = Caller {
        by: Some(Who::os_user()),
        channel: Channel::Cli,
    };
    match ops::call(ledger, &Principal::Direct(caller), Request::Token(req))? {
        Reply::Token(reply) => Ok(Outcome::ok(reply)),
        other => Err(Error::db(format!(
            "a token request was answered with {other:?}"
        ))),
    }
}
