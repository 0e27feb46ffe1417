//! pi: the seeds' `ask_user` tool, served by the pi package (contrib/pi), which runs
//! `questions hook pi` with one event a call, a JSON line on stdin:
//!
//! - `{"event": "ask", "session_id", "tool_call_id", "input", "wait": bool}`: the call's
//!   questions logged (once), and, with `wait`, waited for until none is pending;
//! - `{"event": "answered", …, "answers": [{"selected": [...], "text"?} | {"decline":
//!   reason} | null]}`: what the person chose in pi's own dialog, one entry a question
//!   (channel `pi`). The dialog has no skip: a dismissed dialog records nothing (pi's own
//!   spec discards every answer of a cancelled dialog), so a `skip` entry is refused,
//!   never taken as the person's decision to let a gate pass;
//! - `{"event": "look", …}`: the call's questions as they stand, nothing written (a
//!   resumed session's call whose result pi never kept).
//!
//! The reply's `result` is the seed's `AskUserResult`: `answered`, then one entry a
//! question with the answer under the labels the model offered, or why there is none.

use serde_json::{json, Map, Value};

use super::{str_at, Asked, Call, Unreadable};
use questions_core::model::{Question, Status};

/// What one person chose for one question in pi's dialog.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Given {
    /// Options by the labels the dialog showed, and any text of their own.
    Answer {
        select: Vec<String>,
        text: Option<String>,
    },
    Decline(String),
    /// Nothing for this one.
    Nothing,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PiEvent {
    Ask { call: Call, wait: bool },
    Answered { call: Call, given: Vec<Given> },
    Look { call: Call },
}

pub(crate) fn parse(event: &Value) -> Result<PiEvent, Unreadable> {
    let name =
        str_at(event, "event").ok_or_else(|| Unreadable("the event names no \"event\"".into()))?;
    let input = event
        .get("input")
        .ok_or_else(|| Unreadable("the event has no \"input\"".into()))?;
    let call = call(input, event)?;
    match name {
        "ask" => Ok(PiEvent::Ask {
            call,
            wait: event.get("wait").and_then(Value::as_bool).unwrap_or(false),
        }),
        "look" => Ok(PiEvent::Look { call }),
        "answered" => {
            let answers = event
                .get("answers")
                .and_then(Value::as_array)
                .ok_or_else(|| Unreadable("an answered event needs \"answers\"".into()))?;
            if answers.len() != call.questions.len() {
                return Err(Unreadable(format!(
                    "{} answers for {} questions",
                    answers.len(),
                    call.questions.len()
                )));
            }
            let given = answers.iter().map(given).collect::<Result<_, _>>()?;
            Ok(PiEvent::Answered { call, given })
        }
        other => Err(Unreadable(format!(
            "unknown event \"{other}\": ask, answered or look"
        ))),
    }
}

