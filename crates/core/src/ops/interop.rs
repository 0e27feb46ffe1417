//! Subagent output in, an asking tool's answers back: `ingest` and `import`.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{existing, expire_due, Caller};
use crate::clock;
use crate::error::{Error, Result};
use crate::formats::answers::{self, Answers, ImportFormat, Placed, Reply, Unplaced};
use crate::formats::{self, Source};
use crate::model::{Actor, AnswerInput, Mode, NewQuestion, OnExpiry, Question, Vocabulary};
use crate::store::{Filter, Ledger, Tx};

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Ingested {
    /// The format read; none when nothing was found and no format was named.
    pub format: Option<std::borrow::Cow<'static, str>>,
    pub found: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    pub question_ids: Vec<i64>,
    pub created_ids: Vec<i64>,
    pub questions: Vec<Question>,
}

/// Logs every question of a subagent's output for `stage`, all in one transaction (the
/// same question again is the one on record). No envelope: nothing is written, and no
/// ledger is created for that.
/// When the questions of a call run out of time, and what happens then.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Expiry {
    pub expires_in: Option<std::time::Duration>,
    pub on_expiry: OnExpiry,
}

impl Expiry {
    /// Puts the deadline on `new`; `default` needs a proposed value to answer with.
    pub fn apply(&self, new: &mut NewQuestion, now: &str) -> Result<()> {
        let Some(within) = self.expires_in else {
            return Ok(());
        };
        match (self.on_expiry, new.approval.is_some()) {
            (OnExpiry::Reject, false) => return Err(Error::usage(
                "--on-expiry reject is for approvals (--approval): choose keep, default or skip",
            )),
            (OnExpiry::Default | OnExpiry::Skip, true) => {
                return Err(Error::usage(
                    "an approval's time runs out with --on-expiry keep (it stays open) or reject",
                ))
            }
            _ => {}
        }
        if self.on_expiry == OnExpiry::Default && new.proposed.is_none() {
            return Err(Error::usage(format!(
                "--on-expiry default answers with the proposed value, and \"{}\" has none: give --proposed, or choose --on-expiry skip or keep",
                crate::formats::sanitize(&new.question, false)
            )));
        }
        if let Some(proposed) = new
            .proposed
            .clone()
            .filter(|_| self.on_expiry == OnExpiry::Default)
        {
            // What expiry will record must be an answer `answer` takes, or it would be
            // dropped at expiry without a word.
            let input = crate::model::AnswerInput {
                text: Some(proposed),
                select: Vec::new(),
            };
            if let Err(why) = crate::model::resolve_answer(&new.as_logged(now), &input) {
                // The refusal names the question by its id, which it does not have yet
                // ("question 0"): here it is "it", the question just named.
                let why = why.cli_message();
                let why = why
                    .strip_prefix("question 0 ")
                    .map_or(why.clone(), |rest| format!("it {rest}"));
                return Err(Error::usage(format!(
                    "--on-expiry default would answer \"{}\" with its proposed value, which is not an answer it takes: {why}",
                    crate::formats::sanitize(&new.question, false),
                )));
            }
        }
        let end = clock::after(now, within);
        // Past the year 9999 a timestamp no longer compares as one.
        if end.as_str() > "9999-12-31T23:59:59.999Z"
            || !end.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(Error::usage(format!(
                "--expires-in {}s ends after the year 9999: give a shorter duration",
                within.as_secs()
            )));
        }
        new.expires_at = Some(end);
        new.on_expiry = self.on_expiry;
        Ok(())
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "the door's Ingest request, field for field, and who logs it"
)]
pub fn ingest(
    ledger: &mut Ledger,
    stage: &str,
    text: &str,
    only: Option<Source>,
    expiry: Expiry,
    approval: Option<&crate::model::Approval>,
    key: Option<&str>,
    logged_by: Option<&str>,
) -> Result<Ingested> {
    let envelope = formats::parse_envelope(text, only).map_err(|e| Error::parse(e.0))?;
    let Some(envelope) = envelope else {
        return Ok(Ingested {
            format: only.map(|f| f.name().into()),
            found: false,
            stage: None,
            question_ids: Vec::new(),
            created_ids: Vec::new(),
            questions: Vec::new(),
        });
    };
    let now = clock::now();
    let mut questions = envelope.questions;
    for new in &mut questions {
        new.stage = stage.to_string();
        new.logged_by = logged_by.map(str::to_string);
        if let Some(approval) = approval {
            super::approval::make_approval(new, approval)?;
        }
        expiry.apply(new, &now)?;
    }
    let logged = super::change::log_all_once(ledger, &questions, key)?;
    Ok(Ingested {
        format: Some(envelope.source.name().into()),
        found: true,
        stage: Some(stage.to_string()),
        question_ids: logged.question_ids,
        created_ids: logged.created_ids,
        questions: logged.questions,
    })
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Imported {
    pub format: std::borrow::Cow<'static, str>,
    pub stage: String,
    pub answered_ids: Vec<i64>,
    pub skipped_ids: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declined_ids: Vec<i64>,
    pub questions: Vec<Question>,
}

/// Records the answers an asking tool returned for `stage`, all or nothing, each checked
/// as `answer` checks it. The same answer imported twice changes nothing; a different one
/// for an answered question needs `force`.
pub fn import(
    ledger: &mut Ledger,
    caller: &Caller,
    stage: &str,
    text: &str,
    format: Option<ImportFormat>,
    force: bool,
) -> Result<Imported> {
    let (format, replies) = match answers::parse(text, format).map_err(|e| Error::parse(e.0))? {
        Answers::Replies(_, replies) if replies.len() > formats::MAX_QUESTIONS => {
            return Err(Error::parse(format!(
                "the input holds {} answers; one call records at most {}: split it into several calls; nothing was recorded",
                replies.len(),
                formats::MAX_QUESTIONS
            )))
        }
        Answers::Replies(format, replies) => (format, replies),
        Answers::Cancelled => {
            return Err(Error::cancelled(
                "the person cancelled the questions; nothing was recorded",
            ))
        }
    };
    let mode = Mode::Import { force };
    let actor = caller.actor(&clock::now());
    let (answered_ids, skipped_ids, declined_ids, questions) = ledger.write(|tx| {
        expire_due(tx, &actor.at)?;
        let in_stage = tx.questions(&Filter {
            stage: Some(stage.to_string()),
            ..Filter::default()
        })?;
        let placed = answers::place(&in_stage, stage, format, &replies).map_err(|e| match e {
            Unplaced::NotFound(m) => Error::not_found(m),
            Unplaced::Ambiguous(m) => Error::conflict(m),
        })?;
        let mut answered = Vec::new();
        let mut skipped = Vec::new();
        let mut declined = Vec::new();
        let mut touched: Vec<i64> = Vec::new();
        let mut seen = HashSet::new();
        for reply in &placed {
            let id = reply.id;
            if apply(tx, reply, mode, &actor)? {
                match reply.reply {
                    Reply::Answer { .. } => answered.push(id),
                    Reply::Skip { .. } => skipped.push(id),
                    Reply::Decline { .. } => declined.push(id),
                    Reply::Pending => {}
                }
            }
            if !matches!(reply.reply, Reply::Pending) && seen.insert(id) {
                touched.push(id);
            }
        }
        let questions = tx.questions(&Filter {
            ids: Some(touched),
            ..Filter::default()
        })?;
        Ok((answered, skipped, declined, questions))
    })?;
    Ok(Imported {
        format: format.name().into(),
        stage: stage.to_string(),
        answered_ids,
        skipped_ids,
        declined_ids,
        questions,
    })
}

/// Records one reply; false when there was nothing to change. Earlier replies in the same
/// input may have changed the question, so it is read afresh.
fn apply(tx: &Tx, reply: &Placed, mode: Mode, actor: &Actor) -> Result<bool> {
    let place = |e: Error| Error::new(e.code, format!("{}: {e}; nothing was recorded", reply.path));
    let before = existing(tx, reply.id)?;
    let transition = match &reply.reply {
        Reply::Pending => None,
        Reply::Answer { text, select } => {
            let input = AnswerInput {
                text: text.clone(),
                select: select.clone(),
            };
            before.answer(&input, mode, actor).map_err(place)?
        }
        Reply::Skip { reason } => before.skip(reason.clone(), mode, actor).map_err(place)?,
        Reply::Decline { reason } => {
            let force = matches!(mode, Mode::Import { force: true });
            before.decline(reason, force, actor).map_err(place)?
        }
    };
    match transition {
        Some(t) => {
            tx.apply(&t)?;
            Ok(true)
        }
        None => Ok(false),
    }
}
