//! The built-in tool set `tasks` (TASK-1..TASK-8): workspaces' tasks over MCP, served by the
//! work domain's service (`warden_work::tasks`). The schemas are derived from its argument
//! types (`warden_work::args`).

#[cfg(test)]
use serde_json::json;
use serde_json::{Map, Value};
use warden_core::capability::{TASKS_CREATE, TASKS_READ};
#[cfg(test)]
use warden_work::args::WORKSPACE_MODE_DESCRIPTION;
use warden_work::args::{CreateTaskArgs, ListTasksArgs, MoveTaskArgs, TaskIdArgs, UpdateTaskArgs};

use super::args_schema::schema;

/// The name of the tool set.
pub const SET: &str = "tasks";

/// One tool of the set: name, description, argument schema, whether it writes, the capability
/// it needs and whether it is dangerous.
#[derive(Debug)]
pub struct ToolDef {
    /// The tool's name in the set.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its input schema.
    pub schema: Map<String, Value>,
    /// It writes.
    pub mutation: bool,
    /// The capability it needs (in the destination's project, too).
    pub capability: &'static str,
    /// It parks at L2 (APR-1).
    pub dangerous: bool,
}

/// The tools of the set.
pub fn tools() -> Vec<ToolDef> {
    let def = |name, description, schema, mutation, capability, dangerous| ToolDef {
        name,
        description,
        schema,
        mutation,
        capability,
        dangerous,
    };
    vec![
        def(
            "create_task",
            "Create a task in a workspace: a root, or a child of `parent_id` in the parent's workspace. Sessions create in kanban workspaces only; an office session uses `warden task create`.",
            schema::<CreateTaskArgs>(),
            true,
            TASKS_CREATE,
            false,
        ),
        def(
            "list_tasks",
            "List the tasks of the workspaces this run may see, newest first.",
            schema::<ListTasksArgs>(),
            false,
            TASKS_READ,
            false,
        ),
        def(
            "get_task",
            "One task, with its environment and sessions.",
            schema::<TaskIdArgs>(),
            false,
            TASKS_READ,
            false,
        ),
        def(
            "update_task",
            "Change a task's title, description or workflow step.",
            schema::<UpdateTaskArgs>(),
            true,
            "tasks:write",
            false,
        ),
        def(
            "move_task",
            "Move a task to another state: todo, in_progress, review, done.",
            schema::<MoveTaskArgs>(),
            true,
            "tasks:write",
            false,
        ),
        def(
            "archive_task",
            "Archive a task.",
            schema::<TaskIdArgs>(),
            true,
            "tasks:write",
            false,
        ),
        def(
            "delete_task",
            "Delete a task that has no children.",
            schema::<TaskIdArgs>(),
            true,
            "tasks:write",
            true,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_mode_is_an_optional_enum_in_order_without_a_default() {
        let schema = Value::Object(schema::<CreateTaskArgs>());
        assert_eq!(
            schema["properties"]["workspace_mode"],
            json!({
                "type": "string",
                "enum": ["inherit_parent", "new_workspace"],
                "description": WORKSPACE_MODE_DESCRIPTION,
            })
        );
        assert_eq!(schema["required"], json!(["title"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(
            schema["properties"]["parent_id"],
            json!({"type": "string", "description": "The parent task (in the same workspace)."})
        );
    }
}
