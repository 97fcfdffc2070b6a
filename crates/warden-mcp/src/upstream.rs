//! Upstream MCP servers (FED-1, FED-2): stdio children and Streamable HTTP URLs, each kept by
//! a supervisor task that connects (negotiating 2026-07-28, falling back to 2025-11-25),
//! caches its tool list, refreshes it on `list_changed` and on a timer, and reconnects with
//! exponential backoff. A dead upstream makes its tools fail with `UNAVAILABLE`; the others
//! are not affected.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

#[allow(
    deprecated,
    reason = "sampling and logging are still part of the 2025-11-25 protocol"
)]
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, InputRequest, InputRequiredResult, JsonObject,
    LoggingMessageNotificationParam, ProgressNotificationParam, Prompt, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, Resource, ServerResult, Tool,
};
use rmcp::service::{
    ClientCacheConfig, ClientLifecycleMode, ClientServiceExt as _, NotificationContext, Peer,
    PeerRequestOptions, RequestContext, RunningService, ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient};
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use warden_core::config::UpstreamSpec;
use warden_core::error::ExecError;
use warden_core::name::Name;
use warden_core::schema::SchemaText;
use warden_core::tool::UpstreamTool;

use crate::direct::{DirectError, DirectHttp};
use crate::relay::{DOWNSTREAM, InFlight, InFlightTable, Relay};
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
    /// The direct path for `tools/call`, when the upstream is HTTP and speaks 2026-07-28.
    direct: Option<Arc<DirectHttp>>,
    tools: Arc<Vec<UpstreamTool>>,
    prompts: Arc<Vec<Prompt>>,
    resources: Arc<Vec<Resource>>,
    templates: Arc<Vec<rmcp::model::ResourceTemplate>>,
    status: UpstreamStatus,
}

/// What an upstream offers besides tools.
#[derive(Debug, Default)]
struct Offer {
    tools: Vec<UpstreamTool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<rmcp::model::ResourceTemplate>,
}

/// Clients subscribed to resources of one upstream (2025-11-25 `resources/subscribe`), by
/// URI and by session.
#[derive(Debug, Default)]
pub struct Subscriptions {
    by_uri:
        std::sync::Mutex<HashMap<String, HashMap<String, rmcp::service::Peer<rmcp::RoleServer>>>>,
}

