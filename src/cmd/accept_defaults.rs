use super::{door, take, Outcome, Who};
use crate::cli::AcceptDefaultsArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops::{Ledger, Reply, Request};

/// Answers pending questions with their proposed values, as the person would by accepting
/// every default; each is marked `defaulted` in the history.
pub(super) fn run(ledger: &mut Ledger, who: &Who, args: AcceptDefaultsArgs) -> Result<Outcome> {
    let req = Request::AcceptDefaults {
        stage: args.stage,
        include_required: args.include_required,
    };
    Ok(Outcome::ok(take!(
        door(ledger, who.via(Channel::AcceptDefaults), req)?,
        Reply::Defaulted
    )))
}
