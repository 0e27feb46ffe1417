//! The gate and what a re-invoked subagent reads back.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{select, settle, Step};
use crate::clock;
use crate::error::Result;
use crate::model::{ApprovalState, Channel, Gate, Question, Status};
use crate::store::{Filter, Ledger};

/// The longest a waiting check goes without reading again (see `follow`).
const POLL: Duration = super::READ_AGAIN_AFTER;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wait {
    /// Look once.
    No,
    /// Look again until the gate passes, or until the deadline (none: forever).
    Until(Option<Duration>),
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CheckRequest {
    pub stage: Option<String>,
    pub ids: Option<Vec<i64>>,
    /// A stage that has never held a question is `not_found` rather than a pass.
    pub strict: bool,
    pub wait: Wait,
    /// A wait on a stage that has never held a question passes at once, as a look does,
    /// instead of waiting for the stage's questions to be logged and settled.
    pub allow_unknown_stage: bool,
    /// The id of the ledger the `ids` were read from, when the caller waits across calls
    /// (a server holding a wait looks once a call): another ledger there now is a
    /// `conflict`, never a gate over questions that only share the ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<String>,
}

/// The gate's document. `pending` holds the questions themselves (a large stage can hold
/// hundreds), serialized straight from the rows. It reads back from the document (what a
/// server's gate answered over https://).
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GateReport {
    pub gate: Gate,
    pub stage: Option<String>,
    pub total: usize,
    pub pending_count: usize,
    pub pending: Vec<Question>,
    pub optional_pending: usize,
    /// Required questions the person declined to answer as asked: they hold the gate
    /// until rephrased (a new question), answered or skipped.
    pub declined: Vec<Declined>,
    /// A pending question's time is up and it is kept pending (`--on-expiry keep`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// Each approval among the questions: its votes, who may still vote, how many more
    /// approvals it needs (or who rejected it and why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<super::ApprovalReport>,
    /// With a stage: whether it has ever held a question (a typo never has).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_stage: Option<bool>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// For an unknown stage: the known stages nearest to its name, nearest first (perhaps
    /// it was a typo of one).
    #[serde(
        default,
        rename = "nearest_stages",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub nearest: Vec<String>,
}

/// A declined question as the gate reports it.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Declined {
    pub id: i64,
    pub question: String,
    pub reason: Option<String>,
}

/// The stage gate: fails while a required question of the stage (or of `ids`) is pending
/// or declined. Expiries that are due are applied first.
///
/// A wait fails closed: a stage that has never held a question (a typo, or a gate that
/// runs before the agent logged its question) is waited for until it holds questions and
/// they are settled, unless `allow_unknown_stage`. A wait whose ledger is reset or
/// replaced under it goes on into the new ledger only when that still knows what was
/// waited for: ids never (they named the questions of the ledger that is gone), a stage
/// only if it holds questions there; otherwise it ends with a `conflict`.
pub fn check(ledger: &mut Ledger, req: &CheckRequest) -> Result<GateReport> {
    if let (Some(expected), Some(_)) = (&req.ledger, &req.ids) {
        if ledger.id()?.as_ref() != Some(expected) {
            return Err(crate::error::Error::conflict(format!(
                "the ledger {} was reset or replaced while check waited: the ids given \
                 named questions of the ledger that is gone",
                ledger.location().display()
            )));
        }
    }
    let deadline = match req.wait {
        Wait::Until(Some(limit)) => Some(Instant::now() + limit),
        _ => None,
    };
    let waits = req.wait != Wait::No;
    // Which ledger the last round read (a waiting check asks it in the same snapshot, so
    // a ledger that replaced its own is seen even where the location's watch missed it),
    // and whether the stage was known there.
    let mut last_id: Option<Option<String>> = None;
    let mut stage_was_known = false;
    super::follow(ledger, deadline, POLL, |ledger, seen| {
        let read = settle(ledger).and_then(|_| {
            ledger.read(|tx| {
                let considered = select(tx, req.stage.as_deref(), req.ids.as_deref())?;
                let known = match req.stage.as_deref() {
                    None => None,
                    Some(_) if !considered.is_empty() => Some(true),
                    Some(stage) => Some(tx.stage_known(stage)?),
                };
                let approvals = super::approval::reports(tx, &considered)?;
                let id = if waits { Some(tx.ledger_id()?) } else { None };
                // For a stage never heard of: the known ones it may have been meant to be.
                let names = match known {
                    Some(false) => tx.stage_names()?,
                    _ => Vec::new(),
                };
                Ok((considered, known, approvals, id, names))
            })
        });
        let mut replaced = seen.replaced(ledger);
        if let Ok((_, _, _, Some(id), _)) = &read {
            replaced |= last_id.as_ref().is_some_and(|last| last != id);
            last_id = Some(id.clone());
        }
        // Ids are not followed into a ledger that replaced this one (reset): they named
        // questions of the ledger that is gone (whatever the new one says of them).
        if replaced && req.ids.is_some() {
            return Err(crate::error::Error::conflict(format!(
                "the ledger {} was reset or replaced while check waited: the ids given \
                 named questions of the ledger that is gone",
                ledger.location().display()
            )));
        }
        let (considered, known, approvals, _, names) = read?;
        if replaced && stage_was_known && known == Some(false) {
            // Nor is a stage the new ledger has never heard of: what was waited for is gone,
            // and waiting on would pass on questions nobody logged again, or hang.
            return Err(crate::error::Error::conflict(format!(
                "the ledger {} was reset or replaced while check waited: stage '{}' held \
                 questions in the ledger that is gone, and has never held one in the ledger \
                 there now; log its questions again",
                ledger.location().display(),
                req.stage.as_deref().unwrap_or_default()
            )));
        }
        stage_was_known |= known == Some(true);
        if known == Some(false) && (!waits || req.allow_unknown_stage || req.strict) {
            return unknown_stage(ledger, req, considered, &names).map(Step::Done);
        }
        let gate = Gate::over(&considered);
        // A rejected approval never passes: waiting longer cannot help. Nor can it for
        // questions named by id, none pending, one declined: a question asked again is
        // another id, so only an answer forced over the decline would change the gate.
        let declined_for_good = req.ids.is_some()
            && !considered
                .iter()
                .any(|q| q.required && q.state.status == Status::Pending)
            && considered
                .iter()
                .any(|q| q.required && q.state.status == Status::Declined);
        let settled_fail =
            declined_for_good || approvals.iter().any(|a| a.state == ApprovalState::Rejected);
        // A stage never heard of does not pass a wait: nothing in it was settled.
        let passes = gate.passes() && known != Some(false);
        let done = passes || !waits || settled_fail;
        // Kept for the deadline: then it is the report, and it says the wait timed out.
        let mut report = report(req.stage.clone(), considered, known, !done);
        report.approvals = approvals;
        if known == Some(false) {
            report.gate = Gate::Fail;
            report.nearest = nearest(req.stage.as_deref().unwrap_or_default(), &names);
        }
        Ok(if done {
            Step::Done(report)
        } else {
            Step::Wait(report)
        })
    })
}

