//! The work domain at work (TASK-1..TASK-8): the built-in tool set `tasks` and the operators'
//! path (`warden task create`, `POST /api/v1/tasks`) over the store.
//!
//! Every creation gathers what admission needs — the caller from the verified credential (a
//! session is an agent run bound to a task), the workspaces with whether the run may create
//! in each, the parent — and asks [`warden_core::admission`]; only an admitted creation looks
//! up its idempotency key, and only then is anything written (TASK-3). The other tools answer
//! for tasks of workspaces the run may use, and like an unknown task for any other (TASK-8).
//! Refusals are logged with trusted ids and the reason, never a title or a description.

use serde_json::{Map, Value, json};
use warden_core::admission::{
    self, Caller, Context, CreateRequest, EnvironmentRepository, Refusal, RefusalCode,
    RepositoryState, TaskView, WorkspaceRepositoryView, WorkspaceView,
};
use warden_core::authority::Authority;
use warden_core::capability::{TASKS_CREATE, TASKS_READ};
use warden_core::config::{Kind, Resource, WorkspaceSpec};
use warden_core::contract::ToolOutput;
use warden_core::error::ExecError;
use warden_core::name::Name;
use warden_core::policy::Policy;
use warden_core::principal::Principal;
use warden_core::time::Millis;
use warden_store::{
    EnvironmentState, RequestedRepository, Store, StoreError, Task, TaskChange, TaskFilter,
    TaskInsert, TaskState,
};

use crate::args::{
    CreateTaskArgs, ListTasksArgs, MoveState, MoveTaskArgs, TaskIdArgs, TaskStateArg,
    UpdateTaskArgs,
};

/// Where a creation comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The `tasks__create_task` tool, over MCP.
    Mcp,
    /// The operators' path: `warden task create`, `POST /api/v1/tasks`.
    Own,
}

/// A created (or, for an idempotent retry, found) task.
#[derive(Clone, Debug)]
pub struct Created {
    /// The task.
    pub task: Task,
    /// `false` when a retry found the task its external id names.
    pub created: bool,
}

/// Why a tasks request failed: refused by the rules, or the store failed.
#[derive(Debug)]
pub enum WorkError {
    /// Refused (admission, an unknown task, a task with children).
    Refused(Refusal),
    /// The store could not be read or written.
    Store(StoreError),
}

impl From<StoreError> for WorkError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<Refusal> for WorkError {
    fn from(r: Refusal) -> Self {
        Self::Refused(r)
    }
}

fn refusal(code: RefusalCode, message: String, reason: String) -> WorkError {
    WorkError::Refused(Refusal {
        code,
        message,
        reason,
    })
}

fn unknown_task(id: &str) -> WorkError {
    refusal(
        RefusalCode::NotFound,
        format!("no task `{id}`"),
        format!("task `{id}` is unknown or not visible"),
    )
}

