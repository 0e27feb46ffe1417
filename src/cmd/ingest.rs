use super::{read_input, Outcome};
use crate::cli::IngestArgs;
use questions_core::error::Result;
use questions_core::ops::Ledger;
use questions_core::ops::{self, Expiry};

pub(super) fn run(ledger: &mut Ledger, args: IngestArgs) -> Result<Outcome> {
    let text = read_input(args.file.as_deref())?;
    let expiry = Expiry {
        expires_in: args.expiry.expires_in,
        on_expiry: args.expiry.on_expiry,
    };
    let approval = super::log::policy(ledger, &args.approval)?;
    Ok(Outcome::ok(ops::ingest(
        ledger,
        &args.stage,
        &text,
        args.format.0,
        expiry,
        approval.as_ref(),
    )?))
}
