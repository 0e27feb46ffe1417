//! The shared engine: a PostgreSQL database, for orchestrators on several machines.
//!
//! Same tables and same JSON as the SQLite file. Writes run SERIALIZABLE and are retried
//! from the start when they lose a race (so a read-then-write never loses an update);
//! reads run in a read-only REPEATABLE READ snapshot. Migrations run under a transaction-
//! scoped advisory lock, so processes starting together apply them once.

use std::cell::RefCell;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, GenericClient, IsolationLevel, NoTls};

use super::migrate;
use super::sql::{Cell, Conn, Dialect, Param, Rows, Tx};
use crate::error::{Error, Result};

/// Every table a ledger's migrations create, in the order a reset locks them (the events
/// first, as writers do): `reset` drops them all, so that nothing of a ledger (its groups
/// of approvers, say) outlives it into the next one.
const LEDGER_TABLES: [&str; 24] = [
    "question_events",
    "questions",
    "watchers",
    "approval_groups",
    "approval_group_admins",
    "mcp_tasks",
    "people_links",
    "relay_pairings",
    "relay_deliveries",
    "relay_events",
    "relay_state",
    "api_tokens",
    "sign_ins",
    "device_sign_ins",
    "spent_refresh",
    "oauth_clients",
    "oauth_codes",
    "routing_policies",
    "routing_slots",
    "routing_reminders",
    "people_delegations",
    "people_quiet",
    "ledger_identity",
    "refinery_schema_history",
];

/// Any number fixed for this program: the advisory lock migrations take.
const MIGRATION_LOCK: i64 = 0x7175_6573_7469_6f6e; // "question" in ASCII, near enough
const ATTEMPTS: u32 = 30;

/// Writers take turns, each from before its first read to its commit. Event seqs come
/// from a sequence and transactions could commit in any order: seq 11 could be read
/// before seq 10 committed, and a reader resuming after 11 would never see 10. One writer
/// at a time makes the seqs commit-ordered (whoever reads a seq can already read every
/// lower one), and, taken before the transaction's snapshot (LOCK TABLE takes none, a
/// SELECT would), it spares writers the serialization failures of racing each other.
/// Readers are not held up: the mode lets them in.
const WRITERS_TAKE_TURNS: &str = "LOCK TABLE question_events IN SHARE ROW EXCLUSIVE MODE";

pub(super) struct Pg {
    client: Client,
    /// LISTEN has been sent on this connection (see `wait_for_event`).
    listening: bool,
    /// The ledger's id as `is_replaced` first read it.
    id: Option<String>,
}

/// The ledger a PostgreSQL location names (see `no_postgres.rs` for a build without it).
pub(super) fn location(url: String) -> Result<super::Location> {
    Ok(super::Location::Postgres { url })
}

/// The location as it may be printed: no password.
pub(super) fn redacted(location: &str) -> String {
    let url = super::tls::split(location)
        .map(|(rest, _)| rest)
        .unwrap_or_default();
    match url.parse::<postgres::Config>() {
        Ok(config) => {
            let host = config.get_hosts().first().map_or_else(
                || "localhost".to_string(),
                |h| match h {
                    postgres::config::Host::Tcp(name) => name.clone(),
                    postgres::config::Host::Unix(path) => path.display().to_string(),
                },
            );
            let port = config.get_ports().first().copied().unwrap_or(5432);
            let user = config.get_user().unwrap_or("");
            let db = config.get_dbname().unwrap_or(user);
            format!("postgres://{user}@{host}:{port}/{db}")
        }
        Err(_) => "the PostgreSQL location".to_string(),
    }
}

/// How long a write (or a reader that does not wait) goes on asking for a connection that
/// the server refuses for want of a free one (`max_connections` reached by other
/// programs), before it says so.
const PATIENCE: Duration = Duration::from_secs(30);

