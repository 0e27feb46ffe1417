//! `approve`, `reject` and `group`: votes on approvals and the groups they name.

use super::{Outcome, Who};
use crate::cli::{ApproveArgs, GroupAction, GroupArgs, RejectArgs};
use crate::error::{Error, Result};
use crate::model::{Ballot, Channel, Verdict};
use crate::ops::{self, Identity};
use crate::store::Ledger;

/// Who votes from the command line: the PostgreSQL role, else the operating-system user.
/// `--by` would let anyone vote as anyone: it is refused.
fn voter(by_from_flag: bool, verb: &str) -> Result<Identity> {
    if by_from_flag {
        return Err(Error::usage(format!(
            "--by is refused for '{verb}': a vote counts as the PostgreSQL role you connect as, \
             or on a SQLite file as the operating-system user; usage: questions {verb} --id N"
        )));
    }
    Ok(Identity::Local(Who::os_user()))
}

pub fn approve(ledger: &mut Ledger, by_from_flag: bool, args: ApproveArgs) -> Result<Outcome> {
    let identity = voter(by_from_flag, "approve")?;
    let ballot = Ballot {
        verdict: Verdict::Approve,
        comment: args.comment,
    };
    Ok(Outcome::ok(ops::vote(
        ledger,
        &identity,
        Channel::Cli,
        args.id,
        &ops::Shown::default(),
        &ballot,
    )?))
}

pub fn reject(ledger: &mut Ledger, by_from_flag: bool, args: RejectArgs) -> Result<Outcome> {
    let identity = voter(by_from_flag, "reject")?;
    let ballot = Ballot {
        verdict: Verdict::Reject,
        comment: Some(args.reason),
    };
    Ok(Outcome::ok(ops::vote(
        ledger,
        &identity,
        Channel::Cli,
        args.id,
        &ops::Shown::default(),
        &ballot,
    )?))
}

pub fn group(ledger: &mut Ledger, who: &Who, args: GroupArgs) -> Result<Outcome> {
    let caller = who.via(Channel::Cli);
    Ok(Outcome::ok(ops::group(
        ledger,
        caller.by,
        Channel::Cli,
        &args.group,
        args.action == GroupAction::Add,
        &args.names,
    )?))
}
