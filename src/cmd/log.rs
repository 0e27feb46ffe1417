use super::Outcome;
use crate::cli::LogArgs;
use crate::error::{Error, Result};
use crate::model::{
    proposed_or_recommended, tidy_options, NewQuestion, OnExpiry, QuestionOption, Source,
};
use crate::ops::{self, Expiry};
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, args: LogArgs) -> Result<Outcome> {
    let allow_duplicate = args.allow_duplicate;
    let expiry = Expiry {
        expires_in: args.expiry.expires_in,
        on_expiry: args.expiry.on_expiry.into(),
    };
    let mut new = new_question(args)?;
    expiry.apply(&mut new, &crate::clock::now())?;
    Ok(Outcome::ok(ops::log(ledger, &new, allow_duplicate)?))
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
        source: Source::Cli,
        expires_at: None,
        on_expiry: OnExpiry::Keep,
    })
}
