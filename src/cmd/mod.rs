//! One file per verb: where the command line meets the store.

mod accept_defaults;
mod answer;
mod answers;
mod approve;
mod ask;
mod check;
mod clear;
mod completions;
mod decline;
mod events;
mod history;
mod hook;
mod import;
mod info;
mod ingest;
mod init;
mod list;
mod log;
#[cfg(feature = "mcp")]
mod mcp;
mod people;
mod pi;
mod policy;
#[cfg(feature = "relay")]
mod relay;
mod render;
mod reset;
#[cfg(feature = "serve")]
mod serve;
mod skip;
mod token;
mod tracked;
#[cfg(feature = "watch")]
mod watch;

use crate::cli::{Cli, Command};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;

use crate::output;
use questions_core::error::{Error, Result};
use questions_core::ops::{self, Procedure};
use questions_core::ops::{Ledger, Location};

/// What a command produced: the document to print and the exit code. A failed gate is
/// an outcome (exit 1), not an error.
pub(crate) struct Outcome {
    body: Body,
    pub exit: u8,
    /// A line for stderr, for people reading a CI log.
    pub note: Option<String>,
}

/// What goes to stdout: a result that `print` puts in the `{"ok", "procedure"}` envelope,
/// or text.
enum Body {
    Json { ok: bool, result: Box<dyn Document> },
    Text(String),
}

/// A typed result, printed inside the envelope straight from its types.
trait Document {
    /// The envelope's text: serialized into memory with the writer's type known (a
    /// `dyn Write` costs a call per token), then written at once.
    fn render(&self, ok: bool, procedure: Procedure) -> String;
}

impl<T: serde::Serialize> Document for T {
    fn render(&self, ok: bool, procedure: Procedure) -> String {
        output::pretty(&ops::document(ok, procedure, self))
    }
}

impl Outcome {
    /// Success: `result`'s keys follow `"ok": true` and the procedure's name.
    pub(crate) fn ok(result: impl serde::Serialize + 'static) -> Outcome {
        Outcome::json(true, result, 0)
    }

    /// A result with its own verdict: `ok` and the exit code say whether it passed.
    pub(crate) fn json(ok: bool, result: impl serde::Serialize + 'static, exit: u8) -> Outcome {
        Outcome {
            body: Body::Json {
                ok,
                result: Box::new(result),
            },
            exit,
            note: None,
        }
    }

    pub(crate) fn text(text: String) -> Outcome {
        Outcome {
            body: Body::Text(text),
            exit: 0,
            note: None,
        }
    }

    pub(crate) fn print(&self, procedure: Procedure) {
        match &self.body {
            Body::Json { ok, result } => output::text_out(&result.render(*ok, procedure)),
            Body::Text(text) => output::text_out(text),
        }
        if let Some(note) = &self.note {
            output::note(note);
        }
    }
}

/// Who this call acts for: `--by`, else `QUESTIONS_USER` (both read by clap), else the
/// operating-system user, looked up only by a command that records a change.
pub(crate) struct Who(Option<String>);

impl Who {
    fn new(by: Option<String>) -> Who {
        Who(named(by))
    }

    /// The operating-system user this process runs as, by its uid, whatever `--by`,
    /// `QUESTIONS_USER`, `USER` or `LOGNAME` say (anyone can set those): who votes, asks
    /// for an approval or changes a group from the command line on a file ledger.
    pub(crate) fn os_user() -> String {
        system_user().unwrap_or_else(|| "unknown".to_string())
    }

    /// This person acting through `channel`.
    pub(crate) fn via(
        &self,
        channel: questions_core::model::Channel,
    ) -> questions_core::ops::Caller {
        let by = self
            .0
            .clone()
            .or_else(|| named(std::env::var("USER").ok()))
            .or_else(|| named(std::env::var("LOGNAME").ok()))
            .or_else(system_user);
        questions_core::ops::Caller { by, channel }
    }
}

fn named(name: Option<String>) -> Option<String> {
    name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty())
}

/// The name of the user this process runs as, from the password file; a user without
/// one (a container's arbitrary uid) is `uid:<n>`, never nobody: nobody is expiry.
fn system_user() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let name = passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_string())
    });
    Some(name.unwrap_or_else(|| format!("uid:{uid}")))
}

