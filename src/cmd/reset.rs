use super::Outcome;
use crate::cli::ResetArgs;
use crate::error::Result;
use crate::ops;
use crate::store::Ledger;

/// Deletes the ledger without opening it, so a damaged ledger can be reset too.
pub fn run(ledger: &mut Ledger, args: ResetArgs) -> Result<Outcome> {
    ops::reset(ledger.location(), args.yes).map(Outcome::ok)
}
