//! Finding the ledger: `--db`, then `QUESTIONS_DB` (both arrive here as one value), then
//! the nearest `.questions/` folder upwards, then `./.questions/ledger.db`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub const FOLDER: &str = ".questions";
pub const FILE: &str = "ledger.db";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file. `make_folder` is set for the default location, whose folder the first
    /// write creates; a path the user named must sit in a folder that exists.
    File { path: PathBuf, make_folder: bool },
    /// A PostgreSQL database, named by a `postgres://` or `postgresql://` URL.
    Postgres { url: String },
}

impl Location {
    pub fn resolve(db: Option<&OsStr>) -> Result<Location> {
        if let Some(db) = db {
            if db.is_empty() {
                return Err(Error::usage(
                    "the ledger location (--db or QUESTIONS_DB) is empty: give a file path",
                ));
            }
            if let Some(url) = db
                .to_str()
                .filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
            {
                return Ok(Location::Postgres {
                    url: url.to_string(),
                });
            }
            return Ok(Location::File {
                path: PathBuf::from(db),
                make_folder: false,
            });
        }
        let cwd = std::env::current_dir()
            .map_err(|e| Error::io(format!("cannot read the current directory: {e}")))?;
        Ok(Location::nearest(&cwd))
    }

    fn nearest(cwd: &Path) -> Location {
        for dir in cwd.ancestors() {
            let folder = dir.join(FOLDER);
            if folder.is_dir() {
                return Location::File {
                    path: folder.join(FILE),
                    make_folder: false,
                };
            }
        }
        Location::File {
            path: cwd.join(FOLDER).join(FILE),
            make_folder: true,
        }
    }

    /// How the location is named in messages and output.
    pub fn display(&self) -> String {
        match self {
            Location::File { path, .. } => path.display().to_string(),
            Location::Postgres { url } => super::postgres::redacted(url),
        }
    }
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
            Location::File {
                path: deep.join(FOLDER).join(FILE),
                make_folder: true
            }
        );
        std::fs::create_dir(top.path().join("a").join(FOLDER)).unwrap();
        assert_eq!(
            Location::nearest(&deep),
            Location::File {
                path: top.path().join("a").join(FOLDER).join(FILE),
                make_folder: false
            }
        );
    }
}
