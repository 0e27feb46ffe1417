use serde_json::{json, Map, Value};

use super::{Outcome, Session};
use crate::cli::AnswersArgs;
use crate::error::Result;
use crate::model::{Question, Status};
use crate::store::{Access, Filter};

/// What a re-invoked subagent needs: `answered[key]` for each question, keyed as the
/// subagent named it (group, else header, else question text).
pub fn run(session: &mut Session, args: AnswersArgs) -> Result<Outcome> {
    let filter = Filter {
        stage: Some(args.stage.clone()),
        ..Filter::default()
    };
    let questions = session
        .store(Access::Read)?
        .read(|tx| tx.questions(&filter))?;
    let mut answered = Map::new();
    let mut details = Vec::with_capacity(questions.len());
    let mut used: Vec<String> = Vec::new();
    for q in &questions {
        let key = unique_key(q, &mut used);
        let (value, source) = match (q.status, &q.answer, &q.proposed) {
            (Status::Answered, Some(a), _) => (Some(a.clone()), "answer"),
            (_, _, Some(p)) => (Some(p.clone()), "proposed"),
            _ => (None, "none"),
        };
        if let Some(v) = &value {
            answered.insert(key.clone(), json!(v));
        }
        details.push(json!({
            "id": q.id,
            "key": key,
            "value": value,
            "source": source,
            "status": q.status,
            "required": q.required,
        }));
    }
    let passes = !questions.iter().any(Question::blocks_gate);
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "answers",
        "stage": args.stage,
        "gate": if passes { "pass" } else { "fail" },
        "answered": Value::Object(answered),
        "details": details,
    })))
}

/// Group, else header, else question text; a repeated key gets " (2)", " (3)", ….
fn unique_key(q: &Question, used: &mut Vec<String>) -> String {
    let base = q
        .group_name
        .as_deref()
        .or(q.header.as_deref())
        .unwrap_or(&q.question)
        .to_string();
    let mut key = base.clone();
    let mut n = 1;
    while used.contains(&key) {
        n += 1;
        key = format!("{base} ({n})");
    }
    used.push(key.clone());
    key
}