fn given(item: &Value) -> Result<Given, Unreadable> {
    let text = |key: &str| {
        str_at(item, key)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    if let Some(reason) = text("decline") {
        return Ok(Given::Decline(reason));
    }
    if item.get("skip").is_some() {
        return Err(Unreadable(
            "pi's dialog has no skip, and a dismissed dialog records nothing: update the pi \
             package (questions init pi)"
                .into(),
        ));
    }
    let select: Vec<String> = item
        .get("selected")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let typed = text("text");
    if select.is_empty() && typed.is_none() {
        return Ok(Given::Nothing);
    }
    Ok(Given::Answer {
        select,
        text: typed,
    })
}

/// The questions of one `ask_user` input, named by the event's session and call id.
fn call(input: &Value, event: &Value) -> Result<Call, Unreadable> {
    let questions = super::questions_of(input, "ask_user")?
        .into_iter()
        .enumerate()
        .map(|(i, (new, item))| Asked {
            new,
            key: i.to_string(),
            shown: super::claude_code::shown_labels(&item),
        })
        .collect();
    Ok(Call {
        input: input.clone(),
        questions,
        session: str_at(event, "session_id").map(str::to_string),
        id: str_at(event, "tool_call_id").map(str::to_string),
    })
}

/// Whether the ask tool has its result: no question is pending.
pub(crate) fn settled(questions: &[Question]) -> bool {
    !questions.is_empty() && questions.iter().all(|q| q.state.status != Status::Pending)
}

/// The seed's `AskUserResult` for the call as the ledger holds it: `answered` when a
/// person answered every question; each answer under the labels the model offered, with
/// who gave it and through what; a skip or a decline with its reason; the call's
/// `metadata` as given.
pub(crate) fn result(call: &Call, questions: &[Question]) -> Value {
    let mut all = !questions.is_empty();
    let answers: Vec<Value> = call
        .questions
        .iter()
        .zip(questions)
        .map(|(asked, q)| {
            let mut entry = Map::new();
            entry.insert("question".into(), q.question.clone().into());
            let by = |entry: &mut Map<String, Value>| {
                if let Some(by) = &q.state.answered_by {
                    entry.insert("answeredBy".into(), by.clone().into());
                }
                if let Some(channel) = q.state.channel {
                    entry.insert("channel".into(), channel.as_str().into());
                }
            };
            match q.state.status {
                Status::Answered => {
                    let parts = super::persons_answer(q, &asked.shown);
                    if parts.is_none() {
                        all = false;
                    }
                    let parts = parts
                        .or_else(|| super::answer_parts(q, &asked.shown))
                        .unwrap_or_default();
                    let custom = q.state.was_custom.unwrap_or(q.state.selected.is_empty());
                    let answer = if q.multi_select {
                        json!(parts)
                    } else {
                        json!(parts.join(", "))
                    };
                    entry.insert("answer".into(), answer);
                    if !q.multi_select && !custom {
                        if let Some(first) = parts.first() {
                            entry.insert("selectedOption".into(), first.clone().into());
                        }
                    }
                    entry.insert("wasCustom".into(), custom.into());
                    by(&mut entry);
                }
                Status::Skipped => {
                    all = false;
                    entry.insert("skipped".into(), true.into());
                    if let Some(reason) = &q.state.skip_reason {
                        entry.insert("reason".into(), reason.clone().into());
                    }
                    if let Some(reason) = &q.state.decline_reason {
                        entry.insert("declineReason".into(), reason.clone().into());
                    }
                    by(&mut entry);
                }
                Status::Declined => {
                    all = false;
                    entry.insert("declined".into(), true.into());
                    if let Some(reason) = &q.state.decline_reason {
                        entry.insert("reason".into(), reason.clone().into());
                    }
                    by(&mut entry);
                }
                _ => {
                    all = false;
                    entry.insert("pending".into(), true.into());
                }
            }
            Value::Object(entry)
        })
        .collect();
    let mut result = Map::new();
    result.insert("answered".into(), all.into());
    result.insert("answers".into(), answers.into());
    if let Some(metadata) = call.input.get("metadata").filter(|m| !m.is_null()) {
        result.insert("metadata".into(), metadata.clone());
    }
    Value::Object(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_reads_its_call_and_answers() {
        let event = json!({
            "event": "answered",
            "session_id": "s1",
            "tool_call_id": "c1",
            "input": {"questions": [
                {"question": "Which database?", "options": [
                    {"label": "PostgreSQL (Recommended)"}, {"label": "SQLite"}]},
                {"question": "Name?"},
                {"question": "Why?"}
            ], "metadata": {"source": "setup"}},
            "answers": [{"selected": ["PostgreSQL (Recommended)"]}, {"decline": "unclear"}, null]
        });
        let PiEvent::Answered { call, given } = parse(&event).unwrap() else {
            panic!("not an answered event");
        };
        assert_eq!(call.session.as_deref(), Some("s1"));
        assert_eq!(
            call.questions[0].shown,
            ["PostgreSQL (Recommended)", "SQLite"]
        );
        assert_eq!(
            given,
            [
                Given::Answer {
                    select: vec!["PostgreSQL (Recommended)".into()],
                    text: None
                },
                Given::Decline("unclear".into()),
                Given::Nothing
            ]
        );
        assert!(parse(&json!({"event": "nope", "input": {"questions": []}})).is_err());
    }

    #[test]
    fn a_skip_from_the_dialog_is_refused_never_recorded() {
        // An older package sent a dismissed dialog as a skip of every question, which let
        // the stage's gate pass: the dialog has no skip, so nothing of the event is taken.
        let event = json!({
            "event": "answered",
            "input": {"questions": [{"question": "Deploy?"}, {"question": "Which?"}]},
            "answers": [{"selected": [], "text": "yes"}, {"skip": "dismissed in pi's dialog"}]
        });
        let refused = parse(&event).unwrap_err();
        assert!(refused.0.contains("no skip"), "{}", refused.0);
    }
}
