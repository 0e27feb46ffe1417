//! Approvals: votes, groups, and what the gate reports of each approval. The rules are
//! the model's (`Question::vote`); this reads, asks, and applies.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::people::{delegates_of, Identity, PEOPLE_ADMINS};
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{
    check_name, Actor, ApprovalState, Ballot, Channel, Groups, Question, Vote, Voted,
};
use crate::store::{Ledger, Tx};

/// Casts a vote on approval `before`, inside a person's change (`ops::change`): the
/// voter is who `identity` stands for, read in this transaction. A vote refused
/// (`forbidden`: the requester, or someone not among the approvers) is recorded in the
/// history and returned as the inner error, so that the refusal commits.
pub(super) fn cast(
    tx: &Tx,
    before: &Question,
    identity: &Identity,
    ballot: &Ballot,
    actor: &Actor,
    detail: Option<&serde_json::Value>,
) -> Result<Result<Question>> {
    let voter = identity.resolve(tx)?;
    let groups = groups_of(tx, before)?;
    let actor = Actor {
        by: Some(voter.clone()),
        ..actor.clone()
    };
    let stands_for = stands_for(tx, before, &voter, &groups, &actor.at)?;
    match before.vote(ballot, &voter, &groups, &actor, &stands_for) {
        Ok(Voted::Recorded(changes)) => {
            let mut now = before.clone();
            for change in &changes {
                if let Some(q) = tx.apply(&change.clone().with_detail(detail))? {
                    now = q;
                }
            }
            Ok(Ok(now))
        }
        Ok(Voted::Refused(event, why)) => {
            tx.apply(&event.with_detail(detail))?;
            Ok(Err(why.about(before)))
        }
        Err(e) => Ok(Err(e.about(before))),
    }
}

/// The approvers of `q` whose delegate `voter` is at `now` (§14a: at most three
/// delegations away), nearest first.
fn stands_for(
    tx: &Tx,
    q: &Question,
    voter: &str,
    groups: &Groups,
    now: &str,
) -> Result<Vec<String>> {
    let Some(a) = &q.state.approval else {
        return Ok(Vec::new());
    };
    let all = tx.delegations()?;
    if all.is_empty() {
        return Ok(Vec::new());
    }
    let mut found: Vec<(usize, String)> = a
        .eligible(groups)
        .into_iter()
        .filter_map(|p| {
            delegates_of(&all, &p, now)
                .iter()
                .position(|d| d == voter)
                .map(|hops| (hops, p))
        })
        .collect();
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

/// Makes an ingested question an approval: one that offers options or a proposed value,
/// or is optional, cannot be one, and is refused rather than changed silently.
pub(super) fn make_approval(
    new: &mut crate::model::NewQuestion,
    approval: &crate::model::Approval,
) -> Result<()> {
    let made = new
        .clone()
        .into_approval(approval.clone())
        .map_err(|refused| {
            Error::usage(format!(
                "\"{}\" cannot be an approval: an approval is required, offers no options and \
             proposes nothing (its answers are votes)",
                crate::formats::sanitize(&new.question, false)
            ))
            .with_flag_hint("ingest it without --approval")
            .with_refusal(refused.refusal)
        })?;
    *new = made;
    Ok(())
}

/// Who may vote now on each approval among `questions`, by id.
pub(super) fn voters<'q>(
    tx: &Tx,
    questions: impl Iterator<Item = &'q Question>,
) -> Result<std::collections::HashMap<i64, BTreeSet<String>>> {
    let mut out = std::collections::HashMap::new();
    for q in questions {
        if let Some(a) = &q.state.approval {
            out.insert(q.id, a.eligible(&groups_of(tx, q)?));
        }
    }
    Ok(out)
}

/// The members of the groups `q`'s approval names.
fn groups_of(tx: &Tx, q: &Question) -> Result<Groups> {
    match &q.state.approval {
        Some(a) => tx.groups(a.groups()),
        None => Ok(Groups::new()),
    }
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GroupChanged {
    pub group: String,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub members: Vec<String>,
    pub admins: Vec<String>,
    /// Open approvals naming the group that this change settled (see
    /// `Question::settle_by_groups`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<i64>,
}

/// What `group` does to a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupChange {
    /// Makes a new group with these admins (and any people given as its first members).
    Create {
        admins: Vec<String>,
    },
    Add,
    Remove,
}

