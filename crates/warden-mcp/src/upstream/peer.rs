//! The rmcp exit: `tools/call` (and `prompts/get`) through the upstream's rmcp client, for
//! stdio children, 2025-11-25 upstreams and tools whose names or parameters need rmcp's
//! encodings.
//!
//! While the request runs it is registered in the upstream's [`InFlightTable`], so that what
//! the upstream sends meanwhile (see [`super::relays`]) comes back to this task and is
//! performed on the calling client; the client's cancellation becomes
//! `notifications/cancelled`. A question for a 2026-07-28 client, which takes no requests,
//! suspends the request instead ([`super::suspend`]).

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{CancelledNotificationParam, ClientRequest, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::failure::CallError;
use super::relays::{InFlight, InFlightTable};
use super::suspend::{InFlightRequest, Owner, Suspensions, failed};
use crate::client::{ClientContext, perform};
use crate::era::Era;
use crate::http_client::request_failure;

/// The rmcp client of a connected upstream, the calls in flight on it and those suspended
/// for a client's answers.
#[derive(Clone, Debug)]
pub(super) struct PeerExit {
    pub(super) peer: Peer<RoleClient>,
    pub(super) inflight: Arc<InFlightTable>,
    pub(super) suspended: Arc<Suspensions>,
}

impl PeerExit {
    /// One request round trip (`tools/call`, `prompts/get`, `resources/read`,
    /// `completion/complete`), relaying what the upstream sends meanwhile and passing on the
    /// client's cancellation. A JSON-RPC error from the upstream is [`CallError::Refused`] (it
    /// executed the request and refused it). `owner` names the request, for a suspension; a
    /// request without one cannot be suspended, and what the upstream asks a 2026-07-28 client
    /// during it is refused.
    pub(super) async fn request(
        &self,
        request: ClientRequest,
        options: PeerRequestOptions,
        client: Option<&ClientContext>,
        owner: Option<impl FnOnce() -> Owner>,
    ) -> Result<ServerResult, CallError> {
        let (relay_tx, mut relays) = mpsc::channel(32);
        let call = InFlight {
            relay: relay_tx,
            run_id: client.map(|c| c.run_id.clone()).unwrap_or_default(),
            peer: client.map(|c| c.peer.clone()),
            request: None,
        };
        // In flight from before the request leaves: an upstream may ask the client something
        // before `send` even returns. Re-keyed by the request's progress token below.
        let sending = self.inflight.register_sending(call.clone());
        let handle = match self.peer.send_cancellable_request(request, options).await {
            Ok(h) => h,
            Err(e) => return Err(CallError::Unreachable(request_failure(&e))),
        };
        let call = InFlight {
            request: Some(handle.id.clone()),
            ..call
        };
        let registration = self.inflight.register(handle.progress_token.clone(), call);
        drop(sending);
        let request_id = handle.id.clone();
        let mut response: super::suspend::Response = Box::pin(handle.await_response());
        let never = CancellationToken::new();
        let cancelled = client.map_or(&never, |c| &c.cancel);
        let answer = loop {
            tokio::select! {
                // A cancelled call stays cancelled, even when the upstream's answer is in too
                // (as when the question the client was asked is answered with the
                // cancellation and the upstream finishes at once).
                biased;
                () = cancelled.cancelled() => {
                    drop(response);
                    let _ = self.peer
                        .notify_cancelled(CancelledNotificationParam::new(Some(request_id), Some("cancelled by the client".into())))
                        .await;
                    return Err(CallError::Cancelled);
                }
                answer = &mut response => break answer,
                Some(relay) = relays.recv() => match client {
                    // A 2026-07-28 client is asked by `input_required`: the request goes on
                    // without this task.
                    Some(c) if c.era == Era::V2026_07_28 && relay.needs().is_some() => {
                        let Some(owner) = owner else {
                            relay.refuse(rmcp::ErrorData::invalid_request(
                                "the calling client cannot be asked during this request",
                                None,
                            ));
                            continue;
                        };
                        let request = InFlightRequest {
                            response,
                            relays,
                            _registration: registration,
                            peer: self.peer.clone(),
                            id: request_id,
                        };
                        return self.suspended.suspend(request, relay, owner(), c).await;
                    }
                    _ => perform(client, relay).await,
                },
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
        drop(registration);
        answer.map_err(failed)
    }
}
