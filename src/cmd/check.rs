use std::time::{Duration, Instant};

use serde::Serialize;

use super::{select, Outcome, Rendered, Session};
use crate::cli::CheckArgs;
use crate::error::Result;
use crate::model::{Question, Status};
use crate::output;
use crate::store::Access;

/// How often `--wait` looks again: a person answering sees the gate open within this.
const POLL: Duration = Duration::from_millis(200);

pub fn run(session: &mut Session, args: CheckArgs) -> Result<Outcome> {
    let deadline = args
        .timeout
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    let store = session.store(Access::Read)?;
    loop {
        let considered = store.read(|tx| {
            select(
                tx,
                args.stage.as_deref(),
                args.ids.as_ref().map(|i| i.0.as_slice()),
            )
        })?;
        let passes = !considered.iter().any(Question::blocks_gate);
        if passes || !args.wait {
            return Ok(outcome(args.stage.as_deref(), &considered, false));
        }
        let now = Instant::now();
        let pause = match deadline {
            Some(end) if now >= end => {
                return Ok(outcome(args.stage.as_deref(), &considered, true))
            }
            Some(end) => POLL.min(end - now),
            None => POLL,
        };
        std::thread::sleep(pause);
    }
}

/// The gate's document; `pending` holds the questions themselves, serialized straight
/// from the rows (a large stage can hold hundreds).
#[derive(Serialize)]
struct Gate<'a> {
    ok: bool,
    procedure: &'static str,
    gate: &'static str,
    stage: Option<&'a str>,
    total: usize,
    pending_count: usize,
    pending: Vec<&'a Question>,
    optional_pending: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    timed_out: bool,
}

fn outcome(stage: Option<&str>, considered: &[Question], timed_out: bool) -> Outcome {
    let pending: Vec<&Question> = considered.iter().filter(|q| q.blocks_gate()).collect();
    let optional_pending = considered
        .iter()
        .filter(|q| !q.required && q.status == Status::Pending)
        .count();
    let passes = pending.is_empty();
    let note = (!passes).then(|| {
        let scope = stage.map_or("the given ids".to_string(), |s| format!("stage '{s}'"));
        let mut ids: Vec<String> = pending.iter().take(10).map(|q| q.id.to_string()).collect();
        if pending.len() > 10 {
            ids.push("…".to_string());
        }
        format!(
            "gate fails{}: {} required question(s) pending in {scope} (ids {})",
            if timed_out { " (timed out)" } else { "" },
            pending.len(),
            ids.join(", ")
        )
    });
    let body = Gate {
        ok: passes,
        procedure: "check",
        gate: if passes { "pass" } else { "fail" },
        stage,
        total: considered.len(),
        pending_count: pending.len(),
        pending,
        optional_pending,
        timed_out,
    };
    Outcome {
        body: Rendered::Json(output::pretty(&body)),
        exit: if passes { 0 } else { 1 },
        note,
    }
}
