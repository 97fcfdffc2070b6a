//! The arguments of the `tasks` tool set's tools (TASK-1..TASK-8), which the operators' path
//! (`warden task create`, `POST /api/v1/tasks`) takes too. The tools' schemas are derived
//! from these types (GOV-1): only what the handlers read, unknown fields refused, closed sets
//! as enums, no invented defaults. `workspace_mode` is exactly the seed's: optional, `enum` in
//! the order `inherit_parent`, `new_workspace`, no default, so an empty, blank or padded value
//! is refused by the schema itself — never trimmed.

use schemars::JsonSchema;
use serde::Deserialize;
use warden_core::admission::MaterialisationMode;

/// The description of `workspace_mode`, as the seed words it.
pub const WORKSPACE_MODE_DESCRIPTION: &str = "Optional materialized-workspace mode. Omit for subtasks to inherit the parent's workspace/worktree. inherit_parent requires parent_id and reuses the parent's materialized workspace/worktree; new_workspace requests a separate workspace/worktree.";

fn workspace_mode_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["inherit_parent", "new_workspace"],
        "description": WORKSPACE_MODE_DESCRIPTION,
    })
}

/// A repository a task asks for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepositoryArg {
    /// The workspace's name for the repository.
    pub repository: String,
    /// The branch; the workspace's branch for the repository when omitted.
    pub branch: Option<String>,
}

/// Arguments of `tasks__create_task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTaskArgs {
    /// The task's title.
    #[schemars(length(min = 1))]
    pub title: String,
    /// What is to be done.
    pub description: Option<String>,
    /// The destination workspace; by default the parent's, else the session's own, else the
    /// one workspace the caller may create tasks in.
    pub workspace_id: Option<String>,
    /// The parent task (in the same workspace).
    pub parent_id: Option<String>,
    /// The repositories the task works in; by default all of its workspace's.
    pub repositories: Option<Vec<RepositoryArg>>,
    #[serde(default)]
    #[schemars(schema_with = "workspace_mode_schema")]
    pub workspace_mode: Option<MaterialisationMode>,
    /// An idempotency key, unique per workspace: a retry with it returns the original task.
    pub external_id: Option<String>,
    /// The launch profile its sessions start with (never an assignee).
    pub agent_profile_id: Option<String>,
    /// The session the task is created from: only a session may name one, and only itself.
    pub source_session_id: Option<String>,
}

/// Arguments of `tasks__list_tasks`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksArgs {
    /// Only this workspace's tasks.
    pub workspace_id: Option<String>,
    /// Only this task's children.
    pub parent_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<TaskStateArg>,
}

/// Arguments naming one task.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskIdArgs {
    /// The task.
    pub task_id: String,
}

/// Arguments of `tasks__update_task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTaskArgs {
    /// The task.
    pub task_id: String,
    /// A new title.
    #[schemars(length(min = 1))]
    pub title: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// The workflow step it is at.
    pub workflow_step: Option<String>,
}

/// Arguments of `tasks__move_task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveTaskArgs {
    /// The task.
    pub task_id: String,
    /// Where it moves (archiving is `tasks__archive_task`).
    pub state: MoveState,
}

/// A task's state, for filtering.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStateArg {
    /// Not started.
    Todo,
    /// Being worked on.
    InProgress,
    /// Waiting for review.
    Review,
    /// Finished.
    Done,
    /// Archived.
    Archived,
}

/// The states a task moves between (archiving has its own tool).
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MoveState {
    /// Not started.
    Todo,
    /// Being worked on.
    InProgress,
    /// Waiting for review.
    Review,
    /// Finished.
    Done,
}
