use serde_json::json;

use super::{read_input, Outcome, Session};
use crate::cli::{IngestArgs, IngestFormat};
use crate::clock;
use crate::error::{Error, Result};
use crate::formats::{self, Source};
use crate::model::{Event, EventKind};
use crate::store::Access;

pub fn run(session: &mut Session, args: IngestArgs) -> Result<Outcome> {
    let text = read_input(args.file.as_deref())?;
    let only = match args.format {
        IngestFormat::Auto => None,
        IngestFormat::Uwf => Some(Source::Uwf),
        IngestFormat::OpenQuestions => Some(Source::OpenQuestions),
        IngestFormat::AskUser => Some(Source::AskUser),
    };
    let envelope = formats::parse_envelope(&text, only).map_err(|e| Error::parse(e.0))?;
    let Some(envelope) = envelope else {
        // Nothing to ask: the subagent is done. No ledger is created for that.
        return Ok(Outcome::ok(json!({
            "ok": true,
            "procedure": "ingest",
            "format": only.map(Source::as_str),
            "found": false,
            "question_ids": [],
            "created_ids": [],
            "questions": [],
        })));
    };
    let now = clock::now();
    let stage = args.stage;
    let logged = session.store(Access::Write)?.write(|tx| {
        let mut logged = Vec::with_capacity(envelope.questions.len());
        for parsed in &envelope.questions {
            let mut new = parsed.clone();
            new.stage = stage.clone();
            match tx.find_same(&new.stage, new.group_name.as_deref(), &new.question)? {
                Some(same) => logged.push((same, false)),
                None => {
                    let q = tx.insert(&new, &now)?;
                    tx.record(&Event::change(EventKind::Logged, &now, None, &q))?;
                    logged.push((q, true));
                }
            }
        }
        Ok(logged)
    })?;
    let mut question_ids: Vec<i64> = Vec::new();
    let mut questions = Vec::new();
    for (q, _) in &logged {
        if !question_ids.contains(&q.id) {
            question_ids.push(q.id);
            questions.push(q);
        }
    }
    let created_ids: Vec<i64> = logged
        .iter()
        .filter(|(_, c)| *c)
        .map(|(q, _)| q.id)
        .collect();
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "ingest",
        "format": envelope.source.as_str(),
        "found": true,
        "stage": stage,
        "question_ids": question_ids,
        "created_ids": created_ids,
        "questions": questions,
    })))
}
