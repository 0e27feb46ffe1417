//! `approve`, `reject` and `group`: votes on approvals and the groups they name.

use super::{Outcome, Who};
use crate::cli::{ApproveArgs, GroupAction, GroupArgs, RejectArgs};
use questions_core::error::{Error, Result};
use questions_core::model::{Ballot, Channel, Verdict};
use questions_core::ops::Ledger;
use questions_core::ops::{self, Identity};

/// Who votes from the command line: the PostgreSQL role, else the operating-system user.
/// `--by` would let anyone vote as anyone: it is refused.
pub(super) fn voter(by_from_flag: bool, verb: &str) -> Result<Identity> {
    if by_from_flag {
        let what = match verb {
            "group" => "a group change",
            "people" | "relay pair" => "a change of who answers through a channel",
            _ => "a vote",
        };
        return Err(Error::usage(format!(
            "--by is refused for '{verb}': {what} counts as the PostgreSQL role you connect \
             as, or on a SQLite file as the operating-system user (by uid)"
        )));
    }
    Ok(Identity::Local(Who::os_user()))
}

pub(super) fn approve(
    ledger: &mut Ledger,
    by_from_flag: bool,
    args: ApproveArgs,
) -> Result<Outcome> {
    let identity = voter(by_from_flag, "approve")?;
    let ballot = Ballot {
        verdict: Verdict::Approve,
        comment: args.comment,
    };
    vote(ledger, identity, args.id, ballot)
}

pub(super) fn reject(ledger: &mut Ledger, by_from_flag: bool, args: RejectArgs) -> Result<Outcome> {
    let identity = voter(by_from_flag, "reject")?;
    let ballot = Ballot {
        verdict: Verdict::Reject,
        comment: Some(args.reason),
    };
    vote(ledger, identity, args.id, ballot)
}

fn vote(ledger: &mut Ledger, identity: Identity, id: i64, ballot: Ballot) -> Result<Outcome> {
    let caller = ops::Caller {
        by: None,
        channel: Channel::Cli,
    };
    let req = ops::Request::Change(ops::PersonsChange::of(id, ops::Act::Vote(identity, ballot)));
    Ok(Outcome::ok(super::take!(
        super::door(ledger, caller, req)?,
        ops::Reply::Recorded
    )))
}

/// `group create|add|remove`: as the PostgreSQL role, else the operating-system user, as a
/// vote is; `--by` is refused (who changes a group decides who votes).
pub(super) fn group(ledger: &mut Ledger, by_from_flag: bool, args: GroupArgs) -> Result<Outcome> {
    let identity = voter(by_from_flag, "group")?;
    let change = match args.action {
        GroupAction::Create => ops::GroupChange::Create {
            admins: args.admins.iter().map(|a| a.trim().to_string()).collect(),
        },
        GroupAction::Add | GroupAction::Remove if !args.admins.is_empty() => {
            return Err(Error::usage(
                "--admins goes with 'group create' only: a group's admins are named when it is made",
            ))
        }
        GroupAction::Add => ops::GroupChange::Add,
        GroupAction::Remove => ops::GroupChange::Remove,
    };
    if !matches!(change, ops::GroupChange::Create { .. }) && args.names.is_empty() {
        return Err(Error::usage(
            "name the people to add or remove: questions group add|remove GROUP NAME…",
        ));
    }
    Ok(Outcome::ok(ops::group(
        ledger,
        &identity,
        Channel::Cli,
        &args.group,
        &change,
        &args.names,
    )?))
}