/// A stage that has never held a question: it passes, as in the uwf protocol, saying so
/// and naming the stages it may have been meant to be; with `strict` it is `not_found`.
fn unknown_stage(
    ledger: &Ledger,
    req: &CheckRequest,
    considered: Vec<Question>,
    names: &[String],
) -> Result<GateReport> {
    let stage = req.stage.clone().unwrap_or_default();
    let nearest = nearest(&stage, names);
    if req.strict {
        let mut message = format!(
            "stage '{stage}' has never held a question in the ledger {}",
            ledger.location().display()
        );
        if !nearest.is_empty() {
            message.push_str(&format!("; did you mean {}?", quoted(&nearest)));
        }
        return Err(crate::error::Error::not_found(message));
    }
    let mut report = report(Some(stage), considered, Some(false), false);
    report.nearest = nearest;
    Ok(report)
}

/// 'a', 'b' or 'c'
pub fn quoted(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Up to three names within two edits of `name`, nearest first.
fn nearest(name: &str, names: &[String]) -> Vec<String> {
    let wanted = name.to_lowercase();
    let limit = 2;
    let mut close: Vec<(usize, &String)> = names
        .iter()
        .map(|n| (edits(&wanted, &n.to_lowercase()), n))
        .filter(|(d, _)| *d <= limit)
        .collect();
    close.sort();
    close.into_iter().take(3).map(|(_, n)| n.clone()).collect()
}

/// Levenshtein distance, by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn report(
    stage: Option<String>,
    considered: Vec<Question>,
    known_stage: Option<bool>,
    timed_out: bool,
) -> GateReport {
    let total = considered.len();
    let now = clock::now();
    let optional_pending = considered
        .iter()
        .filter(|q| !q.required && q.state.status == Status::Pending)
        .count();
    let expired = considered.iter().any(|q| q.is_expired(&now));
    let declined: Vec<Declined> = considered
        .iter()
        .filter(|q| q.required && q.state.status == Status::Declined)
        .map(|q| Declined {
            id: q.id,
            question: q.question.clone(),
            reason: q.state.decline_reason.clone(),
        })
        .collect();
    let pending: Vec<Question> = considered
        .into_iter()
        .filter(|q| q.required && q.state.status == Status::Pending)
        .collect();
    GateReport {
        gate: if pending.is_empty() && declined.is_empty() {
            Gate::Pass
        } else {
            Gate::Fail
        },
        stage,
        total,
        pending_count: pending.len(),
        pending,
        optional_pending,
        declined,
        expired,
        known_stage,
        timed_out,
        approvals: Vec::new(),
        nearest: Vec::new(),
    }
}

