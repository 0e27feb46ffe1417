//! `wait_for_answers`: waits until the named questions have left pending (or a timeout),
//! telling the client how far it has got, and returns each question's outcome; a task,
//! for a client that takes them.

use std::time::{Duration, Instant};

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult, ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, Peer, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{blocking, tasks, MOST_WAIT};
use super::{
    complete, enveloped, enveloped_schema, failure, ids_or_text, non_blank, number_or_text,
    outcomes, seconds, takes_tasks, task_deadline, Input, Outcomes, Server,
};
use questions_core::error::{Error, Result};
use questions_core::model::{Question, Status};
use questions_core::ops::{self, Principal, Procedure};

/// How often a wait tells the client it is still waiting, when nothing changes.
const HEARTBEAT: Duration = Duration::from_secs(5);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WaitInput {
    /// Wait for this stage's questions (narrowed to `ids` when both are given).
    stage: Option<String>,
    /// Wait for these questions.
    #[serde(default, deserialize_with = "ids_or_text")]
    #[schemars(with = "Vec<i64>")]
    ids: Option<Vec<i64>>,
    /// Return after this many seconds at most (capped at 50; default 50).
    #[serde(default, deserialize_with = "number_or_text")]
    #[schemars(with = "f64")]
    timeout_seconds: Option<f64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Waited {
    question_ids: Vec<i64>,
    /// Every named question has left `pending`.
    settled: bool,
    timed_out: bool,
    outcomes: Outcomes,
}

/// Tells the client how far a wait has got, when it asked to be told.
struct Progress {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    told: Option<(usize, Instant)>,
}

impl Progress {
    fn new(context: &RequestContext<RoleServer>) -> Progress {
        Progress {
            peer: context.peer.clone(),
            token: context.meta.get_progress_token(),
            told: None,
        }
    }

    /// Sends when the count changed, or as a heartbeat.
    async fn tell(&mut self, settled: usize, total: usize) {
        let Some(token) = self.token.clone() else {
            return;
        };
        let due = match self.told {
            None => true,
            Some((n, at)) => n != settled || at.elapsed() >= HEARTBEAT,
        };
        if !due {
            return;
        }
        self.told = Some((settled, Instant::now()));
        let note = ProgressNotificationParam::new(token, settled as f64)
            .with_total(total as f64)
            .with_message(format!("{settled} of {total} question(s) settled"));
        let _ = self.peer.notify_progress(note).await;
    }
}

/// How long a wait goes without reading when nothing changes: a cancelled call is seen
/// then. Each read on PostgreSQL makes a connection, so not every second.
const CANCEL_SEEN_WITHIN: Duration = Duration::from_secs(10);

impl Server {
    /// Reads the named questions until none is pending, `limit` runs out, or the client
    /// cancels; the last reading, and whether it timed out. The reading and waiting run on
    /// a blocking thread (see `blocking`, `ops::follow`), which reports each count as it
    /// goes.
    pub(super) async fn wait(
        &self,
        stage: Option<String>,
        ids: Option<Vec<i64>>,
        limit: Duration,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Vec<Question>, bool)> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let cancelled = context.ct.clone();
        let deadline = Instant::now() + limit;
        let work = blocking(self.location.clone(), move |ledger| {
            // The id of the ledger the last read saw.
            let mut last: Option<Option<String>> = None;
            ops::follow(
                ledger,
                Some(deadline),
                // A change wakes it at once; a call the client cancelled ends at the next
                // read, this long after the last at most.
                CANCEL_SEEN_WITHIN,
                |ledger, seen| {
                    let read = ops::named_in_ledger(ledger, stage.as_deref(), ids.as_deref());
                    // Replaced: the location's watch says so, or the ledger's id changed
                    // since the last read (a reset it was not woken for).
                    let mut replaced = seen.replaced(ledger);
                    if let Ok((_, id)) = &read {
                        replaced |= last.as_ref().is_some_and(|last| last != id);
                        last = Some(id.clone());
                    }
                    if replaced {
                        // A ledger reset meanwhile holds none of these questions any more.
                        return Err(Error::conflict(
                            "the ledger was reset or replaced while waiting: the questions \
                         waited for are gone; log them again",
                        ));
                    }
                    let (questions, _) = read?;
                    if questions.is_empty() {
                        // A stage with no question: nothing will ever be answered there.
                        return Err(Error::not_found(format!(
                            "stage '{}' holds no question to wait for; ask_questions logs them",
                            stage.as_deref().unwrap_or("")
                        )));
                    }
                    let pending = questions
                        .iter()
                        .filter(|q| q.state.status == Status::Pending)
                        .count();
                    let total = questions.len();
                    // Nobody listening any more (the call was dropped) ends the wait.
                    let gone = tx.send((total - pending, total)).is_err();
                    Ok(match pending {
                        0 => ops::Step::Done((questions, false)),
                        _ if gone || cancelled.is_cancelled() => ops::Step::Done((questions, true)),
                        _ => ops::Step::Wait((questions, true)),
                    })
                },
            )
        });
        tokio::pin!(work);
        let mut progress = Progress::new(context);
        loop {
            tokio::select! {
                // Each count is told before the outcome that follows it.
                biased;
                Some((settled, total)) = rx.recv() => progress.tell(settled, total).await,
                outcome = &mut work => return outcome,
            }
        }
    }
}

