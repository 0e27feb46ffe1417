//! Claude Code: `AskUserQuestion` through `PreToolUse` and `PostToolUse` command hooks,
//! and `Stop`.
//!
//! - `PreToolUse` input: `{"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion",
//!   "tool_input": {"questions": [{question, header, options: [{label, description}],
//!   multiSelect}]}, "session_id", "tool_use_id", "transcript_path", "cwd", …}`. The reply
//!   that answers the tool without showing its card: `permissionDecision: "allow"` with
//!   `updatedInput` the same input plus `answers: {"<question text>": "<answer>"}`, a
//!   multi-select answer being its labels joined by ", ".
//! - `PostToolUse` adds `tool_response: {questions, answers}`: what the person chose.
//! - `Stop` carries `transcript_path` and `stop_hook_active`; `decision: "block"` with a
//!   `reason` keeps the turn going, the reason handed to the agent.

use serde_json::{json, Map, Value};

use super::{str_at, Asked, Call, Event, Stop, Unreadable};

/// The tool's name in Claude Code.
pub(crate) const TOOL: &str = "AskUserQuestion";

pub(crate) fn parse(event: &Value) -> Result<Event, Unreadable> {
    let name = str_at(event, "hook_event_name")
        .ok_or_else(|| Unreadable("the event has no hook_event_name".into()))?;
    match name {
        "PreToolUse" | "PostToolUse" if str_at(event, "tool_name") == Some(TOOL) => {
            let input = event
                .get("tool_input")
                .ok_or_else(|| Unreadable("the event has no tool_input".into()))?;
            let call = call(input)?.named_by(event);
            if name == "PreToolUse" {
                return Ok(Event::Asking(call));
            }
            // What the person chose: the tool's response alone. The input's `answers` is
            // what the model (or a hook) put in the call, never the person's word.
            let answers = event
                .get("tool_response")
                .and_then(|r| r.get("answers"))
                .and_then(Value::as_object);
            let chosen = super::answered_texts(&call, answers);
            Ok(Event::Answered(call, chosen))
        }
        "Stop" | "SubagentStop" => Ok(Event::Stopping(Stop {
            session: str_at(event, "session_id").map(str::to_string),
            transcript: str_at(event, "transcript_path").map(Into::into),
            active: event
                .get("stop_hook_active")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })),
        _ => Ok(Event::Ignored),
    }
}

/// The questions of one `AskUserQuestion` input.
pub(crate) fn call(input: &Value) -> Result<Call, Unreadable> {
    let asked = super::questions_of(input, "AskUserQuestion")?;
    let questions = asked
        .into_iter()
        .map(|(new, item)| Asked {
            key: new.question.clone(),
            shown: shown_labels(&item),
            new,
        })
        .collect();
    Ok(Call {
        input: input.clone(),
        questions,
        session: None,
        id: None,
    })
}

/// The labels of a question's options, as written in the tool's input.
pub(crate) fn shown_labels(item: &Value) -> Vec<String> {
    item.get("options")
        .and_then(Value::as_array)
        .map(|options| {
            options
                .iter()
                .filter_map(|o| str_at(o, "label").or(o.as_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The `PreToolUse` reply that answers the tool with `answers` (one per question, in
/// order) instead of showing the card.
pub(crate) fn reply_answers(call: &Call, answers: &[Vec<String>]) -> Value {
    let mut input = match &call.input {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let by_question: Map<String, Value> = call
        .questions
        .iter()
        .zip(answers)
        .map(|(q, a)| (q.key.clone(), Value::String(a.join(", "))))
        .collect();
    input.insert("answers".into(), Value::Object(by_question));
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "answered in the questions ledger",
            "updatedInput": Value::Object(input),
        }
    })
}

/// The `Stop` reply that keeps the turn going with answers that came in late.
pub(crate) fn reply_stop(reason: &str) -> Value {
    json!({"decision": "block", "reason": reason})
}

/// What a session's transcript (Claude Code's JSON lines) says of its `AskUserQuestion`
/// calls: those that got no answers (the card was refused, dismissed or failed), and how
/// many have no result in it yet (Claude Code may write that line after a hook started).
pub(crate) struct Calls {
    pub unanswered: Vec<Call>,
    pub without_result: usize,
}

pub(crate) fn unanswered_calls(transcript: &str) -> Calls {
    let mut calls: Vec<(String, Value)> = Vec::new();
    let mut answered = std::collections::HashSet::<String>::new();
    let mut failed = std::collections::HashSet::<String>::new();
    // A Stop hook runs at the end of every turn, over a transcript that grows with the
    // session: only the lines that can matter are parsed.
    if !transcript.contains(TOOL) {
        return Calls {
            unanswered: Vec::new(),
            without_result: 0,
        };
    }
    for line in transcript.lines() {
        // A call's result comes after the call: a line that is neither a call nor the
        // result of one seen is not parsed.
        let result_of_a_call = line.contains("\"tool_result\"")
            && calls.iter().any(|(id, _)| line.contains(id.as_str()));
        if !line.contains(TOOL) && !result_of_a_call {
            continue;
        }
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(blocks) = entry
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        for block in blocks {
            match str_at(block, "type") {
                Some("tool_use") if str_at(block, "name") == Some(TOOL) => {
                    if let (Some(id), Some(input)) = (str_at(block, "id"), block.get("input")) {
                        calls.push((id.to_string(), input.clone()));
                    }
                }
                Some("tool_result") => {
                    if let Some(id) = str_at(block, "tool_use_id") {
                        if block.get("is_error") == Some(&Value::Bool(true)) {
                            failed.insert(id.to_string());
                        } else {
                            answered.insert(id.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let without_result = calls
        .iter()
        .filter(|(id, _)| !failed.contains(id) && !answered.contains(id))
        .count();
    let unanswered = calls
        .into_iter()
        .filter(|(id, _)| failed.contains(id) && !answered.contains(id))
        .filter_map(|(id, input)| {
            let mut call = call(&input).ok()?;
            call.id = Some(id);
            Some(call)
        })
        .collect();
    Calls {
        unanswered,
        without_result,
    }
}

/// How a late answer is handed to the agent: one line, which the transcript then holds,
/// so that it is handed over once.
pub(crate) fn late_line(question: &str, answer: &str) -> String {
    format!("\"{question}\"=\"{answer}\"")
}

/// Whether the transcript already holds `line` (as JSON text, quotes escaped).
pub(crate) fn delivered(transcript: &str, line: &str) -> bool {
    let encoded = serde_json::to_string(line).unwrap_or_default();
    let inner = encoded
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(&encoded);
    transcript.contains(inner)
}

/// The reason a `Stop` hook gives for going on: the late answers, one a line.
pub(crate) fn late_reason(lines: &[String]) -> String {
    format!(
        "The person answered questions you had asked with AskUserQuestion after you stopped \
         waiting for them (through the questions ledger): {}. Go on with these answers in mind.",
        lines.join(", ")
    )
}
