//! pi's `ask_user` in print mode: the pending-questions file it writes and reads back.

use serde_json::{json, Value};

use crate::model::Question;

/// The pending-questions file: each question with `answer: null` for the person to fill in.
/// `id` and `stage` are ours, so the filled file imports back without guessing.
pub fn render_pending(stage: &str, now: &str, questions: &[Question]) -> Value {
    let items: Vec<Value> = questions
        .iter()
        .map(|q| {
            let mut options: Vec<String> = q
                .options
                .iter()
                .filter(|o| o.recommended)
                .map(|o| format!("{} (Recommended)", o.label))
                .collect();
            options.extend(
                q.options
                    .iter()
                    .filter(|o| !o.recommended)
                    .map(|o| o.label.clone()),
            );
            let mut item = json!({
                "id": q.id,
                "question": q.question,
                "header": q.header.as_deref().or(q.group_name.as_deref()),
            });
            if !options.is_empty() {
                item["options"] = json!(options);
                item["multiSelect"] = json!(q.multi_select);
            }
            if let Some(p) = &q.proposed {
                item["proposed"] = json!(p);
            }
            item["answer"] = Value::Null;
            item
        })
        .collect();
    json!({
        "sessionId": format!("questions:{stage}"),
        "timestamp": now,
        "stage": stage,
        "questions": items,
    })
}
