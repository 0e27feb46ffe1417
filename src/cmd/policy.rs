//! `policy set|list|unset`: the ledger's routing policy (§14a), changed only with direct
//! access to it. The door (`ops::call`) decides that; this translates.

use super::{Outcome, Who};
use crate::cli::{PolicyAction, PolicyArgs};
use questions_core::error::{Error, Result};
use questions_core::model::Channel;
use questions_core::ops::{
    self, Caller, Ledger, PolicyRequest, PolicySet, Principal, Reply, Request,
};

pub(super) fn run(ledger: &mut Ledger, by_from_flag: bool, args: PolicyArgs) -> Result<Outcome> {
    // Who is asked is decided as tokens are: by who runs this (the operating-system
    // user), never by a name given.
    if by_from_flag {
        return Err(Error::usage(
            "--by is refused for 'policy': a change of routing is recorded as the \
             operating-system user who makes it",
        ));
    }
    let req = match args.action {
        PolicyAction::Set(set) => PolicyRequest::Set(PolicySet {
            stage: set.stage,
            to: set.to,
            remind_after: set.remind_after,
            remind_max: set.remind_max,
            escalate_after: set.escalate_after,
            escalate_to: set.escalate_to,
        }),
        PolicyAction::List => PolicyRequest::List,
        PolicyAction::Unset { stage } => PolicyRequest::Unset { stage },
    };
    let caller = Caller {
        by: Some(Who::os_user()),
        channel: Channel::Cli,
    };
    match ops::call(ledger, &Principal::Direct(caller), Request::Policy(req))? {
        Reply::Policy(reply) => Ok(Outcome::ok(reply)),
        other => Err(Error::db(format!(
            "a policy request was answered with {other:?}"
        ))),
    }
}
