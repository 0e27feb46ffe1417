//! The door: who calls (`Principal`), what they ask (`Request`), and the one function
//! that decides whether they may and runs it (`call`). The roles of §15 are decided here
//! and nowhere else: a front end that serves a token's holder sends its requests through
//! `call` and only translates.
//!
//! - Direct access (the ledger's file, a PostgreSQL role): every request, as today.
//! - An agent token: logs, ingests and reads within its stages (a read that names no
//!   stage sees only its stages), waits, and clears a stage where nothing required is
//!   pending. Anything else is `forbidden`, recorded as a `refused` event, and changes
//!   nothing. What it logs names the token as who logged it.
//! - A person token: acts as its person (answers and votes as them, channel `api`); it
//!   does not make or change groups, link channel identities, make or revoke tokens, set
//!   routing policy, or reset: those take direct access, as on the command line.

use serde::{Deserialize, Serialize};

use super::approval::{group, GroupChange, GroupChanged};
use super::change::{
    self, Act, Asked, CallStep, Choice, Cleared, Defaulted, Logged, LoggedAll, PersonsChange,
    Recorded, Shown, Together,
};
use super::gate::{answers, check, wait_settled, AnswersReport, CheckRequest, GateReport};
use super::interop::{import, ingest, Expiry, Imported, Ingested};
use super::people::Identity;
use super::principal::{AgentToken, PersonToken, Principal};
use super::relay::{people_link, PeopleChanged};
use super::routing::{self, PolicyReply, PolicyRequest};
use super::stream::{events, events_after, save_watcher_position, start_watcher, Page, Started};
use super::token::{self, TokenReply, TokenRequest};
use super::{history, info, list, named, reset, Caller, History, Info, Listed, Procedure, Reset};
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::formats::answers::ImportFormat;
use crate::model::{Approval, Channel, Draft, Event, HarnessCall, NewQuestion, Status};
use crate::store::{EventFilter, Filter, FoundBy, Ledger};