/// `group create|add|remove`: who may vote through a group is decided by its members, so
/// changing them is guarded as a vote is. The caller is who the channel vouches for
/// (`Identity`), never a name it gives; only a group's admins, named when it is created,
/// change its members. Every change is in the history with who made it (a change that
/// changes nothing records nothing), and an open approval that the new members bring to
/// its quorum is settled by it.
pub fn group(
    ledger: &mut Ledger,
    identity: &Identity,
    channel: Channel,
    name: &str,
    change: &GroupChange,
    people: &[String],
) -> Result<GroupChanged> {
    check_name(name, "group").map_err(Error::usage)?;
    for p in people {
        check_name(p, "person").map_err(Error::usage)?;
    }
    if let GroupChange::Create { admins } = change {
        if admins.is_empty() {
            return Err(Error::usage(format!(
                "group create needs --admins: the people who may change {name}'s members"
            )));
        }
        for a in admins {
            check_name(a, "person").map_err(Error::usage)?;
        }
    }
    let at = clock::now();
    ledger.write(|tx| {
        let caller = identity.resolve(tx)?;
        let actor = Actor {
            by: Some(caller.clone()),
            channel,
            at: at.clone(),
        };
        let before: BTreeSet<String> = tx.groups([name])?.remove(name).unwrap_or_default();
        let mut admins = tx.group_admins(name)?;
        match change {
            GroupChange::Create { admins: named } => {
                if !admins.is_empty() || !before.is_empty() {
                    return Err(Error::conflict(format!(
                        "group {name} exists already{}; nothing was changed: its admins add \
                         and remove members, or create a group of another name",
                        if admins.is_empty() {
                            " (made before groups had admins, so nobody may change it)"
                        } else {
                            ""
                        }
                    )));
                }
                if name == PEOPLE_ADMINS && !identity.owns_ledger(tx)? {
                    return Err(Error::new(
                        ErrorCode::Forbidden,
                        format!(
                            "{caller} may not make the group '{name}': its admins link and \
                             unlink everyone's channels, so only the ledger's owner names \
                             them (on a file, the operating-system user who owns it; on \
                             PostgreSQL, a member of the role that owns its tables)"
                        ),
                    ));
                }
                admins = named.iter().cloned().collect();
                tx.set_group_admins(name, &admins)?;
            }
            GroupChange::Add | GroupChange::Remove => {
                if admins.is_empty() {
                    return Err(if before.is_empty() {
                        Error::not_found(format!(
                            "there is no group {name}: create it, naming who may change it \
                             (group create {name} --admins NAME,…)"
                        ))
                    } else {
                        Error::new(
                            ErrorCode::Forbidden,
                            format!(
                                "group {name} was made before groups had admins, so nobody may \
                                 change its members; create a group of another name with \
                                 admins, and name that in new approvals"
                            ),
                        )
                    });
                }
                if !tx.is_group_admin(name, &caller, identity.is_local())? {
                    return Err(Error::new(
                        ErrorCode::Forbidden,
                        format!(
                            "{caller} may not change group {name}: its admins are {}",
                            admins.iter().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
        }
        let mut after = before.clone();
        for p in people {
            if *change == GroupChange::Remove {
                after.remove(p);
            } else {
                after.insert(p.clone());
            }
        }
        let added: Vec<String> = after.difference(&before).cloned().collect();
        let removed: Vec<String> = before.difference(&after).cloned().collect();
        let created = matches!(change, GroupChange::Create { .. });
        let mut settled = Vec::new();
        if created || !added.is_empty() || !removed.is_empty() {
            let mut detail = serde_json::json!({
                "group": name, "added": added, "removed": removed, "members": after,
            });
            if created {
                detail["created"] = true.into();
                detail["admins"] = serde_json::json!(admins);
            }
            tx.set_group(name, &after, &actor, &detail)?;
            for q in tx.approvals_naming(name)? {
                let groups = groups_of(tx, &q)?;
                if let Some(t) = q.settle_by_groups(&groups, &actor) {
                    tx.apply(&t)?;
                    settled.push(q.id);
                }
            }
        }
        Ok(GroupChanged {
            group: name.to_string(),
            added,
            removed,
            members: after.into_iter().collect(),
            admins: admins.into_iter().collect(),
            settled,
        })
    })
}

/// An approval as the gate reports it.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApprovalReport {
    pub id: i64,
    pub question: String,
    pub state: ApprovalState,
    pub approvers: Vec<String>,
    pub requester: String,
    pub min: u32,
    pub approvals: usize,
    /// How many more approvals it needs (0 once approved).
    pub needed: usize,
    /// Eligible people who have not voted yet.
    pub may_vote: Vec<String>,
    pub votes: Vec<Vote>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What `check` says of each approval among `questions`.
pub(super) fn reports(tx: &Tx, questions: &[Question]) -> Result<Vec<ApprovalReport>> {
    let mut out = Vec::new();
    for q in questions {
        let Some(a) = &q.state.approval else { continue };
        let groups = groups_of(tx, q)?;
        let state = ApprovalState::of(q.state.status);
        let rejection = a.rejection();
        out.push(ApprovalReport {
            id: q.id,
            question: q.question.clone(),
            state,
            approvers: a.approvers.clone(),
            requester: a.requester.clone(),
            min: a.min,
            approvals: a.approvals(&groups),
            needed: if state == ApprovalState::Approved {
                0
            } else {
                a.needed(&groups)
            },
            may_vote: if state == ApprovalState::Open {
                a.may_still_vote(&groups)
            } else {
                Vec::new()
            },
            votes: a.votes.clone(),
            rejected_by: rejection.map(|v| v.by.clone()),
            reason: match state {
                ApprovalState::Rejected => q.state.decline_reason.clone(),
                ApprovalState::Open | ApprovalState::Approved => None,
            },
        });
    }
    Ok(out)
}
