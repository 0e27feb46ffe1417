//! `record_answers`: answers the agent obtained through its own asking tool, imported as
//! `questions import` imports a map.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{command_schema, document, failure, non_blank, unexpected, Input, Server};
use questions_core::formats::answers::ImportFormat;
use questions_core::ops::{Procedure, Reply, Request};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordInput {
    /// The stage the questions belong to.
    stage: String,
    /// By question id: the answer text, the chosen option labels, or
    /// {"skip": true, "reason": "…"}.
    answers: serde_json::Map<String, Value>,
}

#[tool_router(router = record_answers_router, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Record answers the agent obtained through its own asking tool, all or nothing, each checked as `questions answer` checks it: by question id, the answer text, the chosen option labels, or {\"skip\": true, \"reason\": \"…\"}.",
        output_schema = command_schema("import"),
        annotations(destructive_hint = false, open_world_hint = false)
    )]
    async fn record_answers(
        &self,
        Parameters(input): Parameters<Input<RecordInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let stage = non_blank(&input.stage, "stage")?;
            let text = Value::Object(input.answers).to_string();
            let request = Request::Import {
                stage,
                text,
                format: Some(ImportFormat::Map),
                force: false,
            };
            let reply = self.call(self.principal(&context)?, request).await?;
            let Reply::Imported(imported) = reply else {
                return Err(unexpected(&reply));
            };
            document(true, Procedure::Import, &imported)
        };
        run.await.map_err(|e| failure(Procedure::Import, &e))
    }
}
