//! Warden's HTTP server: health and readiness now; MCP endpoints, the admin API and metrics
//! build on the same state.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use tokio::net::TcpListener;
use warden_store::Store;

/// Shared state of the server.
#[derive(Debug)]
pub struct AppState {
    /// The store.
    pub store: Arc<Store>,
}

/// The router.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state)
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready when the store answers.
async fn readyz(State(state): State<Arc<AppState>>) -> (StatusCode, String) {
    match state.store.revision().await {
        Ok(_) => (StatusCode::OK, "ready\n".into()),
        Err(e) => {
            tracing::warn!(error = %e, "not ready: the store does not answer");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "not ready: the store does not answer\n".into(),
            )
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
        Ok(Self { listener, state })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `shutdown` completes.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        axum::serve(self.listener, router(self.state))
            .with_graceful_shutdown(shutdown)
            .await?;
        Ok(())
    }
}
