use super::{door, take, Outcome, Who};
use crate::cli::DeclineArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops::{self, Ledger, Reply, Request};

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: DeclineArgs) -> Result<Outcome> {
    let change = ops::PersonsChange {
        force: args.force,
        ..ops::PersonsChange::of(args.id, ops::Act::Decline(args.reason))
    };
    let req = Request::Change(change);
    let recorded = take!(door(ledger, who.via(Channel::Cli), req)?, Reply::Recorded);
    Ok(Outcome::ok(recorded))
}
