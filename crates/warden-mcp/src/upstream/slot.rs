//! One upstream as the gateway sees it: what it offers (kept while it is down, so its tools
//! stay listed and fail with `UNAVAILABLE`), its status, its connection and exit, and the
//! requests that go to it.

#![allow(
    deprecated,
    reason = "resources/subscribe and logging are part of the 2025-11-25 protocol"
)]

use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, InputRequiredResult, JsonObject, Prompt,
    Resource, ResourceTemplate, ServerResult, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use warden_core::config::UpstreamSpec;
use warden_core::error::ExecError;
use warden_core::tool::UpstreamTool;

use super::exit::Exit;
use super::failure::{CallError, humanize, short};
use super::input::{Inputs, Unanswered, error_result};
use super::peer::PeerExit;
use super::relays::{InFlightTable, RelayLog, narrowed, offered};
use super::subscriptions::{Subscriber, Subscriptions};
use super::suspend::{Owner, Suspensions};
use crate::client::ClientContext;
use crate::era::Era;
use crate::http_client::request_failure;

/// The capabilities a calling client declared.
fn capabilities_of(client: Option<&ClientContext>) -> Option<&rmcp::model::ClientCapabilities> {
    client.and_then(|c| c.capabilities.as_ref())
}

/// Default time an upstream call may take.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a list request, a subscription or a log level may take (a prompt or a resource,
/// which may ask the client questions, has the call's timeout).
pub(super) const LIST_TIMEOUT: Duration = Duration::from_secs(15);
/// How many `input_required` rounds Warden drives for a 2025-11-25 client before giving up.
pub(super) const MAX_INPUT_ROUNDS: usize = 10;

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

/// What an upstream offers, as last listed.
#[derive(Debug, Default, PartialEq)]
pub struct Offer {
    /// Its tools: the schemas as text, each distinct annotation set once (PERF-3).
    pub tools: Vec<UpstreamTool>,
    /// Its prompts (upstream names).
    pub prompts: Vec<Prompt>,
    /// Its resources.
    pub resources: Vec<Resource>,
    /// Its resource templates.
    pub templates: Vec<ResourceTemplate>,
}

/// A live connection: the rmcp client (lists, prompts, resources, subscriptions, logging)
/// and the exit its `tools/call` take, in the era the upstream was reached in; and, for an
/// upstream reached in 2026-07-28 that speaks 2025-11-25 too, a 2025-11-25 session that the
/// requests of 2025-11-25 clients that can be asked something take (docs/mcp.md, "Which era a
/// client's request reaches an upstream in"): there, what the upstream asks during a request
/// reaches the client in its own way, and `resources/subscribe` is known.
#[derive(Clone, Debug)]
pub(super) struct Connection {
    pub(super) peer: Peer<RoleClient>,
    pub(super) exit: Exit,
    pub(super) era: Era,
    pub(super) session: Option<PeerExit>,
}

impl Connection {
    /// The 2025-11-25 session a request of a client in `era` with `capabilities` takes, while
    /// the session is open: a 2025-11-25 client's that declares something a server may ask
    /// during a request (elicitation, sampling, roots). Asking is all a session adds to a
    /// request; a client that cannot be asked keeps the stateless exit, which costs less
    /// (`scripts/bench.sh eras`).
    fn session_for(
        &self,
        era: Option<Era>,
        capabilities: Option<&rmcp::model::ClientCapabilities>,
    ) -> Option<&PeerExit> {
        let askable = capabilities
            .is_some_and(|c| c.elicitation.is_some() || c.sampling.is_some() || c.roots.is_some());
        let legacy = era == Some(Era::V2025_11_25) && askable;
        self.session
            .as_ref()
            .filter(|s| legacy && !s.peer.is_transport_closed())
    }

