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
    /// In the pass through the ledger's server (`served()`): that server, once a call
    /// went there, and the person tokens made for it, by person.
    server: std::sync::OnceLock<Server>,
    tokens: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

/// Whether this pass sends the commands a token's holder runs over https:// to the
/// ledger's server (`QUESTIONS_TEST_SERVED` set, as .ci/run's HTTPS pass does), rather
/// than to the ledger itself:
///
/// - a `questions serve --tls-cert …` of the test's ledger (file or database) is started
///   at the first such call, with a certificate of a throw-away CA that the calls trust
///   (`QUESTIONS_CA`);
/// - each call holds a person token of the person it would be recorded as directly
///   (`--by`, else `USER`, `LOGNAME` or the system's name for the uid, as the binary reads
///   them), made with direct access the first time that person calls;
/// - what only direct access runs (tokens, people, groups, policy, reset, render, import,
///   …) and calls through `command()`, which set their own environment, stay direct.
///
/// A test of what only direct access to the ledger shows (its channel `cli`, `--by` on a
/// vote refused, the file's location) carries `direct_only` in its name, and the pass
/// skips it.
pub(crate) fn served() -> bool {
    std::env::var_os("QUESTIONS_TEST_SERVED").is_some_and(|v| !v.is_empty())
}

/// The first line of a `direct_only` test.
#[macro_export]
macro_rules! direct_only {
    () => {
        $crate::common::only(
            "direct_only",
            !$crate::common::served(),
            "to direct access to the ledger only, not over https://",
        )
    };
}

/// The commands of the door (§15) the HTTPS pass sends to the server.
const ON_THE_DOOR: &[&str] = &[
    "log", "answer", "skip", "decline", "list", "check", "clear", "history", "ingest", "answers",
    "events", "approve", "reject",
];

