//! The one error type. Every failure a user can see is an `Error` with a code from the
//! contract; `lib::run` turns it into the failure JSON and an exit code.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum ErrorCode {
    Usage,
    NotFound,
    Conflict,
    InvalidAnswer,
    ParseError,
    Cancelled,
    Timeout,
    DbError,
    SchemaTooNew,
    IoError,
    /// Someone who may not make this change tried to (a vote on an approval).
    Forbidden,
    /// No credential, or one the ledger does not honour (§15): missing, unknown, expired
    /// or revoked, all said alike.
    Unauthorized,
    /// The ledger's server could not be reached, or did not answer in time (§15).
    Unavailable,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The code a failure document names (`error_code`).
    pub fn parse(text: &str) -> Option<ErrorCode> {
        use strum::VariantArray;
        ErrorCode::VARIANTS
            .iter()
            .copied()
            .find(|c| c.as_str() == text)
    }

    /// 2 for a call whose words are wrong, 1 for everything that went wrong while doing it.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorCode::Usage | ErrorCode::Forbidden | ErrorCode::Unauthorized => 2,
            _ => 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    /// The transaction lost a race with another (a serialization failure or deadlock):
    /// running it again from the start can succeed. Never shown to the user.
    pub(crate) transient: bool,
    /// The server was out of reach (see `Reach`): a waiting reader waits on and reads
    /// again. Never shown to the user.
    pub(crate) reach: Option<Reach>,
    /// The write failed before it asked the server to commit: nothing of it was recorded,
    /// and it may be made again on a new connection.
    pub(crate) uncommitted: bool,
    /// What a command-line user can do about it with a flag ("pass --force to …"): the
    /// command line adds it to the message; other front ends, whose users have no flags,
    /// leave it out.
    pub flag_hint: Option<String>,
    /// The whole message as the command line says it, where that names the command
    /// line's own words (a flag, a command) in place of what `message` says to everyone
    /// else: an agent has no shell and a person on a page has no flags.
    pub cli_wording: Option<String>,
    /// What a refusal was about, as data: a front end that words it for its own users
    /// (the inbox says who answered first) matches on this, never on the message.
    pub refusal: Option<Refusal>,
    /// The question a refused change was about, as it stands in the ledger (read in the
    /// refusing transaction), as its document prints it: what a front end shows instead
    /// of reading it again (`Error::question_on_record`). Kept as the document, not as
    /// the model's type, because the model is built on this file.
    pub on_record: Option<Box<serde_json::Value>>,
}

/// How a server was out of reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// Only a server is ever out of reach: a build without PostgreSQL makes none.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) enum Reach {
    /// It could not be reached, or did not answer (a wrong location looks the same).
    Unreachable,
    /// It is there, but has no connection free, or is starting: a waiter waits on even
    /// before its first read.
    Busy,
    /// A connection was made, then lost: the server (or a pooler in front of it) ended it,
    /// or it broke (a restart, a failover).
    Dropped,
}

/// The refusals a front end may word its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Question `id` has an answer on record that this change would replace.
    AlreadyAnswered { id: i64 },
    /// Question `id` (or its ledger) is not what the person was shown.
    NotAsShown { id: i64 },
    /// Question `id` was settled by someone else while the person was answering it.
    SettledMeanwhile { id: i64 },
    /// Declining question `id`, or rejecting approval `id`, needs a reason
    /// (`invalid_answer`).
    NeedsReason { id: i64 },
    /// A question cannot be an approval for what it has (`usage`): an approval is
    /// required and offers no options or proposed value, its answers are votes.
    NotAnApproval(ApprovalClash),
}

