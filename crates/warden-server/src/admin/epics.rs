//! Epics and their tasks in the admin API (WORK-1): every write the `work` tool set makes over
//! MCP, with the same arguments (a path names the epic or the epic task the tool's `id` or
//! `epic` would), answered by the same service (`warden_control::epics`). An epic the caller
//! may not see answers like one that does not exist.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use warden_control::epics;
use warden_core::work::{EpicState, State as _};
use warden_mcp::Authenticated;
use warden_store::{Epic, EpicTask, Review, WorkMove};
use warden_work::epics::args::ListEpicsArgs;
use warden_work::epics::{EpicError, EpicView, code};

use super::error::{ApiError, ErrorBody};
use super::tasks::authority;
use crate::state::AppState;

/// A refusal's HTTP status: the epics service's codes, then task admission's.
fn status_of(code: &str) -> StatusCode {
    match code {
        code::NOT_FOUND => StatusCode::NOT_FOUND,
        code::FORBIDDEN => StatusCode::FORBIDDEN,
        code::INVALID_MOVE | code::GATED => StatusCode::CONFLICT,
        code::INVALID_ARGUMENT => StatusCode::UNPROCESSABLE_ENTITY,
        code::UNAVAILABLE => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::FORBIDDEN,
    }
}

impl From<EpicError> for ApiError {
    fn from(e: EpicError) -> Self {
        match e {
            EpicError::Store(e) => e.into(),
            EpicError::Task(r) => warden_work::tasks::WorkError::Refused(r).into(),
            EpicError::Refused { code, message } => {
                tracing::info!(code, "work request refused");
                ApiError::coded(status_of(code), code, message)
            }
        }
    }
}

/// An epic.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EpicDoc {
    /// `epc_…`.
    id: String,
    /// Its project.
    project: String,
    /// Its title.
    title: String,
    /// What it is about.
    description: String,
    /// Its acceptance criteria.
    criteria: Vec<String>,
    /// The trade-offs it makes.
    tradeoffs: String,
    /// `low`, `medium`, `high` or `critical`.
    risk: &'static str,
    /// `draft`, `open`, `done` or `archived`.
    state: &'static str,
    /// The principal that created it.
    created_by: String,
    /// When it was created (ms since the epoch).
    created_at: i64,
    /// When it last changed (ms since the epoch).
    updated_at: i64,
}

impl From<Epic> for EpicDoc {
    fn from(e: Epic) -> Self {
        Self {
            risk: e.risk.as_str(),
            state: e.state.as_str(),
            id: e.id,
            project: e.project,
            title: e.title,
            description: e.description,
            criteria: e.criteria,
            tradeoffs: e.tradeoffs,
            created_by: e.created_by,
            created_at: e.created_at.0,
            updated_at: e.updated_at.0,
        }
    }
}

/// An epic task.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EpicTaskDoc {
    /// `ept_…`.
    id: String,
    /// Its epic.
    epic_id: String,
    /// Its task (`task_…`).
    task_id: String,
    /// Its title.
    title: String,
    /// The repository its work is in.
    repository: String,
    /// The branch its work is merged into.
    base_branch: String,
    /// The work branch.
    branch: String,
    /// `proposed`, `ready`, `in_progress`, `review`, `accepted`, `merged` or `reopened`.
    state: &'static str,
    /// The principal that added it.
    created_by: String,
    /// The merge commit, once merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    merge_commit: Option<String>,
    /// When it was added (ms since the epoch).
    created_at: i64,
    /// When it last changed (ms since the epoch).
    updated_at: i64,
}

impl From<EpicTask> for EpicTaskDoc {
    fn from(t: EpicTask) -> Self {
        Self {
            state: t.state.as_str(),
            id: t.id,
            epic_id: t.epic_id,
            task_id: t.task_id,
            title: t.title,
            repository: t.repository,
            base_branch: t.base_branch,
            branch: t.branch,
            created_by: t.created_by,
            merge_commit: t.merge_commit,
            created_at: t.created_at.0,
            updated_at: t.updated_at.0,
        }
    }
}

/// A recorded move.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MoveDoc {
    /// What moved (`epc_…`, `ept_…`).
    subject: String,
    /// 1, 2, … per subject.
    seq: i64,
    /// Who moved it.
    moved_by: String,
    /// Where it stood; none for its creation.
    from: Option<String>,
    /// Where it went.
    to: String,
    /// When (ms since the epoch).
    at: i64,
}