#[tool_router(router = wait_for_answers_router, vis = "pub(super)")]
impl Server {
    #[tool(
        output_schema = enveloped_schema::<Waited>(Procedure::WaitForAnswers),
        description = "Wait until every named question (a stage's, or the given ids) has left pending, or until timeout_seconds (at most 50, the default) pass, and return each question's outcome: answered, skipped, declined, expired or pending. Sends progress notifications while it waits. Call it again to keep waiting: nothing is lost between calls. A client that declares the Tasks extension gets a task instead when a question is still pending: it is kept in the ledger (it survives a restart of the server), has no 50 s cap (timeout_seconds, when given, ends it), and tasks/get returns this tool's result once every question has left pending.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn wait_for_answers(
        &self,
        Parameters(input): Parameters<Input<WaitInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let stage = input
                .stage
                .as_deref()
                .map(|s| non_blank(s, "stage"))
                .transpose()?;
            if stage.is_none() && input.ids.is_none() {
                return Err(Error::usage(
                    "name the questions to wait for: give stage, ids, or both",
                ));
            }
            if input.ids.as_ref().is_some_and(Vec::is_empty) {
                return Err(Error::usage(
                    "ids is empty: name the questions to wait for (nothing to wait for is \
                     not an answer)",
                ));
            }
            let limit = seconds(input.timeout_seconds, MOST_WAIT, "timeout_seconds")?;
            let who = self.principal(&context)?;
            if !matches!(who, Principal::Direct(_)) {
                // A token reads only what its role lets it: the door checks the questions
                // named before the wait reads them again and again.
                self.named(who.clone(), stage.clone(), input.ids.clone())
                    .await?;
            }
            if takes_tasks(&context) {
                // A wait that outlives the call: a task in the ledger, unless nothing is
                // left to wait for.
                let deadline = task_deadline(input.timeout_seconds)?;
                let questions = self.named(who, stage.clone(), input.ids.clone()).await?;
                if questions.iter().any(|q| q.state.status == Status::Pending) {
                    // The result this call would return, which the task completes from.
                    let template = enveloped(
                        true,
                        Procedure::WaitForAnswers,
                        &Waited {
                            question_ids: questions.iter().map(|q| q.id).collect(),
                            settled: false,
                            timed_out: false,
                            outcomes: outcomes(&questions),
                        },
                    )?;
                    return self
                        .start_task(ops::NewTask {
                            id: tasks::random_id()?,
                            procedure: Procedure::WaitForAnswers,
                            stage,
                            question_ids: questions.iter().map(|q| q.id).collect(),
                            template,
                            deadline,
                        })
                        .await;
                }
            }
            let (questions, timed_out) = self.wait(stage, input.ids, limit, &context).await?;
            let waited = Waited {
                question_ids: questions.iter().map(|q| q.id).collect(),
                settled: !timed_out,
                timed_out,
                outcomes: outcomes(&questions),
            };
            complete(Procedure::WaitForAnswers, &waited)
        };
        run.await
            .map_err(|e| failure(Procedure::WaitForAnswers, &e))
    }
}
