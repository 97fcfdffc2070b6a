//! Upstream MCP servers (FED-1, FED-2): stdio children and Streamable HTTP URLs, each kept by
//! a supervisor task that connects (negotiating 2026-07-28, falling back to 2025-11-25),
//! caches its tool list, refreshes it on `list_changed` and on a timer, and reconnects with
//! exponential backoff. A dead upstream makes its tools fail with `UNAVAILABLE`; the others
//! are not affected.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    GetPromptRequestParams, GetPromptResponse, Implementation, JsonObject, Prompt, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, Resource, Tool,
};
use rmcp::service::{
    ClientCacheConfig, ClientLifecycleMode, ClientServiceExt as _, NotificationContext, Peer,
    RunningService, ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient};
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use warden_core::config::UpstreamSpec;
use warden_core::name::Name;
use warden_core::pipeline::ExecError;

use crate::secrets::Secrets;

/// Default time an upstream call may take.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
const LIST_TIMEOUT: Duration = Duration::from_secs(15);
const MIN_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// What the supervisor knows about an upstream.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum UpstreamStatus {
    /// Connecting for the first time.
    Starting,
    /// Connected.
    Up {
        /// Negotiated protocol version.
        protocol: String,
    },
    /// Not connected; a reconnection is scheduled.
    Down {
        /// Why, safe to show.
        reason: String,
        /// Consecutive failures.
        failures: u32,
    },
}

#[derive(Debug)]
struct SlotState {
    peer: Option<Peer<RoleClient>>,
    tools: Arc<Vec<Tool>>,
    prompts: Arc<Vec<Prompt>>,
    resources: Arc<Vec<Resource>>,
    status: UpstreamStatus,
}

/// What an upstream offers besides tools.
#[derive(Debug, Default)]
struct Offer {
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
}

/// One upstream and its supervisor.
#[derive(Debug)]
pub struct UpstreamSlot {
    /// Its configuration.
    pub spec: UpstreamSpec,
    state: RwLock<SlotState>,
    cancel: CancellationToken,
    refresh: Arc<Notify>,
}

impl UpstreamSlot {
    /// The last known tool list (kept while the upstream is down, so its tools stay listed
    /// and fail with `UNAVAILABLE`).
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        self.state
            .read()
            .map(|s| s.tools.clone())
            .unwrap_or_default()
    }

    /// The last known prompts (upstream names).
    pub fn prompts(&self) -> Arc<Vec<Prompt>> {
        self.state
            .read()
            .map(|s| s.prompts.clone())
            .unwrap_or_default()
    }

    /// The last known resources.
    pub fn resources(&self) -> Arc<Vec<Resource>> {
        self.state
            .read()
            .map(|s| s.resources.clone())
            .unwrap_or_default()
    }

    fn live_peer(&self) -> Result<Peer<RoleClient>, String> {
        self.peer()
            .filter(|p| !p.is_transport_closed())
            .ok_or_else(|| format!("upstream `{}` is unavailable", self.spec.name))
    }

    /// Gets a prompt by the upstream's own name (read-only federation).
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, rmcp::ErrorData> {
        let peer = self
            .live_peer()
            .map_err(|e| rmcp::ErrorData::internal_error(e, None))?;
        match tokio::time::timeout(LIST_TIMEOUT, peer.get_prompt_once(params)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(ServiceError::McpError(e))) => Err(e),
            Ok(Err(e)) => Err(rmcp::ErrorData::internal_error(
                format!("upstream `{}`: {}", self.spec.name, short(&e.to_string())),
                None,
            )),
            Err(_) => Err(rmcp::ErrorData::internal_error(
                format!("upstream `{}` did not answer", self.spec.name),
                None,
            )),
        }
    }

    /// Reads a resource of this upstream (read-only federation).
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, rmcp::ErrorData> {
        let peer = self
            .live_peer()
            .map_err(|e| rmcp::ErrorData::internal_error(e, None))?;
        match tokio::time::timeout(LIST_TIMEOUT, peer.read_resource_once(params)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(ServiceError::McpError(e))) => Err(e),
            Ok(Err(e)) => Err(rmcp::ErrorData::internal_error(
                format!("upstream `{}`: {}", self.spec.name, short(&e.to_string())),
                None,
            )),
            Err(_) => Err(rmcp::ErrorData::internal_error(
                format!("upstream `{}` did not answer", self.spec.name),
                None,
            )),
        }
    }

    /// The current status.
    pub fn status(&self) -> UpstreamStatus {
        self.state
            .read()
            .map(|s| s.status.clone())
            .unwrap_or(UpstreamStatus::Starting)
    }

    fn peer(&self) -> Option<Peer<RoleClient>> {
        self.state.read().ok().and_then(|s| s.peer.clone())
    }

    fn set(&self, f: impl FnOnce(&mut SlotState)) {
        if let Ok(mut s) = self.state.write() {
            f(&mut s);
        }
    }

    /// Calls a tool of this upstream by its own name.
    pub async fn call(
        &self,
        tool: &str,
        args: Option<JsonObject>,
    ) -> Result<CallToolResult, ExecError> {
        let name = &self.spec.name;
        let Some(peer) = self.peer().filter(|p| !p.is_transport_closed()) else {
            let reason = match self.status() {
                UpstreamStatus::Down { reason, .. } => format!(": {reason}"),
                _ => String::new(),
            };
            return Err(ExecError::Unavailable(format!(
                "upstream `{name}` is unavailable{reason}"
            )));
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(args) = args {
            params = params.with_arguments(args);
        }
        let timeout = self.spec.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT);
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            // The upstream answered with a JSON-RPC error: it executed the request and refused it.
            Ok(Err(ServiceError::McpError(e))) => {
                let mut r = CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
                    "upstream `{name}` answered with an error: {}",
                    e.message
                ))]);
                r.is_error = Some(true);
                Ok(r)
            }
            Ok(Err(e)) => {
                // A transport failure: let the supervisor check the connection now.
                self.refresh.notify_one();
                Err(ExecError::Unavailable(format!(
                    "upstream `{name}` is unavailable: {}",
                    short(&e.to_string())
                )))
            }
            Err(_) => Err(ExecError::Unavailable(format!(
                "upstream `{name}` did not answer within {}",
                humanize(timeout)
            ))),
        }
    }
}

