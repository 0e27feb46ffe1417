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
//! (each looks once a second) and heralds in its place. The files live in a folder of the
//! user's own under the system's temporary folder, named by the server and database (not
//! the password).

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::watch::FileWatch;

/// How many waiters of one machine may hold a connection to the server at once.
const TURNS: u32 = 16;

/// How often a waiter that is not the herald sees whether the herald is gone.
const LOOK_FOR_HERALD: Duration = Duration::from_secs(1);

pub(super) struct Herald {
    url: String,
    dir: PathBuf,
    key: String,
    state: PathBuf,
    lock: File,
    leading: bool,
    /// The herald's word as this waiter last read it.
    last: Option<Vec<u8>>,
    watch: FileWatch,
}

impl Herald {
    /// Joins (or becomes) the herald of the ledger at `url`; none when this machine has
    /// no folder of this user's own for its files.
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
        let watch = FileWatch::new(&dir, vec![OsString::from(format!("{key}.state"))]);
        let mut herald = Herald {
            url: url.to_string(),
            last: std::fs::read(&state).ok(),
            dir,
            key,
            state,
            lock,
            leading: false,
            watch,
        };
        herald.lead();
        Some(herald)
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
        let (url, state, dir, key) = (
            self.url.clone(),
            self.state.clone(),
            self.dir.clone(),
            self.key.clone(),
        );
        std::thread::spawn(move || herald(&url, &lock, &state, &dir, &key));
        true
    }

    /// Waits until the herald's word changes (or this waiter becomes the herald), or
    /// `timeout` passes.
    pub(super) fn wait(&mut self, timeout: Duration) {
        let end = Instant::now() + timeout;
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
            look = self.watch.wait(left.min(LOOK_FOR_HERALD));
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
fn herald(url: &str, _lock: &File, state: &Path, dir: &Path, key: &str) {
    let mut last = String::new();
    let mut pause = Duration::from_millis(100);
    loop {
        let (connected, _) = super::postgres::announce(url, |word| {
            if word != last {
                last = word.to_string();
                publish(state, dir, key, word);
            }
        });
        if connected {
            pause = Duration::from_millis(100);
        }
        // The server is out of reach: waiters wait on, and read again when it is back.
        std::thread::sleep(super::jittered(pause));
        pause = (pause * 2).min(Duration::from_secs(5));
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

/// `questions-<uid>` under the temporary folder, made with only the user's access, and
/// used only when it is the user's own folder (not a link, nobody else's, closed to
/// others).
fn private_folder() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("questions-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode().trailing_zeros() >= 6).then_some(dir)
}
