//! The shared engine: a PostgreSQL database, for orchestrators on several machines.
//!
//! Same tables and same JSON as the SQLite file. Writes run SERIALIZABLE and are retried
//! from the start when they lose a race (so a read-then-write never loses an update);
//! reads run in a read-only REPEATABLE READ snapshot. Migrations run under a transaction-
//! scoped advisory lock, so processes starting together apply them once.

use std::cell::RefCell;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, GenericClient, IsolationLevel, NoTls, Row};

use super::{json_value, migrate, to_json, Access, EventFilter, Filter, Tx};
use crate::error::{Error, Result};
use crate::model::{normalize_timestamp, Event, NewQuestion, Question, Status};

/// Any number fixed for this program: the advisory lock migrations take.
const MIGRATION_LOCK: i64 = 0x7175_6573_7469_6f6e; // "question" in ASCII, near enough
const ATTEMPTS: u32 = 30;

pub struct Pg {
    client: Client,
}

/// The location as it may be printed: no password.
pub fn redacted(url: &str) -> String {
    match url.parse::<postgres::Config>() {
        Ok(config) => {
            let host = config
                .get_hosts()
                .first()
                .map(|h| match h {
                    postgres::config::Host::Tcp(name) => name.clone(),
                    postgres::config::Host::Unix(path) => path.display().to_string(),
                })
                .unwrap_or_else(|| "localhost".to_string());
            let port = config.get_ports().first().copied().unwrap_or(5432);
            let user = config.get_user().unwrap_or("");
            let db = config.get_dbname().unwrap_or(user);
            format!("postgres://{user}@{host}:{port}/{db}")
        }
        Err(_) => "the PostgreSQL location".to_string(),
    }
}

fn connect(url: &str) -> Result<Client> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| Error::usage(format!("the PostgreSQL location is not valid: {e}")))?;
    config
        .connect_timeout(Duration::from_secs(10))
        .application_name("questions");
    config.connect(NoTls).map_err(|e| {
        Error::db(format!(
            "cannot connect to PostgreSQL at {}: {}",
            redacted(url),
            cause(&e)
        ))
    })
}

/// The server's own words where there are some, else the client's.
fn cause(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        }
    }
}

fn pg_error(e: postgres::Error) -> Error {
    let transient = matches!(
        e.code(),
        Some(&SqlState::T_R_SERIALIZATION_FAILURE) | Some(&SqlState::T_R_DEADLOCK_DETECTED)
    );
    let mut err = Error::db(format!("database error: {}", cause(&e)));
    err.transient = transient;
    err
}

fn applied_version(client: &mut impl GenericClient) -> Result<i64> {
    let row = client
        .query_one(
            "SELECT to_regclass('refinery_schema_history') IS NOT NULL",
            &[],
        )
        .map_err(pg_error)?;
    if !row.get::<_, bool>(0) {
        return Ok(0);
    }
    let row = client
        .query_one("SELECT MAX(version) FROM refinery_schema_history", &[])
        .map_err(pg_error)?;
    Ok(row.get::<_, Option<i32>>(0).map(i64::from).unwrap_or(0))
}

impl Pg {
    /// `None`: the database holds no ledger yet and `access` only reads, so nothing is
    /// created; the caller reads an empty ledger instead.
    pub fn open(url: &str, access: Access) -> Result<Option<Pg>> {
        let mut client = connect(url)?;
        let latest = migrate::latest_version();
        let found = applied_version(&mut client)?;
        if found > latest {
            return Err(migrate::too_new_error(found));
        }
        if found == 0 && access == Access::Read {
            return Ok(None);
        }
        if found < latest {
            let mut tx = client.transaction().map_err(pg_error)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .map_err(pg_error)?;
            // Another process may have migrated while this one waited for the lock.
            let found = applied_version(&mut tx)?;
            if found > latest {
                return Err(migrate::too_new_error(found));
            }
            if found < latest {
                migrate::run_postgres(&mut tx)?;
            }
            tx.commit().map_err(pg_error)?;
        }
        Ok(Some(Pg { client }))
    }

    /// Drops the ledger's tables: `reset` for a database.
    pub fn drop_all(url: &str) -> Result<()> {
        let mut client = connect(url)?;
        client
            .batch_execute(
                "DROP TABLE IF EXISTS question_events, questions, refinery_schema_history CASCADE;
                 DROP FUNCTION IF EXISTS question_events_append_only();",
            )
            .map_err(pg_error)
    }

    pub fn schema_version(&mut self) -> Result<i64> {
        applied_version(&mut self.client)
    }

