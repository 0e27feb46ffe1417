//! `questions hook HARNESS`: run by an agent's harness as a command hook. The event JSON
//! comes on stdin; stdout carries the harness's reply or nothing. It never stands in the
//! agent's way: on any error it prints nothing, says why on stderr, and exits 0, so the
//! harness asks the person itself.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;

use super::{Outcome, Who};
use crate::cli::{Harness, HookArgs};
use crate::error::{Error, Result};
use crate::hook::{self, claude_code, codex, gemini, Call, Event};
use crate::model::{AnswerInput, Channel, Question};
use crate::ops::{self, CheckRequest, Choice, Wait};
use crate::store::Ledger;

/// The most a hook event is read: far beyond any real one.
const EVENT_LIMIT: u64 = 4 * 1024 * 1024;

/// The whole hook, failing open: whatever goes wrong (the ledger unreachable, the event
/// unreadable, a bug) leaves stdout empty and the exit code 0.
pub fn run(ledger: &mut Ledger, who: &Who, args: HookArgs) -> Outcome {
    let attempt =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(ledger, who, &args)));
    match attempt {
        Ok(Ok(Some(reply))) => Outcome::text(crate::output::pretty(&reply)),
        Ok(Ok(None)) => Outcome::text(String::new()),
        Ok(Err(err)) => failed(&err),
        // The panic's message is already on stderr.
        Err(_) => {
            quiet("hook: stopped by an internal error; the agent asks the person itself".into())
        }
    }
}

/// Nothing on stdout, exit 0, and why on stderr.
pub fn failed(err: &Error) -> Outcome {
    quiet(format!(
        "hook: {}; the agent asks the person itself",
        err.message
    ))
}

fn quiet(note: String) -> Outcome {
    let mut outcome = Outcome::text(String::new());
    outcome.note = Some(note);
    outcome
}

fn handle(ledger: &mut Ledger, who: &Who, args: &HookArgs) -> Result<Option<Value>> {
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .take(EVENT_LIMIT)
        .read_to_string(&mut text)
        .map_err(|e| Error::io(format!("cannot read the event on standard input: {e}")))?;
    let event: Value = serde_json::from_str(&text)
        .map_err(|e| Error::parse(format!("the event is not JSON: {e}")))?;
    let event = match args.harness {
        Harness::ClaudeCode => claude_code::parse(&event),
        Harness::Codex => codex::parse(&event),
        Harness::Gemini => gemini::parse(&event),
    }
    .map_err(|e| Error::parse(format!("the event cannot be read: {}", e.0)))?;
    let stage = args
        .stage
        .clone()
        .unwrap_or_else(|| args.harness.name().to_string());
    match event {
        Event::Asking(call) => asking(ledger, who, &stage, args, call),
        Event::Answered(call, chosen) => {
            answered(ledger, who, args.harness, &stage, &call, &chosen)?;
            Ok(None)
        }
        Event::Stopping(stop) => stopping(ledger, &stage, &stop),
        Event::Ignored => Ok(None),
    }
}

/// The most of a transcript a `Stop` hook reads (its beginning, in a longer session).
const TRANSCRIPT_LIMIT: u64 = 64 * 1024 * 1024;
/// How long a `Stop` hook waits for a question tool's result to reach the transcript.
const TRANSCRIPT_WAIT: Duration = Duration::from_secs(2);

