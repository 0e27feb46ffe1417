//! The fixture every test drives the real binary through: a ledger file in a temp dir.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_questions");
pub(crate) const NOW: &str = "2026-11-21T23:47:04.692Z";

/// What one call printed and how it exited.
#[derive(Debug)]
pub(crate) struct Run {
    pub code: i32,
    pub json: Value,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the contract's failure shape and returns the error code.
    pub(crate) fn error_code(&self) -> &str {
        assert_eq!(self.json["ok"], false, "expected a failure: {self:?}");
        assert!(
            self.json["error"].as_str().is_some_and(|m| !m.is_empty()),
            "failure without a message: {self:?}"
        );
        assert!(!self.stderr.is_empty(), "failure without stderr: {self:?}");
        self.json["error_code"].as_str().expect("error_code")
    }
}

/// The engine the contract tests run against: a SQLite file in a temp dir, or, when
/// QUESTIONS_TEST_PG names a PostgreSQL server (scripts/with-postgres sets it), a fresh
/// database on it for each ledger.
pub(crate) struct Ledger {
    pub dir: TempDir,
    pub path: PathBuf,
    pub url: Option<String>,
}

/// The admin URL of the PostgreSQL server under test, if the suite runs against one.
pub(crate) fn postgres_server() -> Option<String> {
    std::env::var("QUESTIONS_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())
}

/// A test that applies to one engine (or not through the pooler) says so in its name,
/// and the passes it does not apply to skip it by that name, so that their output reports
/// it filtered out rather than passed:
///
/// - `sqlite_only`: what only a file ledger has (its bytes, its mode, its path); the
///   PostgreSQL passes run with `--skip sqlite_only`.
/// - `postgres_only`: what only the PostgreSQL engine has; the SQLite pass runs with
///   `--skip postgres_only`.
/// - `unpooled`: what needs a direct connection to the server (its own refusals, TLS,
///   roles); the PgBouncer pass runs with `--skip unpooled`.
///
/// Each such test starts with the macro of its tag. Run in a pass it does not apply to
/// (the skip forgotten), it fails, saying which skip the pass needs: it never reports a
/// pass for work it did not do.
pub(crate) fn only(tag: &str, applies: bool, skip: &str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("main");
    // libtest names each test's thread after the test; the name must carry the tag the
    // passes skip by.
    if name != "main" {
        assert!(
            name.contains(tag),
            "{name} must carry `{tag}` in its name, for the passes that skip it"
        );
    }
    assert!(
        applies,
        "{name} applies {skip}: this pass must skip it by name (`cargo test -- --skip {tag}`)"
    );
}

/// Whether this run is CI's (`CI` set, and not to `false`): there, .ci/run has installed
/// every tool, client and browser the suite drives, so none may be missing.
pub(crate) fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false")
}

/// For a test that cannot run here because something it drives is missing (a tool, a
/// client, a browser, the system's leave to change user): under CI that is a failure;
/// elsewhere the test says `SKIPPED <test>: <reason>` and returns at once
/// (`return skip(…)`). The line goes to the run's own stderr, past libtest's capture, so
/// that it shows among the results rather than the test passing unseen.
pub(crate) fn skip(reason: &str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("main");
    assert!(
        !under_ci(),
        "{name} cannot run: {reason}; under CI every prerequisite is required (.ci/run installs it)"
    );
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {name}: {reason}");
}

/// Whether this pass goes through PgBouncer (scripts/with-postgres --pgbouncer).
pub(crate) fn pooled() -> bool {
    postgres_server().is_some() && std::env::var_os("QUESTIONS_TEST_PG_BOUNCER").is_some()
}

/// The first line of a `sqlite_only` test.
#[macro_export]
macro_rules! sqlite_only {
    () => {
        $crate::common::only(
            "sqlite_only",
            $crate::common::postgres_server().is_none(),
            "to SQLite only",
        )
    };
}

/// The first line of a `postgres_only` test: the admin URL of the server under test.
#[macro_export]
macro_rules! postgres_only {
    () => {{
        let server = $crate::common::postgres_server();
        $crate::common::only("postgres_only", server.is_some(), "to PostgreSQL only");
        server.unwrap()
    }};
}

/// The first line of an `unpooled` test (after its engine's macro, if it has one).
#[macro_export]
macro_rules! unpooled {
    () => {
        $crate::common::only(
            "unpooled",
            !$crate::common::pooled(),
            "to direct connections only, not through PgBouncer",
        )
    };
}

