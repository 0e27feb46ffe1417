//! `info`: where the ledger is, how it was found, and what each stage holds.

use super::{door, nobody, take, Outcome};
use questions_core::error::Result;
use questions_core::ops::{FoundBy, Ledger, Reply, Request};

pub(super) fn run(
    ledger: &mut Ledger,
    found_by: FoundBy,
    also_found: &[std::path::PathBuf],
) -> Result<Outcome> {
    let req = Request::Info {
        found_by,
        also_found: also_found.to_vec(),
    };
    Ok(Outcome::ok(take!(
        door(ledger, nobody(), req)?,
        Reply::Info
    )))
}
