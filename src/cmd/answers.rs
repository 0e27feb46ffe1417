use super::Outcome;
use crate::cli::AnswersArgs;
use questions_core::error::Result;
use questions_core::ops;
use questions_core::ops::Ledger;

/// What a re-invoked subagent needs: its answers keyed as it named the questions.
pub(super) fn run(ledger: &mut Ledger, args: AnswersArgs) -> Result<Outcome> {
    Ok(Outcome::ok(ops::answers(ledger, &args.stage)?))
}
