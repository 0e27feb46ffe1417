//! `info`: where the ledger is, how it was found, and what each stage holds.

use super::Outcome;
use crate::error::Result;
use crate::ops;
use crate::store::{FoundBy, Ledger};

pub fn run(
    ledger: &mut Ledger,
    found_by: FoundBy,
    also_found: &[std::path::PathBuf],
) -> Result<Outcome> {
    Ok(Outcome::ok(ops::info(ledger, found_by, also_found)?))
}
