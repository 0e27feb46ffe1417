//! Finding the ledger: `--db`, then `QUESTIONS_DB` (both arrive here as one value), then
//! upwards from the current directory the nearest `.questions/` folder or uwf protocol
//! ledger, then `./.questions/ledger.db`.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub(super) const FOLDER: &str = ".questions";
pub(super) const FILE: &str = "ledger.db";
/// Where the uwf protocol's `questions.mjs` keeps its ledger, relative to the repository:
/// a uwf repository that swaps the script for `questions` keeps its ledger and its gates.
pub(super) const UWF_LEDGER: &str = ".github/skills/uwf-question-protocol/uwf-questions.db";

/// How the ledger was found, as `info` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum FoundBy {
    #[serde(rename = "--db")]
    Flag,
    #[serde(rename = "QUESTIONS_DB")]
    Env,
    #[serde(rename = "walk-up")]
    WalkUp,
    #[serde(rename = "uwf")]
    Uwf,
    #[serde(rename = "default")]
    Default,
}

impl FoundBy {
    pub fn as_str(self) -> &'static str {
        match self {
            FoundBy::Flag => "--db",
            FoundBy::Env => "QUESTIONS_DB",
            FoundBy::WalkUp => "walk-up",
            FoundBy::Uwf => "uwf",
            FoundBy::Default => "default",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file. `make_folder` is set for the default location, whose folder the first
    /// write creates; a path the user named must sit in a folder that exists.
    File { path: PathBuf, make_folder: bool },
    /// A PostgreSQL database, named by a `postgres://` or `postgresql://` URL or a libpq
    /// key=value string.
    #[cfg(feature = "postgres")]
    Postgres { url: String },
}

impl Location {
    /// The ledger, how it was found, and the other ledgers the walk-up passed over;
    /// `from_env` says that `db` came from `QUESTIONS_DB`.
    pub fn find(db: Option<&OsStr>, from_env: bool) -> Result<(Location, FoundBy, Vec<PathBuf>)> {
        if let Some(db) = db {
            let by = if from_env {
                FoundBy::Env
            } else {
                FoundBy::Flag
            };
            return Ok((Location::named(db)?, by, Vec::new()));
        }
        let cwd = std::env::current_dir()
            .map_err(|e| Error::io(format!("cannot read the current directory: {e}")))?;
        Ok(Location::nearest(&cwd))
    }

    /// The ledger `--db` or `QUESTIONS_DB` names.
    fn named(db: &OsStr) -> Result<Location> {
        let text = db.to_str().map(str::trim);
        if text.is_some_and(str::is_empty) {
            return Err(Error::usage(
                "the ledger location (--db or QUESTIONS_DB) is empty: give a file path \
                 or a postgres:// URL",
            ));
        }
        if let Some(url) = text.and_then(postgres_location) {
            // In a build without PostgreSQL, a usage error: never a file of that name.
            return super::postgres::location(url);
        }
        // `postgresql:/host/db`, `postgres:db`: meant for PostgreSQL, and never a file to
        // create (nor a text to print: it may hold a password).
        let scheme = |t: &str| {
            let lower = t.get(..11).unwrap_or(t).to_ascii_lowercase();
            lower.starts_with("postgres:") || lower.starts_with("postgresql:")
        };
        if text.is_some_and(scheme) {
            return Err(Error::usage(
                "the ledger location starts like a PostgreSQL URL but is not one: write \
                 postgres://USER:PASSWORD@HOST:PORT/DATABASE (two slashes after the colon)",
            ));
        }
        if let Some(text) = text.filter(|t| is_sqlite_special(t)) {
            return Err(Error::usage(format!(
                "the ledger location '{text}' is one of SQLite's in-memory or URI forms, \
                 which questions does not take: a write that exits 0 must be on disk. \
                 Give a file path (--db ./ledger.db) or a postgres:// URL"
            )));
        }
        Ok(Location::File {
            path: PathBuf::from(db),
            make_folder: false,
        })
    }
    /// At each directory upwards, the first that holds a `.questions/` folder or a uwf
    /// skill folder decides: the uwf protocol's ledger in the latter (created by the first
    /// write, as uwf repositories git-ignore it), which wins when both are there (the
    /// other is returned, to be named); else `.questions/ledger.db`. Outside both, a new
    /// `.questions/` at the top of the enclosing git work tree, or beside `cwd`.
    fn nearest(cwd: &Path) -> (Location, FoundBy, Vec<PathBuf>) {
        let existing = |path: PathBuf| Location::File {
            path,
            make_folder: false,
        };
        for dir in cwd.ancestors() {
            let folder = dir.join(FOLDER);
            let uwf = dir.join(UWF_LEDGER);
            let uwf_folder = uwf.parent().is_some_and(Path::is_dir);
            if uwf_folder || fs::symlink_metadata(&uwf).is_ok() {
                let also = if folder.is_dir() {
                    vec![folder.join(FILE)]
                } else {
                    Vec::new()
                };
                return (existing(uwf), FoundBy::Uwf, also);
            }
            if folder.is_dir() {
                return (existing(folder.join(FILE)), FoundBy::WalkUp, Vec::new());
            }
        }
        let top = cwd
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(cwd);
        let default = Location::File {
            path: top.join(FOLDER).join(FILE),
            make_folder: true,
        };
        (default, FoundBy::Default, Vec::new())
    }

