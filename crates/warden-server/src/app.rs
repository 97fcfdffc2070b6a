//! The application: the one door every request passes ([`ListenerService`]: the host check,
//! then authentication and the MCP endpoint for the MCP paths), and the router of the rest —
//! the admin API and every unknown path behind authentication, the console, health and
//! metrics.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use warden_mcp::upstream::UpstreamStatus;
use warden_mcp::{McpHandler, SessionAuth};

use crate::mcp_session_store::StoredSessions;
use crate::mcp_sessions::SessionOwners;
use crate::state::{AppState, MAX_BODY_BYTES};
use crate::{admin, auth, console, endpoint, hosts};

/// The buckets of every latency histogram, in seconds: from the sub-millisecond governed call
/// of a fast upstream to a minute-long one.
const LATENCY_BUCKETS: &[f64] = &[
    0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    10.0, 30.0, 60.0,
];

/// How often histograms are folded into their buckets between scrapes, so that a server no
/// one scrapes keeps constant memory.
const METRICS_UPKEEP: Duration = Duration::from_secs(5);

fn metrics_handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let installed = PrometheusBuilder::new()
                .set_buckets(LATENCY_BUCKETS)
                .and_then(PrometheusBuilder::install_recorder);
            match installed {
                Ok(handle) => {
                    describe_metrics();
                    let upkeep = handle.clone();
                    let _ = std::thread::Builder::new()
                        .name("warden-metrics".into())
                        .spawn(move || {
                            loop {
                                std::thread::sleep(METRICS_UPKEEP);
                                upkeep.run_upkeep();
                            }
                        });
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics recorder not installed");
                    None
                }
            }
        })
        .as_ref()
}

/// `# HELP` of every metric Warden records (docs/mcp.md, "Health and metrics").
fn describe_metrics() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "warden_calls_total",
        "Governed tools/call requests, by decision (executed, pending_approval, denied) and, when denied, code"
    );
    describe_histogram!(
        "warden_call_duration_seconds",
        Unit::Seconds,
        "Duration of governed tools/call requests, decision and audit records included, by decision"
    );
    describe_histogram!(
        "warden_tool_call_duration_seconds",
        Unit::Seconds,
        "Duration of governed tools/call requests by catalog tool, and upstream for upstream tools"
    );
    describe_histogram!(
        "warden_upstream_call_duration_seconds",
        Unit::Seconds,
        "Duration of the calls Warden sent to each upstream, from request to answer"
    );
    describe_gauge!(
        "warden_store_up",
        "1 while the store answers, 0 while it cannot be reached (runs get no tools then)"
    );
    describe_gauge!(
        "warden_upstream_up",
        "1 while the upstream is connected, by upstream"
    );
    describe_gauge!(
        "warden_upstream_tools",
        "Tools the upstream offers, by upstream"
    );
    describe_gauge!(
        "warden_approvals_pending",
        "Parked calls waiting: for a decision (status=pending) or for their veto window (status=staged)"
    );
    describe_gauge!(
        "warden_kill_switches",
        "Kill switches pulled (KillSwitch resources in the configuration)"
    );
    describe_counter!(
        "warden_auth_failures_total",
        "Requests refused for their bearer token, by reason"
    );
    describe_counter!(
        "warden_token_exchanges_total",
        "Caller tokens exchanged at an issuer for an upstream acting as its caller (AUTH-6), by issuer"
    );
    describe_counter!(
        "warden_auth_rate_limited_total",
        "Requests answered 429: their source address failed authentication too often"
    );
    describe_counter!(
        "warden_foreign_session_requests_total",
        "Requests for a 2025-11-25 session that another credential owns (answered as unknown)"
    );
    describe_counter!(
        "warden_mcp_requests_total",
        "Authenticated requests to the MCP endpoints, by path: stateless (answered on the connection) or streamable (sessions, event streams, everything else)"
    );
}

/// The MCP endpoint [`ListenerService`] serves.
type Endpoint = endpoint::McpEndpoint<StreamableHttpService<McpHandler, LocalSessionManager>>;

