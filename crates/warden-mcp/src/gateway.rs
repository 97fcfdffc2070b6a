//! The governed gateway: the live policy, credentials and catalog, the upstreams, and the
//! pipeline that every `tools/call` goes through — shared by every transport (GOV-8).
//!
//! A watcher polls the store's revision (every 250 ms by default) and swaps in a new snapshot
//! when another process — the CLI with `--data-dir`, another replica — changed configuration
//! or credentials (STORE-1b). When the store cannot be reached, runs keep their knowledge and
//! get no tools (RUN-4).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use warden_core::authority::{Authority, AuthorityError, resolve};
use warden_core::config::{Config, Kind, Resource, UpstreamSpec};
use warden_core::contract::{CallOutcome, ToolOutput, Verdict};

use crate::upstream::UpstreamAnswer;
use warden_core::error::ExecError;
use warden_core::pipeline::{
    CallRequest, Clock, Execution, Executor, Governance, Pipeline, RunState,
};
use warden_core::policy::Policy;
use warden_core::principal::{Credential, CredentialRejection, TokenHash, looks_like_token};
use warden_core::time::Millis;
use warden_core::tool::{Catalog, ToolDescriptor, ToolSource, catalog_name, matching_policy};
use warden_store::Store;

use crate::builtin;
use crate::secrets::Secrets;
use crate::upstream::{UpstreamEvent, UpstreamStatus, Upstreams};

/// Options of the gateway.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// Where `${secret:NAME}` files live.
    pub secrets_dir: Option<PathBuf>,
    /// How often the store's revision is polled.
    pub poll_interval: Duration,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self {
            secrets_dir: None,
            poll_interval: Duration::from_millis(250),
        }
    }
}

/// What the gateway knows at one instant. Immutable; replaced whole.
#[derive(Debug)]
pub struct Snapshot {
    /// The store revision it was built from.
    pub revision: u64,
    /// The policy.
    pub policy: Arc<Policy>,
    /// The federated catalog.
    pub catalog: Arc<Catalog>,
    credentials: Arc<HashMap<TokenHash, Credential>>,
    /// Whether the store answered the last poll; when not, runs get no tools (RUN-4).
    pub store_ok: bool,
    /// Whether a configuration was ever loaded; when not, runs get no tools (RUN-4).
    pub loaded: bool,
}

impl Snapshot {
    fn empty() -> Self {
        Self {
            revision: 0,
            policy: Arc::new(Policy::default()),
            catalog: Arc::new(Catalog::default()),
            credentials: Arc::new(HashMap::new()),
            store_ok: false,
            loaded: false,
        }
    }
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        Millis(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or_default(),
        )
    }
}

/// The gateway.
#[derive(Debug)]
pub struct Gateway {
    store: Arc<Store>,
    snapshot: ArcSwap<Snapshot>,
    upstreams: Upstreams,
    builtins: Vec<ToolDescriptor>,
    cancel: CancellationToken,
    catalog_changed: broadcast::Sender<()>,
    /// The MCP form of each catalog entry, built once per catalog.
    wire_tools: ArcSwap<WireTools>,
    /// Resolved authorities by (credential id, agent); see [`Gateway::authority`].
    authorities: std::sync::Mutex<HashMap<(String, Option<String>), Resolved>>,
}

/// One memoised `resolve(policy, credential, agent)`, valid for exactly these inputs.
#[derive(Debug)]
struct Resolved {
    policy: Arc<Policy>,
    credential: Credential,
    authority: Result<Arc<Authority>, AuthorityError>,
}

/// How many resolved authorities are kept before the memo starts over.
const MAX_RESOLVED: usize = 4096;

/// The MCP `Tool` of the entries of one catalog (by name), each built from that catalog's
/// entry the first time a list shows it: a server whose callers each see one project never
/// builds the other projects' (PERF-3).
#[derive(Debug, Default)]
struct WireTools {
    catalog: Option<Arc<Catalog>>,
    tools: HashMap<Arc<str>, std::sync::OnceLock<Box<WireTool>>>,
}

impl WireTools {
    /// The MCP form of `name` in this cache's catalog.
    fn get(&self, name: &str) -> Option<&WireTool> {
        let cell = self.tools.get(name)?;
        if let Some(wire) = cell.get() {
            return Some(wire);
        }
        let descriptor = self.catalog.as_ref()?.get(name)?;
        Some(cell.get_or_init(|| {
            Box::new(WireTool {
                json: crate::wire::tool_json(descriptor)
                    .ok()
                    .map(String::into_boxed_str),
                tool: std::sync::OnceLock::new(),
                descriptor: descriptor.clone(),
            })
        }))
    }
}

