//! Where the ledger lives and everything that touches it. The operations see only `Ledger`
//! and `Tx`; the SQL is written once (`sql`), and each engine's connection handling stays
//! in its own file.

#[cfg(feature = "postgres")]
mod bounded;
#[cfg(unix)]
mod dirsync;
mod location;
mod migrate;
// The PostgreSQL engine, or in a build without it the module that refuses its locations.
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(not(feature = "postgres"))]
#[path = "no_postgres.rs"]
mod postgres;
mod sql;
mod sqlite;
#[cfg(feature = "postgres")]
mod tls;
#[cfg(test)]
pub(crate) mod tx_suite;

pub use location::{make_default_folder, refuse_non_ledger, FoundBy, Location};
pub use migrate::latest_version as schema_version;
pub(crate) use sql::Tx;
pub use sql::{StoredTask, TaskState};
pub use sqlite::LockWait;

use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::Status;

/// How often a file ledger is looked at again by a command that waits for a change.
const POLL: Duration = Duration::from_millis(100);

/// Which questions a query returns; every field narrows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub stage: Option<String>,
    pub status: Option<Status>,
    pub group: Option<String>,
    pub ids: Option<Vec<i64>>,
}

/// Which events `history` and `events` return, oldest first.
#[derive(Debug, Clone)]
pub enum EventFilter {
    Question(i64),
    Stage(String),
    /// The next `limit` events after `seq`.
    Since {
        seq: i64,
        limit: u32,
    },
}

/// One open connection, of either engine.
enum Engine {
    Sqlite(sqlite::Sqlite),
    #[cfg(feature = "postgres")]
    Postgres(postgres::Pg),
}

impl Engine {
    fn read<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        match self {
            Engine::Sqlite(e) => e.read(f),
            #[cfg(feature = "postgres")]
            Engine::Postgres(e) => e.read(f),
        }
    }

    /// Waits for another process's change: a PostgreSQL notification, or the next look
    /// at a file.
    fn wait(&mut self, timeout: Duration) -> Result<()> {
        match self {
            Engine::Sqlite(_) => std::thread::sleep(timeout.min(POLL)),
            #[cfg(feature = "postgres")]
            Engine::Postgres(pg) => pg.wait_for_event(timeout)?,
        }
        Ok(())
    }
}

/// The ledger as one call sees it: found once, opened when first needed. A read on a
/// ledger that does not exist sees an empty one and creates nothing; a write always goes
/// to the real ledger, opened (and created) for writing: the empty stand-in a read may
/// have used can only be read, so no write can land in it.
pub struct Ledger {
    location: Location,
    open: Option<Open>,
    /// How many times `follow` found another ledger at the location than the one open.
    generation: u64,
    /// How a file ledger's connection waits for another process's write lock.
    lock_wait: LockWait,
}

enum Open {
    /// Opened for reading; possibly an empty stand-in for a ledger that does not exist.
    Reading(Engine),
    /// The real ledger, created if it was missing.
    Writing(Engine),
}

impl Ledger {
    pub fn new(location: Location) -> Ledger {
        Ledger {
            location,
            open: None,
            generation: 0,
            lock_wait: LockWait::Patient,
        }
    }

    /// How long a file ledger waits for another process's write lock before a call fails
    /// as locked (by default about 40 s), for the connections opened from now on: a
    /// caller that must answer quickly sets it before its first read or write. A
    /// PostgreSQL ledger's waits are its connection's own.
    pub fn set_lock_wait(&mut self, lock_wait: LockWait) {
        self.lock_wait = lock_wait;
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Runs `f` on a consistent snapshot, taking no write lock. A read that fails because
    /// the ledger was reset under it (its tables dropped) reads the ledger there now.
    pub(crate) fn read<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        match self.read_once(&f) {
            Err(e)
                if e.code == crate::error::ErrorCode::DbError && self.follow().unwrap_or(false) =>
            {
                self.read_once(&f)
            }
            other => other,
        }
    }

