//! `list_questions`: questions, as `questions list` lists them.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{command_schema, document, failure, non_blank, unexpected, Input, Named, Server};
use questions_core::model::{Question, Status};
use questions_core::ops::{self, Filter, Procedure, Reply, Request};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListInput {
    /// Only questions of this stage.
    stage: Option<String>,
    /// Only questions with this status.
    status: Option<Named<Status>>,
}

#[tool_router(router = list_questions_router, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "List questions, oldest first, as `questions list` does: every question, or a stage's, or those with a status.",
        output_schema = command_schema("list"),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_questions(
        &self,
        Parameters(input): Parameters<Input<ListInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        #[derive(Serialize)]
        struct Listed {
            count: usize,
            questions: Vec<Question>,
        }
        let run = async {
            let input = input.read()?;
            let filter = Filter {
                stage: input
                    .stage
                    .as_deref()
                    .map(|s| non_blank(s, "stage"))
                    .transpose()?,
                status: input.status.map(|Named(s)| s),
                ..Filter::default()
            };
            let reply = self
                .call(self.principal(&context)?, Request::List(filter))
                .await?;
            let Reply::Listed(ops::Listed { questions, .. }) = reply else {
                return Err(unexpected(&reply));
            };
            document(
                true,
                Procedure::List,
                &Listed {
                    count: questions.len(),
                    questions,
                },
            )
        };
        run.await.map_err(|e| failure(Procedure::List, &e))
    }
}
