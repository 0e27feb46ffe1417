//! The person's side of `ask`: one prompt per question on the terminal, through inquire.
//! Nothing here touches the ledger; it returns what the person chose, or that they
//! cancelled. Every text from the ledger is sanitized before it is shown. Nothing is
//! chosen for the person: Enter alone leaves a question pending, and a proposal is taken
//! only by its own entry (or Tab, in a text answer).

use std::fmt;

use inquire::autocompletion::{Autocomplete, Replacement};
use inquire::error::{CustomUserError, InquireError};
use inquire::{Confirm, MultiSelect, Select, Text};

use crate::output::sanitize;
use crate::strings;
use questions_core::error::{Error, Result};
use questions_core::model::{AnswerInput, OnExpiry, Question, Status};
pub(crate) use questions_core::ops::Choice;
use questions_core::ops::{Asked, GateReport};

/// Typed as an answer to a free-text question, declines it with the rest as the reason.
const DECLINE_WORD: &str = "/decline";

#[derive(Debug, Clone, PartialEq)]
enum Item {
    Option {
        n: usize,
        label: String,
        description: Option<String>,
        recommended: bool,
    },
    Other,
    /// The proposal, taken as the answer.
    Accept(String),
    Decline,
    Leave,
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Option {
                n,
                label,
                description,
                recommended,
            } => {
                write!(f, "{n}. {label}")?;
                if *recommended {
                    write!(f, " (Recommended)")?;
                }
                if let Some(d) = description.as_deref().filter(|d| !d.is_empty()) {
                    write!(f, " — {d}")?;
                }
                Ok(())
            }
            Item::Other => write!(f, "Other (type your answer)"),
            Item::Accept(proposed) => write!(f, "Accept the proposal: {proposed}"),
            Item::Decline => write!(f, "Decline: I won't answer this as asked"),
            Item::Leave => write!(f, "Leave it pending for now"),
        }
    }
}

enum Step {
    Chose(Choice),
    Escaped,
    Interrupted,
}

fn step<T>(result: std::result::Result<T, InquireError>) -> Result<std::result::Result<T, Step>> {
    match result {
        Ok(v) => Ok(Ok(v)),
        Err(InquireError::OperationCanceled) => Ok(Err(Step::Escaped)),
        Err(InquireError::OperationInterrupted) => Ok(Err(Step::Interrupted)),
        Err(InquireError::NotTTY) => Err(not_a_terminal()),
        Err(e) => Err(Error::io(format!("the terminal prompt failed: {e}"))),
    }
}

pub(crate) fn not_a_terminal() -> Error {
    Error::usage(
        "ask needs a terminal to put the questions to (it prompts on /dev/tty and writes \
         its JSON to standard output); to have another tool ask, use 'questions render' \
         and then 'questions import' with its answers",
    )
}

/// Whether there is a terminal to prompt on, whatever standard input and output are.
pub(crate) fn available() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .is_ok()
}

/// Asks every question in turn. `None`: the person cancelled, and nothing is to be recorded.
pub(crate) fn ask_all(questions: &[Question]) -> Result<Option<Vec<(i64, Choice)>>> {
    let mut chosen: Vec<(i64, Choice)> = Vec::with_capacity(questions.len());
    let mut i = 0;
    while i < questions.len() {
        let q = &questions[i];
        show(q, i + 1, questions.len());
        match ask_one(q)? {
            Step::Chose(choice) => {
                chosen.push((q.id, choice));
                i += 1;
            }
            Step::Interrupted => return Ok(None),
            Step::Escaped => {
                if discard(&chosen)? {
                    return Ok(None);
                }
            }
        }
    }
    let answered = chosen
        .iter()
        .filter(|(_, c)| matches!(c, Choice::Answer(_) | Choice::Accept))
        .count();
    let declined = chosen
        .iter()
        .filter(|(_, c)| matches!(c, Choice::Decline(_)))
        .count();
    if answered + declined == 0 {
        return Ok(Some(chosen));
    }
    let what = match declined {
        0 => format!("{answered} answer(s)"),
        _ => format!("{answered} answer(s) and {declined} decline(s)"),
    };
    loop {
        let confirm = Confirm::new(&format!("Record {what} now?"))
            .with_default(true)
            .with_help_message("Enter to record • Esc to go back")
            .prompt();
        match step(confirm)? {
            Ok(true) => return Ok(Some(chosen)),
            Ok(false) | Err(Step::Interrupted) => return Ok(None),
            Err(_) => {
                if discard(&chosen)? {
                    return Ok(None);
                }
            }
        }
    }
}

/// Esc with answers given: ask before throwing them away.
fn discard(chosen: &[(i64, Choice)]) -> Result<bool> {
    let given = chosen
        .iter()
        .filter(|(_, c)| !matches!(c, Choice::Leave))
        .count();
    if given == 0 {
        return Ok(true);
    }
    let confirm = Confirm::new(&format!("Discard the {given} answer(s) given so far?"))
        .with_default(false)
        .prompt();
    match step(confirm)? {
        Ok(yes) => Ok(yes),
        Err(Step::Interrupted) => Ok(true),
        Err(_) => Ok(false),
    }
}

