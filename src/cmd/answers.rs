use super::Outcome;
use crate::cli::AnswersArgs;
use crate::error::Result;
use crate::ops;
use crate::store::Ledger;

/// What a re-invoked subagent needs: its answers keyed as it named the questions.
pub fn run(ledger: &mut Ledger, args: AnswersArgs) -> Result<Outcome> {
    Ok(Outcome::ok(ops::answers(ledger, &args.stage)?))
}
