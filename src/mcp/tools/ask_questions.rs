//! `ask_questions`: logs questions, puts the pending ones to the person (the client's
//! form, a round trip on a stateless session, or the inbox's page), and returns each
//! question's outcome, at once or after a wait.

use std::time::Duration;

use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, InputRequest, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{blocking, form, tasks};
use super::{
    caller, client_name, complete, enveloped, enveloped_schema, failure, non_blank, number_or_text,
    outcomes, seconds, takes_tasks, task_deadline, unexpected, Input, Outcomes, Server,
};
use questions_core::error::{Error, Result};
use questions_core::model::Question;
use questions_core::model::{Draft, NewQuestion, QuestionOption, Source, Status};
use questions_core::ops::{self, Principal, Procedure, Reply, Request};

/// The key of the form among an "input required" result's requests (and of the person's
/// reply among the client's responses).
const FORM_KEY: &str = "form";

/// One question to log, as `log` takes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewItem {
    /// The question text.
    question: String,
    /// A short label (ask tools show at most 12 characters).
    header: Option<String>,
    /// The question's group, e.g. the artifact section it fills; `get_answers` keys by it.
    group: Option<String>,
    /// Background the person needs to answer.
    context: Option<String>,
    /// Options to choose from: labels, or {label, description?, recommended?}.
    /// A label ending in " (Recommended)" marks it recommended.
    options: Option<Vec<OptionItem>>,
    /// The person may choose several options.
    multi_select: Option<bool>,
    /// Free text is a valid answer besides the options (default true).
    allow_freeform: Option<bool>,
    /// The agent's best guess, offered to the person as the default.
    proposed: Option<String>,
    /// Whether the stage's gate waits for it (default true).
    required: Option<bool>,
    /// Makes it an approval: only these people may answer it, by voting.
    approval: Option<ApprovalItem>,
    /// Its cards reach people even inside their quiet hours (default false).
    urgent: Option<bool>,
}

