//! SQLite syncs a folder the first time a process syncs a log it opened with "create", a
//! third fsync on every write. The ledger's log is created once by `sqlite::create_log`,
//! which syncs the folder then, and is never deleted after, so that sync is turned off
//! here, at run time, in every build: a binary built from the published crate
//! (`cargo install questions`), which never sees this repository's `.cargo/config.toml`,
//! behaves as the one built here. The effect is SQLite's own `SQLITE_DISABLE_DIRSYNC`.

/// Makes SQLite's unix VFS skip its folder syncs, through its documented hook for
/// replacing a system call (`xSetSystemCall`, "openDirectory"). Idempotent.
#[cfg(unix)]
pub(super) fn skip_folder_syncs() {
    use rusqlite::ffi;
    use std::ffi::{c_char, c_int};

    /// SQLite's `openDirectory` answering as for a folder it cannot open, which makes
    /// `unixSync` (and `unixDelete`) skip the folder's fsync.
    unsafe extern "C" fn no_folder(_path: *const c_char, fd: *mut c_int) -> c_int {
        // SAFETY: SQLite passes a valid pointer to its own local.
        unsafe { *fd = -1 };
        ffi::SQLITE_CANTOPEN
    }

    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let replacement: unsafe extern "C" fn(*const c_char, *mut c_int) -> c_int = no_folder;
        // SAFETY: sqlite3_vfs_find returns the registered default VFS (it initialises
        // SQLite first) or null; the unix VFS's xSetSystemCall takes any function pointer
        // for a name and calls it with the signature of the call it replaces, which is
        // no_folder's.
        unsafe {
            let vfs = ffi::sqlite3_vfs_find(std::ptr::null());
            if let Some(set) = vfs.as_ref().and_then(|v| v.xSetSystemCall) {
                let pointer = std::mem::transmute::<
                    unsafe extern "C" fn(*const c_char, *mut c_int) -> c_int,
                    unsafe extern "C" fn(),
                >(replacement);
                set(vfs, c"openDirectory".as_ptr(), Some(pointer));
            }
        }
    });
}
