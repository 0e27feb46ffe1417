use super::{read_input, Outcome};
use crate::cli::{IngestArgs, IngestFormat};
use questions_core::error::Result;
use questions_core::formats::Source;
use questions_core::ops::Ledger;
use questions_core::ops::{self, Expiry};

pub(super) fn run(ledger: &mut Ledger, args: IngestArgs) -> Result<Outcome> {
    let text = read_input(args.file.as_deref())?;
    let only = match args.format {
        IngestFormat::Auto => None,
        IngestFormat::Uwf => Some(Source::Uwf),
        IngestFormat::OpenQuestions => Some(Source::OpenQuestions),
        IngestFormat::AskUser => Some(Source::AskUser),
    };
    let expiry = Expiry {
        expires_in: args.expiry.expires_in,
        on_expiry: args.expiry.on_expiry,
    };
    let approval = super::log::policy(ledger, &args.approval)?;
    Ok(Outcome::ok(ops::ingest(
        ledger,
        &args.stage,
        &text,
        only,
        expiry,
        approval.as_ref(),
    )?))
}
