use super::{Outcome, Who};
use crate::cli::SkipArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops;
use questions_core::ops::Ledger;

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: SkipArgs) -> Result<Outcome> {
    let caller = who.via(Channel::Cli);
    let change = ops::PersonsChange {
        force: args.force,
        ..ops::PersonsChange::of(args.id, ops::Act::Skip(args.reason))
    };
    Ok(Outcome::ok(ops::change(ledger, &caller, &change)?))
}
