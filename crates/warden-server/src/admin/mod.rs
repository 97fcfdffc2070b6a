//! The admin API under `/api/v1` (JSON), described by `/api/v1/openapi.json`.

use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use warden_core::approval::ApprovalStatus;
use warden_core::authority::Authority;
use warden_core::name::Name;
use warden_core::principal::{Credential, CredentialKind, Principal};
use warden_core::time::Millis;
use warden_core::tool::{GovernanceStatus, ToolSource};
use warden_mcp::Authenticated;

use crate::state::AppState;

mod tasks;

/// Capability to explain calls of other principals, with the rules of hidden tools.
pub const EXPLAIN_ANY: &str = "explain:any";
/// Capability to read the tool inventory.
pub const TOOLS_INVENTORY: &str = "tools:inventory";

/// Capability to start agent runs by hand.
pub const AGENTS_RUN: &str = "agents:run";
/// Capability to read runs and their calls.
pub const RUNS_READ: &str = "runs:read";

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/whoami", get(whoami))
        .route("/explain", post(explain))
        .route("/tools/inventory", get(inventory))
        .route("/agents/{agent}/runs", post(start_run))
        .route("/runs", get(list_runs))
        .route("/runs/{id}", get(describe_run))
        .route("/approvals", get(list_approvals))
        .route("/approvals/{id}", get(get_approval))
        .route("/approvals/{id}/{verb}", post(decide_approval))
        .route("/tasks", get(tasks::list).post(tasks::create))
        .route("/tasks/{id}", get(tasks::get))
        .route("/workspaces", get(tasks::workspaces))
}

/// Capability to read every approval (requesters always see their own).
pub const APPROVALS_READ: &str = "approvals:read";

#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalsQuery {
    status: Option<String>,
    limit: Option<i64>,
}

fn can_read_all(caller: &Authority) -> bool {
    caller.holds(APPROVALS_READ) || caller.holds(warden_core::capability::APPROVALS_DECIDE)
}

