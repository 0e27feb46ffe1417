use super::Outcome;
use crate::cli::ResetArgs;
use questions_core::error::Result;
use questions_core::ops;
use questions_core::ops::Ledger;

/// Deletes the ledger without opening it, so a damaged ledger can be reset too.
pub(super) fn run(ledger: &mut Ledger, args: ResetArgs) -> Result<Outcome> {
    ops::reset(ledger.location(), args.yes).map(Outcome::ok)
}
