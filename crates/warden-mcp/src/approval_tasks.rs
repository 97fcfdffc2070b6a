//! APR-7: a parked call as an MCP task (the tasks extension, `io.modelcontextprotocol/tasks`,
//! SEP-2663), for a client that declares the extension on its call.
//!
//! The approval is the task: its id is the task id, its state is the approval's, kept in the
//! store — so any replica answers `tasks/get`. Waiting for a decision, approved and not yet
//! run, staged or running is `working`; executed is `completed` with the tool's result as it
//! was recorded; rejected, vetoed, expired or refused at execution is `failed`, with the
//! denial. Free of I/O: the handler fetches the approval.

use rmcp::model::{
    CreateTaskResult, DetailedTask, JsonObject, ResultType, Task, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};
use warden_core::approval::ApprovalStatus;
use warden_core::time::{Millis, rfc3339};
use warden_store::Approval;

/// How often a client should ask again, in milliseconds.
const POLL_INTERVAL_MS: u64 = 2_000;

/// The JSON-RPC error code of a task whose call was refused (a server error of Warden's own).
pub const DENIED: i32 = -32_000;

/// The task a parked call answers with.
pub fn created(approval_id: &str, now: Millis) -> CreateTaskResult {
    let at = rfc3339(now);
    CreateTaskResult::new(task(approval_id, &at, &at, None))
}

fn task(id: &str, created: &str, updated: &str, message: Option<String>) -> Task {
    let mut task = Task::new(id, TaskStatus::Working, created, updated);
    task.status_message = message;
    task.poll_interval_ms = Some(POLL_INTERVAL_MS);
    task
}

/// The task of a parked call as it stands.
pub fn detailed(approval: &Approval) -> DetailedTask {
    let created = rfc3339(Millis(approval.created_at));
    let updated = rfc3339(Millis(
        approval
            .finished_at
            .or(approval.claimed_at)
            .or(approval.decided_at)
            .unwrap_or(approval.created_at),
    ));
    let (message, payload) = match approval.status {
        ApprovalStatus::Pending => ("waiting for an approval", TaskPayload::Working),
        ApprovalStatus::Approved | ApprovalStatus::Executing => {
            ("approved; running", TaskPayload::Working)
        }
        ApprovalStatus::Staged => (
            "staged: runs when its veto window ends, unless vetoed",
            TaskPayload::Working,
        ),
        ApprovalStatus::Executed => (
            "executed",
            TaskPayload::Completed {
                result: result(approval),
            },
        ),
        ApprovalStatus::Rejected
        | ApprovalStatus::Expired
        | ApprovalStatus::Vetoed
        | ApprovalStatus::Failed => (
            "not executed",
            TaskPayload::Failed {
                error: denial(approval),
            },
        ),
    };
    let message = approval
        .outcome_message
        .clone()
        .unwrap_or_else(|| message.to_owned());
    DetailedTask::new(
        task(&approval.id, &created, &updated, Some(message)),
        payload,
    )
}

/// The recorded result as a `CallToolResult`: an upstream's as it was; a built-in tool's data
/// as text and `structuredContent`.
fn result(approval: &Approval) -> JsonObject {
    let recorded = approval
        .result
        .as_deref()
        .and_then(|r| serde_json::from_str::<Value>(r).ok());
    let mut result = match recorded {
        Some(Value::Object(r)) if r.contains_key("content") => r,
        Some(data) => object(json!({
            "content": [{"type": "text", "text": data.to_string()}],
            "structuredContent": data,
            "isError": false,
        })),
        None => object(json!({
            "content": [{"type": "text", "text": approval.outcome_message.clone().unwrap_or_default()}],
            "isError": false,
        })),
    };
    result
        .entry("resultType")
        .or_insert_with(|| json!(ResultType::COMPLETE));
    result
}

/// The JSON-RPC error of a call that was not executed: the decision contract in `data`.
fn denial(approval: &Approval) -> JsonObject {
    let message = approval
        .outcome_message
        .clone()
        .or_else(|| approval.reason.clone())
        .unwrap_or_else(|| format!("`{}` was not executed", approval.tool));
    object(json!({
        "code": DENIED,
        "message": message,
        "data": {
            "status": "denied",
            "code": approval.outcome_code,
            "approvalId": approval.id,
            "runId": approval.run_id,
            "message": message,
        },
    }))
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}
