//! Schema migrations: refinery's embedded `migrations/V*.sql`, applied inside one
//! `BEGIN IMMEDIATE` transaction so that processes starting together on a new ledger
//! apply them exactly once, and a ledger from a newer `questions` is refused untouched.

use refinery::{Migrate, Migration};
use refinery_core::traits::sync::{Query, Transaction};
use rusqlite::Connection;

use crate::error::{Error, ErrorCode, Result};

mod embedded {
    refinery::embed_migrations!("migrations/sqlite");
}

const HISTORY_TABLE: &str = "refinery_schema_history";

/// The newest migration applied to a ledger, on either engine (NULL for none).
pub(super) const NEWEST_APPLIED: &str = "SELECT MAX(version) FROM refinery_schema_history";

/// The newest migration this binary carries (worked out from `migrations/` at build time).
pub fn latest_version() -> i64 {
    const LATEST: &str = env!("QUESTIONS_SCHEMA_VERSION");
    LATEST.parse().unwrap_or(0)
}

/// The newest migration the ledger has applied; 0 for a new file or a questions.mjs ledger.
/// Reads only, so an up-to-date ledger costs two small queries and no write lock.
pub(super) fn applied_version(conn: &Connection) -> Result<i64> {
    let has_history: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [HISTORY_TABLE],
        |row| row.get(0),
    )?;
    if !has_history {
        return Ok(0);
    }
    let version: Option<i64> = conn
        .query_row(NEWEST_APPLIED, [], |row| row.get(0))
        .map_err(|e| {
            Error::db(format!(
                "{HISTORY_DAMAGED} ({}): questions reads what it can but writes nothing to it; \
                 restore the ledger from a copy, or 'questions reset --yes' to start a new one",
                crate::error::brief(&crate::error::engine_words(&e))
            ))
        })?;
    Ok(version.unwrap_or(0))
}

/// How an unreadable migration history starts its message (see `history_is_damaged`).
const HISTORY_DAMAGED: &str = "the ledger is damaged: its migration history cannot be read";

/// The ledger's migration history cannot be read: its version is unknown, so it is read
/// as it is and never written.
pub(super) fn history_is_damaged(err: &Error) -> bool {
    err.message.starts_with(HISTORY_DAMAGED)
}

fn too_new(found: i64, latest: i64) -> Error {
    Error::new(
        ErrorCode::SchemaTooNew,
        format!(
            "this ledger was written by a newer questions (schema version {found}; this binary knows up to {latest}); \
             upgrade questions to use it. The ledger was not changed."
        ),
    )
}

/// Fails with `schema_too_new` for a ledger this binary must not touch; else the version
/// the ledger has.
pub(super) fn refuse_too_new(conn: &Connection) -> Result<i64> {
    let (found, latest) = (applied_version(conn)?, latest_version());
    if found > latest {
        return Err(too_new(found, latest));
    }
    Ok(found)
}

/// The schema every migration together makes on a new SQLite ledger, as SQLite keeps it
/// (without refinery's history table): `the_stand_in_has_the_schema_of_a_migrated_ledger`
/// holds it to the migrations, and writes it again when `QUESTIONS_WRITE_SCHEMA=1`.
const NEWEST_SCHEMA: &str = include_str!("newest-schema.sql");

/// Makes the newest schema in a new, empty database: the in-memory stand-in for a ledger
/// that does not exist yet. Running the migrations instead cost 3 ms a call (each
/// `ALTER TABLE` parses the schema again, and refinery's runner compiles a regex); this
/// is one parse. Nothing reads the stand-in's version, and it has no ledger id: a
/// ledger that does not exist was given none.
pub(super) fn create_newest(conn: &Connection) -> Result<()> {
    conn.execute_batch(NEWEST_SCHEMA)?;
    Ok(())
}

/// Brings the ledger up to date, or refuses one that is newer than this binary.
#[cfg(test)]
pub(super) fn ensure_current(conn: &mut Connection) -> Result<()> {
    let found = applied_version(conn)?;
    bring_current(conn, found)
}

/// `ensure_current` for a ledger whose version was just read as `found`.
pub(super) fn bring_current(conn: &mut Connection, found: i64) -> Result<()> {
    let latest = latest_version();
    if found > latest {
        return Err(too_new(found, latest));
    }
    if found == latest {
        return Ok(());
    }

    conn.execute_batch("BEGIN IMMEDIATE")?;
    let outcome = migrate_locked(conn, latest);
    match outcome {
        Ok(()) => conn.execute_batch("COMMIT").map_err(Error::from),
        Err(err) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(err)
        }
    }
}

fn migrate_locked(conn: &Connection, latest: i64) -> Result<()> {
    // Another process may have migrated while this one waited for the lock.
    let found = applied_version(conn)?;
    if found > latest {
        return Err(too_new(found, latest));
    }
    if found == latest {
        return Ok(());
    }
    embedded::migrations::runner()
        .set_abort_divergent(true)
        .set_abort_missing(true)
        .run(&mut Locked(conn))
        .map_err(|e| Error::db(format!("could not upgrade the ledger's schema: {e}")))?;
    Ok(())
}

/// PostgreSQL's migrations, in a build with that engine: the same versions as SQLite's
/// (build.rs holds them to it), run inside a transaction the caller already holds.
#[cfg(feature = "postgres")]
pub(super) mod on_postgres {
    use refinery::{Migrate, Migration};
    use refinery_core::traits::sync::{Query, Transaction};

    use crate::error::{Error, Result};

    pub(super) mod embedded {
        refinery::embed_migrations!("migrations/postgres");
    }

