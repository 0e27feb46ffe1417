//! How PostgreSQL waiters on one machine wait without each holding a connection to the
//! server: one of them, the herald, holds one connection that listens for the ledger's
//! notifications (and looks at its newest event every 400 ms, for poolers that do not pass
//! notifications on), and writes what it saw into a small file; every waiter waits for
//! that file to change as it would for a file ledger (see `watch`), and only then opens a
//! connection to read, taking one of a few turns at the server (`TURNS`), so that however
//! many wake at once, they hold at most that many of the server's connections.
//!
//! The herald is whichever waiter holds the lock of the ledger's file first; it goes on in
//! a thread of its own until its process ends, and then another waiter takes the lock
//! (each looks once a second) and heralds in its place. A herald that holds the lock but
//! no longer speaks (its process stopped, its connection hung) is found by its heartbeat,
//! a file it touches every second: past `SILENT`, each waiter reads the server itself once
//! a second, still taking turns, until the herald speaks again or goes. The files live in
//! a folder of the user's own (under the system's temporary folder, else the user's
//! runtime folder, else their cache), named by the server and database (not the
//! password).
//!
//! A reader joins the herald when it first waits, not when it first reads: a call that
//! does not wait (`check` without `--wait`) starts no herald and no listening connection.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::watch::FileWatch;

/// How many waiters of one machine may hold a connection to the server at once.
const TURNS: u32 = 16;

/// How often a waiter that is not the herald sees whether the herald is gone.
const LOOK_FOR_HERALD: Duration = Duration::from_secs(1);

/// How often the herald touches its heartbeat file.
const BEAT: Duration = Duration::from_secs(1);

/// How long a herald may go without a heartbeat before waiters stop relying on it.
const SILENT: Duration = Duration::from_secs(3);

pub(super) struct Herald {
    url: String,
    dir: PathBuf,
    key: String,
    state: PathBuf,
    beat: PathBuf,
    lock: File,
    leading: bool,
    /// The herald's word as this waiter last read it.
    last: Option<Vec<u8>>,
    /// The folder's watch, from the first wait on (`start`).
    watch: Option<FileWatch>,
}

impl Herald {
    /// The herald of the ledger at `url`, for taking turns at the server; it is joined
    /// (or become) at the first wait (`start`). None when this machine has no folder of
    /// this user's own for its files.
    pub(super) fn join(url: &str) -> Option<Herald> {
        let dir = private_folder()?;
        use sha2::Digest;
        let digest = sha2::Sha256::digest(super::postgres::redacted(url).as_bytes());
        let key: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let state = dir.join(format!("{key}.state"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("{key}.lock")))
            .ok()?;
        Some(Herald {
            url: url.to_string(),
            last: None,
            beat: dir.join(format!("{key}.beat")),
            dir,
            key,
            state,
            lock,
            leading: false,
            watch: None,
        })
    }

    /// Whether the first wait has started listening (see `start`).
    pub(super) fn started(&self) -> bool {
        self.watch.is_some()
    }

    /// The first wait: watches the herald's word from now on, and becomes the herald if
    /// there is none. The caller reads again at once, so that a change made before this
    /// is read.
    pub(super) fn start(&mut self) {
        self.watch = Some(FileWatch::new(
            &self.dir,
            vec![OsString::from(format!("{}.state", self.key))],
        ));
        self.last = std::fs::read(&self.state).ok();
        self.lead();
    }

    /// Whether the herald holds the lock but has not beaten its heart for `SILENT` (its
    /// process stopped, its connection hung), or never has (stopped before its first
    /// beat, or of a version without one).
    fn silent(&self) -> bool {
        std::fs::metadata(&self.beat)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_none_or(|since| since > SILENT)
    }

    /// Becomes the herald if there is none (true).
    fn lead(&mut self) -> bool {
        if self.leading || self.lock.try_lock().is_err() {
            return false;
        }
        let Ok(lock) = self.lock.try_clone() else {
            return false;
        };
        self.leading = true;
        let (url, state, dir, key, beat) = (
            self.url.clone(),
            self.state.clone(),
            self.dir.clone(),
            self.key.clone(),
            self.beat.clone(),
        );
        std::thread::spawn(move || herald(&url, &lock, &state, &dir, &key, &beat));
        true
    }

