//! `notifications/{tools,prompts,resources}/list_changed` to clients (XPORT-4): a client hears
//! that a list changed when what *it* may see of that list changed — whatever the cause: an
//! upstream's offer, the configuration, its bindings. A 2025-11-25 session hears of every list;
//! a 2026-07-28 `subscriptions/listen` stream of those it asked for.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{Prompt, Resource, ResourceTemplate, SubscriptionFilter};
use rmcp::service::{Peer, SubscriptionSink};
use tokio::sync::broadcast::error::RecvError;
use warden_core::principal::Credential;

use crate::gateway::Gateway;

/// Who hears list changes.
#[derive(Debug)]
pub(crate) enum ListChanged {
    /// A 2025-11-25 session, until it closes: every list.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream, until it ends: the lists it was accepted for.
    Listen(SubscriptionSink),
}

/// The lists a client follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lists {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    /// Resources and resource templates.
    pub(crate) resources: bool,
}

impl Lists {
    /// What a listen stream was accepted for.
    pub(crate) fn of(filter: &SubscriptionFilter) -> Self {
        Self {
            tools: filter.tools_list_changed == Some(true),
            prompts: filter.prompts_list_changed == Some(true),
            resources: filter.resources_list_changed == Some(true),
        }
    }

    /// Whether any list is followed.
    pub(crate) fn any(self) -> bool {
        self.tools || self.prompts || self.resources
    }

    /// Every list.
    pub(crate) fn all() -> Self {
        Self {
            tools: true,
            prompts: true,
            resources: true,
        }
    }

    /// The lists in both.
    fn and(self, other: Self) -> Self {
        Self {
            tools: self.tools && other.tools,
            prompts: self.prompts && other.prompts,
            resources: self.resources && other.resources,
        }
    }
}

impl ListChanged {
    fn lists(&self) -> Lists {
        match self {
            ListChanged::Session(_) => Lists::all(),
            ListChanged::Listen(sink) => Lists::of(sink.accepted()),
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            ListChanged::Session(peer) => peer.is_transport_closed(),
            ListChanged::Listen(_) => false,
        }
    }

    /// Sends what changed; `false` when it can no longer be delivered.
    async fn changed(&self, what: Lists) -> bool {
        let mut ok = true;
        match self {
            ListChanged::Session(peer) => {
                if what.tools {
                    ok &= peer.notify_tool_list_changed().await.is_ok();
                }
                if what.prompts {
                    ok &= peer.notify_prompt_list_changed().await.is_ok();
                }
                if what.resources {
                    ok &= peer.notify_resource_list_changed().await.is_ok();
                }
            }
            ListChanged::Listen(sink) => {
                if what.tools {
                    ok &= sink.notify_tool_list_changed().await.is_ok();
                }
                if what.prompts {
                    ok &= sink.notify_prompt_list_changed().await.is_ok();
                }
                if what.resources {
                    ok &= sink.notify_resource_list_changed().await.is_ok();
                }
            }
        }
        ok
    }
}

/// What one client may see of the lists it follows (empty for those it does not).
#[derive(Debug, Default, PartialEq)]
struct Visible {
    tools: Vec<Arc<str>>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

impl Visible {
    fn now(gateway: &Gateway, credential: &Credential, agent: Option<&str>, lists: Lists) -> Self {
        let Ok(authority) = gateway.authority(credential, agent) else {
            return Self::default();
        };
        Self {
            tools: if lists.tools {
                gateway
                    .list_tools(&authority)
                    .iter()
                    .map(|t| t.name.clone())
                    .collect()
            } else {
                Vec::new()
            },
            prompts: if lists.prompts {
                gateway.prompts(&authority)
            } else {
                Vec::new()
            },
            resources: if lists.resources {
                gateway.resources(&authority)
            } else {
                Vec::new()
            },
            templates: if lists.resources {
                gateway.resource_templates(&authority)
            } else {
                Vec::new()
            },
        }
    }

    /// The lists that differ between `self` and `other`.
    fn differs(&self, other: &Self) -> Lists {
        Lists {
            tools: self.tools != other.tools,
            prompts: self.prompts != other.prompts,
            resources: self.resources != other.resources || self.templates != other.templates,
        }
    }
}

/// Tells `client` when the lists it follows change for the run of `credential` (and `agent`),
/// until it goes.
pub(crate) async fn notify_list_changes(
    gateway: Arc<Gateway>,
    client: ListChanged,
    credential: Credential,
    agent: Option<String>,
) {
    let lists = client.lists();
    if !lists.any() {
        return;
    }
    let mut changes = gateway.subscribe_catalog();
    let mut last = Visible::now(&gateway, &credential, agent.as_deref(), lists);
    loop {
        match changes.recv().await {
            Ok(()) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
        if client.is_closed() {
            return;
        }
        let now = Visible::now(&gateway, &credential, agent.as_deref(), lists);
        let changed = now.differs(&last);
        last = now;
        if changed.any() && !client.changed(changed).await {
            return;
        }
    }
}

/// Passes on to `client` the list changes `changes` announces (those it follows), until it
/// goes or they end: what a bridge hears from the server it bridges to.
pub(crate) async fn forward_list_changes(
    mut changes: tokio::sync::broadcast::Receiver<Lists>,
    client: ListChanged,
) {
    let follows = client.lists();
    loop {
        let changed = match changes.recv().await {
            Ok(changed) => changed,
            // Some announcements were missed: every list may have changed.
            Err(RecvError::Lagged(_)) => Lists::all(),
            Err(RecvError::Closed) => return,
        };
        if client.is_closed() {
            return;
        }
        let changed = changed.and(follows);
        if changed.any() && !client.changed(changed).await {
            return;
        }
    }
}
