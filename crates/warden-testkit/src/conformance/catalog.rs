//! What the conformance fixture offers: its tools, prompts and capabilities, and the small
//! helpers its handlers share.

#![allow(deprecated, reason = "logging (2025-11-25) is part of the suite")]

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, LoggingLevel, Prompt, PromptArgument,
    ResourceContents, ServerCapabilities, Tool,
};
use serde_json::{Value, json};

/// A 1×1 red PNG.
pub(super) const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
pub(super) const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
pub(super) const JSON_SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
pub(super) fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

pub(super) fn no_args() -> Arc<JsonObject> {
    schema(json!({"type": "object", "properties": {}}))
}

pub(super) fn tools() -> Vec<Tool> {
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
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            })),
        ),
    ]
}

pub(super) fn log_rank(level: &LoggingLevel) -> u8 {
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

pub(super) fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

pub(super) fn text_resource(uri: &str, mime: &str, body: impl Into<String>) -> ResourceContents {
    ResourceContents::text(body, uri).with_mime_type(mime)
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(|e| McpError::internal_error(e.to_string(), None))
}

pub(super) fn sleep_ms(ms: u64) -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_millis(ms))
}

/// The id of a template resource `test://template/{id}/data`.
pub(super) fn template_id(uri: &str) -> Option<&str> {
    uri.strip_prefix("test://template/")?
        .strip_suffix("/data")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

pub(super) fn capabilities() -> ServerCapabilities {
    // As the suite's reference server declares them.
    from_json(json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {},
        "completions": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }))
    .unwrap_or_default()
}

pub(super) fn prompts() -> Vec<Prompt> {
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