/// Executes a tool of the `tasks` set for `authority`, at `now`.
pub async fn execute(
    tool: &str,
    args: Option<Map<String, Value>>,
    authority: &Authority,
    policy: &Policy,
    store: &Store,
    now: Millis,
) -> Result<ToolOutput, ExecError> {
    let args = Value::Object(args.unwrap_or_default());
    let invalid = |e: serde_json::Error| ExecError::Unavailable(format!("invalid arguments: {e}"));
    let done = match tool {
        "create_task" => {
            let a: CreateTaskArgs = serde_json::from_value(args).map_err(invalid)?;
            create(store, policy, authority, a, Path::Mcp, now)
                .await
                .map(|c| json!({"task": c.task, "created": c.created}))
        }
        "list_tasks" => {
            let a: ListTasksArgs = serde_json::from_value(args).map_err(invalid)?;
            list(store, policy, authority, &a)
                .await
                .map(|tasks| json!({ "tasks": tasks }))
        }
        "get_task" => {
            let a: TaskIdArgs = serde_json::from_value(args).map_err(invalid)?;
            describe(store, policy, authority, &a.task_id).await
        }
        "update_task" => {
            let a: UpdateTaskArgs = serde_json::from_value(args).map_err(invalid)?;
            let change = TaskChange {
                title: a.title,
                description: a.description,
                workflow_step: a.workflow_step,
                state: None,
            };
            change_task(store, policy, authority, &a.task_id, change, now)
                .await
                .map(|t| json!({ "task": t }))
        }
        "move_task" => {
            let a: MoveTaskArgs = serde_json::from_value(args).map_err(invalid)?;
            let state = match a.state {
                MoveState::Todo => TaskState::Todo,
                MoveState::InProgress => TaskState::InProgress,
                MoveState::Review => TaskState::Review,
                MoveState::Done => TaskState::Done,
            };
            let change = TaskChange {
                state: Some(state),
                ..TaskChange::default()
            };
            change_task(store, policy, authority, &a.task_id, change, now)
                .await
                .map(|t| json!({ "task": t }))
        }
        "archive_task" => {
            let a: TaskIdArgs = serde_json::from_value(args).map_err(invalid)?;
            let change = TaskChange {
                state: Some(TaskState::Archived),
                ..TaskChange::default()
            };
            change_task(store, policy, authority, &a.task_id, change, now)
                .await
                .map(|t| json!({ "task": t }))
        }
        "delete_task" => {
            let a: TaskIdArgs = serde_json::from_value(args).map_err(invalid)?;
            delete(store, policy, authority, &a.task_id)
                .await
                .map(|()| json!({ "deleted": a.task_id }))
        }
        other => {
            return Err(ExecError::Unavailable(format!(
                "no built-in tool `tasks__{other}`"
            )));
        }
    };
    match done {
        Ok(data) => Ok(ToolOutput::Data(data)),
        Err(WorkError::Refused(r)) => {
            tracing::info!(
                tool, principal = %authority.principal, code = r.code.as_str(), reason = %r.reason,
                "tasks request refused"
            );
            Ok(ToolOutput::Failed {
                code: r.code.as_str().to_owned(),
                message: r.message,
            })
        }
        Err(WorkError::Store(e)) => Err(ExecError::Unavailable(format!(
            "the store cannot be used: {e}"
        ))),
    }
}

/// The configured workspaces.
fn configured(policy: &Policy) -> impl Iterator<Item = &WorkspaceSpec> {
    policy
        .config
        .of_kind(Kind::Workspace)
        .filter_map(|r| match r {
            Resource::Workspace(w) => Some(w),
            _ => None,
        })
}

/// Every workspace, with whether `authority` may use `capability` in it: the capability and
/// its project's tools (`run:projects:<project>`, with the token's ceiling, RUN-3).
pub fn workspaces(policy: &Policy, authority: &Authority, capability: &str) -> Vec<WorkspaceView> {
    let may = authority.holds(capability);
    configured(policy)
        .map(|w| WorkspaceView {
            name: w.name.clone(),
            mode: w.mode,
            project: w.project.clone(),
            authorised: may && authority.projects.contains_key(&w.project),
            repositories: w
                .repositories
                .iter()
                .map(|r| WorkspaceRepositoryView {
                    name: r.name.to_string(),
                    branch: r.branch.clone(),
                })
                .collect(),
        })
        .collect()
}

/// Who calls: a session (an agent run bound to a task) or an external caller — any other
/// verified credential, an agent run bound to no task included (TASK-2: not a session), whose
/// capabilities and token ceiling [`workspaces`] applies like anyone's.
pub async fn caller(store: &Store, authority: &Authority) -> Result<Caller, StoreError> {
    let Principal::AgentRun { run, .. } = &authority.principal else {
        return Ok(Caller::External);
    };
    let Some(task) = store.agent_run(run).await?.and_then(|r| r.task_id) else {
        return Ok(Caller::External);
    };
    match store.task(&task).await? {
        Some(task) => Ok(Caller::Session {
            session: run.clone(),
            task: view(store, &task).await?,
        }),
        // A session whose task is gone cannot be classified: as a task in no workspace.
        None => Ok(Caller::Session {
            session: run.clone(),
            task: TaskView {
                id: task,
                workspace: Name::from_static("gone"),
                from_office: false,
                environment: None,
            },
        }),
    }
}

