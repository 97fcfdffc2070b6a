//! The conformance fixture's MCP server: one instance per session, its tool calls and the
//! rest of rmcp's [`ServerHandler`].

#![allow(
    deprecated,
    reason = "logging, sampling and resource subscriptions (2025-11-25) are part of the suite"
)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, CustomRequest, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    Implementation, InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, Resource, ResourceContents, ResourceTemplate, Role,
    ServerConfig, ServerRequest, SetLevelRequestParams, SubscribeRequestParams, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::catalog::*;
use super::input_required::{self, Shared};
use super::sessions::RequestStream;

/// How the fixture's tools ask the client in 2026-07-28.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Asking {
    /// With `input_required` results, and `subscriptions/listen` is served (the default).
    #[default]
    Natively,
    /// Only through a session's peer, which a 2026-07-28 request has not; no
    /// `subscriptions/listen`.
    OnSession,
}

/// The conformance fixture server. One instance per session (its log level and resource
/// subscriptions are per session); cheap to clone.
#[derive(Clone, Debug)]
pub struct ConformanceServer {
    tools: Arc<Vec<Tool>>,
    log_level: Arc<Mutex<LoggingLevel>>,
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
    shared: Arc<Shared>,
    asking: Asking,
}

impl Default for ConformanceServer {
    fn default() -> Self {
        Self::new(Arc::new(Shared::default()), Asking::Natively)
    }
}

impl ConformanceServer {
    /// A fresh server (one per session).
    pub(super) fn new(shared: Arc<Shared>, asking: Asking) -> Self {
        let mut all = tools();
        all.extend(input_required::tools());
        all.extend(super::tasks::tools());
        Self {
            shared,
            tools: Arc::new(all),
            log_level: Arc::new(Mutex::new(LoggingLevel::Debug)),
            subscriptions: Arc::new(Mutex::new(BTreeSet::new())),
            asking,
        }
    }

    /// The URIs this session subscribed to.
    pub async fn subscriptions(&self) -> Vec<String> {
        self.subscriptions.lock().await.iter().cloned().collect()
    }

    async fn log(&self, ctx: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
        // 2026-07-28: only when the request's _meta asks for a level (no logging/setLevel).
        let min = if input_required::is_2026(ctx) {
            match ctx.meta.log_level() {
                Some(l) => l,
                None => return,
            }
        } else {
            *self.log_level.lock().await
        };
        if log_rank(&level) < log_rank(&min) {
            return;
        }
        let mut param = LoggingMessageNotificationParam::new(level, json!(message));
        param.logger = Some("conformance-test-server".into());
        let sent = ctx.peer.notify_logging_message(param).await;
        if let Err(e) = sent {
            tracing::debug!(error = %e, "cannot send a log message");
        }
    }

