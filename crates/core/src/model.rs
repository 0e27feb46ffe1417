//! The ledger's vocabulary: questions, options, events, and the pure rules that apply to
//! them (how a `--required` value reads, how an answer matches a question's options).
//! No database, no printing.

use serde::{Deserialize, Serialize};

use crate::error::{ApprovalClash, Error, Refusal, Result};

mod approval;
pub use approval::{
    check_name, check_policy, Approval, ApprovalState, Ballot, Groups, Verdict, Vote, Voted,
    GROUP_PREFIX,
};

#[derive(
    Debug,
    Default,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Status {
    #[default]
    Pending,
    Answered,
    Skipped,
    /// The person will not answer it as asked; it holds the gate until it is rephrased,
    /// answered or skipped.
    Declined,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Reads a stored status. Anything unknown counts as pending: a gate must never pass
    /// on a row it does not understand.
    pub fn from_stored(text: &str) -> Status {
        Status::parse(text.trim()).unwrap_or(Status::Pending)
    }
}

/// Through what a change was made.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Channel {
    Cli,
    Ask,
    Web,
    Mcp,
    Import,
    AcceptDefaults,
    /// Time ran out: no person made this change.
    Expiry,
    /// A harness's own question card, recorded by `questions hook`.
    ClaudeCode,
    Codex,
    Gemini,
    /// pi's `ask_user` dialog, through the pi package (`questions hook pi`).
    Pi,
    /// The inbox inside an MCP client's chat (MCP Apps), through `questions mcp`.
    McpApp,
    /// The relay's channels (§14), each vouching for who its sender is.
    Telegram,
    Slack,
    Email,
    Matrix,
    /// The ledger's API over HTTPS (§15), by a person token's person.
    Api,
    /// A form an MCP client showed through `serve`'s `/mcp` (§16).
    Elicitation,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn from_stored(text: &str) -> Option<Channel> {
        Channel::parse(text)
    }

    /// Whether a change through this channel was a person's: every channel but those that
    /// answer for nobody (`accept-defaults` takes the proposed values as they stand,
    /// `expiry` is time running out). A harness's ask tool is handed only such answers.
    pub fn is_a_persons(self) -> bool {
        !matches!(self, Channel::AcceptDefaults | Channel::Expiry)
    }

    /// The relay channel this is (§14), if it is one. Every channel is named here, so a
    /// channel added to this enum is decided here first; a relay channel is then a
    /// `Relayed` too, whose matches the compiler lists.
    pub fn relayed(self) -> Option<Relayed> {
        match self {
            Channel::Telegram => Some(Relayed::Telegram),
            Channel::Slack => Some(Relayed::Slack),
            Channel::Email => Some(Relayed::Email),
            Channel::Matrix => Some(Relayed::Matrix),
            Channel::Cli
            | Channel::Ask
            | Channel::Web
            | Channel::Mcp
            | Channel::Import
            | Channel::AcceptDefaults
            | Channel::Expiry
            | Channel::ClaudeCode
            | Channel::Codex
            | Channel::Gemini
            | Channel::Pi
            | Channel::McpApp
            | Channel::Api
            | Channel::Elicitation => None,
        }
    }
}

/// The channels a relay serves (§14): each is one folder of the relay, and every decision
/// that differs between them (the identity's grammar, what a pairing code is sent as, the
/// relay's config section) is an exhaustive match on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::VariantArray)]
pub enum Relayed {
    Telegram,
    Slack,
    Email,
    Matrix,
}

impl Relayed {
    pub fn channel(self) -> Channel {
        match self {
            Relayed::Telegram => Channel::Telegram,
            Relayed::Slack => Channel::Slack,
            Relayed::Email => Channel::Email,
            Relayed::Matrix => Channel::Matrix,
        }
    }

    /// Its name, as identities are prefixed and the relay's config names its section.
    pub fn as_str(self) -> &'static str {
        self.channel().as_str()
    }

    /// The relay channel called `name`.
    pub fn named(name: &str) -> Option<Relayed> {
        Channel::parse(name).and_then(Channel::relayed)
    }

    pub fn all() -> &'static [Relayed] {
        <Relayed as strum::VariantArray>::VARIANTS
    }

    /// How its identity is written, in messages.
    pub fn identity_form(self) -> &'static str {
        match self {
            Relayed::Telegram => "telegram:<user id>",
            Relayed::Slack => "slack:<team id>/<user id>",
            Relayed::Email => "email:<address>",
            Relayed::Matrix => "matrix:<@user:server>",
        }
    }

    /// An identity on this channel (what follows `<name>:`) as the ledger keeps it: the
    /// provider's stable id, which it vouches for, never a display name. Else why not.
    pub fn identity(self, id: &str) -> Result<String, &'static str> {
        let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
        match self {
            Relayed::Telegram => {
                // As Telegram writes it: `0001002` is the user 1002.
                let id = id.trim_start_matches('0');
                if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) || id.len() > 20 {
                    return Err("a Telegram user id is a number above 0");
                }
                Ok(id.to_string())
            }
            Relayed::Slack => match id.split_once('/') {
                Some((team, user)) if plain(team) && plain(user) => {
                    Ok(format!("{}/{}", team.to_uppercase(), user.to_uppercase()))
                }
                _ => Err("a Slack identity is the team id and the user id"),
            },
            Relayed::Email => {
                let lower = id.to_lowercase();
                let ok = lower.split_once('@').is_some_and(|(local, domain)| {
                    !local.is_empty()
                        && domain.contains('.')
                        && !lower
                            .chars()
                            .any(|c| c.is_whitespace() || c.is_control() || c == '<' || c == '>')
                });
                if !ok {
                    return Err("an email identity is an address");
                }
                Ok(lower)
            }
            Relayed::Matrix => {
                // A user id as the homeserver writes it (`@localpart:server[:port]`), kept
                // as it is: the localpart's historical forms are case-sensitive.
                let ok = id.len() <= 255
                    && id
                        .strip_prefix('@')
                        .and_then(|r| r.split_once(':'))
                        .is_some_and(|(local, server)| {
                            !local.is_empty()
                                && local.chars().all(|c| c.is_ascii_graphic() && c != ':')
                                && !server.is_empty()
                                && server
                                    .chars()
                                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
                        });
                if !ok {
                    return Err("a Matrix identity is a user id, @user:server");
                }
                Ok(id.to_string())
            }
        }
    }

    /// What a person sends on this channel to redeem a pairing code: Telegram opens a
    /// chat with a bot by `/start`; the others take the code as it is.
    pub fn pairing_message(self, code: &str) -> String {
        match self {
            Relayed::Telegram => format!("/start {code}"),
            Relayed::Slack | Relayed::Email | Relayed::Matrix => code.to_string(),
        }
    }

    /// Their names in a sentence: "telegram, slack or email" (`and` for "and").
    pub fn listed(last_word: &str, shown: impl Fn(&str) -> String) -> String {
        let names: Vec<String> = Relayed::all().iter().map(|r| shown(r.as_str())).collect();
        match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} {last_word} {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

/// What happens to a pending question when its time is up.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum OnExpiry {
    /// It stays pending (and `check` says its time is up).
    #[default]
    Keep,
    /// It is answered with its proposed value.
    Default,
    /// It is skipped, with the reason `expired`.
    Skip,
    /// An approval only: it is rejected, with the reason `expired`.
    Reject,
}

impl OnExpiry {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Stored as NULL for `keep`, the default.
    pub fn stored(self) -> Option<&'static str> {
        (self != OnExpiry::Keep).then(|| self.as_str())
    }

    pub fn from_stored(text: Option<&str>) -> OnExpiry {
        text.and_then(|t| OnExpiry::parse(t.trim()))
            .unwrap_or(OnExpiry::Keep)
    }
}

/// Who makes a change, through what, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// A person's name; none for a change nobody made (expiry).
    pub by: Option<String>,
    pub channel: Channel,
    pub at: String,
}

