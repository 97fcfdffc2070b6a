//! The rmcp exit: `tools/call` through the upstream's rmcp client, for stdio children,
//! 2025-11-25 upstreams and tools whose names or parameters need rmcp's encodings.
//!
//! While the call runs it is registered in the upstream's [`InFlightTable`], so that what the
//! upstream sends meanwhile (see [`super::relays`]) comes back to this task and is performed
//! on the calling client; the client's cancellation becomes `notifications/cancelled`.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::failure::CallError;
use super::relays::{InFlight, InFlightTable};
use crate::client::{ClientContext, perform};

/// The rmcp client of a connected upstream, and the calls in flight on it.
#[derive(Clone, Debug)]
pub(super) struct PeerExit {
    pub(super) peer: Peer<RoleClient>,
    pub(super) inflight: Arc<InFlightTable>,
}

impl PeerExit {
    /// One `tools/call` round trip, relaying what the upstream sends meanwhile and passing on
    /// the client's cancellation. A JSON-RPC error from the upstream is [`CallError::Refused`]
    /// (it executed the request and refused it).
    pub(super) async fn call(
        &self,
        params: CallToolRequestParams,
        client: Option<&ClientContext>,
        timeout: Duration,
    ) -> Result<ServerResult, CallError> {
        // What Warden tells the upstream for this call alone (log level, the client's
        // capabilities) goes over rmcp's own `_meta` entries.
        let mut options = PeerRequestOptions::with_timeout(timeout);
        options.meta = params.meta.clone();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let (relay_tx, mut relays) = mpsc::channel(32);
        let call = InFlight {
            relay: relay_tx,
            run_id: client.map(|c| c.run_id.clone()).unwrap_or_default(),
            peer: client.map(|c| c.peer.clone()),
        };
        // In flight from before the request leaves: an upstream may ask the client something
        // before `send` even returns. Re-keyed by the request's progress token below.
        let sending = self.inflight.register_sending(call.clone());
        let handle = match self.peer.send_cancellable_request(request, options).await {
            Ok(h) => h,
            Err(e) => return Err(CallError::Unreachable(e.to_string())),
        };
        let _registration = self.inflight.register(handle.progress_token.clone(), call);
        drop(sending);
        let request_id = handle.id.clone();
        let mut response = Box::pin(handle.await_response());
        let never = CancellationToken::new();
        let cancelled = client.map_or(&never, |c| &c.cancel);
        let answer = loop {
            tokio::select! {
                answer = &mut response => break answer,
                Some(relay) = relays.recv() => perform(client, relay).await,
                () = cancelled.cancelled() => {
                    drop(response);
                    let _ = self.peer
                        .notify_cancelled(CancelledNotificationParam::new(Some(request_id), Some("cancelled by the client".into())))
                        .await;
                    return Err(CallError::Cancelled);
                }
            }
        };
        // What the upstream sent just before its answer is still the call's. rmcp hands
        // notifications to handler tasks but answers directly, so a notification sent before
        // the answer may still be on its way to `relays`: when the client follows this call's
        // progress, let those tasks run (a few yields, no sleep) before draining.
        let rounds = if client.is_some_and(|c| c.progress_token.is_some()) {
            4
        } else {
            1
        };
        for round in 0..rounds {
            if round > 0 {
                tokio::task::yield_now().await;
            }
            while let Ok(relay) = relays.try_recv() {
                perform(client, relay).await;
            }
        }
        match answer {
            Ok(result) => Ok(result),
            Err(ServiceError::McpError(e)) => Err(CallError::Refused(e)),
            Err(ServiceError::Timeout { .. }) => Err(CallError::TimedOut),
            Err(e) => Err(CallError::Unreachable(e.to_string())),
        }
    }
}