/// What a principal asks of the ledger: every operation the door serves, as a value that
/// crosses a wire as it is (`{"op": "log", "args": {…}}`). What a request says of who
/// makes it (an `Identity`, an approval's logger) holds for direct access only: the door
/// puts a token's holder in its place.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum Request {
    /// A question as a front end read it; the door makes it one (`NewQuestion::build`).
    Log {
        draft: Draft,
        #[serde(default)]
        expiry: Expiry,
        #[serde(default)]
        allow_duplicate: bool,
        /// The caller's own key for this change (§15, exactly once): the same key and
        /// question again, from the same holder, is the question the first call logged,
        /// never a second one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// Several questions logged together, all or nothing (an agent's batch, as MCP's
    /// `ask_questions` sends it).
    LogAll {
        drafts: Vec<Draft>,
    },
    Ingest {
        stage: String,
        text: String,
        only: Option<crate::formats::Source>,
        expiry: Expiry,
        approval: Option<Approval>,
        /// The caller's own key for this change (§15, exactly once), as `Log`'s.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    List(Filter),
    Check(CheckRequest),
    /// The questions a stage or a list of ids names, whatever their status (what an MCP
    /// wait reads).
    Named {
        stage: Option<String>,
        ids: Option<Vec<i64>>,
    },
    /// What the person chose in a form a client showed them (MCP elicitation, a harness's
    /// own card): with an agent's token the host's claim (`host:NAME`), which settles no
    /// approval; the client that showed the form is all that vouches for it.
    Elicited {
        stage: String,
        chosen: Vec<(i64, Choice)>,
        shown: Shown,
    },
    /// A person's answers in the dialog `ask` showed them on a terminal: all recorded, or
    /// none, as theirs. A person's act, which an agent token never makes.
    Asked {
        stage: String,
        chosen: Vec<(i64, Choice)>,
        shown: Shown,
    },
    /// The stage's pending questions, narrowed to `ids`: what `render` renders.
    Pending {
        stage: String,
        ids: Option<Vec<i64>>,
    },
    Answers {
        stage: String,
    },
    History(EventFilter),
    /// A page of the history after `since` (`events`); with `wait`, the first page that
    /// goes past it within that time (`events --follow` over HTTPS, a long poll).
    Events {
        since: i64,
        stage: Option<String>,
        limit: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait: Option<std::time::Duration>,
    },
    /// Where the watcher `name` goes on from (`watch`): its stored position, else the
    /// start of the history (`from_start`) or its end, stored so. A token's watchers are
    /// its own: their names are kept apart from everyone else's.
    Watcher {
        name: String,
        #[serde(default)]
        from_start: bool,
    },
    /// The watcher `name` delivered everything up to `position` of the ledger `of`.
    WatcherAt {
        name: String,
        position: i64,
        of: Option<String>,
    },
    Info {
        found_by: FoundBy,
        /// The ledgers the walk-up passed over, as the caller found them.
        #[serde(default)]
        also_found: Vec<std::path::PathBuf>,
    },
    Clear {
        stage: String,
        /// The caller's own key for this change (§15, exactly once), as `Log`'s.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// Answer, skip, decline, accept a proposal, or vote.
    Change(PersonsChange),
    AcceptDefaults {
        stage: String,
        include_required: bool,
    },
    Import {
        stage: String,
        text: String,
        format: Option<ImportFormat>,
        force: bool,
    },
    Group {
        identity: Identity,
        name: String,
        change: GroupChange,
        people: Vec<String>,
    },
    /// Link or unlink a person's channel identity (§14).
    People {
        identity: Identity,
        name: String,
        channel_id: String,
        link: bool,
    },
    Token(TokenRequest),
    /// Set, list or unset a stage pattern's routing policy (§14a).
    Policy(PolicyRequest),
    Reset {
        confirmed: bool,
    },
    /// A call of an agent harness's own ask tool (`questions hook`, §11): its questions,
    /// found by the call's key and logged when `step` says so; with `wait`, once none of
    /// them is pending or the time is up (a long poll over HTTPS).
    HarnessCall {
        call: CallKey,
        step: CallStep,
        questions: Vec<Draft>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait: Option<std::time::Duration>,
    },
    /// The call's answers went to the agent through its own tool: a `delivered` event for
    /// each of `ids` (none: the person answered the call's card), and the call is over.
    Delivered {
        call: CallKey,
        ids: Vec<i64>,
        detail: serde_json::Value,
        /// The caller's own key for this change (§15, exactly once), as `Log`'s.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
}

/// A harness call's key as it crosses a wire (see `HarnessCall`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallKey {
    pub key: String,
    pub by_input: bool,
}

impl From<&HarnessCall> for CallKey {
    fn from(call: &HarnessCall) -> Self {
        CallKey {
            key: call.key.clone(),
            by_input: call.by_input,
        }
    }
}

impl From<CallKey> for HarnessCall {
    fn from(call: CallKey) -> Self {
        HarnessCall {
            key: call.key,
            by_input: call.by_input,
        }
    }
}

/// A harness call's questions, one per question of the call, in its order (none where a
/// look found none).
#[derive(Debug, Serialize, Deserialize)]
pub struct CallQuestions {
    pub questions: Vec<Option<crate::model::Question>>,
}

/// How many `delivered` events were recorded.
#[derive(Debug, Serialize, Deserialize)]
pub struct Delivered {
    pub delivered: usize,
}

impl Request {
    /// The request's name, as a refusal records it.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Log { .. } | Request::LogAll { .. } => "log",
            Request::Ingest { .. } => "ingest",
            Request::Named { .. } => "list",
            Request::Elicited { .. } | Request::Asked { .. } => "answer",
            Request::List(_) => "list",
            Request::Check(_) => "check",
            Request::Pending { .. } => "render",
            Request::Answers { .. } => "answers",
            Request::History(_) => "history",
            Request::Events { .. } => "events",
            Request::Watcher { .. } | Request::WatcherAt { .. } => "watch",
            Request::Info { .. } => "info",
            Request::Clear { .. } => "clear",
            Request::Change(c) => match c.act {
                Act::Answer(_) => "answer",
                Act::AcceptProposed => "accept",
                Act::Skip(_) => "skip",
                Act::Decline(_) => "decline",
                Act::Vote(..) => "vote",
            },
            Request::AcceptDefaults { .. } => "accept-defaults",
            Request::Import { .. } => "import",
            Request::Group { .. } => "group",
            Request::People { .. } => "people",
            Request::Token(_) => "token",
            Request::Policy(_) => "policy",
            Request::Reset { .. } => "reset",
            Request::HarnessCall { .. } | Request::Delivered { .. } => "hook",
        }
    }
}

