use super::Outcome;
use crate::cli::HistoryArgs;
use questions_core::error::{Error, Result};
use questions_core::ops;
use questions_core::ops::{EventFilter, Ledger};

pub(super) fn run(ledger: &mut Ledger, args: HistoryArgs) -> Result<Outcome> {
    let filter = match (args.id, args.stage) {
        (Some(id), _) => EventFilter::Question(id),
        (None, Some(stage)) => EventFilter::Stage(stage),
        (None, None) => return Err(Error::usage("give --id N or --stage S")),
    };
    Ok(Outcome::ok(ops::history(ledger, &filter)?))
}
