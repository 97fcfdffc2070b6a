//! The conformance fixture: an MCP server with exactly the tools, resources and prompts the
//! official MCP conformance suite (`@modelcontextprotocol/conformance`, server scenarios)
//! expects, written by hand on rmcp's [`ServerHandler`].
//!
//! It passes the suite on its own (`tests/conformance/run.sh fixture`); Warden put in front of
//! it must pass the suite exactly as it does (`run.sh both`, run by `cargo test`).
//!
//! - Tools: `test_simple_text`, `test_image_content`, `test_audio_content`,
//!   `test_embedded_resource`, `test_multiple_content_types`, `test_tool_with_logging`,
//!   `test_tool_with_progress`, `test_error_handling`, `test_reconnection` (closes its own SSE
//!   stream mid-call, SEP-1699), `test_sampling` and `test_elicitation` and
//!   `test_elicitation_sep1034_defaults` and `test_elicitation_sep1330_enums` (server-to-client
//!   requests), `json_schema_2020_12_tool` (SEP-1613 schema keywords).
//! - Resources: `test://static-text`, `test://static-binary`, `test://watched-resource`
//!   (subscribable), template `test://template/{id}/data`.
//! - Prompts: `test_simple_prompt`, `test_prompt_with_arguments`,
//!   `test_prompt_with_embedded_resource`, `test_prompt_with_image`.
//! - Logging (`logging/setLevel`, filtered by level; in 2026-07-28 by the request's
//!   `_meta` log level) and completions.
//! - 2026-07-28 ([`input_required`]): the `test_input_required_result_*` tools and prompt,
//!   the `server-stateless` diagnostics, `subscriptions/listen`; the server-to-client requests
//!   of `test_sampling` and the elicitation tools become `input_required` answers. The tasks
//!   extension ([`tasks`]).
//!
//! Over HTTP it serves Streamable HTTP at `/mcp`: 2025-era clients get sessions (SSE responses,
//! priming events, resumption with `Last-Event-ID`), 2026-07-28 requests are served statelessly
//! on the same endpoint. Host and Origin must be loopback (DNS-rebinding protection).
//!
//! [`Asking::OnSession`] makes it a server written before 2026-07-28, as many still are: its
//! tools ask the client only through the session's peer, so a 2026-07-28 request (which has
//! none) gets "client does not support sampling/elicitation", and `subscriptions/listen` is
//! not found; in a 2025-11-25 session it behaves as by default.

mod catalog;
mod input_required;
mod server;
mod sessions;
mod tasks;

use std::sync::Arc;

use rmcp::ServiceExt as _;
use tokio_util::sync::CancellationToken;

pub use server::{Asking, ConformanceServer};
use sessions::Sessions;

/// Serves the fixture over stdin/stdout until stdin closes.
pub async fn serve_stdio(asking: Asking) -> anyhow::Result<()> {
    let running = ConformanceServer::new(Arc::new(input_required::Shared::default()), asking)
        .serve(rmcp::transport::stdio())
        .await?;
    running.waiting().await?;
    Ok(())
}

/// Serves the fixture over Streamable HTTP at `/mcp` on `listener` until `shutdown`.
///
/// Sessions answer with SSE streams (priming events, `retry`, resumption); only loopback `Host`
/// and `Origin` values are accepted.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
    asking: Asking,
) -> anyhow::Result<()> {
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
        .with_cancellation_token(shutdown.child_token());
    let shared = Arc::new(input_required::Shared::default());
    let service = StreamableHttpService::new(
        move || Ok(ConformanceServer::new(shared.clone(), asking)),
        Arc::new(Sessions::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let ct = shutdown.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { ct.cancelled().await })
        .await?;
    Ok(())
}
