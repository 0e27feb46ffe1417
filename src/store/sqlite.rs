//! The embedded engine: one SQLite file in WAL mode.
//!
//! Durability and concurrency come from how the file is opened: `synchronous=FULL` (a
//! write acknowledged with exit 0 is on disk), a busy handler that waits out other writers
//! instead of failing, `BEGIN IMMEDIATE` for every read-then-write, and plain deferred
//! transactions for reads, which in WAL mode never wait for a writer.

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, params_from_iter, Connection, OpenFlags, Row, TransactionBehavior};

use super::{json_value, migrate, to_json, Access, EventFilter, Filter, Tx};
use crate::error::{Error, Result};
use crate::model::{normalize_timestamp, Event, NewQuestion, Question, Status};

pub struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    /// The ledger file at `path`; `make_folder` creates its folder on the first write.
    pub fn open(path: &Path, make_folder: bool, access: Access) -> Result<Sqlite> {
        // The ledger is opened for writing: never through a symbolic link, which could
        // point it at a file that is not ours to write.
        if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::io(format!(
                "the ledger path {} is a symbolic link; give the path of the file itself",
                path.display()
            )));
        }
        let conn = match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                return Err(Error::io(format!(
                    "the ledger path {} is a directory; give the path of a ledger file",
                    path.display()
                )))
            }
            Ok(_) => open_file(path)?,
            Err(e) if e.kind() == ErrorKind::NotFound => match access {
                // Nothing to read: an empty ledger in memory answers exactly as a new file would.
                Access::Read => return Sqlite::empty(),
                Access::Write => {
                    create_file(path, make_folder)?;
                    open_file(path)?
                }
            },
            Err(e) => {
                return Err(Error::io(format!(
                    "cannot read the ledger path {}: {e}",
                    path.display()
                )))
            }
        };
        let mut engine = Sqlite { conn };
        migrate::ensure_current(&mut engine.conn).map_err(|e| in_context(e, path))?;
        Ok(engine)
    }

    /// An empty ledger in memory: what reading a ledger that does not exist yet sees.
    pub fn empty() -> Result<Sqlite> {
        let mut conn = Connection::open_in_memory()?;
        migrate::ensure_current(&mut conn)?;
        Ok(Sqlite { conn })
    }

    /// False for the in-memory stand-in of `empty`.
    pub fn on_disk(&self) -> bool {
        self.conn.path().is_some_and(|p| !p.is_empty())
    }

    pub fn schema_version(&self) -> Result<i64> {
        migrate::applied_version(&self.conn)
    }

    pub fn read<T>(&mut self, mut f: impl FnMut(&dyn Tx) -> Result<T>) -> Result<T> {
        let tx = self.conn.transaction()?;
        let value = f(&*tx)?;
        tx.commit()?;
        Ok(value)
    }

    pub fn write<T>(&mut self, mut f: impl FnMut(&dyn Tx) -> Result<T>) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = f(&*tx)?;
        tx.commit()?;
        Ok(value)
    }
}

/// Creates the ledger file 0600 (and the default `.questions/` folder, 0700). Losing a race to
/// another process creating it at the same moment is fine.
fn create_file(path: &Path, make_folder: bool) -> Result<()> {
    if make_folder {
        if let Some(folder) = path.parent() {
            super::make_default_folder(folder)?;
        }
    }
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(Error::io(format!(
            "cannot create the ledger {}: its folder does not exist; create it first or choose another --db",
            path.display()
        ))),
        Err(e) => Err(Error::io(format!(
            "cannot create the ledger {}: {e}",
            path.display()
        ))),
    }
}

fn open_file(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let mut conn =
        Connection::open_with_flags(path, flags).map_err(|e| in_context(e.into(), path))?;
    configure(&mut conn).map_err(|e| in_context(e, path))?;
    Ok(conn)
}

fn configure(conn: &mut Connection) -> Result<()> {
    conn.busy_handler(Some(wait_for_lock))?;
    // Reads page 1 first: a file that is not a database fails here, before anything writes.
    conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |_| Ok(()))?;
    // A ledger from a newer questions is refused before anything, even the journal mode, changes.
    migrate::refuse_too_new(conn)?;
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        set_wal(conn)?;
    }
    conn.execute_batch("PRAGMA synchronous = FULL;")?;
    Ok(())
}

/// Switching to WAL needs a moment alone with the file; a new ledger opened by many
/// processes at once may have to wait for it.
fn set_wal(conn: &Connection) -> Result<()> {
    let mut tries = 0;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e) if is_busy(&e) && tries < 500 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// SQLite's own back-off sleeps up to 100 ms a try, leaving the lock idle while writers
