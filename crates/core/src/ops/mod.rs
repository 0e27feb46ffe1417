//! The operations every front end calls: typed requests in, typed results out. Each one
//! opens its own transaction through the `Ledger` and applies the model's transitions, so
//! a front end (the command line today; an MCP server, a web inbox, watchers next) never
//! opens a transaction or restates a rule of its own.

mod approval;
mod change;
mod door;
mod envelope;
mod follow;
mod gate;
mod interop;
pub mod oauth;
mod people;
mod principal;
mod quiet;
pub mod relay;
mod routing;
mod secret;
pub mod signin;
mod stream;
#[cfg(test)]
mod suite;
mod tasks;
mod token;

pub use approval::{group, ApprovalReport, GroupChange, GroupChanged};
pub use change::{
    accept_defaults, change, clear, end_call, log, log_all, log_call, record_choices,
    record_delivery, Act, Asked, CallStep, Choice, Cleared, Defaulted, Logged, LoggedAll,
    NotRecorded, PersonsChange, Recorded, Shown, Together,
};
pub use door::{call, CallKey, CallQuestions, Delivered, Reply, Request};
pub use envelope::{document, failure, Envelope, Failure, Procedure};
pub use follow::{follow, on_notice, Seen, Step, READ_AGAIN_AFTER};
pub use gate::{
    answers, check, quoted, wait_settled, AnswerDetail, AnswersReport, CheckRequest, GateReport,
    Wait,
};
pub use interop::{import, ingest, Expiry, Imported, Ingested};
pub use people::{identify, Identity, DELEGATION_HOPS};
pub use principal::{AgentToken, PersonToken, Principal};
pub use quiet::{set_quiet, Digest, QuietSet, Window, DIGEST_LATE};
pub use routing::{
    delegate, duration_text, policy_for, route, Delegated, Policies, PolicyChanged, PolicyReply,
    PolicyRequest, PolicySet, PolicyUnset, REMIND_MAX_LIMIT,
};
pub use tasks::{cancel_task, look_task, start_task, NewTask, TaskEnd};
pub use token::{
    authenticate, default_lifetime, Grant, PersonRevoked, PersonSessions, TokenListed, TokenMade,
    TokenReply, TokenRequest, TokenRevoked, Tokens, SECRET_PREFIX, UNAUTHORIZED,
};
// What a front end names to reach the ledger: where it is, the handle the operations take
// (it opens no transaction for a front end), and the filters of the reads.
pub use crate::store::{
    make_default_folder, refuse_non_ledger, schema_version, Delegation, Delivery, EventFilter,
    Filter, FoundBy, Ledger, Link, Location, LockWait, Policy, QuietHours, StoredSignIn,
    StoredTask, StoredToken, TaskState, TokenRole,
};
pub use stream::{
    events, events_after, resume, save_watcher_position, start_watcher, LedgerEvent, Page, Resume,
    Started,
};

use serde::{Deserialize, Serialize};

use crate::clock;
use crate::error::{Error, Result};
use crate::model::{Actor, Channel, Event, NewQuestion, Question, Status};
use crate::store::Tx;

/// Who calls an operation and through what: every change it makes records them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// A person's name; none when nobody can be named.
    pub by: Option<String>,
    pub channel: Channel,
}

impl Caller {
    pub fn actor(&self, at: &str) -> Actor {
        Actor {
            by: self.by.clone(),
            channel: self.channel,
            at: at.to_string(),
        }
    }
}

/// Applies every expiry that is due, exactly once however many processes look at the
/// same moment: the questions are read again inside the write, so a question another
/// process has already changed is left alone. Costs one indexed read when nothing is due.
pub fn settle(ledger: &mut Ledger) -> Result<usize> {
    let now = clock::now();
    if !ledger.read(|tx| tx.any_due(&now))? {
        return Ok(0);
    }
    ledger.write(|tx| expire_due(tx, &now))
}