/// A connection, asked for again, with a growing pause and some jitter, while the server
/// has none free and `patient` (for `PATIENCE` at most); then a failure that names the
/// cause and what to do.
fn connect_patiently(location: &str, patient: bool) -> Result<Client> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        match connect(location) {
            Err(e) if e.full && patient && start.elapsed() < PATIENCE => {
                std::thread::sleep(super::jittered(pause));
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            Err(e) if e.full => {
                let mut err = Error::db(format!(
                    "PostgreSQL at {} has no connection free (\"too many clients already\"{}): \
                     its max_connections are taken by other programs; raise max_connections on \
                     the server, or put a pooler in front of it (PgBouncer in transaction mode) \
                     and give its address to --db",
                    redacted(location),
                    if patient {
                        format!(", for {} s", start.elapsed().as_secs())
                    } else {
                        String::new()
                    }
                ));
                err.reach = Some(crate::error::Reach::Busy);
                return Err(err);
            }
            Err(e) => return Err(e.error),
            Ok(client) => return Ok(client),
        }
    }
}

/// A failed connection, and whether the server refused it for want of a free one.
struct Refused {
    error: Error,
    full: bool,
}

impl From<Error> for Refused {
    fn from(error: Error) -> Refused {
        Refused { error, full: false }
    }
}

fn connect(location: &str) -> std::result::Result<Client, Refused> {
    let (url, tls) = super::tls::split(location)?;
    let mut config: postgres::Config = url.parse().map_err(|e: postgres::Error| {
        // The parser's own words, and the cause under them ("invalid port"), never
        // the location itself: it may hold a password.
        let mut why = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            why = format!("{why}: {s}");
            source = s.source();
        }
        Error::usage(format!(
            "the PostgreSQL location is not valid ({why}); write \
                 postgres://USER:PASSWORD@HOST:PORT/DATABASE or host=HOST dbname=DATABASE …"
        ))
    })?;
    let limits = limits(&config)?;
    config
        .connect_timeout(limits.connect)
        .application_name("questions")
        .ssl_mode(tls.mode.client_mode());
    let rustls = match tls.mode {
        super::tls::SslMode::Disable => None,
        _ => Some(tokio_postgres_rustls::MakeRustlsConnect::new(
            super::tls::client_config(&tls)?,
        )),
    };
    // Over TCP the client hands the socket to `Bounded` at once ("direct" negotiation:
    // `Bounded` does the negotiation the mode asks for itself), which bounds every step
    // after the TCP connection. A Unix socket has no host name for that path: it keeps
    // the client's own (local sockets do not go half-open).
    let hosts = config.get_hosts();
    let tcp = !hosts.is_empty()
        && hosts
            .iter()
            .all(|h| matches!(h, postgres::config::Host::Tcp(_)));
    let connected = match (tcp, rustls) {
        (true, rustls) => {
            config
                .ssl_mode(postgres::config::SslMode::Require)
                .ssl_negotiation(postgres::config::SslNegotiation::Direct);
            let bounded =
                super::bounded::Bounded::new(rustls, tls.mode, limits, &redacted(location));
            config.connect(bounded)
        }
        (false, None) => config.connect(NoTls),
        (false, Some(rustls)) => config.connect(rustls),
    };
    connected.map_err(|e| {
        let full = e.code() == Some(&SqlState::TOO_MANY_CONNECTIONS);
        let mut error = connect_error(&e, &config, &tls, location);
        error.reach = reach(&e);
        Refused { error, full }
    })
}

fn connect_error(
    e: &postgres::Error,
    config: &postgres::Config,
    tls: &super::tls::Tls,
    location: &str,
) -> Error {
    {
        if let Some(silent) = super::bounded::silent(e) {
            return Error::db(silent);
        }
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(name)) => name.clone(),
            _ => "localhost".to_string(),
        };
        let why = super::tls::explain(e, tls, &host).unwrap_or_else(|| cause(e));
        Error::db(format!(
            "cannot connect to PostgreSQL at {}: {why}",
            redacted(location),
        ))
    }
}

/// How the server was out of reach, if it was.
fn reach(e: &postgres::Error) -> Option<crate::error::Reach> {
    use crate::error::Reach;
    if busy(e) {
        Some(Reach::Busy)
    } else if dropped(e) {
        Some(Reach::Dropped)
    } else if unreachable(e) {
        Some(Reach::Unreachable)
    } else {
        None
    }
}

