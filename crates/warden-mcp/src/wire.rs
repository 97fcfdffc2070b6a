//! The one mapping from a governed outcome to an MCP `CallToolResult` (GOV-3), and from a
//! catalog entry to an MCP `Tool`. Free of side effects.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::Value;
use warden_core::contract::{CallOutcome, ToolOutput, Verdict};
use warden_core::tool::ToolDescriptor;

/// The `_meta` key carrying Warden's decision on every result.
pub const DECISION_META: &str = "warden/decision";

/// The MCP result of a governed call.
///
/// - An executed upstream call passes the upstream's result through intact (content,
///   `structuredContent`, its own `isError`), with the decision in `_meta`.
/// - Everything else carries the contract `{status, code?, data?, approvalId?, runId,
///   message}` as text and in `_meta`, and as `structuredContent` unless the tool declares an
///   output schema (clients check `structuredContent` against it, and a denial is not the
///   tool's output); `isError` is true exactly when denied.
///
/// Protocol metadata of the upstream hop (`io.modelcontextprotocol/…` keys in `_meta`, such as
/// the upstream's server info) is not passed on: the client talks to Warden.
pub fn call_result(outcome: &CallOutcome, declares_output_schema: bool) -> CallToolResult {
    let meta_value = serde_json::to_value(outcome.contract_meta()).unwrap_or_default();
    if let Verdict::Executed {
        output: ToolOutput::Upstream { result, .. },
        ..
    } = &outcome.verdict
        && let Ok(mut passed) =
            serde_json::from_value::<CallToolResult>(Value::Object(result.clone()))
    {
        let mut meta = passed.meta.take().unwrap_or_default();
        meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
        meta.insert(DECISION_META.into(), meta_value);
        passed.meta = Some(meta);
        return passed;
    }
    let contract = serde_json::to_value(outcome.contract()).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(contract.to_string())]);
    let executed_builtin = matches!(outcome.verdict, Verdict::Executed { .. });
    if executed_builtin || !declares_output_schema {
        result.structured_content = Some(contract);
    }
    result.is_error = Some(outcome.is_error());
    let mut meta = MetaObject::new();
    meta.insert(DECISION_META.into(), meta_value);
    result.meta = Some(meta);
    result
}

/// The MCP `Tool` advertised for a catalog entry: its one input schema (GOV-1), and the
/// upstream's title, output schema and annotations passed through.
pub fn tool(descriptor: &ToolDescriptor) -> Tool {
    let schema: Arc<JsonObject> = descriptor.schema.advertised().clone();
    let mut tool = Tool::new_with_raw(
        descriptor.name.to_string(),
        descriptor.description.clone().map(Into::into),
        schema,
    );
    if let Some(title) = &descriptor.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(output) = &descriptor.output_schema {
        tool = tool.with_raw_output_schema(output.clone());
    }
    if let Some(annotations) = descriptor
        .annotations
        .as_ref()
        .and_then(|a| ToolAnnotations::deserialize(&**a).ok())
    {
        tool = tool.with_annotations(annotations);
    }
    tool
}
