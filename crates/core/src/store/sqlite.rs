//! The embedded engine: one SQLite file in WAL mode.
//!
//! Durability and concurrency come from how the file is opened: `synchronous=FULL` (a
//! write acknowledged with exit 0 is on disk), a busy handler that waits out other writers
//! instead of failing, `BEGIN IMMEDIATE` for every read-then-write, and plain deferred
//! transactions for reads, which in WAL mode never wait for a writer.

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::migrate;
use super::sql::{Cell, Conn, Dialect, Param, Rows, Tx};
use crate::error::{Error, ErrorCode, Result, CANNOT_OPEN};

pub(super) struct Sqlite {
    conn: Connection,
    /// The ledger file, its log and its index as they were opened (none for the
    /// in-memory stand-in): `reset` may delete them while this process waits for the
    /// write lock, and a write must not then go to the deleted files.
    file: Option<Files>,
    /// How this connection waits for another one's write lock.
    lock_wait: LockWait,
}

/// How long a connection waits for another process's write lock (or for a moment alone
/// with the file) before its call fails as locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockWait {
    /// About 40 s (`wait_for_lock`): a command waits out other writers.
    Patient,
    /// At most this long: for a caller that must answer quickly (a harness's hook).
    AtMost(Duration),
}

impl LockWait {
    fn apply(self, conn: &mut Connection) -> rusqlite::Result<()> {
        match self {
            LockWait::Patient => conn.busy_handler(Some(wait_for_lock)),
            // SQLite's own handler, which sleeps a little longer each try, up to the bound.
            LockWait::AtMost(most) => conn.busy_timeout(most),
        }
    }

    /// The most `set_wal` tries for, beyond its count of tries.
    fn bound(self) -> Option<Duration> {
        match self {
            LockWait::Patient => None,
            LockWait::AtMost(most) => Some(most),
        }
    }
}

/// The write-ahead log is copied into the ledger (and emptied) once it holds about this
/// many pages. Every process reads the whole log when it opens the ledger (SQLite
/// rebuilds its index of the log then), about 0.1 ms for 64 pages, so a short log keeps
/// reads fast; a `log` adds about 4 pages, so the copy (two fsyncs) comes about every 16
/// writes.
const CHECKPOINT_PAGES: u64 = 64;

impl Sqlite {
    /// The ledger file at `path` for reading; a ledger that does not exist reads as an
    /// empty one, and nothing is created.
    pub(super) fn open_for_reading(path: &Path, lock_wait: LockWait) -> Result<Sqlite> {
        retrying(|| {
            if check_path(path)? {
                Sqlite::open_existing(path, false, lock_wait)
            } else {
                Sqlite::empty()
            }
        })
    }

    /// The ledger file at `path` for writing, created when missing; `make_folder` creates
    /// its folder too.
    pub(super) fn open_for_writing(
        path: &Path,
        make_folder: bool,
        lock_wait: LockWait,
    ) -> Result<Sqlite> {
        retrying(|| {
            if !check_path(path)? {
                create_file(path, make_folder)?;
            }
            Sqlite::open_existing(path, true, lock_wait)
        })
    }

    /// Opens the ledger file at `path`, which was just there: found by `check_path`, or
    /// created by this call or another one.
    fn open_existing(path: &Path, writing: bool, lock_wait: LockWait) -> Result<Sqlite> {
        let before = identity(path);
        let opened = open_file(path, writing, lock_wait).and_then(|(mut conn, found, files)| {
            migrate::bring_current(&mut conn, found).map_err(|e| in_context(e, path))?;
            Ok((conn, files))
        });
        let (conn, files) = match opened {
            // SQLite's words for a file deleted or replaced under it ("disk I/O error",
            // "unable to open"). Gone already before SQLite opened it counts too: it was
            // there a moment ago, so it was deleted meanwhile (a reset, between this
            // call's creating the file and opening it).
            Err(e)
                if e.code == ErrorCode::DbError
                    && (before.is_none() || identity(path) != before) =>
            {
                return Err(reset_meanwhile(path))
            }
            other => other?,
        };
        Ok(Sqlite {
            conn,
            file: Some(files),
            lock_wait,
        })
    }

    /// An empty ledger in memory: what reading a ledger that does not exist yet sees. It
    /// is only ever opened for reading (see `Ledger`).
    pub(super) fn empty() -> Result<Sqlite> {
        let conn = Connection::open_in_memory()?;
        migrate::create_newest(&conn)?;
        Ok(Sqlite {
            conn,
            file: None,
            lock_wait: LockWait::Patient,
        })
    }