impl Subscriptions {
    /// Adds a session's subscription; `true` when it is the first for that URI.
    fn add(&self, uri: &str, session: &str, peer: rmcp::service::Peer<rmcp::RoleServer>) -> bool {
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
    fn remove(&self, uri: &str, session: &str) -> bool {
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

    fn subscribers(&self, uri: &str) -> Vec<rmcp::service::Peer<rmcp::RoleServer>> {
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

/// One upstream and its supervisor.
#[derive(Debug)]
pub struct UpstreamSlot {
    /// Its configuration.
    pub spec: UpstreamSpec,
    state: RwLock<SlotState>,
    cancel: CancellationToken,
    refresh: Arc<Notify>,
    inflight: Arc<InFlightTable>,
    subscriptions: Arc<Subscriptions>,
    store: Option<Arc<warden_store::Store>>,
}

/// What an upstream answered to `tools/call`.
#[derive(Debug)]
pub enum UpstreamAnswer {
    /// A result (the upstream's own errors included).
    Complete(CallToolResult),
    /// A 2026-07-28 `input_required` result for a 2026-07-28 client to fulfil and retry.
    InputRequired(InputRequiredResult),
}

/// How long after a call ends a log message of its upstream still counts as the call's.
const JUST_ENDED: Duration = Duration::from_secs(1);

/// How many `input_required` rounds Warden drives for a 2025-11-25 client before giving up.
const MAX_INPUT_ROUNDS: usize = 10;

/// A tool error result saying why a call could not finish.
fn error_result(message: String) -> CallToolResult {
    let mut r = CallToolResult::error(vec![rmcp::model::ContentBlock::text(message)]);
    r.is_error = Some(true);
    r
}

impl UpstreamSlot {
    /// The last known tool list (kept while the upstream is down, so its tools stay listed
    /// and fail with `UNAVAILABLE`).
    pub fn tools(&self) -> Arc<Vec<UpstreamTool>> {
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

    /// The last known resource templates.
    pub fn templates(&self) -> Arc<Vec<rmcp::model::ResourceTemplate>> {
        self.state
            .read()
            .map(|s| s.templates.clone())
            .unwrap_or_default()
    }

    /// Whether a resource URI is this upstream's: listed, or matching one of its templates
    /// (up to the template's first variable).
    pub fn owns(&self, uri: &str) -> bool {
        self.resources().iter().any(|r| r.uri == uri)
            || self.templates().iter().any(|t| {
                let prefix = t.uri_template.split('{').next().unwrap_or_default();
                !prefix.is_empty() && uri.starts_with(prefix)
            })
    }

    /// Subscribes a client session to a resource of this upstream (subscribing upstream
    /// once).
    #[allow(
        deprecated,
        reason = "resources/subscribe is part of the 2025-11-25 protocol"
    )]
    pub async fn subscribe(
        &self,
        uri: &str,
        session: &str,
        client: rmcp::service::Peer<rmcp::RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        let peer = self
            .live_peer()
            .map_err(|e| rmcp::ErrorData::internal_error(e, None))?;
        if self.subscriptions.add(uri, session, client) {
            peer.subscribe(rmcp::model::SubscribeRequestParams::new(uri.to_owned()))
                .await
                .map_err(|e| match e {
                    ServiceError::McpError(e) => e,
                    other => rmcp::ErrorData::internal_error(other.to_string(), None),
                })?;
        }
        Ok(())
    }

    /// Unsubscribes a client session (unsubscribing upstream when it was the last).
    #[allow(
        deprecated,
        reason = "resources/unsubscribe is part of the 2025-11-25 protocol"
    )]
    pub async fn unsubscribe(&self, uri: &str, session: &str) -> Result<(), rmcp::ErrorData> {
        if self.subscriptions.remove(uri, session)
            && let Ok(peer) = self.live_peer()
        {
            let _ = peer
                .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri.to_owned()))
                .await;
        }
        Ok(())
    }

    fn live_peer(&self) -> Result<Peer<RoleClient>, String> {
        self.peer()
            .filter(|p| !p.is_transport_closed())
            .ok_or_else(|| format!("upstream `{}` is unavailable", self.spec.name))
    }

    /// Forwards `logging/setLevel` (when the upstream offers logging).
    #[allow(
        deprecated,
        reason = "logging is still part of the 2025-11-25 protocol"
    )]
    pub async fn set_log_level(&self, params: rmcp::model::SetLevelRequestParams) {
        let Ok(peer) = self.live_peer() else { return };
        if peer
            .peer_info()
            .is_some_and(|i| i.capabilities.logging.is_some())
        {
            let _ = tokio::time::timeout(LIST_TIMEOUT, peer.set_level(params)).await;
        }
    }

    /// Gets a prompt by the upstream's own name (read-only federation).
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, rmcp::ErrorData> {
        let peer = self
            .live_peer()
            .map_err(|e| rmcp::ErrorData::internal_error(e, None))?;
        self.answer(peer.get_prompt_once(params)).await
    }

    /// `completion/complete` for one of this upstream's prompts or resource templates.
    pub async fn complete(
        &self,
        params: rmcp::model::CompleteRequestParams,
    ) -> Result<rmcp::model::CompleteResult, rmcp::ErrorData> {
        let peer = self
            .live_peer()
            .map_err(|e| rmcp::ErrorData::internal_error(e, None))?;
        self.answer(peer.complete(params)).await
    }

    /// The upstream's answer to a read-only request, bounded by the list timeout; its own
    /// protocol errors pass through, anything else names the upstream.
    async fn answer<T>(
        &self,
        request: impl std::future::Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, rmcp::ErrorData> {
        match tokio::time::timeout(LIST_TIMEOUT, request).await {
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
        self.answer(peer.read_resource_once(params)).await
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

    fn peer_and_direct(&self) -> (Option<Peer<RoleClient>>, Option<Arc<DirectHttp>>) {
        self.state
            .read()
            .map(|s| (s.peer.clone(), s.direct.clone()))
            .unwrap_or_default()
    }

    fn set(&self, f: impl FnOnce(&mut SlotState)) {
        if let Ok(mut s) = self.state.write() {
            f(&mut s);
        }
    }

    /// Calls a tool of this upstream by its own name, relaying what the upstream sends
    /// meanwhile to the calling client and the client's cancellation to the upstream.
    ///
    /// A 2026-07-28 `input_required` answer goes back to a 2026-07-28 client as it is (the
    /// client retries, and the retry is governed again); for a 2025-11-25 client Warden asks
    /// it the input requests itself, as elicitation, sampling or roots requests on the call's
    /// stream, and retries the upstream with the answers. Either way the relay policy applies
    /// and every request is recorded.
    pub async fn call(
        &self,
        tool: &str,
        args: Option<JsonObject>,
    ) -> Result<UpstreamAnswer, ExecError> {
        let name = &self.spec.name;
        let (peer, direct) = self.peer_and_direct();
        let direct = direct.filter(|d| d.serves(tool));
        let Some(peer) = peer.filter(|p| !p.is_transport_closed()) else {
            let reason = match self.status() {
                UpstreamStatus::Down { reason, .. } => format!(": {reason}"),
                _ => String::new(),
            };
            return Err(ExecError::Unavailable(format!(
                "upstream `{name}` is unavailable{reason}"
            )));
        };
        let downstream = DOWNSTREAM.try_with(Clone::clone).ok();
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(args) = args {
            params = params.with_arguments(args);
        }
        if let Some(retry) = downstream.as_ref().and_then(|d| d.retry.clone()) {
            params.input_responses = Some(retry.input_responses);
            params.request_state = retry.request_state;
        }
        for _ in 0..MAX_INPUT_ROUNDS {
            let answer = match &direct {
                Some(direct) => {
                    self.call_direct(direct, &params, downstream.as_ref())
                        .await?
                }
                None => {
                    self.call_once(&peer, params.clone(), downstream.as_ref())
                        .await?
                }
            };
            let needed = match answer {
                ServerResult::CallToolResult(result) => {
                    return Ok(UpstreamAnswer::Complete(result));
                }
                ServerResult::InputRequiredResult(needed) => needed,
                _ => {
                    return Err(ExecError::Unavailable(format!(
                        "upstream `{name}` answered tools/call with something else"
                    )));
                }
            };
            let run_id = downstream.as_ref().map_or("", |d| d.run_id.as_str());
            if let Some(refusal) = self.refuse_inputs(&needed, run_id).await {
                return Ok(UpstreamAnswer::Complete(refusal));
            }
            let responses = match downstream.as_ref() {
                Some(d) if d.stateless => {
                    for (_, request) in needed.input_requests.iter().flatten() {
                        self.record_input(
                            run_id,
                            request,
                            true,
                            "passed to the client as input_required",
                        )
                        .await;
                    }
                    return Ok(UpstreamAnswer::InputRequired(needed));
                }
                Some(d) => match self.ask_client(d, &needed).await {
                    Ok(responses) => responses,
                    Err(why) => return Ok(UpstreamAnswer::Complete(error_result(why))),
                },
                None => {
                    return Ok(UpstreamAnswer::Complete(error_result(format!(
                        "upstream `{name}` needs input from a client, and none is attached to this call"
                    ))));
                }
            };
            params.input_responses = Some(responses);
            params.request_state = needed.request_state;
        }
        Ok(UpstreamAnswer::Complete(error_result(format!(
            "upstream `{name}` still needed input after {MAX_INPUT_ROUNDS} rounds"
        ))))
    }

    /// The kind of an input request, as relay records name it.
    fn input_kind(request: &InputRequest) -> &'static str {
        match request {
            InputRequest::Elicitation(_) => "elicitation/create",
            InputRequest::CreateMessage(_) => "sampling/createMessage",
            _ => "roots/list",
        }
    }

    async fn record_input(
        &self,
        run_id: &str,
        request: &InputRequest,
        relayed: bool,
        detail: &str,
    ) {
        crate::relay::record(
            self.store.as_ref(),
            self.spec.name.as_str(),
            run_id,
            Self::input_kind(request),
            relayed,
            detail,
        )
        .await;
    }

    /// An error result when the relay policy refuses one of the input requests (recorded).
    async fn refuse_inputs(
        &self,
        needed: &InputRequiredResult,
        run_id: &str,
    ) -> Option<CallToolResult> {
        let policy = self.spec.relay.clone().unwrap_or_default();
        for (_, request) in needed.input_requests.iter().flatten() {
            let allowed = match request {
                InputRequest::Elicitation(_) => policy.elicitation,
                InputRequest::CreateMessage(_) => policy.sampling,
                _ => true,
            };
            if !allowed {
                self.record_input(
                    run_id,
                    request,
                    false,
                    "relay disabled by the upstream's policy",
                )
                .await;
                return Some(error_result(format!(
                    "upstream `{}` asked for {}, which is not relayed for this upstream (relay policy)",
                    self.spec.name,
                    Self::input_kind(request)
                )));
            }
        }
        None
    }

    /// Asks a 2025-11-25 client the input requests, on the call's own stream.
    #[allow(
        deprecated,
        reason = "sampling is still part of the 2025-11-25 protocol"
    )]
    async fn ask_client(
        &self,
        downstream: &crate::relay::Downstream,
        needed: &InputRequiredResult,
    ) -> Result<rmcp::model::InputResponses, String> {
        let mut responses = rmcp::model::InputResponses::new();
        for (key, request) in needed.input_requests.iter().flatten() {
            let peer = &downstream.peer;
            let answer = match request {
                InputRequest::Elicitation(r) => peer
                    .create_elicitation(r.params.clone())
                    .await
                    .map(|a| serde_json::to_value(a).unwrap_or_default()),
                InputRequest::CreateMessage(r) => peer
                    .create_message(r.params.clone())
                    .await
                    .map(|a| serde_json::to_value(a).unwrap_or_default()),
                _ => peer
                    .list_roots()
                    .await
                    .map(|a| serde_json::to_value(a).unwrap_or_default()),
            };
            let kind = Self::input_kind(request);
            match answer {
                Ok(value) => {
                    self.record_input(&downstream.run_id, request, true, "answered by the client")
                        .await;
                    responses.insert(key.clone(), value);
                }
                Err(e) => {
                    let why = format!(
                        "the client did not answer {kind}: {}",
                        short(&e.to_string())
                    );
                    self.record_input(&downstream.run_id, request, false, &why)
                        .await;
                    return Err(why);
                }
            }
        }
        Ok(responses)
    }

    /// One `tools/call` round trip on the direct path (see [`crate::direct`]), with the same
    /// outcomes as [`Self::call_once`].
    async fn call_direct(
        &self,
        direct: &Arc<DirectHttp>,
        params: &CallToolRequestParams,
        downstream: Option<&crate::relay::Downstream>,
    ) -> Result<ServerResult, ExecError> {
        let timeout = self.spec.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT);
        let id = direct.next_id();
        let never = CancellationToken::new();
        let cancelled = downstream.map_or(&never, |d| &d.cancel);
        let tell_upstream = || {
            let direct = direct.clone();
            tokio::spawn(async move { direct.cancel(id).await });
        };
        let answer = tokio::select! {
            answer = tokio::time::timeout(timeout, direct.call(id, params, downstream)) => answer,
            () = cancelled.cancelled() => {
                tell_upstream();
                return Err(ExecError::Cancelled);
            }
        };
        match answer {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(DirectError::Refused(message))) => Ok(self.refused(&message)),
            Ok(Err(DirectError::Transport(why))) => Err(self.unreachable(&why)),
            Err(_elapsed) => {
                tell_upstream();
                Err(self.timed_out(timeout))
            }
        }
    }

    /// One `tools/call` round trip, relaying and cancelling as described on [`Self::call`].
    /// A JSON-RPC error from the upstream is a result with `isError` (it executed the request
    /// and refused it).
    async fn call_once(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        downstream: Option<&crate::relay::Downstream>,
    ) -> Result<ServerResult, ExecError> {
        let timeout = self.spec.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let (relay_tx, mut relays) = mpsc::channel(32);
        let call = InFlight {
            relay: relay_tx,
            run_id: downstream.map(|d| d.run_id.clone()).unwrap_or_default(),
            peer: downstream.map(|d| d.peer.clone()),
        };
        // In flight from before the request leaves: an upstream may ask the client something
        // before `send` even returns. Re-keyed by the request's progress token below.
        static SENDING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let sending = self.inflight.register(
            rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(
                format!(
                    "{}{}",
                    crate::relay::SENDING_PREFIX,
                    SENDING.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                )
                .into(),
            )),
            call.clone(),
        );
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(self.unreachable(&e.to_string())),
        };
        let _registration = self.inflight.register(handle.progress_token.clone(), call);
        drop(sending);
        let request_id = handle.id.clone();
        let mut response = Box::pin(handle.await_response());
        let never = CancellationToken::new();
        let cancelled = downstream.map_or(&never, |d| &d.cancel);
        let answer = loop {
            tokio::select! {
                answer = &mut response => break answer,
                Some(relay) = relays.recv() => crate::relay::perform(downstream, relay).await,
                () = cancelled.cancelled() => {
                    drop(response);
                    let _ = peer
                        .notify_cancelled(CancelledNotificationParam::new(Some(request_id), Some("cancelled by the client".into())))
                        .await;
                    return Err(ExecError::Cancelled);
                }
            }
        };
        // What the upstream sent just before its answer is still the call's. rmcp hands
        // notifications to handler tasks but answers directly, so a notification sent before
        // the answer may still be on its way to `relays`: when the client follows this call's
        // progress, let those tasks run (a few yields, no sleep) before draining.
        let rounds = if downstream.is_some_and(|d| d.progress_token.is_some()) {
            4
        } else {
            1
        };
        for round in 0..rounds {
            if round > 0 {
                tokio::task::yield_now().await;
            }
            while let Ok(relay) = relays.try_recv() {
                crate::relay::perform(downstream, relay).await;
            }
        }
        match answer {
            Ok(result) => Ok(result),
            Err(ServiceError::McpError(e)) => Ok(self.refused(&e.message)),
            Err(ServiceError::Timeout { .. }) => Err(self.timed_out(timeout)),
            Err(e) => Err(self.unreachable(&e.to_string())),
        }
    }

    /// The upstream answered a call with a JSON-RPC error: it executed the request and
    /// refused it, which is a tool error result.
    fn refused(&self, message: &str) -> ServerResult {
        ServerResult::CallToolResult(error_result(format!(
            "upstream `{}` answered with an error: {message}",
            self.spec.name
        )))
    }

    /// A transport failure; the supervisor checks the connection now.
    fn unreachable(&self, why: &str) -> ExecError {
        self.refresh.notify_one();
        ExecError::Unavailable(format!(
            "upstream `{}` is unavailable: {}",
            self.spec.name,
            short(why)
        ))
    }

    /// No answer within the call's timeout.
    fn timed_out(&self, timeout: Duration) -> ExecError {
        ExecError::Unavailable(format!(
            "upstream `{}` did not answer within {}",
            self.spec.name,
            humanize(timeout)
        ))
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
    store: Option<Arc<warden_store::Store>>,
    /// The runtime that created this set: supervisors run there, also when a reload is asked
    /// for from a request on a serving thread (whose runtime ends with its connections).
    runtime: Option<tokio::runtime::Handle>,
}