/// A task as admission sees it, with the environment it works in.
pub async fn view(store: &Store, task: &Task) -> Result<TaskView, StoreError> {
    let environment = effective_environment(store, task).await?.map(|env| {
        env.repositories
            .into_iter()
            .map(|r| EnvironmentRepository {
                repository: r.repository,
                branch: r.branch,
                state: match r.state {
                    EnvironmentState::Active => RepositoryState::Active,
                    EnvironmentState::Deleted => RepositoryState::Deleted,
                    EnvironmentState::Failed => RepositoryState::Failed,
                },
            })
            .collect()
    });
    Ok(TaskView {
        id: task.id.clone(),
        workspace: Name::new(&task.workspace).unwrap_or_else(|_| Name::from_static("invalid")),
        from_office: task.from_office,
        environment,
    })
}

/// The environment a task works in: its own, or — inheriting — its nearest ancestor's.
pub async fn effective_environment(
    store: &Store,
    task: &Task,
) -> Result<Option<warden_store::TaskEnvironment>, StoreError> {
    let mut current = task.clone();
    for _ in 0..64 {
        if let Some(env) = store.environment(&current.id).await? {
            return Ok(Some(env));
        }
        let inherits = current.workspace_mode.as_deref() == Some("inherit_parent");
        match (&current.parent_id, inherits) {
            (Some(parent), true) => match store.task(parent).await? {
                Some(p) => current = p,
                None => return Ok(None),
            },
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// Creates a task through admission (TASK-2..TASK-7), stamped `now`: nothing is looked up by
/// its external id, nor written, before the creation is admitted.
pub async fn create(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    args: CreateTaskArgs,
    path: Path,
    now: Millis,
) -> Result<Created, WorkError> {
    let caller = caller(store, authority).await?;
    let workspaces = workspaces(policy, authority, TASKS_CREATE);
    let parent = match &args.parent_id {
        Some(id) => match store.task(id).await? {
            Some(t) => Some(view(store, &t).await?),
            None => None,
        },
        None => None,
    };
    let request = CreateRequest {
        workspace_id: args.workspace_id.clone(),
        parent_id: args.parent_id.clone(),
        workspace_mode: args.workspace_mode,
        repositories: args
            .repositories
            .iter()
            .flatten()
            .map(|r| admission::RequestedRepository {
                repository: r.repository.clone(),
                branch: r.branch.clone(),
            })
            .collect(),
        source_session_id: args.source_session_id.clone(),
    };
    let context = Context {
        caller,
        workspaces: workspaces.clone(),
        parent,
    };
    let admitted = match path {
        Path::Mcp => admission::admit(&request, &context)?,
        Path::Own => admission::admit_on_own_path(&request, &context)?,
    };
    // Rechecked under the rules the creation was admitted by: on its own path an office
    // session retries as itself in its office workspace, not as an MCP session.
    let (admitted, workspaces) = (&admitted, &workspaces);
    let found = |existing: Task| async move {
        let seen = view(store, &existing).await?;
        let external = existing.external_id.clone().unwrap_or_default();
        admission::recheck_existing(admitted, &seen, workspaces, &external)?;
        Ok::<Created, WorkError>(Created {
            task: existing,
            created: false,
        })
    };
    if let Some(external) = &args.external_id
        && let Some(existing) = store
            .task_by_external_id(admitted.workspace.as_str(), external)
            .await?
    {
        return found(existing).await;
    }
    let task = Task {
        id: format!("task_{}", uuid::Uuid::now_v7().simple()),
        workspace: admitted.workspace.to_string(),
        parent_id: admitted.parent.clone(),
        title: args.title,
        description: args.description,
        workflow_step: None,
        state: TaskState::Todo,
        workspace_mode: admitted.workspace_mode.map(|m| m.as_str().to_owned()),
        repositories: admitted
            .repositories
            .iter()
            .map(|r| RequestedRepository {
                repository: r.repository.clone(),
                branch: r.branch.clone(),
            })
            .collect(),
        external_id: args.external_id.clone(),
        created_by: serde_json::to_string(&warden_core::approval::provenance_of(authority))
            .unwrap_or_default(),
        created_in_session: admitted.created_in_session.clone(),
        from_office: admitted.from_office,
        agent_profile: args.agent_profile_id,
        created_at: now.0,
        updated_at: now.0,
    };
    match store.insert_task(&task).await? {
        TaskInsert::Inserted => {
            tracing::info!(task = %task.id, workspace = %task.workspace, principal = %authority.principal, "task created");
            Ok(Created {
                task,
                created: true,
            })
        }
        // A racing creator with the same key won: the retry finds its task.
        TaskInsert::ExternalIdTaken { existing } => match store.task(&existing).await? {
            Some(existing) => found(existing).await,
            None => Err(unknown_task(&existing)),
        },
    }
}

/// A task the run may use with `capability`; any other answers like an unknown one.
async fn visible(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    id: &str,
    capability: &str,
) -> Result<Task, WorkError> {
    let task = store.task(id).await?.ok_or_else(|| unknown_task(id))?;
    let authorised = workspaces(policy, authority, capability)
        .iter()
        .any(|w| w.authorised && w.name.as_str() == task.workspace);
    if authorised {
        Ok(task)
    } else {
        Err(unknown_task(id))
    }
}

/// The tasks of the workspaces the run may read, newest first.
pub async fn list(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    args: &ListTasksArgs,
) -> Result<Vec<Task>, WorkError> {
    let readable: Vec<String> = workspaces(policy, authority, TASKS_READ)
        .into_iter()
        .filter(|w| w.authorised)
        .map(|w| w.name.to_string())
        .collect();
    if let Some(w) = &args.workspace_id
        && !readable.contains(w)
    {
        return Err(refusal(
            RefusalCode::NotFound,
            format!("no workspace `{w}`"),
            format!("workspace `{w}` is unknown or not readable"),
        ));
    }
    let states = args.state.map(|s| {
        vec![match s {
            TaskStateArg::Todo => TaskState::Todo,
            TaskStateArg::InProgress => TaskState::InProgress,
            TaskStateArg::Review => TaskState::Review,
            TaskStateArg::Done => TaskState::Done,
            TaskStateArg::Archived => TaskState::Archived,
        }]
    });
    let tasks = store
        .tasks(&TaskFilter {
            workspace: args.workspace_id.clone(),
            parent: args.parent_id.clone(),
            states,
            limit: Some(1000),
        })
        .await?;
    Ok(tasks
        .into_iter()
        .filter(|t| readable.contains(&t.workspace))
        .collect())
}

/// One task with its environment and sessions.
pub async fn describe(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    id: &str,
) -> Result<Value, WorkError> {
    let task = visible(store, policy, authority, id, TASKS_READ).await?;
    let environment = effective_environment(store, &task).await?;
    let sessions = store.runs_of_task(id).await?;
    Ok(json!({"task": task, "environment": environment, "sessions": sessions}))
}

async fn change_task(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    id: &str,
    change: TaskChange,
    now: Millis,
) -> Result<Task, WorkError> {
    visible(store, policy, authority, id, "tasks:write").await?;
    store
        .update_task(id, &change, now)
        .await?
        .ok_or_else(|| unknown_task(id))
}

async fn delete(
    store: &Store,
    policy: &Policy,
    authority: &Authority,
    id: &str,
) -> Result<(), WorkError> {
    visible(store, policy, authority, id, "tasks:write").await?;
    match store.delete_task(id).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(unknown_task(id)),
        Err(StoreError::Conflict(why)) => Err(refusal(
            RefusalCode::HasChildren,
            format!("task `{id}` cannot be deleted: {why}"),
            format!("delete of `{id}` refused: {why}"),
        )),
        Err(e) => Err(e.into()),
    }
}
