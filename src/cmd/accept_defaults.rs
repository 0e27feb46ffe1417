use super::{Outcome, Who};
use crate::cli::AcceptDefaultsArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops;
use questions_core::ops::Ledger;

/// Answers pending questions with their proposed values, as the person would by accepting
/// every default; each is marked `defaulted` in the history.
pub(super) fn run(ledger: &mut Ledger, who: &Who, args: AcceptDefaultsArgs) -> Result<Outcome> {
    Ok(Outcome::ok(ops::accept_defaults(
        ledger,
        &who.via(Channel::AcceptDefaults),
        &args.stage,
        args.include_required,
    )?))
}