/// How a question arrived in the ledger.
#[derive(
    Debug,
    Default,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Source {
    #[default]
    Cli,
    Uwf,
    OpenQuestions,
    AskUser,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Reads a stored source; rows written by other tools without one came from a command line.
    pub fn from_stored(text: &str) -> Source {
        Source::parse(text).unwrap_or(Source::Cli)
    }
}

/// A stage gate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Gate {
    Pass,
    Fail,
}

impl Gate {
    /// The gate over these questions: it fails while a required one is pending.
    pub fn over<'a>(questions: impl IntoIterator<Item = &'a Question>) -> Gate {
        if questions.into_iter().any(Question::blocks_gate) {
            Gate::Fail
        } else {
            Gate::Pass
        }
    }

    pub fn passes(self) -> bool {
        self == Gate::Pass
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QuestionOption {
    pub label: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub recommended: bool,
}

/// A question as the contract prints it (§4), every key always: what it was logged as,
/// and its state, which every change of status replaces.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(transform = Question::as_printed))]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent yes/no facts of a question (§4's, and --urgent), not a state"
)]
pub struct Question {
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub id: i64,
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub stage: String,
    pub group_name: Option<String>,
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub question: String,
    pub proposed: Option<String>,
    pub required: bool,
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"))
    )]
    pub created_at: String,
    pub header: Option<String>,
    pub context: Option<String>,
    pub options: Vec<QuestionOption>,
    pub multi_select: bool,
    pub allow_freeform: bool,
    pub source: Source,
    // §8's expiry; rows kept whole in the history by an older version have none.
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub on_expiry: OnExpiry,
    /// Asked through an agent harness's own ask tool (§11): the call it was asked in,
    /// `<harness>:<session id>:<call id>`. Each call is its own question: found again by
    /// this key, never by its text, so no call is answered from another's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_call: Option<String>,
    /// Logged `--urgent` (§14a): quiet hours hold none of its cards. Printed only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub urgent: bool,
    /// Who logged it (§15): an agent token's name, a person's, or the direct caller's
    /// (`--by`, `QUESTIONS_USER`, the OS user). None for questions logged before this was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logged_by: Option<String>,
    /// Its status and answer, and who gave them.
    #[serde(flatten)]
    pub state: State,
}

/// §4's order of a question's keys: what it was logged as and its state interleaved, as
/// `questions.mjs` printed them. The keys are the fields' own names (the schema test
/// checks that every field is printed, in this order).
#[cfg(feature = "schema")]
impl Question {
    /// The schema of the document `Serialize` prints, from the derived one of the fields:
    /// its keys in the printed order, every key that is always printed required, and no
    /// defaults (they say how a row is read, not what is printed).
    fn as_printed(schema: &mut schemars::Schema) {
        let printed = |q: &Question| -> Vec<String> {
            match serde_json::to_value(q) {
                Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
                _ => Vec::new(),
            }
        };
        let plain = Question::default();
        let mut full = plain.clone();
        full.state.approval = Some(Approval::default());
        full.harness_call = Some(String::new());
        full.urgent = true;
        full.logged_by = Some(String::new());
        let Some(serde_json::Value::Object(mut properties)) = schema.remove("properties") else {
            return;
        };
        let mut ordered = serde_json::Map::new();
        for key in printed(&full) {
            if let Some(mut property) = properties.remove(&key) {
                if let Some(property) = property.as_object_mut() {
                    property.remove("default");
                }
                ordered.insert(key, property);
            }
        }
        ordered.extend(properties);
        schema.remove("required");
        schema.insert("properties".into(), ordered.into());
        schema.insert("required".into(), printed(&plain).into());
    }
}

impl Serialize for Question {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let s = &self.state;
        // A caller's key of exactly once (`api:…`, §15) is how the ledger finds a call
        // sent again, not what the question is: it is not printed.
        let call = self
            .harness_call
            .as_ref()
            .filter(|call| !call.starts_with(CALLER_KEY));
        let optional = usize::from(s.approval.is_some())
            + usize::from(call.is_some())
            + usize::from(self.urgent)
            + usize::from(self.logged_by.is_some());
        let mut out = serializer.serialize_struct("Question", 25 + optional)?;
        out.serialize_field("id", &self.id)?;
        out.serialize_field("stage", &self.stage)?;
        out.serialize_field("group_name", &self.group_name)?;
        out.serialize_field("question", &self.question)?;
        out.serialize_field("proposed", &self.proposed)?;
        out.serialize_field("required", &self.required)?;
        out.serialize_field("status", &s.status)?;
        out.serialize_field("answer", &s.answer)?;
        out.serialize_field("created_at", &self.created_at)?;
        out.serialize_field("answered_at", &s.answered_at)?;
        out.serialize_field("updated_at", &s.updated_at)?;
        out.serialize_field("header", &self.header)?;
        out.serialize_field("context", &self.context)?;
        out.serialize_field("options", &self.options)?;
        out.serialize_field("multi_select", &self.multi_select)?;
        out.serialize_field("allow_freeform", &self.allow_freeform)?;
        out.serialize_field("selected", &s.selected)?;
        out.serialize_field("was_custom", &s.was_custom)?;
        out.serialize_field("skip_reason", &s.skip_reason)?;
        out.serialize_field("source", &self.source)?;
        out.serialize_field("answered_by", &s.answered_by)?;
        out.serialize_field("channel", &s.channel)?;
        out.serialize_field("expires_at", &self.expires_at)?;
        out.serialize_field("on_expiry", &self.on_expiry)?;
        out.serialize_field("decline_reason", &s.decline_reason)?;
        if let Some(approval) = &s.approval {
            out.serialize_field("approval", approval)?;
        }
        if let Some(call) = call {
            out.serialize_field("harness_call", call)?;
        }
        if self.urgent {
            out.serialize_field("urgent", &true)?;
        }
        if let Some(by) = &self.logged_by {
            out.serialize_field("logged_by", by)?;
        }
        out.end()
    }
}

impl Error {
    /// This error with the question it refused a change of, as it stands.
    pub(crate) fn about(mut self, question: &Question) -> Error {
        self.on_record = serde_json::to_value(question).ok().map(Box::new);
        self
    }

    /// The question a refused change was about (`on_record`), read back from its document:
    /// all that is printed of it, which is all a front end shows.
    pub fn question_on_record(&self) -> Option<Question> {
        let document = self.on_record.as_deref()?;
        Question::deserialize(document).ok()
    }
}

/// How a caller's key of exactly once begins where the ledger keeps it (`api:<who>:<key>`,
/// §15): in the column of a harness call's key, but an ordinary question's, found by its
/// text as every other is (`Tx::find_same`) and never printed.
pub const CALLER_KEY: &str = "api:";

/// One call of an agent harness's own ask tool, as `questions hook` keys its questions
/// (see `Question::harness_call`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessCall {
    /// `<harness>:<session id>:<call id>`.
    pub key: String,
    /// The harness gives the call no id of its own (Gemini CLI's hook events carry none),
    /// so the key stands on the session and the call's input, which a later call may
    /// share: once the call is over, its questions leave the key (`ops::end_call`).
    pub by_input: bool,
}

impl HarnessCall {
    /// The call `call_id` of `session` in `harness`; a call without an id is told by its
    /// `input` (16 hex digits of SHA-256 of its JSON), a session without one is `-`.
    pub fn new(
        harness: Channel,
        session: Option<&str>,
        call_id: Option<&str>,
        input: &serde_json::Value,
    ) -> HarnessCall {
        let clean = |s: Option<&str>| {
            s.map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| s.replace(':', "_"))
        };
        let session = clean(session).unwrap_or_else(|| "-".to_string());
        let (call, by_input) = if let Some(id) = clean(call_id) {
            (id, false)
        } else {
            use sha2::{Digest, Sha256};
            let digest = Sha256::digest(input.to_string().as_bytes());
            let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
            (format!("input-{hex}"), true)
        };
        HarnessCall {
            key: format!("{}:{session}:{call}", harness.as_str()),
            by_input,
        }
    }
}