    async fn progress(&self, ctx: &RequestContext<RoleServer>, progress: u32) {
        let Some(token) = ctx.meta.get_progress_token() else {
            return;
        };
        let param = match from_json::<ProgressNotificationParam>(json!({
            "progressToken": token,
            "progress": progress,
            "total": 100,
            "message": format!("Completed step {progress} of 100"),
        })) {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!(error = %e.message, "cannot build a progress notification");
                return;
            }
        };
        if let Err(e) = ctx.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "cannot send a progress notification");
        }
    }

    /// Asks the client (`sampling/createMessage`, `elicitation/create`) and returns its
    /// result as JSON: in 2025-11-25 a request on the stream of the current call; in
    /// 2026-07-28 an `input_required` answer (key `request`) on the first round
    /// ([`Asked::Input`]), and the client's response from the retry's `inputResponses`.
    async fn ask_client(
        &self,
        ctx: &RequestContext<RoleServer>,
        responses: Option<&InputResponses>,
        method: &str,
        params: Value,
    ) -> Result<Value, Asked> {
        if input_required::is_2026(ctx) {
            if self.asking == Asking::OnSession {
                // What rmcp's `Peer::create_elicitation` answers without a session: no peer
                // info, so no capability.
                let what = method.split('/').next().unwrap_or(method);
                return Err(Asked::Failed(format!(
                    "client does not support {what}: no {what} capability"
                )));
            }
            if let Some(answer) = responses.and_then(|r| r.get("request")) {
                return Ok(answer.clone());
            }
            let request: InputRequest = from_json(json!({"method": method, "params": params}))
                .map_err(|e| Asked::Failed(e.message.to_string()))?;
            let mut requests = InputRequests::new();
            requests.insert("request".into(), request);
            return Err(Asked::Input(InputRequiredResult::from_input_requests(
                requests,
            )));
        }
        let request = ServerRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        let result = ctx
            .peer
            .send_request(request)
            .await
            .map_err(|e| Asked::Failed(e.to_string()))?;
        serde_json::to_value(&result).map_err(|e| Asked::Failed(e.to_string()))
    }

    async fn elicit(
        &self,
        ctx: &RequestContext<RoleServer>,
        responses: Option<&InputResponses>,
        params: Value,
    ) -> Result<CallToolResult, InputRequiredResult> {
        Ok(
            match self
                .ask_client(ctx, responses, "elicitation/create", params)
                .await
            {
                Ok(r) => {
                    let action = r.get("action").and_then(Value::as_str).unwrap_or("unknown");
                    let content = r.get("content").cloned().unwrap_or_else(|| json!({}));
                    text(format!(
                        "Elicitation completed: action={action}, content={content}"
                    ))
                }
                Err(Asked::Input(needed)) => return Err(needed),
                Err(Asked::Failed(e)) => CallToolResult::error(vec![ContentBlock::text(format!(
                    "Elicitation not supported or error: {e}"
                ))]),
            },
        )
    }

    async fn run(
        &self,
        name: &str,
        args: &JsonObject,
        responses: Option<&InputResponses>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let str_arg = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    McpError::invalid_params(format!("`{k}` (string) is required"), None)
                })
        };
        Ok(CallToolResponse::from(match name {
            "test_simple_text" => text("This is a simple text response for testing."),
            "test_image_content" => CallToolResult::success(vec![ContentBlock::image(
                PNG_BASE64,
                "image/png",
            )]),
            "test_audio_content" => CallToolResult::success(vec![ContentBlock::audio(
                WAV_BASE64,
                "audio/wav",
            )]),
            "test_embedded_resource" => {
                CallToolResult::success(vec![ContentBlock::resource(text_resource(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                ))])
            }
            "test_multiple_content_types" => CallToolResult::success(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG_BASE64, "image/png"),
                ContentBlock::resource(text_resource(
                    "test://mixed-content-resource",
                    "application/json",
                    json!({"test": "data", "value": 123}).to_string(),
                )),
            ]),
            "test_tool_with_logging" => {
                self.log(ctx, LoggingLevel::Info, "Tool execution started")
                    .await;
                sleep_ms(50).await;
                self.log(ctx, LoggingLevel::Info, "Tool processing data")
                    .await;
                sleep_ms(50).await;
                self.log(ctx, LoggingLevel::Info, "Tool execution completed")
                    .await;
                text("Tool with logging executed successfully")
            }
            "test_tool_with_progress" => {
                self.progress(ctx, 0).await;
                sleep_ms(50).await;
                self.progress(ctx, 50).await;
                sleep_ms(50).await;
                self.progress(ctx, 100).await;
                let token = ctx
                    .meta
                    .get_progress_token()
                    .map(|t| serde_json::to_string(&t).unwrap_or_default())
                    .unwrap_or_else(|| "none".into());
                text(format!("Progress reported with token {token}"))
            }
            "test_error_handling" => CallToolResult::error(vec![ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )]),
            "test_reconnection" => {
                // SEP-1699: close this request's SSE stream (after a priming event telling the
                // client to come back soon), then answer once the client has resumed it with
                // `Last-Event-ID`. Only sessions (2025 era) have a stream to close.
                if let Some(stream) = ctx.extensions.get::<RequestStream>() {
                    let closed = stream
                        .session
                        .close_sse_stream(stream.http_request_id, Some(Duration::from_millis(100)))
                        .await;
                    if let Err(e) = closed {
                        tracing::debug!(error = %e, "cannot close the request's SSE stream");
                    }
                    sleep_ms(1000).await;
                }
                text(
                    "Reconnection test completed successfully. If you received this, the client \
                     properly reconnected after stream closure.",
                )
            }
            "test_sampling" => {
                let prompt = str_arg("prompt")?;
                let params = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100
                });
                match self
                    .ask_client(ctx, responses, "sampling/createMessage", params)
                    .await
                {
                    Ok(r) => {
                        let content = r.get("content");
                        let answer = content
                            .and_then(|c| c.get("text"))
                            .or_else(|| {
                                content
                                    .and_then(Value::as_array)
                                    .and_then(|a| a.iter().find_map(|b| b.get("text")))
                            })
                            .and_then(Value::as_str)
                            .unwrap_or("No response");
                        text(format!("LLM response: {answer}"))
                    }
                    Err(Asked::Input(needed)) => return Ok(needed.into()),
                    Err(Asked::Failed(e)) => CallToolResult::error(vec![ContentBlock::text(
                        format!("Sampling not supported or error: {e}"),
                    )]),
                }
            }
            "test_elicitation" => {
                let message = str_arg("message")?;
                let params = json!({
                    "mode": "form",
                    "message": message,
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "username": {"type": "string", "description": "User's response"},
                            "email": {"type": "string", "description": "User's email address"}
                        },
                        "required": ["username", "email"]
                    }
                });
                match self
                    .ask_client(ctx, responses, "elicitation/create", params)
                    .await
                {
                    Ok(r) => {
                        let action = r.get("action").and_then(Value::as_str).unwrap_or("unknown");
                        let content = r.get("content").cloned().unwrap_or_else(|| json!({}));
                        text(format!(
                            "User response: action={action}, content={content}"
                        ))
                    }
                    Err(Asked::Input(needed)) => return Ok(needed.into()),
                    Err(Asked::Failed(e)) => CallToolResult::error(vec![ContentBlock::text(
                        format!("Elicitation not supported or error: {e}"),
                    )]),
                }
            }
            "test_elicitation_sep1034_defaults" => {
                match self.elicit(
                    ctx,
                    responses,
                    json!({
                        "mode": "form",
                        "message": "Please review and update the form fields with defaults",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                                "age": {"type": "integer", "description": "User age", "default": 30},
                                "score": {"type": "number", "description": "User score", "default": 95.5},
                                "status": {
                                    "type": "string",
                                    "description": "User status",
                                    "enum": ["active", "inactive", "pending"],
                                    "default": "active"
                                },
                                "verified": {"type": "boolean", "description": "Verification status", "default": true}
                            },
                            "required": []
                        }
                    }),
                )
                .await
                {
                    Ok(r) => r,
                    Err(needed) => return Ok(needed.into()),
                }
            }
            "test_elicitation_sep1330_enums" => {
                match self.elicit(
                    ctx,
                    responses,
                    json!({
                        "mode": "form",
                        "message": "Please select options from the enum fields",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "untitledSingle": {
                                    "type": "string",
                                    "description": "Select one option",
                                    "enum": ["option1", "option2", "option3"]
                                },
                                "titledSingle": {
                                    "type": "string",
                                    "description": "Select one option with titles",
                                    "oneOf": [
                                        {"const": "value1", "title": "First Option"},
                                        {"const": "value2", "title": "Second Option"},
                                        {"const": "value3", "title": "Third Option"}
                                    ]
                                },
                                "legacyEnum": {
                                    "type": "string",
                                    "description": "Select one option (legacy)",
                                    "enum": ["opt1", "opt2", "opt3"],
                                    "enumNames": ["Option One", "Option Two", "Option Three"]
                                },
                                "untitledMulti": {
                                    "type": "array",
                                    "description": "Select multiple options",
                                    "minItems": 1,
                                    "maxItems": 3,
                                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                                },
                                "titledMulti": {
                                    "type": "array",
                                    "description": "Select multiple options with titles",
                                    "minItems": 1,
                                    "maxItems": 3,
                                    "items": {
                                        "anyOf": [
                                            {"const": "value1", "title": "First Choice"},
                                            {"const": "value2", "title": "Second Choice"},
                                            {"const": "value3", "title": "Third Choice"}
                                        ]
                                    }
                                }
                            },
                            "required": []
                        }
                    }),
                )
                .await
                {
                    Ok(r) => r,
                    Err(needed) => return Ok(needed.into()),
                }
            }
            "json_schema_2020_12_tool" => text(format!(
                "JSON Schema 2020-12 tool called with: {}",
                Value::Object(args.clone())
            )),
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool `{other}`"),
                    None,
                ));
            }
        }))
    }
}

