use super::Outcome;
use crate::cli::{ApprovalArgs, LogArgs};
use crate::error::{Error, Result};
use crate::model::{
    check_policy, proposed_or_recommended, tidy_options, Approval, NewQuestion, OnExpiry,
    QuestionOption, Source,
};
use crate::ops::{self, Expiry};
use crate::store::Ledger;

pub fn run(ledger: &mut Ledger, args: LogArgs) -> Result<Outcome> {
    let allow_duplicate = args.allow_duplicate;
    let expiry = Expiry {
        expires_in: args.expiry.expires_in,
        on_expiry: args.expiry.on_expiry,
    };
    let approval = approval(ledger, &args)?;
    let mut new = new_question(args)?;
    new.approval = approval;
    expiry.apply(&mut new, &crate::clock::now())?;
    Ok(Outcome::ok(ops::log(ledger, &new, allow_duplicate)?))
}

/// `--approval`: the policy, with the requester named (by default whoever logs it: the
/// PostgreSQL role, else the operating-system user). A required question of no options.
fn approval(ledger: &mut Ledger, args: &LogArgs) -> Result<Option<Approval>> {
    let a = &args.approval;
    if !a.approval {
        return Ok(None);
    }
    let refused = [
        (args.required == Some(false), "--required false"),
        (args.proposed.is_some(), "--proposed"),
        (
            !args.options.is_empty() || args.options_json.is_some(),
            "--option",
        ),
        (args.multi_select, "--multi-select"),
        (args.no_freeform, "--no-freeform"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(Error::usage(format!(
            "{flag} does not go with --approval: an approval is required and its answers are votes;              usage: questions log --stage S --question TEXT --approval --approvers NAME,… --min N"
        )));
    }
    policy(ledger, a)
}

/// The policy of `--approval` (log and ingest): its requester named (by default whoever
/// logs it: the PostgreSQL role, else the operating-system user), and checked.
pub(super) fn policy(ledger: &mut Ledger, a: &ApprovalArgs) -> Result<Option<Approval>> {
    if !a.approval {
        return Ok(None);
    }
    let approvers: Vec<String> = a.approvers.iter().map(|p| p.trim().to_string()).collect();
    let min = a.min.unwrap_or(1);
    let requester = match &a.requester {
        Some(name) => name.trim().to_string(),
        None => ops::identify(ledger, &ops::Identity::Local(super::Who::os_user()))?,
    };
    check_policy(&approvers, min, &requester).map_err(Error::usage)?;
    Ok(Some(Approval {
        approvers,
        min,
        requester,
        votes: Vec::new(),
    }))
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
        approval: None,
    })
}