/// The connection was made, then lost: the server (or a pooler) ended it, or it broke.
fn dropped(e: &postgres::Error) -> bool {
    use std::io::ErrorKind as K;
    if let Some(code) = e.code() {
        return matches!(code, &SqlState::ADMIN_SHUTDOWN | &SqlState::CRASH_SHUTDOWN)
            || code.code().starts_with("08");
    }
    e.is_closed()
        || io_kind(e).is_some_and(|k| {
            matches!(
                k,
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
            )
        })
}

/// The server is there, but has no connection free or is starting up.
fn busy(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(&SqlState::TOO_MANY_CONNECTIONS | &SqlState::CANNOT_CONNECT_NOW)
    )
}

/// The server is out of reach for now, neither busy nor a connection that dropped (`reach`
/// asks those first): nothing answered the connection, or a bound ran out.
fn unreachable(e: &postgres::Error) -> bool {
    use std::io::ErrorKind as K;
    super::bounded::silent(e).is_some()
        || io_kind(e).is_some_and(|k| {
            matches!(
                k,
                K::ConnectionRefused
                    | K::NotConnected
                    | K::TimedOut
                    | K::HostUnreachable
                    | K::NetworkUnreachable
            )
        })
}

/// The kind of the first I/O error under `e`, if any.
fn io_kind(e: &postgres::Error) -> Option<std::io::ErrorKind> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        source = s.source();
    }
    None
}

/// How long a server may take: to connect, `connect_timeout` from the location (libpq's
/// parameter; a positive number of seconds), else 10 s; to go on answering a statement,
/// `QUESTIONS_PG_QUERY_TIMEOUT` seconds, else 60 (writes wait for each other's turn, and a
/// reset for every command in flight: a careful bound, not a tight one). Waits for a
/// change are not statements: they have no bound of this kind. A reader with a deadline
/// (see `BoundUntil`) has each statement it sends end by then (`Guarded::rearm`), on a
/// connection kept open between its looks too.
fn limits(config: &postgres::Config) -> Result<super::bounded::Limits> {
    const CONNECT: Duration = Duration::from_secs(10);
    const QUERY: Duration = Duration::from_mins(1);
    let query = match std::env::var("QUESTIONS_PG_QUERY_TIMEOUT") {
        Err(_) => QUERY,
        Ok(text) => match text.trim().parse::<f64>() {
            Ok(s) if s > 0.0 && s < 1e9 => Duration::from_secs_f64(s),
            _ => {
                return Err(Error::usage(format!(
                    "QUESTIONS_PG_QUERY_TIMEOUT is '{}': give the seconds a PostgreSQL server \
                     may take to answer a statement, a number above 0 (default 60)",
                    text.trim()
                )))
            }
        },
    };
    Ok(super::bounded::Limits {
        connect: config.get_connect_timeout().copied().unwrap_or(CONNECT),
        query,
        by_deadline: false,
    })
}

/// The server's own words where there are some, else the client's.
fn cause(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        db.message().to_string()
    } else {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            text = format!("{text}: {s}");
            source = s.source();
        }
        text
    }
}

/// A command's transaction found the ledger's tables gone: `reset` ran meanwhile.
fn reset_meanwhile(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNDEFINED_TABLE)
        || e.as_db_error()
            .is_some_and(|db| db.message().starts_with("could not open relation with OID"))
}

fn pg_error(e: postgres::Error) -> Error {
    let mut err = pg_error_of(&e);
    err.reach = reach(&e);
    err
}

fn pg_error_of(e: &postgres::Error) -> Error {
    if let Some(silent) = super::bounded::silent(e) {
        return Error::db(silent);
    }
    if reset_meanwhile(e) {
        return Error::db(
            "the ledger was reset while this command ran; nothing was recorded".to_string(),
        );
    }
    let transient = matches!(
        e.code(),
        Some(&SqlState::T_R_SERIALIZATION_FAILURE | &SqlState::T_R_DEADLOCK_DETECTED)
    );
    let mut err = Error::db(format!(
        "database error: {}",
        crate::error::brief(&cause(e))
    ));
    err.transient = transient;
    err
}

/// The newest migration applied, in one round trip: the common case on every call. A
/// database with no ledger yet has no history table; that error is the answer 0.
fn current_version(client: &mut Client) -> Result<i64> {
    match client.simple_query(super::migrate::NEWEST_APPLIED) {
        Ok(messages) => Ok(messages
            .iter()
            .find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => row.get(0),
                _ => None,
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)),
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Ok(0),
        Err(e) => Err(pg_error(e)),
    }
}

