//! The inbox inside an MCP client's chat (MCP Apps): the same page as `serve` serves,
//! made whole for a host that shows it in a sandboxed frame with no server behind it. Its
//! style is inlined, and in place of the inbox's script (which talks to `serve`) a script
//! that speaks the MCP Apps protocol to the host: every answer, skip or decline is a call
//! of the MCP server's `answer_in_app` tool, which records it (channel `mcp-app`).

use super::{html, CSS};
use questions_core::clock;
use questions_core::error::Result;
use questions_core::ops;
use questions_core::ops::Ledger;

const SCRIPT: &str = include_str!("assets/mcp-app.js");

/// The pending questions of the ledger as the app's HTML document.
pub(crate) fn page(ledger: &mut Ledger) -> Result<String> {
    let inbox = ops::inbox(ledger, None)?;
    let now = clock::now();
    let body = html::inbox(&html::Page {
        signed_in: false,
        csrf: None,
        seq: inbox.seq,
        now: &now,
        ledger: inbox.ledger.as_deref(),
        stage: None,
        questions: &inbox.questions,
        // No person's token: votes are not cast inside the chat.
        person: None,
        voters: &inbox.voters,
        flash: None,
    });
    Ok(body
        .replacen(
            "<link rel=\"stylesheet\" href=\"/assets/inbox.css\">",
            &format!("<style>{CSS}</style>"),
            1,
        )
        .replacen(
            "<script src=\"/assets/inbox.js\" defer></script>",
            &format!("<script>{SCRIPT}</script>"),
            1,
        ))
}
