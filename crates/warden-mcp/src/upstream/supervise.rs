//! The supervisor of one upstream: connects (negotiating 2026-07-28, falling back to
//! 2025-11-25), lists what the upstream offers, chooses its exit, refreshes the offer on
//! `list_changed` (on the session, or on a 2026-07-28 upstream's `subscriptions/listen`
//! stream: [`super::list_watch`]) and on a timer, and reconnects with exponential backoff.
//!
//! A Streamable HTTP upstream reached in 2026-07-28 whose era is not pinned is also offered a
//! 2025-11-25 session (`initialize`), for the requests of 2025-11-25 clients: a server that
//! speaks both eras may ask its client only through a session, and know `resources/subscribe`
//! but not `subscriptions/listen`. The session is a second connection to the same server; it
//! opens before the upstream counts as up, and the two end together. An upstream that refuses
//! it speaks 2026-07-28 alone, and Warden translates for 2025-11-25 clients. A stdio upstream
//! is one process, whose state a second child would not share: it keeps one connection.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{
    ClientRequest, ErrorCode, PaginatedRequestParams, PingRequest, ProtocolVersion, Tool,
};
use rmcp::service::{
    ClientCacheConfig, ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _, Peer,
    RunningService, ServiceError,
};
use warden_core::config::{UpstreamLimits, UpstreamProtocol, UpstreamSpec};
use warden_core::name::Name;
use warden_core::schema::SchemaText;
use warden_core::tool::UpstreamTool;

use super::delivery::Routed;
use super::exit::Exit;
use super::failure::short;
use super::http::{HttpExit, configured_headers, rmcp_transport};
use super::list_watch::ListWatch;
use super::peer::PeerExit;
use super::relays::{InFlightTable, RelayLog, UpstreamClient, client_config};
use super::slot::{Connection, LIST_TIMEOUT, Offer, UpstreamSlot};
use super::stdio;
use crate::era::Era;
use crate::http_client::{handshake_failure, request_failure};
use warden_runtime::Secrets;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long opening the 2025-11-25 session of an upstream already connected may take.
const SESSION_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the offer is fetched again, and the 2025-11-25 session beside a 2026-07-28
/// connection pinged: nothing else may use that session for hours, and servers end a session
/// left idle (rmcp's after five minutes), and with it the subscriptions it carries.
const REFRESH_EVERY: Duration = Duration::from_secs(30);
const MIN_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that lasted this long starts the backoff over.
const STABLE_AFTER: Duration = Duration::from_secs(30);

type Client = RunningService<RoleClient, UpstreamClient>;

/// The shortest time between two re-fetches of an upstream's offer.
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_millis(500);

