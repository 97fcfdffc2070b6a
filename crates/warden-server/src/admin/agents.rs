//! Agents over the API: the configured agents with their schedules, their unattended runs,
//! and starting one by hand (RUN-2 `agent` mode) — `warden run agent NAME`.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use warden_control::{Caller, runs};
use warden_core::config::{AgentSpec, Kind, Resource, RunnerSpec};
use warden_core::cron::Schedule as Cron;
use warden_mcp::Authenticated;

use super::access::{AGENTS_RUN, CONFIG_READ, caller_holding, own_authority};
use super::error::{ApiError, ErrorBody};
use super::runs::Lifecycle;
use crate::state::AppState;

/// The program a run starts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Runner {
    /// The program.
    command: String,
    /// Its arguments.
    args: Vec<String>,
    /// The names of the extra environment variables it gets (not their values).
    env: Vec<String>,
}

impl From<&RunnerSpec> for Runner {
    fn from(r: &RunnerSpec) -> Self {
        Self {
            command: r.command.clone(),
            args: r.args.clone(),
            env: r.env.keys().cloned().collect(),
        }
    }
}

/// One schedule of an agent.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Schedule {
    /// The cron expression (five fields, UTC).
    cron: String,
    /// The next time it fires (ms since the epoch), when it ever does.
    next_fire_at: Option<i64>,
    /// What it starts.
    runner: Runner,
    /// How long a run may take (seconds; default 15 minutes).
    timeout_seconds: Option<u64>,
}

/// A configured agent.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Agent {
    /// Its name.
    name: String,
    /// The projects it belongs to (it carries their knowledge into every run).
    memberships: Vec<String>,
    /// Whether it has instructions of its own.
    has_instructions: bool,
    /// Its schedules of unattended runs.
    schedules: Vec<Schedule>,
    /// What a manual run starts, when one can be started.
    manual_runner: Option<Runner>,
}

fn seconds(d: Option<Duration>) -> Option<u64> {
    d.map(|d| d.as_secs())
}

fn view(a: &AgentSpec, now: warden_core::time::Millis) -> Agent {
    Agent {
        name: a.name.to_string(),
        memberships: a.memberships.iter().map(ToString::to_string).collect(),
        has_instructions: a.instructions.is_some(),
        schedules: a
            .schedules
            .iter()
            .map(|s| Schedule {
                cron: s.cron.clone(),
                next_fire_at: Cron::parse(&s.cron)
                    .ok()
                    .and_then(|c| c.next_after(now))
                    .map(|m| m.0),
                runner: Runner::from(&s.runner),
                timeout_seconds: seconds(s.timeout),
            })
            .collect(),
        manual_runner: a.manual_runner().map(|(r, _)| Runner::from(r)),
    }
}

/// The configured agents, with their schedules and the next time each fires.
#[utoipa::path(get, path = "/agents", operation_id = "listAgents", tag = "agents",
    responses(
        (status = 200, description = "every agent, by name", body = Vec<Agent>),
        (status = 403, description = "without `config:read`", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<Vec<Agent>>, ApiError> {
    caller_holding(&state, &credential, CONFIG_READ, "listing agents")?;
    let snapshot = state.gateway.snapshot();
    let now = state.control.now();
    Ok(Json(
        snapshot
            .policy
            .config
            .of_kind(Kind::Agent)
            .filter_map(|r| match r {
                Resource::Agent(a) => Some(view(a, now)),
                _ => None,
            })
            .collect(),
    ))
}

/// The optional body of `POST /api/v1/agents/{agent}/runs`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartRun {
    /// A session: the run works on this task (`task_…`) in its environment.
    task: Option<String>,
}

/// Starts an unattended run of an agent by hand: Warden mints a run credential bound to the
/// agent and the run and starts the agent's runner with it.
#[utoipa::path(post, path = "/agents/{agent}/runs", operation_id = "startAgentRun", tag = "agents",
    params(("agent" = String, Path, description = "the agent")),
    request_body(content = Option<StartRun>, description = "optional: the task of a session"),
    responses(
        (status = 201, description = "started (its status is `running`, or `failed` with why)", body = Lifecycle),
        (status = 400, description = "a malformed body", body = ErrorBody),
        (status = 403, description = "without `agents:run`", body = ErrorBody),
        (status = 404, description = "no such agent or task", body = ErrorBody),
        (status = 409, description = "no runner configured, or a run already running", body = ErrorBody),
        (status = 422, description = "the agent is not a member of the task's project", body = ErrorBody),
    ))]
pub(crate) async fn start(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(agent): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Lifecycle>), ApiError> {
    let caller = Caller::Credential(caller_holding(
        &state,
        &credential,
        AGENTS_RUN,
        "starting an agent run",
    )?);
    let body = body?;
    let asked: StartRun = if body.iter().all(u8::is_ascii_whitespace) {
        StartRun::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::invalid(format!("invalid run: {e}")))?
    };
    let run = runs::start(
        &state.runner,
        &caller,
        &credential,
        &agent,
        asked.task.as_deref(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(run.into())))
}

/// `?limit=N`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct AgentRunsQuery {
    /// At most this many (default 50).
    limit: Option<i64>,
}

/// The unattended runs of an agent, newest first, with their lifecycle.
#[utoipa::path(get, path = "/agents/{agent}/runs", operation_id = "listAgentRuns", tag = "agents",
    params(("agent" = String, Path, description = "the agent"), AgentRunsQuery),
    responses(
        (status = 200, description = "its runs, newest first", body = Vec<Lifecycle>),
        (status = 403, description = "without `runs:read`", body = ErrorBody),
        (status = 404, description = "no such agent", body = ErrorBody),
    ))]
pub(crate) async fn runs(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(agent): Path<String>,
    query: Result<Query<AgentRunsQuery>, QueryRejection>,
) -> Result<Json<Vec<Lifecycle>>, ApiError> {
    let Query(q) = query?;
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let runs = runs::agent_runs(
        &state.control,
        &state.gateway.snapshot().policy,
        &caller,
        Some(&agent),
        q.limit.unwrap_or(50),
    )
    .await?;
    Ok(Json(runs.into_iter().map(Lifecycle::from).collect()))
}
