//! The fixture's tasks-extension tools (SEP-2663, suite 0.2.0-alpha.12 `tasks-*`), run on
//! rmcp's `TaskManager`: `greet` (never a task), `slow_compute` (a task when the client
//! declares the extension), `failing_job`, `protocol_error_job`, `confirm_delete` and
//! `multi_input` (tasks only; the last two ask for input while they run), and
//! `test_tool_with_task` (an `input_required` round, then a task).

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    CreateTaskResult, InputRequest, InputRequests, InputRequiredResult, Tool,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskFuture, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use super::catalog::{from_json, no_args, schema, text};

pub(super) fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "greet",
            "Tasks fixture: sync-only, says hello",
            schema(json!({
            "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})),
        ),
        Tool::new(
            "slow_compute",
            "Tasks fixture: task-optional, sleeps `seconds`",
            schema(json!({
            "type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}})),
        ),
        Tool::new(
            "failing_job",
            "Tasks fixture: task-required, ends in a tool error",
            no_args(),
        ),
        Tool::new(
            "protocol_error_job",
            "Tasks fixture: task-required, ends in a protocol error",
            no_args(),
        ),
        Tool::new(
            "confirm_delete",
            "Tasks fixture: task-required, elicits a confirmation",
            schema(json!({
            "type": "object", "properties": {"filename": {"type": "string"}}})),
        ),
        Tool::new(
            "multi_input",
            "Tasks fixture: task-required, two elicitations at once",
            no_args(),
        ),
        Tool::new(
            "test_tool_with_task",
            "Tasks fixture: MRTR round, then a task",
            no_args(),
        ),
    ]
}

fn tasks_required() -> McpError {
    let caps: ClientCapabilities =
        serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
            .unwrap_or_default();
    McpError::missing_required_client_capability(caps)
}

fn elicit(message: &str, field: &str, ty: &str) -> Result<InputRequest, McpError> {
    from_json(
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": ty}}, "required": [field]}}}),
    )
}

fn spawn(
    tm: &TaskManager,
    f: impl FnOnce(rmcp::task_manager::TaskContext) -> TaskFuture,
) -> CallToolResponse {
    let task = tm.spawn(TaskOptions::new(), f);
    CallToolResponse::Task(CreateTaskResult::new(task))
}

pub(super) async fn call_tool(
    tm: &TaskManager,
    req: &CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Result<Option<CallToolResponse>, McpError> {
    let declared = ctx
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks());
    let args = req.arguments.clone().unwrap_or_default();
    let s = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    Ok(Some(match req.name.as_ref() {
        "greet" => text(format!("Hello, {}!", s("name"))).into(),
        "slow_compute" => {
            let secs = args
                .get("seconds")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                .max(0.0);
            let label = s("label");
            if !declared {
                tokio::time::sleep(Duration::from_secs_f64(secs.min(5.0))).await;
                return Ok(Some(text(format!("computed {label} in {secs}s")).into()));
            }
            spawn(tm, move |tc| {
                Box::pin(async move {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs_f64(secs)) => Ok(text(format!("computed {label} in {secs}s"))),
                        _ = tc.cancelled() => Err(TaskExit::Cancelled),
                    }
                })
            })
        }
        "failing_job" | "protocol_error_job" | "confirm_delete" | "multi_input" if !declared => {
            return Err(tasks_required());
        }
        "failing_job" => spawn(tm, |_| {
            Box::pin(async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    "the job failed (tool error)",
                )]))
            })
        }),
        "protocol_error_job" => spawn(tm, |_| {
            Box::pin(async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                Err(TaskExit::Error(McpError::internal_error(
                    "the job crashed",
                    None,
                )))
            })
        }),
        "confirm_delete" => {
            let file = s("filename");
            let q = elicit(&format!("Delete {file}?"), "confirm", "boolean")?;
            spawn(tm, move |tc| {
                Box::pin(async move {
                    let answer = tc.request_input("confirm", q).await?;
                    Ok(text(format!("{file}: {answer}")))
                })
            })
        }
        "multi_input" => {
            let (a, b) = (
                elicit("Name?", "name", "string")?,
                elicit("Sure?", "confirm", "boolean")?,
            );
            spawn(tm, move |tc| {
                Box::pin(async move {
                    let (x, y) =
                        tokio::join!(tc.request_input("first", a), tc.request_input("second", b));
                    Ok(text(format!("{} / {}", x?, y?)))
                })
            })
        }
        "test_tool_with_task" => {
            let mut responses: serde_json::Map<String, Value> = req
                .input_responses
                .clone()
                .map(|r| r.into_iter().collect())
                .unwrap_or_default();
            // In 2025-11-25 the round of questions is a request on the call's stream.
            if !super::input_required::is_2026(ctx) && !responses.contains_key("user_name") {
                let mut m = InputRequests::new();
                m.insert(
                    "user_name".into(),
                    elicit("What is your name?", "name", "string")?,
                );
                let mut caps = ctx.client_capabilities().unwrap_or_default();
                let asked = InputRequiredResult::from_input_requests(m);
                responses = super::input_required::ask_on_the_stream(ctx, &asked, &mut caps).await;
            }
            let name = responses
                .get("user_name")
                .filter(|r| r.get("action").and_then(Value::as_str) == Some("accept"))
                .and_then(|r| r.get("content")?.get("name")?.as_str().map(str::to_owned));
            let Some(name) = name else {
                let mut m = InputRequests::new();
                m.insert(
                    "user_name".into(),
                    elicit("What is your name?", "name", "string")?,
                );
                return Ok(Some(InputRequiredResult::from_input_requests(m).into()));
            };
            if !declared {
                return Err(tasks_required());
            }
            spawn(tm, move |_| {
                Box::pin(async move { Ok(text(format!("Hello, {name}! (from a task)"))) })
            })
        }
        _ => return Ok(None),
    }))
}