    /// The session side: the 2025-11-25 session when there is one, else the connection, with
    /// the upstream's era on it. Subscriptions go there (`resources/subscribe`, which an
    /// upstream that speaks both eras knows in 2025-11-25, when its 2026-07-28 side may not
    /// know `subscriptions/listen`), and `logging/setLevel`, a 2025-11-25 client's request.
    fn session_or_connection(&self) -> (&Peer<RoleClient>, Era) {
        match &self.session {
            Some(s) if !s.peer.is_transport_closed() => (&s.peer, Era::V2025_11_25),
            _ => (&self.peer, self.era),
        }
    }
}

#[derive(Debug)]
struct SlotState {
    connection: Option<Connection>,
    offer: Arc<Offer>,
    status: UpstreamStatus,
}

/// What an upstream answered to `tools/call`.
#[derive(Debug)]
pub enum UpstreamAnswer {
    /// A result (the upstream's own errors included).
    Complete(CallToolResult),
    /// A 2026-07-28 `input_required` result for a 2026-07-28 client to fulfil and retry.
    InputRequired(InputRequiredResult),
    /// A JSON-RPC error, for the client as it came.
    Refused(rmcp::ErrorData),
    /// The upstream runs the call as a task, for a client that declared the tasks extension.
    Task(rmcp::model::CreateTaskResult),
}

/// One upstream and what its supervisor keeps up to date.
#[derive(Debug)]
pub struct UpstreamSlot {
    /// Its configuration.
    pub spec: UpstreamSpec,
    state: RwLock<SlotState>,
    /// Stops its supervisor.
    pub(super) cancel: CancellationToken,
    /// Asks its supervisor to check the connection and list the offer again.
    pub(super) refresh: Arc<Notify>,
    pub(super) inflight: Arc<InFlightTable>,
    pub(super) subscriptions: Arc<Subscriptions>,
    /// Requests suspended for a 2026-07-28 client's answers (2025-11-25 upstreams).
    pub(super) suspended: Arc<Suspensions>,
    pub(super) log: Option<RelayLog>,
}

/// What a call carries to its upstream beyond the request: the caller's exchanged token
/// (AUTH-6) and the trace context of Warden's span for the round trip (OPS-3).
#[derive(Default)]
pub struct Outgoing {
    /// The bearer that replaces the configured `Authorization`.
    pub bearer: Option<std::sync::Arc<str>>,
    /// Told in `_meta` (and in the headers on the HTTP exit).
    pub trace: Option<crate::trace::TraceContext>,
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outgoing")
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .field("trace", &self.trace)
            .finish()
    }
}

impl UpstreamSlot {
    pub(super) fn new(spec: UpstreamSpec, log: Option<RelayLog>) -> Self {
        Self {
            spec,
            state: RwLock::new(SlotState {
                connection: None,
                offer: Arc::default(),
                status: UpstreamStatus::Starting,
            }),
            cancel: CancellationToken::new(),
            refresh: Arc::new(Notify::new()),
            inflight: Arc::default(),
            subscriptions: Arc::default(),
            suspended: Arc::default(),
            log,
        }
    }

    /// The rmcp exit over `peer` (for the supervisor, and for requests that always take it).
    pub(super) fn peer_exit(&self, peer: &Peer<RoleClient>) -> PeerExit {
        PeerExit {
            peer: peer.clone(),
            inflight: self.inflight.clone(),
            suspended: self.suspended.clone(),
        }
    }

    /// What the upstream offers, as last listed (kept while it is down).
    pub fn offer(&self) -> Arc<Offer> {
        self.state
            .read()
            .map(|s| s.offer.clone())
            .unwrap_or_default()
    }

    /// Whether a resource URI is this upstream's: listed, or matching one of its templates
    /// (up to the template's first variable).
    pub fn owns(&self, uri: &str) -> bool {
        let offer = self.offer();
        offer.resources.iter().any(|r| r.uri == uri)
            || offer.templates.iter().any(|t| {
                let prefix = t.uri_template.split('{').next().unwrap_or_default();
                !prefix.is_empty() && uri.starts_with(prefix)
            })
    }