/// The newest migration applied, inside a transaction (where an error would end it).
fn applied_version(client: &mut impl GenericClient) -> Result<i64> {
    let row = client
        .query_one(
            "SELECT to_regclass('refinery_schema_history') IS NOT NULL",
            &[],
        )
        .map_err(pg_error)?;
    if !row.get::<_, bool>(0) {
        return Ok(0);
    }
    let row = client
        .query_one(super::migrate::NEWEST_APPLIED, &[])
        .map_err(pg_error)?;
    Ok(row.get::<_, Option<i32>>(0).map_or(0, i64::from))
}

impl Pg {
    /// `None`: the database holds no ledger yet, so nothing is created; the caller reads
    /// an empty ledger instead.
    pub(super) fn open_for_reading(url: &str, patient: bool) -> Result<Option<Pg>> {
        let mut client = connect_patiently(url, patient)?;
        let found = current_version(&mut client)?;
        if found > migrate::latest_version() {
            return Err(migrate::on_postgres::too_new_error(found));
        }
        if found == 0 {
            return Ok(None);
        }
        Pg::migrated(client, found).map(Some)
    }

    /// The ledger, its tables created or brought up to date when needed.
    pub(super) fn open_for_writing(url: &str) -> Result<Pg> {
        let mut client = connect_patiently(url, true)?;
        let found = current_version(&mut client)?;
        Pg::migrated(client, found)
    }

