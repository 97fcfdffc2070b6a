//! The tests' upstream: a small, real MCP server, run in-process ([`spawn_http`]) or as a child
//! process (`warden_fixture notes`, over stdio or HTTP).
//!
//! The demo's notebook (`warden_mcp::demo`: `list_notes`, `add_note`, `delete_note`, the prompt
//! `summarize`, the resource `notes://all`) and more tools: `echo` (its result's `_meta` has
//! the `traceparent` and `tracestate` the call came with), `locate` (its `region` also
//! in the `Mcp-Param-Region` header, SEP-2243) and `add` (reads), `slow`
//! (a read that waits and honours cancellation), `call_count` and `cancellations` (what this
//! server executed and saw cancelled, for exactly-once and cancellation tests), `ask` and
//! `sample` (server-to-client requests) and `progress` (notifications before the result).
//!
//! `notes://all` can be subscribed to in both eras (`resources/subscribe`, or
//! `subscriptions/listen` with `resourceSubscriptions`): every note added or deleted sends
//! `notifications/resources/updated` for it.
//!
//! The prompt `slow` waits, as the tool does (honouring and counting cancellation);
//! `ask_briefly` asks a question and cancels it after a while.
//!
//! `notes://ask/{question}` (a resource template) needs the reader's answer to `question`
//! first: an elicitation in 2025-11-25, `input_required` in 2026-07-28.
//!
//! It also offers a prompt (`brief`), a resource (`notes://readme`) and a resource template
//! (`notes://note/{id}`) with every field that is not a gateway's ([`showcase`]).
//!
//! `end_streams` ends every `subscriptions/listen` stream gracefully, as a server that
//! restarts them does. `publish` adds a tool, a prompt, a resource and a resource template named after its `name`
//! and announces that those lists changed, in the caller's era: on the calling session
//! (2025-11-25), and on every `subscriptions/listen` stream that asked for them (2026-07-28).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, JsonObject, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};
use warden_mcp::demo::DemoNotes;

mod definitions;
mod http;
pub mod showcase;

pub use http::{
    Seen, serve_http, serve_http_with, spawn_http, spawn_http_idle, spawn_http_seen,
    spawn_http_with,
};

/// A value of the fixture's own making as an MCP type.
fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// Who is told that `notes://all` changed.
#[derive(Clone, Debug)]
enum Watcher {
    Session(rmcp::service::Peer<RoleServer>),
    Listen(rmcp::service::SubscriptionSink),
}

#[derive(Debug, Default)]
struct Counts {
    calls: AtomicU64,
    cancellations: AtomicU64,
    listens: AtomicU64,
}

