//! Server-to-client traffic of an upstream reached through rmcp (XPORT-4): progress, log
//! messages, elicitation and sampling requests reach the client whose call caused them.
//!
//! In 2025-11-25 nothing in a server-initiated request says which call it belongs to, so each
//! call registers itself in its upstream's [`InFlightTable`] while it runs — under the
//! progress token the upstream knows it by, and its request id — and [`UpstreamClient`], the
//! rmcp client handler of the upstream connection, hands what arrives to that call's task
//! ([`Relay`]), which performs it on its own client. Over Streamable HTTP a request that
//! arrives on the response stream of one of our requests (SEP-2260) belongs to that request;
//! otherwise (stdio, the standalone stream) it goes to the one call in flight, and with
//! several it is ambiguous and refused, never guessed. Every relay and every refusal is
//! recorded in the run's audit trail.

#![allow(deprecated, reason = "relaying 2025-11-25 sampling and logging")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, Implementation, LoggingMessageNotificationParam,
    NumberOrString, ProgressNotificationParam, ProgressToken, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ClientHandler, RoleClient, RoleServer};
use tokio::sync::{Notify, mpsc, oneshot};
use warden_core::audit::{NewRecord, RecordKind, canonical_json};
use warden_core::config::RelaySpec;
use warden_core::name::Name;
use warden_core::pipeline::Clock;
use warden_store::Store;

use super::subscriptions::Subscriptions;
use crate::client::{Relay, Reply};

/// How long after a call ends a log message of its upstream still counts as the call's.
const JUST_ENDED: Duration = Duration::from_secs(1);

/// The prefix of the temporary key a call is registered under while its request is sent.
const SENDING_PREFIX: &str = "warden-sending-";

/// Where the upstreams' relays are recorded: the audit trail in the store, stamped by the
/// gateway's clock.
#[derive(Clone, Debug)]
pub struct RelayLog {
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
}

impl RelayLog {
    /// Relays recorded in `store` at the times of `clock`.
    pub fn new(store: Arc<Store>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }
}

/// Records a relay (or its refusal) in the audit trail of the run it belongs to.
pub(super) async fn record_relay(
    log: Option<&RelayLog>,
    upstream: &str,
    run_id: &str,
    what: &str,
    relayed: bool,
    detail: &str,
) {
    let Some(log) = log else { return };
    let record = NewRecord {
        at: log.clock.now(),
        kind: RecordKind::Relay,
        run_id: if run_id.is_empty() {
            "relay".into()
        } else {
            run_id.to_owned()
        },
        call_id: None,
        principal: None,
        agent: None,
        tool: Some(what.to_owned()),
        decision: Some(if relayed { "relayed" } else { "refused" }.into()),
        code: None,
        payload: canonical_json(&serde_json::json!({
            "upstream": upstream,
            "request": what,
            "relayed": relayed,
            "detail": detail,
        })),
    };
    if let Err(e) = log.store.append_audit(vec![record]).await {
        tracing::error!(upstream, error = %e, "cannot record a relay");
    }
}

/// A call in flight at an upstream.
#[derive(Clone, Debug)]
pub(super) struct InFlight {
    /// Where relays for this call go.
    pub(super) relay: mpsc::Sender<Relay>,
    /// The run, for the audit trail.
    pub(super) run_id: String,
    /// The calling client, for notifications that arrive just after the call ended.
    pub(super) peer: Option<Peer<RoleServer>>,
    /// The id of our request to the upstream, once it was sent.
    pub(super) request: Option<rmcp::model::RequestId>,
}

/// The calls in flight at one upstream, by the progress token the upstream knows them by.
#[derive(Debug, Default)]
pub(super) struct InFlightTable {
    calls: Mutex<HashMap<ProgressToken, Arc<InFlight>>>,
    /// The call that ended last, when it was the only one in flight, and when it ended.
    last: Mutex<Option<(Instant, Arc<InFlight>)>>,
}

fn is_sending_key(token: &ProgressToken) -> bool {
    matches!(&token.0, NumberOrString::String(s) if s.starts_with(SENDING_PREFIX))
}