impl From<WorkMove> for MoveDoc {
    fn from(m: WorkMove) -> Self {
        Self {
            subject: m.subject,
            seq: m.seq,
            moved_by: m.moved_by,
            from: m.from,
            to: m.to,
            at: m.at.0,
        }
    }
}

/// A review of an epic task.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReviewDoc {
    /// The epic task reviewed.
    epic_task_id: String,
    /// 1, 2, … per epic task.
    seq: i64,
    /// Who reviewed it.
    reviewer: String,
    /// `approve` or `changes`.
    verdict: &'static str,
    /// What the reviewer said.
    comment: String,
    /// The commit of the work branch reviewed; none when the branch did not exist.
    head: Option<String>,
    /// Whether the reviewer held `work:accept-critical`.
    critical: bool,
    /// When (ms since the epoch).
    at: i64,
}

impl From<Review> for ReviewDoc {
    fn from(r: Review) -> Self {
        Self {
            epic_task_id: r.epic_task_id,
            seq: r.seq,
            reviewer: r.reviewer,
            verdict: r.verdict.as_str(),
            comment: r.comment,
            head: r.head,
            critical: r.critical,
            at: r.at.0,
        }
    }
}

/// An epic task with its reviews.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EpicTaskDetail {
    /// The epic task.
    #[serde(flatten)]
    task: EpicTaskDoc,
    /// Its reviews, the first first.
    reviews: Vec<ReviewDoc>,
}

/// An epic with its tasks and moves.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EpicDetail {
    /// The epic.
    epic: EpicDoc,
    /// Its tasks, in the order they were added, with their reviews.
    tasks: Vec<EpicTaskDetail>,
    /// Its moves, its creation first.
    moves: Vec<MoveDoc>,
}

impl From<EpicView> for EpicDetail {
    fn from(v: EpicView) -> Self {
        Self {
            epic: v.epic.into(),
            tasks: v
                .tasks
                .into_iter()
                .map(|t| EpicTaskDetail {
                    task: t.task.into(),
                    reviews: t.reviews.into_iter().map(ReviewDoc::from).collect(),
                })
                .collect(),
            moves: v.moves.into_iter().map(MoveDoc::from).collect(),
        }
    }
}

/// What an acceptance did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AcceptanceDoc {
    /// The epic task: `merged` (with its merge commit), or `accepted` when the merge did not
    /// happen.
    epic_task: EpicTaskDoc,
    /// The paths its work branch conflicts with its base branch in; nothing was pushed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    conflicts: Vec<String>,
    /// Why it is not merged, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_merged: Option<String>,
}

/// An added epic task and its task.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AddedTask {
    /// `ept_…`.
    id: String,
    /// Its task (`task_…`).
    task: String,
    /// The epic task.
    epic_task: EpicTaskDoc,
}

/// The tool's arguments from a JSON object `body`, with `key` set to `value` from the path:
/// 400 naming what is wrong.
fn arguments<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    path: Option<(&str, &str)>,
    what: &str,
) -> Result<T, ApiError> {
    let body = body?;
    // No body at all is no arguments (`accept` takes none besides its path).
    let mut args: Value = if body.is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid(format!("the body is not JSON: {e}")))?
    };
    if let Some((key, value)) = path {
        let Some(object) = args.as_object_mut() else {
            return Err(ApiError::invalid(format!(
                "invalid {what}: the body is not an object"
            )));
        };
        if object.contains_key(key) {
            return Err(ApiError::invalid(format!(
                "invalid {what}: `{key}` is given by the path, not the body"
            )));
        }
        object.insert(key.into(), Value::String(value.into()));
    }
    serde_json::from_value(args).map_err(|e| ApiError::invalid(format!("invalid {what}: {e}")))
}

