//! `questions hook pi`: run by the pi package's `ask_user` tool (contrib/pi), one event a
//! call (see `hook::pi`). Unlike the other harnesses' hooks it does not fail open: the
//! tool has no card of its own to fall back on, so an error is the contract's error
//! document, which the package hands to the model.
//!
//! A waiting call ends with pi: the event is the first line of stdin, and the package
//! keeps stdin open while it waits, so its end (pi gone, whatever way) ends the wait; the
//! parent process is also looked at every 0.5 s, for a parent that died without closing
//! it (a launcher in between).

use std::io::{BufRead, Read};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{Outcome, Who};
use crate::cli::HookArgs;
use crate::hook::pi::{self as adapter, Given, PiEvent};
use crate::hook::Call;
use questions_core::error::{Error, Result};
use questions_core::model::{AnswerInput, Channel, HarnessCall, NewQuestion, Question};
use questions_core::ops::{self, CallStep, Ledger};

/// The most an event is read: far beyond any real one.
const EVENT_LIMIT: u64 = 4 * 1024 * 1024;
/// How often a waiting call looks whether pi is still there.
const PARENT_LOOK: Duration = Duration::from_millis(500);
/// The seed's `ask_user` has no timeout: a wait with none given lasts this long.
const FOREVER: Duration = Duration::from_hours(10 * 365 * 24);

#[derive(Debug, Serialize)]
struct Reply {
    /// The stage the call's questions are logged under.
    stage: String,
    question_ids: Vec<i64>,
    /// No question of the call is pending: `result` is the tool's result.
    settled: bool,
    /// The seed's `AskUserResult`, as the ledger holds the call now.
    result: Value,
    /// `answered` events: the questions whose choice was not recorded (someone else
    /// settled them first), and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_recorded: Vec<String>,
}

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: &HookArgs) -> Result<Outcome> {
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    (&mut stdin)
        .take(EVENT_LIMIT)
        .read_line(&mut line)
        .map_err(|e| Error::io(format!("cannot read the event on standard input: {e}")))?;
    let event: Value = serde_json::from_str(&line)
        .map_err(|e| Error::parse(format!("the event is not one line of JSON: {e}")))?;
    let event = adapter::parse(&event)
        .map_err(|e| Error::parse(format!("the event cannot be read: {}", e.0)))?;
    let call = match &event {
        PiEvent::Ask { call, .. } | PiEvent::Answered { call, .. } | PiEvent::Look { call } => {
            call.clone()
        }
    };
    // A stage of the session's own unless one is named: no session meets another's.
    let stage = args.stage.clone().unwrap_or_else(|| {
        format!(
            "pi-{}",
            call.session
                .as_deref()
                .map_or("-", str::trim)
                .replace(':', "_")
        )
    });
    let key = call.key(Channel::Pi);
    let mut not_recorded = Vec::new();
    let questions = match event {
        PiEvent::Look { .. } => {
            let found = logged(ledger, &stage, &call, &key, CallStep::Looking)?;
            if found.iter().any(Option::is_none) {
                return Err(Error::not_found(
                    "this ask_user call was never logged in the ledger",
                ));
            }
            found.into_iter().flatten().collect()
        }
        PiEvent::Ask { wait, .. } => {
            let questions: Vec<Question> = logged(ledger, &stage, &call, &key, CallStep::Asking)?
                .into_iter()
                .flatten()
                .collect();
            if wait && !adapter::settled(&questions) {
                drop(stdin);
                watch_parent();
                let within = if args.wait > 0 {
                    Duration::from_secs(args.wait)
                } else {
                    FOREVER
                };
                let ids: Vec<i64> = questions.iter().map(|q| q.id).collect();
                let now = ops::wait_settled(ledger, &ids, within)?;
                questions
                    .iter()
                    .filter_map(|q| now.iter().find(|n| n.id == q.id).cloned())
                    .collect()
            } else {
                questions
            }
        }
        PiEvent::Answered { given, .. } => {
            let questions: Vec<Question> = logged(ledger, &stage, &call, &key, CallStep::Answered)?
                .into_iter()
                .flatten()
                .collect();
            record(ledger, who, &stage, &questions, &given, &mut not_recorded)?;
            let ids: Vec<i64> = questions.iter().map(|q| q.id).collect();
            ops::named(ledger, None, Some(&ids))?
        }
    };
    let settled = adapter::settled(&questions);
    let result = adapter::result(&call, &questions);
    if settled {
        // The history says the result went to the agent, with the call's metadata.
        let ids: Vec<i64> = questions.iter().map(|q| q.id).collect();
        let mut detail = serde_json::json!({ "harness": "pi" });
        if let Some(metadata) = call.input.get("metadata").filter(|m| !m.is_null()) {
            detail["metadata"] = metadata.clone();
        }
        ops::record_delivery(ledger, &who.via(Channel::Pi), &ids, &detail)?;
    }
    Ok(Outcome::ok(Reply {
        stage,
        question_ids: questions.iter().map(|q| q.id).collect(),
        settled,
        result,
        not_recorded,
    }))
}

