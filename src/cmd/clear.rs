use super::{door, take, Outcome, Who};
use crate::cli::ClearArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops::{Ledger, Reply, Request};

pub(super) fn run(ledger: &mut Ledger, who: &Who, args: ClearArgs) -> Result<Outcome> {
    let req = Request::Clear {
        stage: args.stage,
        key: None,
    };
    let cleared = take!(door(ledger, who.via(Channel::Cli), req)?, Reply::Cleared);
    Ok(Outcome::ok(cleared))
}
