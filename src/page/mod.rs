//! The inbox's page: its HTML, the Markdown of a question's context, its style and its
//! scripts. The web inbox (`serve`) serves it, and the MCP server (`mcp`) renders it as the
//! inbox inside the chat (MCP Apps), so it needs neither front end's stack: no HTTP server,
//! no runtime.

#[cfg(feature = "mcp")]
pub(crate) mod app;
mod escape;
pub(crate) mod html;
mod markdown;

pub(crate) use escape::esc;

/// The inbox's style and its script (which talks to `serve`).
pub(crate) const CSS: &str = include_str!("assets/inbox.css");
#[cfg(feature = "serve")]
pub(crate) const SCRIPT: &str = include_str!("assets/inbox.js");
