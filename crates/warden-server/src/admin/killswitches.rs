//! Kill switches over the API: pull, list, release — `warden kill` and
//! `warden delete killswitch KEY`. A kill switch is a `KillSwitch` resource, so pulling one is
//! an apply with the same validation; it takes effect on this server before the answer and on
//! every other replica within a second (RUN-8, STORE-1b).

use std::borrow::Cow;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use warden_control::{Caller, killswitches};
use warden_core::config::{KillSwitchSpec, Resource, parse_documents};
use warden_mcp::Authenticated;

use super::access::own_authority;
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A kill switch to pull: a `KillSwitch` resource without its `kind`.
#[derive(Debug, Deserialize, ToSchema)]
#[expect(
    dead_code,
    reason = "documents the body; it is read as a KillSwitch resource"
)]
pub(crate) struct PullKillSwitch {
    /// Its key; by default the scope (`tool:ledger__refund`, `all`, …).
    name: Option<String>,
    /// What is frozen: `{"all": true}`, `{"project": P}`, `{"agent": A}`, `{"tool": T}` (a
    /// catalog name or glob) or `{"principal": {"user": U}}` / `{"principal":
    /// {"serviceAccount": S}}`.
    #[schema(schema_with = super::openapi::kill_scope_ref)]
    scope: Value,
    /// Why: shown to operators and in the denial message.
    reason: String,
}

/// A pulled kill switch.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct KillSwitch {
    /// Its key: what releases it (`DELETE /api/v1/killswitches/{key}`).
    key: String,
    /// The scope as written (`tool:ledger__refund`, `project:payments`, `all`, …).
    scope: String,
    /// Why.
    reason: String,
    /// The resource, as configured.
    #[schema(schema_with = super::openapi::resource_ref)]
    resource: Value,
    /// The configuration's revision after pulling it (only in the answer of a pull).
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<u64>,
}

fn view(spec: &KillSwitchSpec, revision: Option<u64>) -> KillSwitch {
    let resource = Resource::KillSwitch(spec.clone());
    KillSwitch {
        key: resource.key(),
        scope: spec.scope.to_string(),
        reason: spec.reason.clone(),
        resource: serde_json::to_value(super::resources::ResourceDoc(Cow::Borrowed(&resource)))
            .unwrap_or_default(),
        revision,
    }
}

/// Pulls a kill switch: every call in its scope is refused (`KILL_SWITCH`) from the next
/// call on, of runs and sessions already open too.
#[utoipa::path(post, path = "/killswitches", operation_id = "pullKillSwitch", tag = "killswitches",
    request_body = PullKillSwitch,
    responses(
        (status = 201, description = "pulled", body = KillSwitch),
        (status = 200, description = "a kill switch with this key was there and is replaced", body = KillSwitch),
        (status = 400, description = "a malformed kill switch, naming the field", body = ErrorBody),
        (status = 403, description = "without `killswitches:write`", body = ErrorBody),
        (status = 422, description = "refused by the configuration (an unknown project, …)", body = ErrorBody),
    ))]
pub(crate) async fn pull(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<KillSwitch>), ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    killswitches::may_pull(&caller)?;
    let body = body?;
    let mut value: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::invalid(format!("the body is not JSON: {e}")))?;
    let Some(fields) = value.as_object_mut() else {
        return Err(ApiError::invalid(
            "the body must be an object with `scope` and `reason`",
        ));
    };
    if fields.contains_key("kind") {
        return Err(ApiError::invalid(
            "`kind`: not a field of a kill switch (it is always `KillSwitch`)",
        ));
    }
    fields.insert("kind".into(), Value::String("KillSwitch".into()));
    let located = parse_documents("body", &value.to_string())
        .map_err(|e| ApiError::config(StatusCode::BAD_REQUEST, e))?;
    let Some(Resource::KillSwitch(spec)) = located.first().map(|l| l.resource.clone()) else {
        return Err(ApiError::invalid("the body holds no kill switch"));
    };
    let pulled = killswitches::pull(&state.control, &caller, spec.clone()).await?;
    tracing::info!(key = %pulled.key, by = %credential.principal, "kill switch pulled over the admin API");
    let status = if pulled.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(view(&spec, Some(pulled.revision)))))
}

/// The kill switches pulled now.
#[utoipa::path(get, path = "/killswitches", operation_id = "listKillSwitches", tag = "killswitches",
    responses(
        (status = 200, description = "every pulled kill switch, by key", body = Vec<KillSwitch>),
        (status = 403, description = "without `config:read`", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<Vec<KillSwitch>>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let pulled = killswitches::list(&state.control, &caller).await?;
    Ok(Json(pulled.iter().map(|k| view(k, None)).collect()))
}

/// A released kill switch.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Released {
    /// Its key.
    key: String,
    /// The configuration's revision after releasing it.
    revision: u64,
}

/// Releases a kill switch.
#[utoipa::path(delete, path = "/killswitches/{key}", operation_id = "releaseKillSwitch", tag = "killswitches",
    params(("key" = String, Path, description = "the kill switch's key (`tool:ledger__refund`, `all`, or its name)")),
    responses(
        (status = 200, description = "released", body = Released),
        (status = 403, description = "without `killswitches:write`", body = ErrorBody),
        (status = 404, description = "no kill switch with this key", body = ErrorBody),
    ))]
pub(crate) async fn release(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(key): Path<String>,
) -> Result<Json<Released>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let revision = killswitches::release(&state.control, &caller, &key).await?;
    tracing::info!(key = %key, by = %credential.principal, "kill switch released over the admin API");
    Ok(Json(Released { key, revision }))
}
