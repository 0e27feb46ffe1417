//! The one integration-test binary: every test drives the real `questions` binary
//! against a real ledger file and asserts on its JSON and exit code.

mod common;

mod answer;
mod answers;
mod approvals;
mod ask;
#[cfg(feature = "serve")]
mod browser;
#[cfg(feature = "relay")]
mod channel_suite;
mod channels;
mod check;
mod ci_gate;
mod claude_code;
mod clear;
mod concurrency;
mod crash;
mod docs;
mod errors;
mod events;
mod examples;
mod expiry;
mod follow;
#[cfg(feature = "mcp")]
mod harnesses;
mod history;
mod holes;
mod hook;
mod hostile;
mod import;
mod info;
mod ingest;
mod init;
#[cfg(feature = "serve")]
mod ledger_api;
mod list;
mod load;
mod location;
mod log;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_clients;
#[cfg(all(feature = "mcp", feature = "serve"))]
mod mcp_http;
mod migration;
mod people;
mod pi;
mod policy;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(all(feature = "serve", feature = "remote", feature = "mcp"))]
mod proxy;
#[cfg(feature = "watch")]
mod receiver;
#[cfg(feature = "relay")]
mod relay;
#[cfg(feature = "relay")]
mod relay_email;
#[cfg(feature = "relay")]
mod relay_harness;
#[cfg(feature = "relay")]
mod relay_matrix;
#[cfg(feature = "relay")]
mod relay_routing;
#[cfg(feature = "relay")]
mod relay_slack;
#[cfg(feature = "relay")]
mod relay_suite;
#[cfg(feature = "relay")]
mod relay_week;
#[cfg(all(feature = "serve", feature = "remote"))]
mod remote;
mod render;
mod reset;
mod schema;
mod scripted;
#[cfg(feature = "serve")]
mod serve;
#[cfg(all(feature = "serve", feature = "relay"))]
mod signin;
mod skip;
#[cfg(feature = "relay")]
mod slack_standin;
#[cfg(feature = "relay")]
mod synapse;
#[cfg(feature = "relay")]
mod telegram_standin;
mod text_flags;
mod token;
mod uwf_skill;
mod version;
mod waiters;
#[cfg(feature = "watch")]
mod watch;
