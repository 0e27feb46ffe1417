//! Where the ledger lives and everything that touches it. The operations see only `Ledger`
//! and `Tx`; the SQL is written once (`sql`), and each engine's connection handling stays
//! in its own file.

#[cfg(feature = "postgres")]
mod bounded;
#[cfg(unix)]
mod dirsync;
// The shared wait of PostgreSQL waiters on one machine (see its comment).
#[cfg(all(feature = "postgres", unix))]
mod herald;
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
mod watch;

pub use location::{make_default_folder, refuse_non_ledger, FoundBy, Location};
pub use migrate::latest_version as schema_version;
pub use sql::{
    Delegation, Delivery, Link, Policy, QuietHours, StoredSignIn, StoredTask, StoredToken,
    TaskState, TokenRole,
};
pub(crate) use sql::{StoredClient, StoredCode, StoredDevice, Tx};
pub use sqlite::LockWait;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::model::Status;

/// How long a waiter with nothing to tell it of changes (no ledger open, no herald) waits
/// before it reads again.
#[cfg(feature = "postgres")]
const POLL: Duration = Duration::from_secs(1);

/// A file ledger's waiter asks SQLite whether another process committed at least this
/// often, even when the kernel told it of no change (a folder on a network file system,
/// whose changes elsewhere it never hears of): one cheap question, not a read.
const LOOK_AGAIN: Duration = Duration::from_secs(5);

/// How long a read, or a write that never asked to commit, is made again on a new
/// connection after the server dropped the one it had. PgBouncer, whose connections to a
/// server that restarted fail one by one, waits 15 s by default before it logs in again
/// after a failed login.
const AGAIN_FOR: Duration = Duration::from_secs(30);

/// Just after the ledger's files changed, the commit that changed them may not be visible
/// yet (SQLite writes the log, syncs it, then publishes the commit in its index, which
/// the kernel does not report): the waiter asks again after this, then twice as long each
/// time, for `SETTLING` at most.
const SETTLE_FIRST: Duration = Duration::from_millis(5);
const SETTLING: Duration = Duration::from_secs(2);

/// Which questions a query returns; every field narrows.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Filter {
    pub stage: Option<String>,
    pub status: Option<Status>,
    pub group: Option<String>,
    pub ids: Option<Vec<i64>>,
}

/// Which events `history` and `events` return, oldest first.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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

    /// Waits for another process's change without a herald: a PostgreSQL notification
    /// (through a pooler, none: a second at most), or a second.
    #[cfg(feature = "postgres")]
    fn wait(&mut self, timeout: Duration) -> Result<()> {
        match self {
            Engine::Sqlite(_) => std::thread::sleep(timeout.min(POLL)),
            #[cfg(feature = "postgres")]
            Engine::Postgres(pg) => pg.wait_for_event(timeout.min(POLL))?,
        }
        Ok(())
    }
}

/// While alive, the statements of this thread's new PostgreSQL connections answer by
/// `deadline` (a second past it at most) rather than within the usual bound of a minute:
/// a reader with a deadline (`check --wait --timeout 5`) that meets a table another
/// session locked ends on time, as waiting for that lock is not waiting for an answer.
pub(crate) struct BoundUntil {
    #[cfg(feature = "postgres")]
    before: Option<Instant>,
}

impl BoundUntil {
    pub(crate) fn new(deadline: Option<Instant>) -> BoundUntil {
        #[cfg(feature = "postgres")]
        {
            BoundUntil {
                before: bounded::DEADLINE.with(|d| d.replace(deadline)),
            }
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = deadline;
            BoundUntil {}
        }
    }
}