/// What keeps a question from being an approval, the first found in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalClash {
    Optional,
    Proposed,
    Options,
    MultiSelect,
    NoFreeform,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            transient: false,
            reach: None,
            uncommitted: false,
            flag_hint: None,
            cli_wording: None,
            refusal: None,
            on_record: None,
        }
    }

    /// Whether the server was out of reach (see `unavailable`): a waiter waits on.
    pub fn is_unavailable(&self) -> bool {
        self.reach.is_some()
    }

    /// Whether the server was there but busy (see `Reach::Busy`).
    pub fn is_busy(&self) -> bool {
        self.reach == Some(Reach::Busy)
    }

    /// Whether a connection was made and then lost (see `Reach::Dropped`).
    pub(crate) fn is_dropped(&self) -> bool {
        self.reach == Some(Reach::Dropped)
    }

    /// This error as the command line words it (see `cli_wording`).
    pub fn with_cli_wording(mut self, text: impl Into<String>) -> Error {
        self.cli_wording = Some(text.into());
        self
    }

    /// This error with what it refused, as data.
    pub(crate) fn with_refusal(mut self, refusal: Option<Refusal>) -> Error {
        self.refusal = refusal;
        self
    }

    /// This error with what a command-line user can do about it (see `flag_hint`).
    pub fn with_flag_hint(mut self, hint: impl Into<String>) -> Error {
        self.flag_hint = Some(hint.into());
        self
    }

    /// A `conflict` refusing a change for `refusal`.
    pub fn refused(refusal: Refusal, message: impl Into<String>) -> Error {
        Error {
            refusal: Some(refusal),
            ..Error::conflict(message)
        }
    }

    /// The message as the command line says it: in its own words, or with the flag that
    /// helps, if any.
    pub fn cli_message(&self) -> String {
        match (&self.cli_wording, &self.flag_hint) {
            (Some(words), _) => words.clone(),
            (None, Some(hint)) => format!("{}; {hint}", self.message),
            (None, None) => self.message.clone(),
        }
    }
    pub fn usage(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::Usage, message)
    }
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::NotFound, message)
    }
    pub fn conflict(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::Conflict, message)
    }
    pub fn invalid_answer(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::InvalidAnswer, message)
    }
    pub fn parse(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::ParseError, message)
    }
    pub fn cancelled(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::Cancelled, message)
    }
    pub fn db(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::DbError, message)
    }
    pub fn io(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::IoError, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// How SQLite's `SQLITE_CANTOPEN` begins, in our words.
pub(crate) const CANNOT_OPEN: &str = "cannot open the ledger file";

impl From<rusqlite::Error> for Error {
    fn from(err: rusqlite::Error) -> Error {
        use rusqlite::ErrorCode as Sql;
        let message = match err.sqlite_error_code() {
            Some(Sql::NotADatabase) => {
                "the ledger file is not a SQLite database; it was left untouched. \
                 Point --db at a questions ledger, or move the file away"
                    .to_string()
            }
            Some(Sql::DatabaseBusy | Sql::DatabaseLocked) => {
                "the ledger stayed locked by another process for too long; try again".to_string()
            }
            Some(Sql::ReadOnly) => "the ledger is read-only here: check the permissions of \
                 the file and of its folder (SQLite writes -wal and -shm files beside it)"
                .to_string(),
            Some(Sql::CannotOpen) => format!(
                "{CANNOT_OPEN}: check that it and its folder exist and are readable and \
                 writable"
            ),
            Some(Sql::DatabaseCorrupt) => {
                "the ledger file is damaged (SQLite reports corruption)".to_string()
            }
            _ => {
                let words = engine_words(&err);
                match missing_part(&words) {
                    Some(part) => format!(
                        "the ledger is damaged: its {part} is missing (changed by another \
                         tool or by hand?); 'questions reset --yes' starts a new one, or \
                         restore it from a copy"
                    ),
                    None => format!("database error: {}", brief(&words)),
                }
            }
        };
        Error::db(message)
    }
}

/// "table question_events" or "column header" when SQLite says one is missing: a ledger
/// someone altered, named in one line rather than as a failed statement.
fn missing_part(words: &str) -> Option<String> {
    for (said, part) in [("no such table: ", "table"), ("no such column: ", "column")] {
        if let Some(rest) = words.split(said).nth(1) {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            return Some(format!("{part} {name}"));
        }
    }
    None
}

/// What SQLite said, without the statement it was given (some errors carry it whole).
pub(crate) fn engine_words(err: &rusqlite::Error) -> String {
    match err {
        rusqlite::Error::SqliteFailure(e, Some(message)) => format!("{message} ({e})"),
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
}

/// A database's message cut to a line's length: an error never quotes a whole statement
/// or a whole value.
pub(crate) fn brief(text: &str) -> String {
    const MOST: usize = 300;
    match text.char_indices().nth(MOST) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// An error code in a schema: one of the codes' names.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for ErrorCode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorCode".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = <ErrorCode as strum::VariantArray>::VARIANTS
            .iter()
            .map(|c| c.as_str())
            .collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    /// The codes the contract names (§2), each once: the derive writes them from the
    /// variants, so a renamed variant must fail here rather than change the contract.
    #[test]
    fn every_code_is_the_contracts_name() {
        let codes = [
            (ErrorCode::Usage, "usage"),
            (ErrorCode::NotFound, "not_found"),
            (ErrorCode::Conflict, "conflict"),
            (ErrorCode::InvalidAnswer, "invalid_answer"),
            (ErrorCode::ParseError, "parse_error"),
            (ErrorCode::Cancelled, "cancelled"),
            (ErrorCode::Timeout, "timeout"),
            (ErrorCode::DbError, "db_error"),
            (ErrorCode::SchemaTooNew, "schema_too_new"),
            (ErrorCode::IoError, "io_error"),
            (ErrorCode::Forbidden, "forbidden"),
        ];
        for (code, name) in codes {
            assert_eq!(code.as_str(), name);
        }
    }
}
