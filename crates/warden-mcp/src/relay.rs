//! Per-call routing of server-to-client traffic (XPORT-4): what an upstream sends while one
//! of our calls runs — progress, log messages, elicitation and sampling requests — reaches the
//! client whose call caused it, and a client's cancellation reaches the upstream.
//!
//! The downstream side of a call (the client's peer, its progress token, its cancellation)
//! travels with the call as a task-local, set by the MCP handler around the governed call; the
//! upstream side registers the call's progress token while it runs. Relays are performed by the
//! call's own task, so that on Streamable HTTP they ride the stream of the request that caused
//! them.

// Sampling and logging are deprecated for the 2026 protocol but still part of 2025-11-25,
// which most clients and servers speak.
#![allow(deprecated, reason = "relaying 2025-11-25 sampling and logging")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::Peer;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    /// The client side of the call being executed.
    pub static DOWNSTREAM: Downstream;
}

/// The client side of one call.
#[derive(Clone, Debug)]
pub struct Downstream {
    /// The client.
    pub peer: Peer<RoleServer>,
    /// The client's progress token for this call, if it asked for progress.
    pub progress_token: Option<ProgressToken>,
    /// Fires when the client cancels the call.
    pub cancel: CancellationToken,
    /// The run, for the audit trail of relays.
    pub run_id: String,
}

/// Something an upstream sends during a call, for the calling client.
#[derive(Debug)]
pub enum Relay {
    /// `notifications/progress`.
    Progress(ProgressNotificationParam),
    /// `notifications/message`.
    Log(LoggingMessageNotificationParam),
    /// `elicitation/create`.
    Elicit(
        ElicitRequestParams,
        oneshot::Sender<Result<ElicitResult, rmcp::ErrorData>>,
    ),
    /// `sampling/createMessage`.
    Sample(
        Box<CreateMessageRequestParams>,
        oneshot::Sender<Result<CreateMessageResult, rmcp::ErrorData>>,
    ),
}

/// A call in flight at an upstream.
#[derive(Debug)]
pub struct InFlight {
    /// Where relays for this call go.
    pub relay: mpsc::Sender<Relay>,
    /// The run, for the audit trail.
    pub run_id: String,
}

/// The calls in flight at one upstream, by the progress token the upstream knows them by.
#[derive(Debug, Default)]
pub struct InFlightTable {
    calls: Mutex<HashMap<ProgressToken, Arc<InFlight>>>,
}

/// Removes a call from the table when it ends, however it ends.
#[derive(Debug)]
pub struct Registration {
    table: Arc<InFlightTable>,
    token: ProgressToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.table.calls.lock() {
            calls.remove(&self.token);
        }
    }
}

impl InFlightTable {
    /// Registers a call under its upstream progress token.
    pub fn register(self: &Arc<Self>, token: ProgressToken, call: InFlight) -> Registration {
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(token.clone(), Arc::new(call));
        }
        Registration {
            table: self.clone(),
            token,
        }
    }

    /// The call a progress token belongs to.
    pub fn by_token(&self, token: &ProgressToken) -> Option<Arc<InFlight>> {
        self.calls.lock().ok().and_then(|c| c.get(token).cloned())
    }

    /// Every call in flight.
    pub fn all(&self) -> Vec<Arc<InFlight>> {
        self.calls
            .lock()
            .map(|c| c.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// Performs a relay on the client side of the call (in the call's own task).
pub async fn perform(downstream: Option<&Downstream>, relay: Relay) {
    match relay {
        Relay::Progress(mut p) => {
            if let Some(d) = downstream
                && let Some(token) = &d.progress_token
            {
                p.progress_token = token.clone();
                let _ = d.peer.notify_progress(p).await;
            }
        }
        Relay::Log(l) => {
            if let Some(d) = downstream {
                let _ = d.peer.notify_logging_message(l).await;
            }
        }
        Relay::Elicit(params, reply) => {
            let answer = match downstream {
                Some(d) => d.peer.create_elicitation(params).await.map_err(|e| {
                    rmcp::ErrorData::internal_error(
                        format!("the client did not answer the elicitation: {e}"),
                        None,
                    )
                }),
                None => Err(rmcp::ErrorData::internal_error("no client to ask", None)),
            };
            let _ = reply.send(answer);
        }
        Relay::Sample(params, reply) => {
            let answer = match downstream {
                Some(d) => d.peer.create_message(*params).await.map_err(|e| {
                    rmcp::ErrorData::internal_error(
                        format!("the client did not answer the sampling request: {e}"),
                        None,
                    )
                }),
                None => Err(rmcp::ErrorData::internal_error("no client to ask", None)),
            };
            let _ = reply.send(answer);
        }
    }
}