/// Creates an epic in `draft`.
#[utoipa::path(post, path = "/epics", operation_id = "createEpic", tag = "work",
    request_body(content = ref("#/components/schemas/CreateEpicArgs"), content_type = "application/json"),
    responses(
        (status = 201, description = "created", body = EpicDoc),
        (status = 400, description = "arguments refused, naming the field", body = ErrorBody),
        (status = 403, description = "without `work:write` in the project", body = ErrorBody),
        (status = 404, description = "a project whose tools the caller may not use", body = ErrorBody),
        (status = 422, description = "an empty title or criterion", body = ErrorBody),
    ))]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<EpicDoc>), ApiError> {
    let authority = authority(&state, &credential)?;
    let args = arguments(body, None, "epic")?;
    let epic = epics::create(&state.control, &authority, args).await?;
    Ok((StatusCode::CREATED, Json(epic.into())))
}

/// `?project=&status=`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct EpicsQuery {
    /// Only this project's epics.
    project: Option<String>,
    /// Only epics in this state: `draft`, `open`, `done`, `archived`.
    status: Option<String>,
}

/// The epics the caller sees, the last changed first.
#[utoipa::path(get, path = "/epics", operation_id = "listEpics", tag = "work",
    params(EpicsQuery),
    responses(
        (status = 200, description = "epics, the last changed first", body = Vec<EpicDoc>),
        (status = 400, description = "an unknown state", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    query: Result<Query<EpicsQuery>, QueryRejection>,
) -> Result<Json<Vec<EpicDoc>>, ApiError> {
    let Query(q) = query?;
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(EpicState::parse(s).ok_or_else(|| {
            ApiError::invalid(format!(
                "`status`: no epic state `{s}`; one of draft, open, done, archived"
            ))
        })?),
    };
    let authority = authority(&state, &credential)?;
    let args = ListEpicsArgs {
        project: q.project,
        status,
    };
    let epics = epics::list(&state.control, &authority, &args).await?;
    Ok(Json(epics.into_iter().map(EpicDoc::from).collect()))
}

/// One epic, with its tasks and moves.
#[utoipa::path(get, path = "/epics/{id}", operation_id = "getEpic", tag = "work",
    params(("id" = String, Path, description = "the epic (`epc_…`)")),
    responses(
        (status = 200, description = "the epic", body = EpicDetail),
        (status = 404, description = "no such epic the caller sees", body = ErrorBody),
    ))]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<EpicDetail>, ApiError> {
    let authority = authority(&state, &credential)?;
    let view = epics::get(&state.control, &authority, &id).await?;
    Ok(Json(view.into()))
}

/// Changes an epic's text or risk, or moves it (`status`).
#[utoipa::path(patch, path = "/epics/{id}", operation_id = "updateEpic", tag = "work",
    params(("id" = String, Path, description = "the epic (`epc_…`)")),
    request_body(content = ref("#/components/schemas/UpdateEpicArgs"), content_type = "application/json"),
    responses(
        (status = 200, description = "the epic as changed", body = EpicDoc),
        (status = 400, description = "arguments refused, naming the field", body = ErrorBody),
        (status = 403, description = "without `work:write` in the project", body = ErrorBody),
        (status = 404, description = "no such epic the caller sees", body = ErrorBody),
        (status = 409, description = "a move the machine does not have; nothing changed", body = ErrorBody),
        (status = 422, description = "an empty title or criterion", body = ErrorBody),
    ))]
pub(crate) async fn update(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<EpicDoc>, ApiError> {
    let authority = authority(&state, &credential)?;
    let args = arguments(body, Some(("id", &id)), "change")?;
    let epic = epics::update(&state.control, &authority, args).await?;
    Ok(Json(epic.into()))
}

/// Adds a task to an epic: its task is created through task admission.
#[utoipa::path(post, path = "/epics/{id}/tasks", operation_id = "addEpicTask", tag = "work",
    params(("id" = String, Path, description = "the epic (`epc_…`)")),
    request_body(content = ref("#/components/schemas/AddTaskArgs"), content_type = "application/json"),
    responses(
        (status = 201, description = "the epic task, `proposed`", body = AddedTask),
        (status = 400, description = "arguments refused, naming the field", body = ErrorBody),
        (status = 403, description = "without `work:write`, or refused by task admission", body = ErrorBody),
        (status = 404, description = "no such epic, workspace or repository the caller sees", body = ErrorBody),
        (status = 422, description = "a workspace of another project, a done epic, an empty title", body = ErrorBody),
    ))]
