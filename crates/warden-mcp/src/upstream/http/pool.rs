//! HTTP/1.1 to a plain `http://` upstream, on the calling task.
//!
//! reqwest (through hyper-util's pool) gives every connection its own task: a request is
//! handed to that task, which writes it, reads the answer and hands the answer back. On a
//! 2-vCPU machine each hand-off is a thread wake-up, 20–70 µs (docs/benchmarks.md), twice per
//! governed call. Here the calling task drives hyper's HTTP/1.1 connection itself while it
//! waits for its answer, so the socket's readiness wakes the caller directly. hyper does all
//! the HTTP; this module only owns the idle connections and polls them.
//!
//! Why not hyper-util's pool: its legacy `Client` runs every connection on a task of its own —
//! the hand-off this module exists to avoid. Its composable `client::pool::Cache` (0.1.21,
//! feature `client-pool`) could hold connections like these, but it keeps no idle timeout yet
//! (`on_idle` is a to-do in its source), and while a caller waits for an idle connection it
//! races a new connect, handing the loser to an executor: more connections and a task hop
//! where this module has neither. What is left to own here is small: a list of idle
//! connections per serving thread (a connection's socket is registered with the runtime of the
//! thread that opened it), their idle timeout, and reuse only after an answer was read to its
//! end.
//!
//! A connection is reused only after its answer was read to the end; one whose answer was
//! abandoned (a cancelled call) is closed. A request is retried on another connection only
//! when hyper hands it back unsent (the pooled connection turned out closed), never once it
//! may have reached the upstream. `https://` and anything behind an HTTP proxy stay with
//! reqwest.

use std::collections::VecDeque;
use std::future::{Future as _, poll_fn};
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::Stream;
use http::{HeaderMap, HeaderValue, Request, StatusCode, Uri};
use http_body::Body as _;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// How long an idle connection is kept (the same as the reqwest client's).
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How many idle connections are kept per upstream and serving thread.
const MAX_IDLE: usize = 256;
/// How long a TCP connect may take (the same as the reqwest client's).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// TCP keepalive: idle time before the first probe and between probes, and how many
/// unanswered probes end the connection (reqwest's defaults).
const KEEPALIVE: Duration = Duration::from_secs(15);
const KEEPALIVE_RETRIES: u32 = 3;
/// How long sent data may stay unacknowledged before the connection fails (reqwest's).
const USER_TIMEOUT: Duration = Duration::from_secs(30);

thread_local! {
    /// The serving thread this thread is, 0 when it is not one (see [`serving_thread`]).
    static SERVING_THREAD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks this thread as serving thread `index` (from 1) of a thread-per-core server: its
/// idle upstream connections are its own. A connection's socket is watched by the runtime
/// that opened it, so a call on another thread's connection would be woken through that
/// thread. Threads not marked (a multi-threaded runtime's workers) share their connections.
pub fn serving_thread(index: usize) {
    SERVING_THREAD.set(index);
}

/// Closes the connections unused for longer than [`IDLE_TIMEOUT`] (the oldest are first).
fn expire(idle: &mut VecDeque<(Link, Instant)>) {
    while idle
        .front()
        .is_some_and(|(_, since)| since.elapsed() >= IDLE_TIMEOUT)
    {
        idle.pop_front();
    }
}

type Conn = Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// One HTTP/1.1 connection: the request side and the connection the caller drives.
struct Link {
    send: SendRequest<Full<Bytes>>,
    /// `None` once the connection ended (the upstream closed it, or it failed). It is dropped
    /// then, which hands a request still queued on it back unsent: hyper does not otherwise
    /// fail a request it never took after a clean close.
    conn: Option<Conn>,
    /// The serving thread that opened it (0: shared).
    owner: usize,
}

impl Link {
    /// Does the connection's socket work; then `then`.
    fn drive<T>(
        &mut self,
        cx: &mut Context<'_>,
        then: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        if let Some(conn) = self.conn.as_mut()
            && Pin::new(conn).poll(cx).is_ready()
        {
            self.conn = None;
        }
        then(cx)
    }

    fn closed(&self) -> bool {
        self.conn.is_none()
    }
}

/// The idle connections to one `http://` upstream.
pub(super) struct H1Pool {
    /// `host:port`, to connect to.
    address: String,
    /// The `Host` header.
    host: HeaderValue,
    /// The request target (path and query).
    target: Uri,
    /// Per serving thread (index 0: threads that share), oldest first; the newest is used
    /// first.
    idle: Mutex<Vec<VecDeque<(Link, Instant)>>>,
}

impl std::fmt::Debug for H1Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H1Pool")
            .field("address", &self.address)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// Whether an HTTP proxy is configured in the environment (reqwest would use it).
fn proxy_configured() -> bool {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()))
}