fn humanize(d: Duration) -> String {
    if d.as_secs() > 0 && d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

fn short(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    line.chars().take(200).collect()
}

/// A change worth rebuilding the catalog for.
#[derive(Clone, Debug)]
pub struct UpstreamEvent {
    /// Which upstream changed (tools or status).
    pub upstream: Name,
}

/// All upstreams.
#[derive(Debug)]
pub struct Upstreams {
    slots: RwLock<HashMap<Name, Arc<UpstreamSlot>>>,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    secrets: Secrets,
}

impl Upstreams {
    /// No upstreams yet; events about them go to `events`.
    pub fn new(events: mpsc::UnboundedSender<UpstreamEvent>, secrets: Secrets) -> Self {
        Self {
            slots: RwLock::new(HashMap::new()),
            events,
            secrets,
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
            let slot = Arc::new(UpstreamSlot {
                spec: spec.clone(),
                state: RwLock::new(SlotState {
                    peer: None,
                    tools: Arc::new(Vec::new()),
                    prompts: Arc::new(Vec::new()),
                    resources: Arc::new(Vec::new()),
                    status: UpstreamStatus::Starting,
                }),
                cancel: CancellationToken::new(),
                refresh: Arc::new(Notify::new()),
            });
            slots.insert(spec.name.clone(), slot.clone());
            tokio::spawn(supervise(slot, self.events.clone(), self.secrets.clone()));
        }
    }

    /// How upstream (and runner) credentials are resolved.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// One upstream.
    pub fn get(&self, name: &str) -> Option<Arc<UpstreamSlot>> {
        self.slots.read().ok().and_then(|s| s.get(name).cloned())
    }

    /// Every upstream.
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

#[derive(Clone)]
struct UpstreamClient {
    refresh: Arc<Notify>,
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("warden", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    async fn on_prompt_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    async fn on_resource_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }
}

type Client = RunningService<RoleClient, UpstreamClient>;

async fn connect(
    spec: &UpstreamSpec,
    secrets: &Secrets,
    refresh: Arc<Notify>,
) -> Result<Client, String> {
    let handler = UpstreamClient { refresh };
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let name = spec.name.clone();
    let connecting = async {
        if let Some(stdio) = &spec.stdio {
            let mut cmd = tokio::process::Command::new(&stdio.command);
            cmd.args(&stdio.args);
            for (k, v) in &stdio.env {
                cmd.env(k, secrets.resolve(v)?);
            }
            if let Some(cwd) = &stdio.cwd {
                cmd.current_dir(cwd);
            }
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start `{}`: {e}", stdio.command))?;
            if let Some(stderr) = stderr {
                let name = name.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::info!(upstream = %name, "{line}");
                    }
                });
            }
            handler
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| format!("MCP handshake failed: {e}"))
        } else if let Some(http) = &spec.http {
            let mut headers = HashMap::new();
            for (k, v) in &http.headers {
                let value = secrets.resolve(v)?;
                let name = http::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| format!("`{k}` is not a valid header name"))?;
                let value = http::HeaderValue::from_str(&value)
                    .map_err(|_| format!("the value of header `{k}` is not valid"))?;
                headers.insert(name, value);
            }
            let config = StreamableHttpClientTransportConfig::with_uri(http.url.clone())
                .custom_headers(headers);
            handler
                .serve_with_lifecycle(
                    StreamableHttpClientTransport::from_config(config),
                    lifecycle,
                )
                .await
                .map_err(|e| format!("cannot connect to {}: {}", http.url, short(&e.to_string())))
        } else {
            Err("neither stdio nor http is configured".to_owned())
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, connecting)
        .await
        .map_err(|_| format!("no MCP handshake within {}s", CONNECT_TIMEOUT.as_secs()))?
}

