//! What the gateway knows now, kept live: the policy, the federated catalog and the credential
//! table in one immutable [`Snapshot`], replaced whole, and the catalog built from them.
//!
//! A watcher polls the store's revision (every 250 ms by default) and swaps in a new snapshot
//! when another process — the CLI with `--data-dir`, another replica — changed configuration
//! or credentials (STORE-1b); upstream events (a tool list changed, an upstream went down)
//! rebuild the catalog. When the store cannot be reached, runs keep their knowledge and get no
//! tools (RUN-4). Tools whose definitions changed are held out of the catalog for review
//! ([`super::pinning`], GOV-9).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use warden_core::config::{Config, Kind, Resource, UpstreamSpec};
use warden_core::name::Name;
use warden_core::pins::Pins;
use warden_core::policy::Policy;
use warden_core::tool::{Catalog, ToolDescriptor, ToolSource, catalog_name, matching_policy};
use warden_store::StoreError;

use super::pinning;
use super::snapshot::{Snapshot, prefix};
use super::state::Gateway;
use crate::upstream::{UpstreamEvent, UpstreamStatus};

/// What the live snapshot is built from and who hears it change: the fields of [`Gateway`]
/// that this module keeps up to date.
impl Gateway {
    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// The current snapshot, without taking a reference count (for a lookup).
    pub(super) fn peek(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    /// Notified whenever the catalog changes (for `notifications/tools/list_changed`).
    pub fn subscribe_catalog(&self) -> broadcast::Receiver<()> {
        self.catalog_changed.subscribe()
    }

    /// How many clients hear list changes now: open 2025-11-25 sessions and 2026-07-28
    /// `subscriptions/listen` streams that asked for them.
    pub fn catalog_followers(&self) -> usize {
        self.catalog_changed.receiver_count()
    }

    /// Waits until every upstream has connected, or failed twice in a row (a first failure
    /// is often a child still starting on a loaded machine), bounded by `timeout`; then builds
    /// the catalog, so that the first `tools/list` sees every tool known by then.
    pub async fn wait_for_upstreams(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let pending = self.upstreams.all().iter().any(|u| match u.status() {
                UpstreamStatus::Starting => true,
                UpstreamStatus::Down { failures, .. } => failures < 2,
                UpstreamStatus::Up { .. } => false,
            });
            if !pending {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The watcher rebuilds on upstream events too, but maybe not yet.
        self.rebuild_catalog();
    }

    /// Loads configuration and credentials from the store now, instead of at the next poll.
    pub async fn refresh(&self) {
        let loaded = async {
            let (config, revision) = self.store.load_config().await?;
            let credentials = self.store.credential_hashes().await?;
            let pins = self.store.pins().await?;
            Ok::<_, StoreError>((config, revision, credentials, pins))
        }
        .await;
        match loaded {
            Ok((config, revision, credentials, pins)) => {
                let upstream_specs = upstream_specs(&config);
                let policy = Arc::new(Policy::compile(config, revision));
                self.upstreams.reconcile(&upstream_specs);
                let catalog = Arc::new(self.build_catalog(&policy, &pins, revision));
                self.snapshot.store(Arc::new(Snapshot {
                    revision,
                    policy,
                    catalog,
                    credentials: Arc::new(credentials.into_iter().collect()),
                    pins: Arc::new(pins),
                    store_ok: true,
                    loaded: true,
                }));
                metrics::gauge!("warden_store_up").set(1.0);
                let _ = self.catalog_changed.send(());
                tracing::debug!(revision, "configuration loaded");
            }
            Err(e) => self.mark_store(false, Some(&e.to_string())),
        }
    }

    fn mark_store(&self, ok: bool, error: Option<&str>) {
        metrics::gauge!("warden_store_up").set(if ok { 1.0 } else { 0.0 });
        let current = self.snapshot.load_full();
        if current.store_ok == ok {
            return;
        }
        match error {
            Some(e) => {
                tracing::error!(error = %e, "the store cannot be reached: runs get no tools until it answers")
            }
            None => tracing::info!("the store answers again"),
        }
        self.snapshot.store(Arc::new(Snapshot {
            revision: current.revision,
            policy: current.policy.clone(),
            catalog: current.catalog.clone(),
            credentials: current.credentials.clone(),
            pins: current.pins.clone(),
            store_ok: ok,
            loaded: current.loaded,
        }));
    }

    fn rebuild_catalog(&self) {
        let current = self.snapshot.load_full();
        let catalog =
            Arc::new(self.build_catalog(&current.policy, &current.pins, current.revision));
        self.snapshot.store(Arc::new(Snapshot {
            revision: current.revision,
            policy: current.policy.clone(),
            catalog,
            credentials: current.credentials.clone(),
            pins: current.pins.clone(),
            store_ok: current.store_ok,
            loaded: current.loaded,
        }));
        let _ = self.catalog_changed.send(());
    }

    /// The catalog of `policy`'s upstreams, with `pins` (at `revision`) holding changed tools
    /// out for review (GOV-9).
    fn build_catalog(&self, policy: &Policy, pins: &Pins, revision: u64) -> Catalog {
        // The `tasks` and `work` sets are offered where there are workspaces to hold tasks
        // (TASK-1, WORK-1).
        let workspaces = policy.config.of_kind(Kind::Workspace).next().is_some();
        let work_set = |set: &Name| {
            [crate::builtin::tasks::SET, crate::builtin::epics::SET].contains(&set.as_str())
        };
        let mut tools: Vec<ToolDescriptor> = self
            .builtins
            .iter()
            .filter(|t| {
                workspaces || !matches!(&t.source, ToolSource::Builtin { set, .. } if work_set(set))
            })
            .cloned()
            .collect();
        // The catalog being replaced: a tool whose schema text did not change keeps its
        // compiled schema (no recompilation).
        let previous = self.snapshot.load().catalog.clone();
        let mut problems = Vec::new();
        // Who offers each resource URI (and template) first, by upstream name: the one listed
        // and read (see `federation`); any other is shadowed.
        let mut offered: HashMap<String, String> = HashMap::new();
        let mut pinning = pinning::Pass::new(pins, &self.pin_definitions, self.clock.now());
        for slot in self.upstreams.all() {
            let up = matches!(slot.status(), UpstreamStatus::Up { .. });
            let spec = &slot.spec;
            let offer = slot.offer();
            let uris = offer.resources.iter().map(|r| r.uri.as_str());
            let templates = offer.templates.iter().map(|t| t.uri_template.as_str());
            for uri in uris.chain(templates) {
                match offered.get(uri) {
                    Some(first) if *first != spec.name.as_str() => problems.push(format!(
                        "resource `{uri}` is offered by upstreams `{first}` and `{}`: `{first}`'s is listed and read",
                        spec.name
                    )),
                    Some(_) => {}
                    None => {
                        offered.insert(uri.to_owned(), spec.name.to_string());
                    }
                }
            }
            let prefix = prefix(spec);
            // The descriptors share the slot's schema texts and annotations (PERF-3).
            for raw in &slot.offer().tools {
                let name = catalog_name(&prefix, &raw.name);
                if !pinning.admits(spec, up, &name, raw) {
                    continue;
                }
                let matched = matching_policy(policy.tool_policies(), &spec.project, &name);
                match ToolDescriptor::for_upstream_after(
                    &spec.project,
                    &spec.name,
                    &name,
                    raw,
                    matched,
                    previous.get(&name).map(AsRef::as_ref),
                ) {
                    Ok(mut d) => {
                        d.on_behalf_of = spec.on_behalf_of().cloned();
                        tools.push(d);
                    }
                    Err(e) => problems.push(format!(
                        "upstream `{}`: tool `{name}` skipped: {e}",
                        spec.name
                    )),
                }
            }
        }
        let (held, pin_problems) = pinning.finish(revision, &self.pin_writes);
        problems.extend(pin_problems);
        let (catalog, conflicts) = Catalog::new(tools);
        let catalog = catalog.holding(held);
        problems.extend(conflicts.into_iter().map(|c| {
            format!(
                "two tools want the catalog name `{}`: `{}` kept, `{}` dropped; set a `prefix` on one upstream",
                c.name, c.kept, c.dropped
            )
        }));
        self.report(problems);
        catalog
    }

    /// Logs the catalog's problems that were not there at the last build.
    fn report(&self, problems: Vec<String>) {
        let Ok(mut known) = self.problems.lock() else {
            return;
        };
        for problem in known.update(problems) {
            tracing::warn!(%problem, "catalog");
        }
    }
}

fn upstream_specs(config: &Config) -> Vec<UpstreamSpec> {
    config
        .of_kind(Kind::Upstream)
        .filter_map(|r| match r {
            Resource::Upstream(u) => Some(u.clone()),
            _ => None,
        })
        .collect()
}

/// Keeps `gateway`'s snapshot up to date until `cancel`: polls the store's revision every `poll`, and
/// rebuilds the catalog on upstream events (a burst of them once).
pub(super) async fn watch(
    gateway: Weak<Gateway>,
    mut events: mpsc::UnboundedReceiver<UpstreamEvent>,
    mut pins: mpsc::UnboundedReceiver<pinning::PendingPins>,
    poll: Duration,
    cancel: CancellationToken,
) {
    // A write of pins that failed, tried again at each poll until it is made.
    let mut retry = None;
    let mut timer = tokio::time::interval(poll);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = timer.tick() => {
                let Some(gateway) = gateway.upgrade() else { return };
                if let Some(pending) = retry.take() {
                    retry = write_pins(&gateway, pending).await;
                }
                // Health, not only the revision: the embedded store's file must still be the
                // one it opened (a deleted database keeps answering through its open handle).
                match gateway.store.health().await {
                    Ok(revision) => {
                        let current = gateway.snapshot.load();
                        if revision != current.revision || !current.store_ok || !current.loaded {
                            gateway.refresh().await;
                        }
                    }
                    Err(e) => gateway.mark_store(false, Some(&e.to_string())),
                }
            }
            event = events.recv() => {
                let Some(_event) = event else { return };
                while events.try_recv().is_ok() {}
                let Some(gateway) = gateway.upgrade() else { return };
                gateway.rebuild_catalog();
            }
            pending = pins.recv() => {
                let Some(mut pending) = pending else { return };
                // Each judged the whole catalog: the latest is the one that counts.
                while let Ok(later) = pins.try_recv() {
                    pending = later;
                }
                let Some(gateway) = gateway.upgrade() else { return };
                retry = write_pins(&gateway, pending).await;
            }
        }
    }
}

/// Writes `pending` and reloads the snapshot; what to try again, if it failed.
async fn write_pins(
    gateway: &Gateway,
    pending: pinning::PendingPins,
) -> Option<pinning::PendingPins> {
    match pinning::write(&gateway.store, gateway.clock.now(), pending).await {
        pinning::Written::Reload => {
            gateway.refresh().await;
            None
        }
        pinning::Written::Retry(pending) => Some(pending),
    }
}