/// 32 bits of SHA-256 of a question's text, as the ledger stores it to find the same
/// question again (an index lookup whatever the texts have in common). Never changes:
/// ledgers keep it.
pub fn text_hash(text: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(text.as_bytes());
    i64::from(i32::from_be_bytes([
        digest[0], digest[1], digest[2], digest[3],
    ]))
}

impl Question {
    /// What a front end that showed this question to a person sends back with the
    /// change it makes: 16 hex digits of SHA-256 of its stage and text. A change that
    /// names another fingerprint was meant for another question (see `ops::Shown`).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(self.stage.trim().as_bytes());
        hasher.update([0]);
        hasher.update(self.question.as_bytes());
        let digest = hasher.finalize();
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Required and not yet settled (pending, or declined until it is rephrased): what
    /// holds a gate shut.
    pub fn blocks_gate(&self) -> bool {
        self.required && matches!(self.state.status, Status::Pending | Status::Declined)
    }

    /// Pending, with its time up at `now`.
    pub fn is_expired(&self, now: &str) -> bool {
        self.state.status == Status::Pending && self.expires_at.as_deref().is_some_and(|t| t <= now)
    }

    /// This question after a change of status by `actor`: the fields every change sets.
    fn changed(&self, status: Status, actor: &Actor) -> Question {
        Question {
            state: State {
                status,
                answer: None,
                selected: Vec::new(),
                was_custom: None,
                answered_at: None,
                skip_reason: None,
                decline_reason: None,
                updated_at: actor.at.clone(),
                answered_by: actor.by.clone(),
                channel: Some(actor.channel),
                approval: self.state.approval.clone(),
            },
            ..self.clone()
        }
    }

    /// This question answered with `resolved`.
    fn answered(&self, resolved: Resolved, actor: &Actor) -> Question {
        let mut q = self.changed(Status::Answered, actor);
        q.state.answer = Some(resolved.answer);
        q.state.selected = resolved.selected;
        q.state.was_custom = resolved.was_custom;
        q.state.answered_at = Some(actor.at.clone());
        q
    }

    /// This question skipped; an earlier answer is left to the history.
    fn skipped(&self, reason: Option<String>, actor: &Actor) -> Question {
        let mut q = self.changed(Status::Skipped, actor);
        q.state.skip_reason = reason;
        // A question declined, then skipped, still says why it was declined.
        q.state
            .decline_reason
            .clone_from(&self.state.decline_reason);
        q
    }

    /// This question declined for `reason`.
    fn declined(&self, reason: &str, actor: &Actor) -> Question {
        let mut q = self.changed(Status::Declined, actor);
        q.state.decline_reason = Some(reason.to_string());
        q
    }

    /// The conflict message for replacing the answer on record.
    fn conflict(&self, action: &str) -> Error {
        Error::refused(
            Refusal::AlreadyAnswered { id: self.id },
            format!(
                "question {} is already answered: \"{}\"",
                self.id,
                self.state.answer.as_deref().unwrap_or("")
            ),
        )
        .with_flag_hint(format!(
            "pass --force to {action} (the earlier answer stays in the history)"
        ))
    }

    /// The refusal of a change to a question someone else settled while the person was
    /// answering it; `what` says what became of the change.
    fn settled_meanwhile(&self, what: &str) -> Error {
        Error::refused(
            Refusal::SettledMeanwhile { id: self.id },
            format!(
                "question {} was {} by someone else meanwhile; {what}",
                self.id,
                self.state.status.as_str()
            ),
        )
    }

    /// Answers this question as `mode` allows. `Ok(None)`: nothing to change (the same
    /// answer again where that is harmless); an error is a `conflict` or `invalid_answer`.
    pub fn answer(
        &self,
        input: &AnswerInput,
        mode: Mode,
        actor: &Actor,
    ) -> Result<Option<Transition>> {
        self.answer_noted(input, None, mode, actor)
    }

    /// `answer`, with the person's `note` beside the options they chose: the options stay
    /// selected (not taken for free text), and the answer reads `<labels>; <note>`.
    pub fn answer_noted(
        &self,
        input: &AnswerInput,
        note: Option<&str>,
        mode: Mode,
        actor: &Actor,
    ) -> Result<Option<Transition>> {
        self.refuse_if_approval()?;
        if let (Mode::Direct { force: false }, Status::Answered) = (mode, self.state.status) {
            // Refused before the answer is even read: the answer on record stands.
            return Err(self.conflict("replace that answer"));
        }
        let mut resolved = resolve_answer(self, input)?;
        if let Some(note) = note.map(str::trim).filter(|n| !n.is_empty()) {
            resolved.answer = format!("{}; {note}", resolved.answer);
        }
        let same = self.state.answer.as_deref() == Some(resolved.answer.as_str());
        let kind = match mode {
            Mode::Direct { .. } => match self.state.status {
                Status::Answered => EventKind::Reanswered,
                _ => EventKind::Answered,
            },
            Mode::Import { force } => match self.state.status {
                Status::Answered if same => return Ok(None),
                Status::Answered if !force => return Err(self.conflict("replace it")),
                _ => EventKind::Imported,
            },
            Mode::Ask => match self.state.status {
                Status::Pending => EventKind::Answered,
                _ if same => return Ok(None),
                _ => return Err(self.settled_meanwhile("nothing was recorded, run ask again")),
            },
            Mode::Default => match self.state.status {
                Status::Pending => EventKind::Defaulted,
                _ => return Ok(None),
            },
        };
        if mode == Mode::Default {
            // The person's proposed value, taken as offered: never custom text.
            resolved.was_custom = Some(false);
        }
        Ok(Some(Transition::Changed {
            kind,
            before: Box::new(self.clone()),
            after: Box::new(self.answered(resolved, actor)),
        }))
    }

    /// Skips this question as `mode` allows; skipping a skipped question changes nothing.
    pub fn skip(
        &self,
        reason: Option<String>,
        mode: Mode,
        actor: &Actor,
    ) -> Result<Option<Transition>> {
        self.refuse_if_approval()?;
        let force = match mode {
            Mode::Direct { force } | Mode::Import { force } => force,
            Mode::Ask | Mode::Default => false,
        };
        match self.state.status {
            Status::Skipped => return Ok(None),
            Status::Answered if !force => {
                let action = match mode {
                    Mode::Direct { .. } => "skip it anyway",
                    _ => "skip it",
                };
                return Err(self.conflict(action));
            }
            _ => {}
        }
        Ok(Some(Transition::Changed {
            kind: EventKind::Skipped,
            before: Box::new(self.clone()),
            after: Box::new(self.skipped(reason, actor)),
        }))
    }

    /// The person will not answer this as asked (`reason` says why). Declining an answered
    /// question needs `force`; declining again with the same reason changes nothing.
    pub fn decline(&self, reason: &str, force: bool, actor: &Actor) -> Result<Option<Transition>> {
        self.refuse_if_approval()?;
        let reason = reason.trim();
        if reason.is_empty() {
            let mut refused = Error::invalid_answer(format!(
                "declining question {} needs a reason: say what is wrong with the question, so it can be asked another way",
                self.id
            ));
            refused.refusal = Some(Refusal::NeedsReason { id: self.id });
            return Err(refused);
        }
        match self.state.status {
            Status::Declined if self.state.decline_reason.as_deref() == Some(reason) => {
                return Ok(None)
            }
            Status::Answered if !force => return Err(self.conflict("decline it anyway")),
            _ => {}
        }
        Ok(Some(Transition::Changed {
            kind: EventKind::Declined,
            before: Box::new(self.clone()),
            after: Box::new(self.declined(reason, actor)),
        }))
    }

    /// A decline chosen by a person to whom the pending question was put (`ask`, a form):
    /// someone else settling it meanwhile is a conflict, not a decline over their answer.
    pub fn decline_asked(&self, reason: &str, actor: &Actor) -> Result<Option<Transition>> {
        if self.state.status != Status::Pending {
            return Err(self.settled_meanwhile("nothing was recorded for it"));
        }
        self.decline(reason, false, actor)
    }