impl Upstreams {
    /// No upstreams yet; events about them go to `events`; relays are recorded in `store`.
    pub fn new(
        events: mpsc::UnboundedSender<UpstreamEvent>,
        secrets: Secrets,
        store: Option<Arc<warden_store::Store>>,
    ) -> Self {
        Self {
            slots: RwLock::new(HashMap::new()),
            events,
            secrets,
            store,
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
            let slot = Arc::new(UpstreamSlot {
                spec: spec.clone(),
                state: RwLock::new(SlotState {
                    peer: None,
                    direct: None,
                    tools: Arc::new(Vec::new()),
                    prompts: Arc::new(Vec::new()),
                    resources: Arc::new(Vec::new()),
                    templates: Arc::new(Vec::new()),
                    status: UpstreamStatus::Starting,
                }),
                cancel: CancellationToken::new(),
                refresh: Arc::new(Notify::new()),
                inflight: Arc::new(InFlightTable::default()),
                subscriptions: Arc::new(Subscriptions::default()),
                store: self.store.clone(),
            });
            slots.insert(spec.name.clone(), slot.clone());
            let supervisor = supervise(
                slot,
                self.events.clone(),
                self.secrets.clone(),
                self.store.clone(),
            );
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
    name: Name,
    refresh: Arc<Notify>,
    inflight: Arc<InFlightTable>,
    subscriptions: Arc<Subscriptions>,
    relay: warden_core::config::RelaySpec,
    store: Option<Arc<warden_store::Store>>,
}

/// Which call an upstream's server-initiated request belongs to: in 2025-11-25 nothing on the
/// wire says, so it is the one call in flight at that upstream; with several, it is ambiguous
/// and refused rather than guessed.
enum Target {
    One(Arc<InFlight>),
    None,
    Ambiguous(usize),
}

impl UpstreamClient {
    fn target(&self) -> Target {
        let calls = self.inflight.all();
        match calls.len() {
            0 => Target::None,
            1 => calls.into_iter().next().map_or(Target::None, Target::One),
            n => Target::Ambiguous(n),
        }
    }

    async fn record(&self, run_id: &str, what: &str, relayed: bool, detail: &str) {
        crate::relay::record(
            self.store.as_ref(),
            self.name.as_str(),
            run_id,
            what,
            relayed,
            detail,
        )
        .await;
    }

    /// Relays a server-initiated request to the calling client, or refuses it.
    async fn relay<T>(
        &self,
        what: &str,
        allowed: bool,
        make: impl FnOnce(tokio::sync::oneshot::Sender<Result<T, rmcp::ErrorData>>) -> Relay,
    ) -> Result<T, rmcp::ErrorData> {
        let call = match self.target() {
            Target::One(call) => call,
            Target::None => {
                self.record("", what, false, "no call in flight").await;
                return Err(rmcp::ErrorData::invalid_request(
                    format!("{what} outside of a call is not relayed"),
                    None,
                ));
            }
            Target::Ambiguous(n) => {
                self.record(
                    "",
                    what,
                    false,
                    &format!("{n} calls in flight: the requester is ambiguous"),
                )
                .await;
                return Err(rmcp::ErrorData::invalid_request(
                    format!("{what} cannot be relayed: {n} calls are in flight at this upstream"),
                    None,
                ));
            }
        };
        if !allowed {
            self.record(
                &call.run_id,
                what,
                false,
                "relay disabled by the upstream's policy",
            )
            .await;
            return Err(rmcp::ErrorData::invalid_request(
                format!("{what} is not relayed for this upstream (relay policy)"),
                None,
            ));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        if call.relay.send(make(tx)).await.is_err() {
            self.record(&call.run_id, what, false, "the call ended")
                .await;
            return Err(rmcp::ErrorData::internal_error("the call ended", None));
        }
        let answer = rx
            .await
            .unwrap_or_else(|_| Err(rmcp::ErrorData::internal_error("the call ended", None)));
        let detail = match &answer {
            Ok(_) => "answered by the client".to_owned(),
            Err(e) => e.message.to_string(),
        };
        self.record(&call.run_id, what, answer.is_ok(), &detail)
            .await;
        answer
    }
}

/// What Warden says about itself to an upstream: it offers what the relay policy lets
/// through (the calling clients answer).
fn client_config(relay: &warden_core::config::RelaySpec) -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    if relay.elicitation {
        capabilities.elicitation = Some(Default::default());
    }
    if relay.sampling {
        #[allow(
            deprecated,
            reason = "sampling is still part of the 2025-11-25 protocol"
        )]
        {
            capabilities.sampling = Some(Default::default());
        }
    }
    ClientConfig::new(
        capabilities,
        Implementation::new("warden", env!("CARGO_PKG_VERSION")),
    )
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        client_config(&self.relay)
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        if let Some(call) = self.inflight.by_token_or_sending(&params.progress_token) {
            let _ = call.relay.send(Relay::Progress(params)).await;
        }
    }

    #[allow(
        deprecated,
        reason = "logging is still part of the 2025-11-25 protocol"
    )]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        // A 2025-11-25 log message names no call: it goes to the one call in flight at this
        // upstream, or to the one that just ended (a server may send its last message on its
        // standalone stream, racing the result); never to several clients.
        let calls = self.inflight.all();
        if let [call] = calls.as_slice() {
            let _ = call.relay.send(Relay::Log(params)).await;
        } else if let Some(peer) = calls
            .is_empty()
            .then(|| self.inflight.just_ended(JUST_ENDED))
            .flatten()
            .and_then(|c| c.peer.clone())
        {
            let _ = peer.notify_logging_message(params).await;
        } else {
            tracing::info!(upstream = %self.name, level = ?params.level, data = %params.data, calls = calls.len(), "upstream log (not relayed: no single call it belongs to)");
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.relay("elicitation/create", self.relay.elicitation, |tx| {
            Relay::Elicit(params, tx)
        })
        .await
    }

    #[allow(
        deprecated,
        reason = "sampling is still part of the 2025-11-25 protocol"
    )]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        self.relay("sampling/createMessage", self.relay.sampling, |tx| {
            Relay::Sample(Box::new(params), tx)
        })
        .await
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        for client in self.subscriptions.subscribers(&params.uri) {
            let _ = client.notify_resource_updated(params.clone()).await;
        }
    }

    async fn on_prompt_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    async fn on_resource_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }
}

