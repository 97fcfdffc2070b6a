//! A 2026-07-28 upstream's list changes (FED-2). In 2026-07-28 a server announces them only on
//! a `subscriptions/listen` stream (there is no session to send them on), so the supervisor
//! keeps one open for the lists the upstream says change (`listChanged`), refreshes the offer
//! at each announcement, and reopens the stream when it ends (paced by
//! [`crate::listen_stream`]) — refreshing then too, since changes may have been missed meanwhile. The supervisor's periodic refresh stays the
//! fallback. A 2025-11-25 upstream announces on its session (see [`super::relays`]).

use std::future::Future;
use std::pin::Pin;

use rmcp::RoleClient;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, Subscription};
use tokio::time::Instant;
use warden_core::name::Name;

use super::failure::short;
use crate::listen_stream::{self, Pacing};

/// An attempt to open the stream, kept across cancellations of [`ListWatch::changed`].
type Opening = Pin<Box<dyn Future<Output = Result<Subscription, String>> + Send>>;

/// The list-change stream of one connection.
pub(super) struct ListWatch {
    upstream: Name,
    peer: Peer<RoleClient>,
    /// What is asked for; `None` when there is nothing to listen to (a 2025-11-25 upstream, or
    /// one that announces no list changes).
    filter: Option<SubscriptionFilter>,
    /// The open stream and when it opened.
    stream: Option<(Subscription, Instant)>,
    /// An attempt to open it under way.
    opening: Option<Opening>,
    /// When to try to open a stream again, and the pauses between tries.
    retry_at: Instant,
    pacing: Pacing,
}

impl ListWatch {
    /// Opens the stream of `peer` — when it was reached in 2026-07-28 (`modern`) — for the
    /// lists it announces changes of.
    pub(super) async fn open(upstream: &Name, peer: &Peer<RoleClient>, modern: bool) -> Self {
        let capabilities = peer.peer_info().map(|i| i.capabilities.clone());
        let announces = |changes: Option<bool>| changes == Some(true);
        let filter = capabilities.filter(|_| modern).and_then(|c| {
            let tools = announces(c.tools.as_ref().and_then(|t| t.list_changed));
            let prompts = announces(c.prompts.as_ref().and_then(|p| p.list_changed));
            let resources = announces(c.resources.as_ref().and_then(|r| r.list_changed));
            let mut filter = SubscriptionFilter::new();
            filter.tools_list_changed = tools.then_some(true);
            filter.prompts_list_changed = prompts.then_some(true);
            filter.resources_list_changed = resources.then_some(true);
            (tools || prompts || resources).then_some(filter)
        });
        let mut watch = Self {
            upstream: upstream.clone(),
            peer: peer.clone(),
            filter,
            stream: None,
            opening: None,
            retry_at: Instant::now(),
            pacing: Pacing::default(),
        };
        if let Some(filter) = watch.filter.clone() {
            let opened = listen_stream::open(peer, filter).await;
            watch.opened(opened);
        }
        watch
    }

    /// Keeps the stream that opened, or sets when to try again; `true` when it opened.
    fn opened(&mut self, opened: Result<Subscription, String>) -> bool {
        match opened {
            Ok(stream) => {
                self.stream = Some((stream, Instant::now()));
                true
            }
            Err(e) => {
                tracing::debug!(upstream = %self.upstream, error = %short(&e), "no list-change stream");
                self.retry_at = Instant::now() + self.pacing.pause(None);
                false
            }
        }
    }

    /// Waits until the upstream announces that a list changed, or a stream that had ended
    /// was opened again; forever when there is nothing to listen to. Cancel-safe: an attempt
    /// to open the stream goes on at the next call.
    pub(super) async fn changed(&mut self) {
        loop {
            if let Some((stream, opened)) = self.stream.as_mut() {
                match stream.next().await {
                    Ok(Some(
                        ServerNotification::ToolListChangedNotification(_)
                        | ServerNotification::PromptListChangedNotification(_)
                        | ServerNotification::ResourceListChangedNotification(_),
                    )) => return,
                    Ok(Some(_)) => continue,
                    Ok(None) | Err(_) => {
                        tracing::debug!(upstream = %self.upstream, end = ?stream.end(), "list-change stream ended");
                        let lasted = opened.elapsed();
                        self.stream = None;
                        self.retry_at = Instant::now() + self.pacing.pause(Some(lasted));
                    }
                }
            }
            let Some(filter) = self.filter.clone() else {
                return std::future::pending().await;
            };
            let opening = match &mut self.opening {
                Some(opening) => opening,
                None => {
                    tokio::time::sleep_until(self.retry_at).await;
                    let peer = self.peer.clone();
                    self.opening.insert(Box::pin(async move {
                        listen_stream::open(&peer, filter).await
                    }))
                }
            };
            let opened = opening.await;
            self.opening = None;
            if self.opened(opened) {
                return;
            }
        }
    }
}