impl Drop for BoundUntil {
    fn drop(&mut self) {
        #[cfg(feature = "postgres")]
        bounded::DEADLINE.with(|d| d.set(self.before));
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
    /// Set while a reader waits for changes (`ops::follow`): what tells it of them.
    waiter: Option<Waiter>,
    /// A PostgreSQL ledger's id as the connection a waiter closed last saw it: the next
    /// connection compares with it (see `follow`).
    #[cfg(feature = "postgres")]
    server_id: Option<String>,
    /// A waiter's turn at a connection to the server (see `herald::Herald::turn`), held
    /// while its connection is open.
    #[cfg(all(feature = "postgres", unix))]
    turn: Option<std::fs::File>,
}

/// What tells a waiting reader that the ledger may have changed.
enum Waiter {
    /// Waiting on a file ledger, and nothing set up yet: the first wait sets it up.
    Starting,
    /// A file ledger: the kernel's word on its files, and SQLite's count of commits.
    File {
        watch: watch::FileWatch,
        seen: Option<i64>,
        /// When the files last changed, and how long the next look waits, while settling.
        stirred: Option<Instant>,
        pause: Duration,
    },
    /// A PostgreSQL ledger: the machine's herald.
    #[cfg(all(feature = "postgres", unix))]
    Herald(herald::Herald),
    /// Nothing better: the open connection's notifications, or a read every `POLL`.
    Plain,
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
            waiter: None,
            #[cfg(feature = "postgres")]
            server_id: None,
            #[cfg(all(feature = "postgres", unix))]
            turn: None,
        }
    }

    /// From now on (true) until told otherwise, this ledger is a waiting reader's: on
    /// PostgreSQL it holds a connection only while it reads (see `wait_for_change`).
    pub fn waiting(&mut self, on: bool) {
        self.waiter = on.then(|| self.first_waiter());
        #[cfg(all(feature = "postgres", unix))]
        if !on {
            self.turn = None;
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

    /// What a reader that starts waiting waits with. A PostgreSQL waiter takes turns at
    /// the server with the machine's other waiters from its first read, and listens for
    /// the herald from its first wait (see `herald::Herald::start`): a call that never
    /// waits starts no herald.
    #[cfg_attr(not(all(feature = "postgres", unix)), allow(clippy::unused_self))]
    fn first_waiter(&self) -> Waiter {
        #[cfg(all(feature = "postgres", unix))]
        if let Location::Postgres { url } = &self.location {
            return match herald::Herald::join(url) {
                Some(herald) => Waiter::Herald(herald),
                None => Waiter::Plain,
            };
        }
        Waiter::Starting
    }

    /// Runs `f` on a consistent snapshot, taking no write lock. A read that fails because
    /// the ledger was reset under it (its tables dropped) reads the ledger there now.
    pub(crate) fn read<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        // A connection the server dropped (a restart, a failover, a pooler's connections
        // to a server that restarted): again, on a new one, for a while. A waiter's read
        // is not: its wait goes on, and says so (`ops::follow`).
        let waiting = self.waiter.is_some();
        let read = self.again(|l| l.read_once(&f), |e| e.is_dropped() && !waiting);
        match read {
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
            #[cfg(all(feature = "postgres", unix))]
            if let Some(Waiter::Herald(herald)) = &self.waiter {
                // Waiters on this machine take turns at the server: however many wake at
                // once, they hold a few of its connections, and a write finds one free.
                if self.turn.is_none() {
                    self.turn = herald.turn();
                }
            }
            let engine = open_for_reading(&self.location, self.lock_wait, self.waiter.is_none())?;
            self.open = Some(Open::Reading(self.known(engine)));
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
        // The server dropped the connection before the write asked to commit (a restart,
        // a pooler's connections to a server that restarted): nothing was recorded, and it
        // is made again on a new connection, for a while.
        self.again(|l| l.write_once(&f), |e| e.is_dropped() && e.uncommitted)
    }

    fn write_once<T>(&mut self, f: &impl Fn(&Tx) -> Result<T>) -> Result<T> {
        if !matches!(self.open, Some(Open::Writing(_))) {
            self.forget_connection();
            // Nothing is written while the ledger is opened (a migration, if one runs, is
            // made again whole).
            let engine = open_for_writing(&self.location, self.lock_wait).map_err(|mut e| {
                e.uncommitted = true;
                e
            })?;
            self.open = Some(Open::Writing(self.known(engine)));
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
            let engine = open_for_reading(&self.location, self.lock_wait, self.waiter.is_none())?;
            self.open = Some(Open::Reading(self.known(engine)));
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

    /// Waits until another process may have changed the ledger, or `timeout` passes; the
    /// caller reads again either way. A file ledger's waiter is told of a change of its
    /// files by the kernel (see `watch`), and asks SQLite whether it was a commit; a
    /// PostgreSQL ledger's waiter closes its connection and is woken by the machine's
    /// herald (see `herald`). The first wait of a reader (see `waiting`) sets that up and
    /// returns at once, so that a change made before is read. Then, when the ledger at the
    /// location is no longer the one open here, the next read opens the one there now
    /// (see `follow` and `generation`).
    pub fn wait_for_change(&mut self, timeout: Duration) -> Result<()> {
        crate::fault::point("wait");
        if self.waiter.is_none() {
            self.waiter = Some(Waiter::Plain);
        }
        match &self.location {
            Location::File { path, .. } => {
                let path = path.clone();
                self.wait_on_file(&path, timeout);
            }
            #[cfg(feature = "postgres")]
            Location::Postgres { .. } => return self.wait_on_server(timeout),
        }
        self.follow().map(|_| ())
    }

    fn wait_on_file(&mut self, path: &Path, timeout: Duration) {
        let end = Instant::now() + timeout;
        if matches!(self.waiter, Some(Waiter::Starting | Waiter::Plain)) {
            let dir = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            let name = path.file_name().unwrap_or_default().to_os_string();
            // The ledger and its log (a commit writes the log; a checkpoint, the ledger).
            let mut wal = name.clone();
            wal.push("-wal");
            let names = vec![name, wal];
            self.waiter = Some(Waiter::File {
                watch: watch::FileWatch::new(dir, names),
                seen: self.file_version(),
                stirred: None,
                pause: SETTLE_FIRST,
            });
            return;
        }
        loop {
            let version = self.file_version();
            let replaced = self.file_replaced(path);
            let Some(Waiter::File {
                watch,
                seen,
                stirred,
                pause,
            }) = &mut self.waiter
            else {
                unreachable!("set up above")
            };
            if version != *seen || replaced {
                *seen = version;
                return;
            }
            let now = Instant::now();
            if now >= end {
                return;
            }
            let wait = match stirred {
                Some(at) if now.duration_since(*at) < SETTLING => {
                    let wait = *pause;
                    *pause = (*pause * 2).min(Duration::from_millis(250));
                    wait
                }
                _ => {
                    if watch.is_told() {
                        LOOK_AGAIN
                    } else {
                        watch::TICK
                    }
                }
            };
            if watch.wait(wait.min(end - now)) {
                *stirred = Some(Instant::now());
                *pause = SETTLE_FIRST;
                // No ledger open to ask (none yet, or the stand-in of one that does not
                // exist): the change is the news.
                if version.is_none() {
                    return;
                }
            }
        }
    }

    /// SQLite's count of other connections' commits to the file open here (see
    /// `sqlite::Sqlite::data_version`).
    fn file_version(&self) -> Option<i64> {
        match &self.open {
            Some(Open::Reading(Engine::Sqlite(e)) | Open::Writing(Engine::Sqlite(e))) => {
                e.data_version()
            }
            _ => None,
        }
    }

    fn file_replaced(&self, path: &Path) -> bool {
        match &self.open {
            Some(Open::Reading(Engine::Sqlite(e)) | Open::Writing(Engine::Sqlite(e))) => {
                e.is_replaced(path)
            }
            _ => false,
        }
    }

    /// A PostgreSQL waiter: notes whether the ledger was replaced (while its connection is
    /// still open), closes the connection, and waits for the herald's word.
    #[cfg(feature = "postgres")]
    fn wait_on_server(&mut self, timeout: Duration) -> Result<()> {
        self.follow()?;
        match &mut self.waiter {
            #[cfg(unix)]
            Some(Waiter::Herald(_)) => {
                // No connection held while waiting, nor a turn at one.
                self.forget_connection();
                if let Some(Waiter::Herald(herald)) = &mut self.waiter {
                    herald.wait(timeout);
                }
            }
            _ => match self.open.as_mut() {
                Some(Open::Reading(engine) | Open::Writing(engine)) => engine.wait(timeout)?,
                None => std::thread::sleep(timeout.min(POLL)),
            },
        }
        // Woken by a reset (it notifies) or a change after one: the reader's next step
        // reads the ledger there now knowing that it is another.
        self.follow()?;
        Ok(())
    }

    /// For a process that keeps the ledger open between reads (`serve`, `mcp`, `watch`,
    /// `events --follow`, `check --wait`): when the ledger at the location is no longer
    /// the one open here (it was reset, its file replaced, or it was created since a read
    /// found none), forgets the one open here, so that the next read or write opens the
    /// ledger there now. True when it did. A stat for a file, one query for PostgreSQL.
    pub fn follow(&mut self) -> Result<bool> {
        // On PostgreSQL the id is a connection's to note: one is opened to note it (at a
        // follower's first look, before anything was read) or to compare it with the id a
        // connection closed since saw (a waiter's, or one a pooler dropped).
        #[cfg(feature = "postgres")]
        if self.open.is_none() && matches!(self.location, Location::Postgres { .. }) {
            self.read_once(&|_| Ok(()))?;
        }
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
            // The ledger there now is learned anew.
            #[cfg(feature = "postgres")]
            {
                self.server_id = None;
            }
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

    /// For a front end that keeps this ledger between calls (`serve`, `mcp`): a file's
    /// connection stays open (it costs the server nothing), a PostgreSQL server's is
    /// closed, so that idle front ends hold none of the connections a write needs; the
    /// next call connects again.
    pub fn idle(&mut self) {
        if !matches!(self.location, Location::File { .. }) {
            self.forget_connection();
        }
    }

    /// Runs `attempt` again on a new connection while it fails as `may` says, with a
    /// growing pause, for `AGAIN_FOR` at most.
    fn again<T>(
        &mut self,
        attempt: impl Fn(&mut Ledger) -> Result<T>,
        may: impl Fn(&Error) -> bool,
    ) -> Result<T> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(50);
        loop {
            match attempt(self) {
                Err(e) if may(&e) && start.elapsed() < AGAIN_FOR => {
                    self.forget_connection();
                    std::thread::sleep(jittered(pause));
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    /// A connection opened in place of an earlier one, told the ledger's id that one saw,
    /// so that `follow` tells a reset between the two (on PostgreSQL each connection
    /// learns the id anew; through a pooler a reader changes connections often).
    #[cfg_attr(not(feature = "postgres"), allow(clippy::unused_self))]
    fn known(&self, engine: Engine) -> Engine {
        match engine {
            #[cfg(feature = "postgres")]
            Engine::Postgres(mut pg) => {
                pg.remember(self.server_id.clone());
                Engine::Postgres(pg)
            }
            other => other,
        }
    }

    /// Closes the connection (after the server dropped it, say): the next read or write
    /// opens one anew, keeping the ledger's id it saw (see `known`).
    pub fn forget_connection(&mut self) {
        #[cfg(feature = "postgres")]
        if let Some(Open::Reading(Engine::Postgres(pg)) | Open::Writing(Engine::Postgres(pg))) =
            &self.open
        {
            if let Some(id) = pg.id() {
                self.server_id = Some(id);
            }
        }
        self.open = None;
        #[cfg(all(feature = "postgres", unix))]
        {
            self.turn = None;
        }
    }

    /// True when a write has opened the ledger itself (not a stand-in).
    pub fn is_open_for_writing(&self) -> bool {
        matches!(self.open, Some(Open::Writing(_)))
    }
}

/// `patient`: a PostgreSQL server with no connection free is asked again for a while (a
/// waiter does not: it waits on).
fn open_for_reading(location: &Location, lock_wait: LockWait, patient: bool) -> Result<Engine> {
    let _ = patient;
    Ok(match location {
        Location::File { path, .. } => {
            Engine::Sqlite(sqlite::Sqlite::open_for_reading(path, lock_wait)?)
        }
        #[cfg(feature = "postgres")]
        Location::Postgres { url } => match postgres::Pg::open_for_reading(url, patient)? {
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

/// `pause` give or take a quarter, so that processes woken together do not all come back
/// together.
fn jittered(pause: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let quarter = pause / 4;
    pause.saturating_sub(quarter) + quarter.mul_f64((random % 1000) as f64 / 500.0)
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
            urgent: false,
            logged_by: None,
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
