//! A call's progress and log messages, delivered by the transport in the order the upstream
//! sent them, before the call's answer (XPORT-4, REL-1).
//!
//! rmcp hands each notification it receives to a task of its own, and an answer straight to
//! the waiting call: a progress notification sent just before the answer could reach the
//! call after it — and be dropped, the call having ended (one in a few hundred conformance
//! runs on a busy machine lost the last of three). A flood also grew without bound, read as
//! fast as the upstream wrote. So the transport itself puts a call's progress (by its token)
//! and log messages (the one call in flight) on that call's bounded relay queue, as it reads
//! them, and reads the next message only once the queue took it: everything before the
//! answer is on the queue before the answer is read, and a slow client slows the upstream
//! rather than filling memory. A relay queue a call stops taking from for [`RELAY_STALL`] (one
//! suspended for a 2026-07-28 client's answer) gets no more: the message is dropped, counted
//! and logged, so that the upstream's other calls are not held forever.
//!
//! [`Delivery`] is that routing, which the stdio transport does; [`Routed`] wraps any other
//! transport (rmcp's Streamable HTTP client) with it.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::ServerNotification;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use warden_core::name::Name;

use super::relays::{InFlight, InFlightTable};
use crate::client::Relay;

/// How long a call's relay queue may stay full before a message for it is dropped.
pub(super) const RELAY_STALL: Duration = Duration::from_secs(10);

/// Routes an upstream's messages: a call's progress and log messages to the call, the rest
/// to rmcp.
#[derive(Debug)]
pub(super) struct Delivery {
    upstream: Name,
    inflight: Arc<InFlightTable>,
    /// A message read and routed to its call, not yet on the call's queue. rmcp drops a
    /// `receive` that is waiting when something else happens, and calls it again: the message
    /// waits here rather than being lost (one in 50,000 of a flood was).
    pending: Option<(Arc<InFlight>, Relay)>,
}

impl Delivery {
    /// Routing for upstream `upstream`, to the calls of `inflight`.
    pub(super) fn new(upstream: Name, inflight: Arc<InFlightTable>) -> Self {
        Self {
            upstream,
            inflight,
            pending: None,
        }
    }

    /// A message for rmcp, or `None` when it is a call's, for [`Delivery::deliver_pending`]
    /// to put on the call's queue.
    pub(super) fn route(
        &mut self,
        message: RxJsonRpcMessage<RoleClient>,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        let rmcp::model::JsonRpcMessage::Notification(n) = &message else {
            return Some(message);
        };
        let (call, relay) = match &n.notification {
            ServerNotification::ProgressNotification(p) => (
                self.inflight.by_token_or_sending(&p.params.progress_token),
                Relay::Progress(p.params.clone()),
            ),
            ServerNotification::LoggingMessageNotification(l) => {
                (self.inflight.only(), Relay::Log(l.params.clone()))
            }
            _ => return Some(message),
        };
        // Not a call's: rmcp's handler does what is done with it (a log message just after a
        // call, or of no single call).
        let Some(call) = call else {
            return Some(message);
        };
        self.pending = Some((call, relay));
        None
    }

    /// Puts the pending message on its call's queue, waiting while the queue is full (the
    /// upstream waits with it). Cancel-safe: dropped while waiting, the message stays pending.
    pub(super) async fn deliver_pending(&mut self) {
        let Some((call, _)) = &self.pending else {
            return;
        };
        let call = call.clone();
        match tokio::time::timeout(RELAY_STALL, call.relay.reserve()).await {
            Ok(Ok(permit)) => {
                if let Some((_, relay)) = self.pending.take() {
                    permit.send(relay);
                }
            }
            // The call ended: nobody to give it to.
            Ok(Err(_)) => self.pending = None,
            Err(_) => {
                self.pending = None;
                metrics::counter!("warden_upstream_relays_dropped_total", "upstream" => self.upstream.to_string())
                    .increment(1);
                tracing::warn!(
                    upstream = %self.upstream,
                    run = %call.run_id,
                    "a progress or log message of the upstream was dropped: its call took none for {}s",
                    RELAY_STALL.as_secs()
                );
            }
        }
    }
}

/// A transport whose calls' progress and log messages are delivered by [`Delivery`].
#[derive(Debug)]
pub(super) struct Routed<T> {
    inner: T,
    delivery: Delivery,
}

impl<T> Routed<T> {
    /// `inner`, routed to the calls of `inflight`.
    pub(super) fn new(inner: T, upstream: Name, inflight: Arc<InFlightTable>) -> Self {
        Self {
            inner,
            delivery: Delivery::new(upstream, inflight),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Routed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            self.delivery.deliver_pending().await;
            let message = self.inner.receive().await?;
            if let Some(message) = self.delivery.route(message) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