fn new_database(admin: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "q_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    let mut client = postgres::Client::connect(admin, postgres::NoTls).expect("the test server");
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("a test database");
    let base = admin.rsplit_once('/').expect("a database in the URL").0;
    format!("{base}/{name}")
}

impl Ledger {
    pub(crate) fn new() -> Ledger {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ledger.db");
        let url = postgres_server().map(|admin| new_database(&admin));
        Ledger { dir, path, url }
    }

    /// What --db names: the file, or the database.
    pub(crate) fn db(&self) -> std::ffi::OsString {
        match &self.url {
            Some(url) => url.into(),
            None => self.path.clone().into_os_string(),
        }
    }

    /// The binary, run in the temp dir against this ledger, with the clock pinned.
    pub(crate) fn command(&self) -> assert_cmd::Command {
        let mut cmd = bare_command(self.dir.path());
        cmd.arg("--db").arg(self.db());
        cmd
    }

    /// No ledger was created: no file, or no tables in the database.
    pub(crate) fn assert_not_created(&self) {
        match &self.url {
            None => assert!(!self.path.exists(), "the ledger file was created"),
            Some(url) => {
                let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
                // Nothing of a ledger: no table, sequence or function of its own (a reset
                // that left one, say the groups of approvers, would hand it to the next).
                let row = client
                    .query_one(
                        "SELECT (SELECT string_agg(relname, ', ') FROM pg_class \
                         WHERE relnamespace = current_schema()::regnamespace \
                         AND relkind IN ('r', 'S', 'v', 'm')), \
                         (SELECT string_agg(proname, ', ') FROM pg_proc \
                         WHERE pronamespace = current_schema()::regnamespace)",
                        &[],
                    )
                    .unwrap();
                let (tables, functions): (Option<String>, Option<String>) =
                    (row.get(0), row.get(1));
                assert_eq!(
                    (tables, functions),
                    (None, None),
                    "the ledger's tables or functions are there"
                );
            }
        }
    }

    /// Runs raw SQL on the ledger, outside `questions`; true when the engine refuses it.
    pub(crate) fn sql_is_refused(&self, sql: &str) -> bool {
        match &self.url {
            None => rusqlite::Connection::open(&self.path)
                .unwrap()
                .execute_batch(sql)
                .is_err(),
            Some(url) => postgres::Client::connect(url, postgres::NoTls)
                .unwrap()
                .batch_execute(sql)
                .is_err(),
        }
    }

    pub(crate) fn run<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command();
        cmd.args(args);
        finish(cmd)
    }

    pub(crate) fn run_stdin<I, S>(&self, args: I, stdin: impl Into<Vec<u8>>) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command();
        cmd.args(args).write_stdin(stdin.into());
        finish(cmd)
    }

    /// Like `ok`, with `stdin` piped in.
    pub(crate) fn ok_stdin<I, S>(&self, args: I, stdin: impl Into<Vec<u8>>) -> Value
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let run = self.run_stdin(args, stdin);
        assert_eq!(run.code, 0, "expected success: {run:?}");
        assert_eq!(run.json["ok"], true, "expected ok: {run:?}");
        run.json
    }

    /// All questions, as `list` prints them.
    pub(crate) fn all(&self) -> Vec<Value> {
        self.ok(["list"])["questions"].as_array().unwrap().clone()
    }

    /// Runs a call that must succeed and returns its JSON.
    pub(crate) fn ok<I, S>(&self, args: I) -> Value
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let run = self.run(args);
        assert_eq!(run.code, 0, "expected success: {run:?}");
        assert_eq!(run.json["ok"], true, "expected ok: {run:?}");
        run.json
    }

    /// Logs a question and returns its id.
    pub(crate) fn log(&self, stage: &str, question: &str) -> i64 {
        self.ok(["log", "--stage", stage, "--question", question])["question_id"]
            .as_i64()
            .expect("question_id")
    }

    pub(crate) fn log_with(&self, stage: &str, question: &str, more: &[&str]) -> i64 {
        let mut args = vec!["log", "--stage", stage, "--question", question];
        args.extend_from_slice(more);
        self.ok(args)["question_id"].as_i64().expect("question_id")
    }

    pub(crate) fn question(&self, id: i64) -> Value {
        let list = self.ok(["list"]);
        list["questions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("question {id} not listed"))
    }

    /// The ledger's whole content: the file and its write-ahead log, where recent
    /// writes stay until a checkpoint copies them into the file.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let mut bytes = std::fs::read(&self.path).expect("ledger file");
        bytes.extend(std::fs::read(format!("{}-wal", self.path.display())).unwrap_or_default());
        bytes
    }
}

