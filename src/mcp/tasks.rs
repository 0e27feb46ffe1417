//! Waits that outlive a tool call: the Tasks extension (`io.modelcontextprotocol/tasks`).
//! For a client that declares it on a 2026-07-28 session, `wait_for_answers` (and `ask_questions` with
//! `wait_seconds`) whose questions are not all settled answers at once with a task, and the
//! client polls `tasks/get` until it completes. The task lives in the ledger (the core's
//! `ops::start_task`, `look_task`, `cancel_task`); this file words it in the protocol's
//! shapes.

use rmcp::model::{CallToolResult, DetailedTask, JsonObject, Task, TaskPayload, TaskStatus};
use serde_json::Value;

use questions_core::error::{Error, Result};
use questions_core::model::Question;
use questions_core::ops::{self, StoredTask, TaskEnd, TaskState};

/// How often a client is asked to poll.
const POLL_MS: u64 = 1000;

/// A new task's id: 128 random bits, drawn here (the core draws no randomness).
pub(super) fn random_id() -> Result<String> {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf)
        .map_err(|e| Error::io(format!("no randomness from the operating system: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The tool's result when its task ends, as the client reads it from `tasks/get`: the
/// result it started with (the tool's own, in the envelope), its outcomes (`outcomes`
/// writes them from the questions) and, for a wait, `settled` and `timed_out`, each in its
/// place; or the tool's failure when its questions are gone. The same document the tool
/// returns when it answers without a task.
pub(super) fn result(end: TaskEnd<'_>, outcomes: impl Fn(&[Question]) -> Value) -> Result<String> {
    let result = match end {
        TaskEnd::Settled {
            mut template,
            questions,
            timed_out,
        } => {
            if let Value::Object(fields) = &mut template {
                fields.insert("outcomes".into(), outcomes(questions));
                if fields.contains_key("settled") {
                    fields.insert("settled".into(), Value::Bool(!timed_out));
                    fields.insert("timed_out".into(), Value::Bool(timed_out));
                }
            }
            CallToolResult::structured(template)
        }
        TaskEnd::Gone { procedure, error } => {
            let body = serde_json::to_value(ops::failure(Some(procedure), error))
                .map_err(|e| Error::db(e.to_string()))?;
            CallToolResult::structured_error(body)
        }
    };
    serde_json::to_string(&result).map_err(|e| Error::db(e.to_string()))
}

/// The protocol's view of a stored task.
pub(super) fn task_of(stored: &StoredTask) -> Task {
    let status = match stored.status {
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Cancelled => TaskStatus::Cancelled,
        TaskState::Working => TaskStatus::Working,
    };
    let mut task = Task::new(
        stored.id.clone(),
        status,
        stored.created_at.clone(),
        stored.updated_at.clone(),
    );
    if status == TaskStatus::Working {
        task = task
            .with_poll_interval_ms(POLL_MS)
            .with_status_message("waiting for a person's answers");
    }
    task
}

/// The task with its result, when it has one.
pub(super) fn detailed(stored: &StoredTask) -> Result<DetailedTask> {
    let task = task_of(stored);
    let payload = match (task.status, &stored.result) {
        (TaskStatus::Completed, Some(result)) => {
            let result: JsonObject = serde_json::from_str(result)
                .map_err(|e| Error::db(format!("task {}: {e}", stored.id)))?;
            TaskPayload::Completed { result }
        }
        (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    Ok(DetailedTask::new(task, payload))
}