/// The fixture server. Cheap to clone: state is shared.
#[derive(Clone, Debug)]
pub struct NotesServer {
    notebook: DemoNotes,
    counts: Arc<Counts>,
    tools: Arc<Vec<Tool>>,
    watchers: Arc<std::sync::Mutex<Vec<Watcher>>>,
    /// The names `publish` was called with.
    published: Arc<std::sync::Mutex<Vec<String>>>,
    /// Ends every `subscriptions/listen` stream (`end_streams`).
    end_streams: Arc<tokio::sync::Notify>,
    only_2026: bool,
    only_2025: bool,
    /// Ends every `subscriptions/listen` stream as soon as it opens.
    brief_listens: bool,
    /// Changes to its tools' definitions, read at each `tools/list` (`definitions`).
    definitions: Option<PathBuf>,
}

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn tools() -> Vec<Tool> {
    let read = || ToolAnnotations::new().read_only(true).open_world(false);
    let mut tools = warden_mcp::demo::tools();
    tools.extend([
        Tool::new(
            "echo",
            "Echo a text",
            schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})),
        )
        .with_annotations(read())
        // As an MCP Apps server advertises its tool's user interface.
        .with_meta(rmcp::model::MetaObject(
            json!({"ui": {"resourceUri": "ui://notes/echo"}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )),
        // SEP-2243: `region` travels in the `Mcp-Param-Region` header too.
        Tool::new(
            "locate",
            "Say which region was asked for",
            schema(json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]})),
        )
        .with_annotations(read()),
        Tool::new(
            "add",
            "Add two numbers",
            schema(json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]})),
        )
        .with_raw_output_schema(schema(json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]})))
        .with_annotations(read()),
        Tool::new(
            "slow",
            "Wait for `ms` milliseconds (honours cancellation)",
            schema(json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0, "maximum": 600000}}, "required": ["ms"]})),
        )
        .with_annotations(read()),
        Tool::new("call_count", "How many tool calls this server executed", schema(json!({"type": "object", "properties": {}})))
            .with_annotations(read()),
        Tool::new("cancellations", "How many calls the client cancelled", schema(json!({"type": "object", "properties": {}})))
            .with_annotations(read()),
        Tool::new(
            "ask",
            "Ask the client a question (elicitation) and return the answer",
            schema(json!({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]})),
        )
        .with_annotations(read()),
        Tool::new(
            "sample",
            "Ask the client's model (sampling) and return its text",
            schema(json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]})),
        )
        .with_annotations(read()),
        Tool::new(
            "progress",
            "Report `steps` progress notifications, `delay_ms` apart, each with a message of `message_bytes`, and log each",
            schema(json!({"type": "object", "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 100}, "delay_ms": {"type": "integer", "minimum": 0, "maximum": 10000}, "message_bytes": {"type": "integer", "minimum": 0, "maximum": 1000000}}, "required": ["steps"]})),
        )
        .with_annotations(read()),
        Tool::new(
            "ask_briefly",
            "Ask the client a question (elicitation), and cancel the question after `ms`",
            schema(json!({"type": "object", "properties": {"question": {"type": "string"}, "ms": {"type": "integer", "minimum": 0, "maximum": 60000}}, "required": ["question", "ms"]})),
        )
        .with_annotations(read()),
        Tool::new(
            "end_streams",
            "End every subscriptions/listen stream, as a server that restarts them does",
            schema(json!({"type": "object", "properties": {}})),
        )
        .with_annotations(read()),
        Tool::new(
            "publish",
            "Add a tool, a prompt, a resource and a resource template named `name`",
            schema(json!({"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}, "required": ["name"]})),
        ),
    ]);
    tools
}

impl NotesServer {
    /// A server keeping notes in memory, or in `file` (JSON) when given.
    pub fn new(file: Option<PathBuf>) -> Self {
        Self {
            notebook: DemoNotes::new(file),
            counts: Arc::new(Counts::default()),
            tools: Arc::new(tools()),
            watchers: Arc::default(),
            published: Arc::default(),
            end_streams: Arc::default(),
            only_2026: false,
            only_2025: false,
            brief_listens: false,
            definitions: None,
        }
    }

    /// Reads `file`, when it exists, at each `tools/list`: `{"<tool>": {"description": …,
    /// "inputSchema": …}}` replaces those fields of the tools it names (a server whose tools
    /// change under Warden, GOV-9).
    pub fn definitions(mut self, file: Option<PathBuf>) -> Self {
        self.definitions = file;
        self
    }

    /// Speaks 2025-11-25 only when `yes` (answers `server/discover` as a server that does not
    /// know it: method not found).
    pub fn only_2025(mut self, yes: bool) -> Self {
        self.only_2025 = yes;
        self
    }

    /// Ends every `subscriptions/listen` stream as soon as it opens when `yes`, as a server
    /// that cannot keep one does.
    pub fn brief_listens(mut self, yes: bool) -> Self {
        self.brief_listens = yes;
        self
    }

    /// How many `subscriptions/listen` streams were opened.
    pub fn listens(&self) -> u64 {
        self.counts.listens.load(Ordering::SeqCst)
    }

    fn published(&self) -> Vec<String> {
        self.published.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Adds what `publish` adds, and announces it in the caller's era.
    async fn publish(&self, name: String, ctx: &RequestContext<RoleServer>) {
        if let Ok(mut published) = self.published.lock() {
            published.push(name);
        }
        if !is_stateless(ctx) {
            let _ = ctx.peer.notify_tool_list_changed().await;
            let _ = ctx.peer.notify_prompt_list_changed().await;
            let _ = ctx.peer.notify_resource_list_changed().await;
        }
        let watchers = self.watchers.lock().map(|w| w.clone()).unwrap_or_default();
        for watcher in watchers {
            if let Watcher::Listen(sink) = watcher {
                // Each stream hears what it asked for; the others are refused by the sink.
                let _ = sink.notify_tool_list_changed().await;
                let _ = sink.notify_prompt_list_changed().await;
                let _ = sink.notify_resource_list_changed().await;
            }
        }
    }

    /// Speaks 2026-07-28 only when `yes` (refuses `initialize`).
    pub fn only_2026(mut self, yes: bool) -> Self {
        self.only_2026 = yes;
        self
    }

    /// Tells every watcher that `notes://all` changed.
    async fn notes_changed(&self) {
        const URI: &str = "notes://all";
        let watchers = self.watchers.lock().map(|w| w.clone()).unwrap_or_default();
        for watcher in watchers {
            match watcher {
                Watcher::Session(peer) => {
                    let params = rmcp::model::ResourceUpdatedNotificationParam::new(URI);
                    let _ = peer.notify_resource_updated(params).await;
                }
                Watcher::Listen(sink) => {
                    let _ = sink.notify_resource_updated(URI).await;
                }
            }
        }
    }

    /// The prompt `slow`: waits `ms`, or counts a cancellation.
    async fn slow_prompt(
        &self,
        request: &GetPromptRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let ms = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("ms"))
            .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or(v.as_u64()))
            .unwrap_or(0);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => {
                let message = rmcp::model::PromptMessage::new_text(rmcp::model::Role::User, "Done waiting.");
                Ok(rmcp::model::GetPromptResult::new(vec![message]).into())
            }
            () = ctx.ct.cancelled() => {
                self.counts.cancellations.fetch_add(1, Ordering::SeqCst);
                Err(McpError::internal_error("cancelled", None))
            }
        }
    }

    /// Tool calls executed so far.
    pub fn calls(&self) -> u64 {
        self.counts.calls.load(Ordering::SeqCst)
    }

    async fn run(
        &self,
        name: &str,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let text_arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
        let num_arg = |k: &str| args.get(k).and_then(Value::as_f64);
        let structured = |v: Value| {
            let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
            r.structured_content = Some(v);
            r
        };
        match name {
            "list_notes" | "add_note" | "delete_note" => self.notebook.call(name, args).await,
            "echo" => {
                let mut echoed = CallToolResult::success(vec![ContentBlock::text(
                    text_arg("text").unwrap_or_default(),
                )]);
                // The trace context the call came under, for the trace tests (OPS-3).
                if let Some(parent) = ctx.meta.get_traceparent() {
                    let mut meta = rmcp::model::MetaObject::new();
                    meta.set_traceparent(parent);
                    if let Some(state) = ctx.meta.get_tracestate() {
                        meta.set_tracestate(state);
                    }
                    echoed.meta = Some(meta);
                }
                Ok(echoed)
            }
            "locate" => Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "region={}",
                text_arg("region").unwrap_or_default()
            ))])),
            "add" => {
                let (a, b) = (num_arg("a").unwrap_or(0.0), num_arg("b").unwrap_or(0.0));
                Ok(structured(json!({"sum": a + b})))
            }
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(structured(json!({"slept_ms": ms}))),
                    () = ctx.ct.cancelled() => {
                        self.counts.cancellations.fetch_add(1, Ordering::SeqCst);
                        Err(McpError::internal_error("cancelled", None))
                    }
                }
            }
            "call_count" => Ok(structured(json!({"calls": self.calls()}))),
            "end_streams" => {
                self.end_streams.notify_waiters();
                Ok(structured(json!({"ended": true})))
            }
            "publish" => {
                let name = text_arg("name").unwrap_or_default();
                self.publish(name.clone(), ctx).await;
                Ok(structured(json!({"published": name})))
            }
            "cancellations" => Ok(structured(
                json!({"cancellations": self.counts.cancellations.load(Ordering::SeqCst)}),
            )),
            "ask" => {
                let question = text_arg("question").unwrap_or_default();
                match ctx.peer.create_elicitation(elicitation(&question)?).await {
                    Ok(answer) => Ok(structured(serde_json::to_value(answer).unwrap_or_default())),
                    Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "elicitation refused: {e}"
                    ))])),
                }
            }
            "ask_briefly" => {
                let question = text_arg("question").unwrap_or_default();
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                let wait = Some(Duration::from_millis(ms));
                // rmcp tells the client the question is cancelled when it times out.
                match ctx
                    .peer
                    .create_elicitation_with_timeout(elicitation(&question)?, wait)
                    .await
                {
                    Ok(answer) => Ok(structured(serde_json::to_value(answer).unwrap_or_default())),
                    Err(e) => Ok(structured(json!({"unanswered": e.to_string()}))),
                }
            }
            "sample" => {
                let prompt = text_arg("prompt").unwrap_or_default();
                #[allow(deprecated, reason = "sampling is part of the 2025-11-25 protocol")]
                let params = rmcp::model::CreateMessageRequestParams::new(
                    vec![rmcp::model::SamplingMessage::user_text(prompt)],
                    64,
                );
                #[allow(deprecated, reason = "sampling is part of the 2025-11-25 protocol")]
                match ctx.peer.create_message(params).await {
                    Ok(answer) => Ok(structured(serde_json::to_value(answer).unwrap_or_default())),
                    Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "sampling refused: {e}"
                    ))])),
                }
            }
            "progress" => {
                let steps = args.get("steps").and_then(Value::as_u64).unwrap_or(1);
                let delay = args.get("delay_ms").and_then(Value::as_u64).unwrap_or(0);
                let size = args
                    .get("message_bytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let message = (size > 0).then(|| "m".repeat(size as usize));
                let token = ctx.meta.get_progress_token();
                for step in 1..=steps {
                    if let Some(token) = &token {
                        let mut progress =
                            rmcp::model::ProgressNotificationParam::new(token.clone(), step as f64)
                                .with_total(steps as f64);
                        if let Some(message) = &message {
                            progress = progress.with_message(message.clone());
                        }
                        let _ = ctx.peer.notify_progress(progress).await;
                    }
                    #[allow(deprecated, reason = "logging is part of the 2025-11-25 protocol")]
                    let _ = ctx
                        .peer
                        .notify_logging_message(rmcp::model::LoggingMessageNotificationParam::new(
                            rmcp::model::LoggingLevel::Info,
                            json!({"step": step}),
                        ))
                        .await;
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                }
                Ok(structured(json!({"steps": steps})))
            }
            other => Err(McpError::invalid_params(
                format!("unknown tool `{other}`"),
                None,
            )),
        }
    }
}

