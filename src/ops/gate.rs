//! The gate and what a re-invoked subagent reads back.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use super::select;
use crate::error::Result;
use crate::model::{Gate, Question, Status};
use crate::store::{Filter, Ledger};

/// How often a waiting check looks again: a person answering sees the gate open within this.
const POLL: Duration = Duration::from_millis(200);

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Wait {
    /// Look once.
    No,
    /// Look again until the gate passes, or until the deadline (none: forever).
    Until(Option<Duration>),
}

#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub stage: Option<String>,
    pub ids: Option<Vec<i64>>,
    pub wait: Wait,
}

/// The gate's document. `pending` holds the questions themselves (a large stage can hold
/// hundreds), serialized straight from the rows.
#[derive(Debug, Serialize)]
pub struct GateReport {
    pub gate: Gate,
    pub stage: Option<String>,
    pub total: usize,
    pub pending_count: usize,
    pub pending: Vec<Question>,
    pub optional_pending: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
}

/// The stage gate: fails while a required question of the stage (or of `ids`) is pending.
pub fn check(ledger: &mut Ledger, req: &CheckRequest) -> Result<GateReport> {
    let deadline = match req.wait {
        Wait::Until(Some(limit)) => Some(Instant::now() + limit),
        _ => None,
    };
    loop {
        let considered = ledger.read(|tx| select(tx, req.stage.as_deref(), req.ids.as_deref()))?;
        let gate = Gate::over(&considered);
        if gate.passes() || req.wait == Wait::No {
            return Ok(report(req.stage.clone(), considered, false));
        }
        let now = Instant::now();
        let pause = match deadline {
            Some(end) if now >= end => return Ok(report(req.stage.clone(), considered, true)),
            Some(end) => POLL.min(end - now),
            None => POLL,
        };
        std::thread::sleep(pause);
    }
}

fn report(stage: Option<String>, considered: Vec<Question>, timed_out: bool) -> GateReport {
    let total = considered.len();
    let optional_pending = considered
        .iter()
        .filter(|q| !q.required && q.status == Status::Pending)
        .count();
    let pending: Vec<Question> = considered
        .into_iter()
        .filter(Question::blocks_gate)
        .collect();
    GateReport {
        gate: if pending.is_empty() {
            Gate::Pass
        } else {
            Gate::Fail
        },
        stage,
        total,
        pending_count: pending.len(),
        pending,
        optional_pending,
        timed_out,
    }
}

/// Where an `answers` value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueSource {
    Answer,
    Proposed,
    None,
}

#[derive(Debug, Serialize)]
pub struct AnswerDetail {
    pub id: i64,
    pub key: String,
    pub value: Option<String>,
    pub source: ValueSource,
    pub status: Status,
    pub required: bool,
}

#[derive(Debug, Serialize)]
pub struct AnswersReport {
    pub stage: String,
    pub gate: Gate,
    pub answered: Map<String, Value>,
    pub details: Vec<AnswerDetail>,
}

/// What a re-invoked subagent needs: `answered[key]` for each question, keyed as the
/// subagent named it (group, else header, else question text).
pub fn answers(ledger: &mut Ledger, stage: &str) -> Result<AnswersReport> {
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
        let (value, source) = match (q.status, &q.answer, &q.proposed) {
            (Status::Answered, Some(a), _) => (Some(a.clone()), ValueSource::Answer),
            (_, _, Some(p)) => (Some(p.clone()), ValueSource::Proposed),
            _ => (None, ValueSource::None),
        };
        if let Some(v) = &value {
            answered.insert(key.clone(), Value::String(v.clone()));
        }
        details.push(AnswerDetail {
            id: q.id,
            key,
            value,
            source,
            status: q.status,
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
