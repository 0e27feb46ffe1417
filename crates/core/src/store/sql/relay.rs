//! The relay's rows (§14): people's channel identities, pairing codes, the cards put to
//! people, the provider events acted on, and in `relay_state` each channel's read
//! position and lease and the key that signs buttons. Only `ops::relay` and `ops::people` call these, inside their
//! own transactions.

use super::{to_json, Param, Row, Tx};
use crate::error::{Error, Result};
use crate::model::{Actor, EventKind};

/// One card put to one person on one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: i64,
    pub question_id: i64,
    /// The question's fingerprint when the card was made: a card answers that question only.
    pub fingerprint: String,
    pub person: String,
    pub channel: String,
    /// The channel identity it was sent to (`telegram:<id>`).
    pub identity: String,
    /// The provider's reference to the message (Telegram: `<chat id>:<message id>`); none
    /// until it was sent.
    pub message_ref: Option<String>,
    /// `sending`, `open` or `closed`.
    pub state: String,
}

const DELIVERY: &[&str] = &[
    "id",
    "question_id",
    "fingerprint",
    "person",
    "channel",
    "identity",
    "message_ref",
    "state",
];

/// A channel identity and the person it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Link {
    pub person: String,
    pub identity: String,
    pub linked_at: String,
}

/// The relay's tables in SQLite. SQLite parses every table of a ledger's schema each time
/// any command opens it, and these five cost `check` about 13 % more instructions, so a
/// ledger gets them from the first write that needs them (linking a person, a pairing
/// code, a relay's start), never from a migration; a ledger without them reads as one
/// with them empty. PostgreSQL makes them in its migration V10, the same tables.
const SQLITE_TABLES: [&str; 5] = [
    "CREATE TABLE IF NOT EXISTS people_links (
  identity TEXT PRIMARY KEY,
  person TEXT NOT NULL,
  linked_at TEXT NOT NULL
) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS relay_pairings (
  code_hash TEXT PRIMARY KEY,
  channel TEXT NOT NULL,
  person TEXT NOT NULL,
  expires_at TEXT NOT NULL
) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS relay_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  question_id INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  person TEXT NOT NULL,
  channel TEXT NOT NULL,
  identity TEXT NOT NULL,
  message_ref TEXT,
  prompt_ref TEXT,
  state TEXT NOT NULL,
  created_at TEXT NOT NULL,
  closed_at TEXT,
  UNIQUE (channel, identity, question_id, fingerprint)
)",
    "CREATE TABLE IF NOT EXISTS relay_events (
  channel TEXT NOT NULL,
  event_id TEXT NOT NULL,
  question_id INTEGER NOT NULL,
  person TEXT,
  outcome TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (channel, event_id)
) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS relay_state (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  until TEXT,
  at TEXT NOT NULL
) WITHOUT ROWID",
];