    /// The ledger file and its `-wal` and `-shm` companions: the files no command writes
    /// over but the ledger's own engine, and that `reset` deletes.
    pub fn files(&self) -> Vec<PathBuf> {
        match self {
            Location::File { path, .. } => ["", "-wal", "-shm"]
                .iter()
                .map(|suffix| {
                    let mut name = path.clone().into_os_string();
                    name.push(suffix);
                    PathBuf::from(name)
                })
                .collect(),
            #[cfg(feature = "postgres")]
            Location::Postgres { .. } => Vec::new(),
        }
    }

    /// `other` names the ledger or one of its companions, however it is spelled: relative,
    /// with `..`, or through a symbolic link.
    pub fn is_ledger_file(&self, other: &Path) -> bool {
        let other = canonical(other);
        self.files().iter().any(|f| canonical(f) == other)
    }

    pub fn engine(&self) -> &'static str {
        match self {
            Location::File { .. } => "sqlite",
            #[cfg(feature = "postgres")]
            Location::Postgres { .. } => "postgres",
        }
    }

    /// How the location is named in messages and output.
    pub fn display(&self) -> String {
        match self {
            Location::File { path, .. } => path.display().to_string(),
            #[cfg(feature = "postgres")]
            Location::Postgres { url } => super::postgres::redacted(url),
        }
    }
}

/// Creates the default `.questions/` folder: private to its owner (0700), and holding a
/// `.gitignore` of `*` so that the ledger is never committed by accident.
pub fn make_default_folder(folder: &Path) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let fail = |e: std::io::Error| {
        Error::io(format!(
            "cannot create the ledger folder {}: {e}",
            folder.display()
        ))
    };
    let existed = folder.is_dir();
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .map_err(fail)?;
    if !existed {
        // The folder's name lives in its parent: durable only once that is synced.
        super::sqlite::sync_folder_of(folder)?;
    }
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(folder.join(".gitignore"))
    {
        Ok(mut file) => {
            file.write_all(b"*\n")
                .and_then(|()| file.sync_all())
                .map_err(fail)?;
            super::sqlite::sync_folder_of(&folder.join(".gitignore"))
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(fail(e)),
    }
}

/// A path with its symbolic links and `..` resolved, as far as it exists: a file not yet
/// created is its folder's canonical path and its name.
fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = fs::canonicalize(path) {
        return real;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => canonical(dir).join(name),
        _ => absolute,
    }
}

/// The 16 bytes every SQLite database file starts with.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Refuses (`db_error`, touching nothing) to delete what is not a ledger: anything that is
/// not a regular file (a directory, a symbolic link, a device), and a file that is not
/// empty yet lacks SQLite's header. A missing file is fine: there is nothing to delete.
pub fn refuse_non_ledger(path: &Path, must_be_sqlite: bool) -> Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("cannot read {}: {e}", path.display()))),
    };
    if !meta.file_type().is_file() {
        return Err(Error::db(format!(
            "{} is not a regular file (a directory, a symbolic link or a device); \
             reset deletes only ledger files, and left it untouched",
            path.display()
        )));
    }
    if !must_be_sqlite || meta.len() == 0 {
        return Ok(());
    }
    let mut head = [0u8; 16];
    // Through a kept descriptor: this process may have the ledger open (see `KEPT`).
    let read = super::sqlite::read_head(path, &mut head);
    if read.is_err() || &head != SQLITE_HEADER {
        return Err(Error::db(format!(
            "{} is not a SQLite database, so not a ledger; reset left it untouched. \
             Point --db at the ledger, or move the file away",
            path.display()
        )));
    }
    Ok(())
}

