//! Upstream MCP servers (FED-1, FED-2): stdio children and Streamable HTTP URLs, each kept by
//! a supervisor task. A dead upstream makes its tools fail with `UNAVAILABLE`; the others are
//! not affected.
//!
//! - [`slot`]: one upstream — its offer, status and connection, and the requests sent to it;
//! - [`supervise`]: connecting, listing, refreshing and reconnecting with backoff, and the
//!   2025-11-25 session of an upstream that speaks both eras, for 2025-11-25 clients;
//!   [`list_watch`]: a 2026-07-28 upstream's announcements that its lists changed;
//! - [`stdio`] and [`http`]: the two kinds of upstream (the HTTP exit and its connection pool
//!   are in `http`);
//! - [`exit`]: how a `tools/call` leaves — the rmcp client ([`peer`]) or the HTTP exit —
//!   chosen when the upstream connects; [`failure`]: how a round trip fails;
//! - [`reads`]: `prompts/get`, `resources/read` and `completion/complete`, in the client's
//!   era as a call is;
//! - [`relays`]: what an upstream sends during a call, back to the calling client; [`input`]:
//!   a 2026-07-28 upstream's `input_required` answers; [`suspend`]: a 2025-11-25 upstream's
//!   questions for a 2026-07-28 client, as `input_required`;
//! - [`subscriptions`]: clients subscribed to an upstream's resources, in either era;
//! - [`exchange`]: the caller's token exchanged for an upstream that acts as its caller.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tokio::sync::mpsc;
use warden_core::config::UpstreamSpec;
use warden_core::name::Name;

use warden_runtime::Secrets;

mod delivery;
pub mod exchange;
mod exit;
mod failure;
pub mod http;
mod input;
mod list_watch;
mod peer;
mod reads;
mod relays;
mod slot;
mod stdio;
mod subscriptions;
mod supervise;
mod suspend;

pub use relays::RelayLog;
pub use slot::{
    DEFAULT_CALL_TIMEOUT, Offer, Outgoing, UpstreamAnswer, UpstreamSlot, UpstreamStatus,
};
pub use subscriptions::Subscriber;

/// A change worth rebuilding the catalog for.
#[derive(Clone, Debug)]
pub struct UpstreamEvent {
    /// Which upstream changed (its offer or its status).
    pub upstream: Name,
}

/// All upstreams.
#[derive(Debug)]
pub struct Upstreams {
    slots: RwLock<HashMap<Name, Arc<UpstreamSlot>>>,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    secrets: Secrets,
    log: Option<RelayLog>,
    /// Tokens exchanged for callers (AUTH-6).
    exchanges: exchange::Exchanges,
    /// The runtime that created this set: supervisors run there, also when a reload is asked
    /// for from a request on a serving thread (whose runtime ends with its connections).
    runtime: Option<tokio::runtime::Handle>,
}

impl Upstreams {
    /// No upstreams yet; events about them go to `events`; relays are recorded in `log`.
    pub fn new(
        events: mpsc::UnboundedSender<UpstreamEvent>,
        secrets: Secrets,
        log: Option<RelayLog>,
    ) -> Self {
        Self {
            slots: RwLock::new(HashMap::new()),
            events,
            secrets,
            log,
            exchanges: exchange::Exchanges::default(),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Starts, restarts and stops supervisors so that exactly `specs` run.
    pub fn reconcile(&self, specs: &[UpstreamSpec]) {
        let Ok(mut slots) = self.slots.write() else {
            return;
        };
        let wanted: HashMap<&Name, &UpstreamSpec> = specs.iter().map(|s| (&s.name, s)).collect();
        slots.retain(|name, slot| {
            let keep = wanted.get(name).is_some_and(|spec| **spec == slot.spec);
            if !keep {
                tracing::info!(upstream = %name, "stopping upstream");
                slot.cancel.cancel();
            }
            keep
        });
        for spec in specs {
            if slots.contains_key(&spec.name) {
                continue;
            }
            let slot = Arc::new(UpstreamSlot::new(spec.clone(), self.log.clone()));
            slots.insert(spec.name.clone(), slot.clone());
            let events = self.events.clone();
            let upstream = spec.name.clone();
            let changed = move || {
                let _ = events.send(UpstreamEvent {
                    upstream: upstream.clone(),
                });
            };
            let supervisor =
                supervise::supervise(slot, changed, self.secrets.clone(), self.log.clone());
            match &self.runtime {
                Some(runtime) => runtime.spawn(supervisor),
                None => tokio::spawn(supervisor),
            };
        }
    }

    /// How upstream (and runner) credentials are resolved.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The bearer of a call to `upstream` acting as its caller (AUTH-6) at `now`: the
    /// caller's token exchanged at `issuer`. The error names the issuer, for the caller.
    pub(crate) async fn bearer(
        &self,
        issuer: &warden_core::config::IssuerSpec,
        upstream: &UpstreamSpec,
        authority: &warden_core::authority::Authority,
        subject: Option<&exchange::SubjectToken>,
        now: warden_core::time::Millis,
    ) -> Result<Arc<str>, String> {
        let of_issuer = authority.authenticated_by(issuer.name.as_str());
        let (Some(auth), Some(subject), true) = (&upstream.auth, subject, of_issuer) else {
            return Err(format!(
                "upstream `{}` acts as its caller, and this call carries no access token of \
                 issuer `{}` to act with",
                upstream.name, issuer.name
            ));
        };
        let acting = exchange::Acting {
            upstream: upstream.name.as_str(),
            issuer,
            spec: &auth.exchange,
            agent: authority.agent.as_ref().map(Name::as_str),
            subject,
        };
        self.exchanges.bearer(&acting, &self.secrets, now).await
    }

    /// How many token exchanges were made (tokens kept and reused do not count).
    pub fn exchanges_made(&self) -> u64 {
        self.exchanges.made()
    }

    /// One upstream.
    pub fn get(&self, name: &str) -> Option<Arc<UpstreamSlot>> {
        self.slots.read().ok().and_then(|s| s.get(name).cloned())
    }

    /// Every upstream, by name.
    pub fn all(&self) -> Vec<Arc<UpstreamSlot>> {
        let mut v: Vec<_> = self
            .slots
            .read()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default();
        v.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        v
    }

    /// Stops every supervisor (and its child processes).
    pub fn shutdown(&self) {
        if let Ok(slots) = self.slots.read() {
            for slot in slots.values() {
                slot.cancel.cancel();
            }
        }
    }
}
