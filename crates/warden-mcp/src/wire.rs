//! The one mapping between MCP and the governed call, both ways: an upstream's answer into
//! the outcome the pipeline records ([`upstream_output`]; the core keeps it as JSON, knowing
//! no MCP types), the outcome into the client's answer ([`response`], [`call_result`] —
//! GOV-3), a catalog entry into an MCP `Tool`, and the check of a client's `inputResponses`
//! ([`check_input_responses`]). Free of side effects.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult, Icon, InputRequiredResult,
    JsonObject, MetaObject, ResultType, Tool, ToolAnnotations,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use warden_core::contract::{CallOutcome, ToolOutput, Verdict};
use warden_core::tool::ToolDescriptor;

use crate::upstream::UpstreamAnswer;

/// The `_meta` key carrying Warden's decision on every result.
pub const DECISION_META: &str = "warden/decision";

/// An upstream's answer as the governed outcome keeps it; `None` when it cannot be written
/// as a JSON object.
pub(crate) fn upstream_output(answer: UpstreamAnswer) -> Option<ToolOutput> {
    fn object(value: &impl Serialize) -> Option<serde_json::Map<String, Value>> {
        match serde_json::to_value(value) {
            Ok(Value::Object(object)) => Some(object),
            _ => None,
        }
    }
    Some(match answer {
        UpstreamAnswer::Complete(result) => ToolOutput::Upstream {
            is_error: result.is_error.unwrap_or(false),
            result: object(&result)?,
        },
        UpstreamAnswer::InputRequired(needed) => ToolOutput::InputRequired {
            result: object(&needed)?,
        },
        UpstreamAnswer::Task(task) => ToolOutput::Task {
            result: object(&task)?,
        },
        UpstreamAnswer::Refused(error) => ToolOutput::Refused {
            error: object(&error)?,
        },
    })
}

/// The client's answer to a governed call: an upstream's task (under the upstream's id, which
/// the caller renames), its `input_required` result or its JSON-RPC error as it came, and
/// otherwise [`call_result`].
pub(crate) fn response(outcome: &CallOutcome) -> Result<CallToolResponse, McpError> {
    let Verdict::Executed { output, .. } = &outcome.verdict else {
        return Ok(call_result(outcome).into());
    };
    match output {
        ToolOutput::Task { result } => {
            serde_json::from_value::<CreateTaskResult>(Value::Object(result.clone()))
                .map(CallToolResponse::Task)
                .map_err(|e| McpError::internal_error(format!("unreadable task: {e}"), None))
        }
        ToolOutput::Refused { error } => Err(serde_json::from_value::<McpError>(Value::Object(
            error.clone(),
        ))
        .unwrap_or_else(|e| McpError::internal_error(e.to_string(), None))),
        ToolOutput::InputRequired { result } => Ok(
            match serde_json::from_value::<InputRequiredResult>(Value::Object(result.clone())) {
                Ok(needed) => CallToolResponse::InputRequired(needed),
                Err(_) => call_result(outcome).into(),
            },
        ),
        _ => Ok(call_result(outcome).into()),
    }
}

