//! `questions`: a ledger of the questions AI agents need a person to answer.
//!
//! The front ends over the core (`questions-core`): each file names what it uses of the
//! core as `questions_core::…`, so the crate boundary shows where it is crossed, and the
//! store is the core's own (a front end holds a `Ledger` and calls `ops`). `entry::run`
//! is the binary's.
//!
//! A `§N` in a comment cites section N of the reference, docs/reference.md.

#[cfg(any(feature = "mcp", feature = "serve"))]
pub(crate) mod bridge;
pub mod cli;
pub(crate) mod cmd;
pub mod entry;
pub(crate) mod hook;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
pub(crate) mod output;
// schema/*.json, generated from the types that print them (a test).
#[cfg(all(test, feature = "watch"))]
mod schema;
// The inbox's page, which `serve` serves and `mcp` shows inside the chat.
#[cfg(feature = "page")]
pub(crate) mod page;
// `questions relay`: Telegram, Slack and email, a folder each, and their kit (§14).
#[cfg(feature = "relay")]
pub(crate) mod relay;
// `--db https://…`: the ledger `questions serve` serves (§15).
#[cfg(any(feature = "remote", feature = "serve"))]
pub(crate) mod client;
#[cfg(feature = "remote")]
pub(crate) mod remote;
#[cfg(feature = "serve")]
pub(crate) mod serve;
// The page's words are all read only by a build with the web inbox (`serve`); they stay
// beside the terminal's in one file, so that a translation is one copy of it.
#[cfg_attr(not(feature = "serve"), allow(dead_code))]
pub(crate) mod strings;
pub(crate) mod terminal;
#[cfg(feature = "watch")]
pub mod watch;
