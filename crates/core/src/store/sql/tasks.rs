//! The MCP server's tasks (§9): a wait that outlives the tool call that started it, kept
//! in the ledger so that a restarted server reports it as it was.

use super::{Param, Tx};
use crate::error::Result;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum TaskState {
    Working,
    Completed,
    Cancelled,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One task as stored.
#[derive(Debug, Clone)]
pub struct StoredTask {
    pub id: String,
    /// The tool whose result it carries: `wait_for_answers` or `ask_questions`.
    pub tool: String,
    pub stage: Option<String>,
    /// The questions it waits for, as a JSON list of ids.
    pub question_ids: String,
    /// The result's fields known when it started (JSON object).
    pub template: String,
    /// The seq of the last event it has seen.
    pub seen: i64,
    pub status: TaskState,
    /// The tool's result once it completed (JSON object).
    pub result: Option<String>,
    /// When it stops waiting, if ever.
    pub deadline: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

const COLUMNS: &[&str] = &[
    "id",
    "tool",
    "stage",
    "question_ids",
    "template",
    "seen",
    "status",
    "result",
    "deadline",
    "created_at",
    "updated_at",
];

impl Tx<'_> {
    pub(crate) fn insert_task(&self, t: &StoredTask) -> Result<()> {
        self.conn.execute(
            "INSERT INTO mcp_tasks (id, tool, stage, question_ids, template, seen, status, \
             result, deadline, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                t.id.as_str().into(),
                t.tool.as_str().into(),
                (&t.stage).into(),
                t.question_ids.as_str().into(),
                t.template.as_str().into(),
                t.seen.into(),
                t.status.as_str().into(),
                (&t.result).into(),
                (&t.deadline).into(),
                t.created_at.as_str().into(),
                t.updated_at.as_str().into(),
            ],
        )?;
        Ok(())
    }

    pub(crate) fn task(&self, id: &str) -> Result<Option<StoredTask>> {
        let rows = self.conn.query(
            &format!("SELECT {} FROM mcp_tasks WHERE id = $1", COLUMNS.join(", ")),
            &[id.into()],
        )?;
        Ok(rows
            .each(
                |r| {
                    Ok(StoredTask {
                        id: r.text("id").unwrap_or_default(),
                        tool: r.text("tool").unwrap_or_default(),
                        stage: r.text("stage"),
                        question_ids: r.text("question_ids").unwrap_or_default(),
                        template: r.text("template").unwrap_or_default(),
                        seen: r.take("seen").int()?,
                        // A name this build does not know is one a newer build wrote:
                        // the task is over for this one.
                        status: r
                            .text("status")
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(TaskState::Cancelled),
                        result: r.text("result"),
                        deadline: r.text("deadline"),
                        created_at: r.text("created_at").unwrap_or_default(),
                        updated_at: r.text("updated_at").unwrap_or_default(),
                    })
                },
                COLUMNS,
            )?
            .pop())
    }

    /// Moves a task on: what it has seen, and its status and result. Only a task still
    /// `working` changes: a completed or cancelled one stays as it ended.
    pub(crate) fn update_task(
        &self,
        id: &str,
        seen: i64,
        status: TaskState,
        result: Option<&str>,
        now: &str,
    ) -> Result<bool> {
        let params: [Param; 5] = [
            seen.into(),
            status.as_str().into(),
            result.into(),
            now.into(),
            id.into(),
        ];
        let changed = self.conn.execute(
            "UPDATE mcp_tasks SET seen = $1, status = $2, result = $3, updated_at = $4 \
             WHERE id = $5 AND status = 'working'",
            &params,
        )?;
        Ok(changed > 0)
    }
}