impl ServerHandler for NotesServer {
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
                .build(),
        )
        .with_server_info(Implementation::new(
            "warden-notes",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("A small notebook: list_notes, add_note, delete_note.")
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        // A server of 2025-11-25 alone does not know `server/discover` (below): rmcp checks the
        // version of every inline request before any handler sees it.
        if self.only_2026 {
            std::borrow::Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
        } else {
            std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    async fn discover(
        &self,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, McpError> {
        if self.only_2025 {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "server/discover",
                None,
            ));
        }
        Ok(rmcp::model::DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools = definitions::revised(self.definitions.as_deref(), self.tools.to_vec());
        tools.extend(self.published().into_iter().map(|name| {
            Tool::new(
                format!("published_{name}"),
                "A published tool",
                schema(json!({"type": "object", "properties": {}})),
            )
        }));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut prompts = self.notebook.list_prompts(request, ctx).await?;
        prompts.prompts.push(typed(showcase::prompt())?);
        prompts.prompts.push(rmcp::model::Prompt::new(
            "slow",
            Some("Wait for `ms` milliseconds (honours cancellation)"),
            Some(vec![rmcp::model::PromptArgument::new("ms")]),
        ));
        prompts.prompts.extend(
            self.published()
                .into_iter()
                .map(|name| rmcp::model::Prompt::new(name, Some("A published prompt"), None)),
        );
        Ok(prompts)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name == "slow" {
            return self.slow_prompt(&request, &ctx).await;
        }
        if request.name == "brief" {
            let result: rmcp::model::GetPromptResult = typed(showcase::prompt_result())?;
            return Ok(result.into());
        }
        self.notebook.get_prompt(request, ctx).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut resources = self.notebook.list_resources(request, ctx).await?;
        resources.resources.push(typed(showcase::resource())?);
        resources.resources.extend(
            self.published()
                .into_iter()
                .map(|name| rmcp::model::Resource::new(format!("notes://published/{name}"), name)),
        );
        Ok(resources)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        let mut templates = vec![
            typed(showcase::template())?,
            rmcp::model::ResourceTemplate::new("notes://ask/{question}", "ask"),
        ];
        templates.extend(self.published().into_iter().map(|name| {
            rmcp::model::ResourceTemplate::new(format!("notes://published/{name}/{{part}}"), name)
        }));
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            templates,
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri == "notes://readme" {
            let result: rmcp::model::ReadResourceResult = typed(showcase::resource_result())?;
            return Ok(result.into());
        }
        if let Some(question) = request.uri.strip_prefix("notes://ask/") {
            return read_asking(&request, question, &ctx).await;
        }
        self.notebook.read_resource(request, ctx).await
    }

    #[allow(deprecated, reason = "resources/subscribe is the 2025-11-25 way")]
    async fn subscribe(
        &self,
        _request: rmcp::model::SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if let Ok(mut w) = self.watchers.lock() {
            w.push(Watcher::Session(ctx.peer.clone()));
        }
        Ok(())
    }

    #[allow(deprecated, reason = "resources/unsubscribe is the 2025-11-25 way")]
    async fn unsubscribe(
        &self,
        _request: rmcp::model::UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // A session's peer has no identity to compare: its notifications stop when it closes.
        if let Ok(mut w) = self.watchers.lock() {
            w.retain(|w| !matches!(w, Watcher::Session(p) if p.is_transport_closed()));
        }
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.counts.listens.fetch_add(1, Ordering::SeqCst);
        if self.brief_listens {
            return Ok(());
        }
        let sink = context.sink().clone();
        let id = sink.id().clone();
        if let Ok(mut w) = self.watchers.lock() {
            w.push(Watcher::Listen(sink));
        }
        tokio::select! {
            () = context.cancelled() => {}
            () = self.end_streams.notified() => {}
        }
        if let Ok(mut w) = self.watchers.lock() {
            w.retain(|w| !matches!(w, Watcher::Listen(s) if *s.id() == id));
        }
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        // 2026-07-28 has no server-to-client requests: `ask` answers `input_required` (an
        // elicitation keyed `answer`, state `asked:<question>`), and the retry's answer and
        // echoed state come back in the result.
        if request.name == "ask" && is_stateless(&ctx) {
            let question = args
                .get("question")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(answer) = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get("answer"))
            {
                self.counts.calls.fetch_add(1, Ordering::SeqCst);
                let v = json!({"answer": answer, "requestState": request.request_state});
                let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
                r.structured_content = Some(v);
                return Ok(r.into());
            }
            return Ok(CallToolResponse::InputRequired(asking(&question)?));
        }
        let result = self.run(&request.name, &args, &ctx).await;
        if let Ok(r) = &result {
            self.counts.calls.fetch_add(1, Ordering::SeqCst);
            if matches!(request.name.as_ref(), "add_note" | "delete_note")
                && r.is_error != Some(true)
            {
                self.notes_changed().await;
            }
        }
        result.map(Into::into)
    }
}

/// The elicitation of `question`, answered by a string `answer`.
fn elicitation(question: &str) -> Result<rmcp::model::ElicitRequestParams, McpError> {
    let schema = rmcp::model::ElicitationSchema::builder()
        .required_string("answer")
        .build()
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
    Ok(rmcp::model::ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.to_owned(),
        requested_schema: schema,
    })
}

