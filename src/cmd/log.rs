use serde_json::json;

use super::{Outcome, Session};
use crate::cli::LogArgs;
use crate::clock;
use crate::error::{Error, Result};
use crate::model::{
    proposed_or_recommended, split_recommended, Event, EventKind, NewQuestion, QuestionOption,
};
use crate::store::Access;

pub fn run(session: &mut Session, args: LogArgs) -> Result<Outcome> {
    let allow_duplicate = args.allow_duplicate;
    let new = new_question(args)?;
    let now = clock::now();
    let (question, created) = session.store(Access::Write)?.write(|tx| {
        if !allow_duplicate {
            if let Some(same) =
                tx.find_same(&new.stage, new.group_name.as_deref(), &new.question)?
            {
                return Ok((same, false));
            }
        }
        let q = tx.insert(&new, &now)?;
        tx.record(&Event::change(EventKind::Logged, &now, None, &q))?;
        Ok((q, true))
    })?;
    Ok(Outcome::ok(json!({
        "ok": true,
        "procedure": "log",
        "question_id": question.id,
        "created": created,
        "question": question,
    })))
}

fn blank_to_none(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

fn new_question(args: LogArgs) -> Result<NewQuestion> {
    let mut options = args.options_json.map(|o| o.0).unwrap_or_default();
    options.extend(args.options.into_iter().map(|label| QuestionOption {
        label,
        description: None,
        recommended: false,
    }));
    let options = tidy_options(options)?;
    if options.is_empty() && args.no_freeform {
        return Err(Error::usage(
            "--no-freeform needs options to choose from: add --option LABEL or --options-json",
        ));
    }
    if options.is_empty() && args.multi_select {
        return Err(Error::usage(
            "--multi-select needs options to choose from: add --option LABEL or --options-json",
        ));
    }
    Ok(NewQuestion {
        stage: args.stage,
        group_name: blank_to_none(args.group),
        question: args.question,
        proposed: proposed_or_recommended(args.proposed, &options),
        required: args.required.unwrap_or(true),
        header: blank_to_none(args.header),
        context: blank_to_none(args.context),
        options,
        multi_select: args.multi_select,
        allow_freeform: !args.no_freeform,
        source: "cli".to_string(),
    })
}

/// Trims labels, reads a " (Recommended)" suffix, refuses blank and repeated labels.
fn tidy_options(options: Vec<QuestionOption>) -> Result<Vec<QuestionOption>> {
    let mut tidy: Vec<QuestionOption> = Vec::with_capacity(options.len());
    for opt in options {
        let (label, marked) = split_recommended(&opt.label);
        if label.is_empty() {
            return Err(Error::usage(
                "an option label is empty: every option needs a label",
            ));
        }
        if tidy
            .iter()
            .any(|o| o.label.to_lowercase() == label.to_lowercase())
        {
            return Err(Error::usage(format!(
                "the option '{label}' is given twice: option labels must differ"
            )));
        }
        tidy.push(QuestionOption {
            label: label.to_string(),
            description: opt.description,
            recommended: opt.recommended || marked,
        });
    }
    Ok(tidy)
}