/// One tool in MCP form: its JSON, written from the schema texts without parsing them, and
/// rmcp's `Tool` (schemas parsed) once an rmcp-served `tools/list` needed it.
#[derive(Debug)]
struct WireTool {
    json: Option<Box<str>>,
    tool: std::sync::OnceLock<rmcp::model::Tool>,
    descriptor: Arc<ToolDescriptor>,
}

impl WireTool {
    fn json(&self) -> Option<&str> {
        self.json.as_deref()
    }

    fn tool(&self) -> &rmcp::model::Tool {
        self.tool
            .get_or_init(|| crate::wire::tool(&self.descriptor))
    }
}

impl Gateway {
    /// Loads configuration and credentials, starts the upstreams and the watcher.
    pub async fn start(store: Arc<Store>, options: GatewayOptions) -> Arc<Self> {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let gateway = Arc::new(Self {
            upstreams: Upstreams::new(
                events_tx,
                Secrets::new(options.secrets_dir.clone()),
                Some(store.clone()),
            ),
            store,
            snapshot: ArcSwap::from_pointee(Snapshot::empty()),
            builtins: builtin::descriptors(),
            cancel: CancellationToken::new(),
            catalog_changed: broadcast::channel(16).0,
            wire_tools: ArcSwap::from_pointee(WireTools::default()),
            authorities: std::sync::Mutex::new(HashMap::new()),
        });
        gateway.reload().await;
        tokio::spawn(watch(
            Arc::downgrade(&gateway),
            events_rx,
            options.poll_interval,
            gateway.cancel.clone(),
        ));
        gateway
    }

