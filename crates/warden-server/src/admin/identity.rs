//! Who the caller is and what it may do: `whoami`, `explain` (GOV-7) and the tool inventory
//! (GOV-5).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Extension, State};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use warden_control::Caller;
use warden_control::explain::{self, Explained, Question};
use warden_core::name::Name;
use warden_core::principal::Principal;
use warden_core::tool::{GovernanceStatus, ToolSource};
use warden_mcp::Authenticated;

use super::access::{TOOLS_INVENTORY, caller_holding, own_authority};
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A project and why the run has it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProjectReason {
    /// The project.
    project: String,
    /// Why.
    why: String,
}

/// The caller's principal, mode and effective scope with reasons: the answer of the
/// `warden__whoami` tool.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WhoAmI {
    /// `user:alice`, `serviceAccount:deploy-bot`, `agent:sre-bot/run_…`.
    principal: String,
    /// `caller`, `agent` or `service-account` (RUN-2).
    mode: String,
    /// The credential's public id.
    credential: Option<String>,
    /// The agent, for a run of an agent.
    agent: Option<String>,
    /// Projects whose tools the run may use.
    projects: Vec<ProjectReason>,
    /// Projects whose knowledge the run carries without their tools (RUN-5).
    knowledge_only: Vec<ProjectReason>,
    /// The capabilities held, as patterns (`owner ∩ scopes`).
    capabilities: Vec<String>,
    /// The credential's scopes, when it is narrowed by any.
    scopes: Option<Vec<String>>,
    /// Why the run has no tools at all, when it has none (RUN-4).
    tools_withheld: Option<String>,
}

/// The caller's authority.
#[utoipa::path(get, path = "/whoami", operation_id = "whoami", tag = "identity",
    responses(
        (status = 200, description = "the caller's authority", body = WhoAmI),
        (status = 403, description = "the credential's owner no longer exists", body = ErrorBody),
    ))]
pub(crate) async fn whoami(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<WhoAmI>, ApiError> {
    let authority = own_authority(&state, &credential)?;
    let answer = warden_mcp::builtin::whoami(&authority);
    serde_json::from_value(answer)
        .map(Json)
        .map_err(|e| ApiError::unavailable(format!("the authority cannot be shown: {e}")))
}

/// `POST /api/v1/explain`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ExplainRequest {
    /// The tool's catalog name.
    tool: String,
    /// The call's arguments.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
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

/// One step of an explanation, in GOV-2 order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ExplainStep {
    /// `resolve`, `kill-switch`, `validate`, `capability`, `tool-policy`, `write-budget`,
    /// `autonomy`.
    step: &'static str,
    /// `pass`, `deny`, `park`, `stage` or `limit`.
    outcome: &'static str,
    /// The rule, when one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<String>,
    /// Details for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

/// What `tools/list` would show and `tools/call` would decide.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Explanation {
    /// The tool asked about.
    tool: String,
    /// Whether `tools/list` shows it to this run.
    visible: bool,
    /// `executed`, `pending_approval` or `denied`.
    would: &'static str,
    /// The denial code, when denied (GOV-4).
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    /// The message the caller would get, when denied.
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    /// The rule that decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<String>,
    /// Every step evaluated, in GOV-2 order.
    steps: Vec<ExplainStep>,
    /// The policy version explained.
    policy_revision: u64,
}

impl From<warden_core::explain::Explanation> for Explanation {
    fn from(e: warden_core::explain::Explanation) -> Self {
        let warden_core::explain::Explanation {
            tool,
            visible,
            would,
            code,
            message,
            rule,
            steps,
            policy_revision,
        } = e;
        Self {
            tool,
            visible,
            would,
            code: code.map(|c| c.as_str()),
            message,
            rule,
            steps: steps
                .into_iter()
                .map(|s| {
                    let warden_core::explain::ExplainStep {
                        step,
                        outcome,
                        rule,
                        detail,
                    } = s;
                    ExplainStep {
                        step,
                        outcome,
                        rule,
                        detail,
                    }
                })
                .collect(),
            policy_revision,
        }
    }
}

/// The answer of explain: for whom, and the explanation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ExplainAnswer {
    /// The principal explained.
    principal: String,
    /// Its mode.
    mode: String,
    /// The agent of the run explained.
    agent: Option<String>,
    /// The explanation.
    explanation: Explanation,
}

/// What `tools/list` would show and `tools/call` would decide, with rule ids, without
/// executing or recording anything (GOV-7).
#[utoipa::path(post, path = "/explain", operation_id = "explain", tag = "identity",
    request_body = ExplainRequest,
    responses(
        (status = 200, description = "the explanation", body = ExplainAnswer),
        (status = 400, description = "a malformed request, naming the field", body = ErrorBody),
        (status = 403, description = "another principal without `explain:any`", body = ErrorBody),
        (status = 404, description = "no such agent or principal", body = ErrorBody),
    ))]
