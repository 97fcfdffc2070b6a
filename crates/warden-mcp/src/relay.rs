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
    /// The client speaks 2026-07-28 (stateless): it takes `input_required` results and cannot
    /// be sent server-to-client requests.
    pub stateless: bool,
    /// The client's answers to an earlier `input_required` result (2026-07-28 retry).
    pub retry: Option<Retry>,
}

/// A 2026-07-28 retry of a call that needed input: the client's answers and the upstream's
/// opaque state, passed to the upstream as they came.
#[derive(Clone, Debug)]
pub struct Retry {
    /// `inputResponses`.
    pub input_responses: rmcp::model::InputResponses,
    /// `requestState`.
    pub request_state: Option<String>,
}

/// Records a relay (or its refusal) in the audit trail of the run it belongs to.
pub async fn record(
    store: Option<&Arc<warden_store::Store>>,
    upstream: &str,
    run_id: &str,
    what: &str,
    relayed: bool,
    detail: &str,
) {
    let Some(store) = store else { return };
    let record = warden_core::audit::NewRecord {
        at: warden_core::pipeline::Clock::now(&crate::gateway::SystemClock),
        kind: warden_core::audit::RecordKind::Relay,
        run_id: if run_id.is_empty() {
            "relay".into()
        } else {
            run_id.to_owned()
        },
        call_id: None,
        principal: None,
        agent: None,
        tool: Some(what.to_owned()),
        decision: Some(if relayed { "relayed" } else { "refused" }.into()),
        code: None,
        payload: warden_core::audit::canonical_json(&serde_json::json!({
            "upstream": upstream,
            "request": what,
            "relayed": relayed,
            "detail": detail,
        })),
    };
    if let Err(e) = store.append_audit(vec![record]).await {
        tracing::error!(upstream, error = %e, "cannot record a relay");
    }
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
#[derive(Clone, Debug)]
pub struct InFlight {
    /// Where relays for this call go.
    pub relay: mpsc::Sender<Relay>,
    /// The run, for the audit trail.
    pub run_id: String,
    /// The calling client, for notifications that arrive just after the call ended.
    pub peer: Option<Peer<RoleServer>>,
}

/// The calls in flight at one upstream, by the progress token the upstream knows them by.
#[derive(Debug, Default)]
pub struct InFlightTable {
    calls: Mutex<HashMap<ProgressToken, Arc<InFlight>>>,
    /// The call that ended last, when it was the only one in flight, and when it ended.
    last: Mutex<Option<(std::time::Instant, Arc<InFlight>)>>,
}

/// The prefix of the temporary key a call is registered under while its request is sent.
pub const SENDING_PREFIX: &str = "warden-sending-";

fn is_sending_key(token: &ProgressToken) -> bool {
    matches!(&token.0, rmcp::model::NumberOrString::String(s) if s.starts_with(SENDING_PREFIX))
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
            let ended = calls.remove(&self.token);
            let alone = calls.is_empty();
            if let Ok(mut last) = self.table.last.lock() {
                *last = ended
                    .filter(|_| alone)
                    .map(|c| (std::time::Instant::now(), c));
            }
        }
    }
}

impl InFlightTable {
    /// Registers a call under its upstream progress token.
    pub fn register(self: &Arc<Self>, token: ProgressToken, call: InFlight) -> Registration {
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(token.clone(), Arc::new(call));
        }
        if let Ok(mut last) = self.last.lock() {
            *last = None;
        }
        Registration {
            table: self.clone(),
            token,
        }
    }

    /// The call a progress token belongs to; or, for a token not registered yet, the one call
    /// in flight whose request is still being sent. An upstream may report progress before
    /// the send returns the token the call is re-keyed under (measured: with pooled
    /// connections the first notification often wins that race); while that call is the only
    /// one in flight, the notification can only be its.
    pub fn by_token_or_sending(&self, token: &ProgressToken) -> Option<Arc<InFlight>> {
        let calls = self.calls.lock().ok()?;
        if let Some(call) = calls.get(token) {
            return Some(call.clone());
        }
        let mut entries = calls.iter();
        match (entries.next(), entries.next()) {
            (Some((key, call)), None) if is_sending_key(key) => Some(call.clone()),
            _ => None,
        }
    }

    /// The call that just ended (within `window`), when it was the only one in flight and
    /// none has started since: where a notification the upstream sent at the very end of the
    /// call, on another stream than the result, belongs.
    pub fn just_ended(&self, window: std::time::Duration) -> Option<Arc<InFlight>> {
        if self.calls.lock().map_or(true, |c| !c.is_empty()) {
            return None;
        }
        let last = self.last.lock().ok()?;
        last.as_ref()
            .filter(|(at, _)| at.elapsed() <= window)
            .map(|(_, c)| c.clone())
    }

    /// Every call in flight (once, also while it is registered under two tokens).
    pub fn all(&self) -> Vec<Arc<InFlight>> {
        let mut calls: Vec<Arc<InFlight>> = Vec::new();
        if let Ok(c) = self.calls.lock() {
            for call in c.values() {
                if !calls.iter().any(|k| k.relay.same_channel(&call.relay)) {
                    calls.push(call.clone());
                }
            }
        }
        calls
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
