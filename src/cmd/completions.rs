use clap::CommandFactory;

use super::Outcome;
use crate::cli::{Cli, CompletionsArgs};
use questions_core::error::Result;

/// A completion script, generated from the same clap definition that parses the commands.
pub(super) fn completions(args: CompletionsArgs) -> Result<Outcome> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "questions", &mut script);
    Ok(Outcome::text(String::from_utf8_lossy(&script).into_owned()))
}

/// The man page, in roff: one page, `questions(1)`. clap_mangen's own subcommand section
/// refers to a page per command (`questions-log(1)` …) that nobody installs, so the
/// commands are listed here, each with its usage line.
pub(super) fn man() -> Result<Outcome> {
    let fail = |e: std::io::Error| {
        questions_core::error::Error::io(format!("cannot render the man page: {e}"))
    };
    let mut command = Cli::command();
    command.build();
    let man = clap_mangen::Man::new(command.clone());
    let mut page = Vec::new();
    man.render_title(&mut page).map_err(fail)?;
    man.render_name_section(&mut page).map_err(fail)?;
    man.render_synopsis_section(&mut page).map_err(fail)?;
    man.render_description_section(&mut page).map_err(fail)?;
    man.render_options_section(&mut page).map_err(fail)?;
    let mut commands = String::from(".SH COMMANDS\n");
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let usage = sub.clone().render_usage().to_string();
        let usage = usage.trim().trim_start_matches("Usage:").trim();
        let about = sub
            .get_about()
            .map(std::string::ToString::to_string)
            .unwrap_or_default();
        commands.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(usage), roff(&about)));
    }
    commands.push_str(
        ".PP\n\\fBquestions\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR shows a command's flags and examples.\n",
    );
    page.extend_from_slice(commands.as_bytes());
    man.render_extra_section(&mut page).map_err(fail)?;
    man.render_version_section(&mut page).map_err(fail)?;
    Ok(Outcome::text(String::from_utf8_lossy(&page).into_owned()))
}

/// Text as roff shows it literally.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.chars().next() {
        Some('.' | '\'') => format!("\\&{escaped}"),
        _ => escaped,
    }
}
