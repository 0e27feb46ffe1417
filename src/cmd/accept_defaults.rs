use serde_json::json;

use super::{Outcome, Session};
use crate::cli::AcceptDefaultsArgs;
use crate::clock;
use crate::error::Result;
use crate::model::{resolve_answer, AnswerInput, Event, EventKind, Status};
use crate::store::{Access, Filter};

/// Answers pending questions with their proposed values, as the person would by accepting
/// every default; each is marked `defaulted` in the history.
pub fn run(session: &mut Session, args: AcceptDefaultsArgs) -> Result<Outcome> {
    let now = clock::now();
    let filter = Filter {
        stage: Some(args.stage.clone()),
        status: Some(Status::Pending),
        ..Filter::default()
    };
    let (done, warnings) = session.store(Access::Write)?.write(|tx| {
        let mut done = Vec::new();
        let mut warnings = Vec::new();
        for before in tx.questions(&filter)? {
            if before.required && !args.include_required {
                continue;
            }
            let Some(proposed) = before.proposed.clone() else {
                continue;
            };
            let input = AnswerInput {
                text: Some(proposed),
                select: Vec::new(),
            };
            match resolve_answer(&before, &input) {
                Ok(mut resolved) => {
                    resolved.was_custom = Some(false);
                    let q = before.answered(resolved, &now);
                    tx.update(&q)?;
                    tx.record(&Event::change(
                        EventKind::Defaulted,
                        &now,
                        Some(&before),
                        &q,
                    ))?;
                    done.push(q);
                }
                Err(why) => warnings.push(format!("question {} left pending: {why}", before.id)),
            }
        }
        Ok((done, warnings))
    })?;
    let ids: Vec<i64> = done.iter().map(|q| q.id).collect();
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "accept-defaults",
        "stage": args.stage,
        "answered_ids": ids,
        "questions": done,
        "warnings": warnings,
    })))
}
