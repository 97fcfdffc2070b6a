//! `warden stdio --remote URL`: the MCP contract over stdin/stdout, bridged to a running
//! `warden serve` which governs every call. With governance `auto`, when the remote cannot be
//! reached, calls fall back to direct execution on the local configuration, and stderr says
//! so loudly every time — a convenience, not a security property (GOV-6).
//!
//! The bridge serves tools, prompts, resources and resource templates, and passes on the
//! remote's announcements that those lists changed — heard on its session (2025-11-25) or on
//! a `subscriptions/listen` stream it keeps open (2026-07-28) — to its own client, in the
//! client's era.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, NotificationContext, Peer, RequestContext,
    RunningService, ServiceError, SubscriptionContext,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, RoleServer, ServerHandler};
use tokio::sync::broadcast;
use warden_core::contract::{CallOutcome, Verdict};
use warden_core::decision::{Denial, DenyCode};

use crate::era::Era;
use crate::handler::McpHandler;
use crate::http_client::{request_failure, request_refused};
use crate::list_changes::{ListChanged, Lists, forward_list_changes};
use crate::listen_stream::{self, Pacing};
use crate::wire;

/// The bridge's MCP client: its identity, and where the remote's list changes go.
#[derive(Clone, Debug)]
pub struct BridgeClient {
    changes: broadcast::Sender<Lists>,
}

impl BridgeClient {
    fn announce(&self, tools: bool, prompts: bool, resources: bool) {
        let _ = self.changes.send(Lists {
            tools,
            prompts,
            resources,
        });
    }
}

impl ClientHandler for BridgeClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("warden-stdio-bridge", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.announce(true, false, false);
    }

    async fn on_prompt_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.announce(false, true, false);
    }

    async fn on_resource_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.announce(false, false, true);
    }
}

/// A connection to the remote Warden.
pub type Remote = RunningService<RoleClient, BridgeClient>;

/// Why the remote Warden could not be used.
#[derive(Debug)]
pub enum ConnectError {
    /// It answered, and refused the token (HTTP 401 or 403): no fallback helps.
    Refused(String),
    /// It could not be reached, or did not complete the handshake.
    Unreachable(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Refused(why) | ConnectError::Unreachable(why) => f.write_str(why),
        }
    }
}

/// Connects to a remote Warden's MCP endpoint with a bearer token.
pub async fn connect(url: &str, token: &str) -> Result<Remote, ConnectError> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let client = BridgeClient {
        changes: broadcast::channel(16).0,
    };
    let remote = client
        .clone()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::with_client(
                crate::http_client::shared().map_err(ConnectError::Unreachable)?,
                config,
            ),
            lifecycle,
        )
        .await
        .map_err(|e| {
            let why = crate::http_client::handshake_failure(&e);
            if crate::http_client::credential_refused(&e) {
                ConnectError::Refused(format!("{url} refused it: {why}"))
            } else {
                ConnectError::Unreachable(format!("cannot reach {url}: {why}"))
            }
        })?;
    // A 2026-07-28 remote announces list changes only on a listen stream.
    if remote
        .peer_info()
        .is_some_and(|i| Era::of(&i.protocol_version) == Era::V2026_07_28)
    {
        tokio::spawn(listen_to(remote.peer().clone(), client));
    }
    Ok(remote)
}

/// Keeps a `subscriptions/listen` stream open to a 2026-07-28 remote for its list changes,
/// and announces them, until the connection closes. A stream that ends is opened again (paced
/// by [`Pacing`]) and every list announced, since changes may have been missed meanwhile.
async fn listen_to(remote: Peer<RoleClient>, client: BridgeClient) {
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .prompts_list_changed()
        .resources_list_changed()
        .build();
    let mut pacing = Pacing::default();
    let mut again = false;
    while !remote.is_transport_closed() {
        let lasted = match listen_stream::open(&remote, filter.clone()).await {
            Ok(mut stream) => {
                let opened = Instant::now();
                if again {
                    client.announce(true, true, true);
                }
                while let Ok(Some(notification)) = stream.next().await {
                    match notification {
                        ServerNotification::ToolListChangedNotification(_) => {
                            client.announce(true, false, false);
                        }
                        ServerNotification::PromptListChangedNotification(_) => {
                            client.announce(false, true, false);
                        }
                        ServerNotification::ResourceListChangedNotification(_) => {
                            client.announce(false, false, true);
                        }
                        _ => {}
                    }
                }
                Some(opened.elapsed())
            }
            Err(e) => {
                tracing::debug!(error = %e, "no list-change stream from the remote");
                None
            }
        };
        again = true;
        tokio::time::sleep(pacing.pause(lasted)).await;
    }
}

/// A remote's failure to answer, for the bridge's client: its own JSON-RPC error as it sent it.
fn remote_error(e: ServiceError) -> McpError {
    match e {
        ServiceError::McpError(e) => e,
        other => McpError::internal_error(
            format!("the remote Warden: {}", request_failure(&other)),
            None,
        ),
    }
}

/// The bridge handler.
#[derive(Clone, Debug)]
pub struct Bridge {
    remote: Option<Peer<RoleClient>>,
    /// The remote's list changes.
    changes: Option<broadcast::Sender<Lists>>,
    instructions: Option<String>,
    fallback: Option<McpHandler>,
    url: Arc<str>,
}

