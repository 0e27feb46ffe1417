//! The core of `questions`: the model, the input and output formats, the ledger and the
//! operations on it. Every front end (the command line, `mcp`, `serve`, `watch`, the
//! hooks) calls `ops`; none of them is a dependency of this crate, so none can be reached
//! from here.
//!
//! A `§N` in a comment cites section N of the reference, docs/reference.md.

pub mod clock;
pub mod error;
pub mod fault;
pub mod formats;
pub mod model;
pub mod ops;
mod store;
