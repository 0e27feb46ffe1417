//! The form a client shows the person (MCP elicitation): a flat object with one property
//! per question, of the primitive kinds the protocol allows, and the answers read back.

use rmcp::model::ElicitationSchema;
use serde_json::{json, Map, Value};

use questions_core::error::{Error, Result};
use questions_core::model::{AnswerInput, Question};
use questions_core::ops::Choice;

/// The property that holds question `id`'s answer.
fn key(id: i64) -> String {
    format!("q{id}")
}

/// The property beside the choice for an answer in the person's own words, on a question
/// with options that allows one.
fn own_key(id: i64) -> String {
    format!("q{id}_own")
}

/// Options and free text both: the form has a choice and a text field.
fn has_own_words(q: &Question) -> bool {
    !q.options.is_empty() && q.allow_freeform
}

/// The message and the requested schema for `questions` (all pending).
pub(super) fn build(questions: &[Question]) -> Result<(String, ElicitationSchema)> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for q in questions {
        properties.insert(key(q.id), property(q));
        if has_own_words(q) {
            let title = q.header.clone().unwrap_or_else(|| q.question.clone());
            properties.insert(
                own_key(q.id),
                json!({
                    "type": "string",
                    "title": format!("{title}: in your own words"),
                    "description": "Instead of a choice above (or besides those chosen, \
                                    where several may be)",
                }),
            );
        }
        if q.required && !has_own_words(q) {
            required.push(Value::String(key(q.id)));
        }
    }
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
    });
    let schema = serde_json::from_value(schema)
        .map_err(|e| Error::db(format!("internal error: a form the SDK refuses ({e})")))?;
    let message = match questions {
        [one] => one.question.clone(),
        many => format!("{} questions need your answer", many.len()),
    };
    Ok((message, schema))
}

fn property(q: &Question) -> Value {
    let mut p = Map::new();
    let title = q.header.clone().unwrap_or_else(|| q.question.clone());
    let mut description = if q.header.is_some() {
        q.question.clone()
    } else {
        String::new()
    };
    if let Some(context) = &q.context {
        if !description.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(context);
    }
    // The proposal is shown, never filled in: a form accepted unread records nothing the
    // person did not choose.
    if let Some(proposed) = q.proposed.as_deref().filter(|p| !p.trim().is_empty()) {
        if !description.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(&format!("Proposed: {proposed}"));
    }
    p.insert("title".into(), json!(title));
    if !description.is_empty() {
        p.insert("description".into(), json!(description));
    }
    let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
    if q.options.is_empty() {
        p.insert("type".into(), json!("string"));
    } else if q.multi_select {
        p.insert("type".into(), json!("array"));
        p.insert("items".into(), json!({"type": "string", "enum": labels}));
    } else {
        p.insert("type".into(), json!("string"));
        let one_of: Vec<Value> = q
            .options
            .iter()
            .map(|o| {
                let title = match &o.description {
                    Some(d) if !d.trim().is_empty() => format!("{} — {}", o.label, d.trim()),
                    _ => o.label.clone(),
                };
                json!({"const": o.label, "title": title})
            })
            .collect();
        p.insert("oneOf".into(), Value::Array(one_of));
    }
    Value::Object(p)
}

/// What the person chose for each question, from the accepted form's content: a missing
/// or empty value leaves the question pending.
pub(super) fn read(questions: &[Question], content: Option<&Value>) -> Result<Vec<(i64, Choice)>> {
    let empty = Map::new();
    let content = match content {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(Error::invalid_answer(format!(
                "the form came back as {other}, not an object of answers; nothing was recorded"
            )))
        }
    };
    let mut chosen = Vec::with_capacity(questions.len());
    for q in questions {
        let choice = match content.get(&key(q.id)) {
            None | Some(Value::Null) => Choice::Leave,
            Some(Value::String(s)) if s.trim().is_empty() => Choice::Leave,
            Some(Value::String(s)) => Choice::Answer(AnswerInput {
                text: Some(s.clone()),
                select: Vec::new(),
            }),
            Some(Value::Array(items)) if items.is_empty() => Choice::Leave,
            Some(Value::Array(items)) => Choice::Answer(AnswerInput {
                text: None,
                select: items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect(),
            }),
            Some(other) => Choice::Answer(AnswerInput {
                text: Some(other.to_string()),
                select: Vec::new(),
            }),
        };
        let own = match content.get(&own_key(q.id)) {
            Some(Value::String(s)) if has_own_words(q) && !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        };
        let choice = match (choice, own) {
            (choice, None) => choice,
            // Their own words stand in for a single choice, and join several.
            (Choice::Answer(mut input), Some(text)) if q.multi_select => {
                input.select.extend(input.text.take());
                input.text = Some(text);
                Choice::Answer(input)
            }
            (_, Some(text)) => Choice::Answer(AnswerInput {
                text: Some(text),
                select: Vec::new(),
            }),
        };
        chosen.push((q.id, choice));
    }
    Ok(chosen)
}
