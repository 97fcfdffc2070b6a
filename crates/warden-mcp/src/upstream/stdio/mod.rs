//! A stdio upstream (FED-1): the child process, its environment (secrets resolved), its stderr
//! (`stderr.rs`), and the transport rmcp's client talks to it through.
//!
//! The transport is Warden's own rather than rmcp's `TokioChildProcess`, for two things an
//! upstream that misbehaves showed that one cannot do:
//!
//! - **A call's progress and log messages go to the call in order, and the child waits for
//!   them** (`delivery.rs`). rmcp hands each notification to a task of its own, read as fast
//!   as the child writes: a flood of 1,000,000 progress notifications to a slow client held
//!   3.8 GB, and messages arrived out of order or not at all (32,657 of 100,000). Here the
//!   pipe fills and the child's writes block while a call's queue is full, as an HTTP
//!   upstream's stream waits for a slow client.
//! - **An answer too large is refused at once, with the reason.** rmcp dropped a line over
//!   16 MiB and the call waited out its timeout; here the line's `id` is picked out as it goes
//!   by (`lines.rs`) and the request is answered with an error that names the upstream, the
//!   size and the limit.
//!
//! Everything else — writing requests, the child's lifecycle (stdin closed, then `SIGTERM`,
//! then `SIGKILL`, as the MCP specification describes) — is as rmcp does it.

mod lines;
mod stderr;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::AsyncWriteExt as _;
use tokio::process::{ChildStdin, ChildStdout};
use warden_core::config::StdioSpec;
use warden_core::name::Name;

use super::delivery::Delivery;
use super::relays::InFlightTable;
use warden_runtime::Secrets;

pub(crate) use lines::MAX_MESSAGE;

/// The key in an error's `data` that marks the transport's answer to a message too large:
/// the call failed at Warden, the upstream did not refuse it (`suspend::failed`).
pub(super) const TOO_LARGE: &str = "warden/messageTooLarge";

/// How long a child has to exit after its stdin is closed, and again after `SIGTERM`.
const EXIT_WAIT: Duration = Duration::from_secs(3);
/// `SIGTERM` (the same number on every Unix).
#[cfg(unix)]
const SIGTERM: i32 = 15;

/// Starts the child of upstream `name`; its progress and log messages go to the calls of
/// `inflight`.
pub(super) fn spawn(
    name: &Name,
    stdio: &StdioSpec,
    secrets: &Secrets,
    inflight: Arc<InFlightTable>,
) -> Result<StdioTransport, String> {
    let mut cmd = tokio::process::Command::new(&stdio.command);
    cmd.args(&stdio.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in &stdio.env {
        cmd.env(k, secrets.resolve(v)?);
    }
    if let Some(cwd) = &stdio.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = CommandWrap::from(cmd)
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", stdio.command))?;
    let taken = (
        child.stdin().take(),
        child.stdout().take(),
        child.stderr().take(),
    );
    let (Some(stdin), Some(stdout), stderr) = taken else {
        return Err(format!("cannot start `{}`: no pipes to it", stdio.command));
    };
    if let Some(stderr) = stderr {
        tokio::spawn(stderr::log(name.clone(), stderr));
    }
    Ok(StdioTransport {
        upstream: name.clone(),
        child: Some(child),
        stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
        stdout: lines::Lines::new(tokio::io::BufReader::new(stdout), MAX_MESSAGE),
        delivery: Delivery::new(name.clone(), inflight),
    })
}

/// rmcp's transport to a child process (see the module documentation).
pub(super) struct StdioTransport {
    upstream: Name,
    child: Option<Box<dyn ChildWrapper>>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    stdout: lines::Lines<tokio::io::BufReader<ChildStdout>>,
    delivery: Delivery,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// The answer to request `id` whose message was too large to take.
    fn too_large(
        &self,
        bytes: usize,
        id: serde_json::Value,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = format!(
            "upstream `{}` answered with a message of {bytes} bytes, more than the {} bytes Warden takes from an upstream",
            self.upstream, MAX_MESSAGE
        );
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": -32603, "message": message, "data": { TOO_LARGE: true } },
        }))
        .ok()
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        // Closing stdin is the child's signal to exit.
        drop(self.stdin.lock().await.take());
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok() {
            return Ok(());
        }
        #[cfg(unix)]
        if child.signal(SIGTERM).is_ok()
            && tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok()
        {
            return Ok(());
        }
        Box::into_pin(child.kill()).await
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the upstream's stdin is closed",
                ));
            };
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            self.delivery.deliver_pending().await;
            match self.stdout.next().await? {
                lines::Line::Whole(line) => {
                    let Ok(message) = serde_json::from_slice(&line) else {
                        // Not JSON-RPC: a server that prints on stdout. Ignored, as rmcp does.
                        tracing::debug!(upstream = %self.upstream, bytes = line.len(), "a line of the upstream's stdout that is no JSON-RPC message was ignored");
                        continue;
                    };
                    if let Some(message) = self.delivery.route(message) {
                        return Some(message);
                    }
                }
                lines::Line::TooLong { bytes, id } => {
                    metrics::counter!("warden_upstream_messages_too_large_total", "upstream" => self.upstream.to_string())
                        .increment(1);
                    tracing::warn!(upstream = %self.upstream, bytes, limit = MAX_MESSAGE, id = ?id, "an upstream message larger than the limit was refused");
                    if let Some(answer) = id.and_then(|id| self.too_large(bytes, id)) {
                        return Some(answer);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.shutdown().await
    }
}