async fn fetch<T>(
    what: &str,
    call: impl std::future::Future<Output = Result<Vec<T>, ServiceError>>,
) -> Result<Vec<T>, String> {
    match tokio::time::timeout(LIST_TIMEOUT, call).await {
        Ok(Ok(items)) => Ok(items),
        Ok(Err(e)) => Err(format!("{what} failed: {}", short(&e.to_string()))),
        Err(_) => Err(format!("{what} did not answer")),
    }
}

/// Tools, and prompts and resources when the upstream offers them.
async fn fetch_offer(peer: &Peer<RoleClient>) -> Result<Offer, String> {
    let capabilities = peer.peer_info().map(|i| i.capabilities.clone());
    let tools = fetch("tools/list", peer.list_all_tools()).await?;
    let prompts = match capabilities.as_ref().and_then(|c| c.prompts.as_ref()) {
        Some(_) => fetch("prompts/list", peer.list_all_prompts()).await?,
        None => Vec::new(),
    };
    let resources = match capabilities.as_ref().and_then(|c| c.resources.as_ref()) {
        Some(_) => fetch("resources/list", peer.list_all_resources()).await?,
        None => Vec::new(),
    };
    Ok(Offer {
        tools,
        prompts,
        resources,
    })
}

/// Keeps one upstream connected until cancelled.
async fn supervise(
    slot: Arc<UpstreamSlot>,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    secrets: Secrets,
) {
    let name = slot.spec.name.clone();
    let notify = || {
        let _ = events.send(UpstreamEvent {
            upstream: name.clone(),
        });
    };
    let refresh_every = Duration::from_secs(30);
    let mut backoff = MIN_BACKOFF;
    let mut failures = 0u32;
    loop {
        if slot.cancel.is_cancelled() {
            return;
        }
        let started = Instant::now();
        let reason = match connect(&slot.spec, &secrets, slot.refresh.clone()).await {
            Err(reason) => reason,
            Ok(client) => {
                let peer = client.peer().clone();
                peer.set_response_cache_config(ClientCacheConfig::disabled())
                    .await;
                let protocol = client
                    .peer_info()
                    .map(|i| i.protocol_version.to_string())
                    .unwrap_or_default();
                match fetch_offer(&peer).await {
                    Err(reason) => {
                        client.cancellation_token().cancel();
                        reason
                    }
                    Ok(offer) => {
                        tracing::info!(
                            upstream = %name, tools = offer.tools.len(), prompts = offer.prompts.len(),
                            resources = offer.resources.len(), %protocol, "upstream connected"
                        );
                        failures = 0;
                        slot.set(|s| {
                            s.peer = Some(peer.clone());
                            s.tools = Arc::new(offer.tools);
                            s.prompts = Arc::new(offer.prompts);
                            s.resources = Arc::new(offer.resources);
                            s.status = UpstreamStatus::Up { protocol };
                        });
                        notify();
                        let reason =
                            run_connected(&slot, client, &peer, refresh_every, &notify).await;
                        if slot.cancel.is_cancelled() {
                            return;
                        }
                        reason
                    }
                }
            }
        };
        failures += 1;
        if started.elapsed() > STABLE_AFTER {
            backoff = MIN_BACKOFF;
        }
        tracing::warn!(upstream = %name, %reason, retry_in_ms = backoff.as_millis() as u64, "upstream unavailable");
        slot.set(|s| {
            s.peer = None;
            s.status = UpstreamStatus::Down {
                reason: reason.clone(),
                failures,
            };
        });
        notify();
        tokio::select! {
            () = slot.cancel.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Serves one connection: refreshes tools on `list_changed` and on a timer, and returns why
/// the connection ended.
async fn run_connected(
    slot: &UpstreamSlot,
    client: Client,
    peer: &Peer<RoleClient>,
    refresh_every: Duration,
    notify: &impl Fn(),
) -> String {
    let ct = client.cancellation_token();
    let mut waiting = tokio::spawn(client.waiting());
    let mut timer = tokio::time::interval(refresh_every);
    timer.tick().await;
    loop {
        tokio::select! {
            () = slot.cancel.cancelled() => {
                ct.cancel();
                let _ = (&mut waiting).await;
                return "stopped".into();
            }
            ended = &mut waiting => {
                return match ended {
                    Ok(Ok(reason)) => format!("the connection ended ({reason:?})"),
                    _ => "the connection ended".into(),
                };
            }
            () = slot.refresh.notified() => {}
            _ = timer.tick() => {}
        }
        if peer.is_transport_closed() {
            ct.cancel();
            return "the connection closed".into();
        }
        match fetch_offer(peer).await {
            Ok(offer) => {
                let changed = *slot.tools() != offer.tools
                    || *slot.prompts() != offer.prompts
                    || *slot.resources() != offer.resources;
                if changed {
                    tracing::info!(upstream = %slot.spec.name, tools = offer.tools.len(), "upstream offer changed");
                    slot.set(|s| {
                        s.tools = Arc::new(offer.tools);
                        s.prompts = Arc::new(offer.prompts);
                        s.resources = Arc::new(offer.resources);
                    });
                    notify();
                }
            }
            Err(reason) => {
                ct.cancel();
                return reason;
            }
        }
    }
}
