//! `questions init CLIENT`: writes the MCP server entry and, where the client has hooks
//! for its own question tool, the hook entries, into the client's config: the project's
//! (at the top of the git work tree, else here) or, with `--user`, the user's.
//!
//! Files a team commits (project scope) run `questions` from each machine's PATH; `--user`
//! files, which stay on this machine, run the native path of this binary. `--db` and
//! `--wait` are carried into the commands written. Every byte `init` does not own stays as
//! written (`json` and `toml_edit` splice; nothing is parsed and printed again); a config
//! reached through a symbolic link is written at its target; a read-only or unreadable one,
//! or one whose keys hold what `init` cannot edit, is refused whole, before any file is
//! written. A second run changes nothing and says so; `--remove` takes out what `init` put
//! in; `--dry-run` shows what would be written and writes nothing.
//!
//! What is ours: the MCP server named `questions` whose command runs a program named
//! `questions` (a bare name or any path to it), and a command hook whose command is exactly
//! what `init` writes, `<questions> [--db LOCATION] hook <harness> [--wait SECONDS]`, with
//! any path to `questions`. Anything else is the user's, however much it looks like ours.

mod clients;
mod codex_trust;
mod files;
mod json;
mod pi;
mod uwf;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Outcome;
use crate::cli::{Client, InitArgs};
use questions_core::error::{Error, Result};
use questions_core::ops::Location;

/// The name our MCP server goes by in every client's config.
const SERVER: &str = "questions";

#[derive(Debug, Serialize)]
struct Report {
    client: &'static str,
    scope: &'static str,
    /// The program the entries run: `questions` (from PATH) in project files, the native
    /// path of this binary in user files.
    command: String,
    dry_run: bool,
    /// Whether any file changed (or, in a dry run, would change).
    changed: bool,
    files: Vec<FileChange>,
    /// What the person should know: the PATH finds another binary, a look-alike entry
    /// left alone.
    warnings: Vec<String>,
    /// What the harness still needs from the person before it runs what was written
    /// (none after `--remove`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    next: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
struct FileChange {
    path: String,
    /// `created`, `updated`, `unchanged`, `removed` (our entries taken out) or `deleted`
    /// (nothing else was left in it).
    action: &'static str,
    /// The file written, when `path` is a symbolic link to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    /// With --dry-run: the text that would be written (none for `deleted`/`unchanged`).
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// `init uwf`: how many commands in the file were switched.
    #[serde(skip_serializing_if = "Option::is_none")]
    replaced: Option<usize>,
}

/// How the entries run `questions`: the program, and what they carry.
#[derive(Debug, Clone)]
pub(super) struct Invocation {
    program: String,
    db: Option<String>,
    wait: Option<u64>,
    /// Whether the MCP server entry is written: not for a ledger over https://, which
    /// `questions mcp` cannot use.
    mcp: bool,
}

impl Invocation {
    /// The MCP server's arguments: an agent never approves a request, its own or
    /// another's, so the server it talks to refuses votes (§12).
    fn mcp_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(db) = &self.db {
            args.extend(["--db".to_string(), db.clone()]);
        }
        args.extend(["mcp".to_string(), "--no-votes".to_string()]);
        args
    }

    /// The hook's command line, as a shell runs it.
    fn hook_command(&self, harness: &str) -> String {
        let mut words = vec![shell_word(&self.program)];
        if let Some(db) = &self.db {
            words.extend(["--db".to_string(), shell_word(db)]);
        }
        words.extend(["hook".to_string(), harness.to_string()]);
        if let Some(wait) = self.wait {
            words.extend(["--wait".to_string(), wait.to_string()]);
        }
        words.join(" ")
    }
}