/// A 2026-07-28 `input_required` asking `question` (an elicitation keyed `answer`, state
/// `asked:<question>`).
fn asking(question: &str) -> Result<rmcp::model::InputRequiredResult, McpError> {
    let mut requests = rmcp::model::InputRequests::new();
    requests.insert(
        "answer".into(),
        rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(elicitation(
            question,
        )?)),
    );
    Ok(rmcp::model::InputRequiredResult::new(
        Some(requests),
        Some(format!("asked:{question}")),
    ))
}

/// `notes://ask/{question}`: a read that needs the client's answer first — asked by
/// elicitation in 2025-11-25, by `input_required` in 2026-07-28 (the retry's answer and echoed
/// state come back in the contents).
async fn read_asking(
    request: &ReadResourceRequestParams,
    question: &str,
    ctx: &RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, McpError> {
    let contents = |v: Value| {
        rmcp::model::ReadResourceResult::new(vec![rmcp::model::ResourceContents::text(
            v.to_string(),
            request.uri.clone(),
        )])
        .into()
    };
    if is_stateless(ctx) {
        return match request
            .input_responses
            .as_ref()
            .and_then(|r| r.get("answer"))
        {
            Some(answer) => Ok(contents(
                json!({"answer": answer, "requestState": request.request_state}),
            )),
            None => Ok(ReadResourceResponse::InputRequired(asking(question)?)),
        };
    }
    match ctx.peer.create_elicitation(elicitation(question)?).await {
        Ok(answer) => Ok(contents(json!({"answer": answer}))),
        Err(e) => Ok(contents(json!({"refused": e.to_string()}))),
    }
}

/// Whether a request is of the 2026-07-28 era.
fn is_stateless(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
}

/// Serves the fixture over stdin/stdout until stdin closes.
pub async fn serve_stdio(server: NotesServer) -> anyhow::Result<()> {
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