type Client = RunningService<RoleClient, UpstreamClient>;

/// The configured headers of an HTTP upstream, secrets resolved.
fn http_headers(
    http: &warden_core::config::HttpSpec,
    secrets: &Secrets,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    let mut headers = HashMap::new();
    for (k, v) in &http.headers {
        let value = secrets.resolve(v)?;
        let name = http::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("`{k}` is not a valid header name"))?;
        let value = http::HeaderValue::from_str(&value)
            .map_err(|_| format!("the value of header `{k}` is not valid"))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// The direct `tools/call` path for an upstream, when it has one (see [`crate::direct`]).
fn direct_path(
    spec: &UpstreamSpec,
    secrets: &Secrets,
    protocol: Option<ProtocolVersion>,
    tools: &[UpstreamTool],
) -> Option<Arc<DirectHttp>> {
    let http = spec.http.as_ref()?;
    let headers = http_headers(http, secrets).ok()?;
    let client = crate::http_client::shared().ok()?;
    let relay = spec.relay.clone().unwrap_or_default();
    DirectHttp::new(
        client,
        &http.url,
        &headers,
        protocol?,
        &client_config(&relay),
        tools,
    )
    .map(Arc::new)
}

async fn connect(
    spec: &UpstreamSpec,
    secrets: &Secrets,
    refresh: Arc<Notify>,
    inflight: Arc<InFlightTable>,
    subscriptions: Arc<Subscriptions>,
    store: Option<Arc<warden_store::Store>>,
) -> Result<Client, String> {
    let handler = UpstreamClient {
        name: spec.name.clone(),
        refresh,
        inflight,
        subscriptions,
        relay: spec.relay.clone().unwrap_or_default(),
        store,
    };
    let lifecycle = match spec.protocol {
        Some(warden_core::config::UpstreamProtocol::V2025_11_25) => ClientLifecycleMode::Initialize,
        Some(warden_core::config::UpstreamProtocol::V2026_07_28) => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        None => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
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
            let config = StreamableHttpClientTransportConfig::with_uri(http.url.clone())
                .custom_headers(http_headers(http, secrets)?);
            handler
                .serve_with_lifecycle(
                    StreamableHttpClientTransport::with_client(
                        crate::http_client::shared()?,
                        config,
                    ),
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

/// An upstream's tools as Warden keeps them: the schemas as text, each distinct annotation
/// set once (PERF-3).
fn upstream_tools(tools: Vec<Tool>) -> Vec<UpstreamTool> {
    let mut annotations: HashMap<String, Arc<serde_json::Value>> = HashMap::new();
    tools
        .into_iter()
        .map(|tool| UpstreamTool {
            name: tool.name.into_owned(),
            title: tool.title,
            description: tool.description.map(std::borrow::Cow::into_owned),
            input_schema: SchemaText::new(&tool.input_schema),
            output_schema: tool.output_schema.as_deref().map(SchemaText::new),
            annotations: tool.annotations.and_then(|a| {
                let value = serde_json::to_value(a).ok()?;
                let shared = annotations
                    .entry(value.to_string())
                    .or_insert_with(|| Arc::new(value));
                Some(shared.clone())
            }),
        })
        .collect()
}

/// Tools, and prompts and resources when the upstream offers them.
async fn fetch_offer(peer: &Peer<RoleClient>) -> Result<Offer, String> {
    let capabilities = peer.peer_info().map(|i| i.capabilities.clone());
    let tools = fetch("tools/list", peer.list_all_tools()).await?;
    let tools = upstream_tools(tools);
    let prompts = match capabilities.as_ref().and_then(|c| c.prompts.as_ref()) {
        Some(_) => fetch("prompts/list", peer.list_all_prompts()).await?,
        None => Vec::new(),
    };
    let (resources, templates) = match capabilities.as_ref().and_then(|c| c.resources.as_ref()) {
        // Templates are optional for a server offering resources.
        Some(_) => (
            fetch("resources/list", peer.list_all_resources()).await?,
            fetch(
                "resources/templates/list",
                peer.list_all_resource_templates(),
            )
            .await
            .unwrap_or_default(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    Ok(Offer {
        tools,
        prompts,
        resources,
        templates,
    })
}

/// Keeps one upstream connected until cancelled.
async fn supervise(
    slot: Arc<UpstreamSlot>,
    events: mpsc::UnboundedSender<UpstreamEvent>,
    secrets: Secrets,
    store: Option<Arc<warden_store::Store>>,
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
        let reason = match connect(
            &slot.spec,
            &secrets,
            slot.refresh.clone(),
            slot.inflight.clone(),
            slot.subscriptions.clone(),
            store.clone(),
        )
        .await
        {
            Err(reason) => reason,
            Ok(client) => {
                let peer = client.peer().clone();
                peer.set_response_cache_config(ClientCacheConfig::disabled())
                    .await;
                let version = client.peer_info().map(|i| i.protocol_version.clone());
                let protocol = version
                    .as_ref()
                    .map(ToString::to_string)
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
                        let direct =
                            direct_path(&slot.spec, &secrets, version.clone(), &offer.tools);
                        slot.set(|s| {
                            s.peer = Some(peer.clone());
                            s.direct = direct;
                            s.tools = Arc::new(offer.tools);
                            s.prompts = Arc::new(offer.prompts);
                            s.resources = Arc::new(offer.resources);
                            s.templates = Arc::new(offer.templates);
                            s.status = UpstreamStatus::Up { protocol };
                        });
                        notify();
                        let reason =
                            run_connected(&slot, client, &peer, refresh_every, &notify, &|tools| {
                                direct_path(&slot.spec, &secrets, version.clone(), tools)
                            })
                            .await;
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
            s.direct = None;
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
    direct: &impl Fn(&[UpstreamTool]) -> Option<Arc<DirectHttp>>,
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
                    let direct = direct(&offer.tools);
                    slot.set(|s| {
                        s.direct = direct;
                        s.tools = Arc::new(offer.tools);
                        s.prompts = Arc::new(offer.prompts);
                        s.resources = Arc::new(offer.resources);
                        s.templates = Arc::new(offer.templates);
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
