//! `vote`: a vote on an approval, cast as the user this server was configured with.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{command_schema, document, failure, unexpected, Input, Named, Server};
use questions_core::error::Error;
use questions_core::model::Channel;
use questions_core::ops::{self, Principal, Procedure, Reply, Request};

/// `vote`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct VoteInput {
    /// The approval's id.
    id: i64,
    /// "approve" or "reject".
    vote: Named<questions_core::model::Verdict>,
    /// A comment with an approval; the reason of a rejection (required then).
    comment: Option<String>,
}

#[tool_router(router = vote_router, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Vote on an approval (a question that only certain people may answer): approve, or reject with a reason. The vote counts as the user this server was configured with, never as the agent, and is refused (forbidden) when that user asked for the approval or is not among its approvers, or when the server runs with --no-votes.",
        output_schema = command_schema("vote"),
        annotations(destructive_hint = false, open_world_hint = false)
    )]
    async fn vote(
        &self,
        Parameters(input): Parameters<Input<VoteInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let Named(verdict) = input.vote;
            let ballot = questions_core::model::Ballot {
                verdict,
                comment: input.comment,
            };
            let who = self.principal(&context)?;
            if !matches!(who, Principal::Direct(_)) {
                // A token's vote is its person's, or refused (and recorded) for an agent:
                // the door decides, and names the voter.
                let change = ops::PersonsChange::of(
                    input.id,
                    ops::Act::Vote(ops::Identity::Person(String::new()), ballot),
                );
                let reply = self.call(who, Request::Change(change)).await?;
                let Reply::Recorded(recorded) = reply else {
                    return Err(unexpected(&reply));
                };
                return document(true, Procedure::Vote, &recorded);
            }
            let Some(voter) = self.user.clone().filter(|_| self.votes) else {
                return Err(Error::new(
                    questions_core::error::ErrorCode::Forbidden,
                    "this MCP server refuses votes (it runs with --no-votes): an agent never \
                     approves a request; a person votes with 'questions approve' or the inbox",
                ));
            };
            let id = input.id;
            let change =
                ops::PersonsChange::of(id, ops::Act::Vote(ops::Identity::Person(voter), ballot));
            let caller = ops::Caller {
                by: None,
                channel: Channel::Mcp,
            };
            let reply = self
                .call(Principal::Direct(caller), Request::Change(change))
                .await?;
            let Reply::Recorded(recorded) = reply else {
                return Err(unexpected(&reply));
            };
            document(true, Procedure::Vote, &recorded)
        };
        run.await.map_err(|e| failure(Procedure::Vote, &e))
    }
}
