//! `warden bench forward`: a bare TCP forwarder, bytes copied both ways and nothing parsed, with
//! Warden's threading (a thread per core, each a single-threaded runtime accepting on its own
//! `SO_REUSEPORT` socket). In front of `warden bench upstream`, measured with
//! `warden bench --direct`, it shows what any proxy costs on a machine before it reads a byte
//! of HTTP: the floor under PERF-1 and PERF-2 (docs/benchmarks.md).

use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A running forwarder; [`Forwarder::stop`] ends it.
#[derive(Debug)]
pub struct Forwarder {
    addr: SocketAddr,
    threads: Vec<JoinHandle<()>>,
    shutdown: CancellationToken,
}

impl Forwarder {
    /// Listens on `listen` (port 0 picks one) on `threads` threads (one off Linux, where
    /// sockets cannot share a port) and forwards every connection to `to`. Call it within a Tokio
    /// runtime: the sockets are made there, then each thread serves its own with a runtime of
    /// its own. Dropped, it stops as [`Forwarder::stop`] does, without waiting for the threads.
    pub async fn start(listen: SocketAddr, to: SocketAddr, threads: usize) -> anyhow::Result<Self> {
        let threads = if cfg!(target_os = "linux") {
            threads
        } else {
            1
        };
        // Warden's own listening sockets: a port already in use fails, even when its holder
        // shares it with SO_REUSEPORT (a running forwarder or Warden of this user).
        let first = warden_server::listen(listen)
            .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
        let addr = first.local_addr()?;
        let mut sockets = vec![first.into_std()?];
        for _ in 1..threads.max(1) {
            let more = warden_server::reuse_port(addr)
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr} again: {e}"))?;
            sockets.push(more.into_std()?);
        }
        let shutdown = CancellationToken::new();
        let mut handles = Vec::with_capacity(sockets.len());
        for (index, socket) in sockets.into_iter().enumerate() {
            let stop = shutdown.clone();
            let handle = std::thread::Builder::new()
                .name(format!("warden-forwarder-{index}"))
                .spawn(move || forwarder_thread(socket, to, &stop));
            match handle {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    Self {
                        addr,
                        threads: handles,
                        shutdown,
                    }
                    .stop();
                    anyhow::bail!("cannot start forwarder thread {index}: {e}");
                }
            }
        }
        Ok(Self {
            addr,
            threads: handles,
            shutdown,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, drops every forwarded connection and waits for the threads.
    pub fn stop(mut self) {
        self.shutdown.cancel();
        for thread in std::mem::take(&mut self.threads) {
            let _ = thread.join();
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn forwarder_thread(socket: std::net::TcpListener, to: SocketAddr, stop: &CancellationToken) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "forwarder: cannot start a runtime");
            return;
        }
    };
    // Ending `block_on` and dropping the runtime drops the connections' tasks.
    runtime.block_on(async {
        let listener = match TcpListener::from_std(socket) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!(error = %e, "forwarder: cannot use the listening socket");
                return;
            }
        };
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((client, _)) => {
                        tokio::spawn(forward(client, to));
                    }
                    Err(e) => {
                        // Out of file descriptors, typically: wait rather than spin.
                        tracing::warn!(error = %e, "forwarder: accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
            }
        }
    });
}

async fn forward(mut client: TcpStream, to: SocketAddr) {
    let _ = client.set_nodelay(true);
    let mut upstream = match TcpStream::connect(to).await {
        Ok(upstream) => upstream,
        Err(e) => {
            tracing::warn!(%to, error = %e, "forwarder: cannot connect to the upstream");
            return;
        }
    };
    let _ = upstream.set_nodelay(true);
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}
