//! `answer_in_app`: the in-chat inbox's own tool (MCP Apps), hidden from the model:
//! records what the person did on a question there.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::Serialize;

use super::{
    client_name, complete, enveloped_schema, failure, unexpected, Input, Outcome, Server, State,
};
use questions_core::clock;
use questions_core::model::Channel;
use questions_core::ops::{Caller, Principal, Procedure, Reply, Request};

/// What `answer_in_app` recorded.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct AppRecorded {
    question_id: i64,
    status: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    selected: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Always `mcp-app`.
    channel: String,
}

#[tool_router(router = answer_in_app_router, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "The in-chat inbox's own tool (MCP Apps; hidden from the model): records what the person did on a question there, as the inbox's forms send it. Channel mcp-app.",
        output_schema = enveloped_schema::<AppRecorded>(Procedure::AnswerInApp),
        annotations(destructive_hint = false, open_world_hint = false)
    )]
    async fn answer_in_app(
        &self,
        Parameters(input): Parameters<Input<super::super::app::AppInput>>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, CallToolResult> {
        let run = async {
            let who = self.principal(&context)?;
            // An agent token's call goes on to the door, which refuses it and records it.
            if who.answers() && !super::super::app::shown_by(&context) {
                return Err(super::super::app::not_shown("answer_in_app"));
            }
            let input = input.read()?;
            let who = match who {
                Principal::Direct(_) => Principal::Direct(Caller {
                    by: Some(format!("mcp:{}", client_name(&context))),
                    channel: Channel::McpApp,
                }),
                token => token,
            };
            let change = super::super::app::change(input)?;
            let reply = self.call(who, Request::Change(change)).await?;
            let Reply::Recorded(recorded) = reply else {
                return Err(unexpected(&reply));
            };
            let q = &recorded.question;
            let outcome = Outcome::of(q, &clock::now());
            complete(
                Procedure::AnswerInApp,
                &AppRecorded {
                    question_id: recorded.question_id,
                    status: outcome.status,
                    answer: outcome.answer,
                    selected: outcome.selected,
                    reason: outcome.reason,
                    channel: Channel::McpApp.as_str().to_string(),
                },
            )
        };
        run.await.map_err(|e| failure(Procedure::AnswerInApp, &e))
    }
}
