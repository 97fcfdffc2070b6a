//! Upstream tasks (the tasks extension, SEP-2663): a call an upstream runs as a task is
//! followed by its caller through Warden — `tasks/get`, `tasks/update`, `tasks/cancel` reach
//! the upstream that holds it, for the caller that created it (its id is Warden's,
//! [`crate::upstream_task_ids`]), while the caller may still use that upstream's tools (RUN-8).

use rmcp::model::{
    CancelTaskParams, CancelTaskRequest, ClientCapabilities, ClientRequest, GetTaskParams,
    GetTaskRequest, GetTaskResult, InputResponses, ServerResult, TaskPayload, UpdateTaskParams,
    UpdateTaskRequest,
};
use serde_json::json;
use warden_core::authority::Authority;
use warden_core::tool::ToolSource;

use super::state::Gateway;
use crate::era::Era;
use crate::upstream_task_ids::TaskIds;

/// What is asked of an upstream task.
#[derive(Debug)]
pub enum TaskOp {
    /// `tasks/get`.
    Get,
    /// `tasks/update` with the client's answers.
    Update(InputResponses),
    /// `tasks/cancel`.
    Cancel,
}

/// The answer to a [`TaskOp`].
#[derive(Debug)]
pub enum TaskAnswer {
    /// The task as it stands, under the caller's id.
    Task(Box<GetTaskResult>),
    /// `tasks/update` and `tasks/cancel` took.
    Done,
}

/// The upstream tasks of one gateway.
#[derive(Debug)]
pub(super) struct UpstreamTasks<'a> {
    pub(super) gateway: &'a Gateway,
}

impl UpstreamTasks<'_> {
    /// The id `caller` gets for task `task` that the upstream of catalog tool `tool` made.
    pub(super) fn issue(&self, caller: &str, tool: &str, task: &str) -> Option<String> {
        let snapshot = self.gateway.peek();
        match &snapshot.catalog.get(tool)?.source {
            ToolSource::Upstream { upstream, .. } => {
                self.gateway.task_ids.issue(caller, upstream.as_str(), task)
            }
            ToolSource::Builtin { .. } => None,
        }
    }

    /// `op` on the upstream task `id`, for `caller` with `authority` and the client's
    /// `capabilities`. Someone else's task, one of an upstream the run may no longer use, and
    /// one that does not exist are all unknown (-32602).
    pub(super) async fn run(
        &self,
        authority: &Authority,
        caller: &str,
        id: &str,
        era: Era,
        capabilities: Option<&ClientCapabilities>,
        op: TaskOp,
    ) -> Result<TaskAnswer, rmcp::ErrorData> {
        let unknown = || rmcp::ErrorData::invalid_params(format!("unknown task `{id}`"), None);
        let (upstream, task) = self.gateway.task_ids.open(caller, id).ok_or_else(unknown)?;
        let slot = self
            .gateway
            .upstreams
            .get(&upstream)
            .filter(|s| {
                authority.withheld.is_none() && authority.projects.contains_key(&s.spec.project)
            })
            .ok_or_else(unknown)?;
        let request = match &op {
            TaskOp::Get => {
                ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(task.clone())))
            }
            TaskOp::Update(responses) => ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(
                UpdateTaskParams::new(task.clone(), responses.clone()),
            )),
            TaskOp::Cancel => ClientRequest::CancelTaskRequest(CancelTaskRequest::new(
                CancelTaskParams::new(task.clone()),
            )),
        };
        let answer = slot.task_request(request, era, capabilities).await?;
        let TaskOp::Get = op else {
            return Ok(TaskAnswer::Done);
        };
        let ServerResult::GetTaskResult(mut got) = answer else {
            return Err(rmcp::ErrorData::internal_error(
                format!("upstream `{upstream}` answered tasks/get with something else"),
                None,
            ));
        };
        got.task.task.task_id = id.to_owned();
        // What the task asks the client goes only as far as the upstream's relay policy lets
        // it: a refused question ends the task (the upstream is told to cancel it).
        if let TaskPayload::InputRequired { input_requests } = &got.task.payload
            && let Some(refused) = input_requests.values().find(|r| !slot.relays(r))
        {
            let what = serde_json::to_value(refused)
                .ok()
                .and_then(|r| r.get("method").and_then(|m| m.as_str().map(str::to_owned)))
                .unwrap_or_default();
            let cancel = ClientRequest::CancelTaskRequest(CancelTaskRequest::new(
                CancelTaskParams::new(task),
            ));
            let _ = slot.task_request(cancel, era, capabilities).await;
            let message = format!(
                "upstream `{upstream}` asked for {what}, which is not relayed for this upstream (relay policy)"
            );
            got.task.payload = TaskPayload::Failed {
                error: serde_json::from_value(json!({"code": -32600, "message": message}))
                    .unwrap_or_default(),
            };
            got.task.task.status = got.task.payload.status();
        }
        Ok(TaskAnswer::Task(Box::new(got)))
    }
}

/// The task-id key of an installation: the store's shared `task-ids` secret, so that every
/// replica opens the ids any of them issued; a process-local one when the store cannot give
/// it (ids then open on this process only).
pub(super) async fn task_ids(store: &warden_store::Store) -> TaskIds {
    match store.shared_secret("task-ids").await.map(hex::decode) {
        Ok(Ok(key)) => TaskIds::new(&key),
        other => {
            tracing::warn!(error = %other.err().map(|e| e.to_string()).unwrap_or_default(), "no shared task-id key; upstream task ids open on this process only");
            let mut key = [0u8; 32];
            if let Err(e) = getrandom::fill(&mut key) {
                tracing::error!(error = %e, "no randomness for a task-id key");
            }
            TaskIds::new(&key)
        }
    }
}
