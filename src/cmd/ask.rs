use std::io::IsTerminal;

use super::{door, is_served, nobody, take, Outcome, Who};
use crate::cli::AskArgs;
use crate::terminal;
use questions_core::error::{Error, Result};
use questions_core::model::Channel;
use questions_core::ops::{self, CheckRequest, Ledger, Reply, Request, Wait};

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
    let pending = Request::Pending {
        stage: args.stage.clone(),
        ids: args.ids.as_ref().map(|i| i.0.clone()),
    };
    // Approvals take votes (approve / reject), not answers: they are not asked here.
    let questions: Vec<_> = take!(door(ledger, nobody(), pending)?, Reply::Pending)
        .questions
        .into_iter()
        .filter(|q| q.state.approval.is_none())
        .collect();
    // The ledger's id, read now: what is recorded must be what was shown. Over https://
    // each question's fingerprint says it (the server's ledger id is its own).
    let id = if is_served() { None } else { ledger.id()? };
    let shown = ops::Shown::all(id, &questions);
    let Some(chosen) = terminal::ask_all(&questions)? else {
        return Err(Error::cancelled("cancelled; no answer was recorded"));
    };
    let req = Request::Asked {
        stage: args.stage.clone(),
        chosen,
        shown,
    };
    let asked = take!(door(ledger, who.via(Channel::Ask), req)?, Reply::Elicited);
    if json || !std::io::stdout().is_terminal() {
        return Ok(Outcome::ok(asked));
    }
    let check = Request::Check(CheckRequest {
        stage: Some(args.stage.clone()),
        ids: None,
        strict: false,
        wait: Wait::No,
        allow_unknown_stage: false,
        ledger: None,
    });
    let gate = take!(door(ledger, nobody(), check)?, Reply::Gate);
    Ok(Outcome::text(terminal::summary(&asked, &gate, &questions)))
}