    /// Stops the watcher and every upstream.
    pub fn shutdown(&self) {
        self.cancel.cancel();
        self.upstreams.shutdown();
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The upstreams.
    pub fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// Notified whenever the catalog changes (for `notifications/tools/list_changed`).
    pub fn subscribe_catalog(&self) -> broadcast::Receiver<()> {
        self.catalog_changed.subscribe()
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

    /// Verifies a bearer token against the in-memory credential table (a hash lookup).
    pub fn authenticate(&self, token: &str) -> Result<Credential, CredentialRejection> {
        if token.is_empty() {
            return Err(CredentialRejection::Missing);
        }
        if !looks_like_token(token) {
            return Err(CredentialRejection::Unknown);
        }
        let snapshot = self.snapshot.load();
        let credential = snapshot
            .credentials
            .get(&TokenHash::of(token))
            .ok_or(CredentialRejection::Unknown)?;
        credential.check_usable(SystemClock.now())?;
        if snapshot.loaded && !snapshot.policy.principal_exists(&credential.principal) {
            return Err(CredentialRejection::OwnerGone);
        }
        Ok(credential.clone())
    }

    /// The authority of a run, re-resolved from the current policy (RUN-8). Without a
    /// loaded policy or a reachable store, the run keeps its knowledge and gets no tools.
    /// Shared with the memo: a request does not copy its authority's maps.
    pub fn authority(
        &self,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Arc<Authority>, AuthorityError> {
        let snapshot = self.snapshot.load();
        let authority = self.resolve_memoised(&snapshot.policy, credential, agent)?;
        let withheld = if !snapshot.loaded {
            "the configuration is not loaded"
        } else if !snapshot.store_ok {
            "the store cannot be reached"
        } else {
            return Ok(authority);
        };
        Ok(Arc::new(Arc::unwrap_or_clone(authority).withhold(withheld)))
    }

    /// `resolve(policy, credential, agent)`, memoised: resolving is pure in those three inputs
    /// and costs a reason string per refused project on every request (PERF-3). An entry is
    /// used only for the very same policy object (a new configuration, binding or principal
    /// makes a new one), an identical credential and the same agent; anything else resolves
    /// anew.
    fn resolve_memoised(
        &self,
        policy: &Arc<Policy>,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Arc<Authority>, AuthorityError> {
        let key = (credential.id.clone(), agent.map(str::to_owned));
        if let Ok(memo) = self.authorities.lock()
            && let Some(hit) = memo
                .get(&key)
                .filter(|r| Arc::ptr_eq(&r.policy, policy) && r.credential == *credential)
        {
            return hit.authority.clone();
        }
        let authority = resolve(policy, credential, agent).map(Arc::new);
        if let Ok(mut memo) = self.authorities.lock() {
            if memo.len() >= MAX_RESOLVED {
                memo.clear();
            }
            memo.insert(
                key,
                Resolved {
                    policy: policy.clone(),
                    credential: credential.clone(),
                    authority: authority.clone(),
                },
            );
        }
        authority
    }

    /// The tools `tools/list` shows this run: exactly those the decision function lets it see.
    pub fn list_tools(&self, authority: &Authority) -> Vec<Arc<ToolDescriptor>> {
        // `visible` is the scope step of `decide(…, Purpose::List)`, through the catalog's
        // project index: no pass over the tools of other projects.
        warden_core::decision::visible(authority, &self.snapshot.load().catalog)
    }

    /// `tools/list` in MCP form: the tools the run sees, converted once per catalog rather
    /// than once per request (PERF-3).
    pub fn list_wire_tools(&self, tools: &[Arc<ToolDescriptor>]) -> Vec<rmcp::model::Tool> {
        let cache = self.wire_cache();
        tools
            .iter()
            .map(|t| {
                cache
                    .get(&t.name)
                    .map(|w| w.tool().clone())
                    .unwrap_or_else(|| crate::wire::tool(t))
            })
            .collect()
    }

    /// [`Gateway::list_wire_tools`] serialized: the JSON array of the tools, each written
    /// once per catalog, so that an answer costs a copy of its bytes (PERF-3). `None` when a
    /// tool cannot be serialized.
    pub fn list_wire_json(&self, tools: &[Arc<ToolDescriptor>]) -> Option<Vec<u8>> {
        let cache = self.wire_cache();
        let mut out = Vec::with_capacity(2 + tools.len() * 512);
        out.push(b'[');
        for (i, t) in tools.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match cache.get(&t.name) {
                Some(w) => out.extend_from_slice(w.json()?.as_bytes()),
                None => out.extend_from_slice(crate::wire::tool_json(t).ok()?.as_bytes()),
            }
        }
        out.push(b']');
        Some(out)
    }

    /// The MCP form of the current catalog (its index built on first use after a catalog
    /// change, each tool on first listing).
    fn wire_cache(&self) -> Arc<WireTools> {
        let catalog = self.snapshot.load().catalog.clone();
        let cache = self.wire_tools.load_full();
        if cache
            .catalog
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, &catalog))
        {
            return cache;
        }
        let built = Arc::new(WireTools {
            tools: catalog
                .iter()
                .map(|t| (t.name.clone(), std::sync::OnceLock::new()))
                .collect(),
            catalog: Some(catalog),
        });
        self.wire_tools.store(built.clone());
        built
    }

    /// The server instructions of a run (RUN-1, RUN-5).
    pub fn instructions(&self, authority: &Authority) -> String {
        crate::knowledge::instructions(&self.snapshot.load().policy, authority)
    }

    /// Upstreams whose prompts and resources the run may read: those of projects whose tools
    /// it may use (the same project authority).
    fn readable_upstreams(&self, authority: &Authority) -> Vec<Arc<crate::upstream::UpstreamSlot>> {
        if authority.withheld.is_some() {
            return Vec::new();
        }
        self.upstreams
            .all()
            .into_iter()
            .filter(|u| authority.projects.contains_key(&u.spec.project))
            .collect()
    }

    fn prefix(spec: &UpstreamSpec) -> String {
        spec.prefix.clone().unwrap_or_else(|| spec.name.to_string())
    }

    /// `prompts/list`: the knowledge projects' prompts (`<project>/<prompt>`) and the prompts
    /// of readable upstreams (`<upstream>__<prompt>`).
    pub fn prompts(&self, authority: &Authority) -> Vec<rmcp::model::Prompt> {
        let mut prompts =
            crate::knowledge::project_prompts(&self.snapshot.load().policy, authority);
        for slot in self.readable_upstreams(authority) {
            let prefix = Self::prefix(&slot.spec);
            prompts.extend(slot.prompts().iter().map(|p| {
                let mut p = p.clone();
                p.name = catalog_name(&prefix, &p.name);
                p
            }));
        }
        prompts
    }

    /// `prompts/get`, read-only. Unknown and unreadable prompts answer alike.
    pub async fn get_prompt(
        &self,
        authority: &Authority,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<rmcp::model::GetPromptResponse, rmcp::ErrorData> {
        if let Some(p) =
            crate::knowledge::project_prompt(&self.snapshot.load().policy, authority, name)
        {
            return Ok(p.into());
        }
        for slot in self.readable_upstreams(authority) {
            let prefix = Self::prefix(&slot.spec);
            if let Some(p) = slot
                .prompts()
                .iter()
                .find(|p| catalog_name(&prefix, &p.name) == name)
            {
                let mut params = rmcp::model::GetPromptRequestParams::new(p.name.clone());
                if let Some(args) = arguments {
                    params = params.with_arguments(args);
                }
                return slot.get_prompt(params).await;
            }
        }
        Err(rmcp::ErrorData::invalid_params(
            format!("unknown prompt `{name}`"),
            None,
        ))
    }

    /// `resources/list`: the knowledge projects' documents and the resources of readable
    /// upstreams.
    pub fn resources(&self, authority: &Authority) -> Vec<rmcp::model::Resource> {
        let mut resources =
            crate::knowledge::project_documents(&self.snapshot.load().policy, authority);
        for slot in self.readable_upstreams(authority) {
            resources.extend(slot.resources().iter().cloned());
        }
        resources
    }

    /// `resources/read`, read-only. Unknown and unreadable resources answer alike.
    pub async fn read_resource(
        &self,
        authority: &Authority,
        uri: &str,
    ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
        if let Some(r) =
            crate::knowledge::project_document(&self.snapshot.load().policy, authority, uri)
        {
            return Ok(r.into());
        }
        match self.resource_owner(authority, uri) {
            Some(slot) => {
                slot.read_resource(rmcp::model::ReadResourceRequestParams::new(uri.to_owned()))
                    .await
            }
            None => Err(rmcp::ErrorData::resource_not_found(
                format!("unknown resource `{uri}`"),
                None,
            )),
        }
    }

    /// The readable upstream a resource URI belongs to: one that lists it, else one whose
    /// template it matches.
    fn resource_owner(
        &self,
        authority: &Authority,
        uri: &str,
    ) -> Option<Arc<crate::upstream::UpstreamSlot>> {
        let readable = self.readable_upstreams(authority);
        readable
            .iter()
            .find(|s| s.resources().iter().any(|r| r.uri == uri))
            .or_else(|| readable.iter().find(|s| s.owns(uri)))
            .cloned()
    }

    /// `resources/templates/list`: the templates of readable upstreams.
    pub fn resource_templates(&self, authority: &Authority) -> Vec<rmcp::model::ResourceTemplate> {
        self.readable_upstreams(authority)
            .iter()
            .flat_map(|s| s.templates().iter().cloned().collect::<Vec<_>>())
            .collect()
    }

    /// `resources/subscribe`: the session hears `notifications/resources/updated` for `uri`.
    pub async fn subscribe(
        &self,
        authority: &Authority,
        uri: &str,
        session: &str,
        client: rmcp::service::Peer<rmcp::RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        match self.resource_owner(authority, uri) {
            Some(slot) => slot.subscribe(uri, session, client).await,
            None => Err(rmcp::ErrorData::resource_not_found(
                format!("unknown resource `{uri}`"),
                None,
            )),
        }
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe(
        &self,
        authority: &Authority,
        uri: &str,
        session: &str,
    ) -> Result<(), rmcp::ErrorData> {
        match self.resource_owner(authority, uri) {
            Some(slot) => slot.unsubscribe(uri, session).await,
            None => Ok(()),
        }
    }

    /// `completion/complete`, forwarded to the readable upstream that owns the prompt or the
    /// resource template; project prompts and unknown references complete to nothing.
    pub async fn complete(
        &self,
        authority: &Authority,
        mut params: rmcp::model::CompleteRequestParams,
    ) -> Result<rmcp::model::CompleteResult, rmcp::ErrorData> {
        let owner = match &mut params.r#ref {
            rmcp::model::Reference::Prompt(prompt) => self
                .readable_upstreams(authority)
                .into_iter()
                .find_map(|slot| {
                    let prefix = Self::prefix(&slot.spec);
                    let own = slot
                        .prompts()
                        .iter()
                        .find(|p| catalog_name(&prefix, &p.name) == prompt.name)
                        .map(|p| p.name.clone())?;
                    prompt.name = own;
                    Some(slot)
                }),
            rmcp::model::Reference::Resource(template) => {
                self.readable_upstreams(authority).into_iter().find(|slot| {
                    slot.templates()
                        .iter()
                        .any(|t| t.uri_template == template.uri)
                })
            }
            // A kind of reference this build does not know: nothing to complete.
            _ => None,
        };
        match owner {
            Some(slot) => slot.complete(params).await,
            None => Ok(rmcp::model::CompleteResult::default()),
        }
    }

    /// `logging/setLevel`, forwarded to the upstreams whose tools the run may use.
    #[allow(
        deprecated,
        reason = "logging is still part of the 2025-11-25 protocol"
    )]
    pub async fn set_log_level(
        &self,
        authority: &Authority,
        params: rmcp::model::SetLevelRequestParams,
    ) {
        for slot in self.readable_upstreams(authority) {
            slot.set_log_level(params.clone()).await;
        }
    }

