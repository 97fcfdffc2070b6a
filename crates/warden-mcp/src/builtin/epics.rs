//! The built-in tool set `work` (WORK-1): epics and their tasks over MCP, served by the work
//! domain's epics service (`warden_work::epics`). The schemas are derived from its argument
//! types (`warden_work::epics::args`).

use warden_core::capability::{WORK_ACCEPT, WORK_READ, WORK_REVIEW, WORK_WRITE};
use warden_work::epics::args::{
    AcceptArgs, AddTaskArgs, CreateEpicArgs, EpicIdArgs, ListEpicsArgs, MoveEpicTaskArgs,
    ReviewArgs, UpdateEpicArgs,
};

use super::args_schema::schema;
use super::tasks::ToolDef;

/// The name of the tool set.
pub const SET: &str = "work";

/// The tools of the set.
pub fn tools() -> Vec<ToolDef> {
    let def = |name, description, schema, mutation, capability| ToolDef {
        name,
        description,
        schema,
        mutation,
        capability,
        dangerous: false,
    };
    vec![
        def(
            "create_epic",
            "Create an epic in a project, in `draft`: its title, description, acceptance criteria, trade-offs and risk (which sets how many reviews its tasks need).",
            schema::<CreateEpicArgs>(),
            true,
            WORK_WRITE,
        ),
        def(
            "update_epic",
            "Change an epic's title, description, criteria, trade-offs or risk, or move it (`status`): draft → open → done, or archived.",
            schema::<UpdateEpicArgs>(),
            true,
            WORK_WRITE,
        ),
        def(
            "add_task",
            "Add a task to an epic: a task in a workspace of the epic's project, working on `branch` of `repository`, to be merged into `baseBranch`. It starts `proposed`.",
            schema::<AddTaskArgs>(),
            true,
            WORK_WRITE,
        ),
        def(
            "move_task",
            "Move an epic task: proposed → ready → in_progress → review, review → in_progress (changes asked), reopened → in_progress.",
            schema::<MoveEpicTaskArgs>(),
            true,
            WORK_WRITE,
        ),
        def(
            "review",
            "Review an epic task in `review`: `approve`, or `changes` (which moves it back to `in_progress`). Its authors cannot review it; a push to its work branch after the review leaves the review behind.",
            schema::<ReviewArgs>(),
            true,
            WORK_REVIEW,
        ),
        def(
            "accept",
            "Accept an epic task in `review` once its review gate is open: enough approving reviews of its work branch's current commit by others than its authors (1 at low and medium risk, 2 at high, 2 at critical with one by a holder of `work:accept-critical`).",
            schema::<AcceptArgs>(),
            true,
            WORK_ACCEPT,
        ),
        def(
            "get_epic",
            "One epic, with its tasks (state, branches, merge commit) and its moves.",
            schema::<EpicIdArgs>(),
            false,
            WORK_READ,
        ),
        def(
            "list_epics",
            "List the epics this run may see, the last changed first.",
            schema::<ListEpicsArgs>(),
            false,
            WORK_READ,
        ),
    ]
}
