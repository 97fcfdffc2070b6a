//! The MCP server Warden presents to clients: one handler for every transport (GOV-8).
//!
//! rmcp builds a handler per 2025 session and per 2026 stateless request, so the handler is
//! a cheap wrapper around the shared [`Gateway`]. Authority is resolved on every request from
//! the current policy, so revocations reach open sessions at their next call (RUN-8).

use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, DiscoverResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::{CancellationToken, DropGuard};
use warden_core::authority::{Authority, AuthorityError};
use warden_core::pipeline::{Governance, RunState};
use warden_core::principal::Credential;

use crate::client::{ClientContext, Retry};
use crate::era::Era;
use crate::gateway::{Gateway, TaskAnswer, TaskOp};
use crate::list_changes::{ListChanged, Lists, notify_list_changes};
use crate::trace::TraceContext;
use crate::upstream::exchange::SubjectToken;
use crate::upstream_task_ids::TaskIds;
use crate::wire;

/// The credential the server verified for this request (its one door, or the admin
/// middleware), in the request's extensions.
#[derive(Clone, Debug)]
pub struct Authenticated(pub Credential);

/// The agent a request addresses (`/mcp/agents/{agent}`), in the request's extensions.
#[derive(Clone, Debug)]
pub struct AgentRoute(pub String);

/// How requests of a session are authenticated.
#[derive(Clone, Debug)]
pub enum SessionAuth {
    /// HTTP: each request carries its own verified credential ([`Authenticated`]).
    PerRequest,
    /// stdio: one token for the process (`WARDEN_TOKEN`), verified again on every request.
    Token(Arc<str>),
}

/// Who a session (or stateless request) belongs to: the credential and agent route that
/// opened it, and both as one key (for what a caller alone may resume or follow).
#[derive(Debug)]
struct Owner {
    credential: String,
    agent: Option<String>,
    key: Arc<str>,
}

/// The MCP handler of one session (or one stateless request).
#[derive(Clone, Debug)]
pub struct McpHandler {
    gateway: Arc<Gateway>,
    auth: SessionAuth,
    agent: Option<String>,
    run: Arc<OnceLock<Arc<RunState>>>,
    owner: Arc<OnceLock<Owner>>,
    session: Arc<Session>,
    governance: Governance,
}

/// What a 2025-11-25 session keeps between its requests; dropped with the last clone of its
/// handler, that is when the session ends (closed, deleted or idle).
#[derive(Debug, Default)]
struct Session {
    /// The session's `logging/setLevel`.
    #[allow(
        deprecated,
        reason = "logging is still part of the 2025-11-25 protocol"
    )]
    log_level: std::sync::Mutex<Option<rmcp::model::LoggingLevel>>,
    /// Cancels, when the session ends, what it started in the background (its list-changes
    /// follower). Set at `initialize`: a stateless request pays nothing for it.
    ends: OnceLock<DropGuard>,
}

impl McpHandler {
    /// A handler for a new session or stateless request.
    pub fn new(gateway: Arc<Gateway>, auth: SessionAuth, agent: Option<String>) -> Self {
        Self {
            gateway,
            auth,
            agent,
            run: Arc::new(OnceLock::new()),
            owner: Arc::new(OnceLock::new()),
            session: Arc::default(),
            governance: Governance::On,
        }
    }

    /// Governance off (GOV-6): calls execute without decisions, still recorded, and
    /// `tools/list` shows every tool. Only `warden stdio` offers it.
    pub fn with_governance(mut self, governance: Governance) -> Self {
        self.governance = governance;
        self
    }

    /// The run of this session: an unattended agent run keeps the id it was started with;
    /// any other session is a run of its own — with the same id on every replica that serves
    /// it (a 2025-11-25 session restored elsewhere gets a handler of its own there).
    fn run_state(&self, authority: &Authority, ctx: &RequestContext<RoleServer>) -> Arc<RunState> {
        self.run
            .get_or_init(|| {
                Arc::new(match &authority.principal {
                    // Recorded by the scheduler when the run started.
                    warden_core::principal::Principal::AgentRun { run, .. } => {
                        RunState::recorded(run.clone())
                    }
                    _ => RunState::new(
                        session_run_id(ctx)
                            .unwrap_or_else(|| format!("run_{}", uuid::Uuid::now_v7().simple())),
                    ),
                })
            })
            .clone()
    }

