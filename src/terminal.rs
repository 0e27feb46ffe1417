//! The person's side of `ask`: one prompt per question on the terminal, through inquire.
//! Nothing here touches the ledger; it returns what the person chose, or that they
//! cancelled. Every text from the ledger is sanitized before it is shown.

use std::fmt;

use inquire::error::InquireError;
use inquire::{Confirm, MultiSelect, Select, Text};

use crate::error::{Error, Result};
use crate::model::{AnswerInput, Question};
pub use crate::ops::Choice;
use crate::output::sanitize;

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

pub fn not_a_terminal() -> Error {
    Error::usage(
        "ask needs a terminal on standard input and output; to have another tool ask, \
         use 'questions render' and then 'questions import' with its answers",
    )
}

/// Asks every question in turn. `None`: the person cancelled, and nothing is to be recorded.
pub fn ask_all(questions: &[Question]) -> Result<Option<Vec<(i64, Choice)>>> {
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
        .filter(|(_, c)| matches!(c, Choice::Answer(_)))
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
        .filter(|(_, c)| matches!(c, Choice::Answer(_) | Choice::Decline(_)))
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
    if let Some(t) = title {
        head.push(' ');
        head.push_str(&t);
    }
    head.push_str(&format!(
        " · {} · {}",
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
    let preferred = q.options.iter().position(|o| o.recommended).or_else(|| {
        let p = q.proposed.as_deref()?.trim().to_lowercase();
        q.options.iter().position(|o| o.label.to_lowercase() == p)
    });

    if q.multi_select {
        let defaults: Vec<usize> = q
            .options
            .iter()
            .enumerate()
            .filter(|(_, o)| o.recommended)
            .map(|(i, _)| i)
            .collect();
        let picked = MultiSelect::new(&message, items)
            .with_default(&defaults)
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
                Item::Leave => {}
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

    items.push(Item::Leave);
    let mut prompt = Select::new(&message, items)
        .with_help_message("↑↓ move • type a number to filter • Enter to choose • Esc to cancel");
    if let Some(p) = preferred {
        prompt = prompt.with_starting_cursor(p);
    }
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
        Item::Decline => ask_reason(),
        Item::Leave => Ok(Step::Chose(Choice::Leave)),
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

/// Free text. With a proposed value, Enter on an empty line accepts it; without one, an
/// empty line leaves the question pending (when `may_leave`).
fn ask_text(message: &str, proposed: Option<&str>, may_leave: bool) -> Result<Step> {
    let proposed = proposed.map(|p| sanitize(p, false));
    let help = match (&proposed, may_leave) {
        (Some(_), true) => {
            "Enter accepts the proposed value • /decline REASON to decline • Esc to cancel"
        }
        (Some(_), false) => "Enter accepts the proposed value • Esc to cancel",
        (None, true) => {
            "an empty answer leaves it pending • /decline REASON to decline • Esc to cancel"
        }
        (None, false) => "Esc to cancel",
    };
    let mut prompt = Text::new(message).with_help_message(help);
    if let Some(p) = &proposed {
        prompt = prompt.with_default(p);
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
    Ok(Step::Chose(Choice::Answer(AnswerInput {
        text: Some(text),
        select: Vec::new(),
    })))
}
