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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// The router: every route, with the host check and authentication as middleware layers.
/// The listeners serve it behind [`Front`], which answers the same for every request.
pub fn router(state: Arc<AppState>, shutdown: CancellationToken) -> Router {
    routes(state, shutdown).0
}

/// The MCP endpoint served by [`router`] and [`Front`].
type Endpoint = inline::McpEndpoint<StreamableHttpService<McpHandler, LocalSessionManager>>;

/// The router, and the MCP endpoint its `/mcp` routes serve.
fn routes(state: Arc<AppState>, shutdown: CancellationToken) -> (Router, Endpoint) {
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
    let routed = endpoint.clone();
    let serve = move |request: axum::extract::Request| routed.clone().serve(request);
    let authenticated = Router::new()
        .route("/mcp", any(serve.clone()))
        .route("/mcp/agents/{agent}", any(serve))
        .nest("/api/v1", admin::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ));
    let router = Router::new()
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
        .with_state(state);
    (router, endpoint)
}

/// What the listeners serve: [`router`], except that a request the MCP endpoint may answer
/// inline (a stateless 2026-07-28 `POST /mcp`; see `inline`) goes to it directly, through
/// the same host check and authentication as the router's, in the same order. That skips
/// the router's path match, its two middleware layers and their boxed futures on the
/// requests that make up nearly all of an agent's traffic (docs/benchmarks.md).
#[derive(Clone)]
pub(crate) struct Front {
    router: Router,
    endpoint: Endpoint,
    state: Arc<AppState>,
}

impl Front {
    fn new(state: Arc<AppState>, shutdown: CancellationToken) -> Self {
        let (router, endpoint) = routes(state.clone(), shutdown);
        Self {
            router,
            endpoint,
            state,
        }
    }
}

impl tower::Service<axum::extract::Request> for Front {
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

    #[expect(
        clippy::result_large_err,
        reason = "a refusal is moved once, straight into the answer"
    )]
    fn call(&mut self, mut request: axum::extract::Request) -> Self::Future {
        if request.uri().path() != "/mcp" || !inline::candidate(&request) {
            return Box::pin(tower::ServiceExt::oneshot(self.router.clone(), request));
        }
        #[cfg(test)]
        front_tests::FAST_PATH.fetch_add(1, Ordering::Relaxed);
        let refused = hosts::verify(&self.state, &request)
            .and_then(|()| auth::verify(&self.state, &mut request));
        let endpoint = self.endpoint.clone();
        Box::pin(async move {
            Ok(match refused {
                // `candidate` held above: not checked again.
                Ok(()) => endpoint.serve_candidate(request).await,
                Err(refused) => refused,
            })
        })
    }
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
        let listener = listen(addr).map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        state
            .runner
            .set_base_url(format!("http://{}", listener.local_addr()?));
        Ok(Self { listener, state })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `shutdown` is cancelled, on the calling runtime.
    pub async fn serve(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        self.start_background(&shutdown);
        let app = Front::new(self.state, shutdown.clone());
        serve_listener(self.listener, app, shutdown).await
    }

    /// Serves until `shutdown` is cancelled on `threads` serving threads (thread per core).
    /// Each thread runs a single-threaded runtime and accepts on a socket of its own bound to
    /// the same address (`SO_REUSEPORT`: the kernel spreads new connections over them), so a
    /// stateless call answered inline (the requests of nearly all of an agent's traffic), its
    /// audit commit and its plain `http://` upstream connection stay on the thread of its
    /// connection, with no hand-off between threads (docs/benchmarks.md). A 2025-11-25
    /// session stays on the thread that initialized it; stdio upstreams, upstream
    /// supervision, agent runs, schedules and approval expiry run on the calling runtime.
    /// With one thread, or off Linux, this is [`Bound::serve`].
    ///
    /// Dropping the future stops the threads as `shutdown` does. A thread's runtime ends
    /// when every thread finished serving, as what one opened (a pooled database or HTTPS
    /// connection) may be in use on another until then.
    pub async fn serve_on_threads(
        self,
        threads: usize,
        shutdown: CancellationToken,
    ) -> anyhow::Result<()> {
        if threads <= 1 || !cfg!(target_os = "linux") {
            return self.serve(shutdown).await;
        }
        let addr = self.local_addr()?;
        let mut listeners = Vec::with_capacity(threads);
        for _ in 1..threads {
            let more = reuse_port(addr)
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr} again: {e}"))?;
            listeners.push(more.into_std()?);
        }
        self.start_background(&shutdown);
        listeners.insert(0, self.listener.into_std()?);
        let app = Front::new(self.state, shutdown.clone());
        let stop = shutdown.child_token();
        let _stop_when_dropped = stop.clone().drop_guard();
        let serving = Arc::new(AtomicUsize::new(threads));
        let all_done = CancellationToken::new();
        let (done, mut finished) = tokio::sync::mpsc::unbounded_channel();
        let mut failure = None;
        for (at, listener) in listeners.into_iter().enumerate() {
            let index = at + 1;
            let report = Report {
                index,
                done: Some(done.clone()),
                stop: stop.clone(),
                serving: serving.clone(),
                all_done: all_done.clone(),
                counted: AtomicBool::new(false),
            };
            let app = app.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("warden-serve-{index}"))
                .spawn(move || serving_thread(index, listener, app, report));
            if let Err(e) = spawned {
                // This thread and the ones not started are done serving.
                stop.cancel();
                if serving.fetch_sub(threads - at, Ordering::AcqRel) == threads - at {
                    all_done.cancel();
                }
                failure = Some(anyhow::anyhow!("cannot start serving thread {index}: {e}"));
                break;
            }
        }
        drop(done);
        while let Some(result) = finished.recv().await {
            if let Err(e) = result {
                failure.get_or_insert(e);
            }
        }
        failure.map_or(Ok(()), Err)
    }

    fn start_background(&self, shutdown: &CancellationToken) {
        tokio::spawn(self.state.runner.clone().schedule(shutdown.child_token()));
        tokio::spawn(sweep_approvals(
            self.state.gateway.clone(),
            shutdown.child_token(),
        ));
    }
}

