//! Tasks and workspaces in the admin API: the operators' path of task creation (TASK-2) —
//! where an office session creates its tasks, with its run credential — and reading them.
//! The same rules as the `tasks` tool set ([`warden_work::tasks`]): admission first, the same
//! argument schema, unknown and inaccessible alike.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use warden_control::tasks;
use warden_core::admission::RefusalCode;
use warden_mcp::Authenticated;
use warden_store::{AgentRun, EnvironmentRepository, RequestedRepository, Task, TaskEnvironment};
use warden_work::args::{CreateTaskArgs, ListTasksArgs, TaskStateArg};
use warden_work::tasks::{self as work, WorkError};

use super::access::{TASKS_CREATE, TASKS_READ, require};
use super::error::{ApiError, ErrorBody};
use super::runs::Lifecycle;
use crate::state::AppState;

/// The authority a credential acts with here: a run credential as its agent's run (a session),
/// anything else as itself.
pub(crate) fn authority(
    state: &AppState,
    credential: &warden_core::principal::Credential,
) -> Result<Arc<warden_core::authority::Authority>, ApiError> {
    let agent = match &credential.principal {
        warden_core::principal::Principal::AgentRun { agent, .. } => Some(agent.to_string()),
        _ => None,
    };
    state
        .gateway
        .authority(credential, agent.as_deref())
        .map_err(|e| ApiError::forbidden(e.to_string()))
}

/// A refusal's HTTP status.
fn status_of(code: RefusalCode) -> StatusCode {
    match code {
        RefusalCode::NotFound => StatusCode::NOT_FOUND,
        RefusalCode::Unverified => StatusCode::UNAUTHORIZED,
        RefusalCode::OfficeSession | RefusalCode::KanbanOnly | RefusalCode::ConflictingIdentity => {
            StatusCode::FORBIDDEN
        }
        RefusalCode::Inconsistent | RefusalCode::HasChildren => StatusCode::CONFLICT,
        RefusalCode::AmbiguousDestination
        | RefusalCode::CrossWorkspaceParent
        | RefusalCode::InheritWithoutParent
        | RefusalCode::InheritedRepositoryMismatch => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

impl From<WorkError> for ApiError {
    fn from(e: WorkError) -> Self {
        match e {
            WorkError::Refused(r) => {
                tracing::info!(code = r.code.as_str(), reason = %r.reason, "tasks request refused");
                ApiError::coded(status_of(r.code), r.code.as_str(), r.message)
            }
            WorkError::Store(e) => e.into(),
        }
    }
}

/// A repository a task asks for.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Requested {
    /// The repository's name.
    repository: String,
    /// The branch asked for, if one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<String>,
}

/// A task.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskDoc {
    /// `task_…`.
    id: String,
    /// Its workspace.
    workspace: String,
    /// The task it is a subtask of.
    parent_id: Option<String>,
    /// A one-line title.
    title: String,
    /// What is to be done.
    description: Option<String>,
    /// The workflow step it is at.
    workflow_step: Option<String>,
    /// `todo`, `in_progress`, `review`, `done` or `archived`.
    state: &'static str,
    /// `inherit_parent` or `new_workspace`; none for the workspace's default.
    workspace_mode: Option<String>,
    /// The repositories it asks for, in order.
    repositories: Vec<Requested>,
    /// The creator's idempotency key.
    external_id: Option<String>,
    /// Who created it, by reference (APR-3).
    #[schema(value_type = Object)]
    created_by: Value,
    /// The session it was created from.
    created_in_session: Option<String>,
    /// Whether it was created from an office context (TASK-1).
    from_office: bool,
    /// The agent profile that is to work on it.
    agent_profile: Option<String>,
    /// When it was created (ms).
    created_at: i64,
    /// When it last changed (ms).
    updated_at: i64,
}

impl From<Task> for TaskDoc {
    fn from(t: Task) -> Self {
        let Task {
            id,
            workspace,
            parent_id,
            title,
            description,
            workflow_step,
            state,
            workspace_mode,
            repositories,
            external_id,
            created_by,
            created_in_session,
            from_office,
            agent_profile,
            created_at,
            updated_at,
        } = t;
        Self {
            id,
            workspace,
            parent_id,
            title,
            description,
            workflow_step,
            state: state.as_str(),
            workspace_mode,
            repositories: repositories
                .into_iter()
                .map(|r| {
                    let RequestedRepository { repository, branch } = r;
                    Requested { repository, branch }
                })
                .collect(),
            external_id,
            created_by: serde_json::from_str(&created_by).unwrap_or(Value::String(created_by)),
            created_in_session,
            from_office,
            agent_profile,
            created_at,
            updated_at,
        }
    }
}

