use super::{door, nobody, take, Outcome};
use crate::cli::HistoryArgs;
use questions_core::error::{Error, Result};
use questions_core::ops::{EventFilter, Ledger, Reply, Request};

pub(super) fn run(ledger: &mut Ledger, args: HistoryArgs) -> Result<Outcome> {
    let filter = match (args.id, args.stage) {
        (Some(id), _) => EventFilter::Question(id),
        (None, Some(stage)) => EventFilter::Stage(stage),
        (None, None) => return Err(Error::usage("give --id N or --stage S")),
    };
    let req = Request::History(filter);
    Ok(Outcome::ok(take!(
        door(ledger, nobody(), req)?,
        Reply::History
    )))
}
