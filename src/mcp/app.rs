//! The inbox inside the chat (the MCP Apps extension): the pending questions as a `ui://`
//! resource, rendered from the inbox's own page (`page::app`), which a host shows in a
//! frame; what the person does there comes back through the `answer_in_app` tool, which
//! the model does not see, and is recorded with channel `mcp-app`. The `open_inbox` tool
//! names the resource, so a host shows the inbox when the model calls it.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{MetaObject, Resource, ResourceContents};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use questions_core::error::{Error, ErrorCode, Result};
use questions_core::model::AnswerInput;
use questions_core::ops::{self, Shown};

/// The extension's identifier, as servers and hosts declare it.
pub(super) const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The resource: every pending question of the ledger.
pub(super) const URI: &str = "ui://questions/inbox";
/// What marks HTML as an MCP App.
pub(super) const MIME: &str = "text/html;profile=mcp-app";

fn meta(value: Value) -> Option<MetaObject> {
    match value {
        Value::Object(o) => Some(MetaObject(o)),
        _ => None,
    }
}

/// `open_inbox` names the resource (in the current form and the older key hosts also
/// read); `answer_in_app` is the view's alone.
pub(super) fn mark_tools<S>(router: &mut ToolRouter<S>) {
    for route in router.map.values_mut() {
        match route.attr.name.as_ref() {
            "open_inbox" => {
                route.attr.meta = meta(json!({"ui": {"resourceUri": URI}, "ui/resourceUri": URI}));
            }
            "answer_in_app" => {
                route.attr.meta = meta(json!({"ui": {"visibility": ["app"]}}));
            }
            _ => {}
        }
    }
}

/// The in-chat inbox's tools: offered, and answered, only to a client that declares the
/// extension. Hosts that do not show apps ignore a tool's `visibility` too and hand it to
/// the model, which could then record "a person's click" itself.
pub(super) const TOOLS: [&str; 2] = ["open_inbox", "answer_in_app"];

/// Whether the client declares the MCP Apps extension (it shows `ui://` resources and
/// keeps app-only tools from the model).
pub(super) fn shown_by(context: &rmcp::service::RequestContext<rmcp::RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.extensions)
        .is_some_and(|e| e.contains_key(EXTENSION_ID))
}

/// The refusal of an in-chat inbox tool called by a client without the extension.
pub(super) fn not_shown(tool: &str) -> Error {
    Error::new(
        ErrorCode::Forbidden,
        format!(
            "{tool} belongs to the in-chat inbox, and this client does not declare the MCP \
             Apps extension ({EXTENSION_ID}): no person can have used it here; nothing was \
             recorded. Use ask_questions, wait_for_answers and record_answers"
        ),
    )
}

pub(super) fn resource() -> Resource {
    Resource::new(URI, "questions-inbox")
        .with_title("Questions inbox")
        .with_description("The pending questions, to answer inside the chat")
        .with_mime_type(MIME)
}

pub(super) fn contents(html: String) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: URI.to_string(),
        mime_type: Some(MIME.to_string()),
        text: html,
        meta: None,
    }
}

/// `answer_in_app`'s arguments: what a form of the in-chat inbox (MCP Apps) sends.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AppInput {
    /// The question's id.
    #[serde(deserialize_with = "one_id")]
    #[schemars(with = "i64")]
    pub id: i64,
    /// "answer", "accept" (take the proposal), "skip" or "decline".
    pub action: String,
    /// The ledger the page showed (its id): a change is refused when it was reset since.
    pub ledger: Option<String>,
    /// The question the page showed (its fingerprint): refused when it is no longer it.
    pub fingerprint: Option<String>,
    /// The answer in the person's words.
    pub answer: Option<String>,
    /// The option labels chosen.
    pub select: Option<Vec<String>>,
    /// Why it is skipped or declined (required to decline).
    pub reason: Option<String>,
}

/// An id, or an id written as text.
fn one_id<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<i64, D::Error> {
    match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| serde::de::Error::custom(format!("{n} is not an id"))),
        Value::String(t) => t
            .trim()
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("\"{t}\" is not an id"))),
        other => Err(serde::de::Error::custom(format!("{other} is not an id"))),
    }
}

fn blank_to_none(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
}

/// The change a form of the in-chat inbox sent, as the inbox's own forms are recorded:
/// refused when the ledger or the question is no longer what the page showed.
pub(super) fn change(input: AppInput) -> Result<ops::PersonsChange> {
    let (id, action) = (input.id, input.action.trim().to_string());
    let shown = Shown::one(
        blank_to_none(input.ledger.clone()),
        id,
        blank_to_none(input.fingerprint.clone()),
    );
    let act = match action.as_str() {
        "answer" => ops::Act::Answer(AnswerInput {
            text: blank_to_none(input.answer.clone()),
            select: input.select.clone().unwrap_or_default(),
        }),
        "accept" => ops::Act::AcceptProposed,
        "skip" => ops::Act::Skip(blank_to_none(input.reason.clone())),
        // A decline without a reason is the model's refusal, as on every front end.
        "decline" => ops::Act::Decline(input.reason.clone().unwrap_or_default()),
        "approve" | "reject" => {
            return Err(Error::new(
                ErrorCode::Forbidden,
                "votes are not cast inside the chat: approve or reject in the inbox of \
                 `questions serve`, or with `questions approve` / `questions reject`",
            ))
        }
        other => {
            return Err(Error::usage(format!(
                "action '{other}' is none of answer, accept, skip, decline"
            )))
        }
    };
    Ok(ops::PersonsChange {
        shown,
        ..ops::PersonsChange::of(id, act)
    })
}
