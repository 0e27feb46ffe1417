//! Routing policy (§14a): who gets a stage's cards first, when they are reminded and when
//! a card is escalated to more people. Set, listed and unset only with direct access to
//! the ledger (the door refuses every token); every change is a `policy` event.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::people::{active, chain, delegates_of, Identity, PEOPLE_ADMINS};
use super::token::check_pattern;
use super::Caller;
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{check_name, Actor, Channel, EventKind, Question, Status, GROUP_PREFIX};
use crate::store::{Delegation, Filter, Ledger, Policy, Tx};

/// How many reminders a policy gives when it names none.
const REMIND_MAX_DEFAULT: u32 = 3;
/// The most reminders a policy may give: each comes after twice the gap before it, so
/// the last of 20 is a million first gaps after the question.
pub const REMIND_MAX_LIMIT: u32 = 20;
/// The longest delay a policy may name: a card unanswered for a month is a card to clear.
const LONGEST_DELAY: Duration = Duration::from_hours(30 * 24);

/// A stage pattern's policy, as a front end read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySet {
    pub stage: String,
    #[serde(default)]
    pub to: Vec<String>,
    #[serde(default)]
    pub remind_after: Option<Duration>,
    #[serde(default)]
    pub remind_max: Option<u32>,
    #[serde(default)]
    pub escalate_after: Option<Duration>,
    #[serde(default)]
    pub escalate_to: Vec<String>,
}

/// A change or a read of the ledger's routing policies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum PolicyRequest {
    Set(PolicySet),
    List,
    Unset { stage: String },
}

/// What `policy set` did.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PolicyChanged {
    pub policy: Policy,
    /// Whether the ledger changed (setting the policy there is changes nothing and
    /// records nothing).
    pub changed: bool,
    /// The pattern's policy before, when it had one.
    pub replaced: Option<Policy>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Policies {
    pub count: usize,
    pub policies: Vec<Policy>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PolicyUnset {
    pub stage: String,
    pub unset: bool,
}

/// What a policy request returns.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum PolicyReply {
    Set(Box<PolicyChanged>),
    Listed(Policies),
    Unset(PolicyUnset),
}

/// Runs a policy request for a caller with direct access (the door refuses every other).
pub(super) fn run(
    ledger: &mut Ledger,
    caller: &Caller,
    req: &PolicyRequest,
) -> Result<PolicyReply> {
    match req {
        PolicyRequest::Set(set) => {
            self::set(ledger, caller, set).map(|c| PolicyReply::Set(Box::new(c)))
        }
        PolicyRequest::List => {
            let policies = ledger.read(|tx| tx.policies())?;
            Ok(PolicyReply::Listed(Policies {
                count: policies.len(),
                policies,
            }))
        }
        PolicyRequest::Unset { stage } => unset(ledger, caller, stage).map(PolicyReply::Unset),
    }
}

fn set(ledger: &mut Ledger, caller: &Caller, req: &PolicySet) -> Result<PolicyChanged> {
    let stage = req.stage.trim().to_string();
    check_pattern(&stage)?;
    let to = recipients(&req.to, "--to")?;
    let escalate_to = recipients(&req.escalate_to, "--escalate-to")?;
    if req.remind_max.is_some() && req.remind_after.is_none() {
        return Err(Error::usage(
            "--remind-max needs --remind-after: how long after a question its first \
             reminder comes",
        ));
    }
    if let Some(n) = req.remind_max {
        if n == 0 || n > REMIND_MAX_LIMIT {
            return Err(Error::usage(format!(
                "--remind-max is 1 to {REMIND_MAX_LIMIT} (for no reminders, leave out \
                 --remind-after)"
            )));
        }
    }
    match (req.escalate_after, escalate_to.is_empty()) {
        (Some(_), true) => {
            return Err(Error::usage(
                "--escalate-after needs --escalate-to: who the card goes to then",
            ))
        }
        (None, false) => {
            return Err(Error::usage(
                "--escalate-to needs --escalate-after: how long after a question it is \
                 escalated",
            ))
        }
        _ => {}
    }
    for (flag, d) in [
        ("--remind-after", req.remind_after),
        ("--escalate-after", req.escalate_after),
    ] {
        if let Some(d) = d {
            if d.as_secs() == 0 || d > LONGEST_DELAY {
                return Err(Error::usage(format!(
                    "{flag} is 1s to 30d, written like 90s, 30m, 2h or 1d"
                )));
            }
        }
    }
    if to.is_empty() && req.remind_after.is_none() && req.escalate_after.is_none() {
        return Err(Error::usage(
            "a policy says something: --to, --remind-after or --escalate-after (to remove \
             a stage's policy: questions policy unset --stage PATTERN)",
        ));
    }
    let now = clock::now();
    let actor = caller.actor(&now);
    let policy = Policy {
        stage,
        to,
        remind_after: req.remind_after.map(duration_text),
        remind_max: req
            .remind_after
            .map(|_| req.remind_max.unwrap_or(REMIND_MAX_DEFAULT)),
        escalate_after: req.escalate_after.map(duration_text),
        escalate_to,
        set_by: actor.by.clone(),
        set_at: now,
    };
    ledger.write(|tx| {
        known_groups(tx, policy.to.iter().chain(&policy.escalate_to))?;
        let replaced = tx.policies()?.into_iter().find(|p| p.stage == policy.stage);
        let same = replaced.as_ref().is_some_and(|r| same_rules(r, &policy));
        if same {
            return Ok(PolicyChanged {
                policy: replaced.clone().unwrap_or_else(|| policy.clone()),
                changed: false,
                replaced,
            });
        }
        tx.put_policy(&policy)?;
        tx.policy_event(
            &actor,
            &serde_json::json!({
                "policy": policy.stage,
                "set": true,
                "to": policy.to,
                "remind_after": policy.remind_after,
                "remind_max": policy.remind_max,
                "escalate_after": policy.escalate_after,
                "escalate_to": policy.escalate_to,
            }),
        )?;
        Ok(PolicyChanged {
            policy: policy.clone(),
            changed: true,
            replaced,
        })
    })
}