    /// The ledger at `path` is not the file open here: it was deleted or replaced, or
    /// (for the in-memory stand-in) created since.
    pub(super) fn is_replaced(&self, path: &Path) -> bool {
        match &self.file {
            Some(files) => !files.current(),
            None => fs::symlink_metadata(path).is_ok(),
        }
    }

    /// A number that changes when another connection commits to the ledger file (SQLite's
    /// `data_version`): a waiter asks it, not the ledger, whether to read again. None for
    /// the in-memory stand-in.
    pub(super) fn data_version(&self) -> Option<i64> {
        self.file.as_ref()?;
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .ok()
    }

    /// False for the in-memory stand-in of `empty`.
    pub(super) fn on_disk(&self) -> bool {
        self.file.is_some()
    }

    pub(super) fn schema_version(&self) -> Result<i64> {
        migrate::applied_version(&self.conn)
    }

    pub(super) fn read<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        let tx = self.conn.transaction()?;
        let value = f(&Tx::new(&*tx))?;
        tx.commit()?;
        Ok(value)
    }

    /// One write transaction, durable when this returns: its commit is synced to the
    /// log (one fsync). When the log has grown long, the commit is instead made durable by
    /// the checkpoint that follows it (which syncs the log, then the ledger): two in all.
    pub(super) fn write<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        let checkpoint = self.file.as_ref().is_some_and(|files| {
            fs::metadata(&files.wal).is_ok_and(|m| m.len() >= CHECKPOINT_PAGES * 4096)
        });
        if checkpoint {
            self.conn.execute_batch("PRAGMA synchronous = NORMAL")?;
        }
        let written = self.transaction(f).map_err(|e| self.explain(e));
        if checkpoint {
            let synced = written.is_ok() && self.checkpoint();
            if written.is_ok() && !synced {
                // The checkpoint could not copy the log (a reader holds it): sync the
                // commit ourselves.
                if let Some(files) = &self.file {
                    files.sync_log()?;
                }
            }
            self.conn.execute_batch("PRAGMA synchronous = FULL")?;
        }
        written
    }

    fn transaction<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Holding the write lock now: the files must still be the ledger's (see `file`).
        if let Some(files) = &self.file {
            if !files.current() {
                return Err(Error::db(format!(
                    "the ledger {} was reset while this command waited for it; nothing was recorded",
                    files.path.display()
                )));
            }
        }
        let value = f(&Tx::new(&*tx))?;
        crate::fault::point("before-commit");
        tx.commit()?;
        Ok(value)
    }

    /// A database error while the ledger file was deleted or replaced under this process
    /// (`reset` by another one: SQLite then reports a bare "disk I/O error") says so.
    fn explain(&self, err: Error) -> Error {
        match &self.file {
            Some(files) if err.code == ErrorCode::DbError && !files.current() => {
                reset_meanwhile(&files.path)
            }
            _ => err,
        }
    }

    /// Copies the whole log into the ledger and empties it, without waiting for readers;
    /// true when all of it was copied (and so synced).
    fn checkpoint(&mut self) -> bool {
        if self.conn.busy_handler(None::<fn(i32) -> bool>).is_err() {
            return false;
        }
        let done = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .is_ok_and(|(busy, log, copied)| busy == 0 && copied >= log);
        let _ = self.lock_wait.apply(&mut self.conn);
        done
    }
}

/// Runs `open` again, a few times after a short pause, while a reset by another process
/// is in its way: it deleted or replaced the ledger while we opened it, or is between
/// deleting the ledger, its log and its index. Nothing was read or written yet. That
/// includes SQLite's "unable to open" (the file gone at that moment) and its bare "disk
/// I/O error" (a write-ahead log or index deleted under it); a problem that is not a
/// reset fails the same way each time, and is reported as it is.
fn retrying(mut open: impl FnMut() -> Result<Sqlite>) -> Result<Sqlite> {
    let mut tries = 0;
    loop {
        match open() {
            Err(e)
                if tries < 5
                    && (is_reset_meanwhile(&e) || is_io_error(&e) || is_cannot_open(&e)) =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10 * tries));
            }
            opened => return opened,
        }
    }
}

const RESET_MEANWHILE: &str = "was reset or replaced while this command ran";