pub(crate) async fn add_task(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<AddedTask>), ApiError> {
    let authority = authority(&state, &credential)?;
    let args = arguments(body, Some(("epic", &id)), "epic task")?;
    let policy = state.gateway.snapshot().policy.clone();
    let task = epics::add_task(&state.control, &policy, &authority, args).await?;
    Ok((
        StatusCode::CREATED,
        Json(AddedTask {
            id: task.id.clone(),
            task: task.task_id.clone(),
            epic_task: task.into(),
        }),
    ))
}

/// Moves an epic task along its machine.
#[utoipa::path(post, path = "/epic-tasks/{id}/move", operation_id = "moveEpicTask", tag = "work",
    params(("id" = String, Path, description = "the epic task (`ept_…`)")),
    request_body(content = ref("#/components/schemas/MoveEpicTaskArgs"), content_type = "application/json"),
    responses(
        (status = 200, description = "the epic task, moved", body = EpicTaskDoc),
        (status = 400, description = "arguments refused, naming the field", body = ErrorBody),
        (status = 403, description = "without `work:write` in the project", body = ErrorBody),
        (status = 404, description = "no such epic task the caller sees", body = ErrorBody),
        (status = 409, description = "a move the machine does not have, or one only a gate makes; nothing changed", body = ErrorBody),
    ))]
pub(crate) async fn move_task(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<EpicTaskDoc>, ApiError> {
    let authority = authority(&state, &credential)?;
    let args = arguments(body, Some(("id", &id)), "move")?;
    let policy = state.gateway.snapshot().policy.clone();
    let task = epics::move_task(&state.control, &policy, &authority, args).await?;
    Ok(Json(task.into()))
}

/// Reviews an epic task in `review`; `changes` moves it back to `in_progress`.
#[utoipa::path(post, path = "/epic-tasks/{id}/reviews", operation_id = "reviewEpicTask", tag = "work",
    params(("id" = String, Path, description = "the epic task (`ept_…`)")),
    request_body(content = ref("#/components/schemas/ReviewArgs"), content_type = "application/json"),
    responses(
        (status = 201, description = "the review, recorded", body = ReviewDoc),
        (status = 400, description = "arguments refused, naming the field", body = ErrorBody),
        (status = 403, description = "without `work:review` in the project, or an author of the task", body = ErrorBody),
        (status = 404, description = "no such epic task the caller sees", body = ErrorBody),
        (status = 422, description = "the task is not in `review`", body = ErrorBody),
        (status = 503, description = "the work branch's repository cannot be read", body = ErrorBody),
    ))]
pub(crate) async fn review(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<ReviewDoc>), ApiError> {
    let authority = authority(&state, &credential)?;
    let args = arguments(body, Some(("id", &id)), "review")?;
    let policy = state.gateway.snapshot().policy.clone();
    let review = epics::review(&state.control, &policy, &authority, args).await?;
    Ok((StatusCode::CREATED, Json(review.into())))
}

/// Accepts an epic task whose review gate is open, and merges its work branch.
#[utoipa::path(post, path = "/epic-tasks/{id}/accept", operation_id = "acceptEpicTask", tag = "work",
    params(("id" = String, Path, description = "the epic task (`ept_…`)")),
    request_body(content = ref("#/components/schemas/AcceptArgs"), content_type = "application/json",
        description = "`{}`, or no body at all"),
    responses(
        (status = 200, description = "accepted, and merged unless `notMerged` says why", body = AcceptanceDoc),
        (status = 403, description = "without `work:accept` in the project", body = ErrorBody),
        (status = 404, description = "no such epic task the caller sees", body = ErrorBody),
        (status = 409, description = "not in `review`, or its review gate is closed (the message says what it lacks)", body = ErrorBody),
        (status = 503, description = "the work branch's repository cannot be read", body = ErrorBody),
    ))]
pub(crate) async fn accept(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<AcceptanceDoc>, ApiError> {
    let authority = authority(&state, &credential)?;
    let args = arguments(body, Some(("id", &id)), "acceptance")?;
    let policy = state.gateway.snapshot().policy.clone();
    let done = epics::accept(&state.control, &policy, &authority, args).await?;
    Ok(Json(AcceptanceDoc {
        epic_task: done.epic_task.into(),
        conflicts: done.conflicts,
        not_merged: done.not_merged,
    }))
}
