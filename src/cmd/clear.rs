use super::{Outcome, Who};
use crate::cli::ClearArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops;
use questions_core::ops::Ledger;

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: ClearArgs) -> Result<Outcome> {
    Ok(Outcome::ok(ops::clear(
        ledger,
        &who.via(Channel::Cli),
        &args.stage,
    )?))
}
