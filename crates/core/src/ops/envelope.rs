//! The contract's envelope (§2): a result is `"ok"`, `"procedure"`, then the result's own
//! keys; a failure is `"ok": false`, the procedure, `"error"` and `"error_code"`. Every
//! front end (the command line, MCP, the web) puts its documents in it here, so the shape
//! and the procedure's name cannot differ between them.

use serde::Serialize;

use crate::error::Error;
use crate::model::Question;

/// The name a document carries: the command that returns it. An MCP tool that returns a
/// command's document names that command (`check`, `list`, `answers`, `import`), on
/// failure as on success; the tools with documents of their own (`ask_questions`,
/// `wait_for_answers`, `vote`) name themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Procedure {
    Log,
    Answer,
    Skip,
    List,
    Check,
    Clear,
    Reset,
    History,
    Ingest,
    Render,
    Import,
    Answers,
    #[strum(serialize = "accept-defaults")]
    AcceptDefaults,
    Ask,
    Info,
    Decline,
    Events,
    Watch,
    Serve,
    Approve,
    Reject,
    Group,
    People,
    Relay,
    Token,
    Policy,
    Login,
    Logout,
    Completions,
    Man,
    Mcp,
    Hook,
    Init,
    AskQuestions,
    WaitForAnswers,
    Vote,
    /// The in-chat inbox (MCP Apps) of `questions mcp`: the tool that shows it, and the
    /// tool its forms call.
    OpenInbox,
    AnswerInApp,
    /// `questions --version --json`.
    Version,
}

impl Procedure {
    /// The command line's commands, in the order its help lists them.
    pub const COMMANDS: &'static [Procedure] = &[
        Procedure::Log,
        Procedure::Answer,
        Procedure::Skip,
        Procedure::List,
        Procedure::Check,
        Procedure::Clear,
        Procedure::Reset,
        Procedure::History,
        Procedure::Ingest,
        Procedure::Render,
        Procedure::Import,
        Procedure::Answers,
        Procedure::AcceptDefaults,
        Procedure::Ask,
        Procedure::Info,
        Procedure::Decline,
        Procedure::Events,
        Procedure::Watch,
        Procedure::Serve,
        Procedure::Approve,
        Procedure::Reject,
        Procedure::Group,
        Procedure::People,
        Procedure::Relay,
        Procedure::Token,
        Procedure::Policy,
        Procedure::Login,
        Procedure::Logout,
        Procedure::Completions,
        Procedure::Man,
        Procedure::Mcp,
        Procedure::Hook,
        Procedure::Init,
    ];

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The command named `word`, if there is one.
    pub fn command(word: &str) -> Option<Procedure> {
        Procedure::COMMANDS
            .iter()
            .copied()
            .find(|p| p.as_str() == word)
    }
}

impl Serialize for Procedure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A procedure in a schema: one of the procedures' names.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Procedure {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Procedure".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = <Procedure as strum::VariantArray>::VARIANTS
            .iter()
            .map(|p| p.as_str())
            .collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// A result in the envelope; serialize it (as text, or as a JSON value for MCP).
#[derive(Serialize)]
pub struct Envelope<'a, T> {
    ok: bool,
    procedure: Procedure,
    #[serde(flatten)]
    result: &'a T,
}

/// `result` in the envelope. `ok` is false only for a result with its own verdict that
/// did not pass (a gate that fails), never for an error (see `failure`).
pub fn document<T: Serialize>(ok: bool, procedure: Procedure, result: &T) -> Envelope<'_, T> {
    Envelope {
        ok,
        procedure,
        result,
    }
}

/// The failure document. A front end may word the message for its users (`worded`) and,
/// for a conflict, add the question as it stands (`on_record`).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Failure {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    procedure: Option<Procedure>,
    error: String,
    #[cfg_attr(feature = "schema", schemars(with = "crate::error::ErrorCode"))]
    error_code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    question: Option<Box<Question>>,
}

/// `err` as the failure document of `procedure` (none when a command line could not be
/// read far enough to name one).
pub fn failure(procedure: Option<Procedure>, err: &Error) -> Failure {
    Failure {
        ok: false,
        procedure,
        error: err.message.clone(),
        error_code: err.code.as_str(),
        answer: None,
        question: None,
    }
}

impl Failure {
    /// The message as this front end says it (the command line names the flag that helps).
    pub fn worded(mut self, message: String) -> Failure {
        self.error = message;
        self
    }

    /// A conflict's question as it stands, with the answer on record.
    pub fn on_record(mut self, question: Option<&Question>) -> Failure {
        if let Some(q) = question {
            self.answer = Some(q.state.answer.clone());
            self.question = Some(Box::new(q.clone()));
        }
        self
    }

    pub fn message(&self) -> &str {
        &self.error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_puts_ok_and_the_procedure_first() {
        #[derive(Serialize)]
        struct R {
            question_id: i64,
        }
        let text =
            serde_json::to_string(&document(true, Procedure::Log, &R { question_id: 3 })).unwrap();
        assert_eq!(text, r#"{"ok":true,"procedure":"log","question_id":3}"#);
        let failed = failure(Some(Procedure::AcceptDefaults), &Error::usage("no"));
        assert_eq!(
            serde_json::to_string(&failed).unwrap(),
            r#"{"ok":false,"procedure":"accept-defaults","error":"no","error_code":"usage"}"#
        );
    }

    #[test]
    fn every_command_is_found_by_its_name() {
        for p in Procedure::COMMANDS {
            assert_eq!(Procedure::command(p.as_str()), Some(*p));
        }
        assert_eq!(Procedure::command("ask_questions"), None);
    }
}