impl Request {
    /// The procedure whose document answers it (§2).
    pub fn procedure(&self) -> Procedure {
        match self {
            Request::Log { .. } | Request::LogAll { .. } => Procedure::Log,
            Request::Ingest { .. } => Procedure::Ingest,
            Request::Named { .. } => Procedure::List,
            Request::Elicited { .. } => Procedure::AskQuestions,
            Request::Asked { .. } => Procedure::Ask,
            Request::List(_) => Procedure::List,
            Request::Check(_) => Procedure::Check,
            Request::Pending { .. } => Procedure::Render,
            Request::Answers { .. } => Procedure::Answers,
            Request::History(_) => Procedure::History,
            Request::Events { .. } => Procedure::Events,
            Request::Watcher { .. } | Request::WatcherAt { .. } => Procedure::Watch,
            Request::Info { .. } => Procedure::Info,
            Request::Clear { .. } => Procedure::Clear,
            Request::Change(c) => match &c.act {
                Act::Answer(_) | Act::AcceptProposed => Procedure::Answer,
                Act::Skip(_) => Procedure::Skip,
                Act::Decline(_) => Procedure::Decline,
                Act::Vote(_, ballot) => match ballot.verdict {
                    crate::model::Verdict::Approve => Procedure::Approve,
                    crate::model::Verdict::Reject => Procedure::Reject,
                },
            },
            Request::AcceptDefaults { .. } => Procedure::AcceptDefaults,
            Request::Import { .. } => Procedure::Import,
            Request::Group { .. } => Procedure::Group,
            Request::People { .. } => Procedure::People,
            Request::Token(_) => Procedure::Token,
            Request::Policy(_) => Procedure::Policy,
            Request::Reset { .. } => Procedure::Reset,
            Request::HarnessCall { .. } | Request::Delivered { .. } => Procedure::Hook,
        }
    }
}

/// What a request returns: serialized, the keys of its document (§2), which `document`
/// puts in the envelope.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Reply {
    Logged(Logged),
    LoggedAll(LoggedAll),
    Named(Listed),
    Elicited(Asked),
    Ingested(Ingested),
    Listed(Listed),
    Gate(GateReport),
    Pending(Listed),
    Answers(AnswersReport),
    History(History),
    Events(Page),
    Watcher(Started),
    WatcherAt(WatcherAt),
    Info(Info),
    Cleared(Cleared),
    Recorded(Recorded),
    Defaulted(Defaulted),
    Imported(Imported),
    Group(GroupChanged),
    People(PeopleChanged),
    Token(TokenReply),
    Policy(PolicyReply),
    Reset(Reset),
    Call(CallQuestions),
    Delivered(Delivered),
}

impl Reply {
    /// The reply `req` got, read back from its document (the envelope's own keys are
    /// passed over): what a client of a served ledger (§15) goes on from, as it would from
    /// `call`'s. The requests only direct access makes are `None`.
    pub fn read(req: &Request, doc: serde_json::Value) -> Option<serde_json::Result<Reply>> {
        use serde_json::from_value as from;
        Some(match req {
            Request::Log { .. } => from(doc).map(Reply::Logged),
            Request::Ingest { .. } => from(doc).map(Reply::Ingested),
            Request::List(_) => from(doc).map(Reply::Listed),
            Request::Named { .. } => from(doc).map(Reply::Named),
            Request::Pending { .. } => from(doc).map(Reply::Pending),
            Request::Asked { .. } | Request::Elicited { .. } => from(doc).map(Reply::Elicited),
            Request::Check(_) => from(doc).map(Reply::Gate),
            Request::Answers { .. } => from(doc).map(Reply::Answers),
            Request::History(_) => from(doc).map(Reply::History),
            Request::Events { .. } => from(doc).map(Reply::Events),
            Request::Watcher { .. } => from(doc).map(Reply::Watcher),
            Request::WatcherAt { .. } => from(doc).map(Reply::WatcherAt),
            Request::Info { .. } => from(doc).map(Reply::Info),
            Request::Clear { .. } => from(doc).map(Reply::Cleared),
            Request::AcceptDefaults { .. } => from(doc).map(Reply::Defaulted),
            Request::Import { .. } => from(doc).map(Reply::Imported),
            Request::Change(_) => from(doc).map(Reply::Recorded),
            Request::HarnessCall { .. } => from(doc).map(Reply::Call),
            Request::Delivered { .. } => from(doc).map(Reply::Delivered),
            Request::LogAll { .. }
            | Request::Group { .. }
            | Request::People { .. }
            | Request::Token(_)
            | Request::Policy(_)
            | Request::Reset { .. } => return None,
        })
    }

    /// Whether the document says `"ok": true`: all but a gate that fails.
    pub fn passes(&self) -> bool {
        match self {
            Reply::Gate(report) => report.gate.passes(),
            _ => true,
        }
    }
}

/// Runs `req` for `who`, when `who` may: the door every front end sends a principal's
/// requests through. A refusal is `forbidden`, recorded as a `refused` event (by the
/// token, channel `api`), and changes nothing else.
pub fn call(ledger: &mut Ledger, who: &Principal, req: Request) -> Result<Reply> {
    match who {
        Principal::Direct(caller) => run(ledger, caller, req),
        Principal::Agent(agent) => as_agent(ledger, who, agent, req),
        Principal::Person(person) => as_person(ledger, who, person, req),
    }
}