    /// A person to whom the pending question was put takes its proposal as their answer
    /// (the inbox's "Accept proposed", `ask`'s "Accept the proposal"): recorded as
    /// `defaulted`, by them. No proposal is `invalid_answer`; a question someone else
    /// settled meanwhile is a conflict.
    pub fn accept_proposal(&self, actor: &Actor) -> Result<Option<Transition>> {
        if self.state.status != Status::Pending {
            return Err(self.settled_meanwhile("its proposal was not taken"));
        }
        let Some(proposed) = self.proposed.clone().filter(|p| !p.trim().is_empty()) else {
            return Err(Error::invalid_answer(format!(
                "question {} has no proposed value to accept; answer it instead",
                self.id
            )));
        };
        let input = AnswerInput {
            text: Some(proposed),
            select: Vec::new(),
        };
        self.answer(&input, Mode::Default, actor)
    }

    /// The answer on record handed to an agent's own ask tool by a hook (`detail` says
    /// which harness and call): the question does not change, the history says so.
    pub fn delivered(&self, actor: &Actor, detail: serde_json::Value) -> Transition {
        Transition::Event {
            kind: EventKind::Delivered,
            before: Box::new(self.clone()),
            after: Box::new(self.clone()),
            actor: actor.clone(),
            detail: Some(detail),
        }
    }

    /// Whether `shown` (a fingerprint, or the text itself) names this question.
    pub fn is_the_one(&self, shown: &str) -> bool {
        shown == self.fingerprint() || shown == self.question
    }

    /// What happens when this question's time is up at `now`: answered with its proposed
    /// value (`default`) or skipped (`skip`), by nobody, through `expiry`. None while it is
    /// not due, not pending, or kept.
    pub fn expire(&self, now: &str) -> Option<Transition> {
        if !self.is_expired(now) {
            return None;
        }
        let actor = Actor {
            by: None,
            channel: Channel::Expiry,
            at: now.to_string(),
        };
        let after = match self.on_expiry {
            OnExpiry::Keep => return None,
            OnExpiry::Reject if self.state.approval.is_none() => return None,
            OnExpiry::Reject => self.declined("expired", &actor),
            OnExpiry::Skip => self.skipped(Some("expired".to_string()), &actor),
            OnExpiry::Default => {
                let input = AnswerInput {
                    text: self.proposed.clone(),
                    select: Vec::new(),
                };
                match resolve_answer(self, &input) {
                    Ok(mut resolved) => {
                        resolved.was_custom = resolved.was_custom.map(|_| false);
                        self.answered(resolved, &actor)
                    }
                    // No proposed value that answers it (refused at log, but a row may
                    // say otherwise): it is skipped rather than left to expire again.
                    Err(_) => self.skipped(Some("expired".to_string()), &actor),
                }
            }
        };
        Some(Transition::Changed {
            kind: EventKind::Expired,
            before: Box::new(self.clone()),
            after: Box::new(after),
        })
    }

    /// Takes this question out of the live ledger; its whole row stays in the history. An
    /// open approval is refused (`conflict`): only its votes settle it, and clearing it
    /// would open its gate.
    pub fn clear(&self, actor: &Actor) -> Result<Transition> {
        if self.state.approval.is_some() && self.state.status == Status::Pending {
            return Err(Error::conflict(format!(
                "question {} is an open approval: only its approvers' votes settle it, and \
                 clearing it would open its gate; nothing was cleared",
                self.id
            )));
        }
        Ok(Transition::Cleared {
            before: Box::new(self.clone()),
            actor: actor.clone(),
            detail: None,
        })
    }
}

/// What a transition may change of a question: its status and answer, who gave them and
/// when, an approval's votes. The history stores only this for each change (the rest of
/// the question is on its row, or, once cleared, in the `cleared` event), and
/// `Question::with_state` puts a question back together. Who made the last change of
/// status is none until one is made, and `answered_by` none for a change nobody made
/// (expiry); rows kept whole in the history by an older version have none of these keys.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct State {
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"))
    )]
    pub answered_at: Option<String>,
    // The last change's time; the history leaves it out while it is the question's
    // `created_at` (`Question::stored_state`), and reads it back so.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"))
    )]
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub was_custom: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decline_reason: Option<String>,
    /// Who made the last change of status, and through what (§8); none until one is made,
    /// and `answered_by` none for a change nobody made (expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
    /// Approvals only (§12): who may vote, how many must approve, who asked, the votes.
    /// Votes change without a change of status, so the state carries them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

impl State {
    /// A question's state when it is logged at `at`: pending, unanswered.
    pub fn logged(at: &str, approval: Option<Approval>) -> State {
        State {
            status: Status::Pending,
            answer: None,
            answered_at: None,
            updated_at: at.to_string(),
            selected: Vec::new(),
            was_custom: None,
            skip_reason: None,
            decline_reason: None,
            answered_by: None,
            channel: None,
            approval,
        }
    }
}

impl Question {
    /// Its state as the history stores it: `updated_at` left out while it is `created_at`.
    pub fn stored_state(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.state).unwrap_or_default();
        if self.state.updated_at == self.created_at {
            if let Some(map) = value.as_object_mut() {
                map.remove("updated_at");
            }
        }
        value
    }

    /// This question as it was when it was logged: pending, unanswered, no votes.
    pub fn as_logged(&self) -> Question {
        let approval = self.state.approval.clone().map(|a| Approval {
            votes: Vec::new(),
            ..a
        });
        Question {
            state: State::logged(&self.created_at, approval),
            ..self.clone()
        }
    }

    /// This question with `state` in place of its own (a stored state without a time is
    /// unchanged since it was logged; one without an approval keeps the question's).
    pub fn with_state(&self, mut state: State) -> Question {
        if state.updated_at.is_empty() {
            state.updated_at.clone_from(&self.created_at);
        }
        if state.approval.is_none() {
            state.approval.clone_from(&self.state.approval);
        }
        Question {
            state,
            ..self.clone()
        }
    }
}

/// The rule an answer or a skip is made under; each front end picks the one it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `answer` and `skip`: replacing an answer on record needs force.
    Direct { force: bool },
    /// An asking tool's reply: the same answer again changes nothing, another needs force.
    Import { force: bool },
    /// A person's answers gathered before anything is written: a question someone else
    /// changed meanwhile is a conflict, unless they gave the same answer.
    Ask,
    /// A pending question's proposed value; a question no longer pending is left alone.
    Default,
}

/// One change of the ledger, as the store writes it: the row and its history event
/// together.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// A new question.
    Logged { new: Box<NewQuestion>, at: String },
    /// A question's status or answer changed; `after.updated_at` is when.
    Changed {
        kind: EventKind,
        before: Box<Question>,
        after: Box<Question>,
    },
    /// A question taken out of the live ledger; `detail` goes into its event.
    Cleared {
        before: Box<Question>,
        actor: Actor,
        detail: Option<serde_json::Value>,
    },
    /// An event made by `actor` that may change the question (a vote) or not (a refused
    /// one), with what the event itself says in `detail`.
    Event {
        kind: EventKind,
        before: Box<Question>,
        after: Box<Question>,
        actor: Actor,
        detail: Option<serde_json::Value>,
    },
}