fn logged(
    ledger: &mut Ledger,
    stage: &str,
    call: &Call,
    key: &HarnessCall,
    step: CallStep,
) -> Result<Vec<Option<Question>>> {
    let news: Vec<NewQuestion> = call
        .questions
        .iter()
        .map(|q| NewQuestion {
            stage: stage.to_string(),
            ..q.new.clone()
        })
        .collect();
    ops::log_call(ledger, key, step, &news)
}

/// Records each choice made in pi's dialog (channel `pi`), as a card's answers are: a
/// question someone settled meanwhile keeps what they gave (the core refuses the change,
/// and the history keeps it as refused), and is named in `not_recorded`. A dismissed
/// dialog never reaches here: it records nothing.
fn record(
    ledger: &mut Ledger,
    who: &Who,
    stage: &str,
    questions: &[Question],
    given: &[Given],
    not_recorded: &mut Vec<String>,
) -> Result<()> {
    let caller = who.via(Channel::Pi);
    let mut choices = Vec::new();
    for (q, given) in questions.iter().zip(given) {
        match given {
            Given::Nothing => {}
            Given::Answer { select, text } => choices.push((
                q.id,
                ops::Choice::Answer(AnswerInput {
                    text: text.clone(),
                    select: select.clone(),
                }),
            )),
            Given::Decline(reason) => choices.push((q.id, ops::Choice::Decline(reason.clone()))),
        }
    }
    if choices.is_empty() {
        return Ok(());
    }
    // The dialog showed these questions: the call's own, found by its key just now.
    let shown = ops::Shown::all(None, questions);
    let asked = ops::record_choices(
        ledger,
        &caller,
        stage,
        &choices,
        &shown,
        ops::Together::Each,
    )?;
    not_recorded.extend(
        asked
            .not_recorded
            .iter()
            .map(|n| format!("question {}: {}", n.question_id, n.reason)),
    );
    Ok(())
}

/// Ends this process when pi is gone: stdin at its end, or the parent process replaced
/// (the process re-parented, to init or a subreaper). Only a wait is cut short so, and a
/// wait writes nothing.
fn watch_parent() {
    let parent = std::os::unix::process::parent_id();
    let _ = std::thread::Builder::new()
        .name("pi-stdin".into())
        .spawn(|| {
            let mut sink = [0u8; 4096];
            let mut stdin = std::io::stdin();
            loop {
                match stdin.read(&mut sink) {
                    Ok(0) | Err(_) => gone(),
                    Ok(_) => {}
                }
            }
        });
    let _ = std::thread::Builder::new()
        .name("pi-parent".into())
        .spawn(move || loop {
            std::thread::sleep(PARENT_LOOK);
            if std::os::unix::process::parent_id() != parent {
                gone();
            }
        });
}

fn gone() -> ! {
    crate::output::note("hook pi: pi is gone; the wait ends");
    std::process::exit(1);
}