/// Runs a request as it stands, for `caller`.
fn run(ledger: &mut Ledger, caller: &Caller, req: Request) -> Result<Reply> {
    Ok(match req {
        Request::Log {
            draft,
            expiry,
            allow_duplicate,
            key,
        } => {
            let mut new = NewQuestion::build(draft)?;
            new.logged_by.clone_from(&caller.by);
            expiry.apply(&mut new, &clock::now())?;
            let once = key.map(|k| once_key(caller, &k)).transpose()?;
            Reply::Logged(change::log_once(
                ledger,
                &new,
                allow_duplicate,
                once.as_deref(),
            )?)
        }
        Request::LogAll { drafts } => {
            let new = drafts
                .into_iter()
                .map(|d| logged_as(d, caller))
                .collect::<Result<Vec<_>>>()?;
            Reply::LoggedAll(change::log_all(ledger, &new)?)
        }
        Request::Named { stage, ids } => Reply::Named(Listed::new(named(
            ledger,
            stage.as_deref(),
            ids.as_deref(),
        )?)),
        Request::Elicited {
            stage,
            chosen,
            shown,
        } => Reply::Elicited(change::record_choices(
            ledger,
            caller,
            &stage,
            &chosen,
            &shown,
            Together::Each,
        )?),
        Request::Asked {
            stage,
            chosen,
            shown,
        } => Reply::Elicited(change::record_choices(
            ledger,
            caller,
            &stage,
            &chosen,
            &shown,
            Together::All,
        )?),
        Request::Ingest {
            stage,
            text,
            only,
            expiry,
            approval,
            key,
        } => {
            let once = key.map(|k| once_key(caller, &k)).transpose()?;
            Reply::Ingested(ingest(
                ledger,
                &stage,
                &text,
                only,
                expiry,
                approval.as_ref(),
                once.as_deref(),
                caller.by.as_deref(),
            )?)
        }
        Request::List(filter) => Reply::Listed(Listed::new(list(ledger, &filter)?)),
        Request::Check(req) => Reply::Gate(check(ledger, &req)?),
        Request::Pending { stage, ids } => {
            Reply::Pending(Listed::new(super::pending(ledger, &stage, ids.as_deref())?))
        }
        Request::Answers { stage } => Reply::Answers(answers(ledger, &stage)?),
        Request::History(filter) => Reply::History(history(ledger, &filter)?),
        Request::Events {
            since,
            stage,
            limit,
            wait,
        } => Reply::Events(page(ledger, since, stage.as_deref(), limit, wait)?),
        Request::Watcher { name, from_start } => {
            Reply::Watcher(start_watcher(ledger, &name, from_start)?)
        }
        Request::WatcherAt { name, position, of } => Reply::WatcherAt(WatcherAt {
            saved: save_watcher_position(ledger, &name, position, of.as_deref())?,
        }),
        Request::Info {
            found_by,
            also_found,
        } => Reply::Info(info(ledger, found_by, &also_found)?),
        Request::Clear { stage, key } => {
            let once = key.map(|k| once_key(caller, &k)).transpose()?;
            Reply::Cleared(change::clear(ledger, caller, &stage, once.as_deref())?)
        }
        Request::Change(mut req) => {
            req.key = req.key.map(|k| once_key(caller, &k)).transpose()?;
            Reply::Recorded(change::change(ledger, caller, &req)?)
        }
        Request::AcceptDefaults {
            stage,
            include_required,
        } => Reply::Defaulted(change::accept_defaults(
            ledger,
            caller,
            &stage,
            include_required,
        )?),
        Request::Import {
            stage,
            text,
            format,
            force,
        } => Reply::Imported(import(ledger, caller, &stage, &text, format, force)?),
        Request::Group {
            identity,
            name,
            change,
            people,
        } => Reply::Group(group(
            ledger,
            &identity,
            caller.channel,
            &name,
            &change,
            &people,
        )?),
        Request::People {
            identity,
            name,
            channel_id,
            link,
        } => Reply::People(people_link(
            ledger,
            &identity,
            caller.channel,
            &name,
            &channel_id,
            link,
        )?),
        Request::Token(req) => Reply::Token(token::run(ledger, caller, &req)?),
        Request::Policy(req) => Reply::Policy(routing::run(ledger, caller, &req)?),
        Request::Reset { confirmed } => {
            let location = ledger.location().clone();
            ledger.forget_connection();
            Reply::Reset(reset(&location, confirmed)?)
        }
        Request::HarnessCall {
            call,
            step,
            questions,
            wait,
        } => Reply::Call(harness_call(
            ledger,
            caller,
            &call.into(),
            step,
            questions,
            wait,
        )?),
        Request::Delivered {
            call,
            ids,
            detail,
            key,
        } => {
            if !ids.is_empty() {
                let once = key.map(|k| once_key(caller, &k)).transpose()?;
                change::record_delivery_once(ledger, caller, &ids, &detail, once.as_deref())?;
            }
            change::end_call(ledger, &call.into())?;
            Reply::Delivered(Delivered {
                delivered: ids.len(),
            })
        }
    })
}