/// A repository checked out in an environment.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CheckedOut {
    /// The repository's name.
    repository: String,
    /// The branch checked out.
    branch: String,
    /// Its directory.
    path: String,
    /// `active`, `deleted` or `failed`.
    state: &'static str,
    /// Why it failed, when it did.
    error: Option<String>,
}

/// A task's materialised environment.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Environment {
    /// `env_…`.
    id: String,
    /// The task whose environment it is.
    task_id: String,
    /// Its directory.
    path: String,
    /// `active`, `deleted` or `failed`.
    state: &'static str,
    /// Why it failed, when it did.
    error: Option<String>,
    /// When it was created (ms).
    created_at: i64,
    /// When its state last changed (ms).
    updated_at: i64,
    /// Its repositories.
    repositories: Vec<CheckedOut>,
}

impl From<TaskEnvironment> for Environment {
    fn from(e: TaskEnvironment) -> Self {
        let TaskEnvironment {
            id,
            task_id,
            path,
            state,
            error,
            created_at,
            updated_at,
            repositories,
        } = e;
        Self {
            id,
            task_id,
            path,
            state: state.as_str(),
            error,
            created_at,
            updated_at,
            repositories: repositories
                .into_iter()
                .map(|r| {
                    let EnvironmentRepository {
                        repository,
                        branch,
                        path,
                        state,
                        error,
                    } = r;
                    CheckedOut {
                        repository,
                        branch,
                        path,
                        state: state.as_str(),
                        error,
                    }
                })
                .collect(),
        }
    }
}

/// A created (or, on an idempotent retry, found) task.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CreatedTask {
    /// The task.
    task: TaskDoc,
    /// `false` when a retry with the same `external_id` found the original.
    created: bool,
}

/// Creates a task with admission (the office path, TASK-2): the body is
/// `tasks__create_task`'s arguments, validated by the same schema.
#[utoipa::path(post, path = "/tasks", operation_id = "createTask", tag = "tasks",
    request_body(content = ref("#/components/schemas/CreateTaskArgs"), content_type = "application/json"),
    responses(
        (status = 201, description = "created", body = CreatedTask),
        (status = 200, description = "an idempotent retry: the original task", body = CreatedTask),
        (status = 400, description = "arguments the schema refuses, naming the field", body = ErrorBody),
        (status = 403, description = "without `tasks:create`, or refused by admission", body = ErrorBody),
        (status = 404, description = "an unknown or inaccessible workspace or parent", body = ErrorBody),
        (status = 409, description = "inconsistent with what exists", body = ErrorBody),
        (status = 422, description = "refused by admission (ambiguous destination, …)", body = ErrorBody),
    ))]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<CreatedTask>), ApiError> {
    let authority = authority(&state, &credential)?;
    require(&authority, TASKS_CREATE, "creating a task")?;
    let args: Value = serde_json::from_slice(&body?)
        .map_err(|e| ApiError::invalid(format!("the body is not JSON: {e}")))?;
    let snapshot = state.gateway.snapshot();
    let tool = snapshot
        .catalog
        .get("tasks__create_task")
        .ok_or_else(|| ApiError::not_found("no workspace is configured"))?;
    if let Err(failure) = tool.schema.validate(args.as_object()) {
        return Err(ApiError::invalid(format!(
            "invalid task: {}",
            failure.problems.join("; ")
        )));
    }
    let args: CreateTaskArgs = serde_json::from_value(args)
        .map_err(|e| ApiError::invalid(format!("invalid task: {e}")))?;
    let c = tasks::create(&state.control, &snapshot.policy, &authority, args).await?;
    let status = if c.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(CreatedTask {
            task: c.task.into(),
            created: c.created,
        }),
    ))
}

/// `?workspace=&parent=&state=`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct TasksQuery {
    /// Only this workspace's tasks.
    workspace: Option<String>,
    /// Only this task's children.
    parent: Option<String>,
    /// Only tasks in this state: `todo`, `in_progress`, `review`, `done`, `archived`.
    state: Option<String>,
}

