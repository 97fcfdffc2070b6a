//! Clients subscribed to resources of one upstream, by URI and by subscriber: a 2025-11-25
//! session (`resources/subscribe`) or a 2026-07-28 `subscriptions/listen` stream. The
//! upstream is subscribed once per URI — in its own era: `resources/subscribe`, or a
//! `subscriptions/listen` stream of its own (kept here: reopened when it ends while the
//! connection lives, ended with the last subscriber) — and again on every new connection; its
//! `notifications/resources/updated` reach every subscriber in the subscriber's era.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::{ResourceUpdatedNotificationParam, ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, Subscription, SubscriptionSink};
use rmcp::{RoleClient, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::listen_stream::{self, Pacing};

/// Who hears a resource's updates.
#[derive(Clone, Debug)]
pub enum Subscriber {
    /// A 2025-11-25 session that sent `resources/subscribe`.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream (ended by its listener, which unsubscribes).
    Listen(SubscriptionSink),
}

impl Subscriber {
    fn is_closed(&self) -> bool {
        match self {
            Subscriber::Session(peer) => peer.is_transport_closed(),
            Subscriber::Listen(_) => false,
        }
    }

    /// Tells this subscriber that `params.uri` changed.
    pub(super) async fn updated(&self, params: &ResourceUpdatedNotificationParam) {
        match self {
            Subscriber::Session(peer) => {
                let _ = peer.notify_resource_updated(params.clone()).await;
            }
            Subscriber::Listen(sink) => {
                let _ = sink.notify_resource_updated(params.uri.clone()).await;
            }
        }
    }
}

/// The subscribers of one upstream's resources.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    by_uri: Mutex<HashMap<String, HashMap<String, Subscriber>>>,
    /// The upstream's own `subscriptions/listen` streams (2026-07-28 upstreams), by URI: the
    /// stream's number and what stops it.
    listens: Mutex<HashMap<String, (u64, CancellationToken)>>,
    opened: AtomicU64,
}

impl Subscriptions {
    /// Adds a subscription; `true` when it is the first for that URI.
    pub(super) fn add(&self, uri: &str, key: &str, subscriber: Subscriber) -> bool {
        let Ok(mut map) = self.by_uri.lock() else {
            return false;
        };
        let subscribers = map.entry(uri.to_owned()).or_default();
        subscribers.retain(|_, s| !s.is_closed());
        let first = subscribers.is_empty();
        subscribers.insert(key.to_owned(), subscriber);
        first
    }

    /// Removes a subscription; `true` when none is left for that URI (the upstream's own
    /// listen stream for it, if any, ends).
    pub(super) fn remove(&self, uri: &str, key: &str) -> bool {
        let Ok(mut map) = self.by_uri.lock() else {
            return false;
        };
        let Some(subscribers) = map.get_mut(uri) else {
            return false;
        };
        subscribers.remove(key);
        subscribers.retain(|_, s| !s.is_closed());
        let empty = subscribers.is_empty();
        if empty {
            map.remove(uri);
            if let Some((_, listen)) = self.listens.lock().ok().and_then(|mut l| l.remove(uri)) {
                listen.cancel();
            }
        }
        empty
    }

    /// Keeps the upstream's listen stream for `uri` (cancelled with the last subscriber), in
    /// place of any earlier one; its number.
    fn listening(&self, uri: &str, stop: CancellationToken) -> u64 {
        let number = self.opened.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut listens) = self.listens.lock()
            && let Some((_, previous)) = listens.insert(uri.to_owned(), (number, stop))
        {
            previous.cancel();
        }
        number
    }

    /// Forgets listen stream `number` for `uri`, unless another replaced it.
    fn listen_ended(&self, uri: &str, number: u64) {
        if let Ok(mut listens) = self.listens.lock()
            && listens.get(uri).is_some_and(|(n, _)| *n == number)
        {
            listens.remove(uri);
        }
    }

    /// The URIs that have live subscribers.
    pub(super) fn uris(&self) -> Vec<String> {
        let Ok(mut map) = self.by_uri.lock() else {
            return Vec::new();
        };
        map.retain(|_, subscribers| {
            subscribers.retain(|_, s| !s.is_closed());
            !subscribers.is_empty()
        });
        map.keys().cloned().collect()
    }

    /// Passes on the updates of `stream`, the upstream's listen stream for `uri` on `peer`,
    /// until the last subscriber leaves; when it ends while the connection lives, it is
    /// opened again (paced by [`Pacing`]) and the subscribers told that the resource was
    /// updated, since an update may have been missed meanwhile. A new connection subscribes
    /// anew (see `UpstreamSlot::resubscribe`).
    pub(super) fn keep_listening(
        self: &Arc<Self>,
        upstream: &str,
        peer: Peer<RoleClient>,
        uri: &str,
        stream: Subscription,
    ) {
        let stop = CancellationToken::new();
        let number = self.listening(uri, stop.clone());
        let subscriptions = self.clone();
        let upstream = upstream.to_owned();
        let uri = uri.to_owned();
        tokio::spawn(async move {
            let mut stream = Some((stream, Instant::now()));
            let mut pacing = Pacing::default();
            loop {
                let lasted = match stream.take() {
                    Some((mut open, opened)) => {
                        subscriptions.pass_on(&mut open, &stop).await;
                        Some(opened.elapsed())
                    }
                    None => None,
                };
                let wanted = subscriptions
                    .by_uri
                    .lock()
                    .is_ok_and(|m| m.contains_key(&uri));
                if stop.is_cancelled() || peer.is_transport_closed() || !wanted {
                    break;
                }
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(pacing.pause(lasted)) => {}
                }
                let filter = SubscriptionFilter::builder()
                    .resource_subscriptions(vec![uri.clone()])
                    .build();
                match listen_stream::open(&peer, filter).await {
                    Ok(open) => {
                        stream = Some((open, Instant::now()));
                        // An update may have come while there was no stream: subscribers
                        // read the resource again.
                        subscriptions
                            .updated(&ResourceUpdatedNotificationParam::new(uri.clone()))
                            .await;
                    }
                    Err(e) => {
                        tracing::debug!(upstream = %upstream, uri = %uri, error = %e, "resource subscription not reopened yet");
                    }
                }
            }
            subscriptions.listen_ended(&uri, number);
        });
    }

    /// Passes on the updates of one listen stream until it ends or `stop`.
    async fn pass_on(&self, stream: &mut Subscription, stop: &CancellationToken) {
        loop {
            let next = tokio::select! {
                () = stop.cancelled() => return,
                next = stream.next() => next,
            };
            match next {
                Ok(Some(ServerNotification::ResourceUpdatedNotification(n))) => {
                    self.updated(&n.params).await;
                }
                Ok(Some(_)) => {}
                Ok(None) => return,
                Err(e) => {
                    tracing::debug!(error = %e, "resource subscription ended");
                    return;
                }
            }
        }
    }

    /// The live subscribers of `uri`.
    pub(super) fn subscribers(&self, uri: &str) -> Vec<Subscriber> {
        self.by_uri
            .lock()
            .ok()
            .and_then(|m| m.get(uri).map(|s| s.values().cloned().collect::<Vec<_>>()))
            .unwrap_or_default()
            .into_iter()
            .filter(|s| !s.is_closed())
            .collect()
    }

    /// Tells every subscriber of `params.uri`.
    pub(super) async fn updated(&self, params: &ResourceUpdatedNotificationParam) {
        for subscriber in self.subscribers(&params.uri) {
            subscriber.updated(params).await;
        }
    }
}
