//! Tasks (TASK-1..TASK-8) for the operators' doors: `POST /api/v1/tasks`, the console's
//! agents page and `warden task`. The rules are the work domain's (`warden_work::tasks`), the
//! same the `tasks` tool set applies over MCP; here they run on the services' store.

use warden_core::authority::Authority;
use warden_core::policy::Policy;
use warden_store::Task;
use warden_work::args::{CreateTaskArgs, ListTasksArgs};
use warden_work::tasks::{self, Created, Path, WorkError};

use crate::Control;

/// Creates a task by the operators' path, admitted as a `tasks__create_task` call would be.
pub async fn create(
    control: &Control,
    policy: &Policy,
    authority: &Authority,
    args: CreateTaskArgs,
) -> Result<Created, WorkError> {
    tasks::create(
        control.store(),
        policy,
        authority,
        args,
        Path::Own,
        control.now(),
    )
    .await
}

/// The tasks of the workspaces `authority` may read, filtered by `args`.
pub async fn list(
    control: &Control,
    policy: &Policy,
    authority: &Authority,
    args: &ListTasksArgs,
) -> Result<Vec<Task>, WorkError> {
    tasks::list(control.store(), policy, authority, args).await
}

/// One task `authority` may read, with its environment and sessions.
pub async fn describe(
    control: &Control,
    policy: &Policy,
    authority: &Authority,
    id: &str,
) -> Result<serde_json::Value, WorkError> {
    tasks::describe(control.store(), policy, authority, id).await
}