fn reset_meanwhile(path: &Path) -> Error {
    Error::db(format!(
        "the ledger {} {RESET_MEANWHILE}; nothing was recorded: run it again",
        path.display()
    ))
}

fn is_reset_meanwhile(err: &Error) -> bool {
    [RESET_MEANWHILE, STALE_LOG, STALE_INDEX]
        .iter()
        .any(|words| err.message.contains(words))
}

const STALE_LOG: &str = "is empty but its log";
const STALE_INDEX: &str = "lists writes of a log that is gone";

/// The ledger file is empty and its log holds writes.
fn stale_log(path: &Path, wal: &Path) -> Error {
    Error::db(format!(
        "the ledger {} {STALE_LOG} {} holds writes: a reset is still deleting the ledger \
         before it, or the ledger file was emptied; nothing was read or written. If no \
         reset is running, move the -wal and -shm files aside and keep them (do not \
         delete them): the log may hold the only copy of the latest writes",
        path.display(),
        wal.display()
    ))
}

/// The ledger's index (`-shm`) is left from a ledger whose log was deleted.
fn stale_index(path: &Path, shm: &Path) -> Error {
    Error::db(format!(
        "the index {} {STALE_INDEX} (a reset still under way, or a -wal deleted by hand); \
         nothing was read or written to the ledger {}. If no reset is running and nothing \
         else has the ledger open, delete the index: SQLite builds it again",
        shm.display(),
        path.display()
    ))
}

/// SQLite's words for a read or write of the file that failed (`SQLITE_IOERR`).
fn is_io_error(err: &Error) -> bool {
    err.code == ErrorCode::DbError && err.message.contains("disk I/O error")
}

/// SQLite's "unable to open database file" (`SQLITE_CANTOPEN`): on a ledger another
/// process just reset, the file was gone at the moment SQLite opened it. A real
/// permission problem fails the same way every time, so a few tries cost nothing.
fn is_cannot_open(err: &Error) -> bool {
    err.code == ErrorCode::DbError && err.message.starts_with(CANNOT_OPEN)
}

/// Which file a path names: its device and inode.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

/// The files a connection opened, as they were: the ledger at `path`, its log at `wal`
/// and its index at `shm` (none where SQLite keeps the index in memory).
#[derive(Debug)]
struct Files {
    path: PathBuf,
    wal: PathBuf,
    shm: PathBuf,
    ledger: FileId,
    log: FileId,
    index: Option<FileId>,
}

impl Files {
    /// The paths still name the files opened. A reset deletes the ledger, then its log,
    /// then its index: a connection that opened any of them is on the deleted ledger,
    /// and what it wrote would go with it.
    fn current(&self) -> bool {
        identity(&self.path).as_ref() == Some(&self.ledger)
            && identity(&self.wal).as_ref() == Some(&self.log)
            && (self.index.is_none() || identity(&self.shm) == self.index)
    }

    /// Syncs the log this connection wrote its commit to. A log no longer at its path
    /// went with a reset that came after the commit (it holds the write lock, so it
    /// cannot have come before): the commit went with it, as any write before a reset
    /// does, and there is nothing left to sync.
    fn sync_log(&self) -> Result<()> {
        let cannot = |e: std::io::Error| Error::db(format!("cannot sync the ledger's log: {e}"));
        match fs::File::open(&self.wal) {
            Ok(log) if FileId::of(&log.metadata().map_err(cannot)?) == self.log => {
                log.sync_data().map_err(cannot)
            }
            Ok(_) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(cannot(e)),
        }
    }
}

/// The index at `shm` lists frames of its log: the `mxFrame` of SQLite's WAL-index
/// header (a 32-bit number in the machine's byte order, 16 bytes in) is not 0.
fn index_lists_frames(shm: &Path) -> bool {
    let mut header = [0u8; 20];
    read_head(shm, &mut header)
        .is_ok_and(|()| u32::from_ne_bytes([header[16], header[17], header[18], header[19]]) > 0)
}

/// Files of SQLite's (a ledger, its index) that this process opened to read, kept open
/// for as long as they are at their path. SQLite's locks are POSIX record locks, which
/// belong to the process: closing *any* descriptor of a file drops every lock the process
/// holds on it, those of the connections open on it included. Had `open_file` closed the
/// index it peeked at, a long-lived process (`serve`, `mcp`, `relay`) would lose its
/// share of the index while its connections still used it; the next process to open the
/// ledger would then find itself alone, start the index afresh (truncating it), and the
/// first process would die of SIGBUS reading its mapping of it. SQLite itself never
/// closes such a descriptor while a connection of the process is open on the file.
static KEPT: std::sync::Mutex<Vec<(PathBuf, FileId, fs::File)>> = std::sync::Mutex::new(Vec::new());