pub(super) fn run(args: InitArgs, db: Option<OsString>, db_from_env: bool) -> Result<Outcome> {
    if args.client == Client::Uwf {
        if db.is_some() && !db_from_env {
            return Err(Error::usage(
                "init uwf takes no --db: a uwf repository's ledger is the protocol's own \
                 uwf-questions.db, found from wherever its docs run `questions`",
            ));
        }
        if args.wait.is_some() {
            return Err(Error::usage("init uwf takes no --wait: it writes no hooks"));
        }
        return uwf::run(&args);
    }
    if args.wait.is_some() && !args.client.has_hooks() {
        return Err(Error::usage(format!(
            "--wait is carried into the hooks, and init {} writes none: leave it out",
            args.client.name()
        )));
    }
    if args.check {
        if args.client != Client::Codex {
            return Err(Error::usage(format!(
                "init --check tells whether Codex will run its hooks; {} runs a project's \
                 hooks without a review",
                args.client.name()
            )));
        }
        return codex_trust::check(&project_root()?);
    }
    if let Some(url) = &args.url {
        if db.is_some() && !db_from_env {
            return Err(Error::usage(
                "init --url takes no --db: the server at the URL holds the ledger",
            ));
        }
        let remote = Remote::new(url, args.token_env.as_deref())?;
        if !matches!(
            args.client,
            Client::ClaudeCode | Client::Codex | Client::Gemini | Client::Vscode
        ) {
            return Err(Error::usage(format!(
                "init {} takes no --url: claude-code, codex, gemini and vscode reach a \
                 server over HTTP",
                args.client.name()
            )));
        }
        let base = if args.user { home()? } else { project_root()? };
        let edits = clients::plan_remote(args.client, args.user, &base, &remote);
        let next = if args.remove {
            Vec::new()
        } else {
            remote_next_steps(args.client)
        };
        return write_edits(&args, &edits, Vec::new(), remote.url.clone(), next);
    }
    let native = native_binary()?;
    let base = if args.user { home()? } else { project_root()? };
    let mut warnings = Vec::new();
    let program = if args.user {
        native.display().to_string()
    } else {
        if !args.remove {
            warnings.extend(path_warning(&native));
        }
        SERVER.to_string()
    };
    let db = match db {
        Some(db) if !db_from_env => Some(carried_db(&db, args.user, &base)?),
        Some(_) => {
            warnings.push(
                "QUESTIONS_DB is set here but is not written into the configs: the client \
                 passes its own environment on; give --db to write a location in"
                    .to_string(),
            );
            None
        }
        None => None,
    };
    let remote = db
        .as_deref()
        .is_some_and(|d| super::is_remote(std::ffi::OsStr::new(d)));
    if remote {
        if matches!(args.client, Client::Cursor | Client::Vscode | Client::Pi) {
            return Err(Error::usage(format!(
                "init {} --db https://… would write {}, which runs on the ledger itself, not \
                 over https://: run it where the ledger is, or give the hooks of claude-code, \
                 codex or gemini the server",
                args.client.name(),
                if args.client == Client::Pi {
                    "pi's package"
                } else {
                    "an MCP server only"
                }
            )));
        }
        if !args.remove {
            warnings.push(REMOTE_WITHOUT_MCP.to_string());
        }
    }
    let how = Invocation {
        program: program.clone(),
        db,
        wait: args.wait,
        mcp: !remote,
    };
    if args.client == Client::Pi {
        let report = pi::run(args.user, &base, &how, args.remove, args.dry_run, warnings)?;
        let mut note: Vec<String> = report
            .warnings
            .iter()
            .map(|w| format!("warning: {w}"))
            .collect();
        if !report.changed {
            note.push("nothing changed: the pi files are already as they would be written".into());
        }
        let mut outcome = Outcome::ok(report);
        if !note.is_empty() {
            outcome.note = Some(note.join("\nquestions: "));
        }
        return Ok(outcome);
    }
    let edits = clients::plan(args.client, args.user, &base, &how);
    let next = if args.remove {
        Vec::new()
    } else {
        let mut next = args.client.next_steps();
        if args.client == Client::Codex && how.db.is_none() {
            next.push(CODEX_PIN_THE_LEDGER);
        }
        if remote {
            next.push(REMOTE_TOKEN);
        }
        next
    };
    write_edits(&args, &edits, warnings, program, next)
}

/// Reads and edits every file, then writes them (unless a dry run), and reports.
fn write_edits(
    args: &InitArgs,
    edits: &[files::Edit],
    mut warnings: Vec<String>,
    program: String,
    next: Vec<&'static str>,
) -> Result<Outcome> {
    // Every file is read and edited first: one that cannot be, refuses the whole run
    // before anything is written.
    let mut changes = Vec::new();
    for edit in edits {
        changes.push(files::prepare(edit, args.remove, &mut warnings)?);
    }
    let mut reported = Vec::new();
    for change in changes {
        if !args.dry_run {
            change.write()?;
        }
        reported.push(change.report(args.remove, args.dry_run));
    }
    let changed = reported.iter().any(|f| f.action != "unchanged");
    let mut note = warnings
        .iter()
        .map(|w| format!("warning: {w}"))
        .collect::<Vec<_>>();
    if !changed {
        note.push(format!(
            "nothing changed: the {} config{} already {}",
            args.client.name(),
            if reported.len() == 1 { "" } else { "s" },
            if args.remove {
                "hold none of our entries"
            } else {
                "hold our entries as they would be written"
            }
        ));
    }
    note.extend(next.iter().map(|n| format!("then: {n}")));
    let mut outcome = Outcome::ok(Report {
        client: args.client.name(),
        scope: if args.user { "user" } else { "project" },
        command: program,
        dry_run: args.dry_run,
        changed,
        files: reported,
        warnings,
        next,
    });
    if !note.is_empty() {
        outcome.note = Some(note.join("\nquestions: "));
    }
    Ok(outcome)
}