    /// The current status.
    pub fn status(&self) -> UpstreamStatus {
        self.state
            .read()
            .map(|s| s.status.clone())
            .unwrap_or(UpstreamStatus::Starting)
    }

    /// Whether `offer` differs from the last one: in anything clients see — tools, prompts,
    /// resources, resource templates (for the supervisor).
    pub(super) fn offer_differs(&self, offer: &Offer) -> bool {
        *self.offer() != *offer
    }

    /// Connected: the connection, its offer and protocol (for the supervisor).
    pub(super) fn connected(&self, connection: Connection, offer: Offer, protocol: String) {
        self.set(|s| {
            s.connection = Some(connection);
            s.offer = Arc::new(offer);
            s.status = UpstreamStatus::Up { protocol };
        });
    }

    /// A new offer on the same connection, with the exit chosen for it (for the supervisor).
    pub(super) fn reoffered(&self, exit: Exit, offer: Offer) {
        self.set(|s| {
            if let Some(connection) = s.connection.as_mut() {
                connection.exit = exit;
            }
            s.offer = Arc::new(offer);
        });
    }

    /// Disconnected, for `reason` (for the supervisor); the offer is kept.
    pub(super) fn disconnected(&self, reason: String, failures: u32) {
        self.set(|s| {
            s.connection = None;
            s.status = UpstreamStatus::Down { reason, failures };
        });
    }

    fn set(&self, f: impl FnOnce(&mut SlotState)) {
        if let Ok(mut s) = self.state.write() {
            f(&mut s);
        }
    }

    /// The live connection, or why there is none.
    fn connection(&self) -> Result<Connection, String> {
        let connection = self.state.read().ok().and_then(|s| s.connection.clone());
        match connection {
            Some(c) if !c.peer.is_transport_closed() => Ok(c),
            _ => Err(self.unavailable()),
        }
    }

    /// Why there is no live connection.
    fn unavailable(&self) -> String {
        let reason = match self.status() {
            UpstreamStatus::Down { reason, .. } => format!(": {reason}"),
            _ => String::new(),
        };
        format!("upstream `{}` is unavailable{reason}", self.spec.name)
    }

    /// The live connection, as a client's JSON-RPC error when there is none.
    fn live(&self) -> Result<Connection, rmcp::ErrorData> {
        self.connection()
            .map_err(|e| rmcp::ErrorData::internal_error(e, None))
    }

    /// The rmcp client a request of `client` takes and the upstream's era on it: the
    /// 2025-11-25 session for a 2025-11-25 client when there is one, else the connection's.
    pub(super) fn rmcp_route(
        &self,
        client: Option<&ClientContext>,
    ) -> Result<(PeerExit, Era), rmcp::ErrorData> {
        let connection = self.live()?;
        Ok(
            match connection.session_for(client.map(|c| c.era), capabilities_of(client)) {
                Some(session) => (session.clone(), Era::V2025_11_25),
                None => (self.peer_exit(&connection.peer), connection.era),
            },
        )
    }

    /// The exit a `tools/call` of `client` takes and the upstream's era on it (as
    /// [`Self::rmcp_route`]; for a 2026-07-28 client the connection's own exit). A call that
    /// acts as its caller (`acting`, AUTH-6) leaves by the HTTP exit only, whose requests each
    /// carry their own bearer.
    fn call_route(
        &self,
        client: Option<&ClientContext>,
        acting: bool,
    ) -> Result<(Exit, Era), String> {
        let state = self.state.read().map_err(|_| self.unavailable())?;
        match &state.connection {
            Some(c) if acting => match &c.exit {
                Exit::Http(_) => Ok((c.exit.clone(), c.era)),
                Exit::Peer(_) => Err(format!(
                    "upstream `{}` acts as its caller, and its calls cannot each carry their \
                     own bearer: {}",
                    self.spec.name,
                    match c.era {
                        Era::V2025_11_25 => "it speaks 2025-11-25, whose calls share a session",
                        Era::V2026_07_28 =>
                            "a tool name needs rmcp's header encoding, or a configured header \
                             could not be resolved (see the log)",
                    }
                )),
            },
            Some(c) if !c.peer.is_transport_closed() => Ok(
                match c.session_for(client.map(|c| c.era), capabilities_of(client)) {
                    Some(session) => (Exit::Peer(session.clone()), Era::V2025_11_25),
                    None => (c.exit.clone(), c.era),
                },
            ),
            _ => {
                drop(state);
                Err(self.unavailable())
            }
        }
    }

