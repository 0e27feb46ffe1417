use super::Outcome;
use crate::cli::SkipArgs;
use crate::error::Result;
use crate::ops;
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, args: SkipArgs) -> Result<Outcome> {
    Ok(Outcome::ok(ops::skip(
        ledger,
        args.id,
        args.reason,
        args.force,
    )?))
}