pub(crate) fn dispatch(cli: Cli) -> Result<Outcome> {
    if let Some(clash) = cli.json_clash() {
        return Err(Error::usage(clash));
    }
    let json = cli.json;
    if let Command::Login(args) | Command::Logout(args) = &cli.command {
        return login(&cli.command, args, cli.db.as_deref());
    }
    if cli.db.as_deref().is_some_and(is_remote) {
        return remote(cli);
    }
    let (location, found_by, also_found) = match Location::find(cli.db.as_deref(), cli.db_from_env)
    {
        Ok(found) => found,
        Err(err) => {
            return match cli.command {
                // pi's tool has no card to fall back on: the model is told why.
                Command::Hook(args) if args.harness == crate::cli::Harness::Pi => Err(err),
                // A hook fails open, even on a location it cannot use.
                Command::Hook(_) => Ok(hook::failed(&err)),
                // Configs only: the ledger is not used.
                Command::Init(args) => init::run(args, cli.db, cli.db_from_env),
                _ => Err(err),
            };
        }
    };
    for other in &also_found {
        crate::output::note(&format!(
            "warning: using the uwf ledger {}; the ledger {} in the same folder is not used \
             (move its questions over, or remove it)",
            location.display(),
            other.display()
        ));
    }
    let fresh = tracked::not_there_yet(&location);
    let mut ledger = Ledger::new(location);
    let l = &mut ledger;
    let by_from_flag = cli.by_from_flag;
    let who = Who::new(cli.by);
    let w = &who;
    let outcome = match cli.command {
        Command::Log(args) => log::run(l, w, args),
        Command::Answer(args) => answer::run(l, w, args),
        Command::Skip(args) => skip::run(l, w, args),
        Command::Decline(args) => decline::run(l, w, args),
        Command::List(args) => list::run(l, args),
        Command::Check(args) => check::run(l, args),
        Command::Clear(args) => clear::run(l, w, args),
        Command::Reset(args) => reset::run(l, args),
        Command::History(args) => history::run(l, args),
        Command::Ingest(args) => ingest::run(l, w, args),
        Command::Render(args) => render::run(l, args),
        Command::Import(args) => import::run(l, w, args),
        Command::Answers(args) => answers::run(l, args),
        Command::AcceptDefaults(args) => accept_defaults::run(l, w, args),
        Command::Ask(args) => ask::run(l, w, args, json),
        Command::Info => info::run(l, found_by, &also_found),
        Command::Events(args) => events::run(l, args),
        #[cfg(feature = "watch")]
        Command::Watch(args) => watch::run(l, args),
        #[cfg(not(feature = "watch"))]
        Command::Watch(_) => Err(not_built("watch")),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::run(l, w, args),
        #[cfg(not(feature = "serve"))]
        Command::Serve(_) => Err(not_built("serve")),
        Command::Completions(args) => completions::completions(args),
        Command::Man => completions::man(),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => mcp::run(l, w, args),
        #[cfg(not(feature = "mcp"))]
        Command::Mcp(_) => Err(not_built("mcp")),
        Command::Hook(args) if args.harness == crate::cli::Harness::Pi => pi::run(l, w, &args),
        Command::Hook(args) => Ok(hook::run(l, w, args)),
        Command::Init(args) => init::run(args, cli.db, cli.db_from_env),
        Command::Approve(args) => approve::approve(l, by_from_flag, args),
        Command::Reject(args) => approve::reject(l, by_from_flag, args),
        Command::Group(args) => approve::group(l, by_from_flag, args),
        Command::People(args) => people::people(l, by_from_flag, args),
        Command::Relay(args) => people::relay(l, by_from_flag, args),
        Command::Token(args) => token::run(l, by_from_flag, args),
        Command::Policy(args) => policy::run(l, by_from_flag, args),
        // Answered before a ledger is found (see `login`).
        Command::Login(_) | Command::Logout(_) => Err(Error::usage(
            "questions login|logout https://HOST: a server's, never a ledger's own",
        )),
    };
    if let Some(files) = fresh {
        tracked::warn_if_created_unignored(&files);
    }
    outcome
}