    fn migrated(mut client: Client, found: i64) -> Result<Pg> {
        let latest = migrate::latest_version();
        if found > latest {
            return Err(migrate::on_postgres::too_new_error(found));
        }
        if found < latest {
            let mut tx = client.transaction().map_err(pg_error)?;
            tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))
                .map_err(pg_error)?;
            // Another process may have migrated while this one waited for the lock.
            let found = applied_version(&mut tx)?;
            if found > latest {
                return Err(migrate::on_postgres::too_new_error(found));
            }
            if found < latest {
                migrate::on_postgres::run(&mut tx)?;
            }
            tx.commit().map_err(pg_error)?;
        }
        Ok(Pg {
            client,
            listening: false,
            id: None,
        })
    }

    /// Drops the ledger's tables: `reset` for a database. False when there was no ledger.
    /// The tables are locked first in the order every command takes them (the history,
    /// then questions: see `WRITERS_TAKE_TURNS`), so that reset waits for commands in
    /// flight instead of deadlocking with them; a command waiting behind it then finds the
    /// tables gone and fails.
    pub(super) fn drop_all(url: &str) -> Result<bool> {
        // A command that takes the tables in another order (the relay's lease, then the
        // history) can still deadlock with the locks below: the server then rolls the
        // reset back, and it is made again, whole.
        let mut tries = 0;
        loop {
            match Self::drop_all_once(url) {
                Err(e) if e.transient && tries < 5 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50 * tries));
                }
                other => return other,
            }
        }
    }

    fn drop_all_once(url: &str) -> Result<bool> {
        let mut client = connect_patiently(url, true)?;
        let mut tx = client.transaction().map_err(pg_error)?;
        // Not in the middle of another process's migration (which may be making the
        // ledger anew just now).
        tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))
            .map_err(pg_error)?;
        let present: Vec<String> = tx
            .query_typed(
                "SELECT name FROM unnest($1::text[]) WITH ORDINALITY AS t(name, n) \
                 WHERE to_regclass(name) IS NOT NULL ORDER BY n",
                &[(&&LEDGER_TABLES[..], postgres::types::Type::TEXT_ARRAY)],
            )
            .map_err(pg_error)?
            .iter()
            .map(|row| row.get(0))
            .collect();
        if !present.is_empty() {
            tx.batch_execute(&format!(
                "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
                present.join(", ")
            ))
            .map_err(pg_error)?;
        }
        tx.batch_execute(&format!(
            "DROP TABLE IF EXISTS {} CASCADE;
             DROP FUNCTION IF EXISTS question_events_append_only();
             DROP FUNCTION IF EXISTS question_events_notify();
             NOTIFY questions_events;",
            LEDGER_TABLES.join(", ")
        ))
        .map_err(pg_error)?;
        tx.commit().map_err(pg_error)?;
        Ok(!present.is_empty())
    }

    /// Whether the database at `url` holds a ledger (a reader that found none looks again).
    pub(super) fn has_ledger(url: &str) -> Result<bool> {
        Ok(current_version(&mut connect_patiently(url, false)?)? > 0)
    }

    /// The ledger in this database is no longer the one this connection first saw: it was
    /// reset (its tables dropped, perhaps made anew with another id). The first call
    /// notes the id.
    pub(super) fn is_replaced(&mut self) -> Result<bool> {
        let now = match self
            .client
            .query_typed("SELECT id FROM ledger_identity LIMIT 1", &[])
        {
            Ok(rows) => rows.first().map(|row| row.get::<_, String>(0)),
            Err(e) if reset_meanwhile(&e) => return Ok(true),
            Err(e) => return Err(pg_error(e)),
        };
        match &self.id {
            None => {
                self.id = now;
                Ok(false)
            }
            Some(id) => Ok(now.as_ref() != Some(id)),
        }
    }

    /// The ledger's id as this connection saw it (see `is_replaced`).
    pub(super) fn id(&self) -> Option<String> {
        self.id.clone()
    }

    /// Takes the id an earlier connection of the same reader saw, so that `is_replaced`
    /// tells a ledger reset between the two.
    pub(super) fn remember(&mut self, id: Option<String>) {
        if self.id.is_none() {
            self.id = id;
        }
    }

    /// Waits for a notification of a new event (each insert into the history sends one),
    /// or `timeout`. The first call starts listening; an event committed before that is
    /// seen by the caller's next read, within the cap on `timeout` it chooses.
    pub(super) fn wait_for_event(&mut self, timeout: Duration) -> Result<()> {
        if !self.listening {
            self.client
                .batch_execute("LISTEN questions_events")
                .map_err(pg_error)?;
            self.listening = true;
        }
        use postgres::fallible_iterator::FallibleIterator;
        let mut notifications = self.client.notifications();
        notifications
            .timeout_iter(timeout)
            .next()
            .map_err(pg_error)?;
        // Several events may have arrived together: take them all now.
        let mut pending = notifications.iter();
        while pending.next().map_err(pg_error)?.is_some() {}
        Ok(())
    }

    pub(super) fn schema_version(&mut self) -> Result<i64> {
        current_version(&mut self.client)
    }

    pub(super) fn read<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        let tx = self
            .client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(pg_error)?;
        let wrapped = PgTx(RefCell::new(tx));
        let value = f(&Tx::new(&wrapped))?;
        wrapped.0.into_inner().commit().map_err(pg_error)?;
        Ok(value)
    }

    pub(super) fn write<T>(&mut self, f: impl Fn(&Tx) -> Result<T>) -> Result<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let uncommitted = |mut e: Error| {
                e.uncommitted = true;
                e
            };
            let tx = self
                .client
                .build_transaction()
                .isolation_level(IsolationLevel::Serializable)
                .start()
                .map_err(|e| uncommitted(pg_error(e)))?;
            let wrapped = PgTx(RefCell::new(tx));
            let turn = wrapped.0.borrow_mut().batch_execute(WRITERS_TAKE_TURNS);
            let outcome = turn
                .map_err(pg_error)
                .and_then(|()| f(&Tx::new(&wrapped)))
                .map_err(uncommitted)
                .and_then(|value| {
                    crate::fault::point("before-commit");
                    wrapped.0.into_inner().commit().map_err(pg_error)?;
                    Ok(value)
                });
            match outcome {
                Err(e) if e.transient && attempt < ATTEMPTS => {
                    // Lost a race with another writer: back off a little and start over.
                    std::thread::sleep(Duration::from_millis(u64::from(attempt) * 3));
                }
                other => return other,
            }
        }
    }
}