/// The router of everything but the MCP endpoints, with authentication as middleware for the
/// admin API and every path it does not know, and the MCP endpoint.
fn routes(state: Arc<AppState>, shutdown: CancellationToken) -> (Router, Endpoint) {
    let _ = metrics_handle();
    let gateway = state.gateway.clone();
    let store = state.gateway.store().clone();
    let mut config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        // Host and Origin are checked by the listener service for every request.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(shutdown.child_token());
    // 2025-11-25 sessions are restored from the store on any replica (mcp_sessions.rs).
    config.session_store = Some(Arc::new(StoredSessions::new(
        store.clone(),
        state.gateway.clock().clone(),
    )));
    let sessions = Arc::new(LocalSessionManager::default());
    let mcp = StreamableHttpService::new(
        move || {
            Ok(McpHandler::new(
                gateway.clone(),
                SessionAuth::PerRequest,
                None,
            ))
        },
        sessions.clone(),
        config,
    );
    let owners = Arc::new(SessionOwners::new(
        sessions,
        store.clone(),
        state.gateway.clock().clone(),
        state.session_limits,
    ));
    owners.expire_until(shutdown.child_token());
    let endpoint = endpoint::McpEndpoint::new(state.gateway.clone(), mcp, owners);
    // Authenticated: the admin API, and every path no route names (a client learns nothing
    // of which paths exist without a valid token).
    let authenticated =
        Router::new()
            .nest("/api/v1", admin::routes())
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                authenticate,
            ));
    let router = Router::new()
        .merge(console::routes(state.control.clone()))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/api/v1/openapi.json", get(admin::openapi))
        // Signed by the forge, not authenticated by a token (WORK-3).
        .route(
            "/hooks/git/{provider}",
            axum::routing::post(crate::hooks::git),
        )
        .merge(crate::oauth::metadata_routes())
        .merge(authenticated)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::Extension(crate::state::Stopping(
            shutdown.child_token(),
        )))
        .with_state(state);
    (router, endpoint)
}

/// Whether `path` is an MCP endpoint: exactly `/mcp`, or `/mcp/agents/{agent}` (one
/// non-empty segment). Other spellings (`/mcp/`, `//mcp`, `/MCP`) are paths the router does
/// not know.
fn mcp_endpoint(path: &str) -> bool {
    path == "/mcp"
        || path
            .strip_prefix("/mcp/agents/")
            .is_some_and(|agent| !agent.is_empty() && !agent.contains('/'))
}

/// What the listeners serve, the one door of every request: the host check (XPORT-2) first;
/// then, for an MCP endpoint, authentication and the endpoint, which answers a stateless
/// 2026-07-28 `POST` inline and hands everything else to rmcp (`endpoint`); every other
/// request goes to the router. MCP requests, nearly all of an agent's traffic, skip the
/// router's path match, its middleware and their boxed futures (docs/benchmarks.md).
#[derive(Clone)]
pub struct ListenerService {
    router: Router,
    endpoint: Endpoint,
    state: Arc<AppState>,
}

impl std::fmt::Debug for ListenerService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerService").finish_non_exhaustive()
    }
}

impl ListenerService {
    /// The door of `state`'s server; its streams and session expiry end with `shutdown`.
    pub fn new(state: Arc<AppState>, shutdown: CancellationToken) -> Self {
        let (router, endpoint) = routes(state.clone(), shutdown);
        Self {
            router,
            endpoint,
            state,
        }
    }

    /// What every request handler shares.
    pub(crate) fn state(&self) -> &AppState {
        &self.state
    }
}

