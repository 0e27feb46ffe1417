//! `get_answers`: a stage's answers, as `questions answers` reports them.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{command_schema, document, failure, non_blank, unexpected, Input, Server};
use questions_core::ops::{Procedure, Reply, Request};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StageInput {
    /// The stage whose answers are returned.
    stage: String,
}

#[tool_router(router = get_answers_router, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "What a re-invoked agent needs, as `questions answers` reports it: the stage's answers keyed by group, header or question text, with a detail per question.",
        output_schema = command_schema("answers"),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_answers(
        &self,
        Parameters(input): Parameters<Input<StageInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        let run = async {
            let stage = non_blank(&input.read()?.stage, "stage")?;
            let reply = self
                .call(self.principal(&context)?, Request::Answers { stage })
                .await?;
            let Reply::Answers(report) = reply else {
                return Err(unexpected(&reply));
            };
            document(true, Procedure::Answers, &report)
        };
        run.await.map_err(|e| failure(Procedure::Answers, &e))
    }
}