/// Keeps one upstream connected until its slot is cancelled; `changed` hears every change of
/// its offer or status.
pub(super) async fn supervise(
    slot: Arc<UpstreamSlot>,
    changed: impl Fn() + Send + Sync,
    secrets: Secrets,
    log: Option<RelayLog>,
) {
    let name = slot.spec.name.clone();
    let mut backoff = MIN_BACKOFF;
    let mut failures = 0u32;
    loop {
        if slot.cancel.is_cancelled() {
            return;
        }
        let started = Instant::now();
        let reason = match connect(&slot, &secrets, log.clone(), None).await {
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
                match fetch_offer(&peer, &slot.spec).await {
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
                        let era = version.as_ref().map_or(Era::V2025_11_25, Era::of);
                        let session = match (era, slot.spec.protocol, &slot.spec.http) {
                            (Era::V2026_07_28, None, Some(_)) => {
                                open_session(&slot, &secrets, log.clone()).await
                            }
                            _ => None,
                        };
                        let exits = Exits {
                            slot: &slot,
                            secrets: &secrets,
                            protocol: version,
                            peer: &peer,
                        };
                        let connection = Connection {
                            peer: peer.clone(),
                            exit: exits.choose(&offer.tools),
                            era,
                            session: session.as_ref().map(|(_, exit)| exit.clone()),
                        };
                        slot.connected(connection, offer, protocol);
                        changed();
                        let session = session.map(|(client, _)| client);
                        let reason =
                            run_connected(&slot, client, session, &peer, &changed, &exits).await;
                        if slot.cancel.is_cancelled() {
                            return;
                        }
                        reason
                    }
                }
            }
        };
        // The reason is shown (API, console, logs): no credentials of a URL in it (REL-4).
        let reason = warden_core::url_credentials::redact(&reason);
        failures += 1;
        if started.elapsed() > STABLE_AFTER {
            backoff = MIN_BACKOFF;
        }
        tracing::warn!(upstream = %name, %reason, retry_in_ms = backoff.as_millis() as u64, "upstream unavailable");
        slot.disconnected(reason, failures);
        changed();
        tokio::select! {
            () = slot.cancel.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Opens the 2025-11-25 session of an upstream reached in 2026-07-28: its client and the
/// exit 2025-11-25 clients' requests take, or `None` when the upstream does not open one.
async fn open_session(
    slot: &UpstreamSlot,
    secrets: &Secrets,
    log: Option<RelayLog>,
) -> Option<(Client, PeerExit)> {
    let inflight = Arc::new(InFlightTable::default());
    let opening = connect(slot, secrets, log, Some(inflight.clone()));
    let client = match tokio::time::timeout(SESSION_TIMEOUT, opening).await {
        Ok(Ok(client)) => client,
        Ok(Err(why)) => {
            tracing::info!(upstream = %slot.spec.name, %why, "the upstream speaks 2026-07-28 alone: Warden translates for 2025-11-25 clients");
            return None;
        }
        Err(_) => {
            tracing::info!(upstream = %slot.spec.name, "the upstream opened no 2025-11-25 session within {}s: Warden translates for 2025-11-25 clients", SESSION_TIMEOUT.as_secs());
            return None;
        }
    };
    let peer = client.peer().clone();
    peer.set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    tracing::info!(upstream = %slot.spec.name, "2025-11-25 session open, for 2025-11-25 clients");
    let exit = PeerExit {
        peer,
        inflight,
        suspended: slot.suspended.clone(),
    };
    Some((client, exit))
}

/// Opens an rmcp client of the upstream: a child over stdio, or Streamable HTTP. Its era is
/// the one negotiated (or pinned); given `session`, the calls in flight on it, it opens a
/// 2025-11-25 session beside the upstream's connection.
async fn connect(
    slot: &UpstreamSlot,
    secrets: &Secrets,
    log: Option<RelayLog>,
    session: Option<Arc<InFlightTable>>,
) -> Result<Client, String> {
    let spec = &slot.spec;
    let lifecycle = match (&session, spec.protocol) {
        (Some(_), _) | (None, Some(UpstreamProtocol::V2025_11_25)) => {
            ClientLifecycleMode::Initialize
        }
        (None, Some(UpstreamProtocol::V2026_07_28)) => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        (None, None) => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
    };
    let is_session = session.is_some();
    let inflight = session.unwrap_or_else(|| slot.inflight.clone());
    let handler = UpstreamClient {
        name: spec.name.clone(),
        refresh: slot.refresh.clone(),
        inflight: inflight.clone(),
        subscriptions: slot.subscriptions.clone(),
        relay: spec.relay.clone().unwrap_or_default(),
        log,
    };
    let connecting = async {
        if let Some(stdio) = &spec.stdio {
            let transport = stdio::spawn(&spec.name, stdio, secrets, inflight.clone())?;
            handler
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| format!("MCP handshake failed: {}", handshake(&e, spec.protocol)))
        } else if let Some(http) = &spec.http {
            let transport = Routed::new(
                rmcp_transport(http, secrets, is_session)?,
                spec.name.clone(),
                inflight.clone(),
            );
            handler
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| {
                    let why = short(&handshake(&e, spec.protocol));
                    format!("cannot connect to {}: {why}", http.url)
                })
        } else {
            Err("neither stdio nor http is configured".to_owned())
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, connecting)
        .await
        .map_err(|_| format!("no MCP handshake within {}s", CONNECT_TIMEOUT.as_secs()))?
}

/// Why a handshake failed, in words: a pinned era the upstream does not know is named.
fn handshake(e: &ClientInitializeError, pinned: Option<UpstreamProtocol>) -> String {
    let why = handshake_failure(e);
    let era = match pinned {
        Some(UpstreamProtocol::V2025_11_25) => "2025-11-25",
        Some(UpstreamProtocol::V2026_07_28) => "2026-07-28",
        None => return why,
    };
    match e {
        ClientInitializeError::JsonRpcError(error) if error.code == ErrorCode::METHOD_NOT_FOUND => {
            format!(
                "{why} (the upstream does not speak {era}, which its `protocol` pins; without \
                 `protocol` Warden chooses the era)"
            )
        }
        _ => why,
    }
}