    fn read_once<T>(&mut self, f: &impl Fn(&Tx) -> Result<T>) -> Result<T> {
        if self.open.is_none() {
            self.open = Some(Open::Reading(open_for_reading(
                &self.location,
                self.lock_wait,
            )?));
        }
        match self.open.as_mut().expect("opened just above") {
            Open::Reading(engine) | Open::Writing(engine) => engine.read(f),
        }
    }

    /// Counts the times another ledger took the place of the one open here (see `follow`):
    /// a caller that holds ids or seqs of a ledger compares it before using them again.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Runs `f` so that what it read cannot change before it commits, and commits only if
    /// it succeeds. `f` is `Fn`: on PostgreSQL it runs again from the start when it loses a
    /// race with another writer, so it must act only through the transaction.
    pub(crate) fn write<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        if !matches!(self.open, Some(Open::Writing(_))) {
            self.open = None;
            self.open = Some(Open::Writing(open_for_writing(
                &self.location,
                self.lock_wait,
            )?));
        }
        crate::fault::point("before-write");
        let Some(Open::Writing(engine)) = self.open.as_mut() else {
            unreachable!("opened for writing just above")
        };
        let value = match engine {
            Engine::Sqlite(e) => e.write(f),
            #[cfg(feature = "postgres")]
            Engine::Postgres(e) => e.write(f),
        }?;
        crate::fault::committed();
        Ok(value)
    }

    /// Whether the ledger exists (a read of one that does not sees an empty stand-in),
    /// and the newest migration it has applied (0 when it does not exist).
    pub fn schema(&mut self) -> Result<(bool, i64)> {
        if self.open.is_none() {
            self.open = Some(Open::Reading(open_for_reading(
                &self.location,
                self.lock_wait,
            )?));
        }
        match self.open.as_mut().expect("opened just above") {
            Open::Reading(Engine::Sqlite(e)) | Open::Writing(Engine::Sqlite(e)) => {
                Ok(if e.on_disk() {
                    (true, e.schema_version()?)
                } else {
                    (false, 0)
                })
            }
            #[cfg(feature = "postgres")]
            Open::Reading(Engine::Postgres(e)) | Open::Writing(Engine::Postgres(e)) => {
                Ok((true, e.schema_version()?))
            }
        }
    }

    /// Waits until another process may have changed the ledger, or `timeout` passes.
    /// PostgreSQL wakes it at once with a notification of each new event; a file is looked
    /// at again every 100 ms (a sleep, not a spin). The caller reads again either way.
    /// Then, when the ledger at the location is no longer the one open here, the next
    /// read opens the one there now (see `follow` and `generation`).
    pub fn wait_for_change(&mut self, timeout: Duration) -> Result<()> {
        crate::fault::point("wait");
        match self.open.as_mut() {
            Some(Open::Reading(engine) | Open::Writing(engine)) => engine.wait(timeout)?,
            None => std::thread::sleep(timeout.min(POLL)),
        }
        self.follow().map(|_| ())
    }

    /// For a process that keeps the ledger open between reads (`serve`, `mcp`, `watch`,
    /// `events --follow`, `check --wait`): when the ledger at the location is no longer
    /// the one open here (it was reset, its file replaced, or it was created since a read
    /// found none), forgets the one open here, so that the next read or write opens the
    /// ledger there now. True when it did. A stat for a file, one query for PostgreSQL.
    pub fn follow(&mut self) -> Result<bool> {
        let stale = match self.open.as_mut() {
            None => false,
            Some(Open::Reading(engine) | Open::Writing(engine)) => match engine {
                Engine::Sqlite(e) => match &self.location {
                    Location::File { path, .. } => e.is_replaced(path),
                    // The stand-in for a database without a ledger: is there one now?
                    #[cfg(feature = "postgres")]
                    Location::Postgres { url } => postgres::Pg::has_ledger(url)?,
                },
                #[cfg(feature = "postgres")]
                Engine::Postgres(pg) => pg.is_replaced()?,
            },
        };
        if stale {
            self.open = None;
            self.generation += 1;
        }
        Ok(stale)
    }

    /// The id the ledger was given when it was created; none for a ledger that does not
    /// exist (a read sees an empty stand-in) or that predates ids and was not written to
    /// since.
    pub fn id(&mut self) -> Result<Option<String>> {
        if !self.schema()?.0 {
            return Ok(None);
        }
        self.read(|tx| tx.ledger_id())
    }

    /// True when a write has opened the ledger itself (not a stand-in).
    pub fn is_open_for_writing(&self) -> bool {
        matches!(self.open, Some(Open::Writing(_)))
    }
}

