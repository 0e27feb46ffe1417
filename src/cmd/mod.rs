//! One file per verb: where the command line meets the store.

mod answer;
mod check;
mod clear;
mod history;
mod list;
mod log;
mod reset;
mod skip;

use serde_json::Value;

use crate::cli::{Cli, Command};
use crate::error::Result;
use crate::output;
use crate::store::{Access, Location, Store};

/// What a command produced: the document to print and the exit code. A failed gate is
/// an outcome (exit 1), not an error.
pub struct Outcome {
    pub body: Rendered,
    pub exit: u8,
    /// A line for stderr, for people reading a CI log.
    pub note: Option<String>,
}

pub enum Rendered {
    Json(Value),
    Text(String),
}

impl Outcome {
    pub fn ok(body: Value) -> Outcome {
        Outcome {
            body: Rendered::Json(body),
            exit: 0,
            note: None,
        }
    }

    pub fn print(&self) {
        match &self.body {
            Rendered::Json(v) => output::json(v),
            Rendered::Text(t) => output::text_out(t),
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
    let location = Location::resolve(cli.db.as_deref())?;
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
