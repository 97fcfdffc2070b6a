//! Client sessions subscribed to resources of one upstream (2025-11-25
//! `resources/subscribe`), by URI and by session: the upstream is subscribed once per URI,
//! and its `notifications/resources/updated` reach every subscribed session.

use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::RoleServer;
use rmcp::service::Peer;

/// The subscribers of one upstream's resources.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    by_uri: Mutex<HashMap<String, HashMap<String, Peer<RoleServer>>>>,
}

impl Subscriptions {
    /// Adds a session's subscription; `true` when it is the first for that URI.
    pub(super) fn add(&self, uri: &str, session: &str, peer: Peer<RoleServer>) -> bool {
        let Ok(mut map) = self.by_uri.lock() else {
            return false;
        };
        let subscribers = map.entry(uri.to_owned()).or_default();
        subscribers.retain(|_, p| !p.is_transport_closed());
        let first = subscribers.is_empty();
        subscribers.insert(session.to_owned(), peer);
        first
    }

    /// Removes a session's subscription; `true` when none is left for that URI.
    pub(super) fn remove(&self, uri: &str, session: &str) -> bool {
        let Ok(mut map) = self.by_uri.lock() else {
            return false;
        };
        let Some(subscribers) = map.get_mut(uri) else {
            return false;
        };
        subscribers.remove(session);
        subscribers.retain(|_, p| !p.is_transport_closed());
        let empty = subscribers.is_empty();
        if empty {
            map.remove(uri);
        }
        empty
    }

    /// The live sessions subscribed to `uri`.
    pub(super) fn subscribers(&self, uri: &str) -> Vec<Peer<RoleServer>> {
        self.by_uri
            .lock()
            .ok()
            .and_then(|m| m.get(uri).map(|s| s.values().cloned().collect::<Vec<_>>()))
            .unwrap_or_default()
            .into_iter()
            .filter(|p| !p.is_transport_closed())
            .collect()
    }
}
