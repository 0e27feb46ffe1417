use super::Outcome;
use crate::error::Result;
use crate::store::Ledger;

/// Serves until the client hangs up. stdout belongs to JSON-RPC: nothing is printed after.
pub fn run(ledger: &mut Ledger) -> Result<Outcome> {
    crate::mcp::serve(ledger.location().clone())?;
    Ok(Outcome::text(String::new()))
}
