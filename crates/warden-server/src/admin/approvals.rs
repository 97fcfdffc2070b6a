//! Approvals over the API (APR-2..APR-7): list, read and decide parked calls, with the
//! arguments the decision is about — the approval keeps them to execute — masked exactly as
//! the audit trail masks them (AUD-3): what the tool's ToolPolicy keeps (`audit.arguments`),
//! never a value its schema marks secret.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use warden_control::{Caller, approvals};
use warden_core::approval::ApprovalStatus;
use warden_core::audit::{keep, redact};
use warden_core::principal::Credential;
use warden_core::tool::Catalog;
use warden_mcp::Authenticated;
use warden_mcp::gateway::{DecideError, Verb};
use warden_store::Approval;

use super::access::{APPROVALS_DECIDE, caller_holding, own_authority};
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A parked call: an approval or a staged action.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApprovalView {
    /// `apr_…`.
    id: String,
    /// `approval` (waits for a decision) or `staged` (runs after a veto window).
    kind: &'static str,
    /// `pending`, `staged`, `approved`, `executing`, `executed`, `rejected`, `vetoed`,
    /// `expired` or `failed`.
    status: &'static str,
    /// The run it was requested in.
    run_id: String,
    /// The call that parked it.
    call_id: String,
    /// The tool.
    tool: String,
    /// The tool's project.
    project: Option<String>,
    /// The arguments to decide on, masked as the audit trail masks them; `null` once the
    /// action is done, or when the tool's policy keeps only their hash.
    #[schema(value_type = Option<Object>)]
    arguments: Option<Value>,
    /// SHA-256 of the canonical arguments: the approval is bound to exactly these (APR-2).
    args_hash: String,
    /// Who asked, by reference (APR-3).
    #[schema(value_type = Option<Object>)]
    requested_by: Option<Value>,
    /// The requester, for display.
    principal: String,
    /// The agent of the run.
    agent: Option<String>,
    /// The policy version in force when it was parked.
    policy_revision: i64,
    /// The rule that parked it.
    rule: String,
    /// When it was parked (ms).
    created_at: i64,
    /// An approval's expiry; a staged action's execution time (ms).
    due_at: i64,
    /// The decider, by reference.
    #[schema(value_type = Option<Object>)]
    decided_by: Option<Value>,
    /// When it was decided (ms).
    decided_at: Option<i64>,
    /// The decider's reason.
    reason: Option<String>,
    /// When its execution was claimed (ms).
    claimed_at: Option<i64>,
    /// When it ended (ms).
    finished_at: Option<i64>,
    /// The denial code of a refused or failed action.
    outcome_code: Option<&'static str>,
    /// What happened, for people.
    outcome_message: Option<String>,
    /// The executed action's result, for the requester to fetch (APR-7).
    #[schema(value_type = Option<Object>)]
    result: Option<Value>,
    /// The rule whose `selfApproval: deny` keeps its requester from deciding it (APR-8).
    self_denied_by: Option<String>,
    /// How many distinct deciders approve it before it runs.
    deciders: i64,
    /// Who approved it so far.
    approvers: Vec<String>,
}

/// A JSON column as JSON, or as the string it is when it is not JSON.
fn json(text: Option<String>) -> Option<Value> {
    text.map(|t| serde_json::from_str(&t).unwrap_or(Value::String(t)))
}

/// What the audit trail keeps of the arguments of a call of `tool`.
fn masked(catalog: &Catalog, tool: &str, args: Option<&str>) -> Option<Value> {
    let args: Map<String, Value> = serde_json::from_str(args?).ok()?;
    let kept = match catalog.get(tool) {
        Some(t) => keep(Some(&args), t.audit_arguments, &t.secret_arguments),
        // A tool gone from the catalog since: the redacted copy, as for an unknown name.
        None => redact(Some(&args)),
    };
    (!kept.is_null()).then_some(kept)
}

fn view(a: Approval, catalog: &Catalog) -> ApprovalView {
    let Approval {
        id,
        kind,
        status,
        run_id,
        call_id,
        tool,
        project,
        args,
        args_hash,
        requested_by,
        principal,
        agent,
        policy_revision,
        rule,
        created_at,
        due_at,
        decided_by,
        decided_at,
        reason,
        claimed_at,
        finished_at,
        outcome_code,
        outcome_message,
        result,
        self_denied_by,
        deciders,
        approvers,
    } = a;
    ApprovalView {
        arguments: masked(catalog, &tool, args.as_deref()),
        id,
        kind: kind.as_str(),
        status: status.as_str(),
        run_id,
        call_id,
        tool,
        project,
        args_hash,
        requested_by: json(requested_by),
        principal,
        agent,
        policy_revision,
        rule,
        created_at,
        due_at,
        decided_by: json(decided_by),
        decided_at,
        reason,
        claimed_at,
        finished_at,
        outcome_code: outcome_code.map(|c| c.as_str()),
        outcome_message,
        result: json(result),
        self_denied_by,
        deciders,
        approvers,
    }
}

/// `?status=pending,staged&limit=N`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ApprovalsQuery {
    /// Only these statuses, comma-separated.
    status: Option<String>,
    /// At most this many (default 100).
    limit: Option<i64>,
}