    /// Every tool of the catalog, for direct execution (governance `off`).
    pub fn all_tools(&self) -> Vec<Arc<ToolDescriptor>> {
        self.snapshot.load().catalog.iter().cloned().collect()
    }

    /// One `tools/call`: governed (GOV-2), or executed without decisions and still recorded
    /// (governance `off`, GOV-6).
    pub async fn call(
        &self,
        authority: &Authority,
        run: &RunState,
        name: &str,
        args: Option<Map<String, Value>>,
        governance: Governance,
    ) -> CallOutcome {
        let started = Instant::now();
        let snapshot = self.snapshot.load_full();
        let executor = GatewayExecutor {
            gateway: self,
            snapshot: &snapshot,
        };
        let pipeline = Pipeline {
            audit: self.store.as_ref(),
            counters: self.store.as_ref(),
            clock: &SystemClock,
            executor: &executor,
            approvals: self.store.as_ref(),
        };
        let call_id = format!("call_{}", uuid::Uuid::now_v7().simple());
        let request = CallRequest {
            call_id,
            name,
            args,
            governance,
            context: (),
        };
        let outcome = pipeline
            .call(&snapshot.policy, &snapshot.catalog, authority, run, request)
            .await;
        record_metrics(&outcome, started.elapsed());
        if let Verdict::Denied(d) = &outcome.verdict {
            tracing::info!(
                run = %outcome.run_id, principal = %authority.principal, tool = %name,
                code = %d.code, rule = %d.rule, "call denied"
            );
        }
        outcome
    }

