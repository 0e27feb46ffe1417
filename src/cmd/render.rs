use serde::Serialize;
use serde_json::Value;

use super::{door, nobody, take, write_private, Outcome};
use crate::cli::RenderArgs;
use questions_core::clock;
use questions_core::error::{Error, Result};
use questions_core::formats::{ask_user, markdown, open_questions, pi, uwf, RenderFormat};
use questions_core::model::Vocabulary;
use questions_core::ops::Procedure;
use questions_core::ops::{Ledger, Reply, Request};

#[derive(Serialize)]
struct Batch {
    question_ids: Vec<i64>,
    payload: Value,
}

/// The ask-user and vscode document: the payloads to pass to the tool, in batches.
#[derive(Serialize)]
struct LeftOut {
    question_id: i64,
    reason: String,
}

#[derive(Serialize)]
struct Batches {
    format: &'static str,
    stage: String,
    #[allow(clippy::struct_field_names, reason = "the document's own key")]
    batches: Vec<Batch>,
    warnings: Vec<String>,
    left_out: Vec<LeftOut>,
}

/// The pi-pending document: the file's content as `payload`.
#[derive(Serialize)]
struct Pending {
    format: &'static str,
    stage: String,
    question_ids: Vec<i64>,
    payload: Value,
    warnings: Vec<String>,
}

/// What stdout says when --out took the rendering.
#[derive(Serialize)]
struct Written {
    format: &'static str,
    stage: String,
    question_ids: Vec<i64>,
    out: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<Vec<String>>,
}

pub(super) fn run(ledger: &mut Ledger, args: RenderArgs) -> Result<Outcome> {
    if let Some(out) = args.out.as_deref() {
        if ledger.location().is_ledger_file(out) {
            return Err(Error::usage(format!(
                "--out {} names the ledger or one of its -wal/-shm files; write the \
                 rendering to another file",
                out.display()
            )));
        }
    }
    let ids = args.ids.as_ref().map(|i| i.0.as_slice());
    let req = Request::Pending {
        stage: args.stage.clone(),
        ids: ids.map(<[i64]>::to_vec),
    };
    let questions = take!(door(ledger, nobody(), req)?, Reply::Pending).questions;
    // Approvals take votes from their approvers, not answers from an asking tool.
    let (approvals, questions): (Vec<_>, Vec<_>) = questions
        .into_iter()
        .partition(|q| q.state.approval.is_some());
    let question_ids: Vec<i64> = questions.iter().map(|q| q.id).collect();
    let format = args.format.name();
    let stage = args.stage;
    let mut warnings: Vec<String> = approvals
        .iter()
        .map(|q| {
            format!(
                "question {} is an approval, left out: its approvers vote on it \
                 (questions approve / questions reject)",
                q.id
            )
        })
        .collect();

    // The text for --out (or stdout), and the warnings the summary carries.
    let (text, warnings) = match args.format {
        RenderFormat::AskUser | RenderFormat::Vscode => {
            let (batches, left_out) = if args.format == RenderFormat::AskUser {
                ask_user::render_ask_user(&questions, &mut warnings)
            } else {
                ask_user::render_vscode(&questions, &mut warnings)
            };
            let doc = Batches {
                format,
                stage: stage.clone(),
                batches: batches
                    .into_iter()
                    .map(|b| Batch {
                        question_ids: b.question_ids,
                        payload: b.payload,
                    })
                    .collect(),
                warnings,
                left_out: left_out
                    .into_iter()
                    .map(|l| LeftOut {
                        question_id: l.question_id,
                        reason: l.reason,
                    })
                    .chain(approvals.iter().map(|q| LeftOut {
                        question_id: q.id,
                        reason: "an approval: its approvers vote on it".to_string(),
                    }))
                    .collect(),
            };
            if args.out.is_none() {
                return Ok(Outcome::ok(doc));
            }
            (
                crate::output::pretty(&questions_core::ops::document(
                    true,
                    Procedure::Render,
                    &doc,
                )),
                Some(doc.warnings),
            )
        }
        RenderFormat::PiPending => {
            let payload = pi::render_pending(&stage, &clock::now(), &questions);
            if args.out.is_none() {
                return Ok(Outcome::ok(Pending {
                    format,
                    stage,
                    question_ids,
                    payload,
                    warnings,
                }));
            }
            let file = serde_json::to_string_pretty(&payload).unwrap_or_default() + "\n";
            (file, Some(warnings))
        }
        RenderFormat::OpenQuestions => {
            let text = open_questions::render(&questions, &mut warnings);
            (text, Some(warnings))
        }
        RenderFormat::Uwf => {
            let text = uwf::render(&questions, &mut warnings);
            (text, Some(warnings))
        }
        RenderFormat::Markdown => (markdown::render(&questions), None),
    };
    if let Some(path) = args.out {
        write_private(&path, &text)?;
        Ok(Outcome::ok(Written {
            format,
            stage,
            question_ids,
            out: path.display().to_string(),
            warnings,
        }))
    } else {
        let mut outcome = Outcome::text(text);
        outcome.note = warnings.filter(|w| !w.is_empty()).map(|w| w.join("\n"));
        Ok(outcome)
    }
}
