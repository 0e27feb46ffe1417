//! Codex: `request_user_input` through its `PreToolUse` and `PostToolUse` command hooks
//! (the same event shape as Claude Code's: `hook_event_name`, `tool_name`, `tool_input`,
//! `tool_response`, `session_id`, `turn_id`, `cwd`).
//!
//! - The tool's input: `{"questions": [{id, header, question, isOther, isSecret,
//!   options?: [{label, description}]}]}`; its result: `{"answers": {"<id>": {"answers":
//!   ["<label or text>", …]}}}`.
//! - A `PreToolUse` hook cannot fill in a tool's result in Codex: it can only deny the call
//!   with a reason the model reads. So answers from the ledger go back as a deny whose
//!   reason carries them in the tool's own result shape.

use serde_json::{json, Map, Value};

use super::{json_or_string, str_at, Asked, Call, Event, Given, Unreadable};

pub(crate) const TOOL: &str = "request_user_input";

pub(crate) fn parse(event: &Value) -> Result<Event, Unreadable> {
    let name = str_at(event, "hook_event_name")
        .ok_or_else(|| Unreadable("the event has no hook_event_name".into()))?;
    if !matches!(name, "PreToolUse" | "PostToolUse") || str_at(event, "tool_name") != Some(TOOL) {
        return Ok(Event::Ignored);
    }
    let input = event
        .get("tool_input")
        .ok_or_else(|| Unreadable("the event has no tool_input".into()))?;
    let call = call(input)?.named_by(event);
    if name == "PreToolUse" {
        return Ok(Event::Asking(call));
    }
    let response = event.get("tool_response").map(json_or_string);
    let answers = response
        .as_ref()
        .and_then(|r| r.get("answers"))
        .and_then(Value::as_object);
    let chosen = call
        .questions
        .iter()
        .map(|q| {
            let given: Vec<String> = answers
                .and_then(|a| a.get(&q.key))
                .and_then(|a| a.get("answers"))
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(Value::as_str)
                        .map(str::trim)
                        .filter(|a| !a.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            card_answer(&given)
        })
        .collect();
    Ok(Event::Answered(call, chosen))
}

/// What Codex's card puts after the chosen option for the person's own words.
const NOTE: &str = "user_note: ";
/// The choice Codex's card adds to every question's options.
const NONE_OF_THE_ABOVE: &str = "None of the above";

/// One question's answer from the card's list: the chosen labels, and the person's note
/// (`user_note: …`) verbatim. A note beside "None of the above" (or alone) is the answer
/// itself; beside an option, the option stays selected and the note follows its label.
fn card_answer(given: &[String]) -> Option<Given> {
    let notes: Vec<&str> = given
        .iter()
        .filter_map(|a| a.strip_prefix(NOTE))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    let labels: Vec<&str> = given
        .iter()
        .filter(|a| !a.starts_with(NOTE))
        .map(String::as_str)
        .filter(|a| notes.is_empty() || *a != NONE_OF_THE_ABOVE)
        .collect();
    match (labels.is_empty(), notes.is_empty()) {
        (true, true) => None,
        (false, true) => Some(Given::Text(labels.join(", "))),
        (true, false) => Some(Given::Text(notes.join("\n"))),
        (false, false) => Some(Given::Noted {
            labels: labels.into_iter().map(str::to_string).collect(),
            note: notes.join("\n"),
        }),
    }
}

/// The questions of one `request_user_input` input.
pub(crate) fn call(input: &Value) -> Result<Call, Unreadable> {
    let asked = super::questions_of(input, "request_user_input")?;
    let mut questions = Vec::new();
    for (i, (mut new, item)) in asked.into_iter().enumerate() {
        let key = str_at(&item, "id")
            .map(str::to_string)
            .ok_or_else(|| Unreadable(format!("questions[{i}].id is missing")))?;
        // Codex's card takes a note on every question, whatever `isOther` says (0.169.0
        // never sends it): the person's words are an answer the ledger must take too.
        new.allow_freeform = true;
        questions.push(Asked {
            key,
            shown: super::claude_code::shown_labels(&item),
            new,
        });
    }
    Ok(Call {
        input: input.clone(),
        questions,
        session: None,
        id: None,
    })
}

/// The `PreToolUse` reply that answers the call: a deny whose reason carries the answers
/// in the tool's own result shape.
pub(crate) fn reply_answers(call: &Call, answers: &[Vec<String>]) -> Value {
    let by_id: Map<String, Value> = call
        .questions
        .iter()
        .zip(answers)
        .map(|(q, a)| (q.key.clone(), json!({"answers": a})))
        .collect();
    let result = json!({"answers": by_id});
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": format!(
                "The person already answered these questions (through the questions ledger), \
                 so they were not asked again. Their answers, as request_user_input returns \
                 them: {result}"
            ),
        }
    })
}
