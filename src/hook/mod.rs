//! The harnesses' own question tools, seen through their command hooks: Claude Code's
//! `AskUserQuestion`, Codex's `request_user_input`, Gemini CLI's `ask_user`, and pi's
//! `ask_user` through the pi package. Each adapter
//! reads its harness's event JSON into an `Event` and writes the harness's reply from the
//! ledger's questions; `cmd::hook` carries the event to the operations. Pure: no database,
//! no printing.

pub(crate) mod claude_code;
pub(crate) mod codex;
pub(crate) mod gemini;
pub(crate) mod pi;

use serde_json::Value;

use questions_core::model::{split_recommended, NewQuestion, Question, Status};

/// One question's answer from a harness's card.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Given {
    /// The answer as the card gives it: an option's label (or labels), or the person's
    /// own words.
    Text(String),
    /// Options chosen by their labels, with the person's note beside them (Codex's card).
    Noted { labels: Vec<String>, note: String },
}

/// What a hook event asks of the ledger.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// The agent is about to put these questions to the person: log them, and answer the
    /// tool when every one is answered.
    Asking(Call),
    /// The person answered in the harness's own card: one answer per question of the
    /// call, in its order (none where they left it unanswered).
    Answered(Call, Vec<Option<Given>>),
    /// The agent's turn is ending: hand it, once, the answers that came in after it
    /// stopped waiting for them.
    Stopping(Stop),
    /// An event or a tool this hook has nothing to do with.
    Ignored,
}

/// One call of a harness's question tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    /// The tool's input as the harness gave it, to hand back with the answers.
    pub input: Value,
    pub questions: Vec<Asked>,
    /// The harness's session, and its id of this call (`tool_use_id`), where the event
    /// names them: with the harness, they key the call's questions in the ledger.
    pub session: Option<String>,
    pub id: Option<String>,
}

impl Call {
    /// The call's questions, as one call of `harness` (see `HarnessCall`).
    pub(crate) fn key(
        &self,
        harness: questions_core::model::Channel,
    ) -> questions_core::model::HarnessCall {
        questions_core::model::HarnessCall::new(
            harness,
            self.session.as_deref(),
            self.id.as_deref(),
            &self.input,
        )
    }

    /// This call, as the event `event` names it: its session and its call id.
    pub(crate) fn named_by(mut self, event: &Value) -> Call {
        self.session = str_at(event, "session_id").map(str::to_string);
        self.id = ["tool_use_id", "tool_call_id", "call_id"]
            .iter()
            .find_map(|k| str_at(event, k))
            .map(str::to_string);
        self
    }
}

/// One question of a call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Asked {
    /// The question as the ledger logs it (its stage is set by the caller).
    pub new: NewQuestion,
    /// How the harness keys its answer: the question's text, its id, or its position.
    pub key: String,
    /// The option labels exactly as the tool shows them.
    pub shown: Vec<String>,
}

/// The end of a turn, and where the session's transcript is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stop {
    /// The harness's session: only its own calls' answers are handed over.
    pub session: Option<String>,
    pub transcript: Option<std::path::PathBuf>,
    /// The harness is already continuing because of a stop hook: never block twice.
    pub active: bool,
}

/// Why an event could not be read: the hook then stays out of the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable(pub String);

impl From<questions_core::formats::ParseError> for Unreadable {
    fn from(e: questions_core::formats::ParseError) -> Self {
        Unreadable(e.0)
    }
}

pub(crate) fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The answer to `q` with each chosen option under the label the tool showed for it,
/// chosen labels first, then any text of the person's own, joined by ", " (how the
/// harnesses join a multi-select answer). None while `q` is not answered. (The hooks hand
/// over `answer_parts`; this is what the tests compare them with.)
#[cfg(test)]
fn answer_as_shown(q: &Question, shown: &[String]) -> Option<String> {
    answer_parts(q, shown).map(|parts| parts.join(", "))
}