    /// Subscribes a client (a 2025-11-25 session or a 2026-07-28 listen stream) to a resource
    /// of this upstream, subscribing upstream once per URI in the upstream's own era.
    pub async fn subscribe(
        &self,
        uri: &str,
        key: &str,
        subscriber: Subscriber,
    ) -> Result<(), rmcp::ErrorData> {
        let connection = self.live()?;
        if !self.subscriptions.add(uri, key, subscriber) {
            return Ok(());
        }
        let (peer, era) = connection.session_or_connection();
        let subscribed = self.subscribe_upstream(peer, era, uri).await;
        if subscribed.is_err() {
            self.subscriptions.remove(uri, key);
        }
        subscribed
    }

    /// Subscribes the upstream to `uri` over `peer`, in its `era` there:
    /// `resources/subscribe`, or a `subscriptions/listen` stream whose updates are passed on
    /// until the last subscriber leaves.
    async fn subscribe_upstream(
        &self,
        peer: &Peer<RoleClient>,
        era: Era,
        uri: &str,
    ) -> Result<(), rmcp::ErrorData> {
        if era == Era::V2026_07_28 {
            let filter = SubscriptionFilter::builder()
                .resource_subscriptions(vec![uri.to_owned()])
                .build();
            let stream = self.answer(peer.listen(filter)).await?;
            self.subscriptions
                .keep_listening(self.spec.name.as_str(), peer.clone(), uri, stream);
            Ok(())
        } else {
            self.answer(peer.subscribe(SubscribeRequestParams::new(uri.to_owned())))
                .await
        }
    }

    /// Subscribes the upstream again to every URI clients are subscribed to, after it
    /// (re)connected: a new session or connection knows none of them (for the supervisor).
    pub(super) async fn resubscribe(&self) {
        let Ok(connection) = self.live() else { return };
        let (peer, era) = connection.session_or_connection();
        for uri in self.subscriptions.uris() {
            if let Err(e) = self.subscribe_upstream(peer, era, &uri).await {
                tracing::warn!(upstream = %self.spec.name, uri, error = %e.message, "cannot subscribe to a resource again");
            }
        }
    }

    /// Unsubscribes a client (unsubscribing upstream when it was the last; a listen stream
    /// ends with its last subscriber).
    pub async fn unsubscribe(&self, uri: &str, key: &str) -> Result<(), rmcp::ErrorData> {
        if self.subscriptions.remove(uri, key)
            && let Ok(connection) = self.live()
            && let (peer, Era::V2025_11_25) = connection.session_or_connection()
        {
            let _ = peer
                .unsubscribe(UnsubscribeRequestParams::new(uri.to_owned()))
                .await;
        }
        Ok(())
    }

    /// Forwards `logging/setLevel` (a 2025-11-25 request: to the 2025-11-25 session when there
    /// is one, where that client's requests go), when the upstream offers logging.
    pub async fn set_log_level(&self, params: SetLevelRequestParams) {
        let Ok(connection) = self.live() else { return };
        let peer = connection.session_or_connection().0;
        if peer
            .peer_info()
            .is_some_and(|i| i.capabilities.logging.is_some())
        {
            let _ = tokio::time::timeout(LIST_TIMEOUT, peer.set_level(params)).await;
        }
    }