/// How long a serving thread's runtime waits, as it ends, for its blocking work (an audit
/// commit handed to the blocking pool) to finish.
const RUNTIME_DRAIN: Duration = Duration::from_secs(5);

/// The body of serving thread `index`: its runtime, serving `listener` until `report.stop`.
fn serving_thread(index: usize, listener: std::net::TcpListener, app: Front, report: Report) {
    warden_mcp::serving_thread(index);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            report.send(Err(anyhow::anyhow!(
                "cannot start the runtime of serving thread {index}: {e}"
            )));
            return;
        }
    };
    let result = runtime.block_on(async {
        tokio::spawn(timer_anchor());
        let result = match TcpListener::from_std(listener) {
            Ok(listener) => serve_listener(listener, app, report.stop.clone()).await,
            Err(e) => Err(e.into()),
        };
        report.count(result.is_err());
        // Until every thread is done, this runtime drives what it opened for the others.
        report.all_done.cancelled().await;
        result
    });
    runtime.shutdown_timeout(RUNTIME_DRAIN);
    report.send(result);
}

/// Keeps a timer at most [`TIMER_ANCHOR`] ahead in a serving runtime's timer wheel, for as long
/// as the runtime runs. Tokio's timer driver wakes its own thread (an `eventfd` write, then a
/// turn of the event loop to read it) whenever a timer is set to expire before every other
/// one; with one client that was every call's upstream timeout, then the only timer of its
/// thread: three `write`s per governed call where the spool's two are all that is needed
/// (`scripts/bench.sh kernel BEFORE NOW 1`, docs/benchmarks.md thirteenth round). Behind a
/// timer due within a second, the timeouts (seconds to minutes) never come first.
async fn timer_anchor() {
    let mut tick = tokio::time::interval(TIMER_ANCHOR);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
    }
}

/// How far ahead [`timer_anchor`] keeps its timer: one wake-up a second per serving thread.
const TIMER_ANCHOR: Duration = Duration::from_secs(1);

/// What a serving thread tells the others and the caller, also when it ends unexpectedly
/// (a panic): then it stops the others and reports an error.
struct Report {
    index: usize,
    done: Option<tokio::sync::mpsc::UnboundedSender<anyhow::Result<()>>>,
    stop: CancellationToken,
    /// Threads still serving; the last one to finish cancels `all_done`.
    serving: Arc<AtomicUsize>,
    all_done: CancellationToken,
    counted: AtomicBool,
}

impl Report {
    /// This thread finished serving (once); a failure stops the others.
    fn count(&self, failed: bool) {
        if failed {
            self.stop.cancel();
        }
        if !self.counted.swap(true, Ordering::AcqRel)
            && self.serving.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.all_done.cancel();
        }
    }

    fn send(mut self, result: anyhow::Result<()>) {
        self.count(result.is_err());
        if let Some(done) = self.done.take() {
            let _ = done.send(result);
        }
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            self.count(true);
            let _ = done.send(Err(anyhow::anyhow!(
                "serving thread {} stopped unexpectedly",
                self.index
            )));
        }
    }
}

/// Serves `app` on `listener` until `shutdown` is cancelled, then waits for open connections.
async fn serve_listener(
    listener: TcpListener,
    app: Front,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    // Small answers and SSE events go out at once, not after the peer's delayed ACK.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(
        listener,
        axum::ServiceExt::<axum::extract::Request>::into_make_service_with_connect_info::<
            SocketAddr,
        >(app),
    )
    .with_graceful_shutdown(async move { shutdown.cancelled().await })
    .await?;
    Ok(())
}

