use super::{door, read_input, take, Outcome, Who};
use crate::cli::IngestArgs;
use questions_core::error::Result;
use questions_core::ops::{Expiry, Ledger, Reply, Request};

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: IngestArgs) -> Result<Outcome> {
    let text = read_input(args.file.as_deref())?;
    let expiry = Expiry {
        expires_in: args.expiry.expires_in,
        on_expiry: args.expiry.on_expiry,
    };
    let approval = super::log::policy(ledger, &args.approval)?;
    let req = Request::Ingest {
        stage: args.stage,
        text,
        only: args.format.0,
        expiry,
        approval,
        key: None,
    };
    Ok(Outcome::ok(take!(
        door(ledger, who.via(questions_core::model::Channel::Cli), req)?,
        Reply::Ingested
    )))
}
