use super::{Outcome, Who};
use crate::cli::McpArgs;
use questions_core::error::Result;
use questions_core::model::Channel;
use questions_core::ops::Ledger;

/// Serves until the client hangs up. stdout belongs to JSON-RPC: nothing is printed after.
/// Votes count as the user it is configured with, unless `--no-votes` refuses them.
pub(super) fn run(ledger: &mut Ledger, who: &Who, args: McpArgs) -> Result<Outcome> {
    let user = who.via(Channel::Mcp).by;
    crate::mcp::serve(
        ledger.location().clone(),
        user,
        !args.no_votes,
        args.inbox_url,
    )?;
    Ok(Outcome::text(String::new()))
}
