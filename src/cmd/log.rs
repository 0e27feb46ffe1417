use super::{door, take, Outcome, Who};
use crate::cli::{ApprovalArgs, LogArgs};
use questions_core::error::{ApprovalClash, Error, Refusal, Result};
use questions_core::model::{Approval, Draft, QuestionOption, Source};
use questions_core::ops::{self, Expiry, Ledger, Reply, Request};

/// Logs a question; on a file, `who` is recorded as who logged it (over https:// the
/// server records the token's holder).
pub(super) fn run(ledger: &mut Ledger, who: &Who, args: LogArgs) -> Result<Outcome> {
    let allow_duplicate = args.allow_duplicate;
    let expiry = Expiry {
        expires_in: args.expiry.expires_in,
        on_expiry: args.expiry.on_expiry,
    };
    let approval = policy(ledger, &args.approval)?;
    let draft = draft(args, approval);
    // Over https:// a refusal comes back as words only: the core's own builder is asked
    // here first, so that a flag that clashes is named, as on a file.
    if super::is_served() {
        questions_core::model::NewQuestion::build(draft.clone()).map_err(in_flags)?;
    }
    let req = Request::Log {
        draft,
        expiry,
        allow_duplicate,
        // Over https:// the invocation's own key (`remote`); a file needs none.
        key: None,
    };
    let caller = who.via(questions_core::model::Channel::Cli);
    let logged = door(ledger, caller, req).map_err(in_flags)?;
    Ok(Outcome::ok(take!(logged, Reply::Logged)))
}

/// The policy of `--approval` (log and ingest): its requester named (by default whoever
/// logs it: the PostgreSQL role, else the operating-system user; over https:// the
/// token's holder), and checked.
pub(super) fn policy(ledger: &mut Ledger, a: &ApprovalArgs) -> Result<Option<Approval>> {
    if !a.approval {
        return Ok(None);
    }
    // Over https:// the server decides who logs it and who asks, from the token: this
    // machine's user is nobody there. Only a requester the user named goes with it (the
    // server refuses one an agent token names); the policy is the server's to check.
    if super::is_served() {
        return Ok(Some(Approval {
            approvers: a.approvers.iter().map(|p| p.trim().to_string()).collect(),
            min: a.min.unwrap_or(1),
            requester: a.requester.as_deref().unwrap_or("").trim().to_string(),
            logged_by: None,
            votes: Vec::new(),
        }));
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

/// The question `log` asks, as its flags give it; the core makes it one to log
/// (`NewQuestion::build`).
fn draft(args: LogArgs, approval: Option<Approval>) -> Draft {
    let mut options = args.options_json.map(|o| o.0).unwrap_or_default();
    options.extend(args.options.into_iter().map(|label| QuestionOption {
        label,
        description: None,
        recommended: false,
    }));
    Draft {
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
        urgent: args.urgent,
    }
}

/// A question that cannot be an approval, told which of its flags clashes.
fn in_flags(e: Error) -> Error {
    match e.refusal {
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
    }
}