/// A harness call's questions (see `Request::HarnessCall`): each made a question by the
/// model's rules, found or logged, and waited for.
fn harness_call(
    ledger: &mut Ledger,
    caller: &Caller,
    call: &HarnessCall,
    step: CallStep,
    drafts: Vec<Draft>,
    wait: Option<std::time::Duration>,
) -> Result<CallQuestions> {
    let news = drafts
        .into_iter()
        .map(|d| logged_as(d, caller))
        .collect::<Result<Vec<_>>>()?;
    let mut questions = change::log_call(ledger, call, step, &news)?;
    if let Some(wait) = wait.filter(|w| !w.is_zero()) {
        let pending = questions
            .iter()
            .flatten()
            .any(|q| q.state.status == Status::Pending);
        if pending {
            let mut ids: Vec<i64> = questions.iter().flatten().map(|q| q.id).collect();
            ids.dedup();
            let now = wait_settled(ledger, &ids, wait)?;
            for q in questions.iter_mut().flatten() {
                if let Some(n) = now.iter().find(|n| n.id == q.id) {
                    q.clone_from(n);
                }
            }
        }
    }
    Ok(CallQuestions { questions })
}

/// A page of events, at once or within `wait`.
fn page(
    ledger: &mut Ledger,
    since: i64,
    stage: Option<&str>,
    limit: u32,
    wait: Option<std::time::Duration>,
) -> Result<Page> {
    match wait {
        None => events(ledger, since, stage, limit),
        Some(wait) => events_after(ledger, since, stage, limit, wait),
    }
}

/// A change's key as the ledger keeps it: its holder's, so that no one else's key ever
/// finds it (`api:<who>:<key>`; a harness's calls are `<harness>:…`).
fn once_key(caller: &Caller, key: &str) -> Result<String> {
    let key = key.trim();
    if key.is_empty() || key.len() > 128 || !key.chars().all(|c| c.is_ascii_graphic()) {
        return Err(Error::usage(
            "an idempotency key is 1 to 128 visible ASCII characters",
        ));
    }
    Ok(format!(
        "{}{}:{key}",
        crate::model::CALLER_KEY,
        caller.by.as_deref().unwrap_or("-")
    ))
}

