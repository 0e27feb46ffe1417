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

/// What routing did, in SQLite: the slots recorded (a reminder's or an escalation's, one
/// row a question and slot, so that each is recorded once however many relays look), and
/// the last reminder each card was reposted for. Made by the first slot recorded.
const SQLITE_SLOT_TABLES: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS routing_slots (
  question_id INTEGER NOT NULL,
  slot TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (question_id, slot)
) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS routing_reminders (
  delivery_id INTEGER PRIMARY KEY,
  reminder INTEGER NOT NULL,
  at TEXT NOT NULL
)",
];

impl Tx<'_> {
    fn slot_tables(&self, make: bool) -> Result<bool> {
        self.lazy_tables("routing_slots", &SQLITE_SLOT_TABLES, make)
    }

    /// Every slot recorded: (question, slot).
    pub(crate) fn routing_slots(&self) -> Result<Vec<(i64, String)>> {
        if !self.slot_tables(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            "SELECT question_id, slot FROM routing_slots ORDER BY question_id, slot",
            &[],
        )?;
        rows.each(
            |r| {
                Ok((
                    r.take("question_id").int()?,
                    r.text("slot").unwrap_or_default(),
                ))
            },
            &["question_id", "slot"],
        )
    }

    /// Records a question's slot; false when it was recorded already (by this relay or
    /// another: the key decides, in whichever transaction commits first).
    pub(crate) fn insert_slot(&self, question_id: i64, slot: &str, at: &str) -> Result<bool> {
        self.slot_tables(true)?;
        Ok(self.conn.execute(
            "INSERT INTO routing_slots (question_id, slot, at) VALUES ($1, $2, $3) \
             ON CONFLICT (question_id, slot) DO NOTHING",
            &[question_id.into(), slot.into(), at.into()],
        )? > 0)
    }

    /// The last reminder a card was reposted for (0: none).
    pub(crate) fn reminded(&self, delivery: i64) -> Result<i64> {
        if !self.slot_tables(false)? {
            return Ok(0);
        }
        let rows = self.conn.query(
            "SELECT reminder FROM routing_reminders WHERE delivery_id = $1",
            &[delivery.into()],
        )?;
        Ok(rows
            .each(|r| r.take("reminder").int(), &["reminder"])?
            .pop()
            .unwrap_or(0))
    }

    pub(crate) fn set_reminded(&self, delivery: i64, reminder: i64, at: &str) -> Result<()> {
        self.slot_tables(true)?;
        self.conn.execute(
            "DELETE FROM routing_reminders WHERE delivery_id = $1",
            &[delivery.into()],
        )?;
        self.conn.execute(
            "INSERT INTO routing_reminders (delivery_id, reminder, at) VALUES ($1, $2, $3)",
            &[delivery.into(), reminder.into(), at.into()],
        )?;
        Ok(())
    }

    /// Records a reminder or an escalation of `question`: made by no person and through
    /// no channel (the policy made it), what it was in `detail`.
    pub(crate) fn routing_event(
        &self,
        kind: EventKind,
        question_id: i64,
        stage: &str,
        at: &str,
        detail: &serde_json::Value,
    ) -> Result<()> {
        self.insert_event(&Row {
            kind,
            at,
            question_id,
            stage: Some(stage),
            by: None,
            channel: None,
            before: None,
            after: None,
            detail: Some(to_json(detail)?),
        })
    }

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

/// A person's delegate (§14a): until `until`, cards for `person` go to `delegate` too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Delegation {
    pub person: String,
    pub delegate: String,
    pub until: String,
    pub set_at: String,
}

/// The delegations' table in SQLite, made by the first `people delegate`.
const SQLITE_DELEGATION_TABLE: &str = "CREATE TABLE IF NOT EXISTS people_delegations (
  person TEXT PRIMARY KEY,
  delegate TEXT NOT NULL,
  until TEXT NOT NULL,
  set_at TEXT NOT NULL
) WITHOUT ROWID";

