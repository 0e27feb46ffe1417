//! `info`: where the ledger is, how it was found, and what each stage holds.

use super::Outcome;
use questions_core::error::Result;
use questions_core::ops;
use questions_core::ops::{FoundBy, Ledger};

pub(super) fn run(
    ledger: &mut Ledger,
    found_by: FoundBy,
    also_found: &[std::path::PathBuf],
) -> Result<Outcome> {
    Ok(Outcome::ok(ops::info(ledger, found_by, also_found)?))
}
