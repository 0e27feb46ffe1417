//! `questions`: a ledger of the questions AI agents need a person to answer.
//!
//! The front ends over the core (`questions-core`), whose modules are re-exported here
//! under the names the front ends have always used; `entry::run` is the binary's.

#[cfg(any(feature = "mcp", feature = "serve"))]
pub mod bridge;
pub mod cli;
pub mod cmd;
pub mod entry;
pub mod hook;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod output;
#[cfg(feature = "serve")]
pub mod serve;
pub mod strings;
pub mod terminal;
#[cfg(feature = "watch")]
pub mod watch;

// The core, under the names the front ends have always used.
pub use questions_core::{clock, error, fault, formats, model, ops, store};
