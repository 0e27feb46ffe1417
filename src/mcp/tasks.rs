//! Waits that outlive a tool call: the Tasks extension (`io.modelcontextprotocol/tasks`).
//! For a client that declares it, `wait_for_answers` (and `ask_questions` with
//! `wait_seconds`) whose questions are not all settled answers at once with a task, and the
//! client polls `tasks/get` until it completes. The task lives in the ledger, not in the
//! server: its questions, the seq of the last event it has seen, and its result once
//! every question has left pending (or its time is up). A server killed and started again
//! reports the same task, and the answers given meanwhile by any means.

use rmcp::model::{CallToolResult, DetailedTask, JsonObject, Task, TaskPayload, TaskStatus};
use serde_json::Value;

use crate::clock;
use crate::error::{Error, Result};
use crate::model::{Question, Status};
use crate::ops;
use crate::store::{Ledger, StoredTask};

/// How often a client is asked to poll.
const POLL_MS: u64 = 1000;

/// What a task was started for.
pub struct NewTask {
    pub tool: &'static str,
    pub stage: Option<String>,
    pub question_ids: Vec<i64>,
    /// The tool's result as it stood when the task started: its outcomes (and, for a
    /// wait, `settled` and `timed_out`) are filled in when it completes.
    pub template: Value,
    pub deadline: Option<String>,
}

fn random_id() -> Result<String> {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf)
        .map_err(|e| Error::io(format!("no randomness from the operating system: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Records a new task, working.
pub fn start(ledger: &mut Ledger, new: NewTask) -> Result<StoredTask> {
    let now = clock::now();
    let task = StoredTask {
        id: random_id()?,
        tool: new.tool.to_string(),
        stage: new.stage,
        question_ids: serde_json::to_string(&new.question_ids)
            .map_err(|e| Error::db(e.to_string()))?,
        template: new.template.to_string(),
        seen: 0,
        status: "working".into(),
        result: None,
        deadline: new.deadline,
        created_at: now.clone(),
        updated_at: now,
    };
    ledger.write(|tx| {
        let mut task = task.clone();
        task.seen = tx.last_seq()?;
        tx.insert_task(&task)?;
        Ok(task)
    })
}

/// The task as it stands now: still working, or completed with the tool's result (the
/// first reading that finds every question settled, or the deadline passed, records the
/// result, once). `outcomes` turns the questions into the tool's outcomes document.
pub fn look(
    ledger: &mut Ledger,
    id: &str,
    outcomes: impl Fn(&[Question]) -> Value,
) -> Result<Option<StoredTask>> {
    let Some(task) = ledger.read(|tx| tx.task(id))? else {
        return Ok(None);
    };
    if task.status != "working" {
        return Ok(Some(task));
    }
    let ids: Vec<i64> = serde_json::from_str(&task.question_ids)
        .map_err(|e| Error::db(format!("task {id} names no questions: {e}")))?;
    let now = clock::now();
    let read = ops::named(ledger, None, Some(&ids));
    let last = ledger.read(|tx| tx.last_seq())?;
    let (status, result) = match read {
        Ok(questions) => {
            let pending = questions
                .iter()
                .filter(|q| q.status == Status::Pending)
                .count();
            let timed_out =
                pending > 0 && task.deadline.as_deref().is_some_and(|d| now.as_str() >= d);
            if pending > 0 && !timed_out {
                ("working", None)
            } else {
                let mut doc: Value = serde_json::from_str(&task.template)
                    .map_err(|e| Error::db(format!("task {id}: {e}")))?;
                if let Value::Object(fields) = &mut doc {
                    fields.insert("outcomes".into(), outcomes(&questions));
                    if fields.contains_key("settled") {
                        fields.insert("settled".into(), Value::Bool(!timed_out));
                        fields.insert("timed_out".into(), Value::Bool(timed_out));
                    }
                }
                let result = serde_json::to_string(&CallToolResult::structured(doc))
                    .map_err(|e| Error::db(e.to_string()))?;
                ("completed", Some(result))
            }
        }
        // Its questions are gone (the ledger was reset): the task ends with the tool's
        // failure, as the call would have.
        Err(e) if matches!(e.code, crate::error::ErrorCode::NotFound) => {
            let procedure = match task.tool.as_str() {
                "ask_questions" => ops::Procedure::AskQuestions,
                _ => ops::Procedure::WaitForAnswers,
            };
            let body = serde_json::to_value(ops::failure(Some(procedure), &e))
                .map_err(|e| Error::db(e.to_string()))?;
            let result = serde_json::to_string(&CallToolResult::structured_error(body))
                .map_err(|e| Error::db(e.to_string()))?;
            ("completed", Some(result))
        }
        Err(e) => return Err(e),
    };
    if status == "working" && last == task.seen {
        return Ok(Some(task));
    }
    ledger.write(|tx| tx.update_task(id, last, status, result.as_deref(), &now))?;
    // Whoever recorded it first: the task as it now stands.
    ledger.read(|tx| tx.task(id))
}

/// Cancels a working task; a finished one stays as it ended.
pub fn cancel(ledger: &mut Ledger, id: &str) -> Result<Option<StoredTask>> {
    let Some(task) = ledger.read(|tx| tx.task(id))? else {
        return Ok(None);
    };
    let now = clock::now();
    ledger.write(|tx| tx.update_task(id, task.seen, "cancelled", None, &now))?;
    ledger.read(|tx| tx.task(id))
}

/// The protocol's view of a stored task.
pub fn task_of(stored: &StoredTask) -> Task {
    let status = match stored.status.as_str() {
        "completed" => TaskStatus::Completed,
        "cancelled" => TaskStatus::Cancelled,
        _ => TaskStatus::Working,
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
pub fn detailed(stored: &StoredTask) -> Result<DetailedTask> {
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
