//! Routing policy (§14a): who gets a stage's cards, and when they are reminded and the
//! card escalated. One row per stage pattern, its policy kept as JSON so that a relay of
//! an older build reads what it knows of it; only `ops::routing` calls these, inside its
//! own transactions.

use serde::{Deserialize, Serialize};

use super::{to_json, Row, Tx};
use crate::error::Result;
use crate::model::{Actor, EventKind};

/// A stage pattern's routing, as `policy set` made it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Policy {
    /// A stage's name, or a prefix ending in `*` (`ci-*`; `*` alone: every stage).
    pub stage: String,
    /// Who gets the cards first (people, `group:NAME`); empty: every linked person who
    /// may answer.
    pub to: Vec<String>,
    /// The first reminder's delay after the question was logged (`90m`, `2h`, `1d`); each
    /// next one comes after twice the gap before it. None: no reminders.
    pub remind_after: Option<String>,
    /// How many reminders at most (with `remind_after`).
    pub remind_max: Option<u32>,
    /// When the escalation comes, after the question was logged. None: no escalation.
    pub escalate_after: Option<String>,
    /// Who the escalation adds to those who get cards and may answer.
    pub escalate_to: Vec<String>,
    /// Who set it, and when.
    pub set_by: Option<String>,
    pub set_at: String,
}

/// The policies' table in SQLite, made by the first `policy set` rather than by a
/// migration (see `relay::SQLITE_TABLES`: SQLite parses every table of the schema at each
/// open). PostgreSQL makes it in V12.
const SQLITE_TABLE: &str = "CREATE TABLE IF NOT EXISTS routing_policies (
  stage TEXT PRIMARY KEY,
  policy TEXT NOT NULL,
  set_at TEXT NOT NULL
) WITHOUT ROWID";

impl Tx<'_> {
    fn policy_table(&self, make: bool) -> Result<bool> {
        self.lazy_tables("routing_policies", &[SQLITE_TABLE], make)
    }

    /// Every policy, by pattern.
    pub(crate) fn policies(&self) -> Result<Vec<Policy>> {
        if !self.policy_table(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            "SELECT stage, policy FROM routing_policies ORDER BY stage",
            &[],
        )?;
        rows.each(
            |r| {
                let stage = r.text("stage").unwrap_or_default();
                let mut policy: Policy = r.take("policy").json();
                // The key is the row's, whatever the JSON says.
                policy.stage = stage;
                Ok(policy)
            },
            &["stage", "policy"],
        )
    }

    /// Sets `policy` for its pattern, replacing the one there was.
    pub(crate) fn put_policy(&self, policy: &Policy) -> Result<()> {
        self.policy_table(true)?;
        self.conn.execute(
            "DELETE FROM routing_policies WHERE stage = $1",
            &[policy.stage.as_str().into()],
        )?;
        self.conn.execute(
            "INSERT INTO routing_policies (stage, policy, set_at) VALUES ($1, $2, $3)",
            &[
                policy.stage.as_str().into(),
                to_json(policy)?.as_str().into(),
                policy.set_at.as_str().into(),
            ],
        )?;
        Ok(())
    }

    /// Removes a pattern's policy; false when there was none.
    pub(crate) fn delete_policy(&self, stage: &str) -> Result<bool> {
        if !self.policy_table(false)? {
            return Ok(false);
        }
        Ok(self.conn.execute(
            "DELETE FROM routing_policies WHERE stage = $1",
            &[stage.into()],
        )? > 0)
    }

    /// Records a policy set or unset, as a `policy` event of no question.
    pub(crate) fn policy_event(&self, actor: &Actor, detail: &serde_json::Value) -> Result<()> {
        self.insert_event(&Row {
            kind: EventKind::Policy,
            at: &actor.at,
            question_id: 0,
            stage: None,
            by: actor.by.as_deref(),
            channel: Some(actor.channel),
            before: None,
            after: None,
            detail: Some(to_json(detail)?),
        })
    }
}
