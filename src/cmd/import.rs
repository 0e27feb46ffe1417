use super::{read_input, Outcome, Who};
use crate::cli::{ImportArgs, ImportFormatArg};
use questions_core::error::Result;
use questions_core::formats::answers::ImportFormat;
use questions_core::model::Channel;
use questions_core::ops;
use questions_core::ops::Ledger;

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: ImportArgs) -> Result<Outcome> {
    let text = read_input(args.file.as_deref())?;
    let format = match args.format {
        ImportFormatArg::Auto => None,
        ImportFormatArg::AskUser => Some(ImportFormat::AskUser),
        ImportFormatArg::Vscode => Some(ImportFormat::Vscode),
        ImportFormatArg::PiResult => Some(ImportFormat::PiResult),
        ImportFormatArg::PiPending => Some(ImportFormat::PiPending),
        ImportFormatArg::Map => Some(ImportFormat::Map),
    };
    Ok(Outcome::ok(ops::import(
        ledger,
        &who.via(Channel::Import),
        &args.stage,
        &text,
        format,
        args.force,
    )?))
}
