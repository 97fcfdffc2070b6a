//! The `work` tool set's calls (WORK-1): each tool's validated arguments handed to the epics
//! service, its answer or refusal as the tool's output.

use serde_json::{Map, Value, json};
use warden_core::authority::Authority;
use warden_core::contract::ToolOutput;
use warden_core::error::ExecError;
use warden_core::time::Millis;
use warden_store::Store;

use super::args::{
    AcceptArgs, AddTaskArgs, CreateEpicArgs, EpicIdArgs, ListEpicsArgs, MoveEpicTaskArgs,
    ReviewArgs, UpdateEpicArgs,
};
use super::gate::{Forge, accept, review};
use super::{EpicError, add_task, create_epic, get_epic, list_epics, move_task, update_epic};
use crate::tasks::Path;

/// Executes the tool `tool` of the `work` set for `authority`, at `now`.
pub async fn execute(
    tool: &str,
    args: Option<Map<String, Value>>,
    authority: &Authority,
    forge: Forge<'_>,
    store: &Store,
    now: Millis,
) -> Result<ToolOutput, ExecError> {
    let policy = forge.policy;
    let args = Value::Object(args.unwrap_or_default());
    let invalid = |e: serde_json::Error| ExecError::Unavailable(format!("invalid arguments: {e}"));
    let done = match tool {
        "create_epic" => {
            let a: CreateEpicArgs = serde_json::from_value(args).map_err(invalid)?;
            create_epic(store, authority, a, now)
                .await
                .map(|e| json!({"id": e.id, "epic": e}))
        }
        "update_epic" => {
            let a: UpdateEpicArgs = serde_json::from_value(args).map_err(invalid)?;
            update_epic(store, authority, a, now)
                .await
                .map(|e| json!({ "epic": e }))
        }
        "add_task" => {
            let a: AddTaskArgs = serde_json::from_value(args).map_err(invalid)?;
            add_task(store, policy, authority, a, Path::Mcp, now)
                .await
                .map(|t| json!({"id": t.id, "task": t.task_id, "epicTask": t}))
        }
        "move_task" => {
            let a: MoveEpicTaskArgs = serde_json::from_value(args).map_err(invalid)?;
            move_task(store, policy, authority, a, now)
                .await
                .map(|t| json!({ "epicTask": t }))
        }
        "review" => {
            let a: ReviewArgs = serde_json::from_value(args).map_err(invalid)?;
            review(store, forge, authority, a, now)
                .await
                .map(|r| json!({ "review": r }))
        }
        "accept" => {
            let a: AcceptArgs = serde_json::from_value(args).map_err(invalid)?;
            accept(store, forge, authority, a, now)
                .await
                .map(|acceptance| json!(acceptance))
        }
        "get_epic" => {
            let a: EpicIdArgs = serde_json::from_value(args).map_err(invalid)?;
            get_epic(store, authority, &a.id).await.map(|v| json!(v))
        }
        "list_epics" => {
            let a: ListEpicsArgs = serde_json::from_value(args).map_err(invalid)?;
            list_epics(store, authority, &a)
                .await
                .map(|epics| json!({ "epics": epics }))
        }
        other => {
            return Err(ExecError::Unavailable(format!(
                "no built-in tool `work__{other}`"
            )));
        }
    };
    match done {
        Ok(data) => Ok(ToolOutput::Data(data)),
        Err(EpicError::Store(e)) => Err(ExecError::Unavailable(format!(
            "the store cannot be used: {e}"
        ))),
        Err(refused) => {
            let (code, message) = refused.refusal().unwrap_or(("UNAVAILABLE", ""));
            tracing::info!(tool, principal = %authority.principal, code, "work request refused");
            Ok(ToolOutput::Failed {
                code: code.to_owned(),
                message: message.to_owned(),
            })
        }
    }
}