    /// Reloads configuration and credentials now, instead of at the next poll.
    pub async fn refresh(&self) {
        self.reload().await;
    }

    async fn reload(&self) {
        let loaded = async {
            let (config, revision) = self.store.load_config().await?;
            let credentials = self.store.credential_hashes().await?;
            Ok::<_, warden_store::StoreError>((config, revision, credentials))
        }
        .await;
        match loaded {
            Ok((config, revision, credentials)) => {
                let upstream_specs = upstream_specs(&config);
                let policy = Arc::new(Policy::compile(config, revision));
                self.upstreams.reconcile(&upstream_specs);
                let catalog = Arc::new(self.build_catalog(&policy));
                self.snapshot.store(Arc::new(Snapshot {
                    revision,
                    policy,
                    catalog,
                    credentials: Arc::new(credentials.into_iter().collect()),
                    store_ok: true,
                    loaded: true,
                }));
                let _ = self.catalog_changed.send(());
                tracing::debug!(revision, "configuration loaded");
            }
            Err(e) => self.mark_store(false, Some(&e.to_string())),
        }
    }

    fn mark_store(&self, ok: bool, error: Option<&str>) {
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
            store_ok: ok,
            loaded: current.loaded,
        }));
    }

    fn rebuild_catalog(&self) {
        let current = self.snapshot.load_full();
        let catalog = Arc::new(self.build_catalog(&current.policy));
        self.snapshot.store(Arc::new(Snapshot {
            revision: current.revision,
            policy: current.policy.clone(),
            catalog,
            credentials: current.credentials.clone(),
            store_ok: current.store_ok,
            loaded: current.loaded,
        }));
        let _ = self.catalog_changed.send(());
    }

    fn build_catalog(&self, policy: &Policy) -> Catalog {
        let mut tools: Vec<ToolDescriptor> = self.builtins.clone();
        // The catalog being replaced: a tool whose schema text did not change keeps its
        // compiled schema (no recompilation).
        let previous = self.snapshot.load().catalog.clone();
        for slot in self.upstreams.all() {
            let spec = &slot.spec;
            let prefix = Self::prefix(spec);
            // The descriptors share the slot's schema texts and annotations (PERF-3).
            for raw in slot.tools().iter() {
                let name = catalog_name(&prefix, &raw.name);
                let matched = matching_policy(policy.tool_policies(), &spec.project, &name);
                match ToolDescriptor::for_upstream_after(
                    &spec.project,
                    &spec.name,
                    &name,
                    raw,
                    matched,
                    previous.get(&name).map(AsRef::as_ref),
                ) {
                    Ok(d) => tools.push(d),
                    Err(e) => {
                        tracing::warn!(upstream = %spec.name, tool = %name, error = %e, "tool skipped")
                    }
                }
            }
        }
        let (catalog, conflicts) = Catalog::new(tools);
        for c in conflicts {
            tracing::warn!(name = %c.name, kept = %c.kept, dropped = %c.dropped, "two tools want the same catalog name; set a `prefix` on one upstream");
        }
        catalog
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

fn record_metrics(outcome: &CallOutcome, elapsed: Duration) {
    let (status, code) = outcome.status();
    let code = code.map(|c| c.as_str()).unwrap_or("");
    metrics::counter!("warden_calls_total", "decision" => status, "code" => code).increment(1);
    metrics::histogram!("warden_call_duration_seconds", "decision" => status)
        .record(elapsed.as_secs_f64());
}

async fn watch(
    gateway: std::sync::Weak<Gateway>,
    mut events: mpsc::UnboundedReceiver<UpstreamEvent>,
    poll: Duration,
    cancel: CancellationToken,
) {
    let mut timer = tokio::time::interval(poll);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = timer.tick() => {
                let Some(gw) = gateway.upgrade() else { return };
                match gw.store.revision().await {
                    Ok(revision) => {
                        let current = gw.snapshot.load();
                        if revision != current.revision || !current.store_ok || !current.loaded {
                            gw.reload().await;
                        }
                    }
                    Err(e) => gw.mark_store(false, Some(&e.to_string())),
                }
            }
            event = events.recv() => {
                let Some(_event) = event else { return };
                // Coalesce a burst of upstream events into one rebuild.
                while events.try_recv().is_ok() {}
                let Some(gw) = gateway.upgrade() else { return };
                gw.rebuild_catalog();
            }
        }
    }
}

