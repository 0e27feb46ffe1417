//! `questions hook HARNESS`: run by an agent's harness as a command hook. The event JSON
//! comes on stdin; stdout carries the harness's reply or nothing. It never stands in the
//! agent's way: on any error it prints nothing, says why on stderr, and exits 0, so the
//! harness asks the person itself.

use std::io::Read;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Outcome, Who};
use crate::cli::{Harness, HookArgs};
use crate::hook::{self, claude_code, codex, gemini, Call, Event};
use questions_core::error::{Error, Result};
use questions_core::model::{AnswerInput, Channel, Question};
use questions_core::ops::{self, CallStep, Choice};
use questions_core::ops::{Ledger, LockWait};

/// The most a hook event is read: far beyond any real one.
const EVENT_LIMIT: u64 = 4 * 1024 * 1024;

/// How long a hook waits for another process's write lock on a file ledger before it
/// gives up (other commands wait about 40 s): a locked ledger must not hold the agent.
const LOCK_WAIT: Duration = Duration::from_secs(1);

/// How long a hook may take beyond its `--wait`, whatever holds it: room for a `Stop`
/// hook's look at the transcript (`TRANSCRIPT_WAIT`) and a locked ledger (`LOCK_WAIT`).
const GRACE: Duration = Duration::from_secs(3);

/// The whole hook, failing open: whatever goes wrong (the ledger unreachable or locked,
/// the event unreadable, a bug) leaves stdout empty and the exit code 0, within its
/// `--wait` and `GRACE`.
pub(super) fn run(ledger: &mut Ledger, who: &Who, mut args: HookArgs) -> Outcome {
    let cut = gemini_fits(&mut args).or_else(|| codex_fits(&mut args));
    let watchdog = Watchdog::start(Duration::from_secs(args.wait) + GRACE);
    ledger.set_lock_wait(LockWait::AtMost(LOCK_WAIT));
    let attempt =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(ledger, who, &args)));
    let mut outcome = match attempt {
        Ok(Ok(Some(reply))) => {
            if watchdog.stand_down() {
                Outcome::text(crate::output::pretty(&reply))
            } else {
                Outcome::text(String::new())
            }
        }
        Ok(Ok(None)) => Outcome::text(String::new()),
        Ok(Err(err)) => failed(&err),
        // The panic's message is already on stderr.
        Err(_) => {
            quiet("hook: stopped by an internal error; the agent asks the person itself".into())
        }
    };
    if let Some(cut) = cut {
        outcome.note = Some(match outcome.note.take() {
            Some(note) => format!("{cut}\nquestions: {note}"),
            None => cut,
        });
    }
    outcome
}

/// Gemini CLI's default hook `timeout`, in milliseconds (packages/core/src/hooks/
/// hookRunner.ts, `DEFAULT_HOOK_TIMEOUT`).
const GEMINI_DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// A wait Gemini CLI would kill is refused: when the entry that runs this hook (in the
/// project's `.gemini/settings.json`, found walking up from here, or the user's) gives it
/// a `timeout` (milliseconds; 60 000 when none is written) that does not cover `--wait`
/// and the hook's grace, the wait is cut to what fits, and the note says so. A hook killed
/// by its harness hands the agent nothing, and the answer that came late stays unsaid.
fn gemini_fits(args: &mut HookArgs) -> Option<String> {
    if args.harness != Harness::Gemini || args.wait == 0 {
        return None;
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| std::path::PathBuf::from(h).join(".gemini"));
    let files = configs(
        ".gemini/settings.json",
        home.map(|h| h.join("settings.json")),
    );
    let wait = args.wait;
    let ours = |command: &str| runs_this(command, "gemini", wait);
    let mut shortest: Option<(u64, std::path::PathBuf)> = None;
    for file in files {
        let Some(settings) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            continue;
        };
        let Some(events) = settings["hooks"].as_object() else {
            continue;
        };
        for groups in events.values().filter_map(Value::as_array) {
            for hook in groups
                .iter()
                .filter_map(|g| g["hooks"].as_array())
                .flatten()
            {
                if !hook["command"].as_str().is_some_and(ours) {
                    continue;
                }
                let ms = hook["timeout"]
                    .as_u64()
                    .unwrap_or(GEMINI_DEFAULT_TIMEOUT_MS);
                if shortest.as_ref().is_none_or(|(s, _)| ms < *s) {
                    shortest = Some((ms, file.clone()));
                }
            }
        }
    }
    let (ms, file) = shortest?;
    cut_to(
        args,
        ms / 1000,
        &format!(
            "Gemini CLI kills this hook after {ms} ms (its `timeout` in {}; 60 000 when none \
             is written)",
            file.display()
        ),
        "gemini",
    )
}