/// Removes a call from the table when it ends, however it ends.
#[derive(Debug)]
pub(super) struct Registration {
    table: Arc<InFlightTable>,
    token: ProgressToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.table.calls.lock() {
            let ended = calls.remove(&self.token);
            let alone = calls.is_empty();
            if let Ok(mut last) = self.table.last.lock() {
                *last = ended.filter(|_| alone).map(|c| (Instant::now(), c));
            }
        }
    }
}

impl InFlightTable {
    /// Registers a call under its upstream progress token.
    pub(super) fn register(self: &Arc<Self>, token: ProgressToken, call: InFlight) -> Registration {
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(token.clone(), Arc::new(call));
        }
        if let Ok(mut last) = self.last.lock() {
            *last = None;
        }
        Registration {
            table: self.clone(),
            token,
        }
    }

    /// Registers a call whose request is about to be sent, under a temporary key: an
    /// upstream may ask the client something before the send returns the call's token.
    pub(super) fn register_sending(self: &Arc<Self>, call: InFlight) -> Registration {
        static SENDING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SENDING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let key = ProgressToken(NumberOrString::String(
            format!("{SENDING_PREFIX}{n}").into(),
        ));
        self.register(key, call)
    }

    /// The call a progress token belongs to; or, for a token not registered yet, the one call
    /// in flight whose request is still being sent. An upstream may report progress before
    /// the send returns the token the call is re-keyed under (measured: with pooled
    /// connections the first notification often wins that race); while that call is the only
    /// one in flight, the notification can only be its.
    pub(super) fn by_token_or_sending(&self, token: &ProgressToken) -> Option<Arc<InFlight>> {
        let calls = self.calls.lock().ok()?;
        if let Some(call) = calls.get(token) {
            return Some(call.clone());
        }
        let mut entries = calls.iter();
        match (entries.next(), entries.next()) {
            (Some((key, call)), None) if is_sending_key(key) => Some(call.clone()),
            _ => None,
        }
    }

    /// The call that just ended (within `window`), when it was the only one in flight and
    /// none has started since: where a notification the upstream sent at the very end of the
    /// call, on another stream than the result, belongs.
    fn just_ended(&self, window: Duration) -> Option<Arc<InFlight>> {
        if self.calls.lock().map_or(true, |c| !c.is_empty()) {
            return None;
        }
        let last = self.last.lock().ok()?;
        last.as_ref()
            .filter(|(at, _)| at.elapsed() <= window)
            .map(|(_, c)| c.clone())
    }

    /// The call whose request to the upstream has `id`; or, while one call alone is still
    /// being sent (its id not known yet), that one.
    fn by_request(&self, id: &rmcp::model::RequestId) -> Option<Arc<InFlight>> {
        let calls = self.calls.lock().ok()?;
        if let Some(call) = calls.values().find(|c| c.request.as_ref() == Some(id)) {
            return Some(call.clone());
        }
        let mut sending = calls.iter().filter(|(key, _)| is_sending_key(key));
        match (sending.next(), sending.next()) {
            (Some((_, call)), None) => Some(call.clone()),
            _ => None,
        }
    }

    /// The call a log message of the upstream belongs to: the one call in flight. (A
    /// 2025-11-25 log message names no call; with several in flight it is no single call's.)
    pub(super) fn only(&self) -> Option<Arc<InFlight>> {
        match self.all().as_slice() {
            [call] => Some(call.clone()),
            _ => None,
        }
    }

    /// Every call in flight (once, also while it is registered under two tokens).
    fn all(&self) -> Vec<Arc<InFlight>> {
        let mut calls: Vec<Arc<InFlight>> = Vec::new();
        if let Ok(c) = self.calls.lock() {
            for call in c.values() {
                if !calls.iter().any(|k| k.relay.same_channel(&call.relay)) {
                    calls.push(call.clone());
                }
            }
        }
        calls
    }
}

/// What Warden says about itself to an upstream: it offers what the relay policy lets
/// through (the calling clients answer).
pub(super) fn client_config(relay: &RelaySpec) -> ClientConfig {
    ClientConfig::new(
        offered(relay),
        Implementation::new("warden", env!("CARGO_PKG_VERSION")),
    )
}