impl Transition {
    /// This change with `detail` in its history event (a channel's identity and event id,
    /// §14): a plain change becomes an event of the same kind by the same person, and an
    /// event's own detail takes `detail`'s keys.
    #[must_use]
    pub fn with_detail(self, detail: Option<&serde_json::Value>) -> Transition {
        let Some(extra) = detail else { return self };
        let merge = |own: Option<serde_json::Value>| {
            let mut merged = match own {
                Some(serde_json::Value::Object(m)) => m,
                Some(other) => std::iter::once(("detail".to_string(), other)).collect(),
                None => serde_json::Map::new(),
            };
            if let serde_json::Value::Object(m) = extra {
                merged.extend(m.clone());
            }
            Some(serde_json::Value::Object(merged))
        };
        match self {
            Transition::Changed {
                kind,
                before,
                after,
            } => {
                let actor = Actor {
                    by: after.state.answered_by.clone(),
                    channel: after.state.channel.unwrap_or(Channel::Cli),
                    at: after.state.updated_at.clone(),
                };
                Transition::Event {
                    kind,
                    before,
                    after,
                    actor,
                    detail: merge(None),
                }
            }
            Transition::Event {
                kind,
                before,
                after,
                actor,
                detail,
            } => Transition::Event {
                kind,
                before,
                after,
                actor,
                detail: merge(detail),
            },
            Transition::Cleared {
                before,
                actor,
                detail,
            } => Transition::Cleared {
                before,
                actor,
                detail: merge(detail),
            },
            other => other,
        }
    }
}

/// A question as a front end read it (the command line's flags, an MCP call's arguments),
/// before the model's rules make it one to log (`NewQuestion::build`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent yes/no facts of a question (§4's, and --urgent), not a state"
)]
pub struct Draft {
    pub stage: String,
    pub group: Option<String>,
    pub question: String,
    pub proposed: Option<String>,
    pub required: bool,
    pub header: Option<String>,
    pub context: Option<String>,
    pub options: Vec<QuestionOption>,
    pub multi_select: bool,
    pub allow_freeform: bool,
    pub source: Source,
    pub approval: Option<Approval>,
    /// Logged `--urgent` (see `Question::urgent`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub urgent: bool,
}

/// What a refusal of a multi-select, or of a question with no free-form answer, tells a
/// command-line user to do.
const ADD_OPTIONS: &str = "add --option LABEL or --options-json";

/// The one rule of what an approval may be: required, with no proposed value, no options
/// and nothing that needs them; the first clash found, as a refusal front ends word.
fn approval_clash(
    required: bool,
    proposed: Option<&str>,
    options: &[QuestionOption],
    multi_select: bool,
    allow_freeform: bool,
) -> Result<()> {
    let clash = [
        (!required, ApprovalClash::Optional),
        (proposed.is_some(), ApprovalClash::Proposed),
        (!options.is_empty(), ApprovalClash::Options),
        (multi_select, ApprovalClash::MultiSelect),
        (!allow_freeform, ApprovalClash::NoFreeform),
    ]
    .into_iter()
    .find_map(|(clashes, what)| clashes.then_some(what));
    match clash {
        None => Ok(()),
        Some(what) => {
            let mut refused = Error::usage(
                "an approval is required and offers no options or proposed value: its answers \
                 are votes",
            );
            refused.refusal = Some(Refusal::NotAnApproval(what));
            Err(refused)
        }
    }
}

impl NewQuestion {
    /// The rules every new question keeps, whoever asks it: a question text; blank
    /// texts are none; option labels tidied (see `tidy_options`); a multi-select, or a
    /// question that takes no free-form answer, has options to choose from; the proposed
    /// value is its own, else the recommended option's; an approval is required and
    /// offers no options or proposed value (its answers are votes). Refusals are
    /// `usage` errors worded for every front end, with the command line's flags as hints.
    pub fn build(d: Draft) -> Result<NewQuestion> {
        let blank = |s: Option<String>| s.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        if d.approval.is_some() {
            approval_clash(
                d.required,
                d.proposed.as_deref(),
                &d.options,
                d.multi_select,
                d.allow_freeform,
            )?;
        }
        let question = d.question.trim().to_string();
        if question.is_empty() {
            return Err(Error::usage("the question is empty: give it a text"));
        }
        let options = tidy_options(d.options)?;
        if options.is_empty() && d.multi_select {
            return Err(
                Error::usage("a multi-select question needs options to choose from")
                    .with_flag_hint(ADD_OPTIONS),
            );
        }
        if options.is_empty() && !d.allow_freeform {
            return Err(Error::usage(
                "a question that takes no free-form answer needs options to choose from",
            )
            .with_flag_hint(ADD_OPTIONS));
        }
        let proposed = proposed_or_recommended(blank(d.proposed), &options);
        Ok(NewQuestion {
            stage: d.stage,
            group_name: blank(d.group),
            question,
            proposed,
            required: d.required,
            header: blank(d.header),
            context: blank(d.context),
            options,
            multi_select: d.multi_select,
            allow_freeform: d.allow_freeform,
            source: d.source,
            expires_at: None,
            on_expiry: OnExpiry::Keep,
            approval: d.approval,
            harness_call: None,
            urgent: d.urgent,
            logged_by: None,
        })
    }

    /// The draft this question is built from again (`build` of it gives it back, its
    /// expiry and harness call aside): what crosses a wire, so that the side that logs it
    /// keeps the rules.
    pub fn draft(&self) -> Draft {
        Draft {
            stage: self.stage.clone(),
            group: self.group_name.clone(),
            question: self.question.clone(),
            proposed: self.proposed.clone(),
            required: self.required,
            header: self.header.clone(),
            context: self.context.clone(),
            options: self.options.clone(),
            multi_select: self.multi_select,
            allow_freeform: self.allow_freeform,
            source: self.source,
            approval: self.approval.clone(),
            urgent: self.urgent,
        }
    }

    /// The question as the ledger will hold it once logged at `now` (its id not known yet).
    /// This question as an approval, under the one rule `build` keeps (an ingested
    /// question is parsed first, then made one).
    pub fn into_approval(mut self, approval: Approval) -> Result<NewQuestion> {
        approval_clash(
            self.required,
            self.proposed.as_deref(),
            &self.options,
            self.multi_select,
            self.allow_freeform,
        )?;
        self.approval = Some(approval);
        Ok(self)
    }

    pub fn as_logged(&self, now: &str) -> Question {
        Question {
            id: 0,
            stage: self.stage.clone(),
            group_name: self.group_name.clone(),
            question: self.question.clone(),
            proposed: self.proposed.clone(),
            required: self.required,
            created_at: now.to_string(),
            header: self.header.clone(),
            context: self.context.clone(),
            options: self.options.clone(),
            multi_select: self.multi_select,
            allow_freeform: self.allow_freeform,
            source: self.source,
            expires_at: self.expires_at.clone(),
            on_expiry: self.on_expiry,
            harness_call: self.harness_call.clone(),
            urgent: self.urgent,
            logged_by: self.logged_by.clone(),
            state: State::logged(now, self.approval.clone()),
        }
    }

    /// Logging this question at `now`.
    pub fn log(self, now: &str) -> Transition {
        Transition::Logged {
            new: Box::new(self),
            at: now.to_string(),
        }
    }
}