/// A harness's config files that may run this hook: the project's `project` (a path below
/// the nearest folder upwards from here that has it), then the user's.
fn configs(project: &str, user: Option<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    if let Ok(here) = std::env::current_dir() {
        files.extend(
            here.ancestors()
                .map(|d| d.join(project))
                .find(|f| f.is_file()),
        );
    }
    files.extend(user);
    files
}

/// Whether a hook entry's `command` runs this hook: ours, for `harness`, with `--wait`.
fn runs_this(command: &str, harness: &str, wait: u64) -> bool {
    let wait = wait.to_string();
    super::init::is_our_hook(command, harness)
        && command
            .split_whitespace()
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w == ["--wait", wait.as_str()])
}

/// The wait cut to what a harness's `timeout` of `seconds` leaves after the hook's grace,
/// with the note that says why; none when it fits.
fn cut_to(args: &mut HookArgs, seconds: u64, why: &str, harness: &str) -> Option<String> {
    let fits = seconds.saturating_sub(GRACE.as_secs());
    if fits >= args.wait {
        return None;
    }
    let asked = args.wait;
    args.wait = fits;
    Some(format!(
        "hook: --wait {asked} refused: {why}, so it waits {fits} s instead; `questions init \
         {harness} --wait {asked}` writes a timeout that covers the wait"
    ))
}

/// The same for Codex: a `timeout` (seconds) written on the `[[hooks.<event>.hooks]]`
/// entry that runs this hook, in the project's `.codex/config.toml` (found walking up from
/// here) or `$CODEX_HOME/config.toml` (`~/.codex`), that does not cover `--wait` cuts it.
/// An entry without one is left to Codex's own default.
fn codex_fits(args: &mut HookArgs) -> Option<String> {
    if args.harness != Harness::Codex || args.wait == 0 {
        return None;
    }
    let home = std::env::var_os("CODEX_HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| std::path::PathBuf::from(h).join(".codex"))
        });
    let files = configs(".codex/config.toml", home.map(|h| h.join("config.toml")));
    let wait = args.wait;
    let ours = |command: &str| runs_this(command, "codex", wait);
    let mut shortest: Option<(u64, std::path::PathBuf)> = None;
    for file in files {
        let Some(doc) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
        else {
            continue;
        };
        let Some(events) = doc.get("hooks").and_then(toml_edit::Item::as_table_like) else {
            continue;
        };
        for (_, groups) in events.iter() {
            let Some(groups) = groups.as_array_of_tables() else {
                continue;
            };
            for hook in groups
                .iter()
                .filter_map(|g| g.get("hooks")?.as_array_of_tables())
                .flat_map(toml_edit::ArrayOfTables::iter)
            {
                if !hook
                    .get("command")
                    .and_then(toml_edit::Item::as_str)
                    .is_some_and(ours)
                {
                    continue;
                }
                let Some(seconds) = hook
                    .get("timeout")
                    .and_then(toml_edit::Item::as_integer)
                    .and_then(|t| u64::try_from(t).ok())
                else {
                    continue;
                };
                if shortest.as_ref().is_none_or(|(s, _)| seconds < *s) {
                    shortest = Some((seconds, file.clone()));
                }
            }
        }
    }
    let (seconds, file) = shortest?;
    cut_to(
        args,
        seconds,
        &format!(
            "Codex kills this hook after {seconds} s (its `timeout` in {})",
            file.display()
        ),
        "codex",
    )
}

