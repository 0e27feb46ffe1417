use super::Outcome;
use crate::cli::AnswerArgs;
use crate::error::Result;
use crate::model::AnswerInput;
use crate::ops;
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, args: AnswerArgs) -> Result<Outcome> {
    let input = AnswerInput {
        text: args.answer,
        select: args.select,
    };
    Ok(Outcome::ok(ops::answer(
        ledger, args.id, &input, args.force,
    )?))
}