/// Reads the first bytes of the file at `path` into `buf`, through a descriptor that is
/// kept (see `KEPT`). Descriptors of files no longer at their path (a reset deleted them)
/// are closed: nothing can open those files again, so no lock on them matters.
pub(super) fn read_head(path: &Path, buf: &mut [u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    kept.retain(|(at, id, _)| identity(at).as_ref() == Some(id));
    let now = identity(path);
    if let Some((_, _, file)) = kept
        .iter()
        .find(|(at, id, _)| at == path && Some(id) == now.as_ref())
    {
        return file.read_exact_at(buf, 0);
    }
    let file = fs::File::open(path)?;
    let id = FileId::of(&file.metadata()?);
    let read = file.read_exact_at(buf, 0);
    kept.push((path.to_path_buf(), id, file));
    read
}

impl FileId {
    fn of(meta: &fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// The identity of the file at `path`, if there is one.
fn identity(path: &Path) -> Option<FileId> {
    fs::metadata(path).ok().as_ref().map(FileId::of)
}

/// Holds the ledger's write lock while `f` runs (waiting for writers in flight), so that
/// `reset` deletes it between writes, never under one. A file that cannot be opened as a
/// ledger is just handed to `f`.
pub(super) fn locked_for_reset<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let lock = Connection::open_with_flags(path, flags)
        .ok()
        .and_then(|mut conn| {
            conn.busy_handler(Some(wait_for_lock)).ok()?;
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
                .ok()?;
            conn.execute_batch("BEGIN IMMEDIATE").ok()?;
            Some(conn)
        });
    let result = f();
    drop(lock);
    result
}

/// `<ledger>-wal`, `<ledger>-shm`.
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether a ledger file is at `path`: refuses a symbolic link (it could point the ledger
/// at a file that is not ours to write) and a directory.
fn check_path(path: &Path) -> Result<bool> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::io(format!(
            "the ledger path {} is a symbolic link; give the path of the file itself",
            path.display()
        )));
    }
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(Error::io(format!(
            "the ledger path {} is a directory; give the path of a ledger file",
            path.display()
        ))),
        // A device or a pipe (/dev/null): SQLite would leave its -journal and -wal files
        // beside it.
        Ok(meta) if !meta.is_file() => Err(Error::io(format!(
            "the ledger path {} is not a regular file (a device or a pipe); give the path \
             of a ledger file",
            path.display()
        ))),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(format!(
            "cannot read the ledger path {}: {e}",
            path.display()
        ))),
    }
}

/// Creates the ledger file 0600 (and the default `.questions/` folder). Losing a race to
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
        // Its name must survive a power cut too (the -wal may be there from before).
        Ok(_) => sync_folder_of(path),
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

/// Opens the ledger at `path`: the connection, the schema version it has, and the files
/// SQLite opened (the ledger, its log and its index).
fn open_file(path: &Path, writing: bool, lock_wait: LockWait) -> Result<(Connection, i64, Files)> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let (wal, shm) = (companion(path, "-wal"), companion(path, "-shm"));
    create_log(&wal).map_err(|e| in_context(e, path))?;
    let [ledger, log, index] = [path, &wal, &shm].map(|file| fs::metadata(file).ok());
    let size = |meta: &Option<fs::Metadata>| meta.as_ref().map(fs::Metadata::len);
    // What a reset leaves for a moment, between deleting the ledger and deleting its log
    // and index, must not be opened as the new ledger's.
    if size(&ledger) == Some(0) && size(&log).is_some_and(|n| n > 0) {
        // An empty ledger never has writes in its log: switching to WAL puts the first
        // page in the file. SQLite would delete such a log.
        return Err(stale_log(path, &wal));
    }
    if size(&log) == Some(0) && index.is_some() && index_lists_frames(&shm) {
        // An empty log beside an index that lists frames in it: the index is of a ledger
        // whose log is gone (emptying the log resets the index), and its locks are not
        // this ledger's.
        return Err(stale_index(path, &shm));
    }
    let before = [ledger, log, index].map(|meta| meta.as_ref().map(FileId::of));
    super::dirsync::skip_folder_syncs();
    let mut conn =
        Connection::open_with_flags(path, flags).map_err(|e| in_context(e.into(), path))?;
    let found = configure(&mut conn, writing, lock_wait).map_err(|e| in_context(e, path))?;
    // SQLite has opened all three by now (reading through the log, or switching to it),
    // and holds them open from here on, so no other file can get their inode numbers while
    // this connection lives. The same file before and after is the one it opened; another
    // means a reset came in between.
    let after = [identity(path), identity(&wal), identity(&shm)];
    match (before, after) {
        ([Some(l0), Some(w0), s0], [Some(ledger), Some(log), index])
            if l0 == ledger && w0 == log && (s0.is_none() || s0 == index) =>
        {
            let files = Files {
                path: path.to_path_buf(),
                wal,
                shm,
                ledger,
                log,
                index,
            };
            Ok((conn, found, files))
        }
        _ => Err(reset_meanwhile(path)),
    }
}