impl H1Pool {
    /// For a plain `http://` URL without credentials when no proxy is configured; `None`
    /// otherwise (reqwest then carries the calls).
    pub(super) fn for_url(url: &reqwest::Url) -> Option<Self> {
        if url.scheme() != "http"
            || !url.username().is_empty()
            || url.password().is_some()
            || proxy_configured()
        {
            return None;
        }
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let host_header = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        };
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        Some(Self {
            // An IPv6 literal keeps its brackets, as `connect` wants them.
            address: format!("{host}:{port}"),
            host: HeaderValue::from_str(&host_header).ok()?,
            target: target.parse().ok()?,
            idle: Mutex::new(Vec::new()),
        })
    }

    fn take_idle(&self) -> Option<Link> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let mine = idle.get_mut(SERVING_THREAD.get())?;
        expire(mine);
        mine.pop_back().map(|(link, _)| link)
    }

    fn put_idle(&self, link: Link) {
        if link.closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        // Every thread's expired connections are closed, also those of a thread that stopped
        // calling this upstream.
        idle.iter_mut().for_each(expire);
        if idle.len() <= link.owner {
            idle.resize_with(link.owner + 1, VecDeque::new);
        }
        let Some(mine) = idle.get_mut(link.owner) else {
            return;
        };
        if mine.len() < MAX_IDLE {
            mine.push_back((link, Instant::now()));
        }
    }

    async fn connect(&self) -> Result<Link, String> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&self.address))
            .await
            .map_err(|_| format!("connecting to {} timed out", self.address))?
            .map_err(|e| format!("cannot connect to {}: {e}", self.address))?;
        // The socket options reqwest's client sets by default: no Nagle delay, keepalive
        // probes, and a bound on unacknowledged data, so that a dead peer is noticed during
        // a long answer.
        let _ = stream.set_nodelay(true);
        let socket = socket2::SockRef::from(&stream);
        let _ = socket.set_tcp_keepalive(
            &socket2::TcpKeepalive::new()
                .with_time(KEEPALIVE)
                .with_interval(KEEPALIVE)
                .with_retries(KEEPALIVE_RETRIES),
        );
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let _ = socket.set_tcp_user_timeout(Some(USER_TIMEOUT));
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("cannot open HTTP/1.1 to {}: {e}", self.address))?;
        Ok(Link {
            send,
            conn: Some(conn),
            owner: SERVING_THREAD.get(),
        })
    }

    /// `POST`s `body` with `headers` and returns the answer's status, headers and body. The
    /// body must be read to its end for the connection to be reused.
    pub(super) async fn post(
        &self,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<(StatusCode, HeaderMap, PooledBody<'_>), String> {
        // A `Host` of the upstream's configured headers is kept, as reqwest keeps it.
        headers
            .entry(http::header::HOST)
            .or_insert_with(|| self.host.clone());
        let mut request = Request::post(self.target.clone())
            .body(Full::new(body))
            .map_err(|e| format!("cannot build the request: {e}"))?;
        *request.headers_mut() = headers;
        // Pooled connections first; one found closed hands the request back unsent.
        loop {
            let (mut link, pooled) = match self.take_idle() {
                Some(link) => (link, true),
                None => (self.connect().await?, false),
            };
            // Let the connection notice a close by the upstream before it is used.
            poll_fn(|cx| link.drive(cx, |_| Poll::Ready(()))).await;
            if link.closed() {
                if pooled {
                    continue;
                }
                return Err(format!("{} closed the connection at once", self.address));
            }
            let mut answer = std::pin::pin!(link.send.try_send_request(request));
            let sent = poll_fn(|cx| link.drive(cx, |cx| answer.as_mut().poll(cx))).await;
            match sent {
                Ok(response) => {
                    let (parts, incoming) = response.into_parts();
                    return Ok((
                        parts.status,
                        parts.headers,
                        PooledBody {
                            link: Some(link),
                            incoming,
                            upstream: self,
                        },
                    ));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if pooled => request = unsent,
                    _ => return Err(format!("the upstream request failed: {}", e.into_error())),
                },
            }
        }
    }
}

/// An answer's body, read on the calling task; its connection goes back to the idle ones
/// when the body was read to the end.
pub(super) struct PooledBody<'a> {
    link: Option<Link>,
    incoming: Incoming,
    upstream: &'a H1Pool,
}

