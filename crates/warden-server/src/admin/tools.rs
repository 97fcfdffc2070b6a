//! Changed tool definitions over the API (GOV-9): what awaits review, accepting and rejecting
//! it — `warden tools changes|accept|reject`. The rules are `warden_control::tools`'.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use warden_control::Caller;
use warden_control::tools::{self, Change, Decided, Verdict};
use warden_mcp::Authenticated;

use super::access::own_authority;
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A tool definition that differs from its pin.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolChange {
    /// The tool's catalog name.
    tool: String,
    /// Its upstream.
    upstream: String,
    /// The tool as the upstream names it.
    upstream_tool: String,
    /// The upstream's project.
    project: String,
    /// `changed`, `new` (appeared after the upstream's first pinning) or `rejected`.
    state: String,
    /// The accepted definition (name, title, description, schemas, annotations); `null` for a
    /// new tool.
    #[schema(value_type = Option<Object>)]
    pinned: Option<Value>,
    /// Its hash.
    pinned_hash: Option<String>,
    /// The definition the upstream offers now.
    #[schema(value_type = Object)]
    offered: Value,
    /// Its hash: what a decision names.
    offered_hash: String,
    /// When it was first seen (ms since the epoch).
    offered_at: i64,
    /// Who decided last.
    decided_by: Option<String>,
    /// When (ms since the epoch).
    decided_at: Option<i64>,
}

impl From<Change> for ToolChange {
    fn from(c: Change) -> Self {
        Self {
            tool: c.tool,
            upstream: c.upstream,
            upstream_tool: c.upstream_tool,
            project: c.project,
            state: c.state.to_owned(),
            pinned: c.pinned,
            pinned_hash: c.pinned_hash,
            offered: c.offered,
            offered_hash: c.offered_hash,
            offered_at: c.offered_at.0,
            decided_by: c.decided_by,
            decided_at: c.decided_at.map(|m| m.0),
        }
    }
}

/// Changed tool definitions.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ToolChanges {
    /// By tool name.
    items: Vec<ToolChange>,
}

/// A decided review.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ToolDecision {
    /// The tool's catalog name.
    tool: String,
    /// `pinned` after an accept (served again), `rejected` after a reject (held).
    state: String,
    /// The definition decided on.
    hash: String,
    /// The configuration's revision after it.
    revision: u64,
}

impl From<Decided> for ToolDecision {
    fn from(d: Decided) -> Self {
        Self {
            tool: d.tool,
            state: d.state.to_owned(),
            hash: d.hash,
            revision: d.revision,
        }
    }
}

/// The optional body of a review.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Review {
    /// The definition reviewed (`offeredHash`): refused with 409 if the tool changed again.
    #[serde(default)]
    hash: Option<String>,
}

/// The changed tool definitions held for review (or served under `pinning: warn`), in the
/// projects whose tools the caller may use.
#[utoipa::path(get, path = "/tools/changes", operation_id = "listToolChanges", tag = "tools",
    responses(
        (status = 200, description = "the changes", body = ToolChanges),
        (status = 403, description = "without `tools:review`", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<ToolChanges>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let items = tools::changes(&state.control, &caller).await?;
    Ok(Json(ToolChanges {
        items: items.into_iter().map(ToolChange::from).collect(),
    }))
}

/// One changed tool definition, with the pinned one beside it.
#[utoipa::path(get, path = "/tools/changes/{tool}", operation_id = "getToolChange", tag = "tools",
    params(("tool" = String, Path, description = "the tool's catalog name")),
    responses(
        (status = 200, description = "the change", body = ToolChange),
        (status = 403, description = "without `tools:review`", body = ErrorBody),
        (status = 404, description = "no change of that tool, or one in a project the caller may not use", body = ErrorBody),
    ))]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(tool): Path<String>,
) -> Result<Json<ToolChange>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    Ok(Json(
        tools::change(&state.control, &caller, &tool).await?.into(),
    ))
}

/// Accepts the definition a tool offers: it becomes the pin, and the tool is served again on
/// every replica.
#[utoipa::path(post, path = "/tools/changes/{tool}/accept", operation_id = "acceptToolChange", tag = "tools",
    params(("tool" = String, Path, description = "the tool's catalog name")),
    request_body(content = Option<Review>, description = "optional: the hash reviewed"),
    responses(
        (status = 200, description = "accepted", body = ToolDecision),
        (status = 403, description = "without `tools:review`", body = ErrorBody),
        (status = 404, description = "no change of that tool awaits review", body = ErrorBody),
        (status = 409, description = "the tool changed again since the hash reviewed", body = ErrorBody),
    ))]
pub(crate) async fn accept(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(tool): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ToolDecision>, ApiError> {
    decide(&state, &credential, &tool, Verdict::Accept, body).await
}

/// Rejects the definition a tool offers: the tool stays held until its upstream offers
/// another.
#[utoipa::path(post, path = "/tools/changes/{tool}/reject", operation_id = "rejectToolChange", tag = "tools",
    params(("tool" = String, Path, description = "the tool's catalog name")),
    request_body(content = Option<Review>, description = "optional: the hash reviewed"),
    responses(
        (status = 200, description = "rejected", body = ToolDecision),
        (status = 403, description = "without `tools:review`", body = ErrorBody),
        (status = 404, description = "no change of that tool awaits review", body = ErrorBody),
        (status = 409, description = "the tool changed again since the hash reviewed, or is rejected already", body = ErrorBody),
    ))]
pub(crate) async fn reject(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(tool): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ToolDecision>, ApiError> {
    decide(&state, &credential, &tool, Verdict::Reject, body).await
}

async fn decide(
    state: &AppState,
    credential: &warden_core::principal::Credential,
    tool: &str,
    verdict: Verdict,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ToolDecision>, ApiError> {
    let caller = Caller::Credential(own_authority(state, credential)?);
    let body = body?;
    let review: Review = if body.iter().all(u8::is_ascii_whitespace) {
        Review::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid(format!("the body is not a review: {e}")))?
    };
    let decided = tools::decide(
        &state.control,
        &caller,
        tool,
        verdict,
        review.hash.as_deref(),
    )
    .await?;
    tracing::info!(%tool, state = decided.state, by = %credential.principal, "tool definition reviewed over the admin API");
    Ok(Json(decided.into()))
}