/// A ledger's server in the HTTPS pass, stopped with it.
struct Server {
    child: std::process::Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// This test process's throw-away CA, and the certificate for 127.0.0.1 it signed.
fn served_ca() -> &'static (PathBuf, PathBuf, PathBuf) {
    static CA: std::sync::OnceLock<(PathBuf, PathBuf, PathBuf)> = std::sync::OnceLock::new();
    CA.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("served-{}", std::process::id()));
        throwaway_ca(&dir, "served").expect("openssl makes the HTTPS pass's CA")
    })
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
    // Each test runs in its own process, and a long pass reuses process ids: the
    // clock's nanoseconds keep a name from meeting an earlier test's database.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!(
        "q_{}_{nanos}_{}",
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
        Ledger {
            dir,
            path,
            url,
            server: std::sync::OnceLock::new(),
            tokens: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
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

    /// How the binary's messages name this ledger: its file, a database's scheme, or in
    /// the HTTPS pass its server's.
    pub(crate) fn shown(&self) -> String {
        match &self.url {
            _ if served() => "https://127.0.0.1:".to_string(),
            Some(_) => "postgres://".to_string(),
            None => self.path.display().to_string(),
        }
    }

    /// No ledger was created: no file, or no tables in the database.
    pub(crate) fn assert_not_created(&self) {
        if served() && !self.tokens.lock().unwrap().is_empty() {
            // The pass made the ledger to hold the token it calls with: nothing but that
            // token may be in it.
            let mut cmd = self.command();
            cmd.arg("events");
            let events = finish(cmd);
            assert_eq!(events.code, 0, "{events:?}");
            for line in events.stdout.lines() {
                let event: Value = serde_json::from_str(line).unwrap();
                assert_eq!(event["event"], "token", "the ledger holds more: {line}");
            }
            return;
        }
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
        finish(self.command_for(args))
    }

    pub(crate) fn run_stdin<I, S>(&self, args: I, stdin: impl Into<Vec<u8>>) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command_for(args);
        cmd.write_stdin(stdin.into());
        finish(cmd)
    }

    /// The binary with `args`, against this ledger: directly, or in the HTTPS pass
    /// (`served()`) through its server when the command is one of the door's.
    fn command_for<I, S>(&self, args: I) -> assert_cmd::Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<std::ffi::OsString> =
            args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let on_door = args
            .first()
            .and_then(|a| a.to_str())
            .is_some_and(|a| ON_THE_DOOR.contains(&a));
        if !served() || !on_door {
            if args.first().is_some_and(|a| a == "reset") {
                // The tokens go with the ledger.
                self.tokens.lock().unwrap().clear();
            }
            let mut cmd = self.command();
            cmd.args(&args);
            return cmd;
        }
        let by = args
            .iter()
            .position(|a| a == "--by")
            .and_then(|at| args.get(at + 1))
            .and_then(|a| a.to_str())
            .map_or_else(default_person, str::to_string);
        let token = self.person_token(&by);
        let server = self.server.get_or_init(|| self.start_server());
        let mut cmd = bare_command(self.dir.path());
        cmd.env("QUESTIONS_DB", &server.base)
            .env("QUESTIONS_TOKEN", token)
            .env("QUESTIONS_CA", &served_ca().0)
            .env_remove("QUESTIONS_TOKEN_FILE");
        for proxy in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            cmd.env_remove(proxy);
        }
        cmd.args(&args);
        cmd
    }

    /// A person token of `person`, made the first time.
    fn person_token(&self, person: &str) -> String {
        let mut tokens = self.tokens.lock().unwrap();
        if let Some(token) = tokens.get(person) {
            return token.clone();
        }
        let n = tokens.len();
        let mut cmd = self.command();
        cmd.args([
            "token",
            "create",
            &format!("served-{n}"),
            "--person",
            person,
        ]);
        let made = finish(cmd);
        assert_eq!(made.code, 0, "a person token for the HTTPS pass: {made:?}");
        let token = made.json["token"].as_str().expect("the token").to_string();
        tokens.insert(person.to_string(), token.clone());
        token
    }

    /// `questions serve --tls-cert …` of this ledger on a port of its own.
    fn start_server(&self) -> Server {
        use std::io::BufRead;
        let (_, cert, key) = served_ca();
        let mut child = std::process::Command::new(BIN)
            .current_dir(self.dir.path())
            .env("QUESTIONS_NOW", NOW)
            .env_remove("QUESTIONS_DB")
            .env_remove("QUESTIONS_USER")
            .env_remove("QUESTIONS_SERVE_TOKEN")
            .arg("--db")
            .arg(self.db())
            .args(["serve", "--bind", "127.0.0.1:0", "--tls-cert"])
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("serve starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let start: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("serve's start line is JSON ({e}): {line:?}"));
        let url = start["url"].as_str().expect("serve's URL");
        let port = url
            .trim_start_matches("https://127.0.0.1:")
            .split(['/', '?'])
            .next()
            .unwrap();
        Server {
            child,
            base: format!("https://127.0.0.1:{port}"),
        }
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

/// Who a call of the binary with no `--by` is recorded as: `USER`, else `LOGNAME`, else
/// the password file's name for this uid (tests remove `QUESTIONS_USER`).
fn default_person() -> String {
    use std::os::unix::fs::MetadataExt;
    let named = |v: Option<String>| v.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    named(std::env::var("USER").ok())
        .or_else(|| named(std::env::var("LOGNAME").ok()))
        .unwrap_or_else(|| {
            let uid = std::fs::metadata("/proc/self").unwrap().uid();
            std::fs::read_to_string("/etc/passwd")
                .unwrap_or_default()
                .lines()
                .find_map(|line| {
                    let mut fields = line.split(':');
                    let name = fields.next()?;
                    let id: u32 = fields.nth(1)?.parse().ok()?;
                    (id == uid && !name.is_empty()).then(|| name.to_string())
                })
                .unwrap_or_else(|| format!("uid:{uid}"))
        })
}

/// A throw-away CA and a certificate it signed for 127.0.0.1, made with openssl in
/// `dir/name`: (the CA's PEM, the leaf's PEM, its key). Its keys are ECDSA P-256, made in
/// a millisecond: an RSA key takes openssl a tenth of a second or more, and every test
/// of the HTTPS pass makes a CA (`throwaway_rsa_ca` makes the other kind a server is
/// given).
pub(crate) fn throwaway_ca(
    dir: &std::path::Path,
    name: &str,
) -> Option<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    throwaway_ca_of(
        dir,
        name,
        &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
    )
}

/// `throwaway_ca` with RSA keys of 2048 bits (the tests of `remote`, in the builds that
/// have it).
#[cfg(all(feature = "serve", feature = "remote", feature = "mcp"))]
pub(crate) fn throwaway_rsa_ca(
    dir: &std::path::Path,
    name: &str,
) -> Option<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    throwaway_ca_of(dir, name, &["-newkey", "rsa:2048"])
}

fn throwaway_ca_of(
    dir: &std::path::Path,
    name: &str,
    key: &[&str],
) -> Option<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let openssl = |args: &[&str]| {
        std::process::Command::new("openssl")
            .current_dir(&dir)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()
            .is_some_and(|s| s.success())
    };
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let subject = format!("/CN=throw-away CA {name}");
    let made = openssl(
        &[
            &["req", "-x509"][..],
            key,
            &[
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                &subject,
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign",
            ],
        ]
        .concat(),
    ) && openssl(
        &[
            &["req"][..],
            key,
            &[
                "-nodes",
                "-keyout",
                "leaf.key",
                "-out",
                "leaf.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    ) && openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    made.then(|| {
        (
            dir.join("ca.pem"),
            dir.join("leaf.pem"),
            dir.join("leaf.key"),
        )
    })
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

/// A free port on loopback, for a server that must come back on the same one (or that
/// another program must know before it starts).
#[cfg(any(feature = "serve", feature = "postgres"))]
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