/// The binary without --db, run in `cwd`, with no QUESTIONS_DB from outside.
pub(crate) fn bare_command(cwd: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(BIN);
    cmd.current_dir(cwd)
        .env_remove("QUESTIONS_DB")
        .env_remove("QUESTIONS_USER")
        .env("QUESTIONS_NOW", NOW)
        .timeout(std::time::Duration::from_mins(2));
    cmd
}

pub(crate) fn finish(mut cmd: assert_cmd::Command) -> Run {
    let out = cmd.output().expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "the binary panicked: {stderr}"
    );
    Run {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stdout,
        stderr,
    }
}

/// Every key the contract's question object always carries: the `required` list of
/// schema/question.json, so that a key added there is checked everywhere this is.
pub(crate) fn question_keys() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/question.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("schema/question.json is JSON");
    let keys: Vec<String> = schema["required"]
        .as_array()
        .expect("a required list in schema/question.json")
        .iter()
        .map(|k| k.as_str().expect("a key name").to_string())
        .collect();
    assert!(
        keys.len() > 20,
        "schema/question.json requires only {keys:?}"
    );
    keys
}

/// Every command the binary has, as its clap definition declares them (not `help`, which
/// clap adds): a command added there is covered by the tests that walk this list.
pub(crate) fn commands() -> Vec<String> {
    use clap::CommandFactory;
    let names: Vec<String> = questions::cli::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|name| name != "help")
        .collect();
    assert!(names.len() > 10, "the clap definition lists only {names:?}");
    names
}

/// A file under tests/fixtures.
pub(crate) fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub(crate) fn ids(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// Copies a ledger with its write-ahead log (a copy of the file alone misses the writes
/// not yet checkpointed), replacing whatever was at `to`.
pub(crate) fn copy_ledger(from: &std::path::Path, to: &std::path::Path) {
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", to.display()));
    }
    std::fs::copy(from, to).unwrap();
    let wal = format!("{}-wal", from.display());
    if std::path::Path::new(&wal).exists() {
        std::fs::copy(&wal, format!("{}-wal", to.display())).unwrap();
    }
}

/// An instant `seconds` after the pinned clock, as the ledger writes instants.
pub(crate) fn later(seconds: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339(NOW).unwrap();
    (base + chrono::Duration::seconds(seconds))
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Ledger {
    /// A call with the clock pinned at `now` instead.
    pub(crate) fn run_at<I, S>(&self, now: &str, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command();
        cmd.env("QUESTIONS_NOW", now).args(args);
        finish(cmd)
    }
}

/// A point where a spawned call stops (`QUESTIONS_TEST_PAUSE`, debug builds only; the
/// points are the `fault` calls in the source, and `wait` is where a waiting call
/// (`check --wait`, `events --follow`, `watch`, a hook's wait) sleeps before it reads the
/// ledger again; `watch-idle` is where a watcher has delivered or passed over every event
/// and is about to wait). The call announces each arrival there; the test waits for that, not
/// for time to pass.
pub(crate) struct Pause {
    go: PathBuf,
    reached: PathBuf,
    /// The value of `QUESTIONS_TEST_PAUSE` for the call.
    pub env: String,
}

impl Pause {
    pub(crate) fn new(dir: &Path, point: &str) -> Pause {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let go = dir.join(format!(
            "go-{point}-{}",
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let reached = PathBuf::from(format!("{}.reached", go.display()));
        let env = format!("{point}:{}", go.display());
        Pause { go, reached, env }
    }

    /// Waits until the call has arrived at the point (30 s at most).
    pub(crate) fn reached(&self) {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !self.reached.exists() {
            assert!(
                std::time::Instant::now() < end,
                "the call never reached {}",
                self.env
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Whether the call has arrived at the point.
    pub(crate) fn has_reached(&self) -> bool {
        self.reached.exists()
    }

    /// Lets the call go on, and not stop there again.
    pub(crate) fn release(&self) {
        std::fs::write(&self.go, b"").unwrap();
    }

    /// Lets the call, stopped at the point, go on, and waits until it comes back there:
    /// for `wait`, it has read the ledger once more.
    pub(crate) fn go_round(&self) {
        self.forget();
        self.release();
        self.reached();
    }

    /// Forgets the arrivals so far: `reached` then waits for one after this.
    pub(crate) fn forget(&self) {
        let _ = std::fs::remove_file(&self.reached);
    }
}