async fn list_approvals(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    axum::extract::Query(q): axum::extract::Query<ApprovalsQuery>,
) -> Result<Response, ApiError> {
    let caller = own_authority(&state, &credential)?;
    let status = q
        .status
        .as_deref()
        .map(|s| {
            s.split(',')
                .map(|one| {
                    ApprovalStatus::parse(one.trim()).ok_or_else(|| {
                        let known: Vec<&str> =
                            ApprovalStatus::ALL.iter().map(|st| st.as_str()).collect();
                        error(
                            StatusCode::BAD_REQUEST,
                            format!(
                                "`{}` is not an approval status; use one of {}",
                                one.chars().take(64).collect::<String>(),
                                known.join(", ")
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    let filter = warden_store::ApprovalFilter {
        status,
        principal: (!can_read_all(&caller)).then(|| credential.principal.to_string()),
        limit: q.limit,
        ..Default::default()
    };
    let approvals = state
        .gateway
        .store()
        .approvals(&filter)
        .await
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    Ok(Json(approvals).into_response())
}

async fn get_approval(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response, ApiError> {
    let caller = own_authority(&state, &credential)?;
    let approval = state
        .gateway
        .store()
        .approval(&id)
        .await
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    match approval {
        // Someone else's approval answers like one that does not exist.
        Some(a) if can_read_all(&caller) || a.principal == credential.principal.to_string() => {
            let mut body = serde_json::to_value(&a).unwrap_or_default();
            if let Some(obj) = body.as_object_mut()
                && let Some(Value::String(r)) = obj.get("result").cloned()
            {
                obj.insert(
                    "result".into(),
                    serde_json::from_str(&r).unwrap_or(Value::String(r)),
                );
            }
            Ok(Json(body).into_response())
        }
        _ => Err(error(StatusCode::NOT_FOUND, format!("no approval `{id}`"))),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecideBody {
    #[serde(default)]
    reason: Option<String>,
}

async fn decide_approval(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    axum::extract::Path((id, verb)): axum::extract::Path<(String, String)>,
    body: Option<Json<DecideBody>>,
) -> Result<Response, ApiError> {
    use warden_mcp::gateway::{DecideError, Verb};
    let verb = match verb.as_str() {
        "approve" => Verb::Approve,
        "reject" => Verb::Reject,
        "veto" => Verb::Veto,
        other => {
            return Err(error(
                StatusCode::NOT_FOUND,
                format!("`{other}` is not a decision: use approve, reject or veto"),
            ));
        }
    };
    let reason = body.and_then(|Json(b)| b.reason);
    match state
        .gateway
        .decide_approval(&id, &credential, verb, reason)
        .await
    {
        Ok(a) => {
            let mut body = serde_json::to_value(&a).unwrap_or_default();
            if let Some(obj) = body.as_object_mut()
                && let Some(Value::String(r)) = obj.get("result").cloned()
            {
                obj.insert(
                    "result".into(),
                    serde_json::from_str(&r).unwrap_or(Value::String(r)),
                );
            }
            Ok(Json(body).into_response())
        }
        Err(e @ DecideError::NotFound(_)) => Err(error(StatusCode::NOT_FOUND, e.to_string())),
        Err(e @ DecideError::Forbidden(_)) => Err(error(StatusCode::FORBIDDEN, e.to_string())),
        Err(e @ DecideError::Conflict(_)) => Err(error(StatusCode::CONFLICT, e.to_string())),
        Err(e @ DecideError::Store(_)) => {
            Err(error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))
        }
    }
}

fn require(authority: &Authority, capability: &str, what: &str) -> Result<(), ApiError> {
    if authority.holds(capability) {
        Ok(())
    } else {
        Err(error(
            StatusCode::FORBIDDEN,
            format!("{what} needs the `{capability}` capability"),
        ))
    }
}

/// The optional body of `POST /api/v1/agents/{agent}/runs`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StartRun {
    /// A session: the run works on this task.
    task: Option<String>,
}

async fn start_run(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    axum::extract::Path(agent): axum::extract::Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let caller = own_authority(&state, &credential)?;
    require(&caller, AGENTS_RUN, "starting an agent run")?;
    let asked: StartRun = if body.iter().all(u8::is_ascii_whitespace) {
        StartRun::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| error(StatusCode::BAD_REQUEST, format!("invalid run: {e}")))?
    };
    let provenance = warden_core::principal::Provenance::Principal {
        reference: warden_core::principal::PrincipalRef::ApiKey {
            id: credential.id.clone(),
            owner: credential.principal.clone(),
        },
    };
    match state
        .runner
        .start(
            &agent,
            crate::agents::Trigger::Manual(provenance),
            asked.task.as_deref(),
        )
        .await
    {
        Ok(run) => Ok((StatusCode::CREATED, Json(run)).into_response()),
        Err(
            e
            @ (crate::agents::RunError::UnknownAgent(_) | crate::agents::RunError::UnknownTask(_)),
        ) => Err(error(StatusCode::NOT_FOUND, e.to_string())),
        Err(e @ crate::agents::RunError::NotAMember { .. }) => {
            Err(error(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))
        }
        Err(
            e @ (crate::agents::RunError::NoRunner(_) | crate::agents::RunError::AlreadyRunning),
        ) => Err(error(StatusCode::CONFLICT, e.to_string())),
        Err(e) => Err(error(StatusCode::SERVICE_UNAVAILABLE, e.to_string())),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct RunsQuery {
    agent: Option<String>,
    limit: Option<i64>,
}

async fn list_runs(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    axum::extract::Query(q): axum::extract::Query<RunsQuery>,
) -> Result<Response, ApiError> {
    let caller = own_authority(&state, &credential)?;
    require(&caller, RUNS_READ, "listing runs")?;
    let runs = state
        .gateway
        .store()
        .runs(q.agent.as_deref(), q.limit.unwrap_or(50))
        .await
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    Ok(Json(runs).into_response())
}

async fn describe_run(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response, ApiError> {
    let caller = own_authority(&state, &credential)?;
    require(&caller, RUNS_READ, "reading runs")?;
    match state.gateway.store().describe_run(&id).await {
        Ok(Some(run)) => Ok(Json(run).into_response()),
        Ok(None) => Err(error(StatusCode::NOT_FOUND, format!("no run `{id}`"))),
        Err(e) => Err(error(StatusCode::SERVICE_UNAVAILABLE, e.to_string())),
    }
}

/// An API error: a status and a one-line message, as `{"error": "…"}`.
#[derive(Debug)]
pub(crate) struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError(status, message.into())
}

fn own_authority(state: &AppState, credential: &Credential) -> Result<Arc<Authority>, ApiError> {
    state
        .gateway
        .authority(credential, None)
        .map_err(|e| error(StatusCode::FORBIDDEN, e.to_string()))
}

async fn whoami(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Response, ApiError> {
    let a = own_authority(&state, &credential)?;
    Ok(Json(warden_mcp::builtin::whoami(&a)).into_response())
}

/// `POST /api/v1/explain`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ExplainRequest {
    /// The tool's catalog name.
    tool: String,
    /// The call's arguments.
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    /// Explain for this user instead of the caller (needs `explain:any`).
    #[serde(default)]
    user: Option<String>,
    /// Explain for this service account instead of the caller (needs `explain:any`).
    #[serde(default)]
    service_account: Option<String>,
    /// Explain a run of this agent.
    #[serde(default)]
    agent: Option<String>,
    /// With `user`/`serviceAccount`: as if the token were bound to these projects.
    #[serde(default)]
    projects: Option<Vec<String>>,
}

async fn explain(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Result<Json<ExplainRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body.map_err(|e| error(StatusCode::BAD_REQUEST, e.body_text()))?;
    let caller = own_authority(&state, &credential)?;
    let subject = match (&req.user, &req.service_account) {
        (None, None) => None,
        (Some(u), None) => Some(Name::new(u).map(|name| Principal::User { name })),
        (None, Some(s)) => Some(Name::new(s).map(|name| Principal::ServiceAccount { name })),
        (Some(_), Some(_)) => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "give `user` or `serviceAccount`, not both",
            ));
        }
    };
    let reveal = caller.holds(EXPLAIN_ANY);
    let target_credential = match subject {
        None => credential.clone(),
        Some(Err(e)) => return Err(error(StatusCode::BAD_REQUEST, e.to_string())),
        Some(Ok(principal)) => {
            if !reveal {
                return Err(error(
                    StatusCode::FORBIDDEN,
                    format!("explaining another principal needs the `{EXPLAIN_ANY}` capability"),
                ));
            }
            let projects = match req
                .projects
                .as_ref()
                .map(|ps| ps.iter().map(|p| Name::new(p)).collect::<Result<_, _>>())
            {
                Some(Err(e)) => return Err(error(StatusCode::BAD_REQUEST, e.to_string())),
                Some(Ok(p)) => Some(p),
                None => None,
            };
            Credential {
                id: "explain".into(),
                kind: CredentialKind::ApiKey,
                principal,
                projects,
                scopes: None,
                created_at: Millis(0),
                expires_at: None,
                revoked_at: None,
                description: None,
            }
        }
    };
    let authority = state
        .gateway
        .authority(&target_credential, req.agent.as_deref())
        .map_err(|e| error(StatusCode::NOT_FOUND, e.to_string()))?;
    let snapshot = state.gateway.snapshot();
    let explanation = warden_core::explain::explain(
        &snapshot.policy,
        &snapshot.catalog,
        &authority,
        &req.tool,
        req.arguments.as_ref(),
        reveal,
    );
    Ok(Json(json!({
        "principal": authority.principal.to_string(),
        "mode": authority.mode,
        "agent": authority.agent,
        "explanation": explanation,
    }))
    .into_response())
}

async fn inventory(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Response, ApiError> {
    let caller = own_authority(&state, &credential)?;
    if !caller.holds(TOOLS_INVENTORY) {
        return Err(error(
            StatusCode::FORBIDDEN,
            format!("the tool inventory needs the `{TOOLS_INVENTORY}` capability"),
        ));
    }
    let snapshot = state.gateway.snapshot();
    // Typed rows, serialized once: a `Value` map per tool was ~20 MB of short-lived memory
    // for 10,000 tools, which the allocator then kept (PERF-3).
    #[derive(serde::Serialize)]
    struct Inventory<'a> {
        #[serde(rename = "policyRevision")]
        policy_revision: u64,
        tools: Vec<InventoryRow<'a>>,
    }
    let body = Inventory {
        policy_revision: snapshot.revision,
        tools: snapshot.catalog.iter().map(|t| inventory_row(t)).collect(),
    };
    Ok(Json(body).into_response())
}

/// One row of the mutation inventory (GOV-5). Fields in sorted order, as the JSON always had
/// them.
#[derive(Debug, serde::Serialize)]
pub struct InventoryRow<'a> {
    capability: Option<&'a warden_core::capability::Capability>,
    class: warden_core::tool::ToolClass,
    #[serde(rename = "classFrom")]
    class_from: warden_core::tool::ClassSource,
    governance: &'static str,
    project: Option<&'a warden_core::name::Name>,
    reason: Option<std::borrow::Cow<'a, str>>,
    risk: warden_core::tool::Risk,
    source: &'static str,
    tool: &'a str,
    upstream: &'a str,
}

/// One row of the mutation inventory (GOV-5).
pub fn inventory_row(t: &warden_core::tool::ToolDescriptor) -> InventoryRow<'_> {
    let (source, upstream) = match &t.source {
        ToolSource::Builtin { set, .. } => ("builtin", set.as_str()),
        ToolSource::Upstream { upstream, .. } => ("upstream", upstream.as_str()),
    };
    let (governance, reason) = match &t.governance {
        GovernanceStatus::Read => ("read", None),
        GovernanceStatus::Governed { by } => ("governed", Some(by.as_str().into())),
        GovernanceStatus::Ungoverned { reason } => ("ungoverned", Some(reason.as_str().into())),
        GovernanceStatus::Unmapped => (
            "ungoverned",
            Some("no ToolPolicy classifies this mutation: calls are refused (UNGOVERNED)".into()),
        ),
    };
    InventoryRow {
        capability: t.capability.as_ref(),
        class: t.class,
        class_from: t.class_source,
        governance,
        project: t.project.as_ref(),
        reason,
        risk: t.risk,
        source,
        tool: &t.name,
        upstream,
    }
}

pub(crate) async fn openapi() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        include_str!("../openapi.json"),
    )
        .into_response()
}
