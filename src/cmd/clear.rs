use super::{Outcome, Who};
use crate::cli::ClearArgs;
use crate::error::Result;
use crate::model::Channel;
use crate::ops;
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, who: &Who, args: ClearArgs) -> Result<Outcome> {
    Ok(Outcome::ok(ops::clear(
        ledger,
        &who.via(Channel::Cli),
        &args.stage,
    )?))
}