/// How many connections may wait to be accepted.
const BACKLOG: u32 = 1024;

/// Listens on `addr`. On Linux the socket allows more sockets on its address
/// (`SO_REUSEPORT`, for [`Bound::serve_on_threads`]). A given port is first bound without
/// it, so a port already in use — by a second Warden too — fails with "address in use"
/// instead of being shared; only two servers started in the same instant on the same port
/// could both pass that check. For port 0 the kernel picks a port no socket uses. (Also what
/// `warden bench relay` listens with.)
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    if !cfg!(target_os = "linux") {
        let socket = socket_for(addr)?;
        #[cfg(not(windows))]
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        return socket.listen(BACKLOG);
    }
    if addr.port() != 0 {
        let probe = socket_for(addr)?;
        probe.set_reuseaddr(true)?;
        probe.bind(addr)?;
    }
    reuse_port(addr)
}

/// A listening socket on `addr` with `SO_REUSEPORT` (Linux: it joins the sockets already
/// there of this user).
pub fn reuse_port(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = socket_for(addr)?;
    #[cfg(not(windows))]
    socket.set_reuseaddr(true)?;
    #[cfg(target_os = "linux")]
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

fn socket_for(addr: SocketAddr) -> std::io::Result<tokio::net::TcpSocket> {
    match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_port_in_use_is_refused_although_serving_threads_share_theirs() {
        let first = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = first.local_addr().unwrap();
        // A second server on the same port (another Warden) is refused...
        let again = listen(addr).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AddrInUse, "{again}");
        // ...while the sockets of this server's own serving threads join it.
        if cfg!(target_os = "linux") {
            let joined = reuse_port(addr).unwrap();
            assert_eq!(joined.local_addr().unwrap(), addr);
        }
    }
}

#[cfg(test)]
mod front_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use tower::ServiceExt;

    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, bool);

    /// Requests `Front` sent past the router.
    pub(super) static FAST_PATH: AtomicUsize = AtomicUsize::new(0);

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

    /// XPORT-2, AUTH: a request `Front` takes past the router gets exactly the router's
    /// answer — refused by the host check or authentication alike, or served — and only
    /// requests for exactly `/mcp` that the endpoint may answer inline take that way.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn front_answers_as_the_router_does() {
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
        let front = Front::new(state.clone(), shutdown.clone());
        let router = router(state, shutdown.clone());
        let bearer = format!("Bearer {admin}");
        let bad = format!("Bearer wdn_{}", "0".repeat(64));
        let host = ("host", "127.0.0.1:8080");
        // Path, headers, and whether `Front` takes it past the router.
        let cases: Vec<Case<'_>> = vec![
            (
                "/mcp",
                vec![("host", "evil.example"), ("authorization", &bearer)],
                true,
            ),
            (
                "/mcp",
                vec![
                    host,
                    ("origin", "https://evil.example"),
                    ("authorization", &bearer),
                ],
                true,
            ),
            ("/mcp", vec![], true),
            ("/mcp", vec![host], true),
            ("/mcp", vec![host, ("authorization", &bad)], true),
            ("/mcp", vec![host, ("authorization", &bearer)], true),
            ("/mcp?x=1", vec![host, ("authorization", &bearer)], true),
            ("/mcp/", vec![host, ("authorization", &bearer)], false),
            ("//mcp", vec![host, ("authorization", &bearer)], false),
            ("/MCP", vec![host, ("authorization", &bearer)], false),
            ("/%6Dcp", vec![host, ("authorization", &bearer)], false),
            (
                "/mcp",
                vec![host, ("authorization", &bearer), ("mcp-session-id", "s1")],
                false,
            ),
        ];
        for (path, headers, fast) in cases {
            let before = FAST_PATH.load(Ordering::Relaxed);
            let (status, body) =
                answer(front.clone().oneshot(call(path, &headers)).await.unwrap()).await;
            let took = FAST_PATH.load(Ordering::Relaxed) - before;
            let (want_status, want_body) =
                answer(router.clone().oneshot(call(path, &headers)).await.unwrap()).await;
            assert_eq!(took, usize::from(fast), "{path} {headers:?}");
            assert_eq!(status, want_status, "{path} {headers:?}: {body}");
            if status == StatusCode::OK {
                // Each call is a run of its own: the answers differ in their run ids only.
                assert!(
                    body.contains("\"result\"") && want_body.contains("\"result\""),
                    "{body}"
                );
            } else {
                assert_eq!(body, want_body, "{path} {headers:?}");
            }
        }
        shutdown.cancel();
        gateway.shutdown();
    }
}