fn show(q: &Question, n: usize, of: usize) {
    let title = q
        .header
        .as_deref()
        .or(q.group_name.as_deref())
        .map(|h| sanitize(h, false));
    let mut head = format!("[{n}/{of}]");
    let title_shown = title.is_some();
    if let Some(t) = title {
        head.push(' ');
        head.push_str(&t);
    }
    // `[1/3] Database · design · required`; without a title, no dot stands alone.
    head.push_str(&format!(
        "{}{} · {}",
        if title_shown { " · " } else { " " },
        sanitize(&q.stage, false),
        if q.required { "required" } else { "optional" }
    ));
    eprintln!("\n{head}");
    if let Some(c) = &q.context {
        for line in sanitize(c, true).lines() {
            eprintln!("  {line}");
        }
    }
    if let Some(p) = &q.proposed {
        eprintln!("  Proposed: {}", sanitize(p, false));
    }
    if let Some(line) = deadline(q, &questions_core::clock::now()) {
        eprintln!("  Time left: {line}");
    }
}

/// "in 1 h 52 min: answered “No” unless you answer", as the inbox says it.
fn deadline(q: &Question, now: &str) -> Option<String> {
    let expires = q.expires_at.as_deref()?;
    let seconds = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .ok()
            .map(|t| t.timestamp())
    };
    let left = match (seconds(expires), seconds(now)) {
        (Some(at), Some(now)) => strings::time_left(at - now),
        _ => expires.to_string(),
    };
    let then = match (q.on_expiry, q.proposed.as_deref()) {
        (OnExpiry::Default, Some(p)) => strings::Expiry::Answered(p),
        (OnExpiry::Skip, _) => strings::Expiry::Skipped,
        _ => strings::Expiry::Overdue,
    };
    Some(sanitize(
        &format!("{left}: {}", strings::on_expiry(then)),
        false,
    ))
}

/// What `ask` says on a terminal once it has recorded: what was recorded, what is still
/// pending, and the gate. The JSON document is for pipes and `--json`.
pub(crate) fn summary(asked: &Asked, gate: &GateReport, put: &[Question]) -> String {
    let mut out = String::new();
    let text = |q: &Question| sanitize(&q.question, false);
    if asked.questions.is_empty() {
        out.push_str("Nothing was recorded.\n");
    } else {
        out.push_str("Recorded:\n");
        for q in &asked.questions {
            let what = match q.state.status {
                Status::Declined => format!(
                    "declined: {}",
                    sanitize(q.state.decline_reason.as_deref().unwrap_or(""), false)
                ),
                _ => format!(
                    "“{}”",
                    sanitize(q.state.answer.as_deref().unwrap_or(""), false)
                ),
            };
            out.push_str(&format!("  #{} {} → {what}\n", q.id, text(q)));
        }
    }
    let left: Vec<&Question> = put
        .iter()
        .filter(|q| asked.left_pending_ids.contains(&q.id))
        .collect();
    if !left.is_empty() {
        out.push_str("Still pending:\n");
        for q in left {
            let required = if q.required { " (required)" } else { "" };
            out.push_str(&format!("  #{} {}{required}\n", q.id, text(q)));
        }
    }
    let stage = sanitize(&asked.stage, false);
    match gate.gate {
        questions_core::model::Gate::Pass => {
            out.push_str(&format!("The gate of stage '{stage}' passes.\n"));
        }
        questions_core::model::Gate::Fail => out.push_str(&format!(
            "The gate of stage '{stage}' is shut: {} required question(s) pending{}.\n",
            gate.pending_count,
            match gate.declined.len() {
                0 => String::new(),
                n => format!(", {n} declined"),
            }
        )),
    }
    out
}

