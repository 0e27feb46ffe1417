use std::io::IsTerminal;

use super::{Outcome, Who};
use crate::cli::AskArgs;
use crate::terminal;
use questions_core::error::{Error, Result};
use questions_core::model::Channel;
use questions_core::ops::Ledger;
use questions_core::ops::{self, CheckRequest, Wait};

/// Prompts on the terminal whatever standard input and output are, so the JSON can go to
/// a file or a pipe; on a terminal, the person reads a short summary instead.
/// `json`: print the JSON document even on a terminal (instead of a short summary).
pub(super) fn run(ledger: &mut Ledger, who: &Who, args: AskArgs, json: bool) -> Result<Outcome> {
    if !terminal::available() {
        return Err(terminal::not_a_terminal());
    }
    if !std::io::stderr().is_terminal() {
        return Err(Error::usage(
            "ask draws its prompts on standard error, which is not a terminal here: \
             redirect standard output only (the JSON document goes there)",
        ));
    }
    let ids = args.ids.as_ref().map(|i| i.0.as_slice());
    // Approvals take votes (approve / reject), not answers: they are not asked here.
    let questions: Vec<_> = ops::pending(ledger, &args.stage, ids)?
        .into_iter()
        .filter(|q| q.state.approval.is_none())
        .collect();
    // The ledger's id, read now: what is recorded must be what was shown.
    let shown = ops::Shown::all(ledger.id()?, &questions);
    let Some(chosen) = terminal::ask_all(&questions)? else {
        return Err(Error::cancelled("cancelled; no answer was recorded"));
    };
    let asked = ops::record_choices(
        ledger,
        &who.via(Channel::Ask),
        &args.stage,
        &chosen,
        &shown,
        ops::Together::All,
    )?;
    if json || !std::io::stdout().is_terminal() {
        return Ok(Outcome::ok(asked));
    }
    let gate = ops::check(
        ledger,
        &CheckRequest {
            stage: Some(args.stage.clone()),
            ids: None,
            strict: false,
            wait: Wait::No,
            allow_unknown_stage: false,
            ledger: None,
        },
    )?;
    Ok(Outcome::text(terminal::summary(&asked, &gate, &questions)))
}