    /// Applies the PostgreSQL migrations inside `tx`, which holds the migration lock.
    pub(crate) fn run(tx: &mut postgres::Transaction<'_>) -> Result<()> {
        embedded::migrations::runner()
            .set_abort_divergent(true)
            .set_abort_missing(true)
            .run(&mut PgLocked(tx))
            .map_err(|e| Error::db(format!("could not upgrade the ledger's schema: {e}")))?;
        Ok(())
    }

    pub(crate) fn too_new_error(found: i64) -> Error {
        super::too_new(found, super::latest_version())
    }

    /// A PostgreSQL transaction already open: refinery's statements run inside it.
    struct PgLocked<'a, 'b>(&'a mut postgres::Transaction<'b>);

    impl Transaction for PgLocked<'_, '_> {
        type Error = postgres::Error;

        fn execute<'q, T: Iterator<Item = &'q str>>(
            &mut self,
            queries: T,
        ) -> Result<usize, Self::Error> {
            let mut count = 0;
            for query in queries {
                self.0.batch_execute(query)?;
                count += 1;
            }
            Ok(count)
        }
    }

    impl Query<Vec<Migration>> for PgLocked<'_, '_> {
        fn query(&mut self, query: &str) -> Result<Vec<Migration>, Self::Error> {
            let rows = self.0.query(query, &[])?;
            Ok(rows
                .iter()
                .map(|row| {
                    let checksum: String = row.get(3);
                    Migration::applied(
                        row.get(0),
                        row.get(1),
                        time::OffsetDateTime::UNIX_EPOCH,
                        checksum.parse().unwrap_or(0),
                    )
                })
                .collect())
        }
    }

    impl Migrate for PgLocked<'_, '_> {}
}

/// The connection with a transaction already open: refinery's statements run inside it
/// instead of opening their own.
struct Locked<'a>(&'a Connection);

impl Transaction for Locked<'_> {
    type Error = rusqlite::Error;

    fn execute<'b, T: Iterator<Item = &'b str>>(
        &mut self,
        queries: T,
    ) -> Result<usize, Self::Error> {
        let mut count = 0;
        for query in queries {
            self.0.execute_batch(query)?;
            count += 1;
        }
        Ok(count)
    }
}

impl Query<Vec<Migration>> for Locked<'_> {
    fn query(&mut self, query: &str) -> Result<Vec<Migration>, Self::Error> {
        let mut stmt = self.0.prepare(query)?;
        let mut rows = stmt.query([])?;
        let mut applied = Vec::new();
        while let Some(row) = rows.next()? {
            let version: i32 = row.get(0)?;
            let name: String = row.get(1)?;
            let checksum: String = row.get(3)?;
            // The applied time is only reported, never compared; a checksum that does not
            // read as a number can only diverge, which refinery then reports.
            applied.push(Migration::applied(
                version,
                name,
                time::OffsetDateTime::UNIX_EPOCH,
                checksum.parse().unwrap_or(0),
            ));
        }
        Ok(applied)
    }
}

impl Migrate for Locked<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_database_is_migrated_once() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(applied_version(&conn).unwrap(), 0);
        ensure_current(&mut conn).unwrap();
        assert_eq!(applied_version(&conn).unwrap(), latest_version());
        ensure_current(&mut conn).unwrap();
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM refinery_schema_history", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(rows, latest_version());
    }

    fn newest(runner: refinery::Runner) -> Option<i64> {
        let versions = runner
            .get_migrations()
            .iter()
            .map(|m| i64::from(m.version()));
        versions.max()
    }

    #[test]
    fn the_build_time_version_is_the_newest_embedded_migration() {
        assert_eq!(
            Some(latest_version()),
            newest(embedded::migrations::runner())
        );
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_carries_the_same_newest_migration() {
        let runner = on_postgres::embedded::migrations::runner();
        assert_eq!(Some(latest_version()), newest(runner));
    }

    #[test]
    fn the_stand_in_has_the_schema_of_a_migrated_ledger() {
        let schema = |conn: &Connection| -> Vec<String> {
            let mut stmt = conn
                .prepare(
                    "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL
                     AND name NOT IN ('refinery_schema_history', 'sqlite_sequence')
                     ORDER BY rowid",
                )
                .unwrap();
            let rows = stmt.query_map([], |r| r.get(0)).unwrap();
            rows.map(Result::unwrap).collect()
        };
        let mut migrated = Connection::open_in_memory().unwrap();
        ensure_current(&mut migrated).unwrap();
        let newest: String = std::iter::once(
            "-- The schema the migrations make, written by the test \
             the_stand_in_has_the_schema_of_a_migrated_ledger: do not edit.\n"
                .to_string(),
        )
        .chain(schema(&migrated).iter().map(|sql| format!("{sql};\n")))
        .collect();
        if std::env::var_os("QUESTIONS_WRITE_SCHEMA").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/store/newest-schema.sql");
            std::fs::write(path, &newest).unwrap();
        }
        assert_eq!(
            NEWEST_SCHEMA, newest,
            "a migration changed the schema: run this test with QUESTIONS_WRITE_SCHEMA=1 to write \
             newest-schema.sql, then again"
        );
        let stand_in = Connection::open_in_memory().unwrap();
        create_newest(&stand_in).unwrap();
        assert_eq!(schema(&stand_in), schema(&migrated));
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        ensure_current(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (?1, 'future', '2030-01-01T00:00:00Z', '1')",
            [latest_version() + 1],
        )
        .unwrap();
        let err = ensure_current(&mut conn).unwrap_err();
        assert_eq!(err.code, ErrorCode::SchemaTooNew);
    }
}