/// An approval's policy, as `log --approval` takes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovalItem {
    /// Who may approve: names, and groups as "group:NAME".
    approvers: Vec<String>,
    /// How many distinct approvers must approve.
    min: u32,
    /// Who asked for it, who may never vote on it (default: this server's user).
    requester: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(super) enum OptionItem {
    Label(String),
    Full(FullOption),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FullOption {
    label: String,
    description: Option<String>,
    #[serde(default)]
    recommended: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AskInput {
    /// The stage the questions belong to (its gate waits for the required ones).
    stage: String,
    questions: Vec<NewItem>,
    /// Wait up to this many seconds (at most 50) for the answers before returning.
    #[serde(default, deserialize_with = "number_or_text")]
    #[schemars(with = "f64")]
    wait_seconds: Option<f64>,
    /// Put the pending questions to the person through the client's form (elicitation);
    /// default: true when the client supports it.
    elicit: Option<bool>,
}

/// What became of the form put to the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Elicited {
    /// The person filled in the form; their answers are recorded.
    Accepted,
    /// The client answered the form with "decline": the person's refusal, or the host's
    /// own where it shows no form (a headless run declines every one), which no server can
    /// tell apart. The questions stay pending; ask another way, not as if the person had
    /// refused.
    Declined,
    /// The client answered the form with "cancel": dismissed by the person, or by the host
    /// without showing it. The questions stay pending.
    Cancelled,
    /// The client cannot show forms (no elicitation capability).
    Unsupported,
    /// The client opened the questions' page in the inbox for the person (URL-mode
    /// elicitation): what they answer there is recorded by the inbox (channel `web`); the
    /// outcomes say what is answered by now.
    SentToInbox,
    /// `elicit: false`.
    NotRequested,
    /// No question was pending.
    NothingPending,
    /// The form could not be shown or its answers not recorded (see `elicitation_error`):
    /// the questions stay pending.
    Failed,
}

impl Elicited {
    fn note(self) -> Option<&'static str> {
        match self {
            Elicited::Declined => Some(
                "the client declined the form, and a headless host declines every form \
                 without showing it: this is not the person's refusal, and nothing was recorded; \
                 the questions stay pending: call wait_for_answers, or ask another way",
            ),
            Elicited::Cancelled => Some(
                "the client cancelled the form (the person dismissed it, or the host did \
                 without showing it): nothing was recorded, and the questions stay pending: \
                 call wait_for_answers",
            ),
            _ => None,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct NotRecorded {
    question_id: i64,
    reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Asked {
    question_ids: Vec<i64>,
    created_ids: Vec<i64>,
    outcomes: Outcomes,
    elicitation: Elicited,
    /// What a declined or cancelled form means for the agent: who declined it cannot be
    /// told, so it is never the person's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    elicitation_note: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    elicitation_error: Option<String>,
    /// Questions of an accepted form whose answer could not be recorded (someone answered
    /// them elsewhere while the form was open), and why; the others were recorded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_recorded: Vec<NotRecorded>,
}

/// A question of `ask_questions`, checked as `log` checks its flags.
/// `logger` is who logs it (a token's holder; else this server's user, else the client):
/// never a voter on an approval it logs, whatever requester it names. The draft is what
/// the door logs; the question, what it checked.
fn new_question(
    stage: &str,
    item: NewItem,
    at: usize,
    logger: &str,
) -> Result<(Draft, NewQuestion)> {
    let place = |e: Error| Error::new(e.code, format!("questions[{at}]: {}", e.message));
    let approval = match item.approval {
        None => None,
        Some(a) => Some(
            questions_core::model::Approval::new(
                &a.approvers,
                a.min,
                a.requester.as_deref(),
                logger,
            )
            .map_err(place)?,
        ),
    };
    let options = item
        .options
        .unwrap_or_default()
        .into_iter()
        .map(|o| match o {
            OptionItem::Label(label) => QuestionOption {
                label,
                description: None,
                recommended: false,
            },
            OptionItem::Full(FullOption {
                label,
                description,
                recommended,
            }) => QuestionOption {
                label,
                description,
                recommended,
            },
        })
        .collect();
    let draft = Draft {
        stage: stage.to_string(),
        group: item.group,
        question: item.question,
        proposed: item.proposed,
        required: item.required.unwrap_or(true),
        header: item.header,
        context: item.context,
        options,
        multi_select: item.multi_select.unwrap_or(false),
        allow_freeform: item.allow_freeform.unwrap_or(true),
        source: Source::AskUser,
        approval,
        urgent: item.urgent.unwrap_or(false),
    };
    let new = NewQuestion::build(draft.clone()).map_err(place)?;
    Ok((draft, new))
}

/// Whether the client shows forms: an elicitation capability that names form mode, or
/// names no mode at all (as before modes were named).
fn shows_forms(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// What became of the person sent to the inbox.
fn inbox_outcome(action: &ElicitationAction) -> Elicited {
    match action {
        ElicitationAction::Accept => Elicited::SentToInbox,
        ElicitationAction::Decline => Elicited::Declined,
        _ => Elicited::Cancelled,
    }
}

/// Whether the client opens a URL for the person (URL-mode elicitation).
fn opens_urls(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.url.is_some())
}

/// A session on revision 2026-07-28 or later: no server-to-client requests; a form goes
/// through the multi round-trip pattern.
fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

impl Server {
    /// `ask_questions`: logs, puts the pending questions to the person (a form in the
    /// session, or a round trip on a stateless session), waits. `round` is the state and
    /// the replies a client echoes when it calls again after an "input required" result.
    async fn ask(
        &self,
        input: AskInput,
        round: Option<(String, Option<rmcp::model::InputResponses>)>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse> {
        let stage = non_blank(&input.stage, "stage")?;
        if input.questions.is_empty() {
            return Err(Error::usage(
                "questions is empty: give at least one {\"question\": …}",
            ));
        }
        let wait = seconds(input.wait_seconds, Duration::ZERO, "wait_seconds")?;
        let who = self.principal(context)?;
        let logger = match &who {
            Principal::Agent(agent) => Some(agent.name.clone()),
            Principal::Person(person) => Some(person.person.clone()),
            Principal::Direct(_) => self.user.clone().or_else(|| caller(context).by),
        }
        .unwrap_or_default();
        let (drafts, new): (Vec<Draft>, Vec<NewQuestion>) = input
            .questions
            .into_iter()
            .enumerate()
            .map(|(at, item)| new_question(&stage, item, at, &logger))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        // The second call of a round trip (the form's reply, under the state we sealed)
        // logged its questions the first time: they must all be on record, and be the ones
        // the state names, or the call is refused before anything is written.
        let redeemed = match &round {
            Some((state, _)) => {
                let (ledger_id, on_record) = blocking(self.location.clone(), {
                    let new = new.clone();
                    move |ledger| ops::on_record(ledger, &new)
                })
                .await?;
                let state = self.rounds.redeem(
                    state,
                    &client_name(context),
                    ledger_id.as_deref(),
                    on_record.as_deref(),
                )?;
                Some((state, ledger_id))
            }
            None => None,
        };
        let (question_ids, created_ids) = if let Some((state, _)) = &redeemed {
            (state.question_ids.clone(), state.created_ids.clone())
        } else {
            // All or nothing, in one transaction, as `ingest` logs an envelope.
            let reply = self.call(who.clone(), Request::LogAll { drafts }).await?;
            let Reply::LoggedAll(logged) = reply else {
                return Err(unexpected(&reply));
            };
            (logged.question_ids, logged.created_ids)
        };

        let ((elicitation, not_recorded), elicitation_error) =
            if let (Some((_, replies)), Some((state, ledger_id))) = (round, redeemed) {
                let reply = replies
                    .as_ref()
                    .and_then(|r| r.get(FORM_KEY))
                    .ok_or_else(|| {
                        Error::usage(format!(
                            "requestState came without inputResponses.{FORM_KEY}, the person's \
                         reply to the form: nothing was recorded"
                        ))
                    })?;
                let reply: ElicitResult = serde_json::from_value(reply.clone()).map_err(|e| {
                    Error::usage(format!(
                        "inputResponses.{FORM_KEY} is not an elicitation result: {e}"
                    ))
                })?;
                let shown = ops::Shown {
                    ledger: ledger_id,
                    questions: state.shown.iter().cloned().collect(),
                };
                let ids: Vec<i64> = state.shown.iter().map(|(id, _)| *id).collect();
                match self.record_form(&stage, &ids, shown, reply, context).await {
                    Ok(done) => (done, None),
                    Err(e) => {
                        crate::output::note(&format!("ask_questions: the form failed: {e}"));
                        ((Elicited::Failed, Vec::new()), Some(e.message))
                    }
                }
            } else {
                let to_inbox = self.inbox.known() && opens_urls(context);
                match (input.elicit, shows_forms(context) || to_inbox) {
                    (Some(false), _) => ((Elicited::NotRequested, Vec::new()), None),
                    (_, false) => ((Elicited::Unsupported, Vec::new()), None),
                    (_, true) if stateless(context) => {
                        let (pending, ledger_id) =
                            self.form_questions(&stage, &question_ids).await?;
                        if pending.is_empty() {
                            ((Elicited::NothingPending, Vec::new()), None)
                        } else {
                            // The inbox's page records nothing through this call: its state
                            // shows no question.
                            let (params, shown) =
                                if let Some(params) = self.inbox_request(&pending, to_inbox)? {
                                    (params, Vec::new())
                                } else {
                                    let (message, schema) = form::build(&pending)?;
                                    let params = ElicitRequestParams::FormElicitationParams {
                                        meta: None,
                                        message,
                                        requested_schema: schema,
                                    };
                                    (
                                        params,
                                        pending.iter().map(|q| (q.id, q.fingerprint())).collect(),
                                    )
                                };
                            let state = self.rounds.seal(
                                &client_name(context),
                                ledger_id.as_deref(),
                                question_ids,
                                created_ids,
                                shown,
                            )?;
                            let form = InputRequest::Elicitation(ElicitRequest::new(params));
                            let requests = [(FORM_KEY.to_string(), form)].into_iter().collect();
                            return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                                Some(requests),
                                Some(state),
                            )));
                        }
                    }
                    (_, true) => {
                        match self.elicit(&stage, &question_ids, to_inbox, context).await {
                            Ok(done) => (done, None),
                            Err(e) => {
                                crate::output::note(&format!(
                                    "ask_questions: the form failed: {e}"
                                ));
                                ((Elicited::Failed, Vec::new()), Some(e.message))
                            }
                        }
                    }
                }
            };

        if !wait.is_zero() && takes_tasks(context) {
            let questions = self
                .named(who.clone(), None, Some(question_ids.clone()))
                .await?;
            if questions.iter().any(|q| q.state.status == Status::Pending) {
                // The result this call would return, which the task completes from.
                let template = enveloped(
                    true,
                    Procedure::AskQuestions,
                    &Asked {
                        question_ids: question_ids.clone(),
                        created_ids,
                        outcomes: outcomes(&questions),
                        elicitation,
                        elicitation_note: elicitation.note(),
                        elicitation_error,
                        not_recorded,
                    },
                )?;
                return self
                    .start_task(ops::NewTask {
                        id: tasks::random_id()?,
                        procedure: Procedure::AskQuestions,
                        stage: Some(stage),
                        question_ids,
                        template,
                        deadline: task_deadline(input.wait_seconds)?,
                    })
                    .await;
            }
        }
        let (questions, _) = self
            .wait(Some(stage), Some(question_ids.clone()), wait, context)
            .await?;
        let asked = Asked {
            question_ids,
            created_ids,
            outcomes: outcomes(&questions),
            elicitation,
            elicitation_note: elicitation.note(),
            elicitation_error,
            not_recorded,
        };
        complete(Procedure::AskQuestions, &asked)
    }

    /// The URL-mode request that sends the person to the first pending question's page in
    /// the inbox, when `to_inbox`.
    fn inbox_request(
        &self,
        pending: &[Question],
        to_inbox: bool,
    ) -> Result<Option<ElicitRequestParams>> {
        let Some(url) = pending
            .first()
            .filter(|_| to_inbox)
            .and_then(|q| self.inbox.page(q.id))
        else {
            return Ok(None);
        };
        let message = match pending {
            [one] => format!("Answer in the questions inbox: {}", one.question),
            many => format!(
                "{} questions need your answer in the questions inbox",
                many.len()
            ),
        };
        Ok(Some(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url,
            elicitation_id: super::super::rounds::random_hex(16)?,
        }))
    }

    /// The pending questions among `ids` a form puts to the person (approvals take votes,
    /// not a form's answers), and the ledger's id.
    async fn form_questions(
        &self,
        stage: &str,
        ids: &[i64],
    ) -> Result<(Vec<Question>, Option<String>)> {
        let (s, i) = (stage.to_string(), ids.to_vec());
        let (pending, ledger_id) = blocking(self.location.clone(), move |ledger| {
            Ok((ops::pending(ledger, &s, Some(&i))?, ledger.id()?))
        })
        .await?;
        let pending = pending
            .into_iter()
            .filter(|q| q.state.approval.is_none())
            .collect();
        Ok((pending, ledger_id))
    }

    /// Puts the pending questions among `ids` to the person through the client's form
    /// (a request to the client, on a session of an older revision), and records what they
    /// chose.
    async fn elicit(
        &self,
        stage: &str,
        ids: &[i64],
        to_inbox: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Elicited, Vec<NotRecorded>)> {
        let (pending, ledger_id) = self.form_questions(stage, ids).await?;
        if pending.is_empty() {
            return Ok((Elicited::NothingPending, Vec::new()));
        }
        if let Some(params) = self.inbox_request(&pending, to_inbox)? {
            let reply = context
                .peer
                .create_elicitation(params)
                .await
                .map_err(|e| Error::io(format!("the client did not open the inbox: {e}")))?;
            return Ok((inbox_outcome(&reply.action), Vec::new()));
        }
        let (message, schema) = form::build(&pending)?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        let reply = context
            .peer
            .create_elicitation(params)
            .await
            .map_err(|e| Error::io(format!("the client did not show the form: {e}")))?;
        // What the form showed is what is recorded.
        let shown = ops::Shown::all(ledger_id, &pending);
        let ids: Vec<i64> = pending.iter().map(|q| q.id).collect();
        self.record_form(stage, &ids, shown, reply, context).await
    }

    /// Records the person's reply to a form that showed `shown` (questions `ids`): a
    /// question answered elsewhere while the form was open is reported, and the others are
    /// recorded.
    async fn record_form(
        &self,
        stage: &str,
        ids: &[i64],
        shown: ops::Shown,
        reply: ElicitResult,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Elicited, Vec<NotRecorded>)> {
        if ids.is_empty() {
            // The person was sent to the inbox: it records what they answer there.
            return Ok((inbox_outcome(&reply.action), Vec::new()));
        }
        match reply.action {
            ElicitationAction::Accept => {}
            ElicitationAction::Decline => return Ok((Elicited::Declined, Vec::new())),
            _ => return Ok((Elicited::Cancelled, Vec::new())),
        }
        // Through the door as the session's principal: on an agent token's session the
        // form is its host's, recorded as no more than that.
        let who = self.principal(context)?;
        let (stage, ids) = (stage.to_string(), ids.to_vec());
        let content = reply.content;
        let asked = blocking(self.location.clone(), move |ledger| {
            // The questions as they stand: the form's reply is read against them, and
            // `shown` refuses any that is no longer what the form showed.
            let questions = ops::named(ledger, None, Some(&ids))?;
            let chosen = form::read(&questions, content.as_ref())?;
            let request = Request::Elicited {
                stage,
                chosen,
                shown,
            };
            match ops::call(ledger, &who, request)? {
                Reply::Elicited(asked) => Ok(asked),
                other => Err(unexpected(&other)),
            }
        })
        .await?;
        Ok((
            Elicited::Accepted,
            asked
                .not_recorded
                .into_iter()
                .map(|n| NotRecorded {
                    question_id: n.question_id,
                    reason: n.reason,
                })
                .collect(),
        ))
    }
}

#[tool_router(router = ask_questions_router, vis = "pub(super)")]
impl Server {
    /// Logs questions for a person (the same stage, group and text again is the one on
    /// record), puts them to the person through the client's form when it can show one,
    /// and returns each question's outcome, at once or after at most `wait_seconds`.
    #[tool(
        output_schema = enveloped_schema::<Asked>(Procedure::AskQuestions),
        description = "Log questions that need a person's answer (the same stage, group and question text again returns the question on record), put the pending ones to the person through the client's form when the client supports elicitation, and return each question's outcome (answered, skipped, declined, expired or pending) at once or after waiting up to wait_seconds (at most 50). Questions left pending stay answerable by any means; wait_for_answers picks them up later.",
        annotations(open_world_hint = false)
    )]
    async fn ask_questions(
        &self,
        Parameters(input): Parameters<Input<AskInput>>,
        RequestState(state): RequestState,
        InputResponses(replies): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, CallToolResult> {
        let round = state.map(|s| (s, replies));
        let run = async { self.ask(input.read()?, round, &context).await };
        run.await.map_err(|e| failure(Procedure::AskQuestions, &e))
    }
}
