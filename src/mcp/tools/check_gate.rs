//! `check_gate`: the stage gate, as `questions check` reports it.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{command_schema, document, failure, ids_or_text, non_blank, unexpected, Input, Server};
use questions_core::ops::{CheckRequest, Procedure, Reply, Request, Wait};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckInput {
    /// The stage to gate.
    stage: String,
    /// Only these questions of the stage; an unknown id is not_found.
    #[serde(default, deserialize_with = "ids_or_text")]
    #[schemars(with = "Vec<i64>")]
    ids: Option<Vec<i64>>,
}

#[tool_router(router = check_gate_router, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "The stage gate, as `questions check` reports it: gate pass or fail, the required questions still pending, and the declined ones to ask another way.",
        output_schema = command_schema("check"),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn check_gate(
        &self,
        Parameters(input): Parameters<Input<CheckInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, CallToolResult> {
        let run = async {
            let input = input.read()?;
            let req = CheckRequest {
                stage: Some(non_blank(&input.stage, "stage")?),
                ids: input.ids,
                strict: false,
                wait: Wait::No,
                allow_unknown_stage: false,
                ledger: None,
            };
            let reply = self
                .call(self.principal(&context)?, Request::Check(req))
                .await?;
            let Reply::Gate(report) = reply else {
                return Err(unexpected(&reply));
            };
            document(report.gate.passes(), Procedure::Check, &report)
        };
        run.await.map_err(|e| failure(Procedure::Check, &e))
    }
}