fn as_agent(
    ledger: &mut Ledger,
    who: &Principal,
    agent: &AgentToken,
    req: Request,
) -> Result<Reply> {
    let caller = who.caller();
    let outside = |stage: &str| !agent.may_see(stage);
    // Whether the request stays within the token's stages, where it names them.
    let named_outside: Option<String> = match &req {
        Request::Log { draft, .. } => Some(draft.stage.clone()),
        Request::LogAll { drafts } => drafts
            .iter()
            .map(|d| d.stage.clone())
            .find(|stage| outside(stage)),
        Request::Named { stage, .. } => stage.clone(),
        Request::Ingest { stage, .. }
        | Request::Elicited { stage, .. }
        | Request::Pending { stage, .. }
        | Request::Answers { stage }
        | Request::Clear { stage, .. }
        | Request::History(EventFilter::Stage(stage)) => Some(stage.clone()),
        Request::List(filter) => filter.stage.clone(),
        Request::Events { stage, .. } => stage.clone(),
        Request::Check(check) => match &check.stage {
            Some(stage) => Some(stage.clone()),
            // A gate of every stage reads stages outside a narrowed token's.
            None if !agent.stages.is_empty() => {
                return refuse(
                    ledger,
                    who,
                    &req,
                    0,
                    "an agent token limited to some stages checks one of them: name the stage",
                )
            }
            None => None,
        },
        _ => None,
    }
    .filter(|stage| outside(stage));
    if let Some(stage) = named_outside {
        return refuse(
            ledger,
            who,
            &req,
            0,
            &format!(
                "stage '{}' is outside this token's stages ({})",
                stage.trim(),
                agent.stages.join(", ")
            ),
        );
    }
    match req {
        Request::Log {
            mut draft,
            expiry,
            allow_duplicate,
            key,
        } => {
            logged_by(&mut draft, &agent.name)?;
            run(
                ledger,
                &caller,
                Request::Log {
                    draft,
                    expiry,
                    allow_duplicate,
                    key,
                },
            )
        }
        Request::LogAll { mut drafts } => {
            for draft in &mut drafts {
                logged_by(draft, &agent.name)?;
            }
            run(ledger, &caller, Request::LogAll { drafts })
        }
        Request::Named { stage, ids } => {
            let found = named(ledger, stage.as_deref(), ids.as_deref())?;
            if let Some(q) = found.iter().find(|q| outside(&q.stage)) {
                let id = q.id;
                return refuse(
                    ledger,
                    who,
                    &Request::Named { stage, ids },
                    id,
                    &format!("question {id} is outside this token's stages"),
                );
            }
            Ok(Reply::Named(Listed::new(found)))
        }
        // A form the agent's host showed proves no more than that: recorded as the host's,
        // through its own channel; an approval is settled only by its approvers' votes,
        // which a form never casts (the model refuses a form's answer to one).
        elicited @ Request::Elicited { .. } => run(
            ledger,
            &Caller {
                by: Some(format!("host:{}", agent.name)),
                channel: Channel::Elicitation,
            },
            elicited,
        ),
        ingest @ Request::Ingest { .. } => run(ledger, &caller, ingested_by(ingest, &agent.name)?),
        Request::List(filter) => {
            let mut found = list(ledger, &filter)?;
            found.retain(|q| agent.may_see(&q.stage));
            Ok(Reply::Listed(Listed::new(found)))
        }
        Request::History(EventFilter::Question(id)) => {
            // A question of another stage is refused, whether it stands or was cleared.
            let stage = named(ledger, None, Some(&[id]))
                .ok()
                .and_then(|q| q.into_iter().next())
                .map(|q| q.stage);
            let found = history(ledger, &EventFilter::Question(id))?;
            let stages = stage.into_iter().chain(
                found
                    .events
                    .iter()
                    .map(|e| e.stage.clone())
                    .filter(|s| !s.is_empty()),
            );
            for stage in stages {
                if outside(&stage) {
                    return refuse(
                        ledger,
                        who,
                        &Request::History(EventFilter::Question(id)),
                        id,
                        &format!("question {id} is outside this token's stages"),
                    );
                }
            }
            Ok(Reply::History(found))
        }
        Request::Events {
            since,
            stage,
            limit,
            wait,
        } => {
            let mut page = page(ledger, since, stage.as_deref(), limit, wait)?;
            page.events.retain(|e| visible(agent, e));
            Ok(Reply::Events(page))
        }
        watcher @ (Request::Watcher { .. } | Request::WatcherAt { .. }) => {
            run(ledger, &caller, watcher_of(&agent.name, watcher))
        }
        Request::Info { found_by, .. } => {
            let mut found = info(ledger, found_by, &[])?;
            found.stages.retain(|s| agent.may_see(&s.stage));
            Ok(Reply::Info(found))
        }
        Request::Clear { stage, key } => clear_settled(ledger, who, &stage, key),
        Request::History(filter @ EventFilter::Since { .. }) => {
            let mut found = history(ledger, &filter)?;
            found.events.retain(|e| visible(agent, e));
            found.count = found.events.len();
            Ok(Reply::History(found))
        }
        Request::Check(mut req) => {
            // What a stage never heard of may have been meant to be names other stages:
            // only its own. A strict check learns it as a look does (at once, waiting or
            // not), then fails without the names.
            let strict = req.strict;
            if strict {
                req.strict = false;
                req.allow_unknown_stage = true;
            }
            let mut report = check(ledger, &req)?;
            report.nearest.retain(|s| agent.may_see(s));
            if strict && report.known_stage == Some(false) {
                return Err(Error::not_found(format!(
                    "stage '{}' has never held a question in this ledger",
                    req.stage.as_deref().unwrap_or_default().trim()
                )));
            }
            Ok(Reply::Gate(report))
        }
        req @ (Request::Pending { .. }
        | Request::Answers { .. }
        | Request::History(EventFilter::Stage(_))) => run(ledger, &caller, req),
        Request::HarnessCall {
            call,
            step,
            mut questions,
            wait,
        } => {
            let refused = |stage: &str| {
                format!(
                    "stage '{}' is outside this token's stages ({})",
                    stage.trim(),
                    agent.stages.join(", ")
                )
            };
            if let Some(draft) = questions.iter().find(|d| outside(&d.stage)) {
                let why = refused(&draft.stage);
                let req = Request::HarnessCall {
                    call,
                    step,
                    questions,
                    wait,
                };
                return refuse(ledger, who, &req, 0, &why);
            }
            for draft in &mut questions {
                logged_by(draft, &agent.name)?;
            }
            // The call's key finds questions whatever their stage: one found outside the
            // token's stages (another call's, by a key guessed) is not shown.
            let key = call.clone();
            let asked = harness_call(
                ledger,
                &caller,
                &call.into(),
                CallStep::Looking,
                questions.clone(),
                None,
            )?;
            if let Some(q) = asked.questions.iter().flatten().find(|q| outside(&q.stage)) {
                let (id, why) = (q.id, refused(&q.stage));
                let req = Request::HarnessCall {
                    call: key,
                    step,
                    questions,
                    wait,
                };
                return refuse(ledger, who, &req, id, &why);
            }
            run(
                ledger,
                &caller,
                Request::HarnessCall {
                    call: key,
                    step,
                    questions,
                    wait,
                },
            )
        }
        Request::Delivered {
            call,
            ids,
            detail,
            key,
        } => {
            let found = named(ledger, None, Some(&ids))?;
            if let Some(q) = found.iter().find(|q| outside(&q.stage)) {
                let (id, why) = (
                    q.id,
                    format!("question {} is outside this token's stages", q.id),
                );
                return refuse(
                    ledger,
                    who,
                    &Request::Delivered {
                        call,
                        ids,
                        detail,
                        key,
                    },
                    id,
                    &why,
                );
            }
            run(
                ledger,
                &caller,
                Request::Delivered {
                    call,
                    ids,
                    detail,
                    key,
                },
            )
        }
        other => {
            let id = match &other {
                Request::Change(c) => c.id,
                _ => 0,
            };
            let what = other.name();
            refuse(
                ledger,
                who,
                &other,
                id,
                &format!(
                    "an agent token may not {what}: a person answers, votes and administers \
                     the ledger"
                ),
            )
        }
    }
}

