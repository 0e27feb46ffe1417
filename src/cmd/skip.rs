use super::{Outcome, Who};
use crate::cli::SkipArgs;
use crate::error::Result;
use crate::model::Channel;
use crate::ops;
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, who: &Who, args: SkipArgs) -> Result<Outcome> {
    let caller = who.via(Channel::Cli);
    Ok(Outcome::ok(ops::skip(
        ledger,
        &caller,
        args.id,
        &ops::Shown::default(),
        args.reason,
        args.force,
    )?))
}