/// What `log` (and later `ingest`) hands the store to insert.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent yes/no facts of a question (§4's, and --urgent), not a state"
)]
pub struct NewQuestion {
    pub stage: String,
    pub group_name: Option<String>,
    pub question: String,
    pub proposed: Option<String>,
    pub required: bool,
    pub header: Option<String>,
    pub context: Option<String>,
    pub options: Vec<QuestionOption>,
    pub multi_select: bool,
    pub allow_freeform: bool,
    pub source: Source,
    pub expires_at: Option<String>,
    pub on_expiry: OnExpiry,
    /// An approval's policy, its requester resolved; none for an ordinary question.
    pub approval: Option<Approval>,
    /// The harness call it is asked in (see `Question::harness_call`); none for every
    /// question not asked through a harness's own ask tool.
    pub harness_call: Option<String>,
    /// Logged `--urgent` (see `Question::urgent`).
    pub urgent: bool,
    /// Who logs it (see `Question::logged_by`): the door sets it from its caller.
    pub logged_by: Option<String>,
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum EventKind {
    Logged,
    Answered,
    Reanswered,
    Skipped,
    Declined,
    Expired,
    Cleared,
    Imported,
    Defaulted,
    /// A vote on an approval, recorded.
    Voted,
    /// A vote refused (`forbidden`): who tried is recorded.
    Refused,
    /// An approval settled by its quorum.
    Approved,
    /// An approval settled by a rejection.
    Rejected,
    /// A group of approvers changed (not a question's event: its question_id is 0).
    Group,
    /// A harness hook handed the answer on record to the agent's own ask tool.
    Delivered,
    /// A person's channel identity linked or unlinked (§14; question_id 0).
    People,
    /// A token made or revoked (§15; question_id 0). Its secret is never in it.
    Token,
    /// A stage pattern's routing policy set or unset (§14a; question_id 0).
    Policy,
    /// A question's cards reposted to those who have not answered, by its policy (§14a).
    Reminded,
    /// A question's cards sent to more people, by its policy (§14a).
    Escalated,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl EventKind {
    /// Reads a stored kind; `None` for one this binary does not know.
    pub fn from_stored(text: &str) -> Option<EventKind> {
        EventKind::parse(text)
    }
}

/// One line of the append-only history: the whole question before and after a change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Event {
    /// The event's place in the ledger's history: increasing, never reused.
    pub seq: i64,
    pub at: String,
    pub event: EventKind,
    pub question_id: i64,
    pub stage: String,
    /// Who made the change and through what (none for how a question was logged).
    pub answered_by: Option<String>,
    pub channel: Option<Channel>,
    pub before: Option<Question>,
    pub after: Option<Question>,
    /// What a vote, a refusal, a settlement or a group change says beyond the question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

/// The proposed value a question carries: its own, else its recommended option's label.
pub fn proposed_or_recommended(
    proposed: Option<String>,
    options: &[QuestionOption],
) -> Option<String> {
    proposed.filter(|p| !p.trim().is_empty()).or_else(|| {
        options
            .iter()
            .find(|o| o.recommended)
            .map(|o| o.label.clone())
    })
}

/// `--required` and `Required:` values: true|false|yes|no|1|0 in any case.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Some(true),
        "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

const RECOMMENDED_SUFFIX: &str = " (recommended)";

/// Trims labels, reads a " (Recommended)" suffix, refuses blank and repeated labels.
pub fn tidy_options(options: Vec<QuestionOption>) -> Result<Vec<QuestionOption>> {
    let mut tidy: Vec<QuestionOption> = Vec::with_capacity(options.len());
    for opt in options {
        let (label, marked) = split_recommended(&opt.label);
        if label.is_empty() {
            return Err(Error::usage(
                "an option label is empty: every option needs a label",
            ));
        }
        if tidy
            .iter()
            .any(|o| o.label.to_lowercase() == label.to_lowercase())
        {
            return Err(Error::usage(format!(
                "the option '{label}' is given twice: option labels must differ"
            )));
        }
        tidy.push(QuestionOption {
            label: label.to_string(),
            description: opt.description,
            recommended: opt.recommended || marked,
        });
    }
    Ok(tidy)
}

/// Splits a trailing " (Recommended)" (any case) off a label.
pub fn split_recommended(label: &str) -> (&str, bool) {
    let trimmed = label.trim();
    let lower = trimmed.to_lowercase();
    if lower.ends_with(RECOMMENDED_SUFFIX) && lower.len() == trimmed.len() {
        let cut = trimmed.len() - RECOMMENDED_SUFFIX.len();
        (trimmed[..cut].trim_end(), true)
    } else {
        (trimmed, false)
    }
}

/// The form two labels are compared in: trimmed, case-folded, no " (Recommended)".
fn label_key(label: &str) -> String {
    split_recommended(label).0.to_lowercase()
}

/// The comma list of `check --ids`: positive integers, spaces allowed, duplicates folded.
pub fn parse_ids(text: &str) -> Result<Vec<i64>, String> {
    let mut ids = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        match part.parse::<i64>() {
            Ok(id) if id > 0 => {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            _ => {
                return Err(format!(
                    "'{text}' is not a comma-separated list of positive question ids (like 7,8,9)"
                ))
            }
        }
    }
    Ok(ids)
}

/// What the person chose, before it is checked against the question.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AnswerInput {
    pub text: Option<String>,
    pub select: Vec<String>,
}

/// An answer checked against the question's options.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub answer: String,
    pub selected: Vec<String>,
    pub was_custom: Option<bool>,
}

/// Applies the contract's option rules; a refusal is `invalid_answer`.
pub fn resolve_answer(q: &Question, input: &AnswerInput) -> Result<Resolved> {
    let text = input.text.as_deref().map_or("", str::trim);
    if input.select.is_empty() && text.is_empty() {
        let id = q.id;
        return Err(Error::invalid_answer(format!(
            "the answer to question {id} is empty: give the answer text, or skip the question"
        ))
        .with_cli_wording(format!(
            "the answer to question {id} is empty: give the answer text, or use 'questions skip --id {id}' to skip it"
        )));
    }
    if q.options.is_empty() {
        if !input.select.is_empty() {
            let id = q.id;
            return Err(Error::invalid_answer(format!(
                "question {id} has no options to select: answer it in words"
            ))
            .with_cli_wording(format!(
                "question {id} has no options to select: answer it with --answer TEXT"
            )));
        }
        // Asking tools offer the proposed value as "<proposed> (Recommended)".
        let (bare, marked) = split_recommended(text);
        let answer = match &q.proposed {
            Some(p) if marked && label_key(p) == bare.to_lowercase() => p.trim(),
            _ => text,
        };
        return Ok(Resolved {
            answer: answer.to_string(),
            selected: Vec::new(),
            was_custom: None,
        });
    }

    let find = |label: &str| {
        let key = label_key(label);
        q.options.iter().find(|o| label_key(&o.label) == key)
    };
    let mut selected: Vec<String> = Vec::new();
    for label in &input.select {
        match find(label) {
            Some(opt) => {
                if !selected.contains(&opt.label) {
                    selected.push(opt.label.clone());
                }
            }
            None => {
                return Err(Error::invalid_answer(format!(
                    "question {} has no option '{}'; its options are: {}",
                    q.id,
                    label.trim(),
                    option_list(q)
                )))
            }
        }
    }

    let mut custom: Option<&str> = None;
    if !text.is_empty() {
        if let Some(opt) = find(text) {
            if !selected.contains(&opt.label) {
                selected.push(opt.label.clone());
            }
        } else if let Some(labels) = q.multi_select.then(|| split_labels(q, text)).flatten() {
            for label in labels {
                if !selected.contains(&label) {
                    selected.push(label);
                }
            }
        } else {
            custom = Some(text);
        }
    }

    if custom.is_some() && !q.allow_freeform {
        return Err(Error::invalid_answer(format!(
            "question {} takes only its options, not free text; choose one of: {}",
            q.id,
            option_list(q)
        )));
    }
    if !q.multi_select && selected.len() + usize::from(custom.is_some()) > 1 {
        return Err(Error::invalid_answer(format!(
            "question {} takes a single choice, but {} were given",
            q.id,
            selected.len() + usize::from(custom.is_some())
        )));
    }

    let mut parts = selected.clone();
    parts.extend(custom.map(str::to_string));
    Ok(Resolved {
        answer: parts.join(", "),
        selected,
        was_custom: Some(custom.is_some()),
    })
}

/// "A, B" on a multi-select question, when every part names an option.
fn split_labels(q: &Question, text: &str) -> Option<Vec<String>> {
    let mut labels = Vec::new();
    for part in text.split(',') {
        let key = label_key(part);
        let opt = q.options.iter().find(|o| label_key(&o.label) == key)?;
        labels.push(opt.label.clone());
    }
    Some(labels)
}