/// `questions login|logout [URL]` (§17): a person's own token for a server, kept for
/// every later call to it.
fn login(
    command: &Command,
    args: &crate::cli::LoginArgs,
    db: Option<&std::ffi::OsStr>,
) -> Result<Outcome> {
    #[cfg(feature = "remote")]
    {
        let given = args
            .server
            .clone()
            .or_else(|| {
                db.filter(|d| is_remote(d))
                    .map(|d| d.to_string_lossy().into_owned())
            })
            .ok_or_else(|| {
                Error::usage("name the server: questions login https://HOST (or --db https://HOST)")
            })?;
        let base = crate::remote::base_of(&given)?;
        let done = match command {
            Command::Login(_) => crate::remote::login::login(&base, !args.no_browser)?,
            _ => crate::remote::login::logout(&base)?,
        };
        Ok(Outcome::ok(done))
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = (command, args, db);
        Err(not_built("remote"))
    }
}

/// Whether `--db` names a server (§15).
fn is_remote(db: &std::ffi::OsStr) -> bool {
    #[cfg(feature = "remote")]
    return crate::remote::is_remote(db);
    #[cfg(not(feature = "remote"))]
    {
        let lower = db.to_string_lossy().trim().to_ascii_lowercase();
        lower.starts_with("https://") || lower.starts_with("http://")
    }
}

#[cfg(feature = "remote")]
thread_local! {
    /// The server this invocation's requests go to (`--db https://…`). A command builds
    /// its request as for a file; `door` sends it there instead, and the command goes on
    /// from the reply read back from the server's document.
    static REMOTE: std::cell::RefCell<Option<crate::remote::Remote>> =
        const { std::cell::RefCell::new(None) };
}

/// What a command does when `--db` names a server (§15).
#[cfg(feature = "remote")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OverHttps {
    /// It sends the door's requests, as a token's holder.
    Door,
    /// It needs the ledger itself (its file, or a PostgreSQL role): refused.
    Direct,
    /// It goes its own way: `watch` and `mcp` to the server's long polls and `/mcp`, a
    /// harness's hook through the door, and what touches no ledger.
    Own,
}

/// Every command's way over https://, decided here for each (no arm for the rest: a new
/// command is a decision the compiler asks for).
#[cfg(feature = "remote")]
fn over_https(procedure: Procedure) -> OverHttps {
    use Procedure as P;
    match procedure {
        P::Log
        | P::Answer
        | P::Skip
        | P::List
        | P::Check
        | P::Clear
        | P::History
        | P::Ingest
        | P::Render
        | P::Import
        | P::Answers
        | P::AcceptDefaults
        | P::Ask
        | P::Info
        | P::Decline
        | P::Events
        | P::Approve
        | P::Reject => OverHttps::Door,
        P::Reset | P::Serve | P::Group | P::People | P::Relay | P::Token | P::Policy => {
            OverHttps::Direct
        }
        P::Watch
        | P::Mcp
        | P::Hook
        | P::Init
        | P::Completions
        | P::Man
        | P::Version
        | P::Login
        | P::Logout => OverHttps::Own,
        // The MCP tools' own documents, never a command of the command line.
        P::AskQuestions | P::WaitForAnswers | P::Vote | P::OpenInbox | P::AnswerInApp => {
            OverHttps::Direct
        }
    }
}

