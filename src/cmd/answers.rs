use super::{door, nobody, take, Outcome};
use crate::cli::AnswersArgs;
use questions_core::error::Result;
use questions_core::ops::{Ledger, Reply, Request};

/// What a re-invoked subagent needs: its answers keyed as it named the questions.
pub(super) fn run(ledger: &mut Ledger, args: AnswersArgs) -> Result<Outcome> {
    let req = Request::Answers { stage: args.stage };
    Ok(Outcome::ok(take!(
        door(ledger, nobody(), req)?,
        Reply::Answers
    )))
}