/// that hold it for a millisecond queue up. Short, varied sleeps keep it busy; about
/// 40 s of waiting in all before a caller is told the ledger is locked.
fn wait_for_lock(attempt: i32) -> bool {
    const ATTEMPTS: i32 = 32_000;
    if attempt >= ATTEMPTS {
        return false;
    }
    let spread = (u64::from(std::process::id()).wrapping_mul(2_654_435_761)
        ^ (attempt as u64).wrapping_mul(40_503))
        % 1_500;
    std::thread::sleep(Duration::from_micros(500 + spread));
    true
}

fn in_context(err: Error, path: &Path) -> Error {
    Error::new(err.code, format!("{} ({})", err.message, path.display()))
}

const COLUMNS: &str = "id, stage, group_name, question, proposed, required, status, answer, \
     created_at, answered_at, COALESCE(updated_at, answered_at, created_at), header, context, \
     options, multi_select, allow_freeform, selected, was_custom, skip_reason, source";

/// Any stored value as text: rows written by other tools may hold numbers where we keep text.
fn text(row: &Row, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Null => None,
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(match std::str::from_utf8(t) {
            Ok(s) => s.to_owned(),
            Err(_) => String::from_utf8_lossy(t).into_owned(),
        }),
    })
}

fn flag(row: &Row, i: usize, default: bool) -> rusqlite::Result<bool> {
    Ok(match row.get_ref(i)? {
        ValueRef::Null => default,
        ValueRef::Integer(n) => n != 0,
        ValueRef::Real(f) => f != 0.0,
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            crate::model::parse_bool(&String::from_utf8_lossy(t)).unwrap_or(default)
        }
    })
}

fn json_list<T: serde::de::DeserializeOwned>(row: &Row, i: usize) -> rusqlite::Result<Vec<T>> {
    Ok(text(row, i)?
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default())
}

fn question_from_row(row: &Row) -> rusqlite::Result<Question> {
    let was_custom = match row.get_ref(17)? {
        ValueRef::Null => None,
        _ => Some(flag(row, 17, false)?),
    };
    Ok(Question {
        id: row.get(0)?,
        stage: text(row, 1)?.unwrap_or_default(),
        group_name: text(row, 2)?,
        question: text(row, 3)?.unwrap_or_default(),
        proposed: text(row, 4)?,
        required: flag(row, 5, true)?,
        status: Status::from_stored(text(row, 6)?.as_deref().unwrap_or("pending")),
        answer: text(row, 7)?,
        created_at: normalize_timestamp(&text(row, 8)?.unwrap_or_default()),
        answered_at: text(row, 9)?.map(|t| normalize_timestamp(&t)),
        updated_at: normalize_timestamp(&text(row, 10)?.unwrap_or_default()),
        header: text(row, 11)?,
        context: text(row, 12)?,
        options: json_list(row, 13)?,
        multi_select: flag(row, 14, false)?,
        allow_freeform: flag(row, 15, true)?,
        selected: json_list(row, 16)?,
        was_custom,
        skip_reason: text(row, 18)?,
        source: text(row, 19)?.unwrap_or_else(|| "cli".to_string()),
    })
}

impl Tx for Connection {
    fn question(&self, id: i64) -> Result<Option<Question>> {
        let mut stmt =
            self.prepare_cached(&format!("SELECT {COLUMNS} FROM questions WHERE id = ?1"))?;
        let mut rows = stmt.query_map([id], question_from_row)?;
        Ok(rows.next().transpose()?)
    }