/// Parked calls, oldest first: every one with `approvals:read` or `approvals:decide`, else
/// the caller's principal's own in the projects the credential may use (docs/approvals.md).
#[utoipa::path(get, path = "/approvals", operation_id = "listApprovals", tag = "approvals",
    params(ApprovalsQuery),
    responses(
        (status = 200, description = "parked calls, oldest first", body = Vec<ApprovalView>),
        (status = 400, description = "an unknown status", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    query: Result<Query<ApprovalsQuery>, QueryRejection>,
) -> Result<Json<Vec<ApprovalView>>, ApiError> {
    let Query(q) = query?;
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
                        ApiError::invalid(format!(
                            "`status`: `{}` is not an approval status; use one of {}",
                            one.chars().take(64).collect::<String>(),
                            known.join(", ")
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    let caller = Caller::Credential(caller);
    let approvals = approvals::list(&state.control, &caller, status, q.limit).await?;
    let catalog = &state.gateway.snapshot().catalog;
    Ok(Json(
        approvals.into_iter().map(|a| view(a, catalog)).collect(),
    ))
}

/// One parked call, with its outcome once executed (APR-7).
#[utoipa::path(get, path = "/approvals/{id}", operation_id = "getApproval", tag = "approvals",
    params(("id" = String, Path, description = "the approval (`apr_…`)")),
    responses(
        (status = 200, description = "the approval", body = ApprovalView),
        (status = 404, description = "no such approval, or someone else's without `approvals:read`", body = ErrorBody),
    ))]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<ApprovalView>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let approval = approvals::get(&state.control, &caller, &id).await?;
    Ok(Json(view(approval, &state.gateway.snapshot().catalog)))
}

/// The optional body of a decision.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Decision {
    /// Why, for the audit trail and the requester.
    #[serde(default)]
    reason: Option<String>,
}

async fn decide(
    state: &AppState,
    credential: &Credential,
    id: &str,
    verb: Verb,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ApprovalView>, ApiError> {
    caller_holding(state, credential, APPROVALS_DECIDE, "deciding approvals")?;
    let body = body?;
    let decision: Decision = if body.iter().all(u8::is_ascii_whitespace) {
        Decision::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid(format!("the body is not a decision: {e}")))?
    };
    match state
        .gateway
        .decide_approval(id, credential, verb, decision.reason)
        .await
    {
        Ok(a) => Ok(Json(view(a, &state.gateway.snapshot().catalog))),
        Err(e @ DecideError::NotFound(_)) => Err(ApiError::not_found(e.to_string())),
        Err(e @ DecideError::Forbidden(_)) => Err(ApiError::forbidden(e.to_string())),
        Err(e @ DecideError::Conflict(_)) => Err(ApiError::conflict(e.to_string())),
        Err(e @ DecideError::Store(_)) => Err(ApiError::unavailable(e.to_string())),
    }
}

/// Approves a parked call: it executes once, with the intersection of the requester's and
/// the decider's authority (APR-4, APR-6).
#[utoipa::path(post, path = "/approvals/{id}/approve", operation_id = "approveApproval", tag = "approvals",
    params(("id" = String, Path, description = "the approval (`apr_…`)")),
    request_body(content = Option<Decision>, description = "optional: the reason"),
    responses(
        (status = 200, description = "decided (and, for an approval, executed)", body = ApprovalView),
        (status = 403, description = "without `approvals:decide`, or a scope narrower than the action's", body = ErrorBody),
        (status = 404, description = "no such approval", body = ErrorBody),
        (status = 409, description = "already decided, expired or done", body = ErrorBody),
    ))]
pub(crate) async fn approve(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ApprovalView>, ApiError> {
    decide(&state, &credential, &id, Verb::Approve, body).await
}

/// Rejects a parked call: it never executes.
#[utoipa::path(post, path = "/approvals/{id}/reject", operation_id = "rejectApproval", tag = "approvals",
    params(("id" = String, Path, description = "the approval (`apr_…`)")),
    request_body(content = Option<Decision>, description = "optional: the reason"),
    responses(
        (status = 200, description = "rejected", body = ApprovalView),
        (status = 403, description = "without `approvals:decide`, or a scope narrower than the action's", body = ErrorBody),
        (status = 404, description = "no such approval", body = ErrorBody),
        (status = 409, description = "already decided, expired or done", body = ErrorBody),
    ))]
pub(crate) async fn reject(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ApprovalView>, ApiError> {
    decide(&state, &credential, &id, Verb::Reject, body).await
}

/// Vetoes a staged action within its veto window (APR-1 L3): it never executes.
#[utoipa::path(post, path = "/approvals/{id}/veto", operation_id = "vetoApproval", tag = "approvals",
    params(("id" = String, Path, description = "the staged action (`apr_…`)")),
    request_body(content = Option<Decision>, description = "optional: the reason"),
    responses(
        (status = 200, description = "vetoed", body = ApprovalView),
        (status = 403, description = "without `approvals:decide`, or a scope narrower than the action's", body = ErrorBody),
        (status = 404, description = "no such approval", body = ErrorBody),
        (status = 409, description = "not staged, or its window has passed", body = ErrorBody),
    ))]
pub(crate) async fn veto(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ApprovalView>, ApiError> {
    decide(&state, &credential, &id, Verb::Veto, body).await
}