impl Bridge {
    /// A bridge over `remote` (None when it could not be reached), with an optional fallback
    /// for governance `auto`.
    pub fn new(url: &str, remote: Option<&Remote>, fallback: Option<McpHandler>) -> Self {
        Self {
            remote: remote.map(|r| r.peer().clone()),
            changes: remote.map(|r| r.service().changes.clone()),
            instructions: remote
                .and_then(|r| r.peer_info())
                .and_then(|i| i.instructions.clone()),
            fallback,
            url: Arc::from(url),
        }
    }

    fn remote(&self) -> Option<&Peer<RoleClient>> {
        self.remote.as_ref().filter(|p| !p.is_transport_closed())
    }

    fn warn_fallback(&self, why: &str) {
        eprintln!(
            "warden stdio: WARNING: governance unavailable ({why}); executing DIRECTLY on the local configuration, without decisions (--governance auto)"
        );
    }

    fn unavailable(&self, tool: &str, why: &str) -> CallToolResponse {
        let outcome = CallOutcome {
            run_id: "bridge".into(),
            call_id: "bridge".into(),
            tool: tool.to_owned(),
            verdict: Verdict::Denied(Denial::new(
                DenyCode::Unavailable,
                "bridge:remote-unavailable",
                format!("governance is unavailable ({why}); nothing was executed"),
            )),
            audited: false,
        };
        wire::call_result(&outcome).into()
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        // Exactly what the bridge serves: no subscriptions, completions or logging.
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("warden", env!("CARGO_PKG_VERSION")));
        if let Some(i) = &self.instructions {
            info = info.with_instructions(i.clone());
        }
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        if let Some(changes) = &self.changes {
            let session = ListChanged::Session(context.peer.clone());
            tokio::spawn(forward_list_changes(changes.subscribe(), session));
        }
        self.negotiate_initialize(&request)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp narrows it to what `get_info` advertises: the three list changes.
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        match &self.changes {
            Some(changes) => {
                let stream = ListChanged::Listen(context.sink().clone());
                tokio::select! {
                    () = forward_list_changes(changes.subscribe(), stream) => {}
                    () = context.cancelled() => {}
                }
            }
            None => context.cancelled().await,
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        match self.remote() {
            Some(peer) => match peer.list_all_tools().await {
                Ok(tools) => return Ok(ListToolsResult::with_all_items(tools)),
                Err(ServiceError::McpError(e)) => return Err(e),
                Err(e) => {
                    let why = request_failure(&e);
                    // A refused token gets no fallback: it is not an outage.
                    if self.fallback.is_none() || request_refused(&e) {
                        tracing::error!(remote = %self.url, error = %why, "the remote Warden does not answer");
                        return Ok(ListToolsResult::with_all_items(Vec::new()));
                    }
                    self.warn_fallback(&why);
                }
            },
            None if self.fallback.is_none() => {
                return Ok(ListToolsResult::with_all_items(Vec::new()));
            }
            None => self.warn_fallback("the remote could not be reached"),
        }
        match &self.fallback {
            Some(f) => f.list_tools(request, ctx).await,
            None => Ok(ListToolsResult::with_all_items(Vec::new())),
        }
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        match (self.remote(), &self.fallback) {
            (Some(peer), _) => peer
                .list_all_prompts()
                .await
                .map(ListPromptsResult::with_all_items)
                .map_err(remote_error),
            (None, Some(f)) => f.list_prompts(request, ctx).await,
            (None, None) => Ok(ListPromptsResult::with_all_items(Vec::new())),
        }
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        match (self.remote(), &self.fallback) {
            (Some(peer), _) => peer.get_prompt_once(request).await.map_err(remote_error),
            (None, Some(f)) => f.get_prompt(request, ctx).await,
            (None, None) => Err(McpError::internal_error(
                format!("{} cannot be reached", self.url),
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        match (self.remote(), &self.fallback) {
            (Some(peer), _) => peer
                .list_all_resources()
                .await
                .map(ListResourcesResult::with_all_items)
                .map_err(remote_error),
            (None, Some(f)) => f.list_resources(request, ctx).await,
            (None, None) => Ok(ListResourcesResult::with_all_items(Vec::new())),
        }
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        match (self.remote(), &self.fallback) {
            (Some(peer), _) => peer
                .list_all_resource_templates()
                .await
                .map(ListResourceTemplatesResult::with_all_items)
                .map_err(remote_error),
            (None, Some(f)) => f.list_resource_templates(request, ctx).await,
            (None, None) => Ok(ListResourceTemplatesResult::with_all_items(Vec::new())),
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        match (self.remote(), &self.fallback) {
            (Some(peer), _) => peer.read_resource_once(request).await.map_err(remote_error),
            (None, Some(f)) => f.read_resource(request, ctx).await,
            (None, None) => Err(McpError::internal_error(
                format!("{} cannot be reached", self.url),
                None,
            )),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let why = match self.remote() {
            Some(peer) => match peer.call_tool(request.clone()).await {
                Ok(result) => return Ok(result.into()),
                Err(ServiceError::McpError(e)) => return Err(e),
                // A token refused meanwhile (revoked, say) gets no fallback: not an outage.
                Err(e) if request_refused(&e) => {
                    let why = format!("{} refused the token: {}", self.url, request_failure(&e));
                    return Ok(self.unavailable(&request.name, &why));
                }
                Err(e) => request_failure(&e),
            },
            None => format!("{} cannot be reached", self.url),
        };
        match &self.fallback {
            Some(f) => {
                self.warn_fallback(&why);
                f.call_tool(request, ctx).await
            }
            None => Ok(self.unavailable(&request.name, &why)),
        }
    }
}