/// Where an `answers` value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ValueSource {
    Answer,
    Proposed,
    /// The person declined to answer it as asked; the value is the reason.
    Declined,
    /// Nobody answered: time ran out and the proposed value was taken (`--on-expiry
    /// default`). Never passed off as a person's answer.
    Expiry,
    None,
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AnswerDetail {
    pub id: i64,
    pub key: String,
    pub value: Option<String>,
    pub source: ValueSource,
    pub status: Status,
    pub required: bool,
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AnswersReport {
    pub stage: String,
    pub gate: Gate,
    pub answered: Map<String, Value>,
    pub details: Vec<AnswerDetail>,
}

/// What a re-invoked subagent needs: `answered[key]` for each question, keyed as the
/// subagent named it (group, else header, else question text).
pub fn answers(ledger: &mut Ledger, stage: &str) -> Result<AnswersReport> {
    settle(ledger)?;
    let filter = Filter {
        stage: Some(stage.to_string()),
        ..Filter::default()
    };
    let questions = ledger.read(|tx| tx.questions(&filter))?;
    let mut answered = Map::new();
    let mut details = Vec::with_capacity(questions.len());
    let mut used = Keys::default();
    for q in &questions {
        let key = unique_key(q, &mut used);
        let (value, source) = match (q.state.status, &q.state.answer, &q.proposed) {
            (Status::Answered, Some(a), _) if q.state.channel == Some(Channel::Expiry) => {
                (Some(a.clone()), ValueSource::Expiry)
            }
            (Status::Answered, Some(a), _) => (Some(a.clone()), ValueSource::Answer),
            (Status::Declined, _, _) => (q.state.decline_reason.clone(), ValueSource::Declined),
            (_, _, Some(p)) => (Some(p.clone()), ValueSource::Proposed),
            _ => (None, ValueSource::None),
        };
        if source == ValueSource::Declined {
            // Not an answer: what the subagent needs to ask it another way.
            let reason = Value::String(value.clone().unwrap_or_default());
            answered.insert(
                key.clone(),
                Value::Object([("declined".to_string(), reason)].into_iter().collect()),
            );
        } else if let Some(v) = &value {
            answered.insert(key.clone(), Value::String(v.clone()));
        }
        details.push(AnswerDetail {
            id: q.id,
            key,
            value,
            source,
            status: q.state.status,
            required: q.required,
        });
    }
    Ok(AnswersReport {
        stage: stage.to_string(),
        gate: Gate::over(&questions),
        answered,
        details,
    })
}

/// Keys handed out so far, and for each base the last number it was given.
#[derive(Default)]
struct Keys {
    used: std::collections::HashSet<String>,
    last: std::collections::HashMap<String, usize>,
}

/// Group, else header, else question text; a repeated key gets " (2)", " (3)", ….
fn unique_key(q: &Question, keys: &mut Keys) -> String {
    let base = q
        .group_name
        .as_deref()
        .or(q.header.as_deref())
        .unwrap_or(&q.question);
    let mut key = base.to_string();
    let mut n = keys.last.get(base).copied().unwrap_or(1);
    while keys.used.contains(&key) {
        n += 1;
        key = format!("{base} ({n})");
    }
    keys.last.insert(base.to_string(), n);
    keys.used.insert(key.clone());
    key
}

/// Waits until none of `ids` is pending, or `within` passes: an answer, a skip and a
/// decline each end the wait (a decline is not waited out), and a reset under it is the
/// error it is for `named`. The questions as the last read found them: the caller uses
/// that read, it does not read again.
pub fn wait_settled(ledger: &mut Ledger, ids: &[i64], within: Duration) -> Result<Vec<Question>> {
    let deadline = std::time::Instant::now() + within;
    super::follow(ledger, Some(deadline), POLL, |ledger, _| {
        let now = super::named(ledger, None, Some(ids))?;
        Ok(if now.iter().any(|q| q.state.status == Status::Pending) {
            super::Step::Wait(now)
        } else {
            super::Step::Done(now)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_count_insertions_deletions_and_substitutions() {
        assert_eq!(edits("intake", "intake"), 0);
        assert_eq!(edits("intkae", "intake"), 2);
        assert_eq!(edits("intak", "intake"), 1);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("désign", "design"), 1);
    }

    #[test]
    fn the_nearest_names_come_first_and_far_ones_not_at_all() {
        let names: Vec<String> = ["intake", "design", "release", "intakes"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(nearest("Intake", &names), vec!["intake", "intakes"]);
        assert_eq!(nearest("desgin", &names), vec!["design"]);
        assert!(nearest("zzzzzz", &names).is_empty());
        assert_eq!(quoted(&names[..2]), "'intake' or 'design'");
    }
}
