//! The PostgreSQL engine's place in a build without it (the cargo feature `postgres` off):
//! SQLite alone, with no PostgreSQL client, TLS or tokio compiled in. A location that names
//! PostgreSQL is refused as a usage error, never taken for a file of that name.

use super::Location;
use crate::error::{Error, Result};

/// The ledger a PostgreSQL location names: none in this build. The location is not
/// repeated (it may hold a password).
pub(super) fn location(_url: String) -> Result<Location> {
    Err(Error::usage(
        "this build of questions has no PostgreSQL support (its cargo feature 'postgres' is \
         off): install the default build, or build with --features postgres; or give --db \
         (or QUESTIONS_DB) a SQLite file path",
    ))
}