/// The answer to `q` as a list: each chosen option under the label the tool showed for
/// it, then any text of the person's own. None while `q` is not answered.
pub(crate) fn answer_parts(q: &Question, shown: &[String]) -> Option<Vec<String>> {
    if q.state.status != Status::Answered {
        return None;
    }
    let answer = q.state.answer.clone()?;
    if q.state.selected.is_empty() {
        return Some(vec![answer]);
    }
    let key = |label: &str| split_recommended(label).0.to_lowercase();
    let mut parts: Vec<String> = q
        .state
        .selected
        .iter()
        .map(|label| {
            shown
                .iter()
                .find(|s| key(s) == key(label))
                .cloned()
                .unwrap_or_else(|| label.clone())
        })
        .collect();
    if q.state.was_custom == Some(true) {
        // The stored answer is the chosen labels, then the custom text, joined by ", ".
        let prefix = q.state.selected.join(", ");
        let custom = answer
            .strip_prefix(&prefix)
            .map(|rest| rest.trim_start_matches(", ").to_string())
            .unwrap_or(answer);
        if !custom.is_empty() {
            parts.push(custom);
        }
    }
    Some(parts)
}

/// The answer to `q` as a list (see `answer_parts`) when a person gave it: an answer
/// nobody gave (the proposed value taken by `accept-defaults`, or by expiry) is never
/// handed to an agent as the person's.
pub(crate) fn persons_answer(q: &Question, shown: &[String]) -> Option<Vec<String>> {
    if !q
        .state
        .channel
        .is_some_and(questions_core::model::Channel::is_a_persons)
    {
        return None;
    }
    answer_parts(q, shown)
}

/// Every question's answer as shown, as a list, or none unless a person answered all of
/// them.
pub(crate) fn all_answered(call: &Call, questions: &[Question]) -> Option<Vec<Vec<String>>> {
    if questions.len() != call.questions.len() {
        return None;
    }
    call.questions
        .iter()
        .zip(questions)
        .map(|(asked, q)| persons_answer(q, &asked.shown))
        .collect()
}

/// The harness's own answer JSON, when it is a string holding JSON (Codex's and Gemini's
/// tool results are), else as it is.
pub(crate) fn json_or_string(value: &Value) -> Value {
    match value {
        Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| value.clone()),
        other => other.clone(),
    }
}

/// The questions of a harness tool's input, each beside the item it was read from (for
/// what the harness's own card shows of it); `tool` names the tool in a refusal.
pub(super) fn questions_of(
    input: &Value,
    tool: &str,
) -> Result<Vec<(NewQuestion, Value)>, Unreadable> {
    let news = questions_core::formats::question_list(
        input,
        "questions",
        questions_core::formats::Source::AskUser,
        &format!("{tool} asks at least one"),
    )?;
    let items = input
        .get("questions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(news.into_iter().zip(items).collect())
}

/// Each question's answer in a harness's `answers` object, a text under the question's
/// key; a blank one is none.
pub(super) fn answered_texts(
    call: &Call,
    answers: Option<&serde_json::Map<String, Value>>,
) -> Vec<Option<Given>> {
    call.questions
        .iter()
        .map(|q| {
            answers
                .and_then(|a| a.get(&q.key))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(|a| Given::Text(a.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use questions_core::model::{OnExpiry, QuestionOption, Source, State};

    fn answered(selected: &[&str], answer: &str, custom: bool) -> Question {
        Question {
            id: 1,
            stage: "s".into(),
            group_name: None,
            question: "q?".into(),
            proposed: None,
            required: true,
            created_at: String::new(),
            header: None,
            context: None,
            options: ["Auth", "Search", "Export"]
                .iter()
                .map(|l| QuestionOption {
                    label: l.to_string(),
                    description: None,
                    recommended: false,
                })
                .collect(),
            multi_select: true,
            allow_freeform: true,
            source: Source::AskUser,
            expires_at: None,
            on_expiry: OnExpiry::Keep,
            harness_call: None,
            urgent: false,
            logged_by: None,
            state: State {
                status: Status::Answered,
                answer: Some(answer.into()),
                selected: selected
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect(),
                was_custom: Some(custom),
                ..State::logged("", None)
            },
        }
    }

    #[test]
    fn chosen_labels_come_back_as_the_tool_showed_them_then_custom_text() {
        let shown: Vec<String> = ["Auth (Recommended)", "Search", "Export"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let q = answered(&["Auth", "Export"], "Auth, Export", false);
        assert_eq!(
            answer_as_shown(&q, &shown).as_deref(),
            Some("Auth (Recommended), Export")
        );
        let q = answered(&["Search"], "Search, and SSO", true);
        assert_eq!(
            answer_as_shown(&q, &shown).as_deref(),
            Some("Search, and SSO")
        );
        let mut pending = answered(&[], "x", false);
        pending.state.status = Status::Pending;
        assert_eq!(answer_as_shown(&pending, &shown), None);
    }
}
