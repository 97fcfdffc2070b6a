//! `warden bench upstream`: the fastest honest MCP server we can write with rmcp, over
//! Streamable HTTP in both eras, with a trivial read (`read`), a trivial mutation (`write`,
//! which counts) and, for catalog scenarios, any number of extra read tools (`tool_0000`…).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

/// The fixture server.
#[derive(Clone, Debug)]
pub struct BenchUpstream {
    tools: Arc<Vec<Tool>>,
    writes: Arc<AtomicU64>,
}

fn object(v: serde_json::Value) -> Arc<JsonObject> {
    match v {
        serde_json::Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

impl BenchUpstream {
    /// `read`, `write` and `extra` more read tools.
    pub fn new(extra: usize) -> Self {
        let input = object(json!({
            "type": "object",
            "properties": {"key": {"type": "string", "maxLength": 64}},
        }));
        let read = ToolAnnotations::new().read_only(true).open_world(false);
        let write = ToolAnnotations::new()
            .read_only(false)
            .destructive(false)
            .open_world(false);
        let mut tools = vec![
            Tool::new("read", "Return `ok` (a trivial read)", input.clone())
                .with_annotations(read.clone()),
            Tool::new(
                "write",
                "Count one write (a trivial, ordinary mutation)",
                input.clone(),
            )
            .with_annotations(write),
        ];
        tools.extend((0..extra).map(|i| {
            Tool::new(
                format!("tool_{i:04}"),
                format!("Extra read tool number {i}, for catalog benchmarks"),
                input.clone(),
            )
            .with_annotations(read.clone())
        }));
        Self {
            tools: Arc::new(tools),
            writes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Writes counted so far.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

impl ServerHandler for BenchUpstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("warden-bench-upstream", env!("CARGO_PKG_VERSION")),
        )
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let text = match request.name.as_ref() {
            "write" => {
                let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
                n.to_string()
            }
            name if self.tools.iter().any(|t| t.name == name) => "ok".to_owned(),
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool `{other}`"),
                    None,
                ));
            }
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// Serves the fixture at `/mcp` on `listener` until `shutdown`.
pub async fn serve(
    server: BenchUpstream,
    listener: tokio::net::TcpListener,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let ct = shutdown.clone();
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { ct.cancelled().await })
        .await?;
    Ok(())
}

/// Binds `addr` and serves the fixture in the background; returns the bound address.
pub async fn spawn(
    server: BenchUpstream,
    addr: SocketAddr,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = serve(server, listener, shutdown).await {
            tracing::error!(error = %e, "bench upstream stopped");
        }
    });
    Ok(local)
}
