//! The conformance fixture: an MCP server with exactly the tools, resources and prompts the
//! official MCP conformance suite (`@modelcontextprotocol/conformance`, server scenarios)
//! expects, written by hand on rmcp's [`ServerHandler`].
//!
//! It passes the suite on its own (`tests/conformance/run.sh fixture`); Warden put in front of
//! it must pass the suite exactly as it does (`run.sh both`, run by `cargo test`).
//!
//! - Tools: `test_simple_text`, `test_image_content`, `test_audio_content`,
//!   `test_embedded_resource`, `test_multiple_content_types`, `test_tool_with_logging`,
//!   `test_tool_with_progress`, `test_error_handling`, `test_reconnection` (closes its own SSE
//!   stream mid-call, SEP-1699), `test_sampling` and `test_elicitation` and
//!   `test_elicitation_sep1034_defaults` and `test_elicitation_sep1330_enums` (server-to-client
//!   requests), `json_schema_2020_12_tool` (SEP-1613 schema keywords).
//! - Resources: `test://static-text`, `test://static-binary`, `test://watched-resource`
//!   (subscribable), template `test://template/{id}/data`.
//! - Prompts: `test_simple_prompt`, `test_prompt_with_arguments`,
//!   `test_prompt_with_embedded_resource`, `test_prompt_with_image`.
//! - Logging (`logging/setLevel`, filtered by level) and completions.
//!
//! Over HTTP it serves Streamable HTTP at `/mcp`: 2025-era clients get sessions (SSE responses,
//! priming events, resumption with `Last-Event-ID`), 2026-07-28 requests are served statelessly
//! on the same endpoint. Host and Origin must be loopback (DNS-rebinding protection).

#![allow(
    deprecated,
    reason = "logging, sampling and resource subscriptions (2025-11-25) are part of the suite"
)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage,
    CompleteRequestParams, CompleteResult, ContentBlock, CustomRequest, GetExtensions as _,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Reference, Resource, ResourceContents,
    ResourceTemplate, Role, ServerCapabilities, ServerConfig, ServerRequest, SetLevelRequestParams,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionHandle, LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// A 1×1 red PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
const JSON_SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The conformance fixture server. One instance per session (its log level and resource
/// subscriptions are per session); cheap to clone.
#[derive(Clone, Debug)]
pub struct ConformanceServer {
    tools: Arc<Vec<Tool>>,
    log_level: Arc<Mutex<LoggingLevel>>,
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
}

impl Default for ConformanceServer {
    fn default() -> Self {
        Self::new()
    }
}

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn no_args() -> Arc<JsonObject> {
    schema(json!({"type": "object", "properties": {}}))
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "test_simple_text",
            "Tests simple text content response",
            no_args(),
        ),
        Tool::new(
            "test_image_content",
            "Tests image content response",
            no_args(),
        ),
        Tool::new(
            "test_audio_content",
            "Tests audio content response",
            no_args(),
        ),
        Tool::new(
            "test_embedded_resource",
            "Tests embedded resource content response",
            no_args(),
        ),
        Tool::new(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            no_args(),
        ),
        Tool::new(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
            no_args(),
        ),
        Tool::new(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            no_args(),
        ),
        Tool::new(
            "test_error_handling",
            "Tests error response handling",
            no_args(),
        ),
        Tool::new(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection (SEP-1699): closes the \
             stream mid-call and sends the result after the client reconnects",
            no_args(),
        ),
        Tool::new(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            schema(json!({
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
                "required": ["prompt"]
            })),
        ),
        Tool::new(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            schema(json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "The message to show the user"}},
                "required": ["message"]
            })),
        ),
        Tool::new(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            no_args(),
        ),
        Tool::new(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            no_args(),
        ),
        Tool::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            schema(json!({
                "$schema": JSON_SCHEMA_2020_12,
                "type": "object",
                "$defs": {
                    "address": {
                        "type": "object",
                        "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"}
                },
                "additionalProperties": false
            })),
        ),
    ]
}

fn log_rank(level: &LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

fn text_resource(uri: &str, mime: &str, body: impl Into<String>) -> ResourceContents {
    ResourceContents::text(body, uri).with_mime_type(mime)
}

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(|e| McpError::internal_error(e.to_string(), None))
}

fn sleep_ms(ms: u64) -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_millis(ms))
}

