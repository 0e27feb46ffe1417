//! The printer: everything that reaches stdout or stderr goes through here.

use std::io::Write;

use questions_core::error::Error;
use questions_core::model::Question;
use questions_core::ops::Procedure;

/// One pretty-printed JSON document (two-space indent) and a newline. A closed stdout
/// (`questions list | head -1`) is not an error worth a panic.
pub(crate) fn json(value: &impl serde::Serialize) {
    text_out(&pretty(value));
}

/// The JSON text of a document, pretty-printed, serialized straight from its types.
pub(crate) fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_string())
}

pub(crate) fn text_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.is_empty() && !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// A message for people on stderr. It may quote the ledger or the input (a stage name,
/// an answer on record, a line of a subagent's output), so escape and control characters
/// never reach the terminal.
pub(crate) fn note(message: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "questions: {}",
        sanitize(message, true)
    );
}

/// Text for stderr as it is (clap's usage errors): a value the user gave may hold escape
/// sequences, and they never reach the terminal.
pub(crate) fn stderr_text(text: &str) {
    let _ = std::io::stderr()
        .lock()
        .write_all(sanitize(text, true).as_bytes());
}

/// The failure document on stdout, and the message on stderr.
/// The command line's: the message carries the flag that helps (see `Error::flag_hint`).
pub(crate) fn failure(procedure: Option<Procedure>, err: &Error) {
    let body = questions_core::ops::failure(procedure, err).worded(err.cli_message());
    json(&body);
    note(&format!("error: {}", body.message()));
}

/// One question object a line.
pub(crate) fn jsonl(questions: &[Question]) -> String {
    let mut out = String::new();
    for q in questions {
        out.push_str(&serde_json::to_string(q).unwrap_or_default());
        out.push('\n');
    }
    out
}

fn answer_cell(q: &Question) -> String {
    q.state
        .answer
        .clone()
        .unwrap_or_else(|| match &q.state.skip_reason {
            Some(r) if q.state.status == questions_core::model::Status::Skipped => {
                format!("(skipped: {r})")
            }
            _ => String::new(),
        })
}

pub(crate) use questions_core::formats::sanitize;

fn clean(text: &str) -> String {
    sanitize(text, false)
}

/// A Markdown table for an artifact's "Open questions" section.
pub(crate) fn markdown(questions: &[Question]) -> String {
    let cell = |s: &str| clean(s).replace('|', "\\|");
    let mut out = String::from("| id | stage | status | required | group | question | answer |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for q in questions {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            q.id,
            cell(&q.stage),
            q.state.status.as_str(),
            if q.required { "yes" } else { "no" },
            cell(q.group_name.as_deref().unwrap_or("")),
            cell(&q.question),
            cell(&answer_cell(q)),
        ));
    }
    out
}

/// Aligned columns for people; the question and answer are shortened to fit `width`, and
/// with `colour` the status stands out (pending yellow, answered green, skipped dim).
pub(crate) fn table(questions: &[Question], width: usize, colour: bool) -> String {
    let head = [
        "ID", "STAGE", "STATUS", "REQ", "GROUP", "QUESTION", "ANSWER",
    ];
    let rows: Vec<[String; 7]> = questions
        .iter()
        .map(|q| {
            [
                q.id.to_string(),
                clean(&q.stage),
                q.state.status.as_str().to_string(),
                if q.required { "yes" } else { "no" }.to_string(),
                clean(q.group_name.as_deref().unwrap_or("")),
                clean(&q.question),
                clean(&answer_cell(q)),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // The fixed columns keep their width; question and answer share what is left.
    let fixed: usize = widths[..5].iter().sum::<usize>() + 2 * 6;
    let room = width.saturating_sub(fixed).max(20);
    let answer_room = widths[6].min(room / 3).max(6);
    widths[5] = widths[5].min(room.saturating_sub(answer_room)).max(8);
    widths[6] = answer_room;

    let mut out = String::new();
    let mut line = |cells: Vec<String>, header: bool| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let cell = shorten(cell, widths[i]);
            let pad = widths[i] - cell.chars().count();
            let painted = match (colour, header, i, cell.as_str()) {
                (true, true, _, _) => format!("\u{1b}[1m{cell}\u{1b}[0m"),
                (true, false, 2, "pending") => format!("\u{1b}[33m{cell}\u{1b}[0m"),
                (true, false, 2, "answered") => format!("\u{1b}[32m{cell}\u{1b}[0m"),
                (true, false, 2, "skipped") => format!("\u{1b}[2m{cell}\u{1b}[0m"),
                _ => cell,
            };
            text.push_str(&painted);
            if i + 1 < cells.len() {
                text.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(
        head.iter().map(std::string::ToString::to_string).collect(),
        true,
    );
    for row in rows {
        line(row.to_vec(), false);
    }
    out
}

fn shorten(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