/// The MCP result of a governed call.
///
/// - An executed upstream call passes the upstream's result through intact (content,
///   `structuredContent`, its own `isError`), with the decision in `_meta`.
/// - Everything else carries the contract `{status, code?, data?, approvalId?, runId?,
///   message}` as text, in `_meta` and as `structuredContent` (a tool's advertised output
///   schema admits it: [`warden_core::schema::output_schema_admitting_decisions`]);
///   `isError` is true exactly when denied. `runId` names the run the call was recorded in,
///   and is absent when nothing was recorded (GOV-2 steps 1 and 2: a kill switch, invalid
///   input), so that it always names a run `warden describe run` finds.
///
/// Protocol metadata of the upstream hop (`io.modelcontextprotocol/…` keys in `_meta`, such as
/// the upstream's server info) is not passed on: the client talks to Warden.
pub fn call_result(outcome: &CallOutcome) -> CallToolResult {
    let meta_value = serde_json::to_value(outcome.contract_meta()).unwrap_or_default();
    if let Verdict::Executed {
        output: ToolOutput::Upstream { result, .. },
        ..
    } = &outcome.verdict
        && let Ok(mut passed) = CallToolResult::deserialize(result)
    {
        let mut meta = passed.meta.take().unwrap_or_default();
        meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
        meta.insert(DECISION_META.into(), meta_value);
        passed.meta = Some(meta);
        mark_complete(&mut passed.result_type);
        return passed;
    }
    let contract = serde_json::to_value(outcome.contract()).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(contract.to_string())]);
    result.structured_content = Some(contract);
    result.is_error = Some(outcome.is_error());
    let mut meta = MetaObject::new();
    meta.insert(DECISION_META.into(), meta_value);
    result.meta = Some(meta);
    result
}

/// Marks a result passed through as complete: a 2025-11-25 upstream sends no `resultType`, a
/// 2026-07-28 client requires one on every result (rmcp takes it off again for a 2025-11-25
/// client).
/// SEP-2322: a retry's `inputResponses` holds, under each key of the input requests it
/// answers, the client's result for that request (an elicitation, sampling or roots result:
/// a JSON object). Anything else is refused before anything is forwarded or recorded, as
/// invalid parameters naming the entry (-32602). Keys the requests did not name are left to
/// the server, which ignores them.
pub(crate) fn check_input_responses(
    responses: &rmcp::model::InputResponses,
) -> Result<(), McpError> {
    match responses.iter().find(|(_, response)| !response.is_object()) {
        None => Ok(()),
        Some((key, response)) => Err(McpError::invalid_params(
            format!(
                "`inputResponses.{key}` must be an object (the client's result for input request `{key}`), not {}",
                json_kind(response)
            ),
            Some(serde_json::json!({"field": format!("inputResponses.{key}")})),
        )),
    }
}

/// What kind of JSON value `value` is, in words.
fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

pub(crate) fn mark_complete(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
}

/// The MCP `Tool` advertised for a catalog entry: its one input schema (GOV-1), and the
/// upstream's title, output schema and annotations passed through.
pub fn tool(descriptor: &ToolDescriptor) -> Tool {
    let schema: Arc<JsonObject> = Arc::new(descriptor.schema.advertised().to_object());
    let mut tool = Tool::new_with_raw(
        descriptor.name.to_string(),
        descriptor.description.clone().map(Into::into),
        schema,
    );
    if let Some(title) = &descriptor.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(output) = &descriptor.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(output.to_object()));
    }
    if let Some(annotations) = annotations(descriptor) {
        tool = tool.with_annotations(annotations);
    }
    tool.icons = icons(descriptor);
    tool.meta = meta(descriptor);
    tool
}

/// The icons advertised: those rmcp can read.
fn icons(descriptor: &ToolDescriptor) -> Option<Vec<Icon>> {
    descriptor
        .icons
        .as_ref()
        .and_then(|i| Vec::<Icon>::deserialize(&**i).ok())
}

/// The upstream's `_meta`, passed through (MCP Apps' `ui`, among others).
fn meta(descriptor: &ToolDescriptor) -> Option<MetaObject> {
    descriptor
        .meta
        .as_ref()
        .and_then(|m| MetaObject::deserialize(&**m).ok())
}

/// The annotations advertised: those rmcp knows (what rmcp's own `Tool` would carry).
fn annotations(descriptor: &ToolDescriptor) -> Option<ToolAnnotations> {
    descriptor
        .annotations
        .as_ref()
        .and_then(|a| ToolAnnotations::deserialize(&**a).ok())
}

