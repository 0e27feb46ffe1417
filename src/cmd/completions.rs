use clap::CommandFactory;

use super::Outcome;
use crate::cli::{Cli, CompletionsArgs};
use crate::error::Result;

/// A completion script, generated from the same clap definition that parses the commands.
pub fn completions(args: CompletionsArgs) -> Result<Outcome> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "questions", &mut script);
    Ok(Outcome::text(String::from_utf8_lossy(&script).into_owned()))
}

/// The man page, in roff.
pub fn man() -> Result<Outcome> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| crate::error::Error::io(format!("cannot render the man page: {e}")))?;
    Ok(Outcome::text(String::from_utf8_lossy(&page).into_owned()))
}
