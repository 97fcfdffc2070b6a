//! Clients subscribed to resources of one upstream, by URI and by subscriber: a 2025-11-25
//! session (`resources/subscribe`) or a 2026-07-28 `subscriptions/listen` stream. The
//! upstream is subscribed once per URI — in its own era: `resources/subscribe`, or a
//! `subscriptions/listen` stream of its own (kept here, ended with the last subscriber) — and
//! its `notifications/resources/updated` reach every subscriber in the subscriber's era.

use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};
use tokio_util::sync::CancellationToken;

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
    /// The upstream's own `subscriptions/listen` streams (2026-07-28 upstreams), by URI.
    listens: Mutex<HashMap<String, CancellationToken>>,
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
            if let Some(listen) = self.listens.lock().ok().and_then(|mut l| l.remove(uri)) {
                listen.cancel();
            }
        }
        empty
    }

    /// Keeps the upstream's listen stream for `uri` (cancelled with the last subscriber).
    pub(super) fn listening(&self, uri: &str, stop: CancellationToken) {
        if let Ok(mut listens) = self.listens.lock()
            && let Some(previous) = listens.insert(uri.to_owned(), stop)
        {
            previous.cancel();
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
