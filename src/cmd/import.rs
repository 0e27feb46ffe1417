use super::{door, read_input, take, Outcome, Who};
use crate::cli::ImportArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops::{Ledger, Reply, Request};

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: ImportArgs) -> Result<Outcome> {
    let req = Request::Import {
        stage: args.stage,
        text: read_input(args.file.as_deref())?,
        format: args.format.0,
        force: args.force,
    };
    Ok(Outcome::ok(take!(
        door(ledger, who.via(Channel::Import), req)?,
        Reply::Imported
    )))
}
