//! The binary's entry: the one place where an outcome or an error becomes output and an
//! exit code.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::ErrorKind;

use crate::{cli, cmd, output};
use questions_core::error::Error;
use questions_core::{fault, ops};

pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // A panic is a bug: its message goes to stderr for the report, and the user still
    // gets the contract's JSON, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        output::note(&format!("internal error: {info}"));
    }));
    // What a waiting reader has to say (the server out of reach, and back) goes to stderr.
    ops::on_notice(output::note);
    std::panic::catch_unwind(|| run_args(&args)).unwrap_or_else(|_| {
        let message = if fault::has_committed() {
            "internal error: questions stopped after its change was recorded, before it \
             could report it; 'questions list' or 'questions history' shows what the ledger \
             holds. Please report it with the command that caused it"
        } else {
            "internal error: questions stopped before finishing, and nothing this call \
             started was recorded. Please report it with the command that caused it"
        };
        let err = Error::db(message);
        output::failure(None, &err);
        ExitCode::from(err.code.exit_code())
    })
}

fn run_args(args: &[OsString]) -> ExitCode {
    if let Some(line) = cli::plain_version(args) {
        output::text_out(line);
        return ExitCode::SUCCESS;
    }
    if let Some(version) = cli::version_json(args) {
        output::json(&ops::document(true, ops::Procedure::Version, &version));
        return ExitCode::SUCCESS;
    }
    let cli = match cli::parse(args) {
        Ok(cli) => cli,
        Err(err) => return usage_failure(err, args),
    };
    let procedure = cli.command.procedure();
    match cmd::dispatch(cli) {
        Ok(outcome) => {
            outcome.print(procedure);
            ExitCode::from(outcome.exit)
        }
        Err(err) => {
            output::failure(Some(procedure), &err);
            ExitCode::from(err.code.exit_code())
        }
    }
}

/// clap's errors become the contract's usage failure; `--help` and `--version` print as usual.
fn usage_failure(err: clap::Error, args: &[OsString]) -> ExitCode {
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = err.print();
        return ExitCode::SUCCESS;
    }
    let procedure = cli::named_command(args);
    if procedure == Some(ops::Procedure::Hook) {
        // A harness reads a hook's exit code 2 as "block the tool": a hook fails open.
        output::stderr_text(&err.render().to_string());
        return ExitCode::SUCCESS;
    }
    let message = cli::usage_message(&err, procedure.map(ops::Procedure::as_str));
    let error = Error::usage(message);
    output::json(&ops::failure(procedure, &error));
    output::stderr_text(&err.render().to_string());
    ExitCode::from(2)
}