impl tower::Service<axum::extract::Request> for ListenerService {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response, Self::Error>> + Send + 'static>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: axum::extract::Request) -> Self::Future {
        if let Err(refused) = hosts::verify(&self.state.hosts, &request) {
            return Box::pin(std::future::ready(Ok(refused)));
        }
        if !mcp_endpoint(request.uri().path()) {
            return Box::pin(tower::ServiceExt::oneshot(self.router.clone(), request));
        }
        #[cfg(test)]
        tests::MCP_DOOR.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = self.state.clone();
        let endpoint = self.endpoint.clone();
        Box::pin(async move {
            Ok(match auth::verify(&state, &mut request).await {
                Ok(()) => endpoint.serve(request).await,
                Err(refused) => refused,
            })
        })
    }
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready when the store answers and the configuration is loaded; the body lists upstreams.
async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    // Ready only while the store is there, answers and takes appends: a removed database
    // file, a held write lock or a full disk fail every governed call (REL-2).
    let store = state.gateway.store();
    let problem = match store.health().await {
        Err(e) => Some(e.to_string()),
        Ok(_) => store.append_problem(),
    };
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
    let ready = problem.is_none() && snapshot.store_ok && snapshot.loaded;
    let mut body = serde_json::json!({
        "ready": ready,
        "store": if problem.is_none() && snapshot.store_ok { "ok" } else { "unavailable" },
        "revision": snapshot.revision,
        "upstreams": upstreams,
    });
    if let (Some(problem), Some(fields)) = (problem, body.as_object_mut()) {
        fields.insert("storeProblem".into(), serde_json::Value::String(problem));
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let snapshot = state.gateway.snapshot();
    // Set here too: the gateway's own updates before the recorder was installed went nowhere.
    metrics::gauge!("warden_store_up").set(if snapshot.store_ok { 1.0 } else { 0.0 });
    let kill_switches = snapshot
        .policy
        .config
        .of_kind(warden_core::config::Kind::KillSwitch)
        .count();
    metrics::gauge!("warden_kill_switches").set(kill_switches as f64);
    // Both series are always there: a status with nothing waiting is 0, not missing.
    let mut waiting = [("pending", 0.0), ("staged", 0.0)];
    match state.gateway.store().waiting_approvals().await {
        Ok(counts) => {
            for (status, n) in counts {
                if let Some(w) = waiting.iter_mut().find(|w| w.0 == status.as_str()) {
                    w.1 = n as f64;
                }
            }
            for (status, n) in waiting {
                metrics::gauge!("warden_approvals_pending", "status" => status).set(n);
            }
        }
        // An unreachable store shows in `warden_store_up`; the last counts stay.
        Err(e) => tracing::debug!(error = %e, "cannot count the approvals waiting"),
    }
    for u in state.gateway.upstreams().all() {
        let up = matches!(u.status(), UpstreamStatus::Up { .. });
        metrics::gauge!("warden_upstream_up", "upstream" => u.spec.name.to_string()).set(if up {
            1.0
        } else {
            0.0
        });
        metrics::gauge!("warden_upstream_tools", "upstream" => u.spec.name.to_string())
            .set(u.offer().tools.len() as f64);
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

/// Bearer authentication as middleware (the admin API and every path the router does not
/// know): puts the credential into the request's extensions.
async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    match auth::verify(&state, &mut request).await {
        Ok(()) => next.run(request).await,
        Err(refused) => refused,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::hosts::HostPolicy;
    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use tower::ServiceExt;
    use warden_mcp::Gateway;

    /// Path, headers, the status answered, and whether the MCP door took it.
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, StatusCode, bool);

    /// Requests the listener service took to the MCP endpoint.
    pub(super) static MCP_DOOR: AtomicUsize = AtomicUsize::new(0);

    const CALL: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"warden__whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}"#;

    /// A stateless 2026-07-28 call of `warden__whoami` to `path`, with `headers` added.
    fn call(path: &str, headers: &[(&str, &str)]) -> axum::extract::Request {
        let mut request = http::Request::post(path)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "warden__whoami")
            .header("content-length", CALL.len());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut request = request.body(Body::from(CALL)).unwrap();
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        request.extensions_mut().insert(ConnectInfo(peer));
        request
    }

    async fn answer(response: Response) -> (StatusCode, String) {
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// XPORT-2, AUTH: every request passes the host check; a request for an MCP endpoint is
    /// authenticated and served by the endpoint, past the router; every other spelling of the
    /// path is the router's, which asks for a token on paths it does not know.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_listener_service_checks_every_request_and_authenticates_the_mcp_door() {
        let store = warden_testkit::sqlite_store().await;
        let admin = store
            .store
            .bootstrap(warden_core::time::Millis(1))
            .await
            .unwrap()
            .unwrap()
            .secret;
        let gateway = Gateway::start(
            Arc::new(warden_store::Store::open(&store.location).await.unwrap()),
            warden_mcp::GatewayOptions::default(),
        )
        .await;
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let state = Arc::new(AppState::new(
            gateway.clone(),
            HostPolicy::for_listener(addr, &[], &[]).unwrap(),
        ));
        let shutdown = CancellationToken::new();
        let front = ListenerService::new(state.clone(), shutdown.clone());
        let bearer = format!("Bearer {admin}");
        let bad = format!("Bearer wdn_{}", "0".repeat(64));
        let host = ("host", "127.0.0.1:8080");
        let (ok, forbidden, unauthorized, not_found) = (
            StatusCode::OK,
            StatusCode::FORBIDDEN,
            StatusCode::UNAUTHORIZED,
            StatusCode::NOT_FOUND,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "/mcp",
                vec![("host", "evil.example"), ("authorization", &bearer)],
                forbidden,
                false,
            ),
            (
                "/mcp",
                vec![
                    host,
                    ("origin", "https://evil.example"),
                    ("authorization", &bearer),
                ],
                forbidden,
                false,
            ),
            ("/mcp", vec![], StatusCode::BAD_REQUEST, false),
            ("/mcp", vec![host], unauthorized, true),
            (
                "/mcp",
                vec![host, ("authorization", &bad)],
                unauthorized,
                true,
            ),
            ("/mcp", vec![host, ("authorization", &bearer)], ok, true),
            ("/mcp?x=1", vec![host, ("authorization", &bearer)], ok, true),
            (
                "/mcp/agents/nobody",
                vec![host, ("authorization", &bearer)],
                not_found,
                true,
            ),
            ("/mcp/agents/nobody", vec![host], unauthorized, true),
            (
                "/mcp/",
                vec![host, ("authorization", &bearer)],
                not_found,
                false,
            ),
            ("/mcp/", vec![host], unauthorized, false),
            (
                "//mcp",
                vec![host, ("authorization", &bearer)],
                not_found,
                false,
            ),
            (
                "/MCP",
                vec![host, ("authorization", &bearer)],
                not_found,
                false,
            ),
            (
                "/%6Dcp",
                vec![host, ("authorization", &bearer)],
                not_found,
                false,
            ),
            (
                "/mcp/agents/",
                vec![host, ("authorization", &bearer)],
                not_found,
                false,
            ),
            (
                "/mcp/agents/a/b",
                vec![host, ("authorization", &bearer)],
                not_found,
                false,
            ),
            (
                "/mcp",
                vec![host, ("authorization", &bearer), ("mcp-session-id", "s1")],
                not_found,
                true,
            ),
        ];
        for (path, headers, want, door) in cases {
            let before = MCP_DOOR.load(Ordering::Relaxed);
            let (status, body) =
                answer(front.clone().oneshot(call(path, &headers)).await.unwrap()).await;
            let took = MCP_DOOR.load(Ordering::Relaxed) - before;
            assert_eq!(took, usize::from(door), "{path} {headers:?}");
            assert_eq!(status, want, "{path} {headers:?}: {body}");
            if status == StatusCode::OK {
                assert!(body.contains("\"result\""), "{body}");
            }
        }
        // The refusals are the door's own: a bearer challenge on the MCP path, the admin API's
        // JSON error under `/api/v1`.
        let refused = front.clone().oneshot(call("/mcp", &[host])).await.unwrap();
        assert!(refused.headers().contains_key("www-authenticate"));
        let (_, body) = answer(refused).await;
        assert!(body.contains("missing bearer token"), "{body}");
        let (_, body) = answer(
            front
                .clone()
                .oneshot(call("/api/v1/tokens", &[host]))
                .await
                .unwrap(),
        )
        .await;
        assert!(body.contains("\"code\":\"UNAUTHENTICATED\""), "{body}");
        shutdown.cancel();
        gateway.shutdown();
    }
}