/// The herald's side (see `herald`): one connection that listens for the ledger's
/// notifications and looks at its newest event every `LOOK` (through a pooler in
/// transaction mode, where notifications do not reach the client, that is what wakes),
/// handing `publish` the ledger's state ("seq id") each time. Returns only when the
/// connection fails, with whether it was made.
#[cfg(unix)]
pub(super) fn announce(url: &str, mut publish: impl FnMut(&str)) -> (bool, Error) {
    const LOOK: Duration = Duration::from_millis(400);
    const STATE: &str = "SELECT (SELECT COALESCE(MAX(id), 0) FROM question_events)::text \
         || ' ' || COALESCE((SELECT id FROM ledger_identity LIMIT 1), '')";
    let mut client = match connect(url) {
        Ok(client) => client,
        Err(e) => return (false, e.error),
    };
    if let Err(e) = client.batch_execute("LISTEN questions_events") {
        return (true, pg_error(e));
    }
    loop {
        let state = match client.simple_query(STATE) {
            Ok(messages) => messages
                .iter()
                .find_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
                    _ => None,
                })
                .unwrap_or_default(),
            Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => "none".to_string(),
            Err(e) => return (true, pg_error(e)),
        };
        publish(&state);
        use postgres::fallible_iterator::FallibleIterator;
        let mut notifications = client.notifications();
        if let Err(e) = notifications.timeout_iter(LOOK).next() {
            return (true, pg_error(e));
        }
        let mut pending = notifications.iter();
        loop {
            match pending.next() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => return (true, pg_error(e)),
            }
        }
    }
}

/// One transaction; `Tx` takes `&self`, the client wants `&mut`.
struct PgTx<'a>(RefCell<postgres::Transaction<'a>>);

impl Conn for PgTx<'_> {
    /// One round trip a statement, and no named statement left on the server (so that a
    /// pooler in transaction mode, PgBouncer's, can share the connection): the parameters'
    /// types are given, not asked for.
    fn query(&self, sql: &str, params: &[Param]) -> Result<Rows> {
        let values = values(params);
        let typed: Vec<(&(dyn ToSql + Sync), Type)> = values
            .iter()
            .map(|(v, t)| (v.as_ref(), t.clone()))
            .collect();
        let rows = self
            .0
            .borrow_mut()
            .query_typed(sql, &typed)
            .map_err(pg_error)?;
        let columns: Vec<String> = match rows.first() {
            Some(row) => row.columns().iter().map(|c| c.name().to_string()).collect(),
            None => Vec::new(),
        };
        let mut cells = Vec::with_capacity(rows.len() * columns.len());
        for row in &rows {
            for (i, column) in row.columns().iter().enumerate() {
                cells.push(cell(row, i, column.type_())?);
            }
        }
        Ok(Rows { columns, cells })
    }

    fn execute(&self, sql: &str, params: &[Param]) -> Result<u64> {
        let values = values(params);
        let typed: Vec<(&(dyn ToSql + Sync), Type)> = values
            .iter()
            .map(|(v, t)| (v.as_ref(), t.clone()))
            .collect();
        self.0
            .borrow_mut()
            .execute_typed(sql, &typed)
            .map_err(pg_error)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
}

/// The values to bind, with their types.
fn values(params: &[Param]) -> Vec<(Box<dyn ToSql + Sync>, Type)> {
    params
        .iter()
        .map(|p| -> (Box<dyn ToSql + Sync>, Type) {
            match *p {
                Param::Int(v) => (Box::new(v), Type::INT8),
                Param::Text(v) => (Box::new(v.map(str::to_string)), Type::TEXT),
                Param::Bool(v) => (Box::new(v), Type::BOOL),
                Param::Ids(ids) => (Box::new(ids.to_vec()), Type::INT8_ARRAY),
            }
        })
        .collect()
}

fn bad_row(e: postgres::Error) -> Error {
    Error::db(format!("a ledger row could not be read: {e}"))
}

fn cell(row: &postgres::Row, i: usize, ty: &Type) -> Result<Cell> {
    let cell = match *ty {
        Type::BOOL => row.try_get::<_, Option<bool>>(i).map(|v| v.map(Cell::Bool)),
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map(|v| v.map(Cell::Int)),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map(|v| v.map(|n| Cell::Int(n.into()))),
        _ => row
            .try_get::<_, Option<String>>(i)
            .map(|v| v.map(Cell::Text)),
    };
    Ok(cell.map_err(bad_row)?.unwrap_or(Cell::Null))
}
