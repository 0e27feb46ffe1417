use std::io::IsTerminal;

use super::{Outcome, Who};
use crate::cli::AskArgs;
use crate::error::{Error, Result};
use crate::model::Channel;
use crate::ops;
use crate::store::Ledger;
use crate::terminal;

pub fn run(ledger: &mut Ledger, who: &Who, args: AskArgs) -> Result<Outcome> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(terminal::not_a_terminal());
    }
    let ids = args.ids.as_ref().map(|i| i.0.as_slice());
    // Approvals take votes (approve / reject), not answers: they are not asked here.
    let questions: Vec<_> = ops::pending(ledger, &args.stage, ids)?
        .into_iter()
        .filter(|q| q.approval.is_none())
        .collect();
    // The ledger's id, read now: what is recorded must be what was shown.
    let shown = ops::Shown::all(ledger.id()?, &questions);
    let Some(chosen) = terminal::ask_all(&questions)? else {
        return Err(Error::cancelled("cancelled; no answer was recorded"));
    };
    Ok(Outcome::ok(ops::record_choices(
        ledger,
        &who.via(Channel::Ask),
        &args.stage,
        &chosen,
        &shown,
        ops::Together::All,
    )?))
}