/// The hook's backstop, for what no error reports in time (a PostgreSQL server that
/// accepts the connection and never answers, a file system that hangs): past its
/// deadline, the process exits 0 with nothing on stdout, as on any other error.
///
/// It never cuts a reply short: a reply is printed only after `stand_down`, and the
/// watchdog exits only while nobody has stood it down. What it can cut short is a write
/// to the ledger, which is then rolled back whole: a SQLite transaction without its
/// commit in the log is ignored by the next reader, and PostgreSQL rolls back the open
/// transaction of a connection that goes away. The call's questions are then logged by
/// its next hook (`PostToolUse` logs them too), and the answers from the harness's card
/// stay out of the ledger; the agent has those from its own tool.
struct Watchdog(Arc<AtomicU8>);

const RUNNING: u8 = 0;
const REPLYING: u8 = 1;
const GAVE_UP: u8 = 2;

impl Watchdog {
    fn start(limit: Duration) -> Watchdog {
        let state = Arc::new(AtomicU8::new(RUNNING));
        let watched = state.clone();
        let spawned = std::thread::Builder::new()
            .name("hook-deadline".into())
            .spawn(move || {
                std::thread::sleep(limit);
                let gave_up =
                    watched.compare_exchange(RUNNING, GAVE_UP, Ordering::SeqCst, Ordering::SeqCst);
                if gave_up.is_ok() {
                    crate::output::note(&format!(
                        "hook: gave up after {} s; the agent asks the person itself",
                        limit.as_secs()
                    ));
                    // A process exit, not a return: the work it gives up on cannot be
                    // interrupted (see above for what a write cut short leaves).
                    std::process::exit(0);
                }
            });
        if let Err(e) = spawned {
            crate::output::note(&format!("hook: no deadline could be set: {e}"));
        }
        Watchdog(state)
    }

    /// The reply may be printed: true unless the watchdog has already given up (the
    /// process is then exiting, and nothing may be printed).
    fn stand_down(&self) -> bool {
        self.0
            .compare_exchange(RUNNING, REPLYING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }
}

/// Nothing on stdout, exit 0, and why on stderr.
pub(super) fn failed(err: &Error) -> Outcome {
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
        Harness::Pi => return Err(Error::usage("hook pi is run by the pi package")),
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
        Event::Stopping(stop) => stopping(ledger, args.harness, &stage, &stop),
        Event::Ignored => Ok(None),
    }
}

/// The most of a transcript a `Stop` hook reads (its beginning, in a longer session).
const TRANSCRIPT_LIMIT: u64 = 64 * 1024 * 1024;
/// How long a `Stop` hook waits for a question tool's result to reach the transcript.
const TRANSCRIPT_WAIT: Duration = Duration::from_secs(2);

