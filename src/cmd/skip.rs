use serde_json::json;

use super::{existing, Outcome, Session};
use crate::cli::SkipArgs;
use crate::clock;
use crate::error::{Error, Result};
use crate::model::{Event, EventKind, Status};
use crate::store::Access;

pub fn run(session: &mut Session, args: SkipArgs) -> Result<Outcome> {
    let reason = args
        .reason
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty());
    let now = clock::now();
    let question = session.store(Access::Write)?.write(|tx| {
        let before = existing(tx, args.id)?;
        match before.status {
            Status::Skipped => return Ok(before),
            Status::Answered if !args.force => {
                return Err(Error::conflict(format!(
                    "question {} is already answered: \"{}\"; pass --force to skip it anyway \
                     (the answer stays in the history)",
                    before.id,
                    before.answer.as_deref().unwrap_or("")
                )))
            }
            _ => {}
        }
        let mut q = before.clone();
        q.status = Status::Skipped;
        q.answer = None;
        q.selected = Vec::new();
        q.was_custom = None;
        q.answered_at = None;
        q.skip_reason = reason;
        q.updated_at = now.clone();
        tx.update(&q)?;
        tx.record(&Event::change(EventKind::Skipped, &now, Some(&before), &q))?;
        Ok(q)
    })?;
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "skip",
        "question_id": question.id,
        "question": question,
    })))
}