/// Why the client's answer is not there.
enum Asked {
    /// 2026-07-28: ask with this `input_required` answer first.
    Input(InputRequiredResult),
    /// The request failed.
    Failed(String),
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities())
            .with_server_info(Implementation::new(
                "warden-conformance-fixture",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("The MCP conformance suite's fixture server.")
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(response) = super::tasks::call_tool(&self.shared.tasks, &request, &ctx).await? {
            return Ok(response);
        }
        if request.name == "test_logging_tool" {
            // SEP-2575: logs only at the level the request's `_meta` asks for (see `log`).
            for m in [
                "Logging tool started",
                "Logging tool working",
                "Logging tool done",
            ] {
                self.log(&ctx, LoggingLevel::Info, m).await;
            }
            return Ok(text("Logging tool finished").into());
        }
        if let Some(response) = input_required::call_tool(&self.shared, &request, &ctx).await? {
            return Ok(response);
        }
        let args = request.arguments.clone().unwrap_or_default();
        self.run(&request.name, &args, request.input_responses.as_ref(), &ctx)
            .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("test://static-text", "static-text")
                .with_title("Static Text Resource")
                .with_description("A static text resource for testing")
                .with_mime_type("text/plain"),
            Resource::new("test://static-binary", "static-binary")
                .with_title("Static Binary Resource")
                .with_description("A static binary resource (image) for testing")
                .with_mime_type("image/png"),
            Resource::new("test://watched-resource", "watched-resource")
                .with_title("Watched Resource")
                .with_description("A resource clients can subscribe to")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("test://template/{id}/data", "template")
                .with_title("Resource Template")
                .with_description("A resource template with parameter substitution")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => text_resource(
                uri,
                "text/plain",
                "This is the content of the static text resource.",
            ),
            "test://static-binary" => {
                ResourceContents::blob(PNG_BASE64, uri).with_mime_type("image/png")
            }
            "test://watched-resource" => {
                text_resource(uri, "text/plain", "Watched resource content")
            }
            _ => match template_id(uri) {
                Some(id) => text_resource(
                    uri,
                    "application/json",
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string(),
                ),
                None => {
                    return Err(McpError::resource_not_found(
                        format!("unknown resource `{uri}`"),
                        Some(json!({"uri": uri})),
                    ));
                }
            },
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions.lock().await.insert(request.uri.clone());
        self.log(
            &ctx,
            LoggingLevel::Info,
            &format!("Subscribed to resource: {}", request.uri),
        )
        .await;
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions.lock().await.remove(&request.uri);
        self.log(
            &ctx,
            LoggingLevel::Info,
            &format!("Unsubscribed from resource: {}", request.uri),
        )
        .await;
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut all = prompts();
        all.push(rmcp::model::Prompt::new(
            "test_input_required_result_prompt",
            Some("SEP-2322: asks for user_context before it renders"),
            None,
        ));
        Ok(ListPromptsResult::with_all_items(all))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let responses: Option<JsonObject> = request
            .input_responses
            .clone()
            .map(|m| m.into_iter().collect());
        if let Some(r) = input_required::prompt_get(&request.name, responses.as_ref(), &ctx).await?
        {
            return Ok(r);
        }
        let args = request.arguments.clone().unwrap_or_default();
        let arg = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    McpError::invalid_params(format!("argument `{k}` is required"), None)
                })
        };
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![PromptMessage::new_text(
                Role::User,
                "This is a simple prompt for testing.",
            )],
            "test_prompt_with_arguments" => {
                let (arg1, arg2) = (arg("arg1")?, arg("arg2")?);
                vec![PromptMessage::new_text(
                    Role::User,
                    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
                )]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = arg("resourceUri")?;
                vec![
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::resource(text_resource(
                            &uri,
                            "text/plain",
                            "Embedded resource content for testing.",
                        )),
                    ),
                    PromptMessage::new_text(
                        Role::User,
                        "Please process the embedded resource above.",
                    ),
                ]
            }
            "test_prompt_with_image" => vec![
                PromptMessage::new(Role::User, ContentBlock::image(PNG_BASE64, "image/png")),
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ],
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown prompt `{other}`"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.lock().await = request.level;
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Prompt(p), "arg1" | "arg2") if p.name == "test_prompt_with_arguments" => {
                &["paris", "park", "party"]
            }
            (Reference::Resource(r), "id") if r.uri == "test://template/{id}/data" => {
                &["123", "456", "789"]
            }
            _ => &[],
        };
        let values: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|v| v.starts_with(request.argument.value.as_str()))
            .collect();
        let info: rmcp::model::CompletionInfo = from_json(json!({
            "values": values, "total": values.len(), "hasMore": false
        }))?;
        Ok(CompleteResult::new(info))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        Ok(rmcp::model::GetTaskResult::new(
            self.shared.tasks.get_task(&request.task_id)?,
        ))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared
            .tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared.tasks.cancel_task(&request.task_id)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        // `None` leaves `subscriptions/listen` unimplemented: rmcp answers it "method not found".
        (self.asking == Asking::Natively).then(|| requested.clone())
    }

    async fn listen(
        &self,
        subscription: rmcp::service::SubscriptionContext,
    ) -> Result<(), McpError> {
        let id = self.shared.add_sink(subscription.sink().clone()).await;
        subscription.cancelled().await;
        self.shared.remove_sink(id).await;
        Ok(())
    }
}
