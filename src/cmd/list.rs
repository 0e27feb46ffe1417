use std::io::IsTerminal;

use super::{door, nobody, take, Outcome};
use crate::cli::{ListArgs, ListFormat};
use crate::output;
use questions_core::error::Result;
use questions_core::ops::{Filter, Ledger, Reply, Request};

pub(super) fn run(ledger: &mut Ledger, args: ListArgs) -> Result<Outcome> {
    let filter = Filter {
        stage: args.stage,
        status: args.status,
        group: args.group,
        ids: None,
    };
    let listed = take!(
        door(ledger, nobody(), Request::List(filter))?,
        Reply::Listed
    );
    let body = match args.format {
        ListFormat::Json => return Ok(Outcome::ok(listed)),
        ListFormat::Jsonl => output::jsonl(&listed.questions),
        ListFormat::Markdown => output::markdown(&listed.questions),
        ListFormat::Table => {
            let terminal = std::io::stdout().is_terminal();
            output::table(
                &listed.questions,
                width(terminal),
                terminal && colour_allowed(),
            )
        }
    };
    Ok(Outcome::text(body))
}

/// The terminal's width; else $COLUMNS; else 100.
fn width(terminal: bool) -> usize {
    let size = terminal
        .then(crossterm::terminal::size)
        .and_then(Result::ok);
    size.map(|(cols, _)| usize::from(cols))
        .or_else(|| {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.trim().parse().ok())
        })
        .filter(|w: &usize| *w >= 40)
        .unwrap_or(100)
}

/// NO_COLOR set to anything but the empty string turns colour off.
fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
