//! The governed gateway, one instance shared by every transport (GOV-8), made of four parts:
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
//! [`upstream_tasks`]: following the tasks upstreams run calls as.
//! [`Gateway`] holds the parts and is what the handler and the server talk to.

#![allow(
    deprecated,
    reason = "logging is still part of the 2025-11-25 protocol"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use warden_core::authority::{Authority, AuthorityError};
use warden_core::contract::CallOutcome;
use warden_core::pipeline::{Clock, Governance, RunState};
use warden_core::principal::{Credential, CredentialRejection};
use warden_core::tool::ToolDescriptor;
use warden_store::{Approval, Store};

use crate::builtin;
use crate::client::ClientContext;
use crate::upstream::{RelayLog, Upstreams};
use warden_runtime::Secrets;

mod approvals;
mod authority;
mod execution;
mod federation;
mod listing;
mod live;
mod reconcile;
mod upstream_tasks;

pub use approvals::{DecideError, Verb};
pub use live::Snapshot;
pub use upstream_tasks::{TaskAnswer, TaskOp};

use approvals::Approvals;
use authority::Authorities;
use listing::WireCache;
use live::Live;
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

/// The gateway.
#[derive(Debug)]
pub struct Gateway {
    live: Arc<Live>,
    authorities: Authorities,
    wire: WireCache,
    task_ids: crate::upstream_task_ids::TaskIds,
    /// The server's public base URL, once bound: where the console's pages are.
    public_url: std::sync::OnceLock<String>,
    cancel: CancellationToken,
}

impl Gateway {
    /// Loads configuration and credentials, starts the upstreams and the watcher.
    pub async fn start(store: Arc<Store>, options: GatewayOptions) -> Arc<Self> {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let upstreams = Upstreams::new(
            events_tx,
            Secrets::new(options.secrets_dir.clone()),
            Some(RelayLog::new(store.clone(), options.clock.clone())),
        );
        let task_ids = upstream_tasks::task_ids(&store).await;
        let live = Arc::new(Live::new(
            store,
            upstreams,
            builtin::descriptors(),
            options.clock.clone(),
        ));
        let gateway = Arc::new(Self {
            live: live.clone(),
            authorities: Authorities::default(),
            wire: WireCache::default(),
            task_ids,
            public_url: std::sync::OnceLock::new(),
            cancel: CancellationToken::new(),
        });
        live.reload().await;
        tokio::spawn(live::watch(
            Arc::downgrade(&live),
            events_rx,
            options.poll_interval,
            gateway.cancel.clone(),
        ));
        tokio::spawn(reconcile::sweep_forever(
            Arc::downgrade(&live),
            gateway.cancel.clone(),
        ));
        gateway
    }

    /// Stops the watcher and every upstream.
    pub fn shutdown(&self) {
        self.cancel.cancel();
        self.live.upstreams.shutdown();
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.live.snapshot()
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.live.store
    }