    fn questions(&self, filter: &Filter) -> Result<Vec<Question>> {
        let mut clauses: Vec<String> = Vec::new();
        let mut values: Vec<Value> = Vec::new();
        if let Some(stage) = &filter.stage {
            values.push(Value::Text(stage.clone()));
            clauses.push(format!("TRIM(stage) = ?{}", values.len()));
        }
        if let Some(status) = filter.status {
            values.push(Value::Text(status.as_str().to_string()));
            clauses.push(format!("status = ?{}", values.len()));
        }
        if let Some(group) = &filter.group {
            values.push(Value::Text(group.clone()));
            clauses.push(format!("group_name = ?{}", values.len()));
        }
        if let Some(ids) = &filter.ids {
            let mut marks = Vec::with_capacity(ids.len());
            for id in ids {
                values.push(Value::Integer(*id));
                marks.push(format!("?{}", values.len()));
            }
            clauses.push(format!("id IN ({})", marks.join(", ")));
        }
        let mut sql = format!("SELECT {COLUMNS} FROM questions");
        if !clauses.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&clauses.join(" AND "));
        }
        sql.push_str(" ORDER BY id");
        let mut stmt = self.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(values), question_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn find_same(&self, stage: &str, group: Option<&str>, text: &str) -> Result<Option<Question>> {
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM questions \
             WHERE TRIM(stage) = ?1 AND question = ?2 AND group_name IS ?3 ORDER BY id LIMIT 1"
        ))?;
        let mut rows = stmt.query_map(params![stage, text, group], question_from_row)?;
        Ok(rows.next().transpose()?)
    }

    fn insert(&self, new: &NewQuestion, now: &str) -> Result<Question> {
        let mut stmt = self.prepare_cached(
            "INSERT INTO questions (stage, group_name, question, proposed, required, status, \
             created_at, updated_at, header, context, options, multi_select, allow_freeform, \
             selected, source) \
             VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6, ?7, ?8, ?9, ?10, ?11, '[]', ?12)",
        )?;
        stmt.execute(params![
            new.stage,
            new.group_name,
            new.question,
            new.proposed,
            new.required,
            now,
            new.header,
            new.context,
            to_json(&new.options)?,
            new.multi_select,
            new.allow_freeform,
            new.source,
        ])?;
        let id = self.last_insert_rowid();
        self.question(id)?
            .ok_or_else(|| Error::db(format!("question {id} vanished right after it was written")))
    }

    fn update(&self, q: &Question) -> Result<()> {
        let mut stmt = self.prepare_cached(
            "UPDATE questions SET group_name = ?2, question = ?3, proposed = ?4, required = ?5, \
             status = ?6, answer = ?7, answered_at = ?8, updated_at = ?9, header = ?10, \
             context = ?11, options = ?12, multi_select = ?13, allow_freeform = ?14, \
             selected = ?15, was_custom = ?16, skip_reason = ?17, source = ?18 WHERE id = ?1",
        )?;
        stmt.execute(params![
            q.id,
            q.group_name,
            q.question,
            q.proposed,
            q.required,
            q.status.as_str(),
            q.answer,
            q.answered_at,
            q.updated_at,
            q.header,
            q.context,
            to_json(&q.options)?,
            q.multi_select,
            q.allow_freeform,
            to_json(&q.selected)?,
            q.was_custom,
            q.skip_reason,
            q.source,
        ])?;
        Ok(())
    }

    fn delete_stage(&self, stage: &str) -> Result<Vec<Question>> {
        let gone = self.questions(&Filter {
            stage: Some(stage.to_string()),
            ..Filter::default()
        })?;
        self.prepare_cached("DELETE FROM questions WHERE TRIM(stage) = ?1")?
            .execute([stage])?;
        Ok(gone)
    }

    fn record(&self, event: &Event) -> Result<()> {
        let mut stmt = self.prepare_cached(
            "INSERT INTO question_events (at, event, question_id, stage, before, after) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        let before = event.before.as_ref().map(to_json).transpose()?;
        let after = event.after.as_ref().map(to_json).transpose()?;
        stmt.execute(params![
            event.at,
            event.event,
            event.question_id,
            event.stage,
            before,
            after
        ])?;
        Ok(())
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        let (clause, value) = match filter {
            EventFilter::Question(id) => ("question_id = ?1", Value::Integer(*id)),
            EventFilter::Stage(stage) => ("TRIM(stage) = ?1", Value::Text(stage.clone())),
        };
        let mut stmt = self.prepare(&format!(
            "SELECT at, event, question_id, stage, before, after FROM question_events \
             WHERE {clause} ORDER BY id"
        ))?;
        let rows = stmt.query_map([value], |row| {
            Ok(Event {
                at: text(row, 0)?.unwrap_or_default(),
                event: text(row, 1)?.unwrap_or_default(),
                question_id: row.get(2)?,
                stage: text(row, 3)?.unwrap_or_default(),
                before: json_value(text(row, 4)?),
                after: json_value(text(row, 5)?),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn tallies(&self) -> Result<Vec<(String, String, bool)>> {
        let mut stmt =
            self.prepare("SELECT TRIM(stage), status, required FROM questions ORDER BY id")?;
        let rows = stmt.query_map([], |row| {
            Ok((
                text(row, 0)?.unwrap_or_default(),
                text(row, 1)?.unwrap_or_default(),
                flag(row, 2, true)?,
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::QuestionOption;

    fn memory() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate::ensure_current(&mut conn).unwrap();
        conn
    }

    fn new(stage: &str, group: Option<&str>, text: &str) -> NewQuestion {
        NewQuestion {
            stage: stage.into(),
            group_name: group.map(Into::into),
            question: text.into(),
            proposed: Some("guess".into()),
            required: true,
            header: None,
            context: None,
            options: vec![QuestionOption {
                label: "A".into(),
                description: Some("first".into()),
                recommended: true,
            }],
            multi_select: false,
            allow_freeform: true,
            source: "cli".into(),
        }
    }

    const T: &str = "2026-11-21T23:47:04.692Z";

    #[test]
    fn insert_and_read_back_every_field() {
        let db = memory();
        let q = db.insert(&new("s", Some("G"), "Q?"), T).unwrap();
        assert_eq!(q.id, 1);
        assert_eq!(q.stage, "s");
        assert_eq!(q.group_name.as_deref(), Some("G"));
        assert_eq!(q.options[0].description.as_deref(), Some("first"));
        assert!(q.options[0].recommended);
        assert_eq!((q.created_at.as_str(), q.updated_at.as_str()), (T, T));
        assert_eq!(db.question(1).unwrap(), Some(q));
        assert_eq!(db.question(2).unwrap(), None);
    }

    #[test]
    fn find_same_tells_no_group_from_a_group() {
        let db = memory();
        db.insert(&new("s", None, "Q?"), T).unwrap();
        db.insert(&new("s", Some("G"), "Q?"), T).unwrap();
        assert_eq!(db.find_same("s", None, "Q?").unwrap().unwrap().id, 1);
        assert_eq!(db.find_same("s", Some("G"), "Q?").unwrap().unwrap().id, 2);
        assert!(db.find_same("s", Some("H"), "Q?").unwrap().is_none());
        assert!(db.find_same("t", None, "Q?").unwrap().is_none());
    }

    #[test]
    fn update_writes_every_mutable_field() {
        let db = memory();
        let mut q = db.insert(&new("s", None, "Q?"), T).unwrap();
        q.status = Status::Answered;
        q.answer = Some("A".into());
        q.selected = vec!["A".into()];
        q.was_custom = Some(false);
        q.answered_at = Some("2026-11-22T00:00:00.000Z".into());
        q.updated_at = "2026-11-22T00:00:00.000Z".into();
        db.update(&q).unwrap();
        assert_eq!(db.question(q.id).unwrap(), Some(q));
    }

    #[test]
    fn filters_narrow_together() {
        let db = memory();
        for (stage, group) in [("a", Some("x")), ("a", None), ("b", Some("x"))] {
            db.insert(&new(stage, group, "Q?"), T).unwrap();
        }
        let ids = |f: Filter| -> Vec<i64> {
            db.questions(&f)
                .unwrap()
                .into_iter()
                .map(|q| q.id)
                .collect()
        };
        assert_eq!(ids(Filter::default()), vec![1, 2, 3]);
        assert_eq!(
            ids(Filter {
                stage: Some("a".into()),
                ..Filter::default()
            }),
            vec![1, 2]
        );
        assert_eq!(
            ids(Filter {
                group: Some("x".into()),
                ..Filter::default()
            }),
            vec![1, 3]
        );
        assert_eq!(
            ids(Filter {
                ids: Some(vec![3, 1, 9]),
                stage: Some("b".into()),
                ..Filter::default()
            }),
            vec![3]
        );
        assert_eq!(
            ids(Filter {
                status: Some(Status::Answered),
                ..Filter::default()
            }),
            Vec::<i64>::new()
        );
    }

    #[test]
    fn delete_stage_returns_the_rows_and_events_keep_them() {
        let db = memory();
        let q = db.insert(&new("s", None, "Q?"), T).unwrap();
        db.insert(&new("t", None, "Q?"), T).unwrap();
        let gone = db.delete_stage("s").unwrap();
        assert_eq!(gone, vec![q.clone()]);
        db.record(&Event::cleared(T, &q)).unwrap();
        let events = db.events(&EventFilter::Stage("s".into())).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event, "cleared");
        assert_eq!(events[0].before.as_ref().unwrap()["question"], "Q?");
        assert_eq!(db.questions(&Filter::default()).unwrap().len(), 1);
    }

    #[test]
    fn odd_values_written_by_other_tools_still_read() {
        let db = memory();
        db.execute_batch(
            "INSERT INTO questions (stage, question, required, status, answer, created_at, options)
             VALUES ('s', 'Q?', 'false', 'answered', 42, '2026-01-02 03:04:05', 'not json');
             INSERT INTO questions (stage, question, required, status, created_at)
             VALUES ('s', 'R?', 1, 'weird', '2026-01-02T03:04:05Z');",
        )
        .unwrap();
        let q = db.question(1).unwrap().unwrap();
        assert!(!q.required);
        assert_eq!(q.answer.as_deref(), Some("42"));
        assert_eq!(q.created_at, "2026-01-02T03:04:05.000Z");
        assert!(q.options.is_empty());
        // A status nobody knows holds the gate rather than opening it.
        assert!(db.question(2).unwrap().unwrap().blocks_gate());
    }
}
