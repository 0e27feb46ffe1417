use super::{door, take, Outcome, Who};
use crate::cli::AnswerArgs;
use questions_core::error::Result;
use questions_core::model::{AnswerInput, Channel};
use questions_core::ops::{self, Ledger, Reply, Request};

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: AnswerArgs) -> Result<Outcome> {
    let input = AnswerInput {
        text: args.answer,
        select: args.select,
    };
    let change = ops::PersonsChange {
        force: args.force,
        ..ops::PersonsChange::of(args.id, ops::Act::Answer(input))
    };
    let req = Request::Change(change);
    let recorded = take!(door(ledger, who.via(Channel::Cli), req)?, Reply::Recorded);
    Ok(Outcome::ok(recorded))
}