/// At the end of a turn: the answers that came in for the session's questions after the
/// agent stopped waiting for them, handed over once (the transcript then holds them).
fn stopping(ledger: &mut Ledger, stage: &str, stop: &hook::Stop) -> Result<Option<Value>> {
    let Some(path) = stop.transcript.as_ref().filter(|_| !stop.active) else {
        return Ok(None);
    };
    // Claude Code writes a tool's result to the transcript on its own time, possibly after
    // this hook started: a call without one is waited for a little, then left alone.
    let deadline = std::time::Instant::now() + TRANSCRIPT_WAIT;
    let (transcript, calls) = loop {
        let mut transcript = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(TRANSCRIPT_LIMIT).read_to_string(&mut transcript))
            .map_err(|e| {
                Error::io(format!(
                    "cannot read the transcript {}: {e}",
                    path.display()
                ))
            })?;
        let calls = claude_code::unanswered_calls(&transcript);
        if calls.without_result == 0 || std::time::Instant::now() >= deadline {
            break (transcript, calls);
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    let mut lines = Vec::new();
    for call in calls.unanswered {
        let questions = logged(ledger, stage, &call)?;
        for (asked, q) in call.questions.iter().zip(&questions) {
            if let Some(answer) = hook::answer_as_shown(q, &asked.shown) {
                let line = claude_code::late_line(&asked.key, &answer);
                if !claude_code::delivered(&transcript, &line) && !lines.contains(&line) {
                    lines.push(line);
                }
            }
        }
    }
    Ok((!lines.is_empty()).then(|| claude_code::reply_stop(&claude_code::late_reason(&lines))))
}

/// The call's questions, in the ledger under `stage` (each once, however often asked).
fn logged(ledger: &mut Ledger, stage: &str, call: &Call) -> Result<Vec<Question>> {
    let news: Vec<_> = call
        .questions
        .iter()
        .map(|q| crate::model::NewQuestion {
            stage: stage.to_string(),
            ..q.new.clone()
        })
        .collect();
    let all = ops::log_all(ledger, &news)?;
    // One per question of the call, in its order (a question asked twice is one row).
    let ids: Vec<i64> = news
        .iter()
        .map(|n| {
            all.questions
                .iter()
                .find(|q| q.question == n.question && q.group_name == n.group_name)
                .map_or(0, |q| q.id)
        })
        .collect();
    Ok(ids
        .iter()
        .filter_map(|id| all.questions.iter().find(|q| q.id == *id).cloned())
        .collect())
}

/// Logs the questions; answers the tool when all of them are answered, now or within
/// `--wait`.
fn asking(
    ledger: &mut Ledger,
    who: &Who,
    stage: &str,
    args: &HookArgs,
    call: Call,
) -> Result<Option<Value>> {
    let mut questions = logged(ledger, stage, &call)?;
    if hook::all_answered(&call, &questions).is_none() && args.wait > 0 {
        let mut ids: Vec<i64> = questions.iter().map(|q| q.id).collect();
        ids.dedup();
        ops::check(
            ledger,
            &CheckRequest {
                stage: None,
                ids: Some(ids.clone()),
                strict: false,
                wait: Wait::Until(Some(Duration::from_secs(args.wait))),
                allow_unknown_stage: false,
            },
        )?;
        let now = ops::named(ledger, None, Some(&ids))?;
        questions = questions
            .iter()
            .filter_map(|q| now.iter().find(|n| n.id == q.id).cloned())
            .collect();
    }
    let Some(answers) = hook::all_answered(&call, &questions) else {
        return Ok(None);
    };
    let reply = match args.harness {
        Harness::ClaudeCode => claude_code::reply_answers(&call, &answers),
        Harness::Codex => codex::reply_answers(&call, &answers),
        Harness::Gemini => gemini::reply_answers(&call, &answers),
    };
    // The history says the answers went to the agent through its own tool. A failure to
    // say so does not keep them from it (the hook fails open).
    let mut ids: Vec<i64> = questions.iter().map(|q| q.id).collect();
    ids.dedup();
    let detail = serde_json::json!({ "harness": args.harness.name() });
    if let Err(e) = ops::record_delivery(ledger, &who.via(args.harness.channel()), &ids, &detail) {
        crate::output::note(&format!(
            "hook: the delivery was not recorded: {}",
            e.message
        ));
    }
    Ok(Some(reply))
}

/// Records what the person chose in the harness's own card; a question someone else
/// answered otherwise meanwhile keeps that answer (said on stderr), the others are
/// recorded.
fn answered(
    ledger: &mut Ledger,
    who: &Who,
    harness: Harness,
    stage: &str,
    call: &Call,
    chosen: &[Option<String>],
) -> Result<()> {
    let questions = logged(ledger, stage, call)?;
    let caller = who.via(harness.channel());
    let choices: Vec<(i64, Choice)> = questions
        .iter()
        .zip(chosen)
        .filter_map(|(q, answer)| {
            let text = answer.clone()?;
            Some((
                q.id,
                Choice::Answer(AnswerInput {
                    text: Some(text),
                    select: Vec::new(),
                }),
            ))
        })
        .collect();
    if choices.is_empty() {
        return Ok(());
    }
    // The card showed these questions, found in the ledger by their text just now.
    let shown = ops::Shown::all(None, &questions);
    let asked = ops::record_choices(
        ledger,
        &caller,
        stage,
        &choices,
        &shown,
        ops::Together::Each,
    )?;
    if asked.not_recorded.is_empty() {
        return Ok(());
    }
    let refused: Vec<String> = asked
        .not_recorded
        .iter()
        .map(|n| format!("question {}: {}", n.question_id, n.reason))
        .collect();
    Err(Error::conflict(format!(
        "not every answer from the card was recorded: {}",
        refused.join("; ")
    )))
}

impl Harness {
    /// Its name: the default stage, and the channel its card records.
    pub fn name(self) -> &'static str {
        self.channel().as_str()
    }

    pub fn channel(self) -> Channel {
        match self {
            Harness::ClaudeCode => Channel::ClaudeCode,
            Harness::Codex => Channel::Codex,
            Harness::Gemini => Channel::Gemini,
        }
    }
}