fn as_person(
    ledger: &mut Ledger,
    who: &Principal,
    token: &PersonToken,
    req: Request,
) -> Result<Reply> {
    let caller = who.caller();
    let me = Identity::Person(token.person.clone());
    let answers = matches!(
        req,
        Request::Change(_)
            | Request::AcceptDefaults { .. }
            | Request::Import { .. }
            | Request::Elicited { .. }
            | Request::Asked { .. }
    );
    if answers && !token.answers {
        let id = match &req {
            Request::Change(c) => c.id,
            _ => 0,
        };
        let what = req.name();
        return refuse(
            ledger,
            who,
            &req,
            id,
            &format!(
                "this grant may read the questions, not {what}: it was given without \
                 questions:answer"
            ),
        );
    }
    match req {
        Request::Change(mut change) => {
            if let Act::Vote(identity, _) = &mut change.act {
                *identity = me;
            }
            run(ledger, &caller, Request::Change(change))
        }
        Request::Log {
            mut draft,
            expiry,
            allow_duplicate,
            key,
        } => {
            logged_by(&mut draft, &token.person)?;
            run(
                ledger,
                &caller,
                Request::Log {
                    draft,
                    expiry,
                    allow_duplicate,
                    key,
                },
            )
        }
        Request::Info { found_by, .. } => run(
            ledger,
            &caller,
            Request::Info {
                found_by,
                also_found: Vec::new(),
            },
        ),
        ingest @ Request::Ingest { .. } => {
            run(ledger, &caller, ingested_by(ingest, &token.person)?)
        }
        Request::LogAll { mut drafts } => {
            for draft in &mut drafts {
                logged_by(draft, &token.person)?;
            }
            run(ledger, &caller, Request::LogAll { drafts })
        }
        // The person's own answers, through the form their host showed them.
        elicited @ Request::Elicited { .. } => run(
            ledger,
            &Caller {
                by: Some(token.person.clone()),
                channel: Channel::Elicitation,
            },
            elicited,
        ),
        // A group decides whose votes an approval counts: made and changed where the
        // ledger is, as people's links are, never by whichever person comes first.
        req @ (Request::Group { .. }
        | Request::People { .. }
        | Request::Token(_)
        | Request::Policy(_)
        | Request::Reset { .. }) => {
            let what = req.name();
            refuse(
                ledger,
                who,
                &req,
                0,
                &format!("a person token may not {what}: that takes direct access to the ledger"),
            )
        }
        Request::HarnessCall {
            call,
            step,
            mut questions,
            wait,
        } => {
            for draft in &mut questions {
                logged_by(draft, &token.person)?;
            }
            run(
                ledger,
                &caller,
                Request::HarnessCall {
                    call,
                    step,
                    questions,
                    wait,
                },
            )
        }
        watcher @ (Request::Watcher { .. } | Request::WatcherAt { .. }) => {
            run(ledger, &caller, watcher_of(&token.name, watcher))
        }
        other => run(ledger, &caller, other),
    }
}

/// A token's watcher, under a name of its own (`token:<token>:<name>`): a token's holder
/// moves no other watcher's position, and none moves its.
fn watcher_of(token: &str, request: Request) -> Request {
    let own = |name: &str| format!("token:{token}:{}", name.trim());
    match request {
        Request::Watcher { name, from_start } => Request::Watcher {
            name: own(&name),
            from_start,
        },
        Request::WatcherAt { name, position, of } => Request::WatcherAt {
            name: own(&name),
            position,
            of,
        },
        other => other,
    }
}

