//! Where the ledger lives and everything that touches it. Commands see only `Store` and
//! the `Tx` trait; the SQL and connection handling of each engine stay in this folder.

mod location;
mod migrate;
mod sqlite;

pub use location::Location;

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
}

pub struct Store {
    engine: sqlite::Sqlite,
}

impl Store {
    pub fn open(location: &Location, access: Access) -> Result<Store> {
        Ok(Store {
            engine: sqlite::Sqlite::open(location, access)?,
        })
    }

    /// Runs `f` on a consistent snapshot, taking no write lock.
    pub fn read<T>(&mut self, f: impl FnOnce(&dyn Tx) -> Result<T>) -> Result<T> {
        self.engine.read(f)
    }

    /// Runs `f` holding the write lock from its first read; commits only if it succeeds.
    pub fn write<T>(&mut self, f: impl FnOnce(&dyn Tx) -> Result<T>) -> Result<T> {
        self.engine.write(f)
    }
}
