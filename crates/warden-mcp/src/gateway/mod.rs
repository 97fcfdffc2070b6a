//! The governed gateway, one instance shared by every transport (GOV-8). [`Gateway`] is one
//! type, what the handler and the server talk to; its methods live in the module of their job:
//!
//! - [`live`]: the live snapshot — policy, catalog, credentials — and the upstreams it is
//!   built from, kept up to date by a watcher;
//! - [`authority`]: who calls (bearer tokens) and what their run may do;
//! - [`federation`]: the prompts, resources and completions a run may read, routed to the
//!   upstream that owns each;
//! - [`execution`]: the governed call, executed by a built-in tool set or an upstream's exit;
//!
//! and [`approvals`]: deciding and executing parked calls (APR-1..APR-6); [`reconcile`]: the
//! calls a stopped process left without an outcome, recorded `interrupted` (REL-3);
//! [`unaudited`]: the refusals that leave no audit record, counted for the console;
//! [`upstream_tasks`]: following the tasks upstreams run calls as; [`pinning`]: tools whose
//! definitions changed, held for review (GOV-9). [`state`] says what the
//! gateway holds, and [`snapshot`] what it knows at one instant.

#![allow(
    deprecated,
    reason = "logging is still part of the 2025-11-25 protocol"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use warden_core::authority::{Authority, AuthorityError};
use warden_core::pipeline::Clock;
use warden_core::principal::{Credential, CredentialRejection};
use warden_core::tool::ToolDescriptor;
use warden_store::{Approval, Store};

use crate::builtin;
use crate::upstream::{RelayLog, Upstreams};
use warden_runtime::Secrets;

mod approvals;
mod authority;
mod execution;
mod federation;
mod listing;
mod live;
mod pinning;
mod reconcile;
mod snapshot;
mod state;
mod unaudited;
mod upstream_tasks;

pub use approvals::{DecideError, Verb};
pub use snapshot::Snapshot;
pub use state::Gateway;
pub use unaudited::{OTHER as UNAUDITED_OTHER, Unaudited};
pub use upstream_tasks::{TaskAnswer, TaskOp};

use approvals::Approvals;
use authority::Authorities;
use listing::WireCache;
use upstream_tasks::UpstreamTasks;

/// Options of the gateway.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// Where `${secret:NAME}` files live.
    pub secrets_dir: Option<PathBuf>,
    /// How often the store's revision is polled.
    pub poll_interval: Duration,
    /// The clock every decision, approval and record of the gateway reads (the system's; a
    /// test's that moves only when told to).
    pub clock: Arc<dyn Clock>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self {
            secrets_dir: None,
            poll_interval: Duration::from_millis(250),
            clock: Arc::new(warden_runtime::SystemClock),
        }
    }
}

impl Gateway {
    /// Loads configuration and credentials, starts the upstreams and the watcher.
    pub async fn start(store: Arc<Store>, options: GatewayOptions) -> Arc<Self> {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (pins_tx, pins_rx) = mpsc::unbounded_channel();
        let upstreams = Upstreams::new(
            events_tx,
            Secrets::new(options.secrets_dir.clone()),
            Some(RelayLog::new(store.clone(), options.clock.clone())),
        );
        let task_ids = upstream_tasks::task_ids(&store).await;
        let gateway = Arc::new(Self {
            store,
            clock: options.clock.clone(),
            snapshot: ArcSwap::from_pointee(Snapshot::empty()),
            upstreams,
            builtins: builtin::descriptors(),
            catalog_changed: broadcast::channel(16).0,
            problems: Default::default(),
            authorities: Authorities::default(),
            wire: WireCache::default(),
            task_ids,
            public_url: std::sync::OnceLock::new(),
            unaudited: Default::default(),
            pin_writes: pins_tx,
            pin_definitions: Default::default(),
            cancel: CancellationToken::new(),
        });
        gateway.refresh().await;
        tokio::spawn(live::watch(
            Arc::downgrade(&gateway),
            events_rx,
            pins_rx,
            options.poll_interval,
            gateway.cancel.clone(),
        ));
        tokio::spawn(reconcile::sweep_forever(
            Arc::downgrade(&gateway),
            gateway.cancel.clone(),
        ));
        gateway
    }