/// At the end of a turn: the answers that came in for the session's questions after the
/// agent stopped waiting for them, handed over once (the transcript then holds them).
fn stopping(
    ledger: &mut Ledger,
    harness: Harness,
    stage: &str,
    stop: &hook::Stop,
) -> Result<Option<Value>> {
    let Some(path) = stop.transcript.as_ref().filter(|_| !stop.active) else {
        return Ok(None);
    };
    // Claude Code writes a tool's result to the transcript on its own time, possibly after
    // this hook started: a call without one is waited for a little, then left alone.
    let deadline = std::time::Instant::now() + TRANSCRIPT_WAIT;
    let (transcript, calls) = loop {
        let transcript = read_transcript(path)?;
        let calls = claude_code::unanswered_calls(&transcript);
        if calls.without_result == 0 || std::time::Instant::now() >= deadline {
            break (transcript, calls);
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    let mut lines = Vec::new();
    for mut call in calls.unanswered {
        // This session's calls only, each found by its key: never logged here, never an
        // answer given to another call.
        call.session.clone_from(&stop.session);
        let questions = call_questions(ledger, harness, stage, &call, CallStep::Looking)?;
        for (asked, q) in call.questions.iter().zip(&questions) {
            let Some(q) = q else { continue };
            if let Some(answer) = hook::persons_answer(q, &asked.shown).map(|a| a.join(", ")) {
                let line = claude_code::late_line(&asked.key, &answer);
                if !claude_code::delivered(&transcript, &line) && !lines.contains(&line) {
                    lines.push(line);
                }
            }
        }
    }
    Ok((!lines.is_empty()).then(|| claude_code::reply_stop(&claude_code::late_reason(&lines))))
}

/// The transcript's text, its first `TRANSCRIPT_LIMIT` bytes. Only a regular file is
/// read: a FIFO, a terminal or a device named in its place would hold the hook (and the
/// agent) in the open or the read, and opening a device can act on it; a directory
/// cannot be read. What the path names is looked at before it is opened, the open itself
/// never waits (`O_NONBLOCK`), and the file read is checked again, in case the path was
/// replaced in between.
fn read_transcript(path: &std::path::Path) -> Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |why: String| {
        Error::io(format!(
            "cannot read the transcript {}: {why}",
            path.display()
        ))
    };
    let regular = |meta: std::io::Result<std::fs::Metadata>| match meta {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(_) => Err(cannot("it is not a regular file".into())),
        Err(e) => Err(cannot(e.to_string())),
    };
    regular(std::fs::metadata(path))?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| cannot(e.to_string()))?;
    regular(file.metadata())?;
    let mut transcript = String::new();
    file.take(TRANSCRIPT_LIMIT)
        .read_to_string(&mut transcript)
        .map_err(|e| cannot(e.to_string()))?;
    Ok(transcript)
}

/// The call's questions in the ledger, one per question of the call, in its order: found
/// by the call's key (its harness, session and id), logged under `stage` when `step`
/// asks for it and they are not yet; none where `Looking` found none.
fn call_questions(
    ledger: &mut Ledger,
    harness: Harness,
    stage: &str,
    call: &Call,
    step: CallStep,
) -> Result<Vec<Option<Question>>> {
    ask(ledger, harness, stage, call, step, None)
}

/// The call's questions through the door (over https:// too, §15): found, logged when
/// `step` says so, and with `until`, waited for until none is pending or it passes (long
/// polls of at most 50 s over https://, sent again).
fn ask(
    ledger: &mut Ledger,
    harness: Harness,
    stage: &str,
    call: &Call,
    step: CallStep,
    until: Option<std::time::Instant>,
) -> Result<Vec<Option<Question>>> {
    let drafts: Vec<_> = call
        .questions
        .iter()
        .map(|q| questions_core::model::Draft {
            stage: stage.to_string(),
            ..q.new.draft()
        })
        .collect();
    let key = ops::CallKey::from(&call.key(harness.channel()));
    loop {
        let wait = until.map(|u| u.saturating_duration_since(std::time::Instant::now()));
        let req = ops::Request::HarnessCall {
            call: key.clone(),
            step,
            questions: drafts.clone(),
            wait,
        };
        let asked = super::take!(
            super::door_reply(ledger, super::nobody(), req, until)?,
            ops::Reply::Call
        );
        let pending = asked
            .questions
            .iter()
            .flatten()
            .any(|q| q.state.status == questions_core::model::Status::Pending);
        let over = until.is_none_or(|u| std::time::Instant::now() >= u);
        if !pending || over {
            return Ok(asked.questions);
        }
    }
}