fn option_list(q: &Question) -> String {
    q.options
        .iter()
        .map(|o| format!("'{}'", o.label))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Timestamps as the contract prints them: RFC 3339, UTC, milliseconds, `Z`. Rows written
/// by other tools may carry other forms; those that can be read are rewritten, the rest
/// are shown as stored.
pub fn normalize_timestamp(text: &str) -> String {
    use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
    if is_canonical(text) {
        return text.to_string();
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return t
            .with_timezone(&Utc)
            .to_rfc3339_opts(SecondsFormat::Millis, true);
    }
    for layout in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, layout) {
            return t.and_utc().to_rfc3339_opts(SecondsFormat::Millis, true);
        }
    }
    // A number: seconds since the epoch, or milliseconds (JavaScript's Date.now()).
    if let Ok(n) = text.trim().parse::<f64>() {
        let millis = if n.abs() >= 1e11 { n } else { n * 1000.0 };
        if let Some(t) = DateTime::<Utc>::from_timestamp_millis(millis as i64) {
            return t.to_rfc3339_opts(SecondsFormat::Millis, true);
        }
    }
    // Nothing a time can be read from (an empty text): the contract's shape still, at
    // the earliest instant, which no real question has.
    UNKNOWN_TIME.to_string()
}

/// What a stored time that cannot be read is shown as.
pub const UNKNOWN_TIME: &str = "1970-01-01T00:00:00.000Z";

/// `2026-11-21T23:47:04.692Z`: what we write, so what almost every row holds.
fn is_canonical(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relay_channel_is_a_channel_and_back_by_its_name() {
        for r in Relayed::all() {
            assert_eq!(r.channel().relayed(), Some(*r));
            assert_eq!(Relayed::named(r.as_str()), Some(*r));
            assert!(r.identity_form().starts_with(&format!("{}:", r.as_str())));
        }
        let relayed: Vec<Channel> = Channel::ALL
            .iter()
            .copied()
            .filter(|c| c.relayed().is_some())
            .collect();
        assert_eq!(relayed.len(), Relayed::all().len());
        assert_eq!(Relayed::named("cli"), None);
        assert_eq!(Relayed::named("github"), None);
        assert_eq!(
            Relayed::listed("or", str::to_string),
            "telegram, slack, email or matrix"
        );
        assert_eq!(Relayed::Telegram.pairing_message("ABC"), "/start ABC");
        assert_eq!(Relayed::Email.pairing_message("ABC"), "ABC");
    }

    fn question(options: &[&str], multi: bool, freeform: bool) -> Question {
        Question {
            id: 3,
            stage: "s".into(),
            group_name: None,
            question: "q?".into(),
            proposed: None,
            required: true,
            created_at: String::new(),
            header: None,
            context: None,
            options: options
                .iter()
                .map(|l| QuestionOption {
                    label: l.to_string(),
                    description: None,
                    recommended: false,
                })
                .collect(),
            multi_select: multi,
            allow_freeform: freeform,
            source: Source::Cli,
            expires_at: None,
            on_expiry: OnExpiry::Keep,
            harness_call: None,
            urgent: false,
            logged_by: None,
            state: State::logged("", None),
        }
    }

    fn text(t: &str) -> AnswerInput {
        AnswerInput {
            text: Some(t.into()),
            select: vec![],
        }
    }

    /// A declined question skipped later still says why it was declined: the agent that
    /// asked reads the reason after the skip too.
    #[test]
    fn a_skip_after_a_decline_keeps_the_declines_reason() {
        let actor = Actor {
            by: Some("ana".into()),
            channel: Channel::Cli,
            at: "2026-01-01T00:00:00.000Z".into(),
        };
        let pending = question(&[], false, true);
        let Some(Transition::Changed {
            after: declined, ..
        }) = pending.decline("ask the team", false, &actor).unwrap()
        else {
            panic!("not declined");
        };
        let Some(Transition::Changed { after: skipped, .. }) = declined
            .skip(Some("later".into()), Mode::Direct { force: false }, &actor)
            .unwrap()
        else {
            panic!("not skipped");
        };
        assert_eq!(skipped.state.status, Status::Skipped);
        assert_eq!(skipped.state.skip_reason.as_deref(), Some("later"));
        assert_eq!(
            skipped.state.decline_reason.as_deref(),
            Some("ask the team")
        );
    }

    /// A refusal carries what it is about, for the front ends that word it themselves.
    #[test]
    fn refusals_say_what_they_refuse_as_data() {
        let actor = Actor {
            by: Some("ana".into()),
            channel: Channel::Cli,
            at: "2026-01-01T00:00:00.000Z".into(),
        };
        let mut answered = Question {
            proposed: Some("no".into()),
            ..question(&[], false, true)
        };
        answered.state.status = Status::Answered;
        answered.state.answer = Some("yes".into());
        let refusal = |r: Result<Option<Transition>>| r.unwrap_err().refusal;
        let already = Some(Refusal::AlreadyAnswered { id: 3 });
        let direct = Mode::Direct { force: false };
        assert_eq!(
            refusal(answered.answer(&text("no"), direct, &actor)),
            already
        );
        assert_eq!(refusal(answered.skip(None, direct, &actor)), already);
        assert_eq!(refusal(answered.decline("why", false, &actor)), already);
        let meanwhile = Some(Refusal::SettledMeanwhile { id: 3 });
        assert_eq!(
            refusal(answered.answer(&text("no"), Mode::Ask, &actor)),
            meanwhile
        );
        assert_eq!(refusal(answered.accept_proposal(&actor)), meanwhile);
        // An invalid answer is not a refusal a front end rewords.
        let pending = question(&["A", "B"], false, false);
        assert_eq!(refusal(pending.answer(&text("C"), direct, &actor)), None);
    }

    #[test]
    fn bools_read_every_spelling_and_nothing_else() {
        for t in ["true", "TRUE", "Yes", "1", " true "] {
            assert_eq!(parse_bool(t), Some(true), "{t}");
        }
        for t in ["false", "False", "NO", "0"] {
            assert_eq!(parse_bool(t), Some(false), "{t}");
        }
        for t in ["", "maybe", "2", "t"] {
            assert_eq!(parse_bool(t), None, "{t}");
        }
    }

    #[test]
    fn ids_are_positive_and_deduplicated() {
        assert_eq!(parse_ids("7, 8,9,7"), Ok(vec![7, 8, 9]));
        for bad in ["", "1,,2", "0", "-1", "a", "1.5"] {
            assert!(parse_ids(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn recommended_suffix_is_split_in_any_case() {
        assert_eq!(split_recommended("Token (Recommended)"), ("Token", true));
        assert_eq!(split_recommended(" token (recommended) "), ("token", true));
        assert_eq!(split_recommended("Plain"), ("Plain", false));
    }

    #[test]
    fn a_label_in_any_case_selects_its_option() {
        let q = question(&["Postgres", "SQLite"], false, true);
        let r = resolve_answer(&q, &text(" sqlite (Recommended) ")).unwrap();
        assert_eq!(r.answer, "SQLite");
        assert_eq!(r.selected, vec!["SQLite"]);
        assert_eq!(r.was_custom, Some(false));
    }

    #[test]
    fn other_text_is_custom_unless_freeform_is_off() {
        let q = question(&["A", "B"], false, true);
        let r = resolve_answer(&q, &text("C")).unwrap();
        assert_eq!((r.answer.as_str(), r.was_custom), ("C", Some(true)));
        let strict = question(&["A", "B"], false, false);
        assert!(resolve_answer(&strict, &text("C")).is_err());
    }

    #[test]
    fn single_select_refuses_two_labels() {
        let q = question(&["A", "B"], false, true);
        let input = AnswerInput {
            text: None,
            select: vec!["A".into(), "B".into()],
        };
        assert!(resolve_answer(&q, &input).is_err());
        let multi = question(&["A", "B"], true, true);
        let r = resolve_answer(&multi, &input).unwrap();
        assert_eq!(r.answer, "A, B");
    }

    #[test]
    fn multi_select_joins_labels_then_custom_text() {
        let q = question(&["A", "B", "C"], true, true);
        let input = AnswerInput {
            text: Some("also D".into()),
            select: vec!["c".into(), "A".into()],
        };
        let r = resolve_answer(&q, &input).unwrap();
        assert_eq!(r.answer, "C, A, also D");
        assert_eq!(r.selected, vec!["C", "A"]);
        assert_eq!(r.was_custom, Some(true));
        let listed = resolve_answer(&q, &text("a, b")).unwrap();
        assert_eq!(listed.selected, vec!["A", "B"]);
    }

    #[test]
    fn the_proposed_value_offered_as_recommended_reads_back_plain() {
        let mut q = question(&[], false, true);
        q.proposed = Some("Build a blog".into());
        assert_eq!(
            resolve_answer(&q, &text("Build a blog (Recommended)"))
                .unwrap()
                .answer,
            "Build a blog"
        );
        assert_eq!(
            resolve_answer(&q, &text("Other (Recommended)"))
                .unwrap()
                .answer,
            "Other (Recommended)"
        );
    }

    #[test]
    fn unknown_select_label_and_blank_answers_are_refused() {
        let q = question(&["A"], false, true);
        let input = AnswerInput {
            text: None,
            select: vec!["Z".into()],
        };
        assert!(resolve_answer(&q, &input).is_err());
        assert!(resolve_answer(&q, &text("   ")).is_err());
        let plain = question(&[], false, true);
        assert!(resolve_answer(&plain, &input).is_err());
    }

    #[test]
    fn timestamps_are_normalized_when_readable() {
        assert_eq!(
            normalize_timestamp("2026-11-21T23:47:04.692Z"),
            "2026-11-21T23:47:04.692Z"
        );
        assert_eq!(
            normalize_timestamp("2026-11-21 23:47:04"),
            "2026-11-21T23:47:04.000Z"
        );
        assert_eq!(
            normalize_timestamp("2026-11-22T01:47:04+02:00"),
            "2026-11-21T23:47:04.000Z"
        );
        assert_eq!(
            normalize_timestamp("1732233600"),
            "2024-11-22T00:00:00.000Z"
        );
        assert_eq!(
            normalize_timestamp("1732233600000"),
            "2024-11-22T00:00:00.000Z"
        );
        // Nothing to read a time from: the contract's shape still, at the unknown instant.
        assert_eq!(normalize_timestamp("yesterday"), UNKNOWN_TIME);
        assert_eq!(normalize_timestamp(""), UNKNOWN_TIME);
    }

    /// A refusal keeps the question it was about as its document (`Error::on_record`):
    /// what a front end prints from it is the question's own document, every part of it.
    #[test]
    fn the_question_a_refusal_keeps_prints_as_the_question_does() {
        let mut answered = question(&["PostgreSQL", "SQLite"], true, true);
        answered.options[0].description = Some("the shared one".into());
        answered.options[1].recommended = true;
        answered.header = Some("Database".into());
        answered.context = Some("For the team".into());
        answered.expires_at = Some("2026-11-30T00:00:00.000Z".into());
        answered.on_expiry = OnExpiry::Default;
        answered.harness_call = Some("claude-code:s1:c1".into());
        answered.urgent = true;
        answered.state = State {
            status: Status::Answered,
            answer: Some("SQLite, and a note".into()),
            answered_at: Some("2026-11-28T00:00:00.000Z".into()),
            selected: vec!["SQLite".into()],
            was_custom: Some(true),
            answered_by: Some("dana".into()),
            channel: Some(Channel::Web),
            ..State::logged("2026-11-27T00:00:00.000Z", None)
        };
        let mut approval = question(&[], false, true);
        approval.state = State::logged(
            "2026-11-27T00:00:00.000Z",
            Some(Approval {
                approvers: vec!["ann".into(), "group:ops".into()],
                min: 2,
                requester: "rob".into(),
                logged_by: Some("ci".into()),
                votes: vec![Vote {
                    by: "bea".into(),
                    vote: Verdict::Approve,
                    comment: Some("fine".into()),
                    at: "2026-11-28T00:00:00.000Z".into(),
                    channel: Channel::Cli,
                    on_behalf_of: Some("ann".into()),
                }],
            }),
        );
        let mut keyed = question(&[], false, true);
        keyed.harness_call = Some(format!("{CALLER_KEY}ci:k1"));
        for q in [answered, approval, keyed] {
            let refused = Error::conflict("refused").about(&q);
            let back = refused.question_on_record().expect("the question is kept");
            assert_eq!(
                serde_json::to_string(&back).unwrap(),
                serde_json::to_string(&q).unwrap()
            );
        }
    }
}

/// A closed set of names the contract fixes: each enum below lists its values once, here,
/// and every front end's parser, list of choices and error message is made from that list
/// (the command line's value parsers, the web's query parameters).
pub trait Vocabulary: Copy + PartialEq + Send + Sync + 'static {
    /// Every value, in the order messages list them.
    const ALL: &'static [Self];
    /// What one value is called in a message: "status".
    const WHAT: &'static str;
    fn name(self) -> &'static str;

    /// What one value means, where a list of them is shown to people (a command's help).
    fn help(self) -> Option<&'static str> {
        None
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == text)
    }

    fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|v| v.name()).collect()
    }

    /// Why `text` is not one: "status 'done' is not one of pending, answered, skipped or
    /// declined".
    fn not_one(text: &str) -> String {
        let names = Self::names();
        let listed = match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        format!("{} '{text}' is not one of {listed}", Self::WHAT)
    }
}

