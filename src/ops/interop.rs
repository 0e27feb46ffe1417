//! Subagent output in, an asking tool's answers back: `ingest` and `import`.

use std::collections::HashSet;

use serde::Serialize;

use super::existing;
use crate::clock;
use crate::error::{Error, Result};
use crate::formats::answers::{self, Answers, ImportFormat, Imported as Reply, Key};
use crate::formats::ask_user::base_header;
use crate::formats::{self, Source};
use crate::model::{AnswerInput, Mode, NewQuestion, Question, Status};
use crate::store::{Filter, Ledger, Tx};

#[derive(Debug, Serialize)]
pub struct Ingested {
    /// The format read; none when nothing was found and no format was named.
    pub format: Option<&'static str>,
    pub found: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    pub question_ids: Vec<i64>,
    pub created_ids: Vec<i64>,
    pub questions: Vec<Question>,
}

/// Logs every question of a subagent's output for `stage`, all in one transaction (the
/// same question again is the one on record). No envelope: nothing is written, and no
/// ledger is created for that.
pub fn ingest(
    ledger: &mut Ledger,
    stage: &str,
    text: &str,
    only: Option<Source>,
) -> Result<Ingested> {
    let envelope = formats::parse_envelope(text, only).map_err(|e| Error::parse(e.0))?;
    let Some(envelope) = envelope else {
        return Ok(Ingested {
            format: only.map(Source::as_str),
            found: false,
            stage: None,
            question_ids: Vec::new(),
            created_ids: Vec::new(),
            questions: Vec::new(),
        });
    };
    let now = clock::now();
    let logged = ledger.write(|tx| {
        let mut logged = Vec::with_capacity(envelope.questions.len());
        for parsed in &envelope.questions {
            let mut new: NewQuestion = parsed.clone();
            new.stage = stage.to_string();
            match tx.find_same(&new.stage, new.group_name.as_deref(), &new.question)? {
                Some(same) => logged.push((same, false)),
                None => {
                    let q = tx
                        .apply(&new.log(&now))?
                        .ok_or_else(|| Error::db("a logged question was not written"))?;
                    logged.push((q, true));
                }
            }
        }
        Ok(logged)
    })?;
    let mut seen = HashSet::new();
    let mut result = Ingested {
        format: Some(envelope.source.as_str()),
        found: true,
        stage: Some(stage.to_string()),
        question_ids: Vec::new(),
        created_ids: Vec::new(),
        questions: Vec::new(),
    };
    for (q, created) in logged {
        if created {
            result.created_ids.push(q.id);
        }
        if seen.insert(q.id) {
            result.question_ids.push(q.id);
            result.questions.push(q);
        }
    }
    Ok(result)
}

#[derive(Debug, Serialize)]
pub struct Imported {
    pub format: &'static str,
    pub stage: String,
    pub answered_ids: Vec<i64>,
    pub skipped_ids: Vec<i64>,
    pub questions: Vec<Question>,
}

/// Records the answers an asking tool returned for `stage`, all or nothing, each checked
/// as `answer` checks it. The same answer imported twice changes nothing; a different one
/// for an answered question needs `force`.
pub fn import(
    ledger: &mut Ledger,
    stage: &str,
    text: &str,
    format: Option<ImportFormat>,
    force: bool,
) -> Result<Imported> {
    let (format, replies) = match answers::parse(text, format).map_err(|e| Error::parse(e.0))? {
        Answers::Replies(format, replies) => (format, replies),
        Answers::Cancelled => {
            return Err(Error::cancelled(
                "the person cancelled the questions; nothing was recorded",
            ))
        }
    };
    let now = clock::now();
    let mode = Mode::Import { force };
    let (answered_ids, skipped_ids, questions) = ledger.write(|tx| {
        let in_stage = tx.questions(&Filter {
            stage: Some(stage.to_string()),
            ..Filter::default()
        })?;
        let mut answered = Vec::new();
        let mut skipped = Vec::new();
        let mut touched: Vec<i64> = Vec::new();
        let mut seen = HashSet::new();
        for reply in &replies {
            let id = find(&in_stage, stage, reply)?;
            if apply(tx, id, reply, mode, &now)? {
                match reply.reply {
                    answers::Reply::Answer { .. } => answered.push(id),
                    answers::Reply::Skip { .. } => skipped.push(id),
                    answers::Reply::Pending => {}
                }
            }
            if !matches!(reply.reply, answers::Reply::Pending) && seen.insert(id) {
                touched.push(id);
            }
        }
        let questions = tx.questions(&Filter {
            ids: Some(touched),
            ..Filter::default()
        })?;
        Ok((answered, skipped, questions))
    })?;
    Ok(Imported {
        format: format.as_str(),
        stage: stage.to_string(),
        answered_ids,
        skipped_ids,
        questions,
    })
}

/// Records one reply; false when there was nothing to change. Earlier replies in the same
/// input may have changed the question, so it is read afresh.
fn apply(tx: &Tx, id: i64, reply: &Reply, mode: Mode, now: &str) -> Result<bool> {
    let place = |e: Error| Error::new(e.code, format!("{}: {e}; nothing was recorded", reply.path));
    let before = existing(tx, id)?;
    let transition = match &reply.reply {
        answers::Reply::Pending => None,
        answers::Reply::Answer { text, select } => {
            let input = AnswerInput {
                text: text.clone(),
                select: select.clone(),
            };
            before.answer(&input, mode, now).map_err(place)?
        }
        answers::Reply::Skip { reason } => before.skip(reason.clone(), mode, now).map_err(place)?,
    };
    match transition {
        Some(t) => {
            tx.apply(&t)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The question of the stage an imported reply is for.
fn find(in_stage: &[Question], stage: &str, imported: &Reply) -> Result<i64> {
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
