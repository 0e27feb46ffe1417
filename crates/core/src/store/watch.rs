//! Waiting for a file to change without looking at it on a timer: the kernel says when
//! (inotify on Linux, kqueue on the BSDs and macOS, through `notify`), so that a waiter
//! that nothing wakes costs nothing. Where the kernel will not watch one more folder (a
//! user's inotify instances are limited, 128 by default on Linux), the waiter looks
//! instead, every `TICK`: at a file's size and times, one system call, not a read of the
//! ledger.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher};

/// How often a waiter without a kernel watch looks at the files: each look is a wake-up
/// and a system call a file, so that 300 such waiters cost a few per cent of a core.
pub(super) const TICK: Duration = Duration::from_millis(500);

/// Some files of one folder, watched for a change of their content or their name.
pub(super) struct FileWatch {
    how: How,
    dir: PathBuf,
    names: Vec<OsString>,
}

enum How {
    /// The kernel tells: each event about one of the files is a message here.
    Told {
        events: Receiver<()>,
        // Dropping it ends the watch (and its thread).
        _watcher: notify::RecommendedWatcher,
    },
    /// No kernel watch to be had: the files' sizes and times as last looked at.
    Looking(Vec<Option<Stamp>>),
}

/// What a look at a file sees change when it is written, replaced or deleted.
#[derive(PartialEq, Eq, Clone, Copy)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    changed: (i64, i64),
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let (changed, inode) = {
        use std::os::unix::fs::MetadataExt;
        ((meta.ctime(), meta.ctime_nsec()), meta.ino())
    };
    #[cfg(not(unix))]
    let (changed, inode) = ((0, 0), 0);
    Some(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        changed,
        inode,
    })
}

impl FileWatch {
    /// Watches the files `names` of the folder `dir` (which need not exist yet, nor the
    /// files).
    pub(super) fn new(dir: &Path, names: Vec<OsString>) -> FileWatch {
        let how = match told(dir, &names) {
            Some(how) => how,
            None => How::Looking(names.iter().map(|n| stamp(&dir.join(n))).collect()),
        };
        FileWatch {
            how,
            dir: dir.to_path_buf(),
            names,
        }
    }

    /// Whether the kernel tells this watch of changes (false: it looks every `TICK`).
    pub(super) fn is_told(&self) -> bool {
        matches!(self.how, How::Told { .. })
    }

    /// Waits until one of the files may have changed (true), or `timeout` passes (false).
    /// Several changes together wake it once.
    pub(super) fn wait(&mut self, timeout: Duration) -> bool {
        match &mut self.how {
            How::Told { events, .. } => match events.recv_timeout(timeout) {
                Ok(()) => {
                    while events.try_recv().is_ok() {}
                    true
                }
                Err(RecvTimeoutError::Timeout) => false,
                // The watch's thread ended: look from now on.
                Err(RecvTimeoutError::Disconnected) => {
                    self.how = How::Looking(
                        self.names
                            .iter()
                            .map(|n| stamp(&self.dir.join(n)))
                            .collect(),
                    );
                    true
                }
            },
            How::Looking(last) => {
                let end = Instant::now() + timeout;
                loop {
                    let now: Vec<Option<Stamp>> = self
                        .names
                        .iter()
                        .map(|n| stamp(&self.dir.join(n)))
                        .collect();
                    if now != *last {
                        *last = now;
                        return true;
                    }
                    let left = end.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    std::thread::sleep(left.min(TICK));
                }
            }
        }
    }
}

/// A kernel watch of `dir` that sends a message for each event about one of `names`
/// that may change what a reader sees (not an open or a read), if the kernel gives one.
fn told(dir: &Path, names: &[OsString]) -> Option<How> {
    let (tx, events) = channel();
    let wanted: Vec<OsString> = names.to_vec();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let relevant = match event {
            // An overflowed queue or a failed watch: say "maybe", the reader looks.
            Err(_) => true,
            Ok(event) => {
                !matches!(
                    event.kind,
                    EventKind::Access(
                        notify::event::AccessKind::Open(_)
                            | notify::event::AccessKind::Read
                            | notify::event::AccessKind::Close(notify::event::AccessMode::Read)
                    )
                ) && (event.paths.is_empty()
                    || event.paths.iter().any(|p| {
                        p.file_name()
                            .is_some_and(|name| wanted.iter().any(|w| w == name))
                    }))
            }
        };
        if relevant {
            let _ = tx.send(());
        }
    })
    .ok()?;
    watcher.watch(dir, RecursiveMode::NonRecursive).ok()?;
    Some(How::Told {
        events,
        _watcher: watcher,
    })
}
