//! Approvals: a required question whose answers are votes. Who may vote, one vote a
//! person (a later one replaces it), the quorum, the first rejection settling it, and the
//! requester never voting: pure rules that return transitions or typed refusals.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Actor, EventKind, Question, Status, Transition};
use crate::error::{Error, ErrorCode, Result};

/// The prefix that names a group among an approval's approvers: `group:release`.
pub const GROUP_PREFIX: &str = "group:";

/// What makes a question an approval, and the votes cast on it so far.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Approval {
    /// People, and groups as `group:NAME`, in the order given.
    pub approvers: Vec<String>,
    /// How many distinct eligible people must approve.
    pub min: u32,
    /// Who asked for it: never a voter.
    pub requester: String,
    /// Who logged it, where that is not the requester (a caller that named another one):
    /// never a voter either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logged_by: Option<String>,
    /// One per person, the latest; earlier ones are in the history.
    #[serde(default)]
    pub votes: Vec<Vote>,
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Verdict {
    Approve,
    Reject,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Where an approval stands: a pending approval is open, an answered one approved, any
/// other rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum ApprovalState {
    Open,
    Approved,
    Rejected,
}

impl ApprovalState {
    pub fn of(status: Status) -> ApprovalState {
        match status {
            Status::Pending => ApprovalState::Open,
            Status::Answered => ApprovalState::Approved,
            Status::Skipped | Status::Declined => ApprovalState::Rejected,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Vote {
    pub by: String,
    pub vote: Verdict,
    /// A comment with an approval; the reason of a rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    pub at: String,
    pub channel: super::Channel,
    /// The approver a delegate voted for (§14a): the vote counts for them, not for `by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
}

impl Vote {
    /// The approver this vote counts for: each counts once toward the quorum.
    pub fn counts_for(&self) -> &str {
        self.on_behalf_of.as_deref().unwrap_or(&self.by)
    }
}

/// A vote as a person casts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ballot {
    pub verdict: Verdict,
    /// A comment (approve) or the reason (reject, where it is required).
    pub comment: Option<String>,
}

/// The members of every group, by group name.
pub type Groups = BTreeMap<String, BTreeSet<String>>;

/// What a vote comes to.
#[derive(Debug)]
pub enum Voted {
    /// Recorded: the vote, then the settlement when it settles the approval.
    Recorded(Vec<Transition>),
    /// Refused (`forbidden`): the refusal is still recorded, as this event.
    Refused(Transition, Box<Error>),
}

impl Approval {
    /// The one way an approval is made, whoever logs it: `approvers` (people and
    /// `group:NAME`s) of whom `min` must approve; asked for by `requester`, else by whoever
    /// logs it (`logged_by`, as the channel knows them). Neither may vote on it. The error
    /// is a usage error's message.
    pub fn new(
        approvers: &[String],
        min: u32,
        requester: Option<&str>,
        logged_by: &str,
    ) -> Result<Approval, Error> {
        let approvers: Vec<String> = approvers.iter().map(|p| p.trim().to_string()).collect();
        let requester = requester
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(logged_by)
            .to_string();
        let logged_by = Some(logged_by.trim().to_string()).filter(|l| *l != requester);
        check_policy(&approvers, min, &requester, logged_by.as_deref())?;
        Ok(Approval {
            approvers,
            min,
            requester,
            logged_by,
            votes: Vec::new(),
        })
    }

    /// Whether `person` asked for this approval or logged it: they never vote on it.
    pub fn asked_by(&self, person: &str) -> bool {
        person == self.requester || self.logged_by.as_deref() == Some(person)
    }

    /// Whether `other` is the same approval, as logging it again must be (the same
    /// approvers, quorum, requester and logger), whatever votes either holds.
    pub fn same_policy(&self, other: &Approval) -> bool {
        let set = |a: &Approval| a.approvers.iter().cloned().collect::<BTreeSet<String>>();
        set(self) == set(other)
            && self.min == other.min
            && self.requester == other.requester
            && self.logged_by == other.logged_by
    }

    /// The group names among the approvers.
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.approvers
            .iter()
            .filter_map(|a| a.strip_prefix(GROUP_PREFIX))
    }

    /// Everyone who may vote now: the listed people and the members of the listed groups,
    /// never the requester.
    pub fn eligible(&self, groups: &Groups) -> BTreeSet<String> {
        let mut people = BTreeSet::new();
        for a in &self.approvers {
            match a.strip_prefix(GROUP_PREFIX) {
                Some(group) => people.extend(groups.get(group).into_iter().flatten().cloned()),
                None => {
                    people.insert(a.clone());
                }
            }
        }
        people.retain(|p| !self.asked_by(p));
        people
    }

    /// The distinct eligible people whose vote is an approval.
    pub fn approvals(&self, groups: &Groups) -> usize {
        self.approvals_among(&self.eligible(groups))
    }

    /// The approvals among the votes of `eligible` (see `eligible`): the one count the
    /// gate, the inbox and every report give.
    pub fn approvals_among(&self, eligible: &BTreeSet<String>) -> usize {
        self.votes
            .iter()
            .filter(|v| v.vote == Verdict::Approve && eligible.contains(v.counts_for()))
            .count()
    }

    /// How many more approvals it needs.
    pub fn needed(&self, groups: &Groups) -> usize {
        (self.min as usize).saturating_sub(self.approvals(groups))
    }

    /// Eligible people who have not voted yet.
    pub fn may_still_vote(&self, groups: &Groups) -> Vec<String> {
        self.eligible(groups)
            .into_iter()
            .filter(|p| !self.votes.iter().any(|v| v.counts_for() == p))
            .collect()
    }

    /// The rejection that settled it, if any.
    pub fn rejection(&self) -> Option<&Vote> {
        self.votes.iter().find(|v| v.vote == Verdict::Reject)
    }
}

/// Checks an approval's policy as it is logged: people and `group:NAME`s, no blanks, a
/// quorum of at least one that the listed people can reach (groups may grow, so with a
/// group any quorum is taken). The refusal is a usage error.
pub fn check_policy(
    approvers: &[String],
    min: u32,
    requester: &str,
    logged_by: Option<&str>,
) -> Result<(), Error> {
    // The command line names its flags; an agent (MCP) or a page has none.
    let refused = |neutral: String, cli: String| Error::usage(neutral).with_cli_wording(cli);
    if approvers.is_empty() {
        let why = "the people (or group:NAME) who may approve it";
        return Err(refused(
            format!("an approval needs approvers: {why}"),
            format!("an approval needs --approvers: {why}"),
        ));
    }
    for a in approvers {
        let name = a.strip_prefix(GROUP_PREFIX).unwrap_or(a);
        if name.trim().is_empty() || name.trim() != name || name.contains(',') {
            return Err(Error::usage(format!(
                "'{a}' is not an approver: give names (or group:NAME) separated by commas"
            )));
        }
    }
    if min == 0 {
        let why = "must be at least 1: an approval nobody approves is no gate";
        return Err(refused(
            format!("an approval's min {why}"),
            format!("--min {why}"),
        ));
    }
    if approvers.iter().all(|a| !a.starts_with(GROUP_PREFIX)) {
        let people: BTreeSet<&String> = approvers
            .iter()
            .filter(|a| *a != requester && Some(a.as_str()) != logged_by)
            .collect();
        if people.len() < min as usize {
            let also = logged_by
                .map(|l| format!(", nor does '{l}', who logs it"))
                .unwrap_or_default();
            let why = format!(
                "{min} can never be reached: only {} of the approvers may vote ({}), \
                 and the requester '{requester}' never does{also}",
                people.len(),
                people
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Err(refused(
                format!("an approval's min of {why}"),
                format!("--min {why}"),
            ));
        }
    }
    Ok(())
}

/// A group's name or member: not blank, no spaces or commas, not itself a group.
pub fn check_name(name: &str, what: &str) -> Result<(), String> {
    if name.is_empty()
        || name
            .chars()
            .any(|c| c.is_whitespace() || c == ',' || c.is_control())
        || name.starts_with(GROUP_PREFIX)
    {
        return Err(format!(
            "'{name}' is not a {what} name: one word, without spaces, commas or a group: prefix"
        ));
    }
    Ok(())
}

impl Question {
    /// Refuses any change but a vote on an approval (answer, skip, decline, import…).
    pub(super) fn refuse_if_approval(&self) -> Result<()> {
        if self.state.approval.is_some() {
            return Err(Error::new(
                ErrorCode::Forbidden,
                format!(
                    "question {} is an approval: it takes votes (approve or reject) from its approvers, not answers",
                    self.id
                ),
            )
            .with_flag_hint(format!(
                "use 'questions approve --id {0}' or 'questions reject --id {0} --reason TEXT'",
                self.id
            )));
        }
        Ok(())
    }

    /// The approval settled `approved` by its quorum, as `actor` sees it: once `min`
    /// distinct eligible people (with the groups' members now) approve; none while it
    /// needs more, or is not open. Checked at each vote and at each change of a group it
    /// names, so that the count the gate reports and its state never disagree.
    fn quorum(
        &self,
        groups: &Groups,
        actor: &Actor,
    ) -> Option<(EventKind, Question, serde_json::Value)> {
        let approval = self.state.approval.as_ref()?;
        if self.state.status != Status::Pending || approval.needed(groups) > 0 {
            return None;
        }
        let eligible = approval.eligible(groups);
        let mut approvers: Vec<&str> = approval
            .votes
            .iter()
            .filter(|v| v.vote == Verdict::Approve && eligible.contains(v.counts_for()))
            .map(Vote::counts_for)
            .collect();
        approvers.sort_unstable();
        let detail = serde_json::json!({
            "approvals": approval.approvals(groups), "min": approval.min, "approved_by": approvers,
        });
        Some((
            EventKind::Approved,
            {
                let mut approved = self.changed(Status::Answered, actor);
                approved.state.answer = Some("approved".to_string());
                approved.state.answered_at = Some(actor.at.clone());
                approved
            },
            detail,
        ))
    }

    /// This approval settled by its quorum after a change of the groups it names (see
    /// `quorum`): the settlement, recorded as made by whoever changed the group.
    pub fn settle_by_groups(&self, groups: &Groups, actor: &Actor) -> Option<Transition> {
        let (kind, after, detail) = self.quorum(groups, actor)?;
        Some(Transition::Event {
            kind,
            before: Box::new(self.clone()),
            after: Box::new(after),
            actor: actor.clone(),
            detail: Some(detail),
        })
    }

    /// `voter`'s vote on this approval, as `actor` casts it; `groups` holds the members of
    /// the approval's groups, `stands_for` the people `voter` is a delegate of now
    /// (nearest first, §14a). An approval settles `approved` when `min` distinct eligible
    /// approvers approve and nobody rejected, `rejected` on the first rejection.
    ///
    /// A delegate's vote counts once, for one approver: an approver in their own right
    /// votes as themself; else for the first approver they stand in for who has not
    /// voted in person (a person's own vote replaces their delegate's, never the other
    /// way). Nobody votes, in person or for another, on what they asked for or logged.
    pub fn vote(
        &self,
        ballot: &Ballot,
        voter: &str,
        groups: &Groups,
        actor: &Actor,
        stands_for: &[String],
    ) -> Result<Voted> {
        let Some(approval) = &self.state.approval else {
            return Err(Error::invalid_answer(format!(
                "question {} is not an approval: it takes an answer, not a vote",
                self.id
            )));
        };
        let comment = ballot
            .comment
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        if ballot.verdict == Verdict::Reject && comment.is_none() {
            let mut refused = Error::invalid_answer(format!(
                "rejecting approval {} needs a reason: say why, so the requester can act on it",
                self.id
            ));
            refused.refusal = Some(crate::error::Refusal::NeedsReason { id: self.id });
            return Err(refused);
        }
        if self.state.status != Status::Pending {
            return Err(Error::conflict(format!(
                "approval {} is already settled ({}); a vote no longer changes it",
                self.id,
                ApprovalState::of(self.state.status).as_str()
            )));
        }
        let eligible = approval.eligible(groups);
        let on_behalf_of: Option<&String> = if eligible.contains(voter) {
            None
        } else {
            stands_for
                .iter()
                .find(|p| eligible.contains(*p) && !approval.votes.iter().any(|v| v.by == **p))
        };
        let detail = |refused: Option<&str>, replaces: Option<Verdict>| {
            let mut d = serde_json::json!({ "vote": ballot.verdict.as_str(), "by": voter });
            if let Some(p) = on_behalf_of {
                d["on_behalf_of"] = p.clone().into();
            }
            if let Some(c) = &comment {
                d["comment"] = c.clone().into();
            }
            if let Some(r) = replaces {
                d["replaces"] = r.as_str().into();
            }
            if let Some(why) = refused {
                d["refused"] = why.into();
            }
            d
        };
        let voter_actor = Actor {
            by: Some(voter.to_string()),
            ..actor.clone()
        };
        let refusal = if approval.asked_by(voter) {
            Some(format!(
                "{voter} asked for approval {} (or logged it) and may not vote on it: another \
                 approver must",
                self.id
            ))
        } else if !eligible.contains(voter) && on_behalf_of.is_none() {
            Some(format!(
                "{voter} may not vote on approval {}: its approvers are {}",
                self.id,
                approval.approvers.join(", ")
            ))
        } else {
            None
        };
        if let Some(why) = refusal {
            let event = Transition::Event {
                kind: EventKind::Refused,
                before: Box::new(self.clone()),
                after: Box::new(self.clone()),
                actor: voter_actor,
                detail: Some(detail(Some(&why), None)),
            };
            return Ok(Voted::Refused(
                event,
                Box::new(Error::new(ErrorCode::Forbidden, why)),
            ));
        }

        let mut next = approval.clone();
        // One vote a voter, and one an approver: a later one replaces it.
        let counts_for = on_behalf_of.map_or(voter, String::as_str);
        let replaces = next
            .votes
            .iter()
            .position(|v| v.by == voter || v.counts_for() == counts_for)
            .map(|i| next.votes.remove(i).vote);
        next.votes
            .retain(|v| v.by != voter && v.counts_for() != counts_for);
        next.votes.push(Vote {
            by: voter.to_string(),
            vote: ballot.verdict,
            comment: comment.clone(),
            at: actor.at.clone(),
            channel: actor.channel,
            on_behalf_of: on_behalf_of.cloned(),
        });
        let mut voted = self.clone();
        voted.state.approval = Some(next.clone());
        let mut changes = vec![Transition::Event {
            kind: EventKind::Voted,
            before: Box::new(self.clone()),
            after: Box::new(voted.clone()),
            actor: voter_actor.clone(),
            detail: Some(detail(None, replaces)),
        }];
        let settled = if ballot.verdict == Verdict::Reject {
            Some((
                EventKind::Rejected,
                {
                    let mut rejected = voted.changed(Status::Declined, &voter_actor);
                    rejected.state.decline_reason.clone_from(&comment);
                    rejected
                },
                serde_json::json!({ "by": voter, "reason": comment }),
            ))
        } else {
            voted.quorum(groups, &voter_actor)
        };
        if let Some((kind, after, detail)) = settled {
            changes.push(Transition::Event {
                kind,
                before: Box::new(voted),
                after: Box::new(after),
                actor: voter_actor,
                detail: Some(detail),
            });
        }
        Ok(Voted::Recorded(changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Channel, NewQuestion, OnExpiry, Source};

    fn approval(approvers: &[&str], min: u32, requester: &str) -> Question {
        let new = NewQuestion {
            stage: "deploy".into(),
            group_name: None,
            question: "Deploy?".into(),
            proposed: None,
            required: true,
            header: None,
            context: None,
            options: vec![],
            multi_select: false,
            allow_freeform: true,
            source: Source::Cli,
            expires_at: None,
            on_expiry: OnExpiry::Keep,
            approval: Some(Approval {
                approvers: approvers.iter().map(|a| a.to_string()).collect(),
                min,
                requester: requester.into(),
                logged_by: None,
                votes: vec![],
            }),
            harness_call: None,
            urgent: false,
            logged_by: None,
        };
        let mut q = new.as_logged("2026-01-01T00:00:00.000Z");
        q.id = 1;
        q
    }

    fn actor() -> Actor {
        Actor {
            by: None,
            channel: Channel::Cli,
            at: "2026-01-01T00:00:01.000Z".into(),
        }
    }

    fn approve() -> Ballot {
        Ballot {
            verdict: Verdict::Approve,
            comment: None,
        }
    }

    /// The question after every recorded transition.
    fn cast(q: &Question, voter: &str, ballot: &Ballot, groups: &Groups) -> Result<Question> {
        match q.vote(ballot, voter, groups, &actor(), &[])? {
            Voted::Recorded(changes) => match changes.last() {
                Some(Transition::Event { after, .. }) => Ok(Question::clone(after)),
                _ => unreachable!(),
            },
            Voted::Refused(_, why) => Err(*why),
        }
    }

    #[test]
    fn two_distinct_approvers_settle_a_two_of_three() {
        let q = approval(&["alice", "bob", "carol"], 2, "dave");
        let none = Groups::new();
        let once = cast(&q, "alice", &approve(), &none).unwrap();
        assert_eq!(once.state.status, Status::Pending);
        let again = cast(&once, "alice", &approve(), &none).unwrap();
        assert_eq!(
            again.state.status,
            Status::Pending,
            "the same person twice is one vote"
        );
        assert_eq!(again.state.approval.as_ref().unwrap().votes.len(), 1);
        let twice = cast(&again, "bob", &approve(), &none).unwrap();
        assert_eq!(twice.state.status, Status::Answered);
        assert_eq!(twice.state.answer.as_deref(), Some("approved"));
    }

    #[test]
    fn the_requester_and_strangers_are_refused() {
        let q = approval(&["alice", "group:release"], 1, "alice");
        let mut groups = Groups::new();
        groups.insert("release".into(), ["bob".to_string()].into());
        for who in ["alice", "mallory"] {
            let why = cast(&q, who, &approve(), &groups).unwrap_err();
            assert_eq!(why.code, ErrorCode::Forbidden, "{who}");
        }
        assert_eq!(
            cast(&q, "bob", &approve(), &groups).unwrap().state.status,
            Status::Answered
        );
    }

    #[test]
    fn one_rejection_settles_it_with_the_reason() {
        let q = approval(&["alice", "bob"], 1, "carol");
        let none = Groups::new();
        let no_reason = Ballot {
            verdict: Verdict::Reject,
            comment: Some(" ".into()),
        };
        assert_eq!(
            cast(&q, "bob", &no_reason, &none).unwrap_err().code,
            ErrorCode::InvalidAnswer
        );
        let reject = Ballot {
            verdict: Verdict::Reject,
            comment: Some("not on a Friday".into()),
        };
        let rejected = cast(&q, "bob", &reject, &none).unwrap();
        assert_eq!(rejected.state.status, Status::Declined);
        assert_eq!(
            rejected.state.decline_reason.as_deref(),
            Some("not on a Friday")
        );
        assert_eq!(
            cast(&rejected, "alice", &approve(), &none)
                .unwrap_err()
                .code,
            ErrorCode::Conflict
        );
    }

    #[test]
    fn policies_that_cannot_pass_are_refused() {
        let people = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_policy(&people(&["alice", "bob"]), 2, "alice", None).is_err());
        assert!(check_policy(&people(&["alice", "bob"]), 0, "carol", None).is_err());
        assert!(check_policy(&people(&[]), 1, "carol", None).is_err());
        assert!(check_policy(&people(&["group:"]), 1, "carol", None).is_err());
        assert!(check_policy(&people(&["alice", "group:ops"]), 5, "alice", None).is_ok());
    }
}