    /// Stops the watcher and every upstream.
    pub fn shutdown(&self) {
        self.cancel.cancel();
        self.upstreams.shutdown();
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The gateway's clock, which the services beside it share.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The upstreams.
    pub fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// Verifies a bearer token against the in-memory credential table (a hash lookup).
    pub fn authenticate(&self, token: &str) -> Result<Credential, CredentialRejection> {
        authority::authenticate(&self.peek(), token, self.clock.now())
    }

    /// The authority of a run, re-resolved from the current policy (RUN-8). Without a
    /// loaded policy or a reachable store, the run keeps its knowledge and gets no tools.
    pub fn authority(
        &self,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Arc<Authority>, AuthorityError> {
        self.authorities.authority(&self.peek(), credential, agent)
    }

    /// The tools `tools/list` shows this run: exactly those the decision function lets it see.
    pub fn list_tools(&self, authority: &Authority) -> Vec<Arc<ToolDescriptor>> {
        // `visible` is the scope step of `decide(…, Purpose::List)`, through the catalog's
        // project index: no pass over the tools of other projects.
        warden_core::decision::visible(authority, &self.peek().catalog)
    }

    /// Every tool of the catalog (governance `off`).
    pub fn all_tools(&self) -> Vec<Arc<ToolDescriptor>> {
        self.peek().catalog.iter().cloned().collect()
    }

    /// `tools/list` in MCP form, each tool converted once per catalog (PERF-3).
    pub fn list_wire_tools(&self, tools: &[Arc<ToolDescriptor>]) -> Vec<rmcp::model::Tool> {
        self.wire.tools(&self.peek().catalog, tools)
    }

    /// [`Gateway::list_wire_tools`] as a JSON array, each tool written once per catalog, so
    /// that an answer costs a copy of its bytes (PERF-3). `None` when a tool cannot be
    /// serialized.
    pub fn list_wire_json(&self, tools: &[Arc<ToolDescriptor>]) -> Option<Vec<u8>> {
        self.wire.json(&self.peek().catalog, tools)
    }

    /// The server instructions of a run (RUN-1, RUN-5).
    pub fn instructions(&self, authority: &Authority) -> String {
        crate::knowledge::instructions(&self.peek().policy, authority)
    }

    /// SEP-2243: whether a 2026-07-28 HTTP call's `Mcp-Param-*` headers agree with its
    /// arguments, for a tool that mirrors arguments in headers and that the run may see (a
    /// hidden tool is left to the pipeline, which answers it as unknown, RUN-6). A
    /// disagreement is a header mismatch (-32020), answered before anything is recorded, like
    /// the other header checks.
    pub fn check_param_headers(
        &self,
        authority: &Authority,
        name: &str,
        args: Option<&Map<String, Value>>,
        headers: &http::HeaderMap,
    ) -> Result<(), rmcp::ErrorData> {
        let snapshot = self.peek();
        let Some(tool) = snapshot.catalog.get(name) else {
            return Ok(());
        };
        if tool.header_arguments.is_empty()
            || warden_core::decision::resolve_tool(&snapshot.catalog, authority, name).is_err()
        {
            return Ok(());
        }
        warden_core::param_headers::check(&tool.header_arguments, args, |header| {
            headers
                .get_all(header)
                .iter()
                .map(http::HeaderValue::as_bytes)
                .collect()
        })
        .map_err(|reason| {
            rmcp::ErrorData::new(rmcp::model::ErrorCode::HEADER_MISMATCH, reason, None)
        })
    }

    /// Sets the server's public base URL (`http://127.0.0.1:8600`), once bound.
    pub fn set_public_url(&self, url: String) {
        let _ = self.public_url.set(url);
    }

    /// The server's base URL (`http://127.0.0.1:8600`), once bound.
    pub fn public_url(&self) -> Option<&str> {
        self.public_url.get().map(String::as_str)
    }

    /// The console's page of approval `id`, when the server's URL is known.
    pub fn approval_url(&self, id: &str) -> Option<String> {
        self.public_url
            .get()
            .map(|base| format!("{}/approvals/{id}", base.trim_end_matches('/')))
    }

    /// The id `caller` gets for task `task` that the upstream of catalog tool `tool` made
    /// (the tasks extension).
    pub fn upstream_task_id(&self, caller: &str, tool: &str, task: &str) -> Option<String> {
        self.upstream_tasks().issue(caller, tool, task)
    }

    /// `op` on the upstream task `id`, for `caller` with `authority`, the client's `era` and
    /// its `capabilities`. Someone else's task, one of an upstream the run may no longer use,
    /// and one that does not exist are all unknown (-32602).
    pub async fn upstream_task(
        &self,
        authority: &Authority,
        caller: &str,
        id: &str,
        era: crate::era::Era,
        capabilities: Option<&rmcp::model::ClientCapabilities>,
        op: TaskOp,
    ) -> Result<TaskAnswer, rmcp::ErrorData> {
        self.upstream_tasks()
            .run(authority, caller, id, era, capabilities, op)
            .await
    }

    fn upstream_tasks(&self) -> UpstreamTasks<'_> {
        UpstreamTasks { gateway: self }
    }

    fn approvals(&self) -> Approvals<'_> {
        Approvals { gateway: self }
    }

