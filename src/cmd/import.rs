use serde_json::json;

use super::{read_input, Outcome, Session};
use crate::cli::{ImportArgs, ImportFormatArg};
use crate::clock;
use crate::error::{Error, Result};
use crate::formats::answers::{self, Answers, ImportFormat, Imported, Key, Reply};
use crate::formats::ask_user::base_header;
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
        for imported in &replies {
            let id = find(&in_stage, &stage, imported)?;
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

/// The question of the stage an imported reply is for.
fn find(in_stage: &[Question], stage: &str, imported: &Imported) -> Result<i64> {
    let by = |pred: &dyn Fn(&Question) -> bool| -> Vec<&Question> {
        in_stage.iter().filter(|q| pred(q)).collect()
    };
    let matches = match &imported.key {
        Key::Id(id) => by(&|q| q.id == *id),
        Key::Text(text) => by(&|q| q.question.trim() == text.trim()),
        Key::Header(header) => {
            let header = header.trim();
            // askQuestions headers made unique by render end in " #<id>".
            let tagged = header
                .rsplit_once(" #")
                .and_then(|(_, id)| id.parse::<i64>().ok());
            match tagged {
                Some(id) => by(&|q| q.id == id),
                None => by(&|q| base_header(q) == header || q.question.trim() == header),
            }
        }
    };
    // Where a text matches several questions, the pending one is meant.
    let pending: Vec<&&Question> = matches
        .iter()
        .filter(|q| q.status == Status::Pending)
        .collect();
    match (matches.len(), pending.len()) {
        (1, _) => Ok(matches[0].id),
        (0, _) => Err(Error::not_found(format!(
            "{}: no question of stage '{stage}' matches it (was the stage cleared?); nothing was recorded",
            imported.path
        ))),
        (_, 1) => Ok(pending[0].id),
        _ => Err(Error::conflict(format!(
            "{}: matches {} questions of stage '{stage}'; import by id with --format map; nothing was recorded",
            imported.path,
            matches.len()
        ))),
    }
}

/// Records one reply; false when there was nothing to change.
fn apply(
    tx: &dyn Tx,
    before: &Question,
    imported: &Imported,
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
