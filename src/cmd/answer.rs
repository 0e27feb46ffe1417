use super::{Outcome, Who};
use crate::cli::AnswerArgs;
use crate::error::Result;
use crate::model::{AnswerInput, Channel};
use crate::ops;
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, who: &Who, args: AnswerArgs) -> Result<Outcome> {
    let input = AnswerInput {
        text: args.answer,
        select: args.select,
    };
    Ok(Outcome::ok(ops::answer(
        ledger,
        &who.via(Channel::Cli),
        args.id,
        &ops::Shown::default(),
        &input,
        args.force,
    )?))
}