/// The libpq connection keywords: a location that starts with `keyword=` is a key=value
/// connection string, never a file name.
const LIBPQ_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "sslmode",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslrootcert",
    "sslcrl",
    "sslnegotiation",
    "channel_binding",
    "requiressl",
    "gssencmode",
    "krbsrvname",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
];

/// The PostgreSQL location `text` names, ready for the client: a URL whose scheme is
/// `postgres://` or `postgresql://` in any case (the client wants it in lower case), or a
/// libpq key=value string. `text` is already trimmed.
fn postgres_location(text: &str) -> Option<String> {
    for scheme in ["postgres://", "postgresql://"] {
        if text
            .get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
        {
            return Some(format!("{scheme}{}", &text[scheme.len()..]));
        }
    }
    let key = text.split('=').next()?;
    (key.len() < text.len() && LIBPQ_KEYWORDS.contains(&key.trim())).then(|| text.to_string())
}

/// `:memory:` and SQLite's `file:` URIs: a ledger that would not be on disk, or not where
/// its name says.
fn is_sqlite_special(text: &str) -> bool {
    text == ":memory:"
        || text
            .get(..5)
            .is_some_and(|head| head.eq_ignore_ascii_case("file:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_folder_upwards_wins() {
        let top = tempfile::tempdir().unwrap();
        let deep = top.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(
            Location::nearest(&deep),
            (
                Location::File {
                    path: deep.join(FOLDER).join(FILE),
                    make_folder: true
                },
                FoundBy::Default,
                vec![]
            )
        );
        // The uwf ledger at the top is found; a .questions/ folder nearer wins over it.
        let uwf = top.path().join(UWF_LEDGER);
        std::fs::create_dir_all(uwf.parent().unwrap()).unwrap();
        std::fs::write(&uwf, b"").unwrap();
        assert_eq!(
            Location::nearest(&deep),
            (
                Location::File {
                    path: uwf.clone(),
                    make_folder: false
                },
                FoundBy::Uwf,
                vec![]
            )
        );
        std::fs::create_dir(top.path().join("a").join(FOLDER)).unwrap();
        assert_eq!(
            Location::nearest(&deep),
            (
                Location::File {
                    path: top.path().join("a").join(FOLDER).join(FILE),
                    make_folder: false
                },
                FoundBy::WalkUp,
                vec![]
            )
        );
        // At one directory, its uwf ledger comes before its .questions/ folder, named.
        std::fs::create_dir(top.path().join(FOLDER)).unwrap();
        let (_, by, also) = Location::nearest(top.path());
        assert_eq!(by, FoundBy::Uwf);
        assert_eq!(also, vec![top.path().join(FOLDER).join(FILE)]);
    }
}

#[cfg(test)]
mod naming {
    use super::*;

    fn named(text: &str) -> Result<Location> {
        Location::named(OsStr::new(text))
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_in_any_case_with_spaces_and_as_key_value() {
        for (given, url) in [
            ("POSTGRES://u@h/d", "postgres://u@h/d"),
            (" PostgreSQL://u@h/d ", "postgresql://u@h/d"),
            ("host=h dbname=d password=p", "host=h dbname=d password=p"),
            (" dbname = d ", "dbname = d"),
        ] {
            assert_eq!(
                named(given).unwrap(),
                Location::Postgres { url: url.into() },
                "{given}"
            );
        }
    }

    #[test]
    fn memory_and_uris_are_refused_and_files_stay_files() {
        for given in [
            ":memory:",
            "file::memory:",
            "file:x.db?mode=memory",
            "FILE:x.db",
        ] {
            let err = named(given).unwrap_err();
            assert_eq!(err.code, crate::error::ErrorCode::Usage, "{given}");
        }
        for given in ["ledger.db", "a=b.db", "./host=x", "postgres.db"] {
            assert!(
                matches!(named(given).unwrap(), Location::File { .. }),
                "{given}"
            );
        }
        assert!(named("  ").is_err());
    }

    #[cfg(not(feature = "postgres"))]
    #[test]
    fn without_postgres_its_locations_are_refused_not_taken_for_files() {
        for given in [
            "postgres://u:secret@h/d",
            " PostgreSQL://u:secret@h/d ",
            "host=h dbname=d password=secret",
        ] {
            let err = named(given).unwrap_err();
            assert_eq!(err.code, crate::error::ErrorCode::Usage, "{given}");
            assert!(err.message.contains("no PostgreSQL support"), "{err:?}");
            assert!(!err.message.contains("secret"), "{err:?}");
        }
    }
}