impl Stream for PooledBody<'_> {
    type Item = Result<Bytes, String>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some(link) = this.link.as_mut() else {
            return Poll::Ready(None);
        };
        let incoming = &mut this.incoming;
        loop {
            let frame = link.drive(cx, |cx| Pin::new(&mut *incoming).poll_frame(cx));
            match frame {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                    // Trailers: nothing for us.
                }
                Poll::Ready(Some(Err(e))) => {
                    this.link = None;
                    return Poll::Ready(Some(Err(format!("cannot read the answer: {e}"))));
                }
                Poll::Ready(None) => {
                    if let Some(link) = this.link.take() {
                        this.upstream.put_idle(link);
                    }
                    return Poll::Ready(None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::StreamExt as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    use super::*;

    /// A raw HTTP/1.1 server answering `answers` requests per connection with `hello`, then
    /// closing it without saying so (no `Connection: close`); counts connections accepted
    /// and closed.
    async fn server(answers: usize) -> (reqwest::Url, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp?x=1", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(AtomicUsize::new(0));
        let (count, closing) = (accepted.clone(), closed.clone());
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                let closing = closing.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    for _ in 0..answers {
                        // Read one request: headers, then the Content-Length body.
                        loop {
                            let mut chunk = [0u8; 4096];
                            let n = socket.read(&mut chunk).await.unwrap();
                            if n == 0 {
                                return;
                            }
                            buf.extend_from_slice(&chunk[..n]);
                            let text = String::from_utf8_lossy(&buf).to_string();
                            if let Some(end) = text.find("\r\n\r\n") {
                                let head = text[..end].to_ascii_lowercase();
                                assert!(head.starts_with("post /mcp?x=1 http/1.1"), "{head}");
                                assert!(head.contains("\r\nhost: 127.0.0.1:"), "{head}");
                                let len: usize = head
                                    .lines()
                                    .find_map(|l| l.strip_prefix("content-length: "))
                                    .unwrap()
                                    .parse()
                                    .unwrap();
                                if buf.len() >= end + 4 + len {
                                    buf.drain(..end + 4 + len);
                                    break;
                                }
                            }
                        }
                        socket
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")
                            .await
                            .unwrap();
                    }
                    // Closed without notice.
                    drop(socket);
                    closing.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        (reqwest::Url::parse(&url).unwrap(), accepted, closed)
    }

    async fn post(upstream: &H1Pool) -> String {
        let (status, _, mut body) = upstream
            .post(HeaderMap::new(), Bytes::from_static(b"{}"))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::OK);
        let mut text = Vec::new();
        while let Some(chunk) = body.next().await {
            text.extend_from_slice(&chunk.unwrap());
        }
        String::from_utf8(text).unwrap()
    }

    #[tokio::test]
    async fn a_connection_read_to_the_end_is_reused() {
        let (url, accepted, _) = server(10).await;
        let upstream = H1Pool::for_url(&url).unwrap();
        for _ in 0..3 {
            assert_eq!(post(&upstream).await, "hello");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_pooled_connection_the_upstream_closed_is_replaced_unsent() {
        let (url, accepted, closed) = server(1).await;
        let upstream = H1Pool::for_url(&url).unwrap();
        assert_eq!(post(&upstream).await, "hello");
        // Wait until the server closed it (on loopback its FIN is here when `close` returns).
        while closed.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(post(&upstream).await, "hello");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_abandoned_answer_closes_its_connection() {
        let (url, accepted, _) = server(10).await;
        let upstream = H1Pool::for_url(&url).unwrap();
        let (_, _, body) = upstream
            .post(HeaderMap::new(), Bytes::from_static(b"{}"))
            .await
            .unwrap();
        drop(body);
        assert_eq!(post(&upstream).await, "hello");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_serving_thread_reuses_only_the_connections_it_opened() {
        let (url, accepted, _) = server(10).await;
        let upstream = H1Pool::for_url(&url).unwrap();
        let count = accepted.clone();
        // Two serving threads, each with its own runtime; the server runs on this one.
        let call = |upstream: &H1Pool, runtime: &tokio::runtime::Runtime| {
            assert_eq!(runtime.block_on(post(upstream)), "hello");
        };
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        tokio::task::spawn_blocking(move || {
            let (again, go) = std::sync::mpsc::channel::<()>();
            let (first, first_done) = std::sync::mpsc::channel::<()>();
            std::thread::scope(|s| {
                // Owned here, so that a failure below drops it and thread 1 stops waiting.
                let again = again;
                let upstream = &upstream;
                s.spawn(move || {
                    serving_thread(1);
                    let one = runtime();
                    call(upstream, &one);
                    first.send(()).unwrap();
                    // Its own idle connection, although thread 2 called meanwhile.
                    go.recv().unwrap();
                    call(upstream, &one);
                });
                first_done.recv().unwrap();
                s.spawn(move || {
                    serving_thread(2);
                    // Bounded, so that a call on thread 1's connection fails instead of
                    // hanging: nothing drives that connection's socket now.
                    let answer = runtime().block_on(async {
                        tokio::time::timeout(Duration::from_secs(30), post(upstream)).await
                    });
                    assert_eq!(
                        answer.expect("thread 2 waited on thread 1's connection"),
                        "hello"
                    );
                })
                .join()
                .unwrap();
                // Thread 2 opened one of its own: thread 1's socket is watched by thread
                // 1's runtime, which is not running now.
                assert_eq!(count.load(Ordering::SeqCst), 2);
                again.send(()).unwrap();
            });
        })
        .await
        .unwrap();
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn only_plain_http_without_credentials_goes_this_way() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        let plain = H1Pool::for_url(&url("http://localhost/mcp")).unwrap();
        assert_eq!(plain.address, "localhost:80");
        assert_eq!(plain.host, "localhost");
        let v6 = H1Pool::for_url(&url("http://[::1]:8080/a/b")).unwrap();
        assert_eq!(v6.address, "[::1]:8080");
        assert_eq!(v6.host, "[::1]:8080");
        assert_eq!(v6.target, "/a/b");
        assert!(H1Pool::for_url(&url("https://localhost/mcp")).is_none());
        assert!(H1Pool::for_url(&url("http://u:p@localhost/mcp")).is_none());
    }
}
