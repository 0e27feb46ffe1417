//! Waits that outlive the call that started them (MCP's Tasks extension): kept in the
//! ledger, not in a server, so that a server killed and started again reports the same
//! task, with the answers given meanwhile by any means. A task holds its questions, the
//! seq of the last event it has seen, and its result once every question has left pending
//! or its time is up.

use serde_json::Value;

use super::Procedure;
use crate::clock;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{Question, Status};
use crate::store::Ledger;

use crate::store::{StoredTask, TaskState};

/// What a task is started for.
pub struct NewTask {
    /// Drawn by the front end (the core draws no randomness).
    pub id: String,
    /// The call whose result it carries.
    pub procedure: Procedure,
    pub stage: Option<String>,
    pub question_ids: Vec<i64>,
    /// The call's result as it stood when the task started; the front end fills in the
    /// rest when the task ends (see `TaskEnd`).
    pub template: Value,
    pub deadline: Option<String>,
}

/// How a task ended, for the front end to write its result from.
pub enum TaskEnd<'a> {
    /// Every question left pending, or the deadline passed (`timed_out`).
    Settled {
        template: Value,
        questions: &'a [Question],
        timed_out: bool,
    },
    /// Its questions are gone (the ledger was reset): the call's own failure.
    Gone {
        procedure: Procedure,
        error: &'a Error,
    },
}

/// Records a new task, working, as of the ledger's last event.
pub fn start_task(ledger: &mut Ledger, new: NewTask) -> Result<StoredTask> {
    let now = clock::now();
    let task = StoredTask {
        id: new.id,
        tool: new.procedure.as_str().to_string(),
        stage: new.stage,
        question_ids: serde_json::to_string(&new.question_ids)
            .map_err(|e| Error::db(e.to_string()))?,
        template: new.template.to_string(),
        seen: 0,
        status: TaskState::Working,
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

/// The task as it stands now: still working, or ended with the result `finish` writes
/// (the first look that finds it over records that result, once; every later look reads
/// it). None for an unknown id.
pub fn look_task(
    ledger: &mut Ledger,
    id: &str,
    finish: impl Fn(TaskEnd<'_>) -> Result<String>,
) -> Result<Option<StoredTask>> {
    super::settle(ledger)?;
    let looked = ledger.read(|tx| {
        let Some(task) = tx.task(id)? else {
            return Ok(None);
        };
        if task.status != TaskState::Working {
            return Ok(Some((task, None, 0)));
        }
        let ids: Vec<i64> = serde_json::from_str(&task.question_ids)
            .map_err(|e| Error::db(format!("task {id} names no questions: {e}")))?;
        let questions = super::select(tx, None, Some(&ids));
        Ok(Some((task, Some(questions), tx.last_seq()?)))
    })?;
    let Some((task, Some(questions), last)) = looked else {
        return Ok(looked.map(|(task, _, _)| task));
    };
    let now = clock::now();
    let procedure = match task.tool.as_str() {
        "ask_questions" => Procedure::AskQuestions,
        _ => Procedure::WaitForAnswers,
    };
    let (status, result) = match questions {
        Ok(questions) => {
            let pending = questions
                .iter()
                .filter(|q| q.state.status == Status::Pending)
                .count();
            let timed_out =
                pending > 0 && task.deadline.as_deref().is_some_and(|d| now.as_str() >= d);
            if pending > 0 && !timed_out {
                (TaskState::Working, None)
            } else {
                let template = serde_json::from_str(&task.template)
                    .map_err(|e| Error::db(format!("task {id}: {e}")))?;
                let result = finish(TaskEnd::Settled {
                    template,
                    questions: &questions,
                    timed_out,
                })?;
                (TaskState::Completed, Some(result))
            }
        }
        Err(e) if e.code == ErrorCode::NotFound => {
            let result = finish(TaskEnd::Gone {
                procedure,
                error: &e,
            })?;
            (TaskState::Completed, Some(result))
        }
        Err(e) => return Err(e),
    };
    if status == TaskState::Working && last == task.seen {
        return Ok(Some(task));
    }
    // Whoever recorded its end first: the task as it now stands.
    ledger.write(|tx| {
        tx.update_task(id, last, status, result.as_deref(), &now)?;
        tx.task(id)
    })
}

/// Cancels a working task; a finished one stays as it ended. None for an unknown id.
pub fn cancel_task(ledger: &mut Ledger, id: &str) -> Result<Option<StoredTask>> {
    let now = clock::now();
    ledger.write(|tx| {
        let Some(task) = tx.task(id)? else {
            return Ok(None);
        };
        tx.update_task(id, task.seen, TaskState::Cancelled, None, &now)?;
        tx.task(id)
    })
}