/// What `init` with `--db https://…` says of the MCP server it leaves out.
const REMOTE_WITHOUT_MCP: &str = "the MCP server entry is left out: `questions mcp` runs on \
     the ledger itself, not over https://; the hooks reach the server";

/// What `init` with `--db https://…` adds to the next steps: the token is the
/// environment's, never a file's.
const REMOTE_TOKEN: &str = "set QUESTIONS_TOKEN to an agent token ('questions token create \
     NAME --agent --stages …' where the ledger is) in the environment the harness runs in, as \
     a secret of the sandbox or the job: init writes no token into any file. What a person      chooses in the harness's own card then reaches the agent and is recorded as the host's      claim (host:NAME), which settles no approval; answers only a person's token records are      theirs";

/// A server's `/mcp` as `init --url` writes it into a host's config, and the environment
/// variable the host reads the token from: the token itself is never written.
pub(super) struct Remote {
    pub url: String,
    pub token_env: String,
}

impl Remote {
    /// The server's address (its `/mcp`, added when missing): https, or http on a
    /// loopback address, as `--db https://…` takes it (§15).
    fn new(url: &str, token_env: Option<&str>) -> Result<Remote> {
        let url = url.trim().trim_end_matches('/');
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://").filter(|r| loopback(r)))
            .ok_or_else(|| {
                Error::usage(format!(
                    "--url {url} is not https://HOST (http:// only for a loopback address, \
                     as the token would travel in clear)"
                ))
            })?;
        let host = rest.split('/').next().unwrap_or_default();
        let plain = |c: char| c.is_ascii_alphanumeric() || "-._~:[]/%".contains(c);
        if host.is_empty() || !rest.chars().all(plain) {
            return Err(Error::usage(format!(
                "--url {url} names no host, or holds a character a URL does not: give \
                 https://HOST[:PORT][/PREFIX]"
            )));
        }
        let url = if url.ends_with("/mcp") {
            url.to_string()
        } else {
            format!("{url}/mcp")
        };
        let token_env = token_env.unwrap_or(TOKEN_ENV).trim().to_string();
        let mut chars = token_env.chars();
        let name_like = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_like {
            return Err(Error::usage(format!(
                "--token-env '{token_env}' is not the name of an environment variable \
                 (letters, digits and _): give the variable's name, never the token"
            )));
        }
        Ok(Remote { url, token_env })
    }
}

/// The token's variable unless `--token-env` names another (§15's own).
const TOKEN_ENV: &str = "QUESTIONS_TOKEN";

/// Whether the authority of `rest` (what follows `http://`) is a loopback address.
fn loopback(rest: &str) -> bool {
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => host,
        _ => authority,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// What the host still needs before an agent asks through the server.
fn remote_next_steps(client: Client) -> Vec<&'static str> {
    let mut next = vec![
        "make an agent token where the ledger is (`questions token create NAME --agent`) \
         and set it in the environment the host runs in, under the variable the entry \
         names: the host sends it as `Authorization: Bearer`",
    ];
    next.extend(match client {
        Client::Codex => vec![
            "trust the project in Codex (it reads a project's .codex/config.toml only once \
             the project is trusted): answer its prompt, or run `codex exec --trust` once in \
             the project",
        ],
        Client::ClaudeCode | Client::Gemini => client.next_steps(),
        _ => Vec::new(),
    });
    next
}

/// What `init codex` without `--db` adds to the next steps.
const CODEX_PIN_THE_LEDGER: &str = "Codex's TUI runs hooks in a background process that \
     keeps the environment of its first launch: a QUESTIONS_DB set for a later launch never \
     reaches them. To pin the ledger, run `questions init codex --db LOCATION`, which writes \
     it into the hooks' and the server's command lines";