    fn credential(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(Credential, Option<String>), McpError> {
        let parts = ctx.extensions.get::<http::request::Parts>();
        let route_agent = parts
            .and_then(|p| p.extensions.get::<AgentRoute>())
            .map(|a| a.0.clone())
            .or_else(|| self.agent.clone());
        let credential = match &self.auth {
            SessionAuth::PerRequest => parts
                .and_then(|p| p.extensions.get::<Authenticated>())
                .map(|a| a.0.clone())
                // Fail closed: a request that reached the handler unauthenticated gets nothing.
                .ok_or_else(|| McpError::invalid_request("unauthenticated", None))?,
            SessionAuth::Token(token) => self
                .gateway
                .authenticate(token)
                .map_err(|e| McpError::invalid_request(format!("WARDEN_TOKEN: {e}"), None))?,
        };
        // A run belongs to the credential and agent that opened it.
        let owner = self.owner.get_or_init(|| Owner {
            key: Arc::from(format!(
                "{}/{}",
                credential.id,
                route_agent.as_deref().unwrap_or_default()
            )),
            credential: credential.id.clone(),
            agent: route_agent.clone(),
        });
        if owner.credential != credential.id || owner.agent != route_agent {
            return Err(McpError::invalid_request(
                "this session belongs to another credential or agent; start a new session",
                None,
            ));
        }
        Ok((credential, route_agent))
    }

    fn authority(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<Authority>, McpError> {
        let (credential, agent) = self.credential(ctx)?;
        self.gateway
            .authority(&credential, agent.as_deref())
            .map_err(|e| match e {
                AuthorityError::UnknownAgent(a) => {
                    McpError::invalid_params(format!("no agent named `{a}`"), None)
                }
                other => McpError::invalid_request(other.to_string(), None),
            })
    }
}

impl McpHandler {
    /// The parked call `id` when this request's authority parked it (APR-7); anyone else's,
    /// like one that does not exist, is unknown (-32602).
    async fn own_task(
        &self,
        id: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<warden_store::Approval, McpError> {
        let authority = self.authority(ctx)?;
        Box::pin(self.gateway.parked_call(&authority, id))
            .await
            .map_err(|e| McpError::internal_error(format!("the store cannot be read: {e}"), None))?
            .ok_or_else(|| McpError::invalid_params(format!("unknown task `{id}`"), None))
    }

    /// `op` on an upstream's task `id` (the tasks extension), for this request's caller.
    async fn upstream_task(
        &self,
        ctx: &RequestContext<RoleServer>,
        id: &str,
        op: TaskOp,
    ) -> Result<TaskAnswer, McpError> {
        let authority = self.authority(ctx)?;
        let caller = self.caller(ctx)?;
        let capabilities = ctx.client_capabilities();
        Box::pin(self.gateway.upstream_task(
            &authority,
            &caller,
            id,
            era_of(ctx),
            capabilities.as_ref(),
            op,
        ))
        .await
    }

    /// Who calls, as a key: the credential and the agent route (checked by
    /// [`Self::credential`] on every request).
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<str>, McpError> {
        match self.owner.get() {
            Some(owner) => Ok(owner.key.clone()),
            None => {
                self.credential(ctx)?;
                self.owner
                    .get()
                    .map(|o| o.key.clone())
                    .ok_or_else(|| McpError::invalid_request("unauthenticated", None))
            }
        }
    }

    /// `tools/list` as a JSON array, for an answer written without rmcp (a stateless
    /// 2026-07-28 request served inline): the tools `list_tools` would return. `None` when
    /// the request is refused (rmcp's dispatch then gives the error) or cannot be served so.
    pub fn list_tools_json(&self, ctx: &RequestContext<RoleServer>) -> Option<Vec<u8>> {
        let tools = self.listed_tools(ctx).ok()?;
        self.gateway.list_wire_json(&tools)
    }

    /// The tools `tools/list` shows this request: all of them with governance off, else
    /// those the run's authority sees.
    fn listed_tools(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Vec<Arc<warden_core::tool::ToolDescriptor>>, McpError> {
        let authority = self.authority(ctx)?;
        Ok(match self.governance {
            Governance::Off => self.gateway.all_tools(),
            Governance::On => self.gateway.list_tools(&authority),
        })
    }

    /// The calling client's side of a request that may reach an upstream: where what the
    /// upstream sends meanwhile goes, in the client's era.
    fn client_context(
        &self,
        ctx: &RequestContext<RoleServer>,
        authority: &Authority,
        retry: Option<Retry>,
    ) -> Result<ClientContext, McpError> {
        let era = era_of(ctx);
        let parts = ctx.extensions.get::<http::request::Parts>();
        #[allow(deprecated, reason = "logging is part of both eras' calls")]
        let log_level = match era {
            Era::V2026_07_28 => ctx.meta.log_level(),
            Era::V2025_11_25 => Some(
                self.session
                    .log_level
                    .lock()
                    .ok()
                    .and_then(|l| *l)
                    .unwrap_or(rmcp::model::LoggingLevel::Debug),
            ),
        };
        Ok(ClientContext {
            peer: ctx.peer.clone(),
            progress_token: ctx.meta.get_progress_token(),
            cancel: ctx.ct.clone(),
            run_id: self.run_state(authority, ctx).id().to_owned(),
            caller: self.caller(ctx)?,
            era,
            log_level,
            capabilities: ctx.client_capabilities().map(|mut capabilities| {
                // The tasks extension is 2026-07-28's: a 2025-11-25 client declaring it (as
                // the MCP Inspector does by default) expects a plain result to a plain call,
                // from Warden and from the upstream alike.
                if era == Era::V2025_11_25
                    && let Some(extensions) = capabilities.extensions.as_mut()
                {
                    extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
                }
                capabilities
            }),
            retry,
            subject: parts
                .and_then(|p| p.extensions.get::<SubjectToken>())
                .cloned(),
            trace: trace_of(ctx, parts),
        })
    }

    /// Server info with the run's instructions (its knowledge and boundary notice).
    fn info_for(&self, authority: &Authority) -> ServerConfig {
        self.get_info()
            .with_instructions(self.gateway.instructions(authority))
    }
}

impl ServerHandler for McpHandler {
    #[allow(
        deprecated,
        reason = "logging is still part of the 2025-11-25 protocol"
    )]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_logging()
                .enable_completions()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("warden", env!("CARGO_PKG_VERSION")))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // Refuse early what would be refused at the first call.
        let authority = self.authority(&context)?;
        context.peer.set_peer_info(request.clone());
        // The session hears `notifications/*/list_changed` when what it may see changes, until
        // it ends.
        let (credential, agent) = self.credential(&context)?;
        let changes = notify_list_changes(
            self.gateway.clone(),
            ListChanged::Session(context.peer.clone()),
            credential,
            agent,
        );
        let ended = CancellationToken::new();
        if self.session.ends.set(ended.clone().drop_guard()).is_ok() {
            tokio::spawn(async move {
                tokio::select! {
                    () = changes => {}
                    () = ended.cancelled() => {}
                }
            });
        }
        let mut info = self.negotiate_initialize(&request)?;
        // The tasks extension is 2026-07-28's (see `client_context`): a session is not
        // offered it.
        if let Some(extensions) = info.capabilities.extensions.as_mut() {
            extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
            if extensions.is_empty() {
                info.capabilities.extensions = None;
            }
        }
        Ok(info.with_instructions(self.gateway.instructions(&authority)))
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        let authority = self.authority(&context)?;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.info_for(&authority),
        ))
    }

    #[allow(
        deprecated,
        reason = "logging is still part of the 2025-11-25 protocol"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // Kept for this session's calls, and forwarded to the 2025-11-25 upstreams whose
        // tools the run may use.
        let authority = self.authority(&ctx)?;
        if let Ok(mut level) = self.session.log_level.lock() {
            *level = Some(request.level);
        }
        Box::pin(self.gateway.set_log_level(&authority, request)).await;
        Ok(())
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        let authority = self.authority(&ctx)?;
        let client = self.client_context(&ctx, &authority, None)?;
        Box::pin(self.gateway.complete(&authority, request, Some(&client))).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let authority = self.authority(&ctx)?;
        Ok(ListPromptsResult::with_all_items(
            self.gateway.prompts(&authority),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let authority = self.authority(&ctx)?;
        let retry = retry_of(request.input_responses.clone(), &request.request_state)?;
        let client = self.client_context(&ctx, &authority, retry)?;
        Box::pin(self.gateway.get_prompt(&authority, request, Some(&client))).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let authority = self.authority(&ctx)?;
        Ok(ListResourcesResult::with_all_items(
            self.gateway.resources(&authority),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let authority = self.authority(&ctx)?;
        let retry = retry_of(request.input_responses.clone(), &request.request_state)?;
        let client = self.client_context(&ctx, &authority, retry)?;
        Box::pin(
            self.gateway
                .read_resource(&authority, request, Some(&client)),
        )
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        let authority = self.authority(&ctx)?;
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            self.gateway.resource_templates(&authority),
        ))
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let authority = self.authority(&ctx)?;
        let session = self.run_state(&authority, &ctx).id().to_owned();
        Box::pin(self.gateway.subscribe(
            &authority,
            &request.uri,
            &session,
            crate::upstream::Subscriber::Session(ctx.peer.clone()),
        ))
        .await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let authority = self.authority(&ctx)?;
        let session = self.run_state(&authority, &ctx).id().to_owned();
        Box::pin(self.gateway.unsubscribe(&authority, &request.uri, &session)).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // What the client asked for; rmcp narrows it to what `get_info` advertises (tool,
        // prompt and resource list changes, and resource updates). Resources the run may not read are accepted like any
        // URI and never heard of: a refusal would tell that they exist.
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let ctx = context.request_context();
        let authority = self.authority(ctx)?;
        let (credential, agent) = self.credential(ctx)?;
        let key = format!("listen:{}:{}", self.run_state(&authority, ctx).id(), ctx.id);
        let sink = context.sink().clone();
        let accepted = context.accepted().clone();
        let mut subscribed = Vec::new();
        for uri in accepted.resource_subscriptions.iter().flatten() {
            let subscriber = crate::upstream::Subscriber::Listen(sink.clone());
            match Box::pin(self.gateway.subscribe(&authority, uri, &key, subscriber)).await {
                Ok(()) => subscribed.push(uri),
                Err(e) => tracing::debug!(uri, error = %e.message, "not subscribed"),
            }
        }
        if Lists::of(&accepted).any() {
            let changes = notify_list_changes(
                self.gateway.clone(),
                ListChanged::Listen(sink),
                credential,
                agent,
            );
            tokio::select! {
                () = changes => {}
                () = context.cancelled() => {}
            }
        } else {
            context.cancelled().await;
        }
        for uri in subscribed {
            let _ = Box::pin(self.gateway.unsubscribe(&authority, uri, &key)).await;
        }
        Ok(())
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        if TaskIds::is_upstream_task(&request.task_id) {
            return match Box::pin(self.upstream_task(&ctx, &request.task_id, TaskOp::Get)).await? {
                TaskAnswer::Task(task) => Ok(*task),
                TaskAnswer::Done => Err(McpError::internal_error("no task in the answer", None)),
            };
        }
        let approval = self.own_task(&request.task_id, &ctx).await?;
        Ok(rmcp::model::GetTaskResult::new(
            crate::approval_tasks::detailed(&approval),
        ))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if TaskIds::is_upstream_task(&request.task_id) {
            crate::wire::check_input_responses(&request.input_responses)?;
            let op = TaskOp::Update(request.input_responses);
            return Box::pin(self.upstream_task(&ctx, &request.task_id, op))
                .await
                .map(drop);
        }
        self.own_task(&request.task_id, &ctx).await?;
        Err(McpError::invalid_params(
            format!(
                "task `{}` is a parked call waiting for a human decision; it needs no input",
                request.task_id
            ),
            None,
        ))
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if TaskIds::is_upstream_task(&request.task_id) {
            return Box::pin(self.upstream_task(&ctx, &request.task_id, TaskOp::Cancel))
                .await
                .map(drop);
        }
        self.own_task(&request.task_id, &ctx).await?;
        Err(McpError::invalid_request(
            format!(
                "task `{0}` is a parked call: its approvers decide it (`warden approvals reject {0}`); its requester cannot cancel it",
                request.task_id
            ),
            None,
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Used by rmcp for the 2026 per-argument header checks only; visibility is decided in
        // `call_tool`. Returning nothing keeps hidden tools hidden.
        let _ = name;
        None
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.listed_tools(&ctx)?;
        Ok(ListToolsResult::with_all_items(
            self.gateway.list_wire_tools(&tools),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let authority = self.authority(&ctx)?;
        let run = self.run_state(&authority, &ctx);
        let retry = retry_of(request.input_responses.clone(), &request.request_state)?;
        let client = self.client_context(&ctx, &authority, retry)?;
        if client.era == Era::V2026_07_28
            && let Some(parts) = ctx.extensions.get::<http::request::Parts>()
        {
            self.gateway.check_param_headers(
                &authority,
                &request.name,
                request.arguments.as_ref(),
                &parts.headers,
            )?;
        }
        let caller = client.caller.clone();
        // APR-7: a 2026-07-28 client that declares the tasks extension gets a parked call as
        // a task (see `client_context` for a 2025-11-25 one).
        let wants_tasks = client
            .capabilities
            .as_ref()
            .is_some_and(rmcp::model::ClientCapabilities::supports_tasks);
        let outcome = self
            .gateway
            .call(
                &authority,
                &run,
                &request.name,
                request.arguments,
                self.governance,
                Some(client),
            )
            .await;
        if let warden_core::contract::Verdict::Pending { approval_id, .. } = &outcome.verdict {
            if wants_tasks {
                return Ok(CallToolResponse::Task(crate::approval_tasks::created(
                    approval_id,
                    warden_core::pipeline::Clock::now(&**self.gateway.clock()),
                )));
            }
            // APR-7: a 2025-11-25 client that takes URL elicitations is offered the console's
            // page of the approval, and learns the outcome when it is decided.
            if era_of(&ctx) == Era::V2025_11_25
                && crate::approval_url::supported(ctx.client_capabilities().as_ref())
                && let Some(result) = Box::pin(crate::approval_url::offer_and_wait(
                    &self.gateway,
                    &authority,
                    &ctx.peer,
                    &ctx.ct,
                    &request.name,
                    approval_id,
                ))
                .await
            {
                return Ok(result.into());
            }
        }
        // An upstream's task is followed under Warden's id; its JSON-RPC error is the client's
        // error (audited as an error result); its `input_required` result goes as it came
        // (2026-07-28 clients only; see `UpstreamSlot::call`).
        let mut response = wire::response(&outcome)?;
        if let CallToolResponse::Task(created) = &mut response {
            created.task.task_id = self
                .gateway
                .upstream_task_id(&caller, &request.name, &created.task.task_id)
                .ok_or_else(|| McpError::internal_error("the task cannot be named", None))?;
        }
        Ok(response)
    }
}

/// The run id of a 2025-11-25 session, derived from its `Mcp-Session-Id` so that every replica
/// names it alike; the id itself is not shown (the session id lets its owner use the session).
fn session_run_id(ctx: &RequestContext<RoleServer>) -> Option<String> {
    use sha2::Digest as _;
    let session = ctx
        .extensions
        .get::<http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .as_bytes();
    let digest = sha2::Sha256::digest(session);
    Some(format!("run_{}", hex::encode(digest.get(..16)?)))
}

/// The era of a request: the version it speaks (a 2026-07-28 request names it; a session's is
/// its `initialize`'s), 2025-11-25's when none is known.
fn era_of(ctx: &RequestContext<RoleServer>) -> Era {
    ctx.protocol_version()
        .map_or(Era::V2025_11_25, |v| Era::of(&v))
}

/// A 2026-07-28 retry of a request that needed input, its answers checked (SEP-2322).
fn retry_of(
    input_responses: Option<rmcp::model::InputResponses>,
    request_state: &Option<String>,
) -> Result<Option<Retry>, McpError> {
    let Some(input_responses) = input_responses else {
        return Ok(None);
    };
    crate::wire::check_input_responses(&input_responses)?;
    Ok(Some(Retry {
        input_responses,
        request_state: request_state.clone(),
    }))
}

/// The client's trace context (OPS-3): the request's `_meta`, else its HTTP headers.
fn trace_of(
    ctx: &RequestContext<RoleServer>,
    parts: Option<&http::request::Parts>,
) -> Option<TraceContext> {
    if let Some(parent) = ctx.meta.get_traceparent() {
        return TraceContext::parse(parent, ctx.meta.get_tracestate());
    }
    // As header names, not strings: a lookup by string parses the name first.
    static TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
    static TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");
    let headers = &parts?.headers;
    let header = |name: &http::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    TraceContext::parse(header(&TRACEPARENT)?, header(&TRACESTATE))
}
