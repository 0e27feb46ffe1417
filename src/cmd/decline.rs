use super::{Outcome, Who};
use crate::cli::DeclineArgs;
use crate::error::Result;
use crate::model::Channel;
use crate::ops;
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, who: &Who, args: DeclineArgs) -> Result<Outcome> {
    let caller = who.via(Channel::Cli);
    Ok(Outcome::ok(ops::decline(
        ledger,
        &caller,
        args.id,
        &ops::Shown::default(),
        &args.reason,
        args.force,
    )?))
}