fn unset(ledger: &mut Ledger, caller: &Caller, stage: &str) -> Result<PolicyUnset> {
    let stage = stage.trim();
    check_pattern(stage)?;
    let actor = caller.actor(&clock::now());
    ledger.write(|tx| {
        if !tx.delete_policy(stage)? {
            return Err(Error::not_found(format!(
                "there is no policy for '{stage}': 'questions policy list' shows them"
            )));
        }
        tx.policy_event(&actor, &serde_json::json!({"policy": stage, "unset": true}))
    })?;
    Ok(PolicyUnset {
        stage: stage.to_string(),
        unset: true,
    })
}

/// Whether two policies route alike (who set them, and when, aside).
fn same_rules(a: &Policy, b: &Policy) -> bool {
    Policy {
        set_by: None,
        set_at: String::new(),
        ..a.clone()
    } == Policy {
        set_by: None,
        set_at: String::new(),
        ..b.clone()
    }
}

/// People and `group:NAME`s, trimmed, each once, in the order given.
fn recipients(names: &[String], flag: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for given in names {
        let name = given.trim();
        let checked = match name.strip_prefix(GROUP_PREFIX) {
            Some(group) => check_name(group, "group"),
            None => check_name(name, "person"),
        };
        checked.map_err(|why| Error::usage(format!("{flag}: {why} (or group:NAME)")))?;
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// Refuses a group that does not exist: one named before it is made could be made by
/// anyone, who would then decide who gets the cards (as an approval's groups, §12).
fn known_groups<'a>(tx: &Tx, names: impl Iterator<Item = &'a String>) -> Result<()> {
    for name in names {
        if let Some(group) = name.strip_prefix(GROUP_PREFIX) {
            if tx.group_admins(group)?.is_empty() && tx.groups([group])?.is_empty() {
                return Err(Error::usage(format!(
                    "there is no group {group}: create it first, naming who may change its \
                     members (questions group create {group} --admins NAME,…); nothing was \
                     set"
                )));
            }
        }
    }
    Ok(())
}

/// A duration as `policy set` reads it back: `1d2h`, `90s`, `45m`.
pub fn duration_text(d: Duration) -> String {
    let mut left = d.as_secs();
    let mut out = String::new();
    for (unit, secs) in [('d', 86_400), ('h', 3600), ('m', 60), ('s', 1)] {
        if left >= secs {
            out.push_str(&format!("{}{unit}", left / secs));
            left %= secs;
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// The policy that routes `stage`: the one named for it exactly, else the one of the
/// longest prefix that matches (`ci-deploy-*` before `ci-*` before `*`).
pub fn policy_for<'p>(policies: &'p [Policy], stage: &str) -> Option<&'p Policy> {
    let stage = stage.trim();
    policies
        .iter()
        .filter_map(|p| match p.stage.strip_suffix('*') {
            Some(prefix) => stage.starts_with(prefix).then_some((prefix.len(), p)),
            None => (p.stage == stage).then_some((usize::MAX, p)),
        })
        .max_by_key(|(rank, _)| *rank)
        .map(|(_, p)| p)
}

/// The slot of a question's escalation, and of its reminder `n` (`remind:2`).
const ESCALATE: &str = "escalate";
const REMIND: &str = "remind:";

/// A reminder or an escalation due and not yet recorded.
struct Due {
    question_id: i64,
    stage: String,
    slot: String,
    kind: EventKind,
    detail: serde_json::Value,
}

/// Records the reminders and escalations due at this moment, each once per question and
/// slot however many relays call this at once (a unique key on the two, in the
/// transaction that writes its event). A reminder whose slot passed while no relay ran is
/// not made up for: only the latest due is recorded, so a relay started late reminds
/// once, not once for each slot it missed. The number recorded.
pub fn route(ledger: &mut Ledger) -> Result<usize> {
    route_at(ledger, &clock::now())
}

/// `route` as at `now`.
pub(super) fn route_at(ledger: &mut Ledger, now: &str) -> Result<usize> {
    let now = now.to_string();
    if ledger.read(|tx| due(tx, &now))?.is_empty() {
        return Ok(0);
    }
    ledger.write(|tx| {
        let mut recorded = 0;
        for d in due(tx, &now)? {
            if tx.insert_slot(d.question_id, &d.slot, &now)? {
                tx.routing_event(d.kind, d.question_id, &d.stage, &now, &d.detail)?;
                recorded += 1;
            }
        }
        Ok(recorded)
    })
}

fn due(tx: &Tx, now: &str) -> Result<Vec<Due>> {
    let policies = tx.policies()?;
    if policies.is_empty() {
        return Ok(Vec::new());
    }
    let pending = tx.questions(&Filter {
        status: Some(Status::Pending),
        ..Filter::default()
    })?;
    let slots = tx.routing_slots()?;
    let recorded = |id: i64| slots.iter().filter(move |(q, _)| *q == id).map(|(_, s)| s);
    let mut out = Vec::new();
    for q in pending.iter().filter(|q| !q.is_expired(now)) {
        let Some(p) = policy_for(&policies, &q.stage) else {
            continue;
        };
        let at = |d: Duration| clock::after(&q.created_at, d);
        let due = |slot: String, kind, detail: serde_json::Value| Due {
            question_id: q.id,
            stage: q.stage.clone(),
            slot,
            kind,
            detail,
        };
        if let Some(after) = delay(p.escalate_after.as_deref()) {
            if at(after).as_str() <= now && !recorded(q.id).any(|s| s == ESCALATE) {
                out.push(due(
                    ESCALATE.into(),
                    EventKind::Escalated,
                    serde_json::json!({
                        "slot": ESCALATE,
                        "policy": p.stage,
                        "to": p.escalate_to,
                        "after": p.escalate_after,
                    }),
                ));
            }
        }
        if let (Some(gap), Some(max)) = (delay(p.remind_after.as_deref()), p.remind_max) {
            let latest = reminder_due(gap, max, |d| at(d).as_str() <= now);
            let done = recorded(q.id)
                .filter_map(|s| s.strip_prefix(REMIND)?.parse::<u32>().ok())
                .max()
                .unwrap_or(0);
            if latest > done {
                out.push(due(
                    format!("{REMIND}{latest}"),
                    EventKind::Reminded,
                    serde_json::json!({
                        "slot": format!("{REMIND}{latest}"),
                        "policy": p.stage,
                        "reminder": latest,
                        "of": max,
                    }),
                ));
            }
        }
    }
    Ok(out)
}

/// The latest reminder due (0: none yet): reminder `n` comes `(2ⁿ − 1) × gap` after the
/// question, each after twice the gap before it.
fn reminder_due(gap: Duration, max: u32, passed: impl Fn(Duration) -> bool) -> u32 {
    (1..=max.min(REMIND_MAX_LIMIT))
        .take_while(|n| passed(gap * ((1u32 << n) - 1)))
        .last()
        .unwrap_or(0)
}

fn delay(text: Option<&str>) -> Option<Duration> {
    text.and_then(|t| clock::parse_duration(t).ok())
}

/// Who may get `q`'s cards by its stage's policy, when the policy names anyone: its
/// `--to`, and once the question was escalated its `--escalate-to`, groups as their
/// members now. None: the policy narrows nothing (everyone who may answer, §14).
pub(super) fn routed_to(
    tx: &Tx,
    policies: &[Policy],
    slots: &[(i64, String)],
    q: &Question,
) -> Result<Option<std::collections::BTreeSet<String>>> {
    let Some(p) = policy_for(policies, &q.stage).filter(|p| !p.to.is_empty()) else {
        return Ok(None);
    };
    let escalated = slots.iter().any(|(id, s)| *id == q.id && s == ESCALATE);
    let names =
        p.to.iter()
            .chain(p.escalate_to.iter().filter(|_| escalated));
    let mut people = std::collections::BTreeSet::new();
    for name in names {
        match name.strip_prefix(GROUP_PREFIX) {
            Some(group) => {
                for members in tx.groups([group])?.into_values() {
                    people.extend(members);
                }
            }
            None => {
                people.insert(name.clone());
            }
        }
    }
    Ok(Some(people))
}

/// The reminder a question is at (0: none), and of how many.
pub(super) fn reminder_of(
    policies: &[Policy],
    slots: &[(i64, String)],
    q: &Question,
) -> (u32, u32) {
    let n = slots
        .iter()
        .filter(|(id, _)| *id == q.id)
        .filter_map(|(_, s)| s.strip_prefix(REMIND)?.parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    let max = policy_for(policies, &q.stage)
        .and_then(|p| p.remind_max)
        .unwrap_or(n);
    (n, max.max(n))
}

/// What `people delegate` did.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Delegated {
    pub person: String,
    /// The delegate now (none: the delegation ended).
    pub delegate: Option<String>,
    pub until: Option<String>,
    /// Whether the ledger changed (the same again records nothing).
    pub changed: bool,
}

/// `people delegate NAME --to OTHER --until INSTANT` (or `off`, `to` none): by NAME
/// themself or a people admin, as a link is (§14); every change a `people` event. A
/// delegation that would close a cycle (OTHER, or whom OTHER delegates to, delegating to
/// NAME) is refused.
pub fn delegate(
    ledger: &mut Ledger,
    identity: &Identity,
    channel: Channel,
    name: &str,
    to: Option<(&str, &str)>,
) -> Result<Delegated> {
    let name = name.trim();
    check_name(name, "person").map_err(Error::usage)?;
    let now = clock::now();
    let wanted = match to {
        Some((other, until)) => {
            let other = other.trim();
            check_name(other, "person").map_err(Error::usage)?;
            if other == name {
                return Err(Error::usage(format!(
                    "{name} cannot be their own delegate: name someone else with --to"
                )));
            }
            let until = instant(until)?;
            if until <= now {
                return Err(Error::usage(format!(
                    "--until {until} has passed: a delegation lasts until a time to come"
                )));
            }
            Some((other.to_string(), until))
        }
        None => None,
    };
    ledger.write(|tx| {
        let caller = identity.resolve(tx)?;
        if caller != name && !tx.is_group_admin(PEOPLE_ADMINS, &caller, identity.is_local())? {
            return Err(Error::new(
                ErrorCode::Forbidden,
                format!(
                    "{caller} may not change {name}'s delegation: only {name} themself, or an \
                     admin of the group '{PEOPLE_ADMINS}'"
                ),
            ));
        }
        let actor = Actor {
            by: Some(caller),
            channel,
            at: now.clone(),
        };
        let all = tx.delegations()?;
        let before = all.iter().find(|d| d.person == name).cloned();
        let Some((other, until)) = wanted.clone() else {
            if !tx.delete_delegation(name)? {
                return Ok(Delegated {
                    person: name.to_string(),
                    delegate: None,
                    until: None,
                    changed: false,
                });
            }
            tx.people_event(
                &actor,
                &serde_json::json!({"person": name, "delegation_ended": true,
                    "delegate": before.map(|d| d.delegate)}),
            )?;
            return Ok(Delegated {
                person: name.to_string(),
                delegate: None,
                until: None,
                changed: true,
            });
        };
        if before
            .as_ref()
            .is_some_and(|d| d.delegate == other && d.until == until)
        {
            return Ok(Delegated {
                person: name.to_string(),
                delegate: Some(other),
                until: Some(until),
                changed: false,
            });
        }
        // Whom OTHER's cards reach, however far: never back to NAME.
        let mut at = other.clone();
        let mut seen = vec![name.to_string()];
        while let Some(next) = active(&all, &at, &now) {
            if seen.contains(&next) {
                return Err(Error::conflict(format!(
                    "{name} cannot delegate to {other}: {other}'s cards already reach {name} \
                     through delegation ({}), and a cycle would send them round for ever; \
                     nothing was changed",
                    chain(&all, &other, &now).join(" → ")
                )));
            }
            seen.push(at.clone());
            at = next;
        }
        let d = Delegation {
            person: name.to_string(),
            delegate: other.clone(),
            until: until.clone(),
            set_at: now.clone(),
        };
        tx.put_delegation(&d)?;
        tx.people_event(
            &actor,
            &serde_json::json!({"person": name, "delegate": other, "until": until}),
        )?;
        Ok(Delegated {
            person: name.to_string(),
            delegate: Some(other),
            until: Some(until),
            changed: true,
        })
    })
}

/// An instant as the ledger writes them, from RFC 3339.
fn instant(text: &str) -> Result<String> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        })
        .map_err(|_| {
            Error::usage(format!(
                "--until '{text}' is not an instant: write it as RFC 3339, like \
                 2026-12-24T18:00:00Z"
            ))
        })
}