/// The log is created here, once, with the folder synced so that its name survives a
/// power cut; SQLite itself does not sync the folder on every open (see `dirsync`), and
/// the log is never deleted after that.
fn create_log(wal: &Path) -> Result<()> {
    if fs::symlink_metadata(wal).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::io(format!(
            "the ledger's log {} is a symbolic link, which questions does not follow (it \
             could point the ledger's writes at another file); remove it",
            wal.display()
        )));
    }
    let created = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(wal);
    match created {
        Ok(_) => sync_folder_of(wal),
        // There already (or a symbolic link, which create_new never follows: SQLite's
        // own open then refuses it).
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(format!("cannot create {}: {e}", wal.display()))),
    }
}

/// Syncs the folder holding `path`, so that a name just created in it is durable.
pub(super) fn sync_folder_of(path: &Path) -> Result<()> {
    let folder = path
        .parent()
        .filter(|f| !f.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::File::open(folder)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(format!("cannot sync {}: {e}", folder.display())))
}

/// Returns the schema version the ledger has.
fn configure(conn: &mut Connection, writing: bool, lock_wait: LockWait) -> Result<i64> {
    lock_wait.apply(conn)?;
    // The log is copied into the ledger by `write` when it has grown, not by every
    // process on close (two fsyncs a call), and then emptied rather than deleted.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    // A statement's plan does not depend on the values bound to it. Without this, SQLite
    // (built with STAT4) prepares a statement again at every new binding when its plan
    // might change with the value: every `WHERE … = $1 ORDER BY id`, which is most of
    // this ledger's reads. Ingesting 40 000 questions spent a third of its time there.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // Reads page 1 first: a file that is not a database fails here, before anything
    // writes; and a ledger from a newer questions is refused before anything, even the
    // journal mode, changes.
    let found = match migrate::refuse_too_new(conn) {
        // Unknown version: read as it is (what can be read is), never migrated or written.
        Err(e) if !writing && migrate::history_is_damaged(&e) => migrate::latest_version(),
        other => other?,
    };
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        set_wal(conn, lock_wait.bound())?;
    }
    if writing {
        // What only a writer does: sync each commit, never checkpoint on its own (see
        // `write`), and empty the log when it starts over.
        conn.execute_batch(
            "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0; \
             PRAGMA journal_size_limit = 0;",
        )?;
    }
    Ok(found)
}

/// Switching to WAL needs a moment alone with the file; a new ledger opened by many
/// processes at once may have to wait for it (no longer than `most`, when given).
fn set_wal(conn: &Connection, most: Option<Duration>) -> Result<()> {
    let deadline = most.map(|most| std::time::Instant::now() + most);
    let mut tries = 0;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e)
                if is_busy(&e)
                    && tries < 500
                    && deadline.is_none_or(|d| std::time::Instant::now() < d) =>
            {
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

impl Conn for Connection {
    fn query(&self, sql: &str, params: &[Param]) -> Result<Rows> {
        let mut stmt = self.prepare_cached(sql)?;
        bind(&mut stmt, params)?;
        let columns: Vec<String> = stmt.column_names().map(String::from).collect();
        let width = columns.len();
        let mut cells = Vec::new();
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next()? {
            for i in 0..width {
                cells.push(match row.get_ref(i)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(n) => Cell::Int(n),
                    ValueRef::Real(f) => Cell::Real(f),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Cell::Text(match std::str::from_utf8(t) {
                            Ok(s) => s.to_owned(),
                            Err(_) => String::from_utf8_lossy(t).into_owned(),
                        })
                    }
                });
            }
        }
        Ok(Rows { columns, cells })
    }

    fn execute(&self, sql: &str, params: &[Param]) -> Result<u64> {
        let mut stmt = self.prepare_cached(sql)?;
        bind(&mut stmt, params)?;
        Ok(stmt.raw_execute()? as u64)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
}