/// What choosing a connected upstream's exit takes.
struct Exits<'a> {
    slot: &'a UpstreamSlot,
    secrets: &'a Secrets,
    protocol: Option<ProtocolVersion>,
    peer: &'a Peer<RoleClient>,
}

impl Exits<'_> {
    /// The HTTP exit for a Streamable HTTP upstream that speaks 2026-07-28 and whose tools
    /// need no rmcp encoding; the rmcp client otherwise.
    fn choose(&self, tools: &[UpstreamTool]) -> Exit {
        match self.http(tools) {
            Some(http) => Exit::Http(Arc::new(http)),
            None => Exit::Peer(self.slot.peer_exit(self.peer)),
        }
    }

    fn http(&self, tools: &[UpstreamTool]) -> Option<HttpExit> {
        let spec = &self.slot.spec;
        let http = spec.http.as_ref()?;
        let headers = configured_headers(http, self.secrets).ok()?;
        let client = crate::http_client::shared().ok()?;
        let relay = spec.relay.clone().unwrap_or_default();
        HttpExit::new(
            client,
            &http.url,
            &headers,
            self.protocol.clone()?,
            &client_config(&relay),
            tools,
        )
    }
}

/// Serves one connection (and its 2025-11-25 `session`, which ends with it, and ends it):
/// subscribes again to the resources clients subscribed to, refreshes the offer on
/// `list_changed` and on a timer, and returns why the connection ended.
async fn run_connected(
    slot: &UpstreamSlot,
    client: Client,
    session: Option<Client>,
    peer: &Peer<RoleClient>,
    changed: &impl Fn(),
    exits: &Exits<'_>,
) -> String {
    let ct = client.cancellation_token();
    let session_peer = session.as_ref().map(|s| s.peer().clone());
    // Holds the session: when this function returns, dropping it ends the session.
    let session_ended = async move {
        match session {
            Some(session) => {
                let _ = session.waiting().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::pin!(session_ended);
    let mut waiting = tokio::spawn(client.waiting());
    let mut timer = tokio::time::interval(REFRESH_EVERY);
    timer.tick().await;
    let modern = exits.protocol.as_ref().map(Era::of) == Some(Era::V2026_07_28);
    let ended = |ended: Result<Result<_, _>, _>| match ended {
        Ok(Ok(reason)) => format!("the connection ended ({reason:?})"),
        _ => "the connection ended".to_owned(),
    };
    // The resources clients subscribed to, again, and the list-change stream: each request is
    // bounded, and the connection is watched meanwhile.
    let setup = async {
        slot.resubscribe().await;
        ListWatch::open(&slot.spec.name, peer, modern).await
    };
    let mut lists = tokio::select! {
        () = slot.cancel.cancelled() => {
            ct.cancel();
            let _ = (&mut waiting).await;
            return "stopped".into();
        }
        end = &mut waiting => return ended(end),
        () = &mut session_ended => {
            ct.cancel();
            return "its 2025-11-25 session ended".into();
        }
        lists = setup => lists,
    };
    // The setup may have taken longer than a refresh period: no burst of refreshes after it.
    timer.reset();
    let mut fetched = tokio::time::Instant::now();
    loop {
        // A storm of `list_changed` is one re-fetch per [`REFETCH_AT_MOST_EVERY`]: what
        // arrives meanwhile is taken by the next one (10,000 a second were 8,733 re-fetches in
        // 30 s, and as many notifications to every client).
        let due = async {
            let ticked = tokio::select! {
                () = slot.refresh.notified() => false,
                () = lists.changed() => false,
                _ = timer.tick() => true,
            };
            tokio::time::sleep_until(fetched + REFETCH_AT_MOST_EVERY).await;
            ticked
        };
        let ticked = tokio::select! {
            () = slot.cancel.cancelled() => {
                ct.cancel();
                let _ = (&mut waiting).await;
                return "stopped".into();
            }
            end = &mut waiting => return ended(end),
            () = &mut session_ended => {
                ct.cancel();
                return "its 2025-11-25 session ended".into();
            }
            ticked = due => ticked,
        };
        fetched = tokio::time::Instant::now();
        if let (true, Some(session)) = (ticked, &session_peer)
            && let Err(why) = ping(session).await
        {
            // Its subscriptions are gone with it: a new connection makes them again.
            ct.cancel();
            return format!("its 2025-11-25 session ended ({why})");
        }
        if peer.is_transport_closed() {
            ct.cancel();
            return "the connection closed".into();
        }
        match fetch_offer(peer, &slot.spec).await {
            Ok(offer) => {
                if slot.offer_differs(&offer) {
                    tracing::info!(upstream = %slot.spec.name, tools = offer.tools.len(), "upstream offer changed");
                    slot.reoffered(exits.choose(&offer.tools), offer);
                    changed();
                }
            }
            Err(reason) => {
                ct.cancel();
                return reason;
            }
        }
    }
}

/// Pings the upstream on `peer`, within [`LIST_TIMEOUT`]; any answer, an error too, is one.
async fn ping(peer: &Peer<RoleClient>) -> Result<(), String> {
    let ping = peer.send_request(ClientRequest::PingRequest(PingRequest::default()));
    match tokio::time::timeout(LIST_TIMEOUT, ping).await {
        Ok(Ok(_) | Err(ServiceError::McpError(_))) => Ok(()),
        Ok(Err(e)) => Err(format!("ping failed: {}", short(&request_failure(&e)))),
        Err(_) => Err("ping did not answer".to_owned()),
    }
}

async fn fetch<T>(
    what: &str,
    call: impl std::future::Future<Output = Result<Vec<T>, ServiceError>>,
) -> Result<Vec<T>, String> {
    match tokio::time::timeout(LIST_TIMEOUT, call).await {
        Ok(Ok(items)) => Ok(items),
        Ok(Err(e)) => Err(format!("{what} failed: {}", short(&request_failure(&e)))),
        Err(_) => Err(format!("{what} did not answer")),
    }
}

/// The upstream's tools, page by page, until it has listed them all or more than `at_most`
/// (its pages are not read further: an upstream listed 50,000 tools).
async fn list_tools(peer: &Peer<RoleClient>, at_most: usize) -> Result<Vec<Tool>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    loop {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() || tools.len() > at_most {
            return Ok(tools);
        }
    }
}

/// The tools within `limits`: each tool whose description or schema is too large is left
/// out with a warning naming it; past the count, the rest, with one warning.
fn within_limits(upstream: &Name, limits: &UpstreamLimits, tools: Vec<Tool>) -> Vec<Tool> {
    let schema_bytes = |s: &serde_json::Map<String, serde_json::Value>| {
        serde_json::to_string(s).map_or(usize::MAX, |t| t.len())
    };
    let mut kept = Vec::with_capacity(tools.len().min(limits.tools));
    let (mut too_large, mut too_many) = (0usize, 0usize);
    for tool in tools {
        if kept.len() >= limits.tools {
            too_many += 1;
            continue;
        }
        let description = tool.description.as_deref().map_or(0, str::len);
        let schema = schema_bytes(&tool.input_schema)
            .max(tool.output_schema.as_deref().map_or(0, schema_bytes));
        let why = if description > limits.description_bytes {
            format!(
                "its description has {description} bytes, more than {}",
                limits.description_bytes
            )
        } else if schema > limits.schema_bytes {
            format!(
                "its schema has {schema} bytes, more than {}",
                limits.schema_bytes
            )
        } else {
            kept.push(tool);
            continue;
        };
        too_large += 1;
        tracing::warn!(upstream = %upstream, tool = %tool.name, "a tool of the upstream is left out: {why} (its `limits`)");
    }
    if too_many > 0 {
        tracing::warn!(upstream = %upstream, "the upstream lists more than {} tools; {too_many} are left out (its `limits.tools`)", limits.tools);
    }
    if too_large + too_many > 0 {
        metrics::counter!("warden_upstream_tools_left_out_total", "upstream" => upstream.to_string())
            .increment((too_large + too_many) as u64);
    }
    kept
}

/// An upstream's tools as Warden keeps them: the schemas as text, each distinct annotation
/// set once (PERF-3), icons and `_meta` as they came.
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
            icons: tool
                .icons
                .and_then(|icons| serde_json::to_value(icons).ok())
                .map(Arc::new),
            meta: tool
                .meta
                .and_then(|meta| serde_json::to_value(meta).ok())
                .map(Arc::new),
        })
        .collect()
}

/// Tools, and prompts and resources when the upstream offers them.
async fn fetch_offer(peer: &Peer<RoleClient>, spec: &UpstreamSpec) -> Result<Offer, String> {
    let capabilities = peer.peer_info().map(|i| i.capabilities.clone());
    let listed = fetch("tools/list", list_tools(peer, spec.limits.tools)).await?;
    let tools = upstream_tools(within_limits(&spec.name, &spec.limits, listed));
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