impl Tx<'_> {
    fn delegation_table(&self, make: bool) -> Result<bool> {
        self.lazy_tables("people_delegations", &[SQLITE_DELEGATION_TABLE], make)
    }

    /// Every delegation on record (ended ones too, until replaced or removed), by person.
    pub(crate) fn delegations(&self) -> Result<Vec<Delegation>> {
        if !self.delegation_table(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            "SELECT person, delegate, until, set_at FROM people_delegations ORDER BY person",
            &[],
        )?;
        rows.each(
            |r| {
                Ok(Delegation {
                    person: r.text("person").unwrap_or_default(),
                    delegate: r.text("delegate").unwrap_or_default(),
                    until: r.text("until").unwrap_or_default(),
                    set_at: r.text("set_at").unwrap_or_default(),
                })
            },
            &["person", "delegate", "until", "set_at"],
        )
    }

    /// Sets `d.person`'s delegate, replacing the one there was.
    pub(crate) fn put_delegation(&self, d: &Delegation) -> Result<()> {
        self.delegation_table(true)?;
        self.conn.execute(
            "DELETE FROM people_delegations WHERE person = $1",
            &[d.person.as_str().into()],
        )?;
        self.conn.execute(
            "INSERT INTO people_delegations (person, delegate, until, set_at) \
             VALUES ($1, $2, $3, $4)",
            &[
                d.person.as_str().into(),
                d.delegate.as_str().into(),
                d.until.as_str().into(),
                d.set_at.as_str().into(),
            ],
        )?;
        Ok(())
    }

    /// Ends `person`'s delegation; false when there was none.
    pub(crate) fn delete_delegation(&self, person: &str) -> Result<bool> {
        if !self.delegation_table(false)? {
            return Ok(false);
        }
        Ok(self.conn.execute(
            "DELETE FROM people_delegations WHERE person = $1",
            &[person.into()],
        )? > 0)
    }
}

/// A person's quiet hours (§14a): every day from `from` to `to` (`HH:MM`, the end on the
/// next day when it is earlier than the start), in the IANA zone `tz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QuietHours {
    pub person: String,
    pub from: String,
    pub to: String,
    pub tz: String,
    pub set_at: String,
}

/// The quiet hours' table in SQLite, made by the first `people quiet`.
const SQLITE_QUIET_TABLE: &str = "CREATE TABLE IF NOT EXISTS people_quiet (
  person TEXT PRIMARY KEY,
  start TEXT NOT NULL,
  finish TEXT NOT NULL,
  tz TEXT NOT NULL,
  set_at TEXT NOT NULL
) WITHOUT ROWID";

impl Tx<'_> {
    fn quiet_table(&self, make: bool) -> Result<bool> {
        self.lazy_tables("people_quiet", &[SQLITE_QUIET_TABLE], make)
    }

    /// Everyone's quiet hours, by person.
    pub(crate) fn quiet_hours(&self) -> Result<Vec<QuietHours>> {
        if !self.quiet_table(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            "SELECT person, start, finish, tz, set_at FROM people_quiet ORDER BY person",
            &[],
        )?;
        rows.each(
            |r| {
                Ok(QuietHours {
                    person: r.text("person").unwrap_or_default(),
                    from: r.text("start").unwrap_or_default(),
                    to: r.text("finish").unwrap_or_default(),
                    tz: r.text("tz").unwrap_or_default(),
                    set_at: r.text("set_at").unwrap_or_default(),
                })
            },
            &["person", "start", "finish", "tz", "set_at"],
        )
    }

    /// Sets `q.person`'s quiet hours, replacing those there were.
    pub(crate) fn put_quiet(&self, q: &QuietHours) -> Result<()> {
        self.quiet_table(true)?;
        self.conn.execute(
            "DELETE FROM people_quiet WHERE person = $1",
            &[q.person.as_str().into()],
        )?;
        self.conn.execute(
            "INSERT INTO people_quiet (person, start, finish, tz, set_at) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                q.person.as_str().into(),
                q.from.as_str().into(),
                q.to.as_str().into(),
                q.tz.as_str().into(),
                q.set_at.as_str().into(),
            ],
        )?;
        Ok(())
    }

    /// Ends `person`'s quiet hours; false when there were none.
    pub(crate) fn delete_quiet(&self, person: &str) -> Result<bool> {
        if !self.quiet_table(false)? {
            return Ok(false);
        }
        Ok(self.conn.execute(
            "DELETE FROM people_quiet WHERE person = $1",
            &[person.into()],
        )? > 0)
    }
}