/// Applies the expiries due at `now` inside a write already under way: what a command
/// that writes anyway does instead of `settle`, saving it a transaction.
fn expire_due(tx: &Tx, now: &str) -> Result<usize> {
    let mut applied = 0;
    for q in tx.due(now)? {
        if let Some(t) = q.expire(now) {
            tx.apply(&t)?;
            applied += 1;
        }
    }
    Ok(applied)
}

/// The question with this id, or `not_found`.
fn existing(tx: &Tx, id: i64) -> Result<Question> {
    tx.question(id)?.ok_or_else(|| {
        Error::not_found(format!("there is no question {id} in the ledger"))
            .with_flag_hint("'questions list' shows the ids")
    })
}

/// The questions an operation works on: the stage's, narrowed to `ids`. Every id must
/// exist (and be in the stage, when one is given): an unknown id never passes a gate.
fn select(tx: &Tx, stage: Option<&str>, ids: Option<&[i64]>) -> Result<Vec<Question>> {
    let found = tx.questions(&Filter {
        stage: if ids.is_some() {
            None
        } else {
            stage.map(str::to_string)
        },
        ids: ids.map(<[i64]>::to_vec),
        ..Filter::default()
    })?;
    let Some(ids) = ids else { return Ok(found) };
    let known: std::collections::HashSet<i64> = found.iter().map(|q| q.id).collect();
    let missing: Vec<String> = ids
        .iter()
        .filter(|id| !known.contains(id))
        .map(i64::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(Error::not_found(format!(
            "no question with id {} in the ledger; an unknown id never passes a gate",
            missing.join(", ")
        )));
    }
    if let Some(stage) = stage {
        let outside: Vec<String> = found
            .iter()
            .filter(|q| q.stage.trim() != stage)
            .map(|q| format!("{} (stage '{}')", q.id, q.stage))
            .collect();
        if !outside.is_empty() {
            return Err(Error::not_found(format!(
                "question {} not in stage '{stage}'; check the ids stored for this stage",
                outside.join(", ")
            )));
        }
    }
    Ok(found)
}

/// What `log_all` would return for `questions` without writing anything: the ids of the
/// questions on record with the same stage, group and text, each once in the order given,
/// or none when one of them would be created; and the ledger's id, read in the same
/// snapshot. A caller that must refuse a call before it logs anything (a retry whose
/// state names the questions an earlier call logged) checks it against this.
pub fn on_record(
    ledger: &mut Ledger,
    questions: &[NewQuestion],
) -> Result<(Option<String>, Option<Vec<i64>>)> {
    ledger.read(|tx| {
        let mut ids: Vec<i64> = Vec::with_capacity(questions.len());
        for new in questions {
            let Some(same) = tx.find_same(&new.stage, new.group_name.as_deref(), &new.question)?
            else {
                return Ok((tx.ledger_id()?, None));
            };
            if !ids.contains(&same.id) {
                ids.push(same.id);
            }
        }
        Ok((tx.ledger_id()?, Some(ids)))
    })
}

/// The questions a filter matches, by id.
/// `list`'s document. `ledger` is for a client that sends a change back (the web inbox):
/// the ledger's id, to send with it (none when the ledger has none yet); the command line
/// leaves it out.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Listed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<Option<String>>,
    pub count: usize,
    pub questions: Vec<Question>,
}

impl Listed {
    pub fn new(questions: Vec<Question>) -> Listed {
        Listed {
            ledger: None,
            count: questions.len(),
            questions,
        }
    }
}

pub fn list(ledger: &mut Ledger, filter: &Filter) -> Result<Vec<Question>> {
    settle(ledger)?;
    ledger.read(|tx| tx.questions(filter))
}

/// The stage's pending questions, narrowed to `ids` (each of which must be in the stage):
/// what is put before a person.
pub fn pending(ledger: &mut Ledger, stage: &str, ids: Option<&[i64]>) -> Result<Vec<Question>> {
    Ok(named(ledger, Some(stage), ids)?
        .into_iter()
        .filter(|q| q.state.status == Status::Pending)
        .collect())
}