/// Runs a command against a ledger `questions serve` serves: the commands on the door
/// (what a token's holder may do, §15) send their request there; the others need the
/// ledger itself and say so.
fn remote(cli: Cli) -> Result<Outcome> {
    #[cfg(not(feature = "remote"))]
    {
        let _ = cli;
        Err(not_built("remote"))
    }
    #[cfg(feature = "remote")]
    {
        let name = cli.command.procedure().as_str();
        let db = cli.db.clone().unwrap_or_default();
        let direct = || {
            let door: Vec<&str> = Procedure::COMMANDS
                .iter()
                .filter(|p| over_https(**p) == OverHttps::Door)
                .map(|p| p.as_str())
                .collect();
            Error::usage(format!(
                "'{name}' needs the ledger itself, not its server: run it where the ledger \
                 is (its file, or its PostgreSQL database); over https:// a token's holder \
                 runs {} and watch, and mcp carries a host's messages to the server's own",
                door.join(", ")
            ))
        };
        // What each command does on the server is the door's: only they go there.
        let on_door = over_https(cli.command.procedure()) == OverHttps::Door;
        match cli.command {
            Command::Init(args) => return init::run(args, cli.db, cli.db_from_env),
            Command::Completions(args) => return completions::completions(args),
            Command::Man => return completions::man(),
            Command::Hook(args) if args.harness == crate::cli::Harness::Pi => return Err(direct()),
            Command::Hook(_) => {}
            Command::Mcp(args) => return mcp_over(&db, args),
            #[cfg(feature = "watch")]
            Command::Watch(args) => return watch::served(&db, args),
            _ if !on_door => return Err(direct()),
            _ => {}
        }
        let server = crate::remote::Remote::new(&db)?;
        REMOTE.with(|r| *r.borrow_mut() = Some(server));
        // No ledger is opened here: every request of these commands goes through `door`,
        // and a ledger opened by mistake fails (no folder holds it) rather than make a file.
        let mut ledger = Ledger::new(Location::File {
            path: std::path::PathBuf::from("/dev/null/questions-remote"),
            make_folder: false,
        });
        let l = &mut ledger;
        let by_from_flag = cli.by_from_flag;
        let who = Who::new(cli.by);
        let w = &who;
        let found_by = if cli.db_from_env {
            ops::FoundBy::Env
        } else {
            ops::FoundBy::Flag
        };
        let ran = match cli.command {
            Command::Log(args) => log::run(l, w, args),
            Command::Answer(args) => answer::run(l, w, args),
            Command::Skip(args) => skip::run(l, w, args),
            Command::Decline(args) => decline::run(l, w, args),
            Command::List(args) => list::run(l, args),
            Command::Check(args) => check::run(l, args),
            Command::Clear(args) => clear::run(l, w, args),
            Command::History(args) => history::run(l, args),
            Command::Ingest(args) => ingest::run(l, w, args),
            Command::Answers(args) => answers::run(l, args),
            Command::Info => info::run(l, found_by, &[]),
            Command::Events(args) => events::run(l, args),
            Command::Hook(args) => Ok(hook::run(l, w, args)),
            Command::Approve(args) => approve::approve(l, by_from_flag, args),
            Command::Reject(args) => approve::reject(l, by_from_flag, args),
            Command::AcceptDefaults(args) => accept_defaults::run(l, w, args),
            Command::Import(args) => import::run(l, w, args),
            Command::Render(args) => render::run(l, args),
            Command::Ask(args) => ask::run(l, w, args, cli.json),
            _ => Err(direct()),
        };
        REMOTE.with(|r| *r.borrow_mut() = None);
        ran
    }
}

/// `questions mcp` over https:// (§16): the server's own MCP server at `/mcp`, its
/// messages carried over stdio. The token decides what the session may do.
#[cfg(feature = "remote")]
fn mcp_over(db: &std::ffi::OsStr, args: crate::cli::McpArgs) -> Result<Outcome> {
    if args.no_votes {
        return Err(Error::usage(
            "over https:// the token decides what the session may do: an agent token never \
             votes (drop --no-votes, or use an agent token)",
        ));
    }
    if args.inbox_url.is_some() {
        crate::output::note(
            "over https:// forms and links are the server's own: --inbox-url \
             (QUESTIONS_INBOX_URL) is not used",
        );
    }
    crate::remote::mcp::serve(crate::remote::Remote::new(db)?)?;
    Ok(Outcome::text(String::new()))
}

/// Takes the reply of the kind a request gets from `door`; another kind is a bug.
macro_rules! take {
    ($reply:expr, $kind:path) => {
        match $reply {
            $kind(reply) => reply,
            _ => return Err(super::unexpected()),
        }
    };
}
pub(crate) use take;

/// Sends `req` through the core's one door, as the command line: direct access to the
/// ledger, recorded as `caller`. The server sends a token's requests through the same.
/// Over https:// (§15) the request goes to the server instead, which answers as the
/// token's holder: its document is kept for `remote` to print, and the command goes no
/// further (`Forwarded`).
fn door(
    ledger: &mut Ledger,
    caller: questions_core::ops::Caller,
    req: ops::Request,
) -> Result<ops::Reply> {
    #[cfg(feature = "remote")]
    if let Some(sent) = REMOTE.with(|r| r.borrow().as_ref().map(|server| server.call(req.clone())))
    {
        return read_back(&req, sent?);
    }
    ops::call(ledger, &ops::Principal::Direct(caller), req)
}

/// Over https:// (§15), for a command that reads more than one reply (a follower, a
/// waiter): sends `req` to the server, and when `patient`, again while the server is out
/// of reach after it answered (until `deadline`); gives its document as it came.
#[cfg(feature = "remote")]
fn served(
    req: &ops::Request,
    deadline: Option<std::time::Instant>,
    reach: &mut crate::remote::Reach,
    patient: bool,
) -> Result<serde_json::Value> {
    REMOTE.with(|r| match r.borrow().as_ref() {
        Some(server) => server.follow(req, deadline, reach, patient),
        None => Err(unexpected()),
    })
}

