//! Warden's HTTP server: the MCP endpoints (`POST /mcp`, `POST /mcp/agents/{agent}`, both
//! protocol eras), the admin API under `/api/v1`, `/healthz`, `/readyz` and `/metrics`.
//!
//! Every request passes the host check (XPORT-2) and, except health and metrics, bearer
//! authentication: a missing or bad token gets 401 with a one-line reason.

mod admin;
pub mod agents;

pub use admin::{
    AGENTS_RUN, APPROVALS_READ, EXPLAIN_ANY, RUNS_READ, TOOLS_INVENTORY, inventory_row,
};
mod auth;
mod hosts;
mod inline;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{any, get};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use warden_mcp::upstream::UpstreamStatus;
use warden_mcp::{Gateway, McpHandler, SessionAuth};

pub use hosts::HostPolicy;

/// Largest accepted request body (REL-1).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Shared state of the server.
#[derive(Debug)]
pub struct AppState {
    /// The gateway.
    pub gateway: Arc<Gateway>,
    /// Which `Host` and `Origin` headers are accepted.
    pub hosts: HostPolicy,
    /// Starts agent runs (scheduled and manual).
    pub runner: Arc<agents::Runner>,
    auth_failures: auth::FailureLimiter,
}

impl AppState {
    /// State for a server in front of `gateway`.
    pub fn new(gateway: Arc<Gateway>, hosts: HostPolicy) -> Self {
        let runner = Arc::new(agents::Runner::new(
            gateway.clone(),
            gateway.upstreams().secrets().clone(),
        ));
        Self {
            gateway,
            hosts,
            runner,
            auth_failures: auth::FailureLimiter::default(),
        }
    }
}

fn metrics_handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| match PrometheusBuilder::new().install_recorder() {
            Ok(h) => Some(h),
            Err(e) => {
                tracing::warn!(error = %e, "metrics recorder not installed");
                None
            }
        })
        .as_ref()
}

/// The router.
pub fn router(state: Arc<AppState>, shutdown: CancellationToken) -> Router {
    let _ = metrics_handle();
    let gateway = state.gateway.clone();
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        // Host and Origin are checked by our own middleware for every route.
        .disable_allowed_hosts()
        .with_cancellation_token(shutdown.child_token());
    let mcp = StreamableHttpService::new(
        move || {
            Ok(McpHandler::new(
                gateway.clone(),
                SessionAuth::PerRequest,
                None,
            ))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let endpoint = inline::McpEndpoint::new(state.gateway.clone(), mcp);
    let serve = move |request: axum::extract::Request| endpoint.clone().serve(request);
    let authenticated = Router::new()
        .route("/mcp", any(serve.clone()))
        .route("/mcp/agents/{agent}", any(serve))
        .nest("/api/v1", admin::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ));
    Router::new()
        .route("/", get(console))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/api/v1/openapi.json", get(admin::openapi))
        .merge(authenticated)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            hosts::check,
        ))
        .with_state(state)
}

async fn console() -> Html<&'static str> {
    Html(include_str!("console.html"))
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready when the store answers and the configuration is loaded; the body lists upstreams.
async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let store_ok = state.gateway.store().revision().await.is_ok();
    let snapshot = state.gateway.snapshot();
    let upstreams: serde_json::Map<String, serde_json::Value> = state
        .gateway
        .upstreams()
        .all()
        .iter()
        .map(|u| {
            (
                u.spec.name.to_string(),
                serde_json::to_value(u.status()).unwrap_or_default(),
            )
        })
        .collect();
    let ready = store_ok && snapshot.loaded;
    let body = serde_json::json!({
        "ready": ready,
        "store": if store_ok { "ok" } else { "unreachable" },
        "revision": snapshot.revision,
        "upstreams": upstreams,
    });
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    for u in state.gateway.upstreams().all() {
        let up = matches!(u.status(), UpstreamStatus::Up { .. });
        metrics::gauge!("warden_upstream_up", "upstream" => u.spec.name.to_string()).set(if up {
            1.0
        } else {
            0.0
        });
        metrics::gauge!("warden_upstream_tools", "upstream" => u.spec.name.to_string())
            .set(u.tools().len() as f64);
    }
    match metrics_handle() {
        Some(h) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            h.render(),
        )
            .into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "metrics are not available\n",
        )
            .into_response(),
    }
}

/// Expires approvals, runs staged actions whose veto window passed, resumes and recovers
/// approved actions (APR-6). On an embedded store this server is the only one, so executions
/// found in progress at start were interrupted by a stop.
async fn sweep_approvals(gateway: Arc<Gateway>, cancel: CancellationToken) {
    let embedded = gateway.store().backend_name() == "sqlite";
    gateway.sweep_approvals(embedded).await;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => gateway.sweep_approvals(false).await,
        }
    }
}

/// A bound server, not yet serving.
#[derive(Debug)]
pub struct Bound {
    listener: TcpListener,
    state: Arc<AppState>,
}

impl Bound {
    /// Binds the address (`127.0.0.1:0` picks a free port).
    pub async fn bind(addr: SocketAddr, state: Arc<AppState>) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        state
            .runner
            .set_base_url(format!("http://{}", listener.local_addr()?));
        Ok(Self { listener, state })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `shutdown` is cancelled.
    pub async fn serve(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        tokio::spawn(self.state.runner.clone().schedule(shutdown.child_token()));
        tokio::spawn(sweep_approvals(
            self.state.gateway.clone(),
            shutdown.child_token(),
        ));
        let app = router(self.state, shutdown.clone());
        // Small answers and SSE events go out at once, not after the peer's delayed ACK.
        let listener = axum::serve::ListenerExt::tap_io(self.listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await?;
        Ok(())
    }
}