/// The tasks of the workspaces the caller may read, newest first.
#[utoipa::path(get, path = "/tasks", operation_id = "listTasks", tag = "tasks",
    params(TasksQuery),
    responses(
        (status = 200, description = "tasks, newest first", body = Vec<TaskDoc>),
        (status = 400, description = "an unknown state", body = ErrorBody),
        (status = 404, description = "an unknown or unreadable workspace", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    query: Result<Query<TasksQuery>, QueryRejection>,
) -> Result<Json<Vec<TaskDoc>>, ApiError> {
    let Query(q) = query?;
    let authority = authority(&state, &credential)?;
    let task_state = match q.state.as_deref() {
        None => None,
        Some(s) => Some(
            serde_json::from_value::<TaskStateArg>(Value::String(s.to_owned())).map_err(|_| {
                ApiError::invalid(format!(
                    "`state` must be one of todo, in_progress, review, done, archived; got `{s}`"
                ))
            })?,
        ),
    };
    let args = ListTasksArgs {
        workspace_id: q.workspace,
        parent_id: q.parent,
        state: task_state,
    };
    let policy = state.gateway.snapshot().policy.clone();
    let tasks = tasks::list(&state.control, &policy, &authority, &args).await?;
    Ok(Json(tasks.into_iter().map(TaskDoc::from).collect()))
}

/// One task with its environment and sessions.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TaskDetail {
    /// The task.
    task: TaskDoc,
    /// The environment it works in (its own, or an ancestor's when it inherits).
    environment: Option<Environment>,
    /// Its sessions: the agent runs bound to it.
    sessions: Vec<Lifecycle>,
}

/// What [`work::describe`] answers, read back into the store's types.
#[derive(Debug, Deserialize)]
struct Described {
    task: Task,
    environment: Option<TaskEnvironment>,
    sessions: Vec<AgentRun>,
}

/// One task with its environment and sessions.
#[utoipa::path(get, path = "/tasks/{id}", operation_id = "getTask", tag = "tasks",
    params(("id" = String, Path, description = "the task (`task_…`)")),
    responses(
        (status = 200, description = "the task", body = TaskDetail),
        (status = 404, description = "an unknown task, or one the caller may not read", body = ErrorBody),
    ))]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<TaskDetail>, ApiError> {
    let authority = authority(&state, &credential)?;
    let policy = state.gateway.snapshot().policy.clone();
    let described = tasks::describe(&state.control, &policy, &authority, &id).await?;
    let Described {
        task,
        environment,
        sessions,
    } = serde_json::from_value(described)
        .map_err(|e| ApiError::unavailable(format!("the task cannot be shown: {e}")))?;
    Ok(Json(TaskDetail {
        task: task.into(),
        environment: environment.map(Environment::from),
        sessions: sessions.into_iter().map(Lifecycle::from).collect(),
    }))
}

/// A repository of a workspace.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct WorkspaceRepository {
    /// Its name.
    name: String,
    /// The configured branch.
    branch: Option<String>,
}

/// A workspace the caller may read the tasks of.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Workspace {
    /// Its name.
    name: String,
    /// `kanban` or `office`.
    mode: String,
    /// The owning project.
    project: String,
    /// Its repositories.
    repositories: Vec<WorkspaceRepository>,
}

/// The workspaces the caller may read the tasks of.
#[utoipa::path(get, path = "/workspaces", operation_id = "listWorkspaces", tag = "tasks",
    responses((status = 200, description = "the readable workspaces", body = Vec<Workspace>)))]
pub(crate) async fn workspaces(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<Vec<Workspace>>, ApiError> {
    let authority = authority(&state, &credential)?;
    let policy = state.gateway.snapshot().policy.clone();
    Ok(Json(
        work::workspaces(&policy, &authority, TASKS_READ)
            .into_iter()
            .filter(|w| w.authorised)
            .map(|w| Workspace {
                name: w.name.to_string(),
                mode: serde_json::to_value(w.mode)
                    .ok()
                    .and_then(|m| m.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                project: w.project.to_string(),
                repositories: w
                    .repositories
                    .into_iter()
                    .map(|r| WorkspaceRepository {
                        name: r.name,
                        branch: r.branch,
                    })
                    .collect(),
            })
            .collect(),
    ))
}
