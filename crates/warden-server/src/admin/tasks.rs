//! Tasks and workspaces in the admin API: the operators' path of task creation (TASK-2) —
//! where an office session creates its tasks, with its run credential — and reading them.
//! The same rules as the `tasks` tool set ([`warden_mcp::work`]): admission first, the same
//! argument schema, unknown and inaccessible alike.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use warden_core::admission::RefusalCode;
use warden_mcp::Authenticated;
use warden_mcp::builtin::tasks::{CreateTaskArgs, ListTasksArgs, TaskStateArg};
use warden_mcp::work::{self, WorkError};

use super::{ApiError, error};
use crate::state::AppState;

/// The authority a credential acts with here: a run credential as its agent's run (a session),
/// anything else as itself.
fn authority(
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
        .map_err(|e| error(StatusCode::FORBIDDEN, e.to_string()))
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

fn work_error(e: WorkError) -> Response {
    match e {
        WorkError::Refused(r) => {
            tracing::info!(code = r.code.as_str(), reason = %r.reason, "tasks request refused");
            (
                status_of(r.code),
                Json(json!({"error": r.message, "code": r.code.as_str()})),
            )
                .into_response()
        }
        WorkError::Store(e) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the store cannot be used: {e}"),
        )
        .into_response(),
    }
}

/// `POST /api/v1/tasks`: the body is `tasks__create_task`'s arguments, validated by the same
/// schema; `201` with the new task, `200` with the original on an idempotent retry.
pub(super) async fn create(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let authority = authority(&state, &credential)?;
    if !authority.holds("tasks:create") {
        return Err(error(
            StatusCode::FORBIDDEN,
            "creating a task needs the `tasks:create` capability",
        ));
    }
    let args: Value = serde_json::from_slice(&body).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            format!("the body is not JSON: {e}"),
        )
    })?;
    let snapshot = state.gateway.snapshot();
    let tool = snapshot
        .catalog
        .get("tasks__create_task")
        .ok_or_else(|| error(StatusCode::NOT_FOUND, "no workspace is configured"))?;
    if let Err(failure) = tool.schema.validate(args.as_object()) {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("invalid task: {}", failure.problems.join("; ")),
        ));
    }
    let args: CreateTaskArgs = serde_json::from_value(args)
        .map_err(|e| error(StatusCode::BAD_REQUEST, format!("invalid task: {e}")))?;
    match work::create(
        state.gateway.store(),
        &snapshot.policy,
        &authority,
        args,
        work::Path::Own,
    )
    .await
    {
        Ok(c) => {
            let status = if c.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok((status, Json(json!({"task": c.task, "created": c.created}))).into_response())
        }
        Err(e) => Ok(work_error(e)),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct TasksQuery {
    workspace: Option<String>,
    parent: Option<String>,
    state: Option<String>,
}

/// `GET /api/v1/tasks`: the tasks of the workspaces the caller may read, newest first.
pub(super) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Query(q): Query<TasksQuery>,
) -> Result<Response, ApiError> {
    let authority = authority(&state, &credential)?;
    let task_state = match q.state.as_deref() {
        None => None,
        Some(s) => Some(
            serde_json::from_value::<TaskStateArg>(Value::String(s.to_owned())).map_err(|_| {
                error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "`state` must be one of todo, in_progress, review, done, archived; got `{s}`"
                    ),
                )
            })?,
        ),
    };
    let args = ListTasksArgs {
        workspace_id: q.workspace,
        parent_id: q.parent,
        state: task_state,
    };
    let policy = state.gateway.snapshot().policy.clone();
    match work::list(state.gateway.store(), &policy, &authority, &args).await {
        Ok(tasks) => Ok(Json(tasks).into_response()),
        Err(e) => Ok(work_error(e)),
    }
}

/// `GET /api/v1/tasks/{id}`: one task with its environment and sessions.
pub(super) async fn get(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let authority = authority(&state, &credential)?;
    let policy = state.gateway.snapshot().policy.clone();
    match work::describe(state.gateway.store(), &policy, &authority, &id).await {
        Ok(task) => Ok(Json(task).into_response()),
        Err(e) => Ok(work_error(e)),
    }
}

/// `GET /api/v1/workspaces`: the workspaces the caller may read the tasks of.
pub(super) async fn workspaces(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Response, ApiError> {
    let authority = authority(&state, &credential)?;
    let policy = state.gateway.snapshot().policy.clone();
    let visible: Vec<Value> = work::workspaces(&policy, &authority, "tasks:read")
        .into_iter()
        .filter(|w| w.authorised)
        .map(|w| {
            json!({
                "name": w.name,
                "mode": w.mode,
                "project": w.project,
                "repositories": w.repositories.iter().map(|r| json!({"name": r.name, "branch": r.branch})).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(Json(visible).into_response())
}
