use std::io::IsTerminal;

use super::Outcome;
use crate::cli::AskArgs;
use crate::error::{Error, Result};
use crate::ops;
use crate::store::Ledger;
use crate::terminal::{self, Choice};

pub fn run(ledger: &mut Ledger, args: AskArgs) -> Result<Outcome> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(terminal::not_a_terminal());
    }
    let ids = args.ids.as_ref().map(|i| i.0.as_slice());
    let questions = ops::pending(ledger, &args.stage, ids)?;
    let Some(chosen) = terminal::ask_all(&questions)? else {
        return Err(Error::cancelled("cancelled; no answer was recorded"));
    };
    let chosen: Vec<_> = chosen
        .into_iter()
        .map(|(id, choice)| match choice {
            Choice::Answer(input) => (id, Some(input)),
            Choice::Leave => (id, None),
        })
        .collect();
    Ok(Outcome::ok(ops::record_choices(
        ledger,
        &args.stage,
        &chosen,
    )?))
}