    /// The gateway's clock, which the services beside it share.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.live.clock
    }

    /// The upstreams.
    pub fn upstreams(&self) -> &Upstreams {
        &self.live.upstreams
    }

    /// Notified whenever the catalog changes (for `notifications/tools/list_changed`).
    pub fn subscribe_catalog(&self) -> broadcast::Receiver<()> {
        self.live.subscribe_catalog()
    }

    /// How many clients hear list changes now: open 2025-11-25 sessions and 2026-07-28
    /// `subscriptions/listen` streams that asked for them.
    pub fn catalog_followers(&self) -> usize {
        self.live.catalog_followers()
    }

    /// Waits until every upstream has connected, or failed twice in a row, bounded by
    /// `timeout`; then builds the catalog, so that the first `tools/list` sees every tool
    /// known by then.
    pub async fn wait_for_upstreams(&self, timeout: Duration) {
        self.live.wait_for_upstreams(timeout).await;
    }

    /// Reloads configuration and credentials now, instead of at the next poll.
    pub async fn refresh(&self) {
        self.live.reload().await;
    }

    /// Verifies a bearer token against the in-memory credential table (a hash lookup).
    pub fn authenticate(&self, token: &str) -> Result<Credential, CredentialRejection> {
        authority::authenticate(&self.live.peek(), token, self.live.clock.now())
    }

    /// The authority of a run, re-resolved from the current policy (RUN-8). Without a
    /// loaded policy or a reachable store, the run keeps its knowledge and gets no tools.
    pub fn authority(
        &self,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Arc<Authority>, AuthorityError> {
        self.authorities
            .authority(&self.live.peek(), credential, agent)
    }

    /// The tools `tools/list` shows this run: exactly those the decision function lets it see.
    pub fn list_tools(&self, authority: &Authority) -> Vec<Arc<ToolDescriptor>> {
        // `visible` is the scope step of `decide(…, Purpose::List)`, through the catalog's
        // project index: no pass over the tools of other projects.
        warden_core::decision::visible(authority, &self.live.peek().catalog)
    }

    /// Every tool of the catalog (governance `off`).
    pub fn all_tools(&self) -> Vec<Arc<ToolDescriptor>> {
        self.live.peek().catalog.iter().cloned().collect()
    }

    /// `tools/list` in MCP form, each tool converted once per catalog (PERF-3).
    pub fn list_wire_tools(&self, tools: &[Arc<ToolDescriptor>]) -> Vec<rmcp::model::Tool> {
        self.wire.tools(&self.live.peek().catalog, tools)
    }

    /// [`Gateway::list_wire_tools`] as a JSON array, each tool written once per catalog, so
    /// that an answer costs a copy of its bytes (PERF-3). `None` when a tool cannot be
    /// serialized.
    pub fn list_wire_json(&self, tools: &[Arc<ToolDescriptor>]) -> Option<Vec<u8>> {
        self.wire.json(&self.live.peek().catalog, tools)
    }

    /// The server instructions of a run (RUN-1, RUN-5).
    pub fn instructions(&self, authority: &Authority) -> String {
        crate::knowledge::instructions(&self.live.peek().policy, authority)
    }

    /// `prompts/list`.
    pub fn prompts(&self, authority: &Authority) -> Vec<rmcp::model::Prompt> {
        self.live.prompts(authority)
    }

    /// `prompts/get`, for the calling `client` (what an upstream asks meanwhile goes to it).
    pub async fn get_prompt(
        &self,
        authority: &Authority,
        request: rmcp::model::GetPromptRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<rmcp::model::GetPromptResponse, rmcp::ErrorData> {
        self.live.get_prompt(authority, request, client).await
    }

    /// `resources/list`.
    pub fn resources(&self, authority: &Authority) -> Vec<rmcp::model::Resource> {
        self.live.resources(authority)
    }

    /// `resources/read`, for the calling `client` (what an upstream asks meanwhile goes to it).
    pub async fn read_resource(
        &self,
        authority: &Authority,
        request: rmcp::model::ReadResourceRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
        self.live.read_resource(authority, request, client).await
    }

    /// `resources/templates/list`.
    pub fn resource_templates(&self, authority: &Authority) -> Vec<rmcp::model::ResourceTemplate> {
        self.live.resource_templates(authority)
    }

    /// `resources/subscribe`, or one URI of `subscriptions/listen`; `key` names the
    /// subscriber for [`Gateway::unsubscribe`].
    pub async fn subscribe(
        &self,
        authority: &Authority,
        uri: &str,
        key: &str,
        subscriber: crate::upstream::Subscriber,
    ) -> Result<(), rmcp::ErrorData> {
        self.live.subscribe(authority, uri, key, subscriber).await
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe(
        &self,
        authority: &Authority,
        uri: &str,
        session: &str,
    ) -> Result<(), rmcp::ErrorData> {
        self.live.unsubscribe(authority, uri, session).await
    }

    /// `completion/complete`, for the calling `client` (its progress, logs, cancellation).
    pub async fn complete(
        &self,
        authority: &Authority,
        params: rmcp::model::CompleteRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<rmcp::model::CompleteResult, rmcp::ErrorData> {
        self.live.complete(authority, params, client).await
    }

    /// `logging/setLevel`.
    pub async fn set_log_level(
        &self,
        authority: &Authority,
        params: rmcp::model::SetLevelRequestParams,
    ) {
        self.live.set_log_level(authority, params).await;
    }

    /// One `tools/call`: governed (GOV-2), or executed without decisions and still recorded
    /// (governance `off`, GOV-6); `client` is the calling client's side of the call, for what
    /// the upstream sends meanwhile and for cancellation (none when no client waits).
    pub async fn call(
        &self,
        authority: &Authority,
        run: &RunState,
        name: &str,
        args: Option<Map<String, Value>>,
        governance: Governance,
        client: Option<ClientContext>,
    ) -> CallOutcome {
        self.live
            .call(authority, run, name, args, governance, client)
            .await
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
        let snapshot = self.live.peek();
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

    /// `op` on the upstream task `id`, for `caller` with `authority` and the client's
    /// `capabilities`. Someone else's task, one of an upstream the run may no longer use, and
    /// one that does not exist are all unknown (-32602).
    pub async fn upstream_task(
        &self,
        authority: &Authority,
        caller: &str,
        id: &str,
        capabilities: Option<&rmcp::model::ClientCapabilities>,
        op: TaskOp,
    ) -> Result<TaskAnswer, rmcp::ErrorData> {
        self.upstream_tasks()
            .run(authority, caller, id, capabilities, op)
            .await
    }

    fn upstream_tasks(&self) -> UpstreamTasks<'_> {
        UpstreamTasks {
            live: &self.live,
            task_ids: &self.task_ids,
        }
    }

    fn approvals(&self) -> Approvals<'_> {
        Approvals {
            live: &self.live,
            authorities: &self.authorities,
        }
    }

    /// A parked call as a task of its requester (APR-7): the approval `id` when `authority` is
    /// the very requester that parked it (the same credential, or the same agent run), else
    /// nothing — someone else's parked call answers exactly like one that does not exist.
    pub async fn parked_call(
        &self,
        authority: &Authority,
        id: &str,
    ) -> Result<Option<Approval>, warden_store::StoreError> {
        let Some(approval) = self.live.store.approval(id).await? else {
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
}