    /// Waits until the herald's word changes (or this waiter becomes the herald), or
    /// `timeout` passes; with a silent herald, a second at most.
    pub(super) fn wait(&mut self, timeout: Duration) {
        if !self.started() {
            self.start();
            return;
        }
        let began = Instant::now();
        let end = began + timeout;
        // The word is read only when the folder's watch says it may have changed: a read
        // opens the file, which every other waiter's watch hears of.
        let mut look = true;
        loop {
            if look {
                let word = std::fs::read(&self.state).ok();
                if word != self.last {
                    self.last = word;
                    return;
                }
            }
            // There was no herald for a moment: what changed meanwhile is read now.
            if self.lead() {
                return;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            // The herald holds the lock but says nothing: this waiter reads for itself,
            // once a second.
            if began.elapsed() >= LOOK_FOR_HERALD && self.silent() {
                return;
            }
            let Some(watch) = self.watch.as_mut() else {
                return;
            };
            look = watch.wait(left.min(LOOK_FOR_HERALD));
        }
    }

    /// A turn at a connection to the server: held (the file locked) until dropped. None
    /// when the files cannot be had (the waiter goes without).
    pub(super) fn turn(&self) -> Option<File> {
        let first = std::process::id() % TURNS;
        let open = |i: u32| {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(self.dir.join(format!("{}.turn{i}", self.key)))
                .ok()
        };
        for i in (0..TURNS).map(|n| (first + n) % TURNS) {
            let file = open(i)?;
            if file.try_lock().is_ok() {
                return Some(file);
            }
        }
        let file = open(first)?;
        file.lock().ok()?;
        Some(file)
    }
}

/// The herald's thread: holds the lock for as long as the process lives, and a connection
/// to the server whenever it can have one.
fn herald(url: &str, _lock: &File, state: &Path, dir: &Path, key: &str, beat: &Path) {
    let mut last = String::new();
    let mut pause = Duration::from_millis(100);
    let mut beaten: Option<Instant> = None;
    let mut heartbeat = || {
        if beaten.is_none_or(|at| at.elapsed() >= BEAT) {
            beaten = Some(Instant::now());
            touch(beat);
        }
    };
    loop {
        let (connected, _) = super::postgres::announce(url, |word| {
            heartbeat();
            if word != last {
                last = word.to_string();
                publish(state, dir, key, word);
            }
        });
        if connected {
            pause = Duration::from_millis(100);
        }
        // The server is out of reach: waiters wait on, and read again when it is back.
        heartbeat();
        std::thread::sleep(super::jittered(pause));
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

/// Sets the heartbeat file's time to now (a change of its times alone, which no waiter's
/// watch of the word hears).
fn touch(beat: &Path) {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(beat);
    if let Ok(file) = file {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// Replaces the word in the file at once (a new file renamed over it), so that no waiter
/// reads half of it.
fn publish(state: &Path, dir: &Path, key: &str, word: &str) {
    let next = dir.join(format!("{key}.state.{}", std::process::id()));
    if std::fs::write(&next, word).is_ok() && std::fs::rename(&next, state).is_err() {
        let _ = std::fs::remove_file(&next);
    }
}

/// A folder made with only the user's access, used only when it is the user's own (not a
/// link, nobody else's, closed to others): `questions-<uid>` under the temporary folder;
/// when another user made that one first, or opened it, the user's runtime folder
/// (`XDG_RUNTIME_DIR`), else their cache (`~/.cache`). Every waiter of the user finds the
/// same one, so none goes without a herald (and holds a connection of its own) because
/// another user took a name in a shared folder.
fn private_folder() -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let env_dir = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let candidates = [
        Some(std::env::temp_dir().join(format!("questions-{uid}"))),
        env_dir("XDG_RUNTIME_DIR").map(|d| d.join(format!("questions-{uid}"))),
        env_dir("HOME").map(|d| d.join(".cache").join(format!("questions-herald-{uid}"))),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|dir| is_private(dir, uid))
}

fn is_private(dir: &Path, uid: u32) -> bool {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    std::fs::symlink_metadata(dir)
        .is_ok_and(|meta| meta.is_dir() && meta.uid() == uid && meta.mode().trailing_zeros() >= 6)
}