    pub fn read<T>(&mut self, mut f: impl FnMut(&dyn Tx) -> Result<T>) -> Result<T> {
        let tx = self
            .client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(pg_error)?;
        let wrapped = PgTx(RefCell::new(tx));
        let value = f(&wrapped)?;
        wrapped.0.into_inner().commit().map_err(pg_error)?;
        Ok(value)
    }

    pub fn write<T>(&mut self, mut f: impl FnMut(&dyn Tx) -> Result<T>) -> Result<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let tx = self
                .client
                .build_transaction()
                .isolation_level(IsolationLevel::Serializable)
                .start()
                .map_err(pg_error)?;
            let wrapped = PgTx(RefCell::new(tx));
            let outcome = f(&wrapped).and_then(|value| {
                wrapped.0.into_inner().commit().map_err(pg_error)?;
                Ok(value)
            });
            match outcome {
                Err(e) if e.transient && attempt < ATTEMPTS => {
                    // Lost a race with another writer: back off a little and start over.
                    std::thread::sleep(Duration::from_millis(u64::from(attempt) * 3));
                }
                other => return other,
            }
        }
    }
}

/// One transaction; `Tx` takes `&self`, the client wants `&mut`.
struct PgTx<'a>(RefCell<postgres::Transaction<'a>>);

impl PgTx<'_> {
    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        self.0.borrow_mut().query(sql, params).map_err(pg_error)
    }

    fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        self.0.borrow_mut().execute(sql, params).map_err(pg_error)
    }

    fn questions_where(
        &self,
        clause: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Question>> {
        let sql = format!("SELECT {COLUMNS} FROM questions {clause}");
        self.query(&sql, params)?
            .iter()
            .map(question_from_row)
            .collect()
    }
}

const COLUMNS: &str = "id, stage, group_name, question, proposed, required, status, answer, \
     created_at, answered_at, COALESCE(updated_at, answered_at, created_at), header, context, \
     options, multi_select, allow_freeform, selected, was_custom, skip_reason, source";

fn bad_row(e: postgres::Error) -> Error {
    Error::db(format!("a ledger row could not be read: {e}"))
}

fn question_from_row(row: &Row) -> Result<Question> {
    let text = |i: usize| row.try_get::<_, Option<String>>(i).map_err(bad_row);
    let list = |i: usize| -> Result<Option<String>> { text(i) };
    Ok(Question {
        id: row.try_get(0).map_err(bad_row)?,
        stage: text(1)?.unwrap_or_default(),
        group_name: text(2)?,
        question: text(3)?.unwrap_or_default(),
        proposed: text(4)?,
        required: row.try_get(5).map_err(bad_row)?,
        status: Status::from_stored(text(6)?.as_deref().unwrap_or("pending")),
        answer: text(7)?,
        created_at: normalize_timestamp(&text(8)?.unwrap_or_default()),
        answered_at: text(9)?.map(|t| normalize_timestamp(&t)),
        updated_at: normalize_timestamp(&text(10)?.unwrap_or_default()),
        header: text(11)?,
        context: text(12)?,
        options: list(13)?
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
        multi_select: row.try_get(14).map_err(bad_row)?,
        allow_freeform: row.try_get(15).map_err(bad_row)?,
        selected: list(16)?
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
        was_custom: row.try_get(17).map_err(bad_row)?,
        skip_reason: text(18)?,
        source: text(19)?.unwrap_or_else(|| "cli".to_string()),
    })
}

