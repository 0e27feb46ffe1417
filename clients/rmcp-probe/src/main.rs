//! rmcp's own MCP client over Streamable HTTP, as a host built on the Rust SDK reaches
//! `questions serve`'s `/mcp`. It connects, then prints one JSON line: `{"protocol_version"}`
//! naming the revision negotiated, or `{"connect_error": "…"}` (and exits 1) when the
//! server refused the connection. Then one session answers the calls on stdin, one JSON
//! line each (`{"tool", "arguments"}`, or `{"list_tools": true}`), with one JSON line each
//! on stdout, as soon as it comes back (`{"is_error", "structured", "text"}`, or `{"tools":
//! [names]}`), so that a caller can change the ledger between two calls of one session. A
//! call the client itself fails is `{"is_error": true, "structured": null, "text": "client
//! error: …"}`. It ends at the end of stdin.
//!
//! argv: the connection mode (`legacy`: the initialize handshake, a session; or a revision
//! such as `2026-07-28`: `server/discover`, stateless), then the URL. The environment:
//! `QUESTIONS_TOKEN`, sent as `Authorization: Bearer` (none when unset), and
//! `QUESTIONS_CA`, a PEM file of the one CA an `https` server is trusted by. The client
//! shows no forms (it declares no elicitation). A usage error exits 2.

use std::process::ExitCode;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{json, Value};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, url] = args.as_slice() else {
        eprintln!("usage: rmcp-probe legacy|REVISION URL < calls (JSON lines)");
        return ExitCode::from(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(mode, url))
}

/// The HTTP client: reqwest over rustls (ring), trusting only `QUESTIONS_CA` when it is
/// set (the suite's throw-away CA), else the platform's roots.
fn http_client() -> Result<reqwest::Client, String> {
    // reqwest is built without a provider of its own (no aws-lc): ring is the process's.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder();
    if let Ok(path) = std::env::var("QUESTIONS_CA") {
        let pem = std::fs::read(&path).map_err(|e| format!("QUESTIONS_CA {path}: {e}"))?;
        let ca = reqwest::Certificate::from_pem(&pem)
            .map_err(|e| format!("QUESTIONS_CA {path}: {e}"))?;
        builder = builder.tls_certs_only([ca]);
    }
    builder.build().map_err(|e| e.to_string())
}

async fn run(mode: &str, url: &str) -> ExitCode {
    let client = match http_client() {
        Ok(client) => client,
        Err(e) => {
            eprintln!("rmcp-probe: {e}");
            return ExitCode::from(2);
        }
    };
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Ok(token) = std::env::var("QUESTIONS_TOKEN") {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let lifecycle = if mode == "legacy" {
        ClientLifecycleMode::Initialize
    } else if let Some(version) = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|v| v.as_str() == mode)
    {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![version.clone()],
        }
    } else {
        eprintln!("rmcp-probe: {mode} is neither legacy nor a revision rmcp knows");
        return ExitCode::from(2);
    };
    let handler = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("rmcp-probe", env!("CARGO_PKG_VERSION")),
    );
    let service = match handler.serve_with_lifecycle(transport, lifecycle).await {
        Ok(service) => service,
        Err(e) => {
            println!("{}", json!({"connect_error": e.to_string()}));
            return ExitCode::FAILURE;
        }
    };
    let negotiated = service
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.to_string());
    println!("{}", json!({"protocol_version": negotiated}));
    // Read between calls, on this thread: the transport runs on the runtime's workers.
    for line in std::io::stdin().lines() {
        let Ok(call) = line
            .map_err(|e| e.to_string())
            .and_then(|l| serde_json::from_str::<Value>(&l).map_err(|e| format!("{e}: {l}")))
        else {
            eprintln!("rmcp-probe: a line of stdin is not a JSON call");
            return ExitCode::from(2);
        };
        let line = if call["list_tools"] == true {
            match service.list_all_tools().await {
                Ok(tools) => {
                    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
                    names.sort();
                    json!({"tools": names})
                }
                Err(e) => client_error(&e),
            }
        } else {
            let tool = call["tool"].as_str().unwrap_or_default().to_string();
            let arguments = call["arguments"].as_object().cloned().unwrap_or_default();
            let params = CallToolRequestParams::new(tool).with_arguments(arguments);
            match service.call_tool(params).await {
                Ok(result) => {
                    let text: String = result
                        .content
                        .iter()
                        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                        .collect();
                    json!({
                        "is_error": result.is_error == Some(true),
                        "structured": result.structured_content,
                        "text": text,
                    })
                }
                Err(e) => client_error(&e),
            }
        };
        println!("{line}");
    }
    let _ = service.cancel().await;
    ExitCode::SUCCESS
}

/// What the client itself says of a call it could not make: what an agent would see.
fn client_error(e: &dyn std::fmt::Display) -> Value {
    json!({"is_error": true, "structured": null, "text": format!("client error: {e}")})
}