impl Request {
    /// The stage a request names, if it names one.
    pub fn stage(&self) -> Option<&str> {
        match self {
            Request::Log { draft, .. } => Some(draft.stage.as_str()),
            Request::Ingest { stage, .. }
            | Request::Elicited { stage, .. }
            | Request::Asked { stage, .. }
            | Request::Pending { stage, .. }
            | Request::Answers { stage, .. }
            | Request::Clear { stage, .. }
            | Request::AcceptDefaults { stage, .. }
            | Request::Import { stage, .. } => Some(stage.as_str()),
            Request::Named { stage, .. } | Request::Events { stage, .. } => stage.as_deref(),
            Request::Check(check) => check.stage.as_deref(),
            Request::HarnessCall { questions, .. } => questions.first().map(|d| d.stage.as_str()),
            _ => None,
        }
        .filter(|s| !s.trim().is_empty())
    }
}

/// Whether a watcher's position was stored (false: the ledger there now is another).
#[derive(Debug, Serialize, Deserialize)]
pub struct WatcherAt {
    pub saved: bool,
}

/// A draft made a question to log, with its caller as who logs it (`logged_by`).
fn logged_as(draft: Draft, caller: &Caller) -> Result<NewQuestion> {
    let mut new = NewQuestion::build(draft)?;
    new.logged_by.clone_from(&caller.by);
    Ok(new)
}

/// An approval logged through a token names the token's holder as who logged it (never a
/// name the request gives), so that it can never vote on it.
fn logged_by(draft: &mut Draft, logger: &str) -> Result<()> {
    if let Some(approval) = &draft.approval {
        draft.approval = Some(as_logged_by(approval, logger)?);
    }
    Ok(())
}

/// An `Ingest` whose approval, if any, names `logger` as who logged it (see `logged_by`).
fn ingested_by(request: Request, logger: &str) -> Result<Request> {
    Ok(match request {
        Request::Ingest {
            stage,
            text,
            only,
            expiry,
            approval,
            key,
        } => Request::Ingest {
            stage,
            text,
            only,
            expiry,
            approval: approval.map(|a| as_logged_by(&a, logger)).transpose()?,
            key,
        },
        other => other,
    })
}

/// `approval` as `logger` logs it: the requester it names stays (none named: the logger
/// asks), and the logger never votes either.
fn as_logged_by(approval: &Approval, logger: &str) -> Result<Approval> {
    let requester = Some(approval.requester.as_str()).filter(|r| !r.trim().is_empty());
    Approval::new(&approval.approvers, approval.min, requester, logger)
}

/// Whether an agent sees an event: its stage's, or (for a token of every stage) one of
/// no question (a group's, a token's).
fn visible(agent: &AgentToken, event: &Event) -> bool {
    if event.question_id == 0 || event.stage.trim().is_empty() {
        return agent.stages.is_empty();
    }
    agent.may_see(&event.stage)
}

/// An agent's `clear`: only a stage where nothing required is pending, decided in the
/// clearing transaction (clearing never opens a gate).
fn clear_settled(
    ledger: &mut Ledger,
    who: &Principal,
    stage: &str,
    key: Option<String>,
) -> Result<Reply> {
    let caller = who.caller();
    let once = key.map(|k| once_key(&caller, &k)).transpose()?;
    match change::clear_if_settled(ledger, &caller, stage, once.as_deref())? {
        Ok(cleared) => Ok(Reply::Cleared(cleared)),
        Err(holding) => refuse(
            ledger,
            who,
            &Request::Clear {
                stage: stage.to_string(),
                key: None,
            },
            0,
            &format!(
                "stage '{stage}' still holds its gate (required question{} {} pending): an \
                 agent token clears only a stage whose gate passes",
                if holding.len() == 1 { "" } else { "s" },
                holding
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

/// Records the refusal of `req` for `who` as a `refused` event of question `id` (0 for
/// none), and returns it as `forbidden`.
fn refuse(
    ledger: &mut Ledger,
    who: &Principal,
    req: &Request,
    id: i64,
    why: &str,
) -> Result<Reply> {
    let actor = who.caller().actor(&clock::now());
    let (token, role) = match who {
        Principal::Direct(_) => (None, "direct"),
        Principal::Agent(a) => (Some(a.name.as_str()), "agent"),
        Principal::Person(p) => (Some(p.name.as_str()), "person"),
    };
    let detail = serde_json::json!({
        "refused": req.name(),
        "token": token,
        "role": role,
        "reason": why,
    });
    // The stage it was about: the request's, else its question's.
    let stage = match req.stage() {
        Some(stage) => Some(stage.trim().to_string()),
        None if id != 0 => ledger
            .read(|tx| tx.question(id))
            .ok()
            .flatten()
            .map(|q| q.stage),
        None => None,
    };
    ledger.write(|tx| tx.refused_event(id, stage.as_deref(), &actor, &detail))?;
    Err(Error::new(ErrorCode::Forbidden, why))
}
