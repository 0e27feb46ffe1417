use super::Outcome;
use crate::cli::{ApprovalArgs, LogArgs};
use questions_core::error::{Error, Result};
use questions_core::model::{Approval, Draft, NewQuestion, QuestionOption, Source};
use questions_core::ops::Ledger;
use questions_core::ops::{self, Expiry};

pub fn run(ledger: &mut Ledger, args: LogArgs) -> Result<Outcome> {
    let allow_duplicate = args.allow_duplicate;
    let expiry = Expiry {
        expires_in: args.expiry.expires_in,
        on_expiry: args.expiry.on_expiry,
    };
    let approval = approval(ledger, &args)?;
    let mut new = new_question(args)?;
    new.approval = approval;
    expiry.apply(&mut new, &questions_core::clock::now())?;
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
            "{flag} does not go with --approval: an approval is required and its answers are votes; \
             usage: questions log --stage S --question TEXT --approval --approvers NAME,… --min N"
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
    // Whoever logs it, as votes know them: the PostgreSQL role, else the operating-system
    // user by uid (never the environment).
    let logger = ops::identify(ledger, &ops::Identity::Local(super::Who::os_user()))?;
    let approval = Approval::new(
        &a.approvers,
        a.min.unwrap_or(1),
        a.requester.as_deref(),
        &logger,
    )
    .map_err(Error::usage)?;
    Ok(Some(approval))
}

fn new_question(args: LogArgs) -> Result<NewQuestion> {
    let mut options = args.options_json.map(|o| o.0).unwrap_or_default();
    options.extend(args.options.into_iter().map(|label| QuestionOption {
        label,
        description: None,
        recommended: false,
    }));
    NewQuestion::build(Draft {
        stage: args.stage,
        group: args.group,
        question: args.question,
        proposed: args.proposed,
        required: args.required.unwrap_or(true),
        header: args.header,
        context: args.context,
        options,
        multi_select: args.multi_select,
        allow_freeform: !args.no_freeform,
        source: Source::Cli,
        approval: None,
    })
}