/// The running binary, symlinks resolved: what an npm or pip launcher would have run.
fn native_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::io(format!("cannot tell where this binary is: {e}")))?;
    Ok(std::fs::canonicalize(&exe).unwrap_or(exe))
}

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| Error::usage("HOME is not set, so --user has no user config to write"))
}

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir()
        .map_err(|e| Error::io(format!("cannot read the current directory: {e}")))
}

/// The top of the enclosing git work tree, else the current directory.
fn project_root() -> Result<PathBuf> {
    let here = current_dir()?;
    Ok(here
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&here)
        .to_path_buf())
}

/// What PATH finds as `questions`, when that is not this binary: the project's files run
/// whatever it finds on each machine.
fn path_warning(native: &Path) -> Option<String> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).find_map(|dir| {
            use std::os::unix::fs::PermissionsExt;
            let candidate = dir.join(SERVER);
            let meta = std::fs::metadata(&candidate).ok()?;
            (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
        })
    });
    let Some(found) = found else {
        return Some(format!(
            "the project's configs run `questions` from PATH, and PATH has none here: put \
             {} on PATH (e.g. ln -s {} ~/.local/bin/questions) or install questions as the \
             README says",
            native.display(),
            native.display()
        ));
    };
    let real = std::fs::canonicalize(&found).unwrap_or_else(|_| found.clone());
    if real == native {
        return None;
    }
    let mut head = [0u8; 2];
    let script = std::fs::File::open(&real)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == b"#!";
    Some(if script {
        format!(
            "PATH finds {}, a launcher script: each hook and MCP start through it also starts \
             its interpreter (Node: 0.1 to 0.2 s). Put the native binary {} ahead of it on PATH",
            found.display(),
            native.display()
        )
    } else {
        format!(
            "PATH finds another questions binary, {}, not this one ({}): the project's \
             configs will run that one here",
            found.display(),
            native.display()
        )
    })
}

/// The `--db` location as the configs carry it: a file path relative to the project's top
/// when it lies inside the project (every clone has it there; the clients start in that
/// folder), else absolute; a PostgreSQL location as given, unless it holds a password.
fn carried_db(db: &std::ffi::OsStr, user: bool, base: &Path) -> Result<String> {
    let Some(text) = db.to_str() else {
        return Err(Error::usage(
            "--db is not UTF-8 text, which a config file cannot hold: choose another path",
        ));
    };
    if has_password(text) {
        return Err(Error::usage(
            "--db holds a password, which init would write into a config file in the clear: \
             give the location without it and put the password in a password file \
             (PGPASSFILE), or set QUESTIONS_DB in the client's environment instead",
        ));
    }
    if super::is_remote(db) {
        // Written as given (no user, password or query: the token is the environment's).
        #[cfg(feature = "remote")]
        return crate::remote::base_of(text);
        #[cfg(not(feature = "remote"))]
        return Err(super::not_built("remote"));
    }
    let (location, _, _) = Location::find(Some(db), false)?;
    match location {
        Location::File { path, .. } => {
            let absolute = lexical(&current_dir()?.join(path));
            let shown = match absolute.strip_prefix(base) {
                Ok(inside) if !user => inside.to_path_buf(),
                _ => absolute,
            };
            Ok(shown.display().to_string())
        }
        #[allow(unreachable_patterns)]
        _ => Ok(text.to_string()),
    }
}

/// `path` with its `.` and `..` taken out by their names alone (the ledger need not exist).
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A PostgreSQL location with a password: `postgres://USER:PASSWORD@…`, or a `password`
/// keyword (libpq's key=value form, or a URL's query).
fn has_password(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    if let Some(rest) = ["postgres://", "postgresql://"]
        .iter()
        .find_map(|s| lower.strip_prefix(s))
    {
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        if authority
            .rsplit_once('@')
            .is_some_and(|(user, _)| user.contains(':'))
        {
            return true;
        }
    }
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("password") {
        let before = rest[..at].chars().last();
        let after = rest[at + "password".len()..].trim_start();
        if before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_') && after.starts_with('=') {
            return true;
        }
        rest = &rest[at + "password".len()..];
    }
    false
}

/// A word a shell reads as written: quoted when it needs it.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+@%:,=".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A command line's words, as a POSIX shell splits a simple one (quotes and backslashes;
/// no expansions): `None` for anything else, which is then not ours.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => w.push(chars.next()?),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            c if "|&;<>()$`*?[#~\n".contains(c) => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

