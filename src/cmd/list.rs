use std::io::IsTerminal;

use super::{Outcome, Rendered, Session};
use crate::cli::{ListArgs, ListFormat};
use crate::error::Result;
use crate::output;
use crate::store::{Access, Filter};

pub fn run(session: &mut Session, args: ListArgs) -> Result<Outcome> {
    let filter = Filter {
        stage: args.stage,
        status: args.status.map(Into::into),
        group: args.group,
        ids: None,
    };
    let questions = session
        .store(Access::Read)?
        .read(|tx| tx.questions(&filter))?;
    let body = match args.format {
        ListFormat::Json => {
            #[derive(serde::Serialize)]
            struct Listed<'a> {
                ok: bool,
                procedure: &'static str,
                count: usize,
                questions: &'a [crate::model::Question],
            }
            return Ok(Outcome::ok(Listed {
                ok: true,
                procedure: "list",
                count: questions.len(),
                questions: &questions,
            }));
        }
        ListFormat::Jsonl => output::jsonl(&questions),
        ListFormat::Markdown => output::markdown(&questions),
        ListFormat::Table => {
            let terminal = std::io::stdout().is_terminal();
            output::table(&questions, width(terminal), terminal && colour_allowed())
        }
    };
    Ok(Outcome {
        body: Rendered::Text(body),
        exit: 0,
        note: None,
    })
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
