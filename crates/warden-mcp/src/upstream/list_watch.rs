//! A 2026-07-28 upstream's list changes (FED-2). In 2026-07-28 a server announces them only on
//! a `subscriptions/listen` stream (there is no session to send them on), so the supervisor
//! keeps one open for the lists the upstream says change (`listChanged`), refreshes the offer
//! at each announcement, and reopens the stream when it ends — refreshing then too, since
//! changes may have been missed meanwhile. The supervisor's periodic refresh stays the
//! fallback. A 2025-11-25 upstream announces on its session (see [`super::relays`]).

use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, Subscription};
use tokio::time::Instant;
use warden_core::name::Name;

use super::failure::short;
use super::slot::LIST_TIMEOUT;

/// The first pause before reopening an ended stream; doubled at each failure.
const REOPEN_AFTER: Duration = Duration::from_secs(1);
/// The longest pause before reopening.
const REOPEN_AT_MOST: Duration = Duration::from_secs(30);

/// The list-change stream of one connection.
#[derive(Debug)]
pub(super) struct ListWatch {
    upstream: Name,
    peer: Peer<RoleClient>,
    /// What is asked for; `None` when there is nothing to listen to (a 2025-11-25 upstream, or
    /// one that announces no list changes).
    filter: Option<SubscriptionFilter>,
    stream: Option<Subscription>,
    /// When to try to reopen an ended stream, and the pause after that.
    reopen: (Instant, Duration),
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
            reopen: (Instant::now(), REOPEN_AFTER),
        };
        watch.stream = watch.listen().await;
        watch
    }

    async fn listen(&self) -> Option<Subscription> {
        let filter = self.filter.clone()?;
        match tokio::time::timeout(LIST_TIMEOUT, self.peer.listen(filter)).await {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(e)) => {
                tracing::debug!(upstream = %self.upstream, error = %short(&e.to_string()), "no list-change stream");
                None
            }
            Err(_) => {
                tracing::debug!(upstream = %self.upstream, "no list-change stream: no answer");
                None
            }
        }
    }

    /// Waits until the upstream announces that a list changed, or a stream that had ended
    /// was opened again; forever when there is nothing to listen to. Cancel-safe.
    pub(super) async fn changed(&mut self) {
        loop {
            if let Some(stream) = self.stream.as_mut() {
                match stream.next().await {
                    Ok(Some(
                        ServerNotification::ToolListChangedNotification(_)
                        | ServerNotification::PromptListChangedNotification(_)
                        | ServerNotification::ResourceListChangedNotification(_),
                    )) => return,
                    Ok(Some(_)) => continue,
                    Ok(None) | Err(_) => {
                        tracing::debug!(upstream = %self.upstream, end = ?stream.end(), "list-change stream ended");
                        self.stream = None;
                        self.reopen = (Instant::now() + REOPEN_AFTER, REOPEN_AFTER);
                    }
                }
            }
            if self.filter.is_none() {
                return std::future::pending().await;
            }
            tokio::time::sleep_until(self.reopen.0).await;
            match self.listen().await {
                Some(stream) => {
                    self.stream = Some(stream);
                    return;
                }
                None => {
                    let pause = (self.reopen.1 * 2).min(REOPEN_AT_MOST);
                    self.reopen = (Instant::now() + pause, pause);
                }
            }
        }
    }
}