impl Tx for PgTx<'_> {
    fn question(&self, id: i64) -> Result<Option<Question>> {
        Ok(self
            .questions_where("WHERE id = $1", &[&id])?
            .into_iter()
            .next())
    }

    fn questions(&self, filter: &Filter) -> Result<Vec<Question>> {
        let mut clauses: Vec<String> = Vec::new();
        let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
        if let Some(stage) = &filter.stage {
            params.push(Box::new(stage.clone()));
            clauses.push(format!("TRIM(stage) = ${}", params.len()));
        }
        if let Some(status) = filter.status {
            params.push(Box::new(status.as_str().to_string()));
            clauses.push(format!("status = ${}", params.len()));
        }
        if let Some(group) = &filter.group {
            params.push(Box::new(group.clone()));
            clauses.push(format!("group_name = ${}", params.len()));
        }
        if let Some(ids) = &filter.ids {
            params.push(Box::new(ids.clone()));
            clauses.push(format!("id = ANY(${})", params.len()));
        }
        let mut clause = String::new();
        if !clauses.is_empty() {
            clause = format!("WHERE {}", clauses.join(" AND "));
        }
        clause.push_str(" ORDER BY id");
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        self.questions_where(&clause, &refs)
    }

    fn find_same(&self, stage: &str, group: Option<&str>, text: &str) -> Result<Option<Question>> {
        Ok(self
            .questions_where(
                "WHERE TRIM(stage) = $1 AND question = $2 AND group_name IS NOT DISTINCT FROM $3 \
                 ORDER BY id LIMIT 1",
                &[&stage, &text, &group],
            )?
            .into_iter()
            .next())
    }

    fn insert(&self, new: &NewQuestion, now: &str) -> Result<Question> {
        let options = to_json(&new.options)?;
        let rows = self.query(
            "INSERT INTO questions (stage, group_name, question, proposed, required, status, \
             created_at, updated_at, header, context, options, multi_select, allow_freeform, \
             selected, source) \
             VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6, $7, $8, $9, $10, $11, '[]', $12) \
             RETURNING id",
            &[
                &new.stage,
                &new.group_name,
                &new.question,
                &new.proposed,
                &new.required,
                &now,
                &new.header,
                &new.context,
                &options,
                &new.multi_select,
                &new.allow_freeform,
                &new.source,
            ],
        )?;
        let id: i64 = rows
            .first()
            .ok_or_else(|| Error::db("the insert returned no id"))?
            .try_get(0)
            .map_err(bad_row)?;
        self.question(id)?
            .ok_or_else(|| Error::db(format!("question {id} vanished right after it was written")))
    }

    fn update(&self, q: &Question) -> Result<()> {
        let options = to_json(&q.options)?;
        let selected = to_json(&q.selected)?;
        self.execute(
            "UPDATE questions SET group_name = $2, question = $3, proposed = $4, required = $5, \
             status = $6, answer = $7, answered_at = $8, updated_at = $9, header = $10, \
             context = $11, options = $12, multi_select = $13, allow_freeform = $14, \
             selected = $15, was_custom = $16, skip_reason = $17, source = $18 WHERE id = $1",
            &[
                &q.id,
                &q.group_name,
                &q.question,
                &q.proposed,
                &q.required,
                &q.status.as_str(),
                &q.answer,
                &q.answered_at,
                &q.updated_at,
                &q.header,
                &q.context,
                &options,
                &q.multi_select,
                &q.allow_freeform,
                &selected,
                &q.was_custom,
                &q.skip_reason,
                &q.source,
            ],
        )?;
        Ok(())
    }

    fn delete_stage(&self, stage: &str) -> Result<Vec<Question>> {
        let gone = self.questions_where("WHERE TRIM(stage) = $1 ORDER BY id", &[&stage])?;
        self.execute("DELETE FROM questions WHERE TRIM(stage) = $1", &[&stage])?;
        Ok(gone)
    }

    fn record(&self, event: &Event) -> Result<()> {
        let before = event.before.as_ref().map(to_json).transpose()?;
        let after = event.after.as_ref().map(to_json).transpose()?;
        self.execute(
            "INSERT INTO question_events (at, event, question_id, stage, before, after) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &event.at,
                &event.event,
                &event.question_id,
                &event.stage,
                &before,
                &after,
            ],
        )?;
        Ok(())
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        let sql = "SELECT at, event, question_id, stage, before, after FROM question_events";
        let rows = match filter {
            EventFilter::Question(id) => {
                self.query(&format!("{sql} WHERE question_id = $1 ORDER BY id"), &[id])?
            }
            EventFilter::Stage(stage) => self.query(
                &format!("{sql} WHERE TRIM(stage) = $1 ORDER BY id"),
                &[stage],
            )?,
        };
        rows.iter()
            .map(|row| {
                let text = |i: usize| row.try_get::<_, Option<String>>(i).map_err(bad_row);
                Ok(Event {
                    at: text(0)?.unwrap_or_default(),
                    event: text(1)?.unwrap_or_default(),
                    question_id: row.try_get(2).map_err(bad_row)?,
                    stage: text(3)?.unwrap_or_default(),
                    before: json_value(text(4)?),
                    after: json_value(text(5)?),
                })
            })
            .collect()
    }

    fn tallies(&self) -> Result<Vec<(String, String, bool)>> {
        self.query(
            "SELECT TRIM(stage), status, required FROM questions ORDER BY id",
            &[],
        )?
        .iter()
        .map(|row| {
            let text = |i: usize| row.try_get::<_, Option<String>>(i).map_err(bad_row);
            let required: Option<bool> = row.try_get(2).map_err(bad_row)?;
            Ok((
                text(0)?.unwrap_or_default(),
                text(1)?.unwrap_or_default(),
                required.unwrap_or(true),
            ))
        })
        .collect()
    }
}
