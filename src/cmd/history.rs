use serde_json::json;

use super::{Outcome, Session};
use crate::cli::HistoryArgs;
use crate::error::{Error, Result};
use crate::store::{Access, EventFilter};

pub fn run(session: &mut Session, args: HistoryArgs) -> Result<Outcome> {
    let filter = match (args.id, args.stage) {
        (Some(id), _) => EventFilter::Question(id),
        (None, Some(stage)) => EventFilter::Stage(stage),
        (None, None) => return Err(Error::usage("give --id N or --stage S")),
    };
    let events = session.store(Access::Read)?.read(|tx| {
        let events = tx.events(&filter)?;
        if let EventFilter::Question(id) = filter {
            if events.is_empty() && tx.question(id)?.is_none() {
                return Err(Error::not_found(format!(
                    "question {id} has no history: it was never in this ledger"
                )));
            }
        }
        Ok(events)
    })?;
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "history",
        "count": events.len(),
        "events": events,
    })))
}