/// The questions a caller names: the stage's, narrowed to `ids` (each of which must exist,
/// and be in the stage when one is given), whatever their status.
pub fn named(
    ledger: &mut Ledger,
    stage: Option<&str>,
    ids: Option<&[i64]>,
) -> Result<Vec<Question>> {
    settle(ledger)?;
    ledger.read(|tx| select(tx, stage, ids))
}

/// `named`, with the id of the ledger they were read from (in the same snapshot): a
/// waiter that compares it between its reads sees a ledger that replaced its own even
/// where nothing woke it for the change.
pub fn named_in_ledger(
    ledger: &mut Ledger,
    stage: Option<&str>,
    ids: Option<&[i64]>,
) -> Result<(Vec<Question>, Option<String>)> {
    settle(ledger)?;
    ledger.read(|tx| Ok((select(tx, stage, ids)?, tx.ledger_id()?)))
}

/// The history of a question or a stage, oldest first.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct History {
    pub count: usize,
    pub events: Vec<Event>,
}

pub fn history(ledger: &mut Ledger, filter: &EventFilter) -> Result<History> {
    settle(ledger)?;
    let events = ledger.read(|tx| {
        let events = tx.events(filter)?;
        if let EventFilter::Question(id) = filter {
            if events.is_empty() && tx.question(*id)?.is_none() {
                return Err(Error::not_found(format!(
                    "question {id} has no history: it was never in this ledger"
                )));
            }
        }
        Ok(events)
    })?;
    Ok(History {
        count: events.len(),
        events,
    })
}