fn ask_one(q: &Question) -> Result<Step> {
    let message = sanitize(&q.question, false);
    if q.options.is_empty() {
        return ask_text(&message, q.proposed.as_deref(), true);
    }
    let mut items: Vec<Item> = q
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| Item::Option {
            n: i + 1,
            label: sanitize(&o.label, false),
            description: o.description.as_deref().map(|d| sanitize(d, false)),
            recommended: o.recommended,
        })
        .collect();
    if q.allow_freeform {
        items.push(Item::Other);
    }
    items.push(Item::Decline);

    if q.multi_select {
        // Nothing ticked for the person: the proposal is shown above the list.
        let picked = MultiSelect::new(&message, items)
            .with_help_message("↑↓ move • Space to choose • type a number to filter • Enter when done • Esc to cancel")
            .raw_prompt();
        let picked = match step(picked)? {
            Ok(p) => p,
            Err(s) => return Ok(s),
        };
        let mut select = Vec::new();
        let mut other = false;
        for p in picked {
            match p.value {
                Item::Option { n, .. } => select.push(q.options[n - 1].label.clone()),
                Item::Other => other = true,
                Item::Decline => return ask_reason(),
                Item::Accept(_) | Item::Leave => {}
            }
        }
        let text = if other {
            match ask_text("Your answer (besides the options chosen):", None, false)? {
                Step::Chose(Choice::Answer(a)) => a.text,
                s => return Ok(s),
            }
        } else {
            None
        };
        if select.is_empty() && text.is_none() {
            return Ok(Step::Chose(Choice::Leave));
        }
        return Ok(Step::Chose(Choice::Answer(AnswerInput { text, select })));
    }

    // The cursor starts on "leave it pending": Enter without reading records nothing. The
    // proposal, when it is a valid answer, is an entry of its own, right below.
    let mut head = vec![Item::Leave];
    if let Some(p) = acceptable(q) {
        head.push(Item::Accept(sanitize(&p, false)));
    }
    items.splice(0..0, head);
    let prompt = Select::new(&message, items)
        .with_help_message("↑↓ move • type a number to filter • Enter to choose • Esc to cancel");
    let picked = match step(prompt.raw_prompt())? {
        Ok(p) => p,
        Err(s) => return Ok(s),
    };
    match picked.value {
        Item::Option { n, .. } => Ok(Step::Chose(Choice::Answer(AnswerInput {
            text: None,
            select: vec![q.options[n - 1].label.clone()],
        }))),
        Item::Other => ask_text("Your answer:", None, false),
        Item::Accept(_) => Ok(Step::Chose(Choice::Accept)),
        Item::Decline => ask_reason(),
        Item::Leave => Ok(Step::Chose(Choice::Leave)),
    }
}

/// The question's proposal, when the model would take it as an answer.
fn acceptable(q: &Question) -> Option<String> {
    let p = q.proposed.clone().filter(|p| !p.trim().is_empty())?;
    let input = AnswerInput {
        text: Some(p.clone()),
        select: Vec::new(),
    };
    questions_core::model::resolve_answer(q, &input)
        .ok()
        .map(|_| p)
}

/// Tab on an empty answer fills in the proposal; nothing is shown or filled otherwise.
#[derive(Clone)]
struct Proposal(String);

impl Autocomplete for Proposal {
    fn get_suggestions(
        &mut self,
        _input: &str,
    ) -> std::result::Result<Vec<String>, CustomUserError> {
        Ok(Vec::new())
    }

    fn get_completion(
        &mut self,
        input: &str,
        _highlighted: Option<String>,
    ) -> std::result::Result<Replacement, CustomUserError> {
        Ok(input.trim().is_empty().then(|| self.0.clone()))
    }
}

/// Why the person declines: what is wrong with the question, for it to be asked again.
fn ask_reason() -> Result<Step> {
    let reason = Text::new("Why won't you answer it as asked? (what would make it answerable)")
        .with_help_message("an empty reason leaves it pending • Esc to cancel")
        .prompt();
    let reason = match step(reason)? {
        Ok(r) => r,
        Err(s) => return Ok(s),
    };
    if reason.trim().is_empty() {
        return Ok(Step::Chose(Choice::Leave));
    }
    Ok(Step::Chose(Choice::Decline(reason.trim().to_string())))
}

/// Free text. Enter on an empty line leaves the question pending (when `may_leave`);
/// with a proposed value, Tab fills it in, and sending it unchanged accepts the proposal.
fn ask_text(message: &str, proposed: Option<&str>, may_leave: bool) -> Result<Step> {
    let proposed = proposed.map(|p| sanitize(p, false));
    let help = match (proposed.is_some(), may_leave) {
        (true, true) => {
            "Tab fills in the proposal • an empty answer leaves it pending • /decline REASON to decline • Esc to cancel"
        }
        (true, false) => "Tab fills in the proposal • Esc to cancel",
        (false, true) => {
            "an empty answer leaves it pending • /decline REASON to decline • Esc to cancel"
        }
        (false, false) => "Esc to cancel",
    };
    let mut prompt = Text::new(message).with_help_message(help);
    if let Some(p) = &proposed {
        prompt = prompt.with_autocomplete(Proposal(p.clone()));
    }
    let text = match step(prompt.prompt())? {
        Ok(t) => t,
        Err(s) => return Ok(s),
    };
    if text.trim().is_empty() {
        return Ok(Step::Chose(Choice::Leave));
    }
    if may_leave {
        if let Some(reason) = text.trim().strip_prefix(DECLINE_WORD) {
            if reason.trim().is_empty() {
                return ask_reason();
            }
            return Ok(Step::Chose(Choice::Decline(reason.trim().to_string())));
        }
    }
    if proposed.as_deref().is_some_and(|p| p.trim() == text.trim()) {
        return Ok(Step::Chose(Choice::Accept));
    }
    Ok(Step::Chose(Choice::Answer(AnswerInput {
        text: Some(text),
        select: Vec::new(),
    })))
}