/// A program named `questions`, by a bare name or a path.
fn runs_questions(program: &str) -> bool {
    Path::new(program)
        .file_name()
        .is_some_and(|name| name == SERVER)
}

/// The hook command is one `init` writes for `harness` (see the module's doc).
pub(super) fn is_our_hook(command: &str, harness: &str) -> bool {
    let Some(words) = shell_words(command) else {
        return false;
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let [program, rest @ ..] = words.as_slice() else {
        return false;
    };
    if !runs_questions(program) {
        return false;
    }
    let rest = match rest {
        ["--db", _, rest @ ..] => rest,
        rest => rest,
    };
    match rest {
        ["hook", h] => *h == harness,
        ["hook", h, "--wait", n] => *h == harness && n.parse::<u64>().is_ok(),
        _ => false,
    }
}

/// A hook that runs `questions … hook <harness>` in a shape `init` does not write: left
/// alone, and named, since the harness would run both.
pub(super) fn looks_like_our_hook(command: &str, harness: &str) -> bool {
    command.contains("questions") && command.contains(&format!("hook {harness}"))
}

impl Client {
    pub fn name(self) -> &'static str {
        match self {
            Client::Uwf => "uwf",
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Vscode => "vscode",
            Client::Cursor => "cursor",
            Client::Pi => "pi",
        }
    }

    /// The client has hooks on its own question tool, which `init` writes.
    fn has_hooks(self) -> bool {
        matches!(self, Client::ClaudeCode | Client::Codex | Client::Gemini)
    }

    /// What the harness still asks of the person before it runs what `init` wrote, as
    /// its own sources and a run of it show (see the README's section on each).
    fn next_steps(self) -> Vec<&'static str> {
        match self {
            Client::Codex => vec![
                "trust the project in Codex (it reads a project's .codex/config.toml only \
                 once the project is trusted): answer its prompt, or run `codex exec --trust` \
                 once in the project",
                "review and trust each hook in Codex's TUI (/hooks): `codex exec` skips \
                 untrusted hooks without a word; `questions init codex --check` says whether \
                 they will run",
            ],
            Client::ClaudeCode => vec![
                "trust the workspace in Claude Code: it reads a project's permissions \
                 (the grants of ask_questions and wait_for_answers) only then; headless, \
                 `claude -p --allowedTools \
                 mcp__questions__ask_questions,mcp__questions__wait_for_answers` grants them \
                 too",
            ],
            Client::Gemini => vec![
                "trust the folder in Gemini CLI (it runs no project settings, hooks or MCP \
                 server in an untrusted folder; headless, it refuses to start)",
                "headless `gemini -p` offers no ask_user and lists MCP tools to the model \
                 only when a policy allows them, which only the user's policies can: run \
                 `questions init gemini --user` once (it writes \
                 ~/.gemini/policies/questions.toml), or add to that file a [[rule]] with \
                 mcpName = \"questions\", decision = \"allow\", priority = 100 for each \
                 toolName of ask_questions and wait_for_answers",
            ],
            Client::Vscode | Client::Cursor | Client::Uwf | Client::Pi => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ours_is_exactly_what_init_writes() {
        for ours in [
            "questions hook claude-code",
            "/usr/local/bin/questions hook claude-code",
            "'/home/a b/questions' --db .questions/x.db hook claude-code --wait 60",
        ] {
            assert!(is_our_hook(ours, "claude-code"), "{ours}");
        }
        for theirs in [
            "my-wrapper hook claude-code",
            "questions hook codex",
            "questions hook claude-code --stage mine",
            "questions hook claude-code && notify-send",
            "npx questions-ledger hook claude-code",
        ] {
            assert!(!is_our_hook(theirs, "claude-code"), "{theirs}");
        }
    }

    #[test]
    fn passwords_are_found() {
        assert!(has_password("postgres://me:secret@db/q"));
        assert!(has_password("host=db password=x dbname=q"));
        assert!(has_password("postgres://db/q?password=x"));
        assert!(!has_password("postgres://me@db/q"));
        assert!(!has_password("host=db passwordless_thing dbname=q"));
        assert!(!has_password("./password.db"));
    }

    #[test]
    fn a_written_hook_reads_back_as_ours() {
        let how = Invocation {
            program: "/opt/it's here/questions".into(),
            db: Some("my ledger.db".into()),
            wait: Some(30),
            mcp: true,
        };
        assert!(is_our_hook(&how.hook_command("gemini"), "gemini"));
    }
}
