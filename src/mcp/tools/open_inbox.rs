//! `open_inbox`: shows the person the in-chat inbox (MCP Apps) with the pending questions.

use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use schemars::JsonSchema;
use serde::Serialize;

use super::super::blocking;
use super::{complete, enveloped_schema, failure, Server};
use questions_core::ops::{self, Procedure};

/// `open_inbox`'s result: the pending questions the in-chat inbox shows.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct InboxShown {
    pending_count: usize,
    question_ids: Vec<i64>,
    /// The MCP Apps resource a host renders for it.
    resource_uri: String,
}

#[tool_router(router = open_inbox_router, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Show the person the pending questions as an interactive inbox inside the chat (an MCP Apps view, on hosts that render them): they answer, skip or decline each there. Returns how many are pending.",
        output_schema = enveloped_schema::<InboxShown>(Procedure::OpenInbox),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn open_inbox(
        &self,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, CallToolResult> {
        let run = async {
            if !super::super::app::shown_by(&context) {
                return Err(super::super::app::not_shown("open_inbox"));
            }
            self.person_only(&context)?;
            let inbox = blocking(self.location.clone(), |l| ops::inbox(l, None)).await?;
            let shown = InboxShown {
                pending_count: inbox.questions.len(),
                question_ids: inbox.questions.iter().map(|(q, _)| q.id).collect(),
                resource_uri: super::super::app::URI.to_string(),
            };
            complete(Procedure::OpenInbox, &shown)
        };
        run.await.map_err(|e| failure(Procedure::OpenInbox, &e))
    }
}
