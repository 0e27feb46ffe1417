use super::{door, take, Outcome, Who};
use crate::cli::SkipArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops::{self, Ledger, Reply, Request};

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: SkipArgs) -> Result<Outcome> {
    let change = ops::PersonsChange {
        force: args.force,
        ..ops::PersonsChange::of(args.id, ops::Act::Skip(args.reason))
    };
    let req = Request::Change(change);
    let recorded = take!(door(ledger, who.via(Channel::Cli), req)?, Reply::Recorded);
    Ok(Outcome::ok(recorded))
}
