use serde_json::json;

use super::{read_input, Outcome, Session};
use crate::cli::{ImportArgs, ImportFormatArg};
use crate::clock;
use crate::error::{Error, Result};
use crate::formats::answers::{self, Answers, ImportFormat, Placed, Reply, Unplaced};
use crate::model::{resolve_answer, AnswerInput, Event, EventKind, Question, Status};
use crate::store::{Access, Filter, Tx};

pub fn run(session: &mut Session, args: ImportArgs) -> Result<Outcome> {
    let text = read_input(args.file.as_deref())?;
    let format = match args.format {
        ImportFormatArg::Auto => None,
        ImportFormatArg::AskUser => Some(ImportFormat::AskUser),
        ImportFormatArg::Vscode => Some(ImportFormat::Vscode),
        ImportFormatArg::PiResult => Some(ImportFormat::PiResult),
        ImportFormatArg::PiPending => Some(ImportFormat::PiPending),
        ImportFormatArg::Map => Some(ImportFormat::Map),
    };
    let (format, replies) = match answers::parse(&text, format).map_err(|e| Error::parse(e.0))? {
        Answers::Replies(format, replies) => (format, replies),
        Answers::Cancelled => {
            return Err(Error::cancelled(
                "the person cancelled the questions; nothing was recorded",
            ))
        }
    };
    let now = clock::now();
    let (stage, force) = (args.stage, args.force);
    let (answered, skipped, touched) = session.store(Access::Write)?.write(|tx| {
        let in_stage = tx.questions(&Filter {
            stage: Some(stage.clone()),
            ..Filter::default()
        })?;
        let mut answered = Vec::new();
        let mut skipped = Vec::new();
        let mut touched: Vec<i64> = Vec::new();
        let placed = answers::place(&in_stage, &stage, format, &replies).map_err(|e| match e {
            Unplaced::NotFound(m) => Error::not_found(m),
            Unplaced::Ambiguous(m) => Error::conflict(m),
        })?;
        for imported in &placed {
            let id = imported.id;
            // Earlier replies in this same input may have changed it: read it afresh.
            let before = super::existing(tx, id)?;
            let changed = apply(tx, &before, imported, force, &now)?;
            match (&imported.reply, changed) {
                (Reply::Answer { .. }, true) => answered.push(id),
                (Reply::Skip { .. }, true) => skipped.push(id),
                _ => {}
            }
            if !matches!(imported.reply, Reply::Pending) && !touched.contains(&id) {
                touched.push(id);
            }
        }
        let questions = tx.questions(&Filter {
            ids: Some(touched.clone()),
            ..Filter::default()
        })?;
        Ok((answered, skipped, questions))
    })?;
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "import",
        "format": format.as_str(),
        "stage": stage,
        "answered_ids": answered,
        "skipped_ids": skipped,
        "questions": touched,
    })))
}

/// Records one reply; false when there was nothing to change.
fn apply(
    tx: &dyn Tx,
    before: &Question,
    imported: &Placed,
    force: bool,
    now: &str,
) -> Result<bool> {
    let place = |e: String| format!("{}: {e}; nothing was recorded", imported.path);
    match &imported.reply {
        Reply::Pending => Ok(false),
        Reply::Answer { text, select } => {
            let input = AnswerInput {
                text: text.clone(),
                select: select.clone(),
            };
            let resolved =
                resolve_answer(before, &input).map_err(|e| Error::invalid_answer(place(e)))?;
            if before.status == Status::Answered {
                if before.answer.as_deref() == Some(resolved.answer.as_str()) {
                    return Ok(false); // the same answer again: importing twice is harmless
                }
                if !force {
                    return Err(Error::conflict(place(
                        before.conflict_message("replace it"),
                    )));
                }
            }
            let q = before.answered(resolved, now);
            tx.update(&q)?;
            tx.record(&Event::change(EventKind::Imported, now, Some(before), &q))?;
            Ok(true)
        }
        Reply::Skip { reason } => {
            match before.status {
                Status::Skipped => return Ok(false),
                Status::Answered if !force => {
                    return Err(Error::conflict(place(before.conflict_message("skip it"))))
                }
                _ => {}
            }
            let q = before.skipped(reason.clone(), now);
            tx.update(&q)?;
            tx.record(&Event::change(EventKind::Skipped, now, Some(before), &q))?;
            Ok(true)
        }
    }
}