/// The person `who` stands in for on `q` when the question's policy does not name `who`
/// but names someone whose delegate `who` is: their card, and their answer
/// `on_behalf_of` that person (§14a). None when `who` is asked in their own right.
pub(super) fn stands_in_for(tx: &Tx, q: &Question, who: &str, now: &str) -> Result<Option<String>> {
    if q.state.approval.is_some() {
        return Ok(None);
    }
    let policies = tx.policies()?;
    let slots = tx.routing_slots()?;
    let Some(routed) = routed_to(tx, &policies, &slots, q)? else {
        return Ok(None);
    };
    if routed.contains(who) {
        return Ok(None);
    }
    let all = tx.delegations()?;
    Ok(routed
        .into_iter()
        .find(|p| delegates_of(&all, p, now).iter().any(|d| d == who)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_reads_back_as_it_is_shown() {
        for secs in [1, 59, 60, 90, 3600, 5400, 86_400, 93_784, 30 * 86_400] {
            let text = duration_text(Duration::from_secs(secs));
            assert_eq!(
                clock::parse_duration(&text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        assert_eq!(duration_text(Duration::from_mins(90)), "1h30m");
    }

    #[test]
    fn reminders_come_after_doubling_gaps_and_stop_at_the_most() {
        let gap = Duration::from_mins(30);
        let at = |elapsed: Duration| reminder_due(gap, 3, |d| d <= elapsed);
        assert_eq!(at(Duration::from_mins(29)), 0);
        assert_eq!(at(Duration::from_mins(30)), 1);
        assert_eq!(at(Duration::from_mins(89)), 1);
        assert_eq!(at(Duration::from_mins(90)), 2);
        assert_eq!(at(Duration::from_mins(210)), 3);
        assert_eq!(at(Duration::from_hours(1000)), 3, "at most remind-max");
    }

    #[test]
    fn cards_follow_three_delegations_and_none_that_ended() {
        let d = |person: &str, delegate: &str, until: &str| Delegation {
            person: person.into(),
            delegate: delegate.into(),
            until: until.into(),
            set_at: String::new(),
        };
        let now = "2026-06-01T00:00:00.000Z";
        let later = "2026-07-01T00:00:00.000Z";
        let all = [
            d("ann", "bea", later),
            d("bea", "cy", later),
            d("cy", "dot", later),
            d("dot", "eve", later),
            d("fay", "gus", "2026-05-01T00:00:00.000Z"),
        ];
        assert_eq!(delegates_of(&all, "ann", now), ["bea", "cy", "dot"]);
        assert_eq!(delegates_of(&all, "cy", now), ["dot", "eve"]);
        assert!(delegates_of(&all, "fay", now).is_empty(), "ended");
        assert!(delegates_of(&all, "eve", now).is_empty());
    }

    #[test]
    fn the_exact_stage_wins_then_the_longest_prefix() {
        let p = |stage: &str| Policy {
            stage: stage.into(),
            ..Policy::default()
        };
        let all = [p("*"), p("ci-*"), p("ci-deploy-*"), p("ci-deploy-prod")];
        let found = |stage| policy_for(&all, stage).map(|p| p.stage.as_str());
        assert_eq!(found("ci-deploy-prod"), Some("ci-deploy-prod"));
        assert_eq!(found("ci-deploy-stage"), Some("ci-deploy-*"));
        assert_eq!(found("ci-test"), Some("ci-*"));
        assert_eq!(found("docs"), Some("*"));
        assert_eq!(policy_for(&all[1..], "docs"), None);
    }
}