/// The capabilities Warden offers an upstream on its own behalf: elicitation, sampling and
/// roots, as far as the relay policy lets them through (each calling client answers them —
/// or Warden refuses for a client that cannot).
pub(super) fn offered(relay: &RelaySpec) -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    if relay.elicitation {
        capabilities.elicitation = Some(Default::default());
    }
    if relay.sampling {
        capabilities.sampling = Some(Default::default());
    }
    if relay.roots {
        capabilities.roots = Some(Default::default());
    }
    capabilities
}

/// A calling client's capabilities as an upstream is told them for one request: what the
/// relay policy refuses taken out. The tasks extension stays: an upstream may run the call as
/// a task, which the client then follows through Warden.
pub(super) fn narrowed(client: &ClientCapabilities, relay: &RelaySpec) -> ClientCapabilities {
    let mut capabilities = client.clone();
    if !relay.elicitation {
        capabilities.elicitation = None;
    }
    if !relay.sampling {
        capabilities.sampling = None;
    }
    if !relay.roots {
        capabilities.roots = None;
    }
    capabilities
}

/// The rmcp client handler of one upstream connection.
#[derive(Clone, Debug)]
pub(super) struct UpstreamClient {
    pub(super) name: Name,
    /// Asks the supervisor to list the upstream's offer again.
    pub(super) refresh: Arc<Notify>,
    pub(super) inflight: Arc<InFlightTable>,
    pub(super) subscriptions: Arc<Subscriptions>,
    pub(super) relay: RelaySpec,
    pub(super) log: Option<RelayLog>,
}

/// Which call an upstream's server-initiated request belongs to: the one call in flight at
/// that upstream; with several, it is ambiguous and refused rather than guessed.
enum Target {
    One(Arc<InFlight>),
    None,
    Ambiguous(usize),
}

impl UpstreamClient {
    /// The call a request of the upstream belongs to: the one whose response stream it came
    /// on, else the one call in flight.
    fn target(&self, ctx: &RequestContext<RoleClient>) -> Target {
        if let Some(rmcp::service::InboundStreamOrigin::OutboundRequest(id)) = ctx.extensions.get()
            && let Some(call) = self.inflight.by_request(id)
        {
            return Target::One(call);
        }
        let calls = self.inflight.all();
        match calls.len() {
            0 => Target::None,
            1 => calls.into_iter().next().map_or(Target::None, Target::One),
            n => Target::Ambiguous(n),
        }
    }

    async fn record(&self, run_id: &str, what: &str, relayed: bool, detail: &str) {
        record_relay(
            self.log.as_ref(),
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
        ctx: &RequestContext<RoleClient>,
        what: &str,
        allowed: bool,
        make: impl FnOnce(Reply<T>) -> Relay,
    ) -> Result<T, rmcp::ErrorData> {
        let call = match self.target(ctx) {
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
        let (tx, rx) = oneshot::channel();
        if call
            .relay
            .send(make(Reply::new(tx, ctx.ct.clone())))
            .await
            .is_err()
        {
            self.record(&call.run_id, what, false, "the call ended")
                .await;
            return Err(rmcp::ErrorData::internal_error("the call ended", None));
        }
        // The upstream may cancel its request: the client is told (see `perform`), and the
        // upstream, which no longer waits, gets nothing more.
        let answer = tokio::select! {
            answer = rx => answer
                .unwrap_or_else(|_| Err(rmcp::ErrorData::internal_error("the call ended", None))),
            () = ctx.ct.cancelled() => Err(rmcp::ErrorData::internal_error("cancelled by the upstream", None)),
        };
        let detail = match &answer {
            Ok(_) => "answered by the client".to_owned(),
            Err(e) => e.message.to_string(),
        };
        self.record(&call.run_id, what, answer.is_ok(), &detail)
            .await;
        answer
    }
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
        ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.relay(&ctx, "elicitation/create", self.relay.elicitation, |tx| {
            Relay::Elicit(params, tx)
        })
        .await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        ctx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        self.relay(&ctx, "sampling/createMessage", self.relay.sampling, |tx| {
            Relay::Sample(Box::new(params), tx)
        })
        .await
    }

    async fn list_roots(
        &self,
        ctx: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        self.relay(&ctx, "roots/list", self.relay.roots, Relay::Roots)
            .await
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        self.subscriptions.updated(&params).await;
    }

    async fn on_prompt_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    async fn on_resource_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }
}
