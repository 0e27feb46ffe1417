//! Where the ledger lives and everything that touches it. Commands see only `Store` and
//! the `Tx` trait; the SQL and connection handling of each engine stay in this folder.

mod location;
mod migrate;
mod postgres;
mod sqlite;

pub use location::{make_default_folder, refuse_non_ledger, FoundBy, Location};

use crate::error::Result;
use crate::model::{Event, NewQuestion, Question, Status};

/// What a command needs of the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only: a ledger that does not exist reads as empty and is not created.
    Read,
    /// Writes: the ledger (and its default folder) is created when missing.
    Write,
}

/// Which questions a query returns; every field narrows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub stage: Option<String>,
    pub status: Option<Status>,
    pub group: Option<String>,
    pub ids: Option<Vec<i64>>,
}

/// Which events `history` returns.
#[derive(Debug, Clone)]
pub enum EventFilter {
    Question(i64),
    Stage(String),
}

/// The operations a command composes inside one transaction.
pub trait Tx {
    fn question(&self, id: i64) -> Result<Option<Question>>;
    /// Matching questions by id ascending.
    fn questions(&self, filter: &Filter) -> Result<Vec<Question>>;
    /// The question with this stage, group (or none) and text, whatever its status.
    fn find_same(&self, stage: &str, group: Option<&str>, text: &str) -> Result<Option<Question>>;
    fn insert(&self, new: &NewQuestion, now: &str) -> Result<Question>;
    /// Writes every mutable field of `q` back.
    fn update(&self, q: &Question) -> Result<()>;
    /// Removes a stage's questions and returns them as they were.
    fn delete_stage(&self, stage: &str) -> Result<Vec<Question>>;
    fn record(&self, event: &Event) -> Result<()>;
    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>>;
    /// Every question's stage (trimmed), stored status (as stored: a status this binary
    /// does not know is counted, not hidden) and whether it is required, by id: `info`.
    fn tallies(&self) -> Result<Vec<(String, String, bool)>>;
}

pub struct Store {
    engine: Engine,
}

enum Engine {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Pg),
}

impl Store {
    pub fn open(location: &Location, access: Access) -> Result<Store> {
        let engine = match location {
            Location::File { path, make_folder } => {
                Engine::Sqlite(sqlite::Sqlite::open(path, *make_folder, access)?)
            }
            Location::Postgres { url } => match postgres::Pg::open(url, access)? {
                Some(pg) => Engine::Postgres(pg),
                None => Engine::Sqlite(sqlite::Sqlite::empty()?),
            },
        };
        Ok(Store { engine })
    }

    /// The ledger is a file or database that exists (not the empty stand-in that reading
    /// a ledger not yet created gets).
    pub fn exists(&self) -> bool {
        match &self.engine {
            Engine::Sqlite(e) => e.on_disk(),
            Engine::Postgres(_) => true,
        }
    }

    /// The newest migration the ledger has applied.
    pub fn schema_version(&mut self) -> Result<i64> {
        match &mut self.engine {
            Engine::Sqlite(e) => e.schema_version(),
            Engine::Postgres(e) => e.schema_version(),
        }
    }

    /// Runs `f` on a consistent snapshot, taking no write lock.
    pub fn read<T>(&mut self, f: impl FnMut(&dyn Tx) -> Result<T>) -> Result<T> {
        match &mut self.engine {
            Engine::Sqlite(e) => e.read(f),
            Engine::Postgres(e) => e.read(f),
        }
    }

    /// Runs `f` so that what it read cannot change before it commits, and commits only if
    /// it succeeds. `f` may run more than once when it loses a race with another writer
    /// (PostgreSQL), so it must not act outside the transaction.
    pub fn write<T>(&mut self, f: impl FnMut(&dyn Tx) -> Result<T>) -> Result<T> {
        match &mut self.engine {
            Engine::Sqlite(e) => e.write(f),
            Engine::Postgres(e) => e.write(f),
        }
    }
}

/// A value as both engines store JSON columns: text.
fn to_json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| crate::error::Error::db(format!("cannot encode a value: {e}")))
}

/// A stored JSON column read back; text that is not JSON is kept as a string.
fn json_value(text: Option<String>) -> Option<serde_json::Value> {
    text.map(|t| serde_json::from_str(&t).unwrap_or(serde_json::Value::String(t)))
}

/// Drops a PostgreSQL ledger's tables (`reset`); a file ledger is deleted by `reset` itself.
pub fn drop_postgres(url: &str) -> Result<()> {
    postgres::Pg::drop_all(url)
}
