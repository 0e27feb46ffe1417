use serde_json::json;

use super::{existing, Outcome, Session};
use crate::cli::AnswerArgs;
use crate::clock;
use crate::error::{Error, Result};
use crate::model::{resolve_answer, AnswerInput, Event, EventKind, Status};
use crate::store::Access;

pub fn run(session: &mut Session, args: AnswerArgs) -> Result<Outcome> {
    let input = AnswerInput {
        text: args.answer,
        select: args.select,
    };
    let now = clock::now();
    let question = session.store(Access::Write)?.write(|tx| {
        let before = existing(tx, args.id)?;
        if before.status == Status::Answered && !args.force {
            return Err(Error::conflict(
                before.conflict_message("replace that answer"),
            ));
        }
        let resolved = resolve_answer(&before, &input).map_err(Error::invalid_answer)?;
        let q = before.answered(resolved, &now);
        tx.update(&q)?;
        let kind = if before.status == Status::Answered {
            EventKind::Reanswered
        } else {
            EventKind::Answered
        };
        tx.record(&Event::change(kind, &now, Some(&before), &q))?;
        Ok(q)
    })?;
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "answer",
        "question_id": question.id,
        "question": question,
    })))
}
