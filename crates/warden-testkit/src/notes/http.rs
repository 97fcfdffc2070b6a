//! The fixture served over Streamable HTTP: answering with JSON or SSE, and remembering the
//! headers of every request it gets when asked to (what an upstream received: the bearer of a
//! call acting as its caller, AUTH-6; the trace context, OPS-3).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A server the fixture's HTTP service serves (the notes server).
pub trait Served: rmcp::ServerHandler + Clone + Send + Sync + 'static {}

impl<S: rmcp::ServerHandler + Clone + Send + Sync + 'static> Served for S {}

/// The headers of every request an upstream got, in order.
#[derive(Clone, Debug, Default)]
pub struct Seen(Arc<Mutex<Vec<axum::http::HeaderMap>>>);

impl Seen {
    /// The values of header `name` on the requests whose `Mcp-Method` is `method`, in order
    /// (`None` for a request without it).
    pub fn values(&self, method: &str, name: &str) -> Vec<Option<String>> {
        let seen = self.0.lock().expect("seen headers");
        seen.iter()
            .filter(|h| h.get("mcp-method").and_then(|v| v.to_str().ok()) == Some(method))
            .map(|h| h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned))
            .collect()
    }
}

/// The fixture's Streamable HTTP service at `/mcp`; a session left `idle` that long ends (by
/// default after rmcp's five minutes).
fn app(
    server: impl Served,
    shutdown: &tokio_util::sync::CancellationToken,
    json: bool,
    idle: Option<Duration>,
) -> axum::Router {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default()
        .with_json_response(json)
        .with_cancellation_token(shutdown.child_token());
    let mut sessions = LocalSessionManager::default();
    if idle.is_some() {
        sessions.session_config.keep_alive = idle;
    }
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(sessions), config);
    axum::Router::new().route_service("/mcp", service)
}

/// Serves `app` on `listener` until `shutdown`, on a task of its own.
fn spawn_app(
    app: axum::Router,
    listener: tokio::net::TcpListener,
    shutdown: tokio_util::sync::CancellationToken,
) {
    tokio::spawn(async move {
        let stopped = async move { shutdown.cancelled().await };
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(stopped)
            .await
        {
            tracing::error!(error = %e, "fixture upstream stopped");
        }
    });
}

/// Binds `addr` and serves the fixture over HTTP (plain JSON answers), ending each session
/// left idle for `idle`; returns the bound address.
pub async fn spawn_http_idle(
    server: impl Served,
    addr: SocketAddr,
    shutdown: tokio_util::sync::CancellationToken,
    idle: Duration,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    spawn_app(app(server, &shutdown, true, Some(idle)), listener, shutdown);
    Ok(local)
}

/// Binds `addr` and serves the fixture over HTTP (plain JSON answers), remembering the headers
/// of every request; returns the bound address and what it saw.
pub async fn spawn_http_seen(
    server: impl Served,
    addr: SocketAddr,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<(SocketAddr, Seen)> {
    let seen = Seen::default();
    let kept = seen.clone();
    let app = app(server, &shutdown, true, None).layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            if let Ok(mut seen) = kept.0.lock() {
                seen.push(request.headers().clone());
            }
            next.run(request)
        },
    ));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    spawn_app(app, listener, shutdown);
    Ok((local, seen))
}

/// Serves the fixture over Streamable HTTP at `/mcp` on `listener` until `shutdown`, answering
/// requests with plain JSON.
pub async fn serve_http(
    server: impl Served,
    listener: tokio::net::TcpListener,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<()> {
    serve_http_with(server, listener, shutdown, true).await
}

/// Serves the fixture over Streamable HTTP at `/mcp`, answering requests with plain JSON
/// (`json`) or with an SSE stream that carries the call's notifications before its result.
pub async fn serve_http_with(
    server: impl Served,
    listener: tokio::net::TcpListener,
    shutdown: tokio_util::sync::CancellationToken,
    json: bool,
) -> anyhow::Result<()> {
    let app = app(server, &shutdown, json, None);
    let ct = shutdown.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { ct.cancelled().await })
        .await?;
    Ok(())
}

/// Binds `addr` and serves the fixture over HTTP (plain JSON answers); returns the bound
/// address.
pub async fn spawn_http(
    server: impl Served,
    addr: SocketAddr,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<SocketAddr> {
    spawn_http_with(server, addr, shutdown, true).await
}

/// Binds `addr` and serves the fixture over HTTP, answering with JSON or SSE (see
/// [`serve_http_with`]); returns the bound address.
pub async fn spawn_http_with(
    server: impl Served,
    addr: SocketAddr,
    shutdown: tokio_util::sync::CancellationToken,
    json: bool,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = serve_http_with(server, listener, shutdown, json).await {
            tracing::error!(error = %e, "fixture upstream stopped");
        }
    });
    Ok(local)
}
