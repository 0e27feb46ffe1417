use super::{read_input, Outcome, Who};
use crate::cli::ImportArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops;
use questions_core::ops::Ledger;

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: ImportArgs) -> Result<Outcome> {
    let text = read_input(args.file.as_deref())?;
    Ok(Outcome::ok(ops::import(
        ledger,
        &who.via(Channel::Import),
        &args.stage,
        &text,
        args.format.0,
        args.force,
    )?))
}