fn open_for_reading(location: &Location, lock_wait: LockWait) -> Result<Engine> {
    Ok(match location {
        Location::File { path, .. } => {
            Engine::Sqlite(sqlite::Sqlite::open_for_reading(path, lock_wait)?)
        }
        #[cfg(feature = "postgres")]
        Location::Postgres { url } => match postgres::Pg::open_for_reading(url)? {
            Some(pg) => Engine::Postgres(pg),
            None => Engine::Sqlite(sqlite::Sqlite::empty()?),
        },
    })
}

fn open_for_writing(location: &Location, lock_wait: LockWait) -> Result<Engine> {
    Ok(match location {
        Location::File { path, make_folder } => Engine::Sqlite(sqlite::Sqlite::open_for_writing(
            path,
            *make_folder,
            lock_wait,
        )?),
        #[cfg(feature = "postgres")]
        Location::Postgres { url } => Engine::Postgres(postgres::Pg::open_for_writing(url)?),
    })
}

/// Deletes the ledger at `location` without opening it, so that a damaged ledger can be
/// deleted too; false when there was none. A file ledger's files are deleted under its
/// write lock (a write in flight finishes first, and one waiting for the lock finds its
/// ledger gone and records nothing), and only once each is known to be a ledger's: what
/// is not a ledger stays whole. A PostgreSQL ledger's tables are dropped.
pub(crate) fn delete(location: &Location) -> Result<bool> {
    let path = match location {
        Location::File { path, .. } => path,
        #[cfg(feature = "postgres")]
        Location::Postgres { url } => return postgres::Pg::drop_all(url),
    };
    for (i, file) in location.files().iter().enumerate() {
        refuse_non_ledger(file, i == 0)?;
    }
    sqlite::locked_for_reset(path, || {
        let mut existed = false;
        // The ledger, its log, its index; between two of them, a ledger created at the
        // path meanwhile can open what is left of this one (see `sqlite::open_file`).
        let between = [
            "reset-deleted-ledger",
            "reset-deleted-log",
            "reset-deleted-index",
        ];
        for (file, point) in location.files().iter().zip(between) {
            match std::fs::remove_file(file) {
                Ok(()) => existed |= file == path,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(format!("cannot delete {}: {e}", file.display()))),
            }
            crate::fault::point(point);
        }
        Ok(existed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NewQuestion, Source};

    fn question() -> NewQuestion {
        NewQuestion {
            stage: "s".into(),
            group_name: None,
            question: "Q?".into(),
            proposed: None,
            required: true,
            header: None,
            context: None,
            options: vec![],
            multi_select: false,
            allow_freeform: true,
            source: Source::Cli,
            expires_at: None,
            on_expiry: crate::model::OnExpiry::Keep,
            approval: None,
            harness_call: None,
        }
    }

    #[test]
    fn a_write_after_a_read_of_a_missing_ledger_lands_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let mut ledger = Ledger::new(Location::File {
            path: path.clone(),
            make_folder: false,
        });
        // The read sees an empty stand-in and creates nothing…
        let before = ledger.read(|tx| tx.questions(&Filter::default())).unwrap();
        assert!(before.is_empty());
        assert!(!path.exists());
        assert!(!ledger.is_open_for_writing());
        // …and the write that follows goes to the real file, not to the stand-in.
        let written = ledger
            .write(|tx| tx.apply(&question().log("2026-11-21T23:47:04.692Z")))
            .unwrap()
            .unwrap();
        assert!(ledger.is_open_for_writing());
        let mut reopened = Ledger::new(Location::File {
            path: path.clone(),
            make_folder: false,
        });
        let stored = reopened.read(|tx| tx.question(written.id)).unwrap();
        assert_eq!(stored, Some(written));
    }
}
