use super::Outcome;
use crate::cli::ClearArgs;
use crate::error::Result;
use crate::ops;
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, args: ClearArgs) -> Result<Outcome> {
    Ok(Outcome::ok(ops::clear(ledger, &args.stage)?))
}