/// [`tool`] as JSON, the same bytes as rmcp writes for it, but with the schemas copied as
/// the text they are kept in rather than parsed into maps first (PERF-3).
pub fn tool_json(descriptor: &ToolDescriptor) -> serde_json::Result<String> {
    /// rmcp's `Tool`, field for field and in its order, with raw schemas.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct WireTool<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        input_schema: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        output_schema: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<ToolAnnotations>,
        #[serde(skip_serializing_if = "Option::is_none")]
        icons: Option<Vec<Icon>>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<MetaObject>,
    }
    let output_schema = match &descriptor.output_schema {
        Some(output) => Some(output.raw()?),
        None => None,
    };
    serde_json::to_string(&WireTool {
        name: &descriptor.name,
        title: descriptor.title.as_deref(),
        description: descriptor.description.as_deref(),
        input_schema: descriptor.schema.advertised().raw()?,
        output_schema,
        annotations: annotations(descriptor),
        icons: icons(descriptor),
        meta: meta(descriptor),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use warden_core::schema::{InputSchema, SchemaText};
    use warden_core::tool::UpstreamTool;

    use super::*;

    fn descriptor(full: bool) -> ToolDescriptor {
        let object = |v: Value| match v {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        let schema = object(json!({
            "type": "object",
            "properties": {"key": {"type": "string", "maxLength": 64}, "a": {"enum": [1, "x"]}},
        }));
        let raw = UpstreamTool {
            name: "t".into(),
            title: full.then(|| "T \"quoted\"".to_owned()),
            description: full.then(|| "Does\nthings: ü".to_owned()),
            input_schema: SchemaText::new(&schema),
            output_schema: full
                .then(|| SchemaText::new(&object(json!({"type": "object", "properties": {}})))),
            annotations: full.then(|| {
                Arc::new(json!({"readOnlyHint": true, "openWorldHint": false, "x-own": 1}))
            }),
            icons: full.then(|| {
                Arc::new(json!([{"src": "https://example.com/t.png", "mimeType": "image/png"}]))
            }),
            meta: full.then(|| Arc::new(json!({"ui": {"resourceUri": "ui://t/app"}}))),
        };
        let name = warden_core::Name::from_static("u");
        let mut d = ToolDescriptor::for_upstream(&name, &name, "u__t", &raw, None).unwrap();
        // Tightened as a strict ToolPolicy would: the advertised schema is a new text.
        d.schema = InputSchema::compile(schema, full).unwrap();
        d
    }

    #[test]
    fn tool_json_is_the_bytes_rmcp_writes_for_the_tool() {
        for full in [false, true] {
            let d = descriptor(full);
            let ours = tool_json(&d).unwrap();
            let rmcps = serde_json::to_string(&tool(&d)).unwrap();
            assert_eq!(ours, rmcps);
        }
        let full = tool_json(&descriptor(true)).unwrap();
        assert!(full.contains(r#""additionalProperties":false"#), "{full}");
        assert!(!full.contains("x-own"), "{full}");
        assert!(
            full.contains(r#""_meta":{"ui":{"resourceUri":"ui://t/app"}}"#),
            "{full}"
        );
        assert!(full.contains(r#""icons":[{"#), "{full}");
    }

    /// SEP-2322 (conformance `input-required-result-validate-input`).
    #[test]
    fn input_responses_are_objects_or_refused_naming_the_entry() {
        let of = |v: Value| serde_json::from_value::<rmcp::model::InputResponses>(v).unwrap();
        let fine = of(
            json!({"user_name": {"action": "accept", "content": {"name": "A"}},
                             "unknown_extra_key": {"action": "decline"}}),
        );
        assert!(check_input_responses(&fine).is_ok());
        assert!(check_input_responses(&of(json!({}))).is_ok());
        for bad in [json!(12345), json!(null), json!("x"), json!([1])] {
            let e = check_input_responses(&of(json!({"ok": {}, "user_name": bad}))).unwrap_err();
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(
                e.message.contains("`inputResponses.user_name`"),
                "{}",
                e.message
            );
        }
    }
}