/// Binds `$1`, `$2`… by name, wherever each first appears in the statement.
fn bind(stmt: &mut rusqlite::CachedStatement, params: &[Param]) -> Result<()> {
    for (i, param) in params.iter().enumerate() {
        let Some(index) = stmt.parameter_index(&format!("${}", i + 1))? else {
            continue;
        };
        match *param {
            Param::Int(v) => stmt.raw_bind_parameter(index, v)?,
            Param::Text(v) => stmt.raw_bind_parameter(index, v)?,
            Param::Bool(v) => stmt.raw_bind_parameter(index, v)?,
            Param::Ids(ids) => {
                let list = serde_json::to_string(ids)
                    .map_err(|e| Error::db(format!("cannot encode ids: {e}")))?;
                stmt.raw_bind_parameter(index, list)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate::ensure_current(&mut conn).unwrap();
        conn
    }

    /// Whether any process, this one included, holds SQLite's "in use" lock on the index
    /// of `path` (a read lock on byte 128 of `-shm`), asked through an open file
    /// description lock, which conflicts with this process's own record locks too.
    fn index_in_use(probe: &fs::File) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain struct of integers.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_WRLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        lock.l_start = 128;
        lock.l_len = 1;
        // SAFETY: F_OFD_GETLK on a descriptor this test holds, with a flock it owns.
        let asked = unsafe { libc::fcntl(probe.as_raw_fd(), libc::F_OFD_GETLK, &raw mut lock) };
        assert_eq!(asked, 0, "{}", std::io::Error::last_os_error());
        lock.l_type != libc::F_UNLCK as libc::c_short
    }

    /// A long-lived process (`serve`, `mcp`, `relay`) opens a connection per request
    /// while others stay open: opening one must not drop the open ones' share of the
    /// index, or the next process to open the ledger starts the index afresh under them
    /// and they die of SIGBUS.
    #[test]
    fn opening_a_connection_keeps_the_open_ones_share_of_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let first = Sqlite::open_for_writing(&path, false, LockWait::Patient).unwrap();
        first
            .conn
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
            .unwrap();
        // An empty log beside the index: what `open_file` looks into the index for.
        first
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let shm = companion(&path, "-shm");
        assert_eq!(fs::metadata(companion(&path, "-wal")).unwrap().len(), 0);
        let probe = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&shm)
            .unwrap();
        assert!(index_in_use(&probe), "the first connection holds the index");
        for _ in 0..3 {
            let second = Sqlite::open_for_reading(&path, LockWait::Patient).unwrap();
            assert!(index_in_use(&probe), "opening another kept the lock");
            drop(second);
            assert!(index_in_use(&probe), "closing another kept the lock");
        }
        let n: i64 = first
            .conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        // The probe is closed last: it is this test's own descriptor of the index.
        drop(first);
        drop(probe);
    }

    #[test]
    fn a_ledger_gone_before_sqlite_opens_it_was_reset_meanwhile() {
        // What a write meets when a reset deletes the ledger it has just created.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        for writing in [false, true] {
            let err = Sqlite::open_existing(&path, writing, LockWait::Patient)
                .err()
                .unwrap();
            assert!(err.message.contains(RESET_MEANWHILE), "{err}");
        }
        // A ledger that is there and cannot be opened is reported as it is.
        fs::write(&path, b"").unwrap();
        fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        if fs::File::open(&path).is_err() {
            // (root opens it anyway)
            let err = Sqlite::open_existing(&path, true, LockWait::Patient)
                .err()
                .unwrap();
            assert!(err.message.starts_with(CANNOT_OPEN), "{err}");
        }
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
        let tx = Tx::new(&db);
        let q = tx.question(1).unwrap().unwrap();
        assert!(!q.required);
        assert_eq!(q.state.answer.as_deref(), Some("42"));
        assert_eq!(q.created_at, "2026-01-02T03:04:05.000Z");
        assert!(q.options.is_empty());
        // A status nobody knows holds the gate rather than opening it.
        assert!(tx.question(2).unwrap().unwrap().blocks_gate());
    }
}
