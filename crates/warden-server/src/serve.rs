//! Serving: the listening sockets, a thread per core each with a runtime of its own, and the
//! background work of a serving Warden (agent schedules, the approvals sweeper,
//! notifications).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use warden_mcp::Gateway;

use crate::app::ListenerService;
use crate::state::AppState;

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
        let listener = listen(addr).map_err(|e| listen_error(addr, &e))?;
        Self::on(listener, state)
    }

    /// Listens on `addr` for [`Bound::on`] ([`listen`]), with an error that names the address
    /// and says what to do.
    pub fn listener(addr: SocketAddr) -> anyhow::Result<TcpListener> {
        listen(addr).map_err(|e| listen_error(addr, &e))
    }

    /// Serves on `listener`, bound before: `warden serve` binds its address first, so that a
    /// port in use is refused before the gateway starts upstream processes or a new store
    /// hands out its first admin token.
    pub fn on(listener: TcpListener, state: Arc<AppState>) -> anyhow::Result<Self> {
        let addr = listener.local_addr()?;
        state.runner.set_base_url(format!("http://{addr}"));
        state.listening(addr);
        Ok(Self { listener, state })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `shutdown` is cancelled, on the calling runtime.
    pub async fn serve(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        self.start_background(&shutdown);
        let app = ListenerService::new(self.state, shutdown.clone());
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
        let app = ListenerService::new(self.state, shutdown.clone());
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
        tokio::spawn(
            self.state
                .reconcilers
                .clone()
                .schedule(shutdown.child_token()),
        );
        tokio::spawn(sweep_approvals(
            self.state.gateway.clone(),
            shutdown.child_token(),
        ));
        tokio::spawn(crate::notify::run(
            self.state.gateway.clone(),
            shutdown.child_token(),
        ));
    }
}

/// How long a serving thread's runtime waits, as it ends, for its blocking work (an audit
/// commit handed to the blocking pool) to finish.
const RUNTIME_DRAIN: Duration = Duration::from_secs(5);

/// The body of serving thread `index`: its runtime, serving `listener` until `report.stop`.
fn serving_thread(
    index: usize,
    listener: std::net::TcpListener,
    app: ListenerService,
    report: Report,
) {
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
/// (`scripts/bench.sh kernel BEFORE NOW 1`, docs/benchmarks.md). Behind a
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

/// Serves `app` on `listener` until `shutdown` is cancelled, then waits for open connections
/// (each finishes the request it is serving). HTTP/1.1 with keep-alive, `TCP_NODELAY`, and
/// the state's header-read timeout on every connection ([`AppState::header_read_timeout`]).
async fn serve_listener(
    listener: TcpListener,
    app: ListenerService,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let connections = tokio_util::task::TaskTracker::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(app.state().header_read_timeout);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors or memory: wait rather than spin; a connection that
                // failed before it was accepted is the client's business.
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) {
                    tracing::warn!(error = %e, "cannot accept a connection; retrying in a second");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                continue;
            }
        };
        // Small answers and SSE events go out at once, not after the peer's delayed ACK.
        let _ = tcp.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
            let mut request = request.map(axum::body::Body::new);
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            tower::ServiceExt::oneshot(app.clone(), request)
        });
        let connection = http.serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
        let stop = shutdown.clone();
        connections.spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                () = stop.cancelled() => {}
            }
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
    }
    connections.close();
    connections.wait().await;
    Ok(())
}

/// Why `addr` cannot be listened on, in one line that says what to do (OPS-4).
fn listen_error(addr: SocketAddr, e: &std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => anyhow::anyhow!(
            "cannot listen on {addr}: port {} is in use (another `warden serve`?); stop that \
             process or choose another address with --listen",
            addr.port()
        ),
        std::io::ErrorKind::AddrNotAvailable => anyhow::anyhow!(
            "cannot listen on {addr}: no interface of this machine has that address; choose \
             another with --listen"
        ),
        std::io::ErrorKind::PermissionDenied => anyhow::anyhow!(
            "cannot listen on {addr}: permission denied (ports below 1024 need privileges); \
             choose another with --listen"
        ),
        _ => anyhow::anyhow!("cannot listen on {addr}: {e}"),
    }
}

/// How many connections may wait to be accepted.
const BACKLOG: u32 = 1024;

/// Listens on `addr`. On Linux the socket allows more sockets on its address
/// (`SO_REUSEPORT`, for [`Bound::serve_on_threads`]). A given port is first bound without
/// it, so a port already in use — by a second Warden too — fails with "address in use"
/// instead of being shared; only two servers started in the same instant on the same port
/// could both pass that check. For port 0 the kernel picks a port no socket uses. (Also what
/// `warden bench forward` listens with.)
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
    async fn a_port_in_use_is_refused_with_the_port_named_and_what_to_do() {
        let first = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = first.local_addr().unwrap();
        let e = Bound::listener(addr).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot listen on {addr}: port {} is in use (another `warden serve`?); stop that \
                 process or choose another address with --listen",
                addr.port()
            )
        );
    }

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
