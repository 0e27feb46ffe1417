//! Gemini CLI: `ask_user` through its `BeforeTool` and `AfterTool` command hooks.
//!
//! - The tool's input: `{"questions": [{question, header, type: "choice"|"text"|"yesno",
//!   options?: [{label, description}], multiSelect?, placeholder?}]}`; its result (the
//!   `llmContent` of `tool_response`): `{"answers": {"0": "<answer>", …}}`, keyed by the
//!   question's position.
//! - A `BeforeTool` hook cannot fill in a result: `decision: "deny"` with a `reason` is
//!   sent to the model as the tool's error. Answers from the ledger go back that way, in
//!   the tool's own result shape.

use serde_json::{json, Map, Value};

use super::{json_or_string, str_at, Asked, Call, Event, Unreadable};
use questions_core::model::QuestionOption;

pub(crate) const TOOL: &str = "ask_user";

pub(crate) fn parse(event: &Value) -> Result<Event, Unreadable> {
    let name = str_at(event, "hook_event_name")
        .ok_or_else(|| Unreadable("the event has no hook_event_name".into()))?;
    if !matches!(name, "BeforeTool" | "AfterTool") || str_at(event, "tool_name") != Some(TOOL) {
        return Ok(Event::Ignored);
    }
    let input = event
        .get("tool_input")
        .ok_or_else(|| Unreadable("the event has no tool_input".into()))?;
    let call = call(input)?.named_by(event);
    if name == "BeforeTool" {
        return Ok(Event::Asking(call));
    }
    let content = event
        .get("tool_response")
        .and_then(|r| r.get("llmContent"))
        .map(json_or_string);
    let answers = content
        .as_ref()
        .and_then(|c| c.get("answers"))
        .and_then(Value::as_object);
    let chosen = super::answered_texts(&call, answers);
    Ok(Event::Answered(call, chosen))
}

/// The questions of one `ask_user` input.
pub(crate) fn call(input: &Value) -> Result<Call, Unreadable> {
    let asked = super::questions_of(input, "ask_user")?;
    let questions = asked
        .into_iter()
        .enumerate()
        .map(|(i, (mut new, item))| {
            let mut shown = super::claude_code::shown_labels(&item);
            if str_at(&item, "type") == Some("yesno") && new.options.is_empty() {
                // The card offers Yes and No (and Other) on its own.
                shown = vec!["Yes".to_string(), "No".to_string()];
                new.options = shown
                    .iter()
                    .map(|label| QuestionOption {
                        label: label.clone(),
                        description: None,
                        recommended: false,
                    })
                    .collect();
                new.allow_freeform = true;
            }
            Asked {
                key: i.to_string(),
                shown,
                new,
            }
        })
        .collect();
    Ok(Call {
        input: input.clone(),
        questions,
        session: None,
        id: None,
    })
}

/// The `BeforeTool` reply that answers the call: a deny whose reason carries the answers
/// in the tool's own result shape.
pub(crate) fn reply_answers(call: &Call, answers: &[Vec<String>]) -> Value {
    let by_position: Map<String, Value> = call
        .questions
        .iter()
        .zip(answers)
        .map(|(q, a)| (q.key.clone(), Value::String(a.join(", "))))
        .collect();
    let result = json!({"answers": by_position});
    json!({
        "decision": "deny",
        "reason": format!(
            "The person already answered these questions (through the questions ledger), so \
             they were not asked again. Their answers, as ask_user returns them: {result}"
        ),
    })
}