    /// A parked call as a task of its requester (APR-7): the approval `id` when `authority` is
    /// the very requester that parked it (the same credential, or the same agent run), else
    /// nothing — someone else's parked call answers exactly like one that does not exist.
    pub async fn parked_call(
        &self,
        authority: &Authority,
        id: &str,
    ) -> Result<Option<Approval>, warden_store::StoreError> {
        let Some(approval) = self.store.approval(id).await? else {
            return Ok(None);
        };
        let requester = approval
            .requested_by
            .as_deref()
            .and_then(|r| serde_json::from_str::<Value>(r).ok());
        let asking = serde_json::to_value(warden_core::approval::provenance_of(authority)).ok();
        Ok((requester.is_some() && requester == asking).then_some(approval))
    }

    /// Decides a parked call as `decider` (APR-4, APR-6).
    pub async fn decide_approval(
        &self,
        id: &str,
        decider: &Credential,
        verb: Verb,
        reason: Option<String>,
    ) -> Result<Approval, DecideError> {
        self.approvals().decide(id, decider, verb, reason).await
    }

    /// One pass of the approvals sweeper: expire undecided approvals, run staged actions whose
    /// veto window passed, resume approved actions whose decider stopped before executing,
    /// and mark executions interrupted by a crash as failed. `startup` treats every execution
    /// in progress as interrupted (an embedded store has one server).
    pub async fn sweep_approvals(&self, startup: bool) {
        self.approvals().sweep(startup).await;
    }
}

/// The agent runner's view of the gateway.
impl warden_work::agents::Gateway for Gateway {
    fn policy(&self) -> Arc<warden_core::policy::Policy> {
        self.snapshot().policy.clone()
    }

    fn store(&self) -> &Arc<Store> {
        Gateway::store(self)
    }

    fn refresh(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(Gateway::refresh(self))
    }

    fn authority(
        &self,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Arc<Authority>, AuthorityError> {
        Gateway::authority(self, credential, agent)
    }

    fn set_public_url(&self, url: String) {
        Gateway::set_public_url(self, url);
    }

    fn clock(&self) -> &Arc<dyn Clock> {
        Gateway::clock(self)
    }

    fn call<'a>(
        &'a self,
        authority: &'a Authority,
        run: &'a warden_core::pipeline::RunState,
        tool: &'a str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = warden_core::contract::CallOutcome> + Send + 'a>,
    > {
        Box::pin(Gateway::call(
            self,
            authority,
            run,
            tool,
            Some(args),
            warden_core::pipeline::Governance::On,
            None,
        ))
    }
}
