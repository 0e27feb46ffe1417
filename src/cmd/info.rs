//! `info`: where the ledger is, how it was found, and what each stage holds. It only
//! reads: a ledger that does not exist is reported as such and not created.

use std::collections::HashMap;

use serde::Serialize;

use super::{Outcome, Session};
use crate::error::Result;
use crate::store::{Access, FoundBy, Location};

#[derive(Serialize)]
struct Info {
    ok: bool,
    procedure: &'static str,
    ledger: Ledger,
    stages: Vec<Stage>,
}

#[derive(Serialize)]
struct Ledger {
    engine: &'static str,
    /// An absolute path, or the database's URL without its password.
    location: String,
    found_by: &'static str,
    exists: bool,
    /// 0 when the ledger does not exist yet.
    schema_version: i64,
}

#[derive(Serialize, Default)]
struct Stage {
    stage: String,
    total: u64,
    pending_required: u64,
    pending_optional: u64,
    answered: u64,
    skipped: u64,
    declined: u64,
}

pub fn run(session: &mut Session, found_by: FoundBy) -> Result<Outcome> {
    let location = match session.location() {
        Location::File { path, .. } => std::path::absolute(path)
            .unwrap_or_else(|_| path.clone())
            .display()
            .to_string(),
        other => other.display(),
    };
    let engine = session.location().engine();
    let store = session.store(Access::Read)?;
    let exists = store.exists();
    let schema_version = if exists { store.schema_version()? } else { 0 };
    let rows = store.read(|tx| tx.tallies())?;
    Ok(Outcome::ok(Info {
        ok: true,
        procedure: "info",
        ledger: Ledger {
            engine,
            location,
            found_by: found_by.as_str(),
            exists,
            schema_version,
        },
        stages: tally(rows),
    }))
}

/// Per-stage counts, stages in the order their first question was logged. A status this
/// binary does not know holds the gate, so it counts as pending.
fn tally(rows: Vec<(String, String, bool)>) -> Vec<Stage> {
    let mut stages: Vec<Stage> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (name, status, required) in rows {
        let at = *index.entry(name.clone()).or_insert_with(|| {
            stages.push(Stage {
                stage: name,
                ..Stage::default()
            });
            stages.len() - 1
        });
        let stage = &mut stages[at];
        stage.total += 1;
        match status.trim() {
            "answered" => stage.answered += 1,
            "skipped" => stage.skipped += 1,
            "declined" => stage.declined += 1,
            _ if required => stage.pending_required += 1,
            _ => stage.pending_optional += 1,
        }
    }
    stages
}
