//! Runs over the API: those with audited calls and the unattended agent runs, newest first,
//! and one run with its authority, lifecycle and calls — `warden get runs` and
//! `warden describe run ID`.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use warden_control::{Caller, runs};
use warden_mcp::Authenticated;
use warden_store::{AgentRun, CallDetail, RunDetail, RunSummary};

use super::access::own_authority;
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// The lifecycle of one unattended agent run (RUN-2 `agent` mode).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Lifecycle {
    /// The run's id (also the run id of its calls).
    id: String,
    /// The agent.
    agent: String,
    /// `manual` or `schedule`.
    trigger: String,
    /// For scheduled runs: which schedule (`<index>:<cron>`).
    schedule_key: Option<String>,
    /// For scheduled runs: the time the schedule fired for (ms).
    fire_at: Option<i64>,
    /// `queued`, `running`, `succeeded`, `failed`, `timed_out` or `stopped`.
    status: String,
    /// Who asked, by reference (APR-3).
    #[schema(value_type = Object)]
    requested_by: Value,
    /// The run credential's id (revoked when the run ends).
    credential_id: Option<String>,
    /// When it was queued (ms).
    queued_at: i64,
    /// When the runner started (ms).
    started_at: Option<i64>,
    /// When it ended (ms).
    finished_at: Option<i64>,
    /// The runner's exit code.
    exit_code: Option<i32>,
    /// Why it failed, when it did.
    error: Option<String>,
    /// The task this run is a session of.
    task_id: Option<String>,
    /// What the runner printed, stdout and stderr as read: the last 8 KiB, once it ended.
    output: Option<String>,
}

impl From<AgentRun> for Lifecycle {
    fn from(r: AgentRun) -> Self {
        let AgentRun {
            id,
            agent,
            trigger,
            schedule_key,
            fire_at,
            status,
            requested_by,
            credential_id,
            queued_at,
            started_at,
            finished_at,
            exit_code,
            error,
            task_id,
            output,
        } = r;
        Self {
            id,
            agent,
            trigger,
            schedule_key,
            fire_at,
            status,
            requested_by: serde_json::from_str(&requested_by)
                .unwrap_or(Value::String(requested_by)),
            credential_id,
            queued_at,
            started_at,
            finished_at,
            exit_code,
            error,
            task_id,
            output,
        }
    }
}

/// One run, as `warden get runs` lists it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Run {
    /// The run.
    id: String,
    /// When it was opened or queued (ms).
    at: i64,
    /// `caller`, `agent` or `service-account` (unknown until its first call).
    mode: Option<String>,
    /// The principal.
    principal: Option<String>,
    /// The agent, for a run of an agent.
    agent: Option<String>,
    /// An unattended run's lifecycle status.
    status: Option<String>,
}

impl From<RunSummary> for Run {
    fn from(r: RunSummary) -> Self {
        let RunSummary {
            id,
            at,
            mode,
            principal,
            agent,
            status,
        } = r;
        Self {
            id,
            at,
            mode,
            principal,
            agent,
            status,
        }
    }
}

/// One call of a run.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Call {
    /// The call.
    call_id: String,
    /// When (ms).
    at: i64,
    /// The tool as requested.
    tool: Option<String>,
    /// `allow` or `deny`.
    decision: Option<String>,
    /// The denial code.
    code: Option<String>,
    /// The rule that decided.
    rule: Option<String>,
    /// `executed`, `failed`, …, for admitted calls.
    outcome: Option<String>,
    /// Duration of the execution (ms).
    duration_ms: Option<i64>,
}

impl From<CallDetail> for Call {
    fn from(c: CallDetail) -> Self {
        let CallDetail {
            call_id,
            at,
            tool,
            decision,
            code,
            rule,
            outcome,
            duration_ms,
        } = c;
        Self {
            call_id,
            at,
            tool,
            decision,
            code,
            rule,
            outcome,
            duration_ms,
        }
    }
}

/// One run in detail, as `warden describe run` shows it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RunDescription {
    /// The run.
    id: String,
    /// The run record: mode, principal, credential, agent, effective projects and why,
    /// knowledge-only projects, policy revision.
    #[schema(value_type = Option<Object>)]
    authority: Option<Value>,
    /// The unattended run's lifecycle, if any.
    lifecycle: Option<Lifecycle>,
    /// Every call, in order.
    calls: Vec<Call>,
}

impl From<RunDetail> for RunDescription {
    fn from(r: RunDetail) -> Self {
        let RunDetail {
            id,
            authority,
            lifecycle,
            calls,
        } = r;
        Self {
            id,
            authority,
            lifecycle: lifecycle.map(Lifecycle::from),
            calls: calls.into_iter().map(Call::from).collect(),
        }
    }
}

/// `?agent=NAME&limit=N`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct RunsQuery {
    /// Only the runs of this agent.
    agent: Option<String>,
    /// At most this many (default 50).
    limit: Option<i64>,
}

/// Runs, newest first.
#[utoipa::path(get, path = "/runs", operation_id = "listRuns", tag = "runs",
    params(RunsQuery),
    responses(
        (status = 200, description = "runs, newest first", body = Vec<Run>),
        (status = 400, description = "a malformed filter", body = ErrorBody),
        (status = 403, description = "without `runs:read`", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    query: Result<Query<RunsQuery>, QueryRejection>,
) -> Result<Json<Vec<Run>>, ApiError> {
    let Query(q) = query?;
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let runs = runs::list(
        &state.control,
        &caller,
        q.agent.as_deref(),
        q.limit.unwrap_or(50),
    )
    .await?;
    Ok(Json(runs.into_iter().map(Run::from).collect()))
}

/// One run with its authority, lifecycle and calls.
#[utoipa::path(get, path = "/runs/{id}", operation_id = "getRun", tag = "runs",
    params(("id" = String, Path, description = "the run (`run_…`)")),
    responses(
        (status = 200, description = "the run", body = RunDescription),
        (status = 403, description = "without `runs:read`", body = ErrorBody),
        (status = 404, description = "no such run", body = ErrorBody),
    ))]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<RunDescription>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    Ok(Json(runs::get(&state.control, &caller, &id).await?.into()))
}
