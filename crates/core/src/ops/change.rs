//! The operations that change questions: each reads the question, asks the model for the
//! transition, and has the store write it (row and history together).

use serde::{Deserialize, Serialize};

use super::people::{channel_identity, Identity};
use super::{existing, expire_due, Caller};
use crate::clock;
use crate::error::{Error, ErrorCode, Refusal, Result};
use crate::model::{
    Actor, AnswerInput, Ballot, EventKind, HarnessCall, Mode, NewQuestion, Question, Status,
    Transition,
};
use crate::store::{Filter, Ledger, Tx};

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Logged {
    pub question_id: i64,
    /// False when the same question (stage, group, text) was already in the ledger.
    pub created: bool,
    pub question: Question,
}

/// Logs a question; the same stage, group and text again returns the one on record,
/// unless `allow_duplicate`.
pub fn log(ledger: &mut Ledger, new: &NewQuestion, allow_duplicate: bool) -> Result<Logged> {
    let now = clock::now();
    let (question, created) = ledger.write(|tx| log_in(tx, new, allow_duplicate, &now))?;
    Ok(Logged {
        question_id: question.id,
        created,
        question,
    })
}

/// `log`, once per `key` (§15, exactly once): a question this key logged already is
/// returned as the first call returned it (`created` as it said then), in the same
/// transaction that would otherwise log it. The key is found with the question's text,
/// as a harness's call is (`log_call`): a key sent again with another question logs
/// that one.
pub(super) fn log_once(
    ledger: &mut Ledger,
    new: &NewQuestion,
    allow_duplicate: bool,
    key: Option<&str>,
) -> Result<Logged> {
    let Some(key) = key else {
        return log(ledger, new, allow_duplicate);
    };
    let now = clock::now();
    let (question, created) = ledger.write(|tx| {
        if let Some(first) = tx.find_in_call(key, new.group_name.as_deref(), &new.question)? {
            return Ok((first, true));
        }
        let keyed = NewQuestion {
            harness_call: Some(key.to_string()),
            ..new.clone()
        };
        log_in(tx, &keyed, allow_duplicate, &now)
    })?;
    Ok(Logged {
        question_id: question.id,
        created,
        question,
    })
}

/// Logs `new` inside a write under way; true when it was created.
fn log_in(
    tx: &Tx,
    new: &NewQuestion,
    allow_duplicate: bool,
    now: &str,
) -> Result<(Question, bool)> {
    let linked = requester_linked(tx, new)?;
    let new = linked.as_ref().unwrap_or(new);
    if !allow_duplicate {
        if let Some(same) = tx.find_same(&new.stage, new.group_name.as_deref(), &new.question)? {
            same_kind(&same, new)?;
            return Ok((same, false));
        }
    }
    if let Some(approval) = &new.approval {
        // A group named before it exists could be made by anyone, who would then decide
        // who votes: an approval names only groups made with their admins.
        for group in approval.groups() {
            if tx.group_admins(group)?.is_empty() && tx.groups([group])?.is_empty() {
                return Err(Error::usage(format!(
                    "there is no group {group}: create it first, naming who may change its \
                     members (questions group create {group} --admins NAME,…); nothing was \
                     logged"
                )));
            }
        }
    }
    let q = tx.apply(&new.clone().log(now))?;
    Ok((
        q.ok_or_else(|| Error::db("a logged question was not written"))?,
        true,
    ))
}

/// `new` with its approval's requester named as the person a channel identity is linked
/// to (`github:octocat` → `alice`, through `people link`), so that a CI job's initiator,
/// known to it only by login, never votes on what their run asked; none when there is
/// nothing to change. An identity linked to nobody stays the requester, and names no
/// approver.
fn requester_linked(tx: &Tx, new: &NewQuestion) -> Result<Option<NewQuestion>> {
    let Some(approval) = &new.approval else {
        return Ok(None);
    };
    if !approval.requester.contains(':') {
        return Ok(None);
    }
    let Ok(identity) = channel_identity(&approval.requester) else {
        return Ok(None);
    };
    let Some(person) = tx.person_of(&identity)? else {
        return Ok(None);
    };
    let mut linked = approval.clone();
    if linked.logged_by.as_deref() == Some(person.as_str()) {
        linked.logged_by = None;
    }
    linked.requester = person;
    Ok(Some(NewQuestion {
        approval: Some(linked),
        ..new.clone()
    }))
}

