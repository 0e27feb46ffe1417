use serde_json::{json, Value};

use super::{pending, write_private, Outcome, Rendered, Session};
use crate::cli::{RenderArgs, RenderFormat};
use crate::clock;
use crate::error::{Error, Result};
use crate::formats::{ask_user, markdown, open_questions, pi, uwf};

pub fn run(session: &mut Session, args: RenderArgs) -> Result<Outcome> {
    if let Some(out) = args.out.as_deref() {
        if session.location().is_ledger_file(out) {
            return Err(Error::usage(format!(
                "--out {} names the ledger or one of its -wal/-shm files; write the \
                 rendering to another file",
                out.display()
            )));
        }
    }
    let questions = pending(session, &args.stage, args.ids.as_ref())?;
    let question_ids: Vec<i64> = questions.iter().map(|q| q.id).collect();
    let name = format_name(args.format);
    let mut warnings = Vec::new();

    let text = match args.format {
        RenderFormat::AskUser | RenderFormat::Vscode => {
            let batches = if args.format == RenderFormat::AskUser {
                ask_user::render_ask_user(&questions, &mut warnings)
            } else {
                ask_user::render_vscode(&questions, &mut warnings)
            };
            let batches: Vec<Value> = batches
                .into_iter()
                .map(|b| json!({ "question_ids": b.question_ids, "payload": b.payload }))
                .collect();
            let body = json!({
                "ok": true,
                "procedure": "render",
                "format": name,
                "stage": args.stage,
                "batches": batches,
                "warnings": warnings,
            });
            return written_or_printed(
                body,
                args.out.as_deref(),
                name,
                &args.stage,
                question_ids,
                None,
            );
        }
        RenderFormat::PiPending => {
            let file = pi::render_pending(&args.stage, &clock::now(), &questions);
            let body = json!({
                "ok": true,
                "procedure": "render",
                "format": name,
                "stage": args.stage,
                "question_ids": question_ids,
                "payload": file,
                "warnings": warnings,
            });
            let content = serde_json::to_string_pretty(&file).unwrap_or_default() + "\n";
            return written_or_printed(
                body,
                args.out.as_deref(),
                name,
                &args.stage,
                question_ids,
                Some(content),
            );
        }
        RenderFormat::OpenQuestions => open_questions::render(&questions),
        RenderFormat::Uwf => uwf::render(&questions),
        RenderFormat::Markdown => markdown::render(&questions),
    };
    match args.out {
        Some(path) => {
            write_private(&path, &text)?;
            Ok(Outcome::ok(written(name, &args.stage, question_ids, &path)))
        }
        None => Ok(Outcome {
            body: Rendered::Text(text),
            exit: 0,
            note: None,
        }),
    }
}

/// JSON renderings print their document; with --out the file gets `content` (or the
/// document) and stdout says where it went.
fn written_or_printed(
    body: Value,
    out: Option<&std::path::Path>,
    name: &str,
    stage: &str,
    ids: Vec<i64>,
    content: Option<String>,
) -> Result<Outcome> {
    match out {
        None => Ok(Outcome::ok(body)),
        Some(path) => {
            let content = content
                .unwrap_or_else(|| serde_json::to_string_pretty(&body).unwrap_or_default() + "\n");
            write_private(path, &content)?;
            let mut summary = written(name, stage, ids, path);
            if let Some(w) = body.get("warnings") {
                summary["warnings"] = w.clone();
            }
            Ok(Outcome::ok(summary))
        }
    }
}

fn written(name: &str, stage: &str, ids: Vec<i64>, path: &std::path::Path) -> Value {
    json!({
        "ok": true,
        "procedure": "render",
        "format": name,
        "stage": stage,
        "question_ids": ids,
        "out": path.display().to_string(),
    })
}

fn format_name(format: RenderFormat) -> &'static str {
    match format {
        RenderFormat::AskUser => "ask-user",
        RenderFormat::Vscode => "vscode",
        RenderFormat::PiPending => "pi-pending",
        RenderFormat::OpenQuestions => "open-questions",
        RenderFormat::Uwf => "uwf",
        RenderFormat::Markdown => "markdown",
    }
}
