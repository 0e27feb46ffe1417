use std::io::IsTerminal;

use serde_json::json;

use super::{pending, Outcome, Session};
use crate::cli::AskArgs;
use crate::clock;
use crate::error::{Error, Result};
use crate::model::{resolve_answer, Event, EventKind, Status};
use crate::store::Access;
use crate::terminal::{self, Choice};

pub fn run(session: &mut Session, args: AskArgs) -> Result<Outcome> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(terminal::not_a_terminal());
    }
    let questions = pending(session, &args.stage, args.ids.as_ref())?;
    let Some(chosen) = terminal::ask_all(&questions)? else {
        return Err(Error::cancelled("cancelled; no answer was recorded"));
    };
    let now = clock::now();
    let (answered, left) = session.store(Access::Write)?.write(|tx| {
        let mut answered = Vec::new();
        let mut left = Vec::new();
        for (id, choice) in &chosen {
            let Choice::Answer(input) = choice else {
                left.push(*id);
                continue;
            };
            let before = super::existing(tx, *id)?;
            let resolved = resolve_answer(&before, input).map_err(Error::invalid_answer)?;
            if before.status != Status::Pending {
                if before.answer.as_deref() == Some(resolved.answer.as_str()) {
                    continue;
                }
                return Err(Error::conflict(format!(
                    "question {id} was {} by someone else meanwhile; nothing was recorded, run ask again",
                    before.status.as_str()
                )));
            }
            let q = before.answered(resolved, &now);
            tx.update(&q)?;
            tx.record(&Event::change(EventKind::Answered, &now, Some(&before), &q))?;
            answered.push(q);
        }
        Ok((answered, left))
    })?;
    let ids: Vec<i64> = answered.iter().map(|q| q.id).collect();
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "ask",
        "stage": args.stage,
        "answered_ids": ids,
        "left_pending_ids": left,
        "questions": answered,
    })))
}
