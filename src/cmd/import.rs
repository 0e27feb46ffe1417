use super::{read_input, Outcome, Who};
use crate::cli::{ImportArgs, ImportFormatArg};
use crate::error::Result;
use crate::formats::answers::ImportFormat;
use crate::model::Channel;
use crate::ops;
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, who: &Who, args: ImportArgs) -> Result<Outcome> {
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
