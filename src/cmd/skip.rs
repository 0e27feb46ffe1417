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
                return Err(Error::conflict(before.conflict_message("skip it anyway")))
            }
            _ => {}
        }
        let q = before.skipped(reason.clone(), &now);
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
