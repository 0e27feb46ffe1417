use serde_json::json;

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
            return Ok(Outcome::ok(json!({
                "ok": true,
                "procedure": "list",
                "count": questions.len(),
                "questions": questions,
            })))
        }
        ListFormat::Jsonl => output::jsonl(&questions),
        ListFormat::Markdown => output::markdown(&questions),
        ListFormat::Table => output::table(&questions, terminal_width()),
    };
    Ok(Outcome {
        body: Rendered::Text(body),
        exit: 0,
        note: None,
    })
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|w: &usize| *w >= 40)
        .unwrap_or(100)
}