pub(crate) struct GatewayExecutor<'a> {
    pub(crate) gateway: &'a Gateway,
    pub(crate) snapshot: &'a Snapshot,
}

impl Snapshot {
    /// A credential by its public id (revoked and expired ones included), for resolving the
    /// requester of a parked call.
    pub fn credential_by_id(&self, id: &str) -> Option<Credential> {
        self.credentials.values().find(|c| c.id == id).cloned()
    }
}

impl Executor for GatewayExecutor<'_> {
    type Context = ();

    async fn execute(&self, call: Execution<'_, ()>) -> Result<ToolOutput, ExecError> {
        match &call.tool.source {
            ToolSource::Builtin { tool, .. } => builtin::execute(
                tool,
                call.args,
                call.authority,
                &self.snapshot.policy,
                &self.snapshot.catalog,
            ),
            ToolSource::Upstream { upstream, tool } => {
                let slot = self
                    .gateway
                    .upstreams
                    .get(upstream.as_str())
                    .ok_or_else(|| {
                        ExecError::Unavailable(format!("upstream `{upstream}` is not configured"))
                    })?;
                let unreadable = || {
                    ExecError::Unavailable(format!(
                        "upstream `{upstream}` sent an unreadable result"
                    ))
                };
                match slot.call(tool, call.args).await? {
                    UpstreamAnswer::Complete(result) => {
                        let is_error = result.is_error.unwrap_or(false);
                        match serde_json::to_value(&result) {
                            Ok(Value::Object(result)) => {
                                Ok(ToolOutput::Upstream { result, is_error })
                            }
                            _ => Err(unreadable()),
                        }
                    }
                    UpstreamAnswer::InputRequired(needed) => match serde_json::to_value(&needed) {
                        Ok(Value::Object(result)) => Ok(ToolOutput::InputRequired { result }),
                        _ => Err(unreadable()),
                    },
                }
            }
        }
    }
}