/// An approval is never merged with a question that is not the same approval (its
/// approvers, quorum, requester and logger): the gate would pass on another question's
/// answer or another quorum. Logging one where the other stands is a `conflict`.
fn same_kind(on_record: &Question, new: &NewQuestion) -> Result<()> {
    let same = match (&on_record.state.approval, &new.approval) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_policy(b),
        _ => false,
    };
    if same {
        return Ok(());
    }
    let what = |a: Option<&crate::model::Approval>| match a {
        Some(a) => format!(
            "an approval by {} of {} (requested by {})",
            a.min,
            a.approvers.join(", "),
            a.requester
        ),
        None => "a question that is not an approval".to_string(),
    };
    Err(Error::conflict(format!(
        "question {} of stage '{}' asks the same, and it is {}, where this is {}: an approval \
         never merges with another question; nothing was logged: give it another text or \
         group, or log it in another stage",
        on_record.id,
        on_record.stage.trim(),
        what(on_record.state.approval.as_ref()),
        what(new.approval.as_ref())
    )))
}

/// Several questions logged together.
#[derive(Debug, Serialize)]
pub struct LoggedAll {
    /// Each question once, in the order given.
    pub question_ids: Vec<i64>,
    /// One id per input, in its order: the same question given twice is the same id
    /// twice, so a caller maps each of its inputs to the question that holds it.
    #[serde(skip)]
    pub per_input: Vec<i64>,
    pub created_ids: Vec<i64>,
    pub questions: Vec<Question>,
}

/// Logs every question in one transaction, all or nothing (the same question again is the
/// one on record): what `ingest` and an agent's batch of questions do.
pub fn log_all(ledger: &mut Ledger, questions: &[NewQuestion]) -> Result<LoggedAll> {
    log_all_once(ledger, questions, None)
}

