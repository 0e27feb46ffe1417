use serde_json::json;

use super::{Outcome, Session};
use crate::cli::ClearArgs;
use crate::clock;
use crate::error::Result;
use crate::model::Event;
use crate::store::Access;

pub fn run(session: &mut Session, args: ClearArgs) -> Result<Outcome> {
    let now = clock::now();
    let deleted = session.store(Access::Write)?.write(|tx| {
        let gone = tx.delete_stage(&args.stage)?;
        for q in &gone {
            tx.record(&Event::cleared(&now, q))?;
        }
        Ok(gone.len())
    })?;
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "clear",
        "stage": args.stage,
        "deleted": deleted,
    })))
}