/// The id of a template resource `test://template/{id}/data`.
fn template_id(uri: &str) -> Option<&str> {
    uri.strip_prefix("test://template/")?
        .strip_suffix("/data")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

impl ConformanceServer {
    /// A fresh server (one per session).
    pub fn new() -> Self {
        Self {
            tools: Arc::new(tools()),
            log_level: Arc::new(Mutex::new(LoggingLevel::Debug)),
            subscriptions: Arc::new(Mutex::new(BTreeSet::new())),
        }
    }

    /// The URIs this session subscribed to.
    pub async fn subscriptions(&self) -> Vec<String> {
        self.subscriptions.lock().await.iter().cloned().collect()
    }

    async fn log(&self, ctx: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
        if log_rank(&level) < log_rank(&*self.log_level.lock().await) {
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

    /// Sends a server-to-client request (`sampling/createMessage`, `elicitation/create`) on the
    /// stream of the current request and returns the client's result as JSON.
    async fn ask_client(
        &self,
        ctx: &RequestContext<RoleServer>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let request = ServerRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        let result = ctx
            .peer
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        serde_json::to_value(&result).map_err(|e| e.to_string())
    }

    async fn elicit(&self, ctx: &RequestContext<RoleServer>, params: Value) -> CallToolResult {
        match self.ask_client(ctx, "elicitation/create", params).await {
            Ok(r) => {
                let action = r.get("action").and_then(Value::as_str).unwrap_or("unknown");
                let content = r.get("content").cloned().unwrap_or_else(|| json!({}));
                text(format!(
                    "Elicitation completed: action={action}, content={content}"
                ))
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                "Elicitation not supported or error: {e}"
            ))]),
        }
    }

    async fn run(
        &self,
        name: &str,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let str_arg = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    McpError::invalid_params(format!("`{k}` (string) is required"), None)
                })
        };
        Ok(match name {
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
                    .ask_client(ctx, "sampling/createMessage", params)
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
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "Sampling not supported or error: {e}"
                    ))]),
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
                match self.ask_client(ctx, "elicitation/create", params).await {
                    Ok(r) => {
                        let action = r.get("action").and_then(Value::as_str).unwrap_or("unknown");
                        let content = r.get("content").cloned().unwrap_or_else(|| json!({}));
                        text(format!(
                            "User response: action={action}, content={content}"
                        ))
                    }
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "Elicitation not supported or error: {e}"
                    ))]),
                }
            }
            "test_elicitation_sep1034_defaults" => {
                self.elicit(
                    ctx,
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
            }
            "test_elicitation_sep1330_enums" => {
                self.elicit(
                    ctx,
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
        })
    }
}

fn capabilities() -> ServerCapabilities {
    // As the suite's reference server declares them.
    from_json(json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {},
        "completions": {}
    }))
    .unwrap_or_default()
}

fn prompts() -> Vec<Prompt> {
    let arg = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    vec![
        Prompt::new(
            "test_simple_prompt",
            Some("A simple prompt without arguments"),
            None,
        )
        .with_title("Simple Test Prompt"),
        Prompt::new(
            "test_prompt_with_arguments",
            Some("A prompt with required arguments"),
            Some(vec![
                arg("arg1", "First test argument"),
                arg("arg2", "Second test argument"),
            ]),
        )
        .with_title("Prompt With Arguments"),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            Some("A prompt that includes an embedded resource"),
            Some(vec![arg("resourceUri", "URI of the resource to embed")]),
        )
        .with_title("Prompt With Embedded Resource"),
        Prompt::new(
            "test_prompt_with_image",
            Some("A prompt that includes image content"),
            None,
        )
        .with_title("Prompt With Image"),
    ]
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
        let args = request.arguments.unwrap_or_default();
        self.run(&request.name, &args, &ctx).await.map(Into::into)
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
        Ok(ListPromptsResult::with_all_items(prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
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
        from_json(json!({
            "completion": {"values": values, "total": values.len(), "hasMore": false}
        }))
    }
}

/// Where a session request's response goes: its session and the HTTP request (SSE stream) it
/// arrived on. Put in the request's extensions by [`Sessions`] so a tool can close its own stream
/// (SEP-1699 polling); rmcp does not hand that id to handlers.
#[derive(Clone, Debug)]
struct RequestStream {
    session: LocalSessionHandle,
    http_request_id: u64,
}

/// rmcp's in-memory session manager, but recording in each request where its stream is.
#[derive(Debug, Default)]
struct Sessions {
    inner: LocalSessionManager,
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<rmcp::model::ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // What `LocalSessionManager::create_stream` does, plus the marker.
        let handle = self
            .inner
            .sessions
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        let receiver = handle.establish_request_wise_channel().await?;
        let http_request_id = receiver.http_request_id;
        if let (ClientJsonRpcMessage::Request(request), Some(http_request_id)) =
            (&mut message, http_request_id)
        {
            request.request.extensions_mut().insert(RequestStream {
                session: handle.clone(),
                http_request_id,
            });
        }
        handle.push_message(message, http_request_id).await?;
        let mut rx = receiver.inner;
        Ok(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// Serves the fixture over stdin/stdout until stdin closes.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let running = ConformanceServer::new()
        .serve(rmcp::transport::stdio())
        .await?;
    running.waiting().await?;
    Ok(())
}

/// Serves the fixture over Streamable HTTP at `/mcp` on `listener` until `shutdown`.
///
/// Sessions answer with SSE streams (priming events, `retry`, resumption); only loopback `Host`
/// and `Origin` values are accepted.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        || Ok(ConformanceServer::new()),
        Arc::new(Sessions::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let ct = shutdown.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { ct.cancelled().await })
        .await?;
    Ok(())
}