pub(crate) async fn explain(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Result<Json<ExplainRequest>, JsonRejection>,
) -> Result<Json<ExplainAnswer>, ApiError> {
    let Json(req) = body?;
    let caller = own_authority(&state, &credential)?;
    let subject = match (&req.user, &req.service_account) {
        (None, None) => None,
        (Some(u), None) => Some(
            Name::new(u)
                .map(|name| Principal::User { name })
                .map_err(|e| ApiError::invalid(format!("`user`: {e}"))),
        ),
        (None, Some(s)) => Some(
            Name::new(s)
                .map(|name| Principal::ServiceAccount { name })
                .map_err(|e| ApiError::invalid(format!("`serviceAccount`: {e}"))),
        ),
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "give `user` or `serviceAccount`, not both",
            ));
        }
    };
    let subject = subject.transpose()?;
    let snapshot = state.gateway.snapshot();
    let question = Question {
        subject: subject.as_ref().map(|p| (p, req.projects.as_deref())),
        agent: req.agent.as_deref(),
        tool: &req.tool,
        arguments: req.arguments.as_ref(),
        now: state.control.now(),
    };
    let Explained {
        authority,
        explanation,
    } = explain::explain(
        &snapshot.policy,
        &snapshot.catalog,
        &Caller::Credential(caller),
        &credential,
        question,
        |c, agent| state.gateway.authority(c, agent),
    )?;
    Ok(Json(ExplainAnswer {
        principal: authority.principal.to_string(),
        mode: authority.mode.to_string(),
        agent: authority.agent.as_ref().map(ToString::to_string),
        explanation: explanation.into(),
    }))
}

/// The mutation inventory (GOV-5): every tool with its class and governance.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Inventory<'a> {
    /// The policy version of the catalog.
    policy_revision: u64,
    /// Every tool of the catalog.
    tools: Vec<InventoryRow<'a>>,
}

/// Every tool of the catalog, with its class, capability, risk and governance status.
#[utoipa::path(get, path = "/tools/inventory", operation_id = "toolInventory", tag = "identity",
    responses(
        (status = 200, description = "the inventory", body = Inventory),
        (status = 403, description = "without `tools:inventory`", body = ErrorBody),
    ))]
pub(crate) async fn inventory(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse as _;
    caller_holding(&state, &credential, TOOLS_INVENTORY, "the tool inventory")?;
    let snapshot = state.gateway.snapshot();
    // Typed rows, serialized once: a `Value` map per tool was ~20 MB of short-lived memory
    // for 10,000 tools, which the allocator then kept (PERF-3).
    let body = Inventory {
        policy_revision: snapshot.revision,
        tools: snapshot.catalog.iter().map(|t| inventory_row(t)).collect(),
    };
    Ok(Json(body).into_response())
}

/// The upstreams of the live catalog and how each stands.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UpstreamHealth {
    /// Every configured upstream, by name.
    upstreams: Vec<UpstreamRow>,
}

/// How one upstream stands.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UpstreamRow {
    /// The upstream.
    name: String,
    /// Its project.
    project: String,
    /// `starting` (connecting the first time), `up` or `down` (a reconnection is scheduled).
    state: &'static str,
    /// The protocol version it was reached in, while up.
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<String>,
    /// Why it is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// Consecutive failures to connect, while down.
    #[serde(skip_serializing_if = "Option::is_none")]
    failures: Option<u32>,
    /// The tools it offered when last listed.
    tools: usize,
}

/// Every upstream with its state — up (and in which protocol), starting, or down and why —
/// as `/readyz` has it, for operators.
#[utoipa::path(get, path = "/tools/upstreams", operation_id = "upstreamHealth", tag = "identity",
    responses(
        (status = 200, description = "the upstreams", body = UpstreamHealth),
        (status = 403, description = "without `tools:inventory`", body = ErrorBody),
    ))]
pub(crate) async fn upstreams(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<UpstreamHealth>, ApiError> {
    use warden_mcp::upstream::UpstreamStatus;
    caller_holding(&state, &credential, TOOLS_INVENTORY, "the upstreams' state")?;
    let upstreams = state
        .gateway
        .upstreams()
        .all()
        .iter()
        .map(|u| {
            let mut row = UpstreamRow {
                name: u.spec.name.to_string(),
                project: u.spec.project.to_string(),
                state: "starting",
                protocol: None,
                reason: None,
                failures: None,
                tools: u.offer().tools.len(),
            };
            match u.status() {
                UpstreamStatus::Starting => {}
                UpstreamStatus::Up { protocol } => {
                    row.state = "up";
                    row.protocol = Some(protocol);
                }
                UpstreamStatus::Down { reason, failures } => {
                    row.state = "down";
                    row.reason = Some(reason);
                    row.failures = Some(failures);
                }
            }
            row
        })
        .collect();
    Ok(Json(UpstreamHealth { upstreams }))
}

/// One row of the mutation inventory (GOV-5). Fields in sorted order, as the JSON always had
/// them.
#[derive(Debug, Serialize, ToSchema)]
pub struct InventoryRow<'a> {
    /// The capability a call needs besides the project's `run:projects:<project>`.
    #[schema(value_type = Option<String>)]
    capability: Option<&'a warden_core::capability::Capability>,
    /// `read` or `mutation`.
    #[schema(value_type = String)]
    class: warden_core::tool::ToolClass,
    /// How the class was decided: `policy`, `annotations`, `default` or `builtin`.
    #[serde(rename = "classFrom")]
    #[schema(value_type = String)]
    class_from: warden_core::tool::ClassSource,
    /// `read`, `governed` or `ungoverned`.
    governance: &'static str,
    /// The tool's project.
    #[schema(value_type = Option<String>)]
    project: Option<&'a warden_core::name::Name>,
    /// What governs it, or why it is ungoverned.
    #[schema(value_type = Option<String>)]
    reason: Option<std::borrow::Cow<'a, str>>,
    /// `ordinary` or `dangerous`.
    #[schema(value_type = String)]
    risk: warden_core::tool::Risk,
    /// `builtin` or `upstream`.
    source: &'static str,
    /// The catalog name.
    tool: &'a str,
    /// The upstream or built-in tool set.
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