/// Where the ledger is and what it holds. It only reads: a ledger that does not exist is
/// reported as such and not created.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Info {
    pub ledger: LedgerInfo,
    pub stages: Vec<StageCounts>,
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LedgerInfo {
    pub engine: std::borrow::Cow<'static, str>,
    /// An absolute path, or the database's URL without its password.
    pub location: String,
    pub found_by: FoundBy,
    pub exists: bool,
    /// 0 when the ledger does not exist yet.
    pub schema_version: i64,
    /// Ledgers the walk-up found and passed over (see `Location::find`).
    pub also_found: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StageCounts {
    pub stage: String,
    pub total: i64,
    pub pending_required: i64,
    pub pending_optional: i64,
    pub answered: i64,
    pub skipped: i64,
    pub declined: i64,
}

pub fn info(
    ledger: &mut Ledger,
    found_by: FoundBy,
    also_found: &[std::path::PathBuf],
) -> Result<Info> {
    let location = match ledger.location() {
        Location::File { path, .. } => std::path::absolute(path)
            .unwrap_or_else(|_| path.clone())
            .display()
            .to_string(),
        #[cfg(feature = "postgres")]
        other => other.display(),
    };
    let engine = ledger.location().engine();
    let (exists, schema_version) = ledger.schema()?;
    if exists {
        settle(ledger)?;
    }
    let tallies = ledger.read(|tx| tx.tallies())?;
    let mut stages: Vec<StageCounts> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for t in tallies {
        let at = *index.entry(t.stage.clone()).or_insert_with(|| {
            stages.push(StageCounts {
                stage: t.stage.clone(),
                ..StageCounts::default()
            });
            stages.len() - 1
        });
        let counts = &mut stages[at];
        counts.total += t.count;
        match t.status {
            Status::Answered => counts.answered += t.count,
            Status::Skipped => counts.skipped += t.count,
            Status::Declined => counts.declined += t.count,
            Status::Pending if t.required => counts.pending_required += t.count,
            Status::Pending => counts.pending_optional += t.count,
        }
    }
    Ok(Info {
        ledger: LedgerInfo {
            engine: engine.into(),
            location,
            found_by,
            exists,
            schema_version,
            also_found: also_found
                .iter()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                .map(|p| p.display().to_string())
                .collect(),
        },
        stages,
    })
}

/// Opens the ledger for writing, creating it if it is missing, as the first write would:
/// for a front end that will record changes, so that its readers see the real ledger from
/// the start rather than an empty stand-in.
pub fn create(ledger: &mut Ledger) -> Result<()> {
    ledger.write(|_| Ok(()))
}

/// Whether a server may take requests for the ledger: it is there, its migrations are
/// this binary's, and it answers a read. `unavailable` saying which is not so.
pub fn ready(ledger: &mut Ledger) -> Result<()> {
    let (exists, found) = ledger.schema()?;
    let ours = schema_version();
    if !exists {
        return Err(Error::new(
            crate::error::ErrorCode::Unavailable,
            "the ledger is not there",
        ));
    }
    if found != ours {
        return Err(Error::new(
            crate::error::ErrorCode::Unavailable,
            format!("the ledger's schema is version {found}, this binary's is {ours}"),
        ));
    }
    last_seq(ledger).map(|_| ())
}

/// The newest event's seq.
pub fn last_seq(ledger: &mut Ledger) -> Result<i64> {
    ledger.read(|tx| tx.last_seq())
}

/// What an inbox puts before people: the pending questions (of one stage, or of all),
/// required ones first, each with its history; and the seq they were read at, so a page
/// can follow what changes after.
#[derive(Debug)]
pub struct Inbox {
    pub seq: i64,
    /// The ledger's id (see `Shown`).
    pub ledger: Option<String>,
    pub questions: Vec<(Question, Vec<Event>)>,
    /// For each approval among them, who may vote on it now (see `Approval::eligible`)
    /// and their delegates: a page offers its buttons to those people only.
    pub voters: std::collections::HashMap<i64, std::collections::BTreeSet<String>>,
}

pub fn inbox(ledger: &mut Ledger, stage: Option<&str>) -> Result<Inbox> {
    settle(ledger)?;
    ledger.read(|tx| {
        let seq = tx.last_seq()?;
        let pending = tx.questions(&Filter {
            stage: stage.map(str::to_string),
            status: Some(Status::Pending),
            ..Filter::default()
        })?;
        let mut stages: Vec<&str> = pending.iter().map(|q| q.stage.as_str()).collect();
        stages.sort_unstable();
        stages.dedup();
        let mut history: std::collections::HashMap<i64, Vec<Event>> =
            pending.iter().map(|q| (q.id, Vec::new())).collect();
        for stage in stages {
            for event in tx.events(&EventFilter::Stage(stage.to_string()))? {
                if let Some(events) = history.get_mut(&event.question_id) {
                    events.push(event);
                }
            }
        }
        let mut questions: Vec<(Question, Vec<Event>)> = pending
            .into_iter()
            .map(|q| {
                let events = history.remove(&q.id).unwrap_or_default();
                (q, events)
            })
            .collect();
        questions.sort_by_key(|(q, _)| (!q.required, q.id));
        let mut voters = approval::voters(tx, questions.iter().map(|(q, _)| q))?;
        // Their delegates vote too, for them (§14a): a page offers them the buttons.
        let delegations = tx.delegations()?;
        if !delegations.is_empty() {
            let now = clock::now();
            for eligible in voters.values_mut() {
                let standing_in: Vec<String> = eligible
                    .iter()
                    .flat_map(|p| people::delegates_of(&delegations, p, &now))
                    .collect();
                eligible.extend(standing_in);
            }
        }
        Ok(Inbox {
            seq,
            ledger: tx.ledger_id()?,
            questions,
            voters,
        })
    })
}

/// What `reset` did.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Reset {
    /// The ledger's file, or the PostgreSQL URL without its password.
    pub deleted: String,
    pub existed: bool,
}

/// Deletes the ledger at `location`, every question and answer in it, once `confirmed`
/// (the command line's `--yes`). It is not opened first, so a damaged ledger can be reset
/// too (see `store::delete`).
pub fn reset(location: &Location, confirmed: bool) -> Result<Reset> {
    if !confirmed {
        return Err(Error::usage(format!(
            "reset deletes the ledger {} and every question and answer in it; pass --yes to confirm",
            location.display()
        )));
    }
    let existed = crate::store::delete(location)?;
    let deleted = match location {
        Location::File { path, .. } => path.display().to_string(),
        #[cfg(feature = "postgres")]
        Location::Postgres { .. } => location.display(),
    };
    Ok(Reset { deleted, existed })
}