/// Sends `req` through the door and gives its reply, over https:// too (the server's
/// document read back into it), for a command that goes on from what a request returned
/// (the hook). Over https://, a request with an `until` is sent again while its server
/// is out of reach after it answered, until then.
fn door_reply(
    ledger: &mut Ledger,
    caller: questions_core::ops::Caller,
    req: ops::Request,
    until: Option<std::time::Instant>,
) -> Result<ops::Reply> {
    #[cfg(feature = "remote")]
    if is_served() {
        let mut reach = crate::remote::Reach::default();
        let doc = served(&req, until, &mut reach, until.is_some())?;
        return read_back(&req, doc);
    }
    let _ = until;
    ops::call(ledger, &ops::Principal::Direct(caller), req)
}

/// The reply a request got from the server, read back from its document (§15): the
/// command goes on from it as from the ledger's own. The server's own location is none
/// of the caller's business: `info` names its URL.
#[cfg(feature = "remote")]
fn read_back(req: &ops::Request, doc: serde_json::Value) -> Result<ops::Reply> {
    let mut reply = crate::remote::read(req, doc)?;
    if let ops::Reply::Info(info) = &mut reply {
        info.ledger.engine = "https".into();
        info.ledger.location = REMOTE
            .with(|r| r.borrow().as_ref().map(|s| s.url().to_string()))
            .unwrap_or_default();
    }
    Ok(reply)
}

/// The ledger as a person reading this command's stderr knows it: its file or database,
/// or over https:// the server's URL.
pub(crate) fn shown_location(ledger: &Ledger) -> String {
    #[cfg(feature = "remote")]
    if let Some(url) = REMOTE.with(|r| r.borrow().as_ref().map(|s| s.url().to_string())) {
        return url;
    }
    ledger.location().display().clone()
}

/// Whether this invocation's requests go to a server (`--db https://…`).
fn is_served() -> bool {
    #[cfg(feature = "remote")]
    return REMOTE.with(|r| r.borrow().is_some());
    #[cfg(not(feature = "remote"))]
    false
}

/// Who a request that records no person is sent as (a read, a question logged): nobody
/// is looked up for it.
fn nobody() -> questions_core::ops::Caller {
    questions_core::ops::Caller {
        by: None,
        channel: questions_core::model::Channel::Cli,
    }
}

fn unexpected() -> Error {
    Error::db("internal error: the ledger answered a request with the result of another")
}

/// The most input `ingest` and `import` read: far beyond any real subagent output.
const INPUT_LIMIT: u64 = 32 * 1024 * 1024;

/// Reads `--file PATH`, or standard input for `-` or no file, as UTF-8 text.
fn read_input(file: Option<&Path>) -> Result<String> {
    let mut bytes = Vec::new();
    if let Some(path) = file.filter(|p| p.as_os_str() != "-") {
        let handle = std::fs::File::open(path)
            .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
        handle
            .take(INPUT_LIMIT + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
    } else {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(Error::usage(
                "nothing to read: pipe the input in, or give --file PATH",
            ));
        }
        stdin
            .lock()
            .take(INPUT_LIMIT + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(format!("cannot read standard input: {e}")))?;
    }
    if bytes.len() as u64 > INPUT_LIMIT {
        return Err(Error::parse(format!(
            "the input is larger than {} MiB; nothing was read into the ledger",
            INPUT_LIMIT / 1024 / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::parse(format!(
            "the input is not UTF-8 text (an invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Writes a file only its owner can read, whole or not at all: a temp file beside it,
/// then a rename (which replaces a symlink at `path` rather than writing through it).
fn write_private(path: &Path, content: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: std::io::Error| Error::io(format!("cannot write {}: {e}", path.display()));
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| Error::usage(format!("{} is not a file name", path.display())))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = dir.join(temp_name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .map_err(fail)?;
    let written = file
        .write_all(content.as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(())
}

/// A front end this build leaves out (`cargo build --no-default-features`): the command
/// is known, and says how to get it.
#[allow(dead_code)]
fn not_built(command: &str) -> Error {
    Error::usage(format!(
        "this questions was built without '{command}' (its cargo feature is off): install the \
         default build, or build with --features {command}"
    ))
}