/// Each vocabulary's names are its enum's (strum's `IntoStaticStr`, with the same
/// `serialize_all` as serde's `rename_all`), its values in declaration order
/// (`VariantArray`): nothing is listed twice.
macro_rules! vocabulary {
    ($t:ty, $what:literal) => {
        impl $crate::model::Vocabulary for $t {
            const ALL: &'static [Self] = <$t as strum::VariantArray>::VARIANTS;
            const WHAT: &'static str = $what;
            fn name(self) -> &'static str {
                self.into()
            }
        }
    };
    // A vocabulary whose values' doc comments say what each means (strum's `EnumMessage`).
    ($t:ty, $what:literal, documented) => {
        impl $crate::model::Vocabulary for $t {
            const ALL: &'static [Self] = <$t as strum::VariantArray>::VARIANTS;
            const WHAT: &'static str = $what;
            fn name(self) -> &'static str {
                self.into()
            }
            fn help(self) -> Option<&'static str> {
                strum::EnumMessage::get_documentation(&self)
            }
        }
    };
}

vocabulary!(Status, "status");
vocabulary!(Verdict, "vote");
vocabulary!(OnExpiry, "on-expiry");
vocabulary!(Source, "source");
vocabulary!(Channel, "channel");
vocabulary!(EventKind, "event");
// The formats name theirs where they are defined (formats/mod.rs): the model knows
// nothing of the formats.
pub(crate) use vocabulary;

#[cfg(test)]
mod vocabulary_tests {
    use super::*;

    fn round_trips<T: Vocabulary + std::fmt::Debug>() {
        let names = T::names();
        for v in T::ALL {
            assert_eq!(T::parse(v.name()), Some(*v));
        }
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(T::parse("no such name"), None);
    }

    #[test]
    fn every_vocabulary_reads_back_each_of_its_names() {
        round_trips::<Status>();
        round_trips::<Verdict>();
        round_trips::<OnExpiry>();
        round_trips::<Source>();
        round_trips::<Channel>();
        round_trips::<EventKind>();
        assert_eq!(
            Status::not_one("done"),
            "status 'done' is not one of pending, answered, skipped or declined"
        );
    }

    /// The lists are complete: a value missing from `ALL` could not be read back from the
    /// ledger. A new variant goes into its list, and its count here.
    #[test]
    fn every_variant_is_listed() {
        assert_eq!(Status::ALL.len(), 4);
        assert_eq!(Verdict::ALL.len(), 2);
        assert_eq!(OnExpiry::ALL.len(), 4);
        assert_eq!(Source::ALL.len(), 4);
        assert_eq!(Channel::ALL.len(), 18);
        assert_eq!(EventKind::ALL.len(), 20);
    }
}