    /// A tasks-extension request (`tasks/get`, `tasks/update`, `tasks/cancel`) for one of this
    /// upstream's tasks, from a client in `era` (on the session its calls took, where the task
    /// was made), telling it what the calling client can answer (as for the call that made
    /// the task).
    pub async fn task_request(
        &self,
        request: ClientRequest,
        era: Era,
        capabilities: Option<&rmcp::model::ClientCapabilities>,
    ) -> Result<ServerResult, rmcp::ErrorData> {
        let connection = self.live()?;
        let peer = match connection.session_for(Some(era), capabilities) {
            Some(session) => session.peer.clone(),
            None => connection.peer,
        };
        let mut options = PeerRequestOptions::with_timeout(LIST_TIMEOUT);
        if let Some(capabilities) = capabilities {
            let policy = self.spec.relay.clone().unwrap_or_default();
            let mut meta = rmcp::model::RequestMetaObject::default();
            meta.set_client_capabilities(narrowed(capabilities, &policy));
            options.meta = Some(meta);
        }
        let handle = peer
            .send_cancellable_request(request, options)
            .await
            .map_err(|e| rmcp::ErrorData::internal_error(short(&request_failure(&e)), None))?;
        self.answer(handle.await_response()).await
    }

    /// Whether the relay policy lets what a task asks reach the client.
    pub fn relays(&self, request: &rmcp::model::InputRequest) -> bool {
        let policy = self.spec.relay.clone().unwrap_or_default();
        match request {
            rmcp::model::InputRequest::Elicitation(_) => policy.elicitation,
            rmcp::model::InputRequest::CreateMessage(_) => policy.sampling,
            _ => policy.roots,
        }
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
                format!(
                    "upstream `{}`: {}",
                    self.spec.name,
                    short(&request_failure(&e))
                ),
                None,
            )),
            Err(_) => Err(rmcp::ErrorData::internal_error(
                format!("upstream `{}` did not answer", self.spec.name),
                None,
            )),
        }
    }

    /// Calls a tool of this upstream by its own name through its exit, relaying what the
    /// upstream sends meanwhile to the calling `client` and the client's cancellation to the
    /// upstream.
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
        client: Option<&ClientContext>,
        outgoing: &Outgoing,
    ) -> Result<UpstreamAnswer, ExecError> {
        let name = &self.spec.name;
        let bearer = outgoing.bearer.as_deref();
        let (exit, era) = self
            .call_route(client, bearer.is_some())
            .map_err(ExecError::Unavailable)?;
        let timeout = self.spec.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT);
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(args) = args {
            params = params.with_arguments(args);
        }
        if let Some(retry) = client.and_then(|c| c.retry.clone()) {
            params.input_responses = Some(retry.input_responses);
            params.request_state = retry.request_state;
        }
        if let Some(trace) = &outgoing.trace {
            let meta = params.meta.get_or_insert_with(Default::default);
            meta.set_traceparent(trace.traceparent());
            if let Some(state) = &trace.state {
                meta.set_tracestate(state.clone());
            }
        }
        let policy = self.spec.relay.clone().unwrap_or_default();
        // An upstream hears, per call, what the calling client can answer when that differs
        // from what Warden offers on its own behalf (a 2025-11-25 upstream built on rmcp reads
        // it too; others ignore it); a 2026-07-28 upstream also the level to log at (it logs
        // only when asked).
        if let Some(c) = client {
            if let Some(level) = c.log_level.filter(|_| era == Era::V2026_07_28) {
                params
                    .meta
                    .get_or_insert_with(Default::default)
                    .set_log_level(level);
            }
            if let Some(capabilities) = &c.capabilities {
                let told = narrowed(capabilities, &policy);
                if told != offered(&policy) {
                    params
                        .meta
                        .get_or_insert_with(Default::default)
                        .set_client_capabilities(told);
                }
            }
        }
        let inputs = Inputs {
            upstream: name.as_str(),
            policy: &policy,
            log: self.log.as_ref(),
        };
        // A retry of a call a 2025-11-25 upstream asked questions in: the answers go to the
        // suspended request (the upstream itself knows nothing of `inputResponses`).
        let mut resumed = None;
        if let Some(c) = client
            && let Some(retry) = &c.retry
            && era == Era::V2025_11_25
        {
            params.input_responses = None;
            params.request_state = None;
            if let Some(state) = &retry.request_state {
                let owner = Owner::of(client, "tools/call", tool, params.arguments.as_ref());
                let responses = retry.input_responses.clone();
                resumed = Some(Box::pin(self.suspended.resume(state, &owner, responses, c)).await);
            }
        }
        for _ in 0..MAX_INPUT_ROUNDS {
            let answer = match resumed.take() {
                Some(answer) => answer,
                None => exit.call(&params, client, timeout, bearer).await,
            };
            let answer = match answer {
                Ok(answer) => answer,
                Err(e) => return self.failed(e),
            };
            let needed = match answer {
                ServerResult::CallToolResult(result) => {
                    return Ok(UpstreamAnswer::Complete(result));
                }
                ServerResult::CreateTaskResult(task) => return Ok(UpstreamAnswer::Task(task)),
                ServerResult::InputRequiredResult(needed) => needed,
                _ => {
                    return Err(ExecError::Unavailable(format!(
                        "upstream `{name}` answered tools/call with something else"
                    )));
                }
            };
            let run_id = client.map_or("", |c| c.run_id.as_str());
            // The rare paths boxed, so that the call's future (held by every future around it)
            // is no larger than the round trip it usually is.
            if let Some(refusal) = Box::pin(inputs.refusal(&needed, run_id)).await {
                return Ok(UpstreamAnswer::Complete(refusal));
            }
            let responses = match client {
                Some(c) if c.era == Era::V2026_07_28 => {
                    Box::pin(inputs.passed_on(&needed, run_id)).await;
                    return Ok(UpstreamAnswer::InputRequired(needed));
                }
                Some(c) => match Box::pin(inputs.ask(c, &needed)).await {
                    Ok(responses) => responses,
                    Err(Unanswered::Cancelled) => return Err(ExecError::Cancelled),
                    Err(Unanswered::Refused(why)) => {
                        return Ok(UpstreamAnswer::Complete(error_result(why)));
                    }
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

    /// What a failed round trip means for the call: a refusal is the upstream's own error
    /// result; anything else makes the call `UNAVAILABLE` (and a transport failure has the
    /// supervisor check the connection now).
    fn failed(&self, e: CallError) -> Result<UpstreamAnswer, ExecError> {
        let name = &self.spec.name;
        match e {
            CallError::Refused(error) => Ok(UpstreamAnswer::Refused(error)),
            CallError::Unreachable(why) => {
                self.refresh.notify_one();
                Err(ExecError::Unavailable(format!(
                    "upstream `{name}` is unavailable: {}",
                    short(&why)
                )))
            }
            CallError::TimedOut => Err(ExecError::Unavailable(format!(
                "upstream `{name}` did not answer within {}",
                humanize(self.spec.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT))
            ))),
            CallError::Cancelled => Err(ExecError::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn an_offer_that_differs_only_in_its_resource_templates_differs() {
        let spec =
            serde_json::from_value(serde_json::json!({"name": "u", "project": "p"})).unwrap();
        let slot = UpstreamSlot::new(spec, None);
        assert!(!slot.offer_differs(&Offer::default()));
        let templated = Offer {
            templates: vec![ResourceTemplate::new("notes://{id}", "note")],
            ..Offer::default()
        };
        assert!(slot.offer_differs(&templated));
    }
}