/// The call is over, its answers handed to the agent through its tool (`ids`; none: the
/// person answered its card), said in the history as `who`.
fn end(
    ledger: &mut Ledger,
    caller: questions_core::ops::Caller,
    harness: Harness,
    call: &Call,
    ids: Vec<i64>,
) -> Result<()> {
    let req = ops::Request::Delivered {
        call: ops::CallKey::from(&call.key(harness.channel())),
        ids,
        detail: serde_json::json!({ "harness": harness.name() }),
        key: None,
    };
    super::door_reply(ledger, caller, req, None).map(|_| ())
}

/// The call's questions, logged when they are not yet (see `call_questions`).
fn logged(
    ledger: &mut Ledger,
    harness: Harness,
    stage: &str,
    call: &Call,
    step: CallStep,
) -> Result<Vec<Question>> {
    Ok(call_questions(ledger, harness, stage, call, step)?
        .into_iter()
        .flatten()
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
    let until = (args.wait > 0).then(|| std::time::Instant::now() + Duration::from_secs(args.wait));
    let questions: Vec<Question> =
        ask(ledger, args.harness, stage, &call, CallStep::Asking, until)?
            .into_iter()
            .flatten()
            .collect();
    let Some(answers) = hook::all_answered(&call, &questions) else {
        return Ok(None);
    };
    let reply = match args.harness {
        Harness::ClaudeCode => claude_code::reply_answers(&call, &answers),
        Harness::Codex => codex::reply_answers(&call, &answers),
        Harness::Gemini => gemini::reply_answers(&call, &answers),
        Harness::Pi => return Ok(None),
    };
    // The history says the answers went to the agent through its own tool. A failure to
    // say so does not keep them from it (the hook fails open).
    let mut ids: Vec<i64> = questions.iter().map(|q| q.id).collect();
    ids.dedup();
    let delivered = end(
        ledger,
        who.via(args.harness.channel()),
        args.harness,
        &call,
        ids,
    );
    if let Err(e) = delivered {
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
    chosen: &[Option<hook::Given>],
) -> Result<()> {
    let questions = logged(ledger, harness, stage, call, CallStep::Answered)?;
    let caller = who.via(harness.channel());
    let choices: Vec<(i64, Choice)> = questions
        .iter()
        .zip(chosen)
        .filter_map(|(q, answer)| {
            let choice = match answer.clone()? {
                hook::Given::Text(text) => Choice::Answer(AnswerInput {
                    text: Some(text),
                    select: Vec::new(),
                }),
                // Labels that are the question's options stay selected; a "label" of a
                // question without them is the person's words, the note after them.
                hook::Given::Noted { labels, note } if labels.iter().all(|l| is_option(q, l)) => {
                    Choice::Noted(
                        AnswerInput {
                            text: None,
                            select: labels,
                        },
                        note,
                    )
                }
                hook::Given::Noted { labels, note } => Choice::Answer(AnswerInput {
                    text: Some(format!("{}; {note}", labels.join(", "))),
                    select: Vec::new(),
                }),
            };
            Some((q.id, choice))
        })
        .collect();
    if choices.is_empty() {
        return end(ledger, caller, harness, call, Vec::new());
    }
    // The card showed these questions: the call's own, found by its key just now.
    let shown = ops::Shown::all(None, &questions);
    // Through the door, on a file and over https:// alike: there the server decides who
    // chose (with an agent's token, the host's claim `host:NAME`, as an MCP form's, which
    // never settles an approval; with a person's, that person).
    let req = ops::Request::Elicited {
        stage: stage.to_string(),
        chosen: choices,
        shown,
    };
    let asked = super::take!(
        super::door_reply(ledger, caller.clone(), req, None)?,
        ops::Reply::Elicited
    );
    end(ledger, caller, harness, call, Vec::new())?;
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

/// Whether `label` names one of `q`'s options (as the card shows them, a recommended
/// one's " (Recommended)" included or not).
fn is_option(q: &Question, label: &str) -> bool {
    let bare = |l: &str| questions_core::model::split_recommended(l).0.to_lowercase();
    q.options.iter().any(|o| bare(&o.label) == bare(label))
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
            Harness::Pi => Channel::Pi,
        }
    }
}
