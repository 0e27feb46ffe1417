use super::Outcome;
use crate::cli::{ApprovalArgs, LogArgs};
use questions_core::error::{ApprovalClash, Refusal, Result};
use questions_core::model::{Approval, Draft, NewQuestion, QuestionOption, Source};
use questions_core::ops::Ledger;
use questions_core::ops::{self, Expiry};

pub(super) fn run(ledger: &mut Ledger, args: LogArgs) -> Result<Outcome> {
    let allow_duplicate = args.allow_duplicate;
    let expiry = Expiry {
        expires_in: args.expiry.expires_in,
        on_expiry: args.expiry.on_expiry,
    };
    let approval = policy(ledger, &args.approval)?;
    let mut new = new_question(args, approval)?;
    expiry.apply(&mut new, &questions_core::clock::now())?;
    Ok(Outcome::ok(ops::log(ledger, &new, allow_duplicate)?))
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
    )?;
    Ok(Some(approval))
}

/// The question `log` asks, under `NewQuestion::build`'s rules; a question that cannot be
/// an approval is told which of its flags clashes.
fn new_question(args: LogArgs, approval: Option<Approval>) -> Result<NewQuestion> {
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
        approval,
    })
    .map_err(|e| match e.refusal {
        Some(Refusal::NotAnApproval(clash)) => {
            let flag = match clash {
                ApprovalClash::Optional => "--required false",
                ApprovalClash::Proposed => "--proposed",
                ApprovalClash::Options => "--option",
                ApprovalClash::MultiSelect => "--multi-select",
                ApprovalClash::NoFreeform => "--no-freeform",
            };
            e.with_cli_wording(format!(
                "{flag} does not go with --approval: an approval is required and its answers are votes; \
                 usage: questions log --stage S --question TEXT --approval --approvers NAME,… --min N"
            ))
        }
        _ => e,
    })
}