/// `log_all`, once per `key` (§15, exactly once), as `log_once` logs one question: each
/// question this key logged already is returned as the first call returned it, so that a
/// batch sent again after a lost reply gets the first reply, `created_ids` included.
pub(super) fn log_all_once(
    ledger: &mut Ledger,
    questions: &[NewQuestion],
    key: Option<&str>,
) -> Result<LoggedAll> {
    let now = clock::now();
    let logged = ledger.write(|tx| {
        // What the key logged already, read once (a batch can be tens of thousands).
        let mut first: std::collections::HashMap<(Option<String>, String), Question> = match key {
            Some(key) => tx
                .questions_in_call(key)?
                .into_iter()
                .map(|q| ((q.group_name.clone(), q.question.clone()), q))
                .collect(),
            None => std::collections::HashMap::new(),
        };
        questions
            .iter()
            .map(|new| {
                let Some(key) = key else {
                    return log_in(tx, new, false, &now);
                };
                let same = (new.group_name.clone(), new.question.clone());
                if let Some(q) = first.get(&same) {
                    return Ok((q.clone(), true));
                }
                let keyed = NewQuestion {
                    harness_call: Some(key.to_string()),
                    ..new.clone()
                };
                let (q, created) = log_in(tx, &keyed, false, &now)?;
                if created {
                    first.insert(same, q.clone());
                }
                Ok((q, created))
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let mut seen = std::collections::HashSet::new();
    let mut all = LoggedAll {
        question_ids: Vec::new(),
        per_input: Vec::new(),
        created_ids: Vec::new(),
        questions: Vec::new(),
    };
    for (q, created) in logged {
        all.per_input.push(q.id);
        if seen.insert(q.id) {
            // The same question twice in one batch was made once, at its first place.
            if created {
                all.created_ids.push(q.id);
            }
            all.question_ids.push(q.id);
            all.questions.push(q);
        }
    }
    Ok(all)
}

/// Where a harness's call is when its hook runs (see `log_call`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStep {
    /// The agent is about to ask: the call's questions, logged when they are not yet.
    Asking,
    /// The harness's card was answered: the call's questions, logged when no hook logged
    /// them before (one installed while the card was up).
    Answered,
    /// A later look (the end of a turn): the call's questions if they were logged,
    /// nothing is written.
    Looking,
}

/// The questions of one call of a harness's ask tool, one per question given (none
/// where `Looking` found none), in their order. They are found by the call's key, never
/// by their text: a new call never meets an earlier call's question and its answer,
/// whatever the two have in common.
pub fn log_call(
    ledger: &mut Ledger,
    call: &HarnessCall,
    step: CallStep,
    questions: &[NewQuestion],
) -> Result<Vec<Option<Question>>> {
    let find = |tx: &Tx, new: &NewQuestion| {
        tx.find_in_call(&call.key, new.group_name.as_deref(), &new.question)
    };
    if step == CallStep::Looking {
        return ledger.read(|tx| questions.iter().map(|new| find(tx, new)).collect());
    }
    let now = clock::now();
    ledger.write(|tx| {
        let mut found = Vec::with_capacity(questions.len());
        for new in questions {
            let q = if let Some(q) = find(tx, new)? {
                q
            } else {
                let new = NewQuestion {
                    harness_call: Some(call.key.clone()),
                    ..new.clone()
                };
                tx.apply(&new.log(&now))?
                    .ok_or_else(|| Error::db("a logged question was not written"))?
            };
            found.push(Some(q));
        }
        Ok(found)
    })
}

/// The call is over: its answers went to the agent, or the person answered its card. A
/// call the harness gives no id (`HarnessCall::by_input`) is keyed by its session and
/// input, which a later call may share: its questions leave the key, so that a later
/// call asks anew. A call with an id of its own keeps its key (its id is never reused,
/// and its card's answers still come after the hook answered it).
pub fn end_call(ledger: &mut Ledger, call: &HarnessCall) -> Result<()> {
    if !call.by_input {
        return Ok(());
    }
    ledger.write(|tx| tx.end_call(&call.key))
}

/// One question after an answer, a skip or a decline.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Recorded {
    pub question_id: i64,
    pub question: Question,
}

/// What a front end showed the person whose change it records: the ledger's id and, per
/// question, its fingerprint (`Question::fingerprint`) or its text. A change of a
/// question that is no longer the one shown (the ledger was reset or replaced and the id
/// names another question now) is refused as a conflict, and nothing is recorded. The
/// command line shows nothing: its `Shown::default()` checks nothing.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Shown {
    pub ledger: Option<String>,
    pub questions: std::collections::BTreeMap<i64, String>,
}

impl Shown {
    /// One question, as a page or an API client names it.
    pub fn one(ledger: Option<String>, id: i64, fingerprint: Option<String>) -> Shown {
        Shown {
            ledger,
            questions: fingerprint.into_iter().map(|f| (id, f)).collect(),
        }
    }

    /// Every question of a set put before a person (`ask`, a form).
    pub fn all(ledger: Option<String>, questions: &[Question]) -> Shown {
        Shown {
            ledger,
            questions: questions.iter().map(|q| (q.id, q.fingerprint())).collect(),
        }
    }

    /// Refuses a change of `q` when it is not what was shown.
    pub(super) fn check(&self, tx: &Tx, q: &Question) -> Result<()> {
        if let Some(shown) = &self.ledger {
            if tx.ledger_id()?.as_deref() != Some(shown.as_str()) {
                return Err(Error::refused(
                    Refusal::NotAsShown { id: q.id },
                    format!(
                        "the ledger was reset or replaced since question {} was shown; \
                         nothing was recorded: load the questions again",
                        q.id
                    ),
                ));
            }
        }
        match self.questions.get(&q.id) {
            Some(shown) if !q.is_the_one(shown) => Err(Error::refused(
                Refusal::NotAsShown { id: q.id },
                format!(
                    "question {} is no longer the question that was shown (it now asks \"{}\"); \
                     nothing was recorded: load the questions again",
                    q.id,
                    crate::error::brief(&q.question)
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// What a person does to one question.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Act {
    /// An answer; replacing one on record needs `PersonsChange::force`.
    Answer(AnswerInput),
    /// They take its proposal as their answer (recorded as `defaulted`, by them, so the
    /// history says the proposal was accepted rather than chosen). No proposal is
    /// `invalid_answer`; a question no longer pending is a `conflict`.
    AcceptProposed,
    /// It no longer holds its gate (with a reason, maybe); skipping an answered one needs
    /// `force`.
    Skip(Option<String>),
    /// They will not answer it as asked: it holds the gate, with the reason for the
    /// orchestrator to rephrase it by (a reason is needed).
    Decline(String),
    /// A vote on an approval, by the person `Identity` stands for, read in the change's
    /// transaction (see `approval::cast`).
    Vote(Identity, Ballot),
}

/// A person's change of one question: the one request every front end sends for it
/// (the command line's `answer`, `skip`, `decline`, `approve`, `reject`; the inbox's
/// buttons; the in-chat inbox's forms). `change` checks the stage, what the person was
/// shown and the rule, inside the write's own transaction, once.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct PersonsChange {
    pub id: i64,
    pub act: Act,
    /// What the front end showed the person (`Shown::default()` checks nothing).
    pub shown: Shown,
    /// The stage the front end serves, when it serves one (an inbox for one stage): a
    /// question outside it is not found there.
    pub within: Option<String>,
    /// Replace (or skip, or decline) an answer on record: the command line's `--force`.
    pub force: bool,
    /// The caller's own key for this change (§15, exactly once), as the ledger keeps it
    /// (its holder's, `door::once_key`): a change whose key is in the question's history
    /// already was made, and is not made again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl PersonsChange {
    /// `act` on question `id`, as the command line asks it: nothing shown, any stage.
    pub fn of(id: i64, act: Act) -> PersonsChange {
        PersonsChange {
            id,
            act,
            shown: Shown::default(),
            within: None,
            force: false,
            key: None,
        }
    }
}

/// Applies a person's change (see `PersonsChange`), writing only when something changes.
/// A refusal carries the question as it stands (`Error::on_record`); a vote refused is
/// recorded in the history, then returned.
pub fn change(ledger: &mut Ledger, caller: &Caller, req: &PersonsChange) -> Result<Recorded> {
    let actor = caller.actor(&clock::now());
    let outcome = ledger.write(|tx| {
        expire_due(tx, &actor.at)?;
        let Some(key) = &req.key else {
            return change_in(tx, &actor, req, None);
        };
        // Sent again after its reply was lost: the question as the change left it.
        let made = tx
            .events(&crate::store::EventFilter::Question(req.id))?
            .iter()
            .any(|e| keyed_by(e, key));
        if made {
            return Ok(Ok(existing(tx, req.id)?));
        }
        change_in(tx, &actor, req, Some(&serde_json::json!({ "key": key })))
    })?;
    let question = outcome?;
    Ok(Recorded {
        question_id: question.id,
        question,
    })
}

/// A person's change inside a write under way (the expiries due applied): the question
/// after it, or the refusal (`Ok(Err(…))`, which the caller still commits: a vote refused
/// is recorded). `detail` goes into the history event the change makes (a channel's
/// identity and event id, §14).
pub(super) fn change_in(
    tx: &Tx,
    actor: &Actor,
    req: &PersonsChange,
    detail: Option<&serde_json::Value>,
) -> Result<Result<Question>> {
    let reason = |r: &Option<String>| {
        r.as_ref()
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty())
    };
    let before = existing_within(tx, req.id, req.within.as_deref())?;
    let refused = |e: Error| Ok(Err(e.about(&before)));
    if let Err(e) = req.shown.check(tx, &before) {
        return refused(e);
    }
    let transition = match &req.act {
        Act::Answer(input) => before.answer(input, Mode::Direct { force: req.force }, actor),
        Act::AcceptProposed => before.accept_proposal(actor),
        Act::Skip(why) => before.skip(reason(why), Mode::Direct { force: req.force }, actor),
        Act::Decline(why) => before.decline(why, req.force, actor),
        Act::Vote(identity, ballot) => {
            return super::approval::cast(tx, &before, identity, ballot, actor, detail)
        }
    };
    match transition {
        Ok(Some(t)) => Ok(Ok(tx.apply(&t.with_detail(detail))?.unwrap_or(before))),
        Ok(None) => Ok(Ok(before)),
        Err(e) => refused(e),
    }
}

/// The question with this id, within `stage` when one is given: a question of another
/// stage is not found there.
fn existing_within(tx: &Tx, id: i64, stage: Option<&str>) -> Result<Question> {
    let Some(stage) = stage else {
        return existing(tx, id);
    };
    match tx.question(id)? {
        Some(q) if q.stage.trim() == stage.trim() => Ok(q),
        _ => Err(Error::not_found(format!(
            "there is no question {id} in stage '{stage}'"
        ))),
    }
}

/// Records that the answers on record of `ids` were handed to an agent's own ask tool
/// (a harness hook), one `delivered` event each, in one transaction.
pub fn record_delivery(
    ledger: &mut Ledger,
    caller: &Caller,
    ids: &[i64],
    detail: &serde_json::Value,
) -> Result<()> {
    record_delivery_once(ledger, caller, ids, detail, None)
}

/// `record_delivery`, once per `key` (§15, exactly once): the key goes into each event's
/// detail, and a delivery sent again with it records nothing more.
pub(super) fn record_delivery_once(
    ledger: &mut Ledger,
    caller: &Caller,
    ids: &[i64],
    detail: &serde_json::Value,
    key: Option<&str>,
) -> Result<()> {
    let actor = caller.actor(&clock::now());
    ledger.write(|tx| {
        if let (Some(key), Some(first)) = (key, ids.first()) {
            let made = tx
                .events(&crate::store::EventFilter::Question(*first))?
                .iter()
                .any(|e| e.event == EventKind::Delivered && keyed_by(e, key));
            if made {
                return Ok(());
            }
        }
        let mut detail = detail.clone();
        if let (Some(key), serde_json::Value::Object(own)) = (key, &mut detail) {
            own.insert("key".into(), key.into());
        }
        for id in ids {
            tx.apply(&existing(tx, *id)?.delivered(&actor, detail.clone()))?;
        }
        Ok(())
    })
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cleared {
    pub stage: String,
    pub deleted: usize,
}

/// Takes a stage's questions out of the live ledger; their rows stay in the history.
/// With a `key` (§15, exactly once), a clear sent again after its reply was lost returns
/// the first one's count and clears nothing more: the key is in each `cleared` event.
pub fn clear(
    ledger: &mut Ledger,
    caller: &Caller,
    stage: &str,
    key: Option<&str>,
) -> Result<Cleared> {
    let actor = caller.actor(&clock::now());
    let deleted = ledger.write(|tx| {
        if let Some(first) = cleared_with(tx, stage, key)? {
            return Ok(first);
        }
        let gone = tx.questions(&Filter {
            stage: Some(stage.to_string()),
            ..Filter::default()
        })?;
        for q in &gone {
            tx.apply(&q.clear(&actor)?.with_detail(keyed(key).as_ref()))?;
        }
        Ok(gone.len())
    })?;
    Ok(Cleared {
        stage: stage.to_string(),
        deleted,
    })
}

/// `clear`, only when nothing in the stage holds its gate (a required question pending
/// or declined, an approval open or rejected), decided in the clearing transaction: what
/// an agent token may clear. Else nothing is cleared, and the ids that hold it are
/// returned.
pub(super) fn clear_if_settled(
    ledger: &mut Ledger,
    caller: &Caller,
    stage: &str,
    key: Option<&str>,
) -> Result<Result<Cleared, Vec<i64>>> {
    let actor = caller.actor(&clock::now());
    let outcome = ledger.write(|tx| {
        if let Some(first) = cleared_with(tx, stage, key)? {
            return Ok(Ok(first));
        }
        expire_due(tx, &actor.at)?;
        let gone = tx.questions(&Filter {
            stage: Some(stage.to_string()),
            ..Filter::default()
        })?;
        let holding: Vec<i64> = gone
            .iter()
            .filter(|q| {
                q.blocks_gate()
                    || (q.state.approval.is_some() && q.state.status != Status::Answered)
            })
            .map(|q| q.id)
            .collect();
        if !holding.is_empty() {
            return Ok(Err(holding));
        }
        for q in &gone {
            tx.apply(&q.clear(&actor)?.with_detail(keyed(key).as_ref()))?;
        }
        Ok(Ok(gone.len()))
    })?;
    Ok(outcome.map(|deleted| Cleared {
        stage: stage.to_string(),
        deleted,
    }))
}

/// How many questions of `stage` a clear keyed `key` took out, when one did.
fn cleared_with(tx: &Tx, stage: &str, key: Option<&str>) -> Result<Option<usize>> {
    let Some(key) = key else { return Ok(None) };
    let count = tx
        .events(&crate::store::EventFilter::Stage(stage.to_string()))?
        .iter()
        .filter(|e| e.event == EventKind::Cleared && keyed_by(e, key))
        .count();
    Ok((count > 0).then_some(count))
}

/// Whether `event` was made by the change keyed `key` (see `keyed`).
fn keyed_by(event: &crate::model::Event, key: &str) -> bool {
    event
        .detail
        .as_ref()
        .and_then(|d| d.get("key"))
        .and_then(|k| k.as_str())
        == Some(key)
}

/// The detail a keyed change puts in its events.
fn keyed(key: Option<&str>) -> Option<serde_json::Value> {
    key.map(|key| serde_json::json!({ "key": key }))
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Defaulted {
    pub stage: String,
    pub answered_ids: Vec<i64>,
    pub questions: Vec<Question>,
    pub warnings: Vec<String>,
}

/// Answers a stage's pending questions with their proposed values, as the person would by
/// accepting every default: optional ones, and required ones too with `include_required`.
pub fn accept_defaults(
    ledger: &mut Ledger,
    caller: &Caller,
    stage: &str,
    include_required: bool,
) -> Result<Defaulted> {
    let actor = caller.actor(&clock::now());
    let filter = Filter {
        stage: Some(stage.to_string()),
        status: Some(Status::Pending),
        ..Filter::default()
    };
    let (questions, warnings) = ledger.write(|tx| {
        expire_due(tx, &actor.at)?;
        let mut done = Vec::new();
        let mut warnings = Vec::new();
        for before in tx.questions(&filter)? {
            if before.required && !include_required {
                continue;
            }
            let Some(proposed) = before.proposed.clone() else {
                continue;
            };
            let input = AnswerInput {
                text: Some(proposed),
                select: Vec::new(),
            };
            match before.answer(&input, Mode::Default, &actor) {
                Ok(Some(t)) => done.extend(tx.apply(&t)?),
                Ok(None) => {}
                Err(why) if why.code == ErrorCode::InvalidAnswer => warnings.push(format!(
                    "question {} left pending: {}",
                    before.id, why.message
                )),
                Err(other) => return Err(other),
            }
        }
        Ok((done, warnings))
    })?;
    Ok(Defaulted {
        stage: stage.to_string(),
        answered_ids: questions.iter().map(|q| q.id).collect(),
        questions,
        warnings,
    })
}

/// What a person chose for one question put before them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    Answer(AnswerInput),
    /// Options chosen on a card that also took the person's note beside them (Codex's):
    /// the options are selected, and the note follows their labels in the answer.
    Noted(AnswerInput, String),
    /// They take its proposal as their answer (recorded as `defaulted`, by them).
    Accept,
    /// They will not answer it as asked, for this reason.
    Decline(String),
    /// Left pending: nothing is recorded for it.
    Leave,
}

impl Choice {
    /// What the person gave, as a refused event keeps it; none for `Leave`.
    fn given(&self) -> Option<serde_json::Value> {
        match self {
            Choice::Answer(input) => {
                let mut given = serde_json::Map::new();
                if let Some(text) = &input.text {
                    given.insert("answer".into(), text.clone().into());
                }
                if !input.select.is_empty() {
                    given.insert("selected".into(), input.select.clone().into());
                }
                Some(given.into())
            }
            Choice::Noted(input, note) => {
                let mut given = Choice::Answer(input.clone()).given()?;
                if let Some(given) = given.as_object_mut() {
                    given.insert("note".into(), note.clone().into());
                }
                Some(given)
            }
            Choice::Accept => Some(serde_json::json!({"accepted": "proposed"})),
            Choice::Decline(reason) => Some(serde_json::json!({"declined": reason})),
            Choice::Leave => None,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Asked {
    pub stage: String,
    pub answered_ids: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declined_ids: Vec<i64>,
    pub left_pending_ids: Vec<i64>,
    /// With `Together::Each`: the questions whose choice could not be recorded, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_recorded: Vec<NotRecorded>,
    pub questions: Vec<Question>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct NotRecorded {
    pub question_id: i64,
    pub reason: String,
}

/// How a set of choices is recorded when one of them cannot be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Together {
    /// All or none (`ask`: the person answered them as one set).
    All,
    /// Each that can be (a form whose questions someone else may have answered
    /// meanwhile): the others are reported in `not_recorded`.
    Each,
}

/// Records what a person chose for each question, in one transaction: with
/// `Together::All` a question someone else changed meanwhile refuses the whole set; with
/// `Together::Each` it is reported and the others are recorded.
pub fn record_choices(
    ledger: &mut Ledger,
    caller: &Caller,
    stage: &str,
    chosen: &[(i64, Choice)],
    shown: &Shown,
    together: Together,
) -> Result<Asked> {
    let actor = caller.actor(&clock::now());
    let (questions, declined, left, refused) = ledger.write(|tx| {
        let mut changed = Vec::new();
        let mut declined = Vec::new();
        let mut left = Vec::new();
        let mut refused = Vec::new();
        for (id, choice) in chosen {
            let found = existing(tx, *id);
            let transition = found.clone().and_then(|before| {
                shown.check(tx, &before)?;
                match choice {
                    Choice::Leave => Ok(None),
                    Choice::Answer(input) => before.answer(input, Mode::Ask, &actor),
                    Choice::Noted(input, note) => {
                        before.answer_noted(input, Some(note), Mode::Ask, &actor)
                    }
                    Choice::Accept => before.accept_proposal(&actor),
                    Choice::Decline(reason) => before.decline_asked(reason, &actor),
                }
            });
            // What the person gave and could not be recorded (answered elsewhere meanwhile,
            // say) stays in the history as a refused event: the agent that showed the card
            // may act on it, and the ledger says what it was.
            if let (Err(e), Ok(before)) = (&transition, &found) {
                if together == Together::Each && e.code != ErrorCode::DbError {
                    if let Some(given) = choice.given() {
                        tx.apply(&Transition::Event {
                            kind: EventKind::Refused,
                            before: Box::new(before.clone()),
                            after: Box::new(before.clone()),
                            actor: actor.clone(),
                            detail: Some(serde_json::json!({
                                "given": given,
                                "refused": e.message,
                            })),
                        })?;
                    }
                }
            }
            match transition {
                Ok(_) if matches!(choice, Choice::Leave) => left.push(*id),
                Ok(t) => {
                    if matches!(choice, Choice::Decline(_)) {
                        declined.push(*id);
                    }
                    if let Some(t) = t {
                        changed.extend(tx.apply(&t)?);
                    }
                }
                Err(e) if together == Together::Each && e.code != ErrorCode::DbError => refused
                    .push(NotRecorded {
                        question_id: *id,
                        reason: e.message,
                    }),
                Err(e) => return Err(e),
            }
        }
        Ok((changed, declined, left, refused))
    })?;
    Ok(Asked {
        stage: stage.to_string(),
        answered_ids: questions
            .iter()
            .filter(|q| q.state.status == Status::Answered)
            .map(|q| q.id)
            .collect(),
        declined_ids: declined,
        left_pending_ids: left,
        not_recorded: refused,
        questions,
    })
}
