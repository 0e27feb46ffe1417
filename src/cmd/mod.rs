//! One file per verb: where the command line meets the store.

mod accept_defaults;
mod answer;
mod answers;
mod ask;
mod check;
mod clear;
mod completions;
mod history;
mod import;
mod info;
mod ingest;
mod list;
mod log;
mod render;
mod reset;
mod skip;

use crate::cli::{Cli, Command};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::model::Question;
use crate::output;
use crate::store::{Access, Location, Store};
use crate::store::{Filter, Tx};

/// What a command produced: the document to print and the exit code. A failed gate is
/// an outcome (exit 1), not an error.
pub struct Outcome {
    pub body: Rendered,
    pub exit: u8,
    /// A line for stderr, for people reading a CI log.
    pub note: Option<String>,
}

/// What goes to stdout: a JSON document (already serialized, straight from its types)
/// or text.
pub enum Rendered {
    Json(String),
    Text(String),
}

impl Outcome {
    pub fn ok(body: impl serde::Serialize) -> Outcome {
        Outcome {
            body: Rendered::Json(output::pretty(&body)),
            exit: 0,
            note: None,
        }
    }

    pub fn print(&self) {
        match &self.body {
            Rendered::Json(text) | Rendered::Text(text) => output::text_out(text),
        }
        if let Some(note) = &self.note {
            output::note(note);
        }
    }
}

/// The ledger for this call: found once, opened at most once, and only when a command
/// has checked its arguments and needs it.
pub struct Session {
    location: Location,
    store: Option<Store>,
}

impl Session {
    pub fn store(&mut self, access: Access) -> Result<&mut Store> {
        if self.store.is_none() {
            self.store = Some(Store::open(&self.location, access)?);
        }
        Ok(self.store.as_mut().expect("opened just above"))
    }

    pub fn location(&self) -> &Location {
        &self.location
    }
}

pub fn dispatch(cli: Cli) -> Result<Outcome> {
    let (location, found_by) = Location::find(cli.db.as_deref(), cli.db_from_env)?;
    let mut session = Session {
        location,
        store: None,
    };
    let s = &mut session;
    match cli.command {
        Command::Log(args) => log::run(s, args),
        Command::Answer(args) => answer::run(s, args),
        Command::Skip(args) => skip::run(s, args),
        Command::List(args) => list::run(s, args),
        Command::Check(args) => check::run(s, args),
        Command::Clear(args) => clear::run(s, args),
        Command::Reset(args) => reset::run(s, args),
        Command::History(args) => history::run(s, args),
        Command::Ingest(args) => ingest::run(s, args),
        Command::Render(args) => render::run(s, args),
        Command::Import(args) => import::run(s, args),
        Command::Answers(args) => answers::run(s, args),
        Command::AcceptDefaults(args) => accept_defaults::run(s, args),
        Command::Ask(args) => ask::run(s, args),
        Command::Info => info::run(s, found_by),
        Command::Completions(args) => completions::completions(args),
        Command::Man => completions::man(),
    }
}

/// The question with this id, or `not_found`.
fn existing(tx: &dyn crate::store::Tx, id: i64) -> Result<crate::model::Question> {
    tx.question(id)?.ok_or_else(|| {
        crate::error::Error::not_found(format!(
            "there is no question {id} in the ledger; 'questions list' shows the ids"
        ))
    })
}

/// The questions a command works on: the stage's, narrowed to `ids`. Every id must exist
/// (and be in the stage, when one is given): an unknown id never passes a gate.
fn select(tx: &dyn Tx, stage: Option<&str>, ids: Option<&[i64]>) -> Result<Vec<Question>> {
    let found = tx.questions(&Filter {
        stage: if ids.is_some() {
            None
        } else {
            stage.map(str::to_string)
        },
        ids: ids.map(<[i64]>::to_vec),
        ..Filter::default()
    })?;
    let Some(ids) = ids else { return Ok(found) };
    let missing: Vec<String> = ids
        .iter()
        .filter(|id| !found.iter().any(|q| q.id == **id))
        .map(i64::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(Error::not_found(format!(
            "no question with id {} in the ledger; an unknown id never passes a gate",
            missing.join(", ")
        )));
    }
    if let Some(stage) = stage {
        let outside: Vec<String> = found
            .iter()
            .filter(|q| q.stage.trim() != stage)
            .map(|q| format!("{} (stage '{}')", q.id, q.stage))
            .collect();
        if !outside.is_empty() {
            return Err(Error::not_found(format!(
                "question {} not in stage '{stage}'; check the ids stored for this stage",
                outside.join(", ")
            )));
        }
    }
    Ok(found)
}

/// The stage's pending questions, narrowed to `ids` (each of which must be in the stage):
/// what `render` and `ask` put before a person.
fn pending(
    session: &mut Session,
    stage: &str,
    ids: Option<&crate::cli::IdList>,
) -> Result<Vec<Question>> {
    let ids = ids.map(|i| i.0.as_slice());
    let all = session
        .store(crate::store::Access::Read)?
        .read(|tx| select(tx, Some(stage), ids))?;
    Ok(all
        .into_iter()
        .filter(|q| q.status == crate::model::Status::Pending)
        .collect())
}

/// The most input `ingest` and `import` read: far beyond any real subagent output.
const INPUT_LIMIT: u64 = 32 * 1024 * 1024;

/// Reads `--file PATH`, or standard input for `-` or no file, as UTF-8 text.
fn read_input(file: Option<&Path>) -> Result<String> {
    let mut bytes = Vec::new();
    match file.filter(|p| p.as_os_str() != "-") {
        Some(path) => {
            let handle = std::fs::File::open(path)
                .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
            handle
                .take(INPUT_LIMIT + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
        }
        None => {
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