impl Tx<'_> {
    /// Whether the ledger has the relay's tables; with `make`, in a write, makes them
    /// when it has not (see `SQLITE_TABLES`).
    fn relay_tables(&self, make: bool) -> Result<bool> {
        self.lazy_tables("relay_state", &SQLITE_TABLES, make)
    }

    fn deliveries_where(&self, clause: &str, params: &[Param]) -> Result<Vec<Delivery>> {
        if !self.relay_tables(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            &format!(
                "SELECT {} FROM relay_deliveries {clause}",
                DELIVERY.join(", ")
            ),
            params,
        )?;
        rows.each(
            |r| {
                Ok(Delivery {
                    id: r.take("id").int()?,
                    question_id: r.take("question_id").int()?,
                    fingerprint: r.text("fingerprint").unwrap_or_default(),
                    person: r.text("person").unwrap_or_default(),
                    channel: r.text("channel").unwrap_or_default(),
                    identity: r.text("identity").unwrap_or_default(),
                    message_ref: r.text("message_ref"),
                    state: r.text("state").unwrap_or_default(),
                })
            },
            DELIVERY,
        )
    }

    /// The person a channel identity is linked to.
    pub(crate) fn person_of(&self, identity: &str) -> Result<Option<String>> {
        if !self.relay_tables(false)? {
            return Ok(None);
        }
        let rows = self.conn.query(
            "SELECT person FROM people_links WHERE identity = $1",
            &[identity.into()],
        )?;
        Ok(rows
            .each(|r| Ok(r.text("person")), &["person"])?
            .pop()
            .flatten())
    }

    /// Every link, by person then identity.
    pub(crate) fn links(&self) -> Result<Vec<Link>> {
        if !self.relay_tables(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            "SELECT person, identity, linked_at FROM people_links ORDER BY person, identity",
            &[],
        )?;
        rows.each(
            |r| {
                Ok(Link {
                    person: r.text("person").unwrap_or_default(),
                    identity: r.text("identity").unwrap_or_default(),
                    linked_at: r.text("linked_at").unwrap_or_default(),
                })
            },
            &["person", "identity", "linked_at"],
        )
    }

    pub(crate) fn insert_link(&self, identity: &str, person: &str, now: &str) -> Result<()> {
        self.relay_tables(true)?;
        self.conn.execute(
            "INSERT INTO people_links (identity, person, linked_at) VALUES ($1, $2, $3)",
            &[identity.into(), person.into(), now.into()],
        )?;
        Ok(())
    }

    /// Removes a link; false when there was none.
    pub(crate) fn delete_link(&self, identity: &str, person: &str) -> Result<bool> {
        if !self.relay_tables(false)? {
            return Ok(false);
        }
        Ok(self.conn.execute(
            "DELETE FROM people_links WHERE identity = $1 AND person = $2",
            &[identity.into(), person.into()],
        )? > 0)
    }

    /// Records a change of people's links (or a pairing) as a `people` event of no
    /// question, as a group change is.
    pub(crate) fn people_event(&self, actor: &Actor, detail: &serde_json::Value) -> Result<()> {
        self.insert_event(&Row {
            kind: EventKind::People,
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

    /// Records something refused that names no question the ledger still holds (a
    /// stranger's message, a forged button): a `refused` event of question `question_id`
    /// (0 for none), in `stage` when it was about one (`history --stage` shows it).
    pub(crate) fn refused_event(
        &self,
        question_id: i64,
        stage: Option<&str>,
        actor: &Actor,
        detail: &serde_json::Value,
    ) -> Result<()> {
        self.insert_event(&Row {
            kind: EventKind::Refused,
            at: &actor.at,
            question_id,
            stage,
            by: actor.by.as_deref(),
            channel: Some(actor.channel),
            before: None,
            after: None,
            detail: Some(to_json(detail)?),
        })
    }

    pub(crate) fn insert_pairing(
        &self,
        code_hash: &str,
        channel: &str,
        person: &str,
        expires_at: &str,
    ) -> Result<()> {
        self.relay_tables(true)?;
        self.conn.execute(
            "INSERT INTO relay_pairings (code_hash, channel, person, expires_at) \
             VALUES ($1, $2, $3, $4)",
            &[
                code_hash.into(),
                channel.into(),
                person.into(),
                expires_at.into(),
            ],
        )?;
        Ok(())
    }

    /// The person a pairing code names, when it is for `channel` and still valid at
    /// `now` (it stays until `spend_pairing`). Expired codes go.
    pub(crate) fn pairing(
        &self,
        code_hash: &str,
        channel: &str,
        now: &str,
    ) -> Result<Option<String>> {
        self.relay_tables(true)?;
        let rows = self.conn.query(
            "SELECT person, expires_at, channel FROM relay_pairings WHERE code_hash = $1",
            &[code_hash.into()],
        )?;
        let found = rows
            .each(
                |r| {
                    Ok((
                        r.text("person").unwrap_or_default(),
                        r.text("expires_at").unwrap_or_default(),
                        r.text("channel").unwrap_or_default(),
                    ))
                },
                &["person", "expires_at", "channel"],
            )?
            .pop();
        self.conn.execute(
            "DELETE FROM relay_pairings WHERE expires_at <= $1",
            &[now.into()],
        )?;
        Ok(found
            .filter(|(_, until, ch)| until.as_str() > now && ch == channel)
            .map(|(person, _, _)| person))
    }

    /// A pairing code used: it links nobody again.
    pub(crate) fn spend_pairing(&self, code_hash: &str) -> Result<()> {
        self.relay_tables(true)?;
        self.conn.execute(
            "DELETE FROM relay_pairings WHERE code_hash = $1",
            &[code_hash.into()],
        )?;
        Ok(())
    }

    /// The key named `name`, hex.
    pub(crate) fn relay_key(&self, name: &str) -> Result<Option<String>> {
        if !self.relay_tables(false)? {
            return Ok(None);
        }
        let rows = self.conn.query(
            "SELECT value AS secret FROM relay_state WHERE name = $1",
            &[format!("key:{name}").as_str().into()],
        )?;
        Ok(rows
            .each(|r| Ok(r.text("secret")), &["secret"])?
            .pop()
            .flatten())
    }

    pub(crate) fn insert_relay_key(&self, name: &str, secret: &str, now: &str) -> Result<()> {
        self.relay_tables(true)?;
        self.conn.execute(
            "INSERT INTO relay_state (name, value, at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO NOTHING",
            &[
                format!("key:{name}").as_str().into(),
                secret.into(),
                now.into(),
            ],
        )?;
        Ok(())
    }

    /// Makes a delivery row in state `sending` (or finds the one there is for the same
    /// card): its id goes into the card's buttons before the card is sent.
    pub(crate) fn reserve_delivery(&self, d: &Delivery, now: &str) -> Result<Delivery> {
        self.relay_tables(true)?;
        self.conn.execute(
            "INSERT INTO relay_deliveries (question_id, fingerprint, person, channel, \
             identity, state, created_at) VALUES ($1, $2, $3, $4, $5, 'sending', $6) \
             ON CONFLICT (channel, identity, question_id, fingerprint) DO NOTHING",
            &[
                d.question_id.into(),
                d.fingerprint.as_str().into(),
                d.person.as_str().into(),
                d.channel.as_str().into(),
                d.identity.as_str().into(),
                now.into(),
            ],
        )?;
        self.deliveries_where(
            "WHERE channel = $1 AND identity = $2 AND question_id = $3 AND fingerprint = $4",
            &[
                d.channel.as_str().into(),
                d.identity.as_str().into(),
                d.question_id.into(),
                d.fingerprint.as_str().into(),
            ],
        )?
        .pop()
        .ok_or_else(|| Error::db("a delivery was not written"))
    }

    pub(crate) fn delivery(&self, id: i64) -> Result<Option<Delivery>> {
        Ok(self.deliveries_where("WHERE id = $1", &[id.into()])?.pop())
    }

    pub(crate) fn delivery_by_ref(
        &self,
        channel: &str,
        message_ref: &str,
    ) -> Result<Option<Delivery>> {
        Ok(self
            .deliveries_where(
                "WHERE channel = $1 AND (message_ref = $2 OR prompt_ref = $2)",
                &[channel.into(), message_ref.into()],
            )?
            .pop())
    }

    /// A channel's deliveries in one state, oldest first.
    pub(crate) fn deliveries_in(&self, channel: &str, state: &str) -> Result<Vec<Delivery>> {
        self.deliveries_where(
            "WHERE channel = $1 AND state = $2 ORDER BY id",
            &[channel.into(), state.into()],
        )
    }

    /// Every delivery of a channel (any state): what has been put to whom.
    pub(crate) fn deliveries_of(&self, channel: &str) -> Result<Vec<Delivery>> {
        self.deliveries_where("WHERE channel = $1 ORDER BY id", &[channel.into()])
    }

    pub(crate) fn set_delivery(
        &self,
        id: i64,
        state: &str,
        message_ref: Option<&str>,
        now: &str,
    ) -> Result<()> {
        self.relay_tables(true)?;
        self.conn.execute(
            "UPDATE relay_deliveries SET state = $1, \
             message_ref = COALESCE($2, message_ref), \
             closed_at = CASE WHEN $1 = 'closed' THEN $3 ELSE closed_at END WHERE id = $4",
            &[state.into(), message_ref.into(), now.into(), id.into()],
        )?;
        Ok(())
    }

    /// The prompt for a typed answer sent for a card: a reply to it answers the card.
    pub(crate) fn set_prompt(&self, id: i64, prompt_ref: &str) -> Result<()> {
        self.relay_tables(true)?;
        self.conn.execute(
            "UPDATE relay_deliveries SET prompt_ref = $1 WHERE id = $2",
            &[prompt_ref.into(), id.into()],
        )?;
        Ok(())
    }

    /// What the relay did with a provider event, if it saw it before: its question, the
    /// person and the outcome's words.
    pub(crate) fn relay_event(
        &self,
        channel: &str,
        event_id: &str,
    ) -> Result<Option<(i64, Option<String>, String)>> {
        if !self.relay_tables(false)? {
            return Ok(None);
        }
        let rows = self.conn.query(
            "SELECT question_id, person, outcome FROM relay_events \
             WHERE channel = $1 AND event_id = $2",
            &[channel.into(), event_id.into()],
        )?;
        Ok(rows
            .each(
                |r| {
                    Ok((
                        r.take("question_id").int()?,
                        r.text("person"),
                        r.text("outcome").unwrap_or_default(),
                    ))
                },
                &["question_id", "person", "outcome"],
            )?
            .pop())
    }

    /// Keeps a provider event once: a second insert of the same key fails the
    /// transaction, so the caller reads `relay_event` first.
    pub(crate) fn insert_relay_event(
        &self,
        channel: &str,
        event_id: &str,
        question_id: i64,
        person: Option<&str>,
        outcome: &str,
        now: &str,
    ) -> Result<()> {
        self.relay_tables(true)?;
        self.conn.execute(
            "INSERT INTO relay_events (channel, event_id, question_id, person, outcome, at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                channel.into(),
                event_id.into(),
                question_id.into(),
                person.into(),
                outcome.into(),
                now.into(),
            ],
        )?;
        Ok(())
    }

    pub(crate) fn relay_position(&self, channel: &str) -> Result<Option<String>> {
        if !self.relay_tables(false)? {
            return Ok(None);
        }
        let rows = self.conn.query(
            "SELECT value AS position FROM relay_state WHERE name = $1",
            &[format!("position:{channel}").as_str().into()],
        )?;
        Ok(rows
            .each(|r| Ok(r.text("position")), &["position"])?
            .pop()
            .flatten())
    }

    pub(crate) fn set_relay_position(
        &self,
        channel: &str,
        position: &str,
        now: &str,
    ) -> Result<()> {
        self.relay_tables(true)?;
        self.conn.execute(
            "INSERT INTO relay_state (name, value, at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, at = excluded.at",
            &[
                format!("position:{channel}").as_str().into(),
                position.into(),
                now.into(),
            ],
        )?;
        Ok(())
    }

    /// Takes or renews the lease of `channel` for `holder` until `until`, when nobody else
    /// holds it past `now` (or its holder is `gone`, known to have stopped); else the
    /// holder and until when.
    pub(crate) fn take_lease(
        &self,
        channel: &str,
        holder: &str,
        until: &str,
        now: &str,
        gone: Option<&str>,
    ) -> Result<Option<(String, String)>> {
        self.relay_tables(true)?;
        let rows = self.conn.query(
            "SELECT value AS holder, until FROM relay_state WHERE name = $1",
            &[format!("lease:{channel}").as_str().into()],
        )?;
        let current = rows
            .each(
                |r| {
                    Ok((
                        r.text("holder").unwrap_or_default(),
                        r.text("until").unwrap_or_default(),
                    ))
                },
                &["holder", "until"],
            )?
            .pop();
        if let Some((other, their_until)) = current {
            if other != holder && their_until.as_str() > now && gone != Some(other.as_str()) {
                return Ok(Some((other, their_until)));
            }
        }
        self.conn.execute(
            "INSERT INTO relay_state (name, value, until, at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, until = excluded.until, \
             at = excluded.at",
            &[
                format!("lease:{channel}").as_str().into(),
                holder.into(),
                until.into(),
                now.into(),
            ],
        )?;
        Ok(None)
    }

    /// Lets a lease go (a relay that stops), when `holder` holds it.
    pub(crate) fn drop_lease(&self, channel: &str, holder: &str) -> Result<()> {
        if !self.relay_tables(false)? {
            return Ok(());
        }
        self.conn.execute(
            "DELETE FROM relay_state WHERE name = $1 AND value = $2",
            &[format!("lease:{channel}").as_str().into(), holder.into()],
        )?;
        Ok(())
    }
}
