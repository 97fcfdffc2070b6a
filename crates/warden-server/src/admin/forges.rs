//! Forges in the admin API (WORK-3): the repositories of a `GitProvider`, and importing them
//! into a workspace — `warden provider discover|import`, answered by `warden_control::forges`.
//! A provider itself is a resource (`/resources`); its CI reports come in at
//! `POST /hooks/git/{provider}`, outside this API.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use warden_control::{Caller, forges};
use warden_mcp::Authenticated;

use super::access::own_authority;
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A repository of a provider.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RepositoryDoc {
    /// Its name in a workspace once imported.
    name: String,
    /// Its URL.
    url: String,
    /// Why git could not read it, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

/// The repositories of a GitProvider: the bare repositories of its directory, or its
/// configured remote ones, each checked with `git ls-remote`.
#[utoipa::path(get, path = "/gitproviders/{name}/repositories", operation_id = "discoverRepositories", tag = "work",
    params(("name" = String, Path, description = "the GitProvider")),
    responses(
        (status = 200, description = "its repositories, by name", body = Vec<RepositoryDoc>),
        (status = 403, description = "without `config:read`", body = ErrorBody),
        (status = 404, description = "no such GitProvider", body = ErrorBody),
        (status = 409, description = "its directory cannot be listed", body = ErrorBody),
    ))]
pub(crate) async fn discover(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Json<Vec<RepositoryDoc>>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let found = forges::discover(&state.control, &caller, &name).await?;
    Ok(Json(
        found
            .into_iter()
            .map(|d| RepositoryDoc {
                name: d.name,
                url: d.url,
                problem: d.problem,
            })
            .collect(),
    ))
}

/// What to import.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ImportRequest {
    /// The workspace to add them to (of the provider's project).
    workspace: String,
    /// The repositories to add, by name; every one the provider has when left out.
    #[serde(default)]
    repositories: Vec<String>,
}

/// What an import did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ImportDoc {
    /// The repositories added, by name (none: the workspace had them all).
    added: Vec<String>,
    /// The configuration's revision after it.
    revision: u64,
}

/// Adds a GitProvider's repositories to a workspace of its project: an apply of that
/// workspace.
#[utoipa::path(post, path = "/gitproviders/{name}/import", operation_id = "importRepositories", tag = "work",
    params(("name" = String, Path, description = "the GitProvider")),
    request_body = ImportRequest,
    responses(
        (status = 200, description = "what was added", body = ImportDoc),
        (status = 400, description = "a malformed body", body = ErrorBody),
        (status = 403, description = "without `config:write`", body = ErrorBody),
        (status = 404, description = "no such GitProvider or workspace", body = ErrorBody),
        (status = 422, description = "a workspace of another project, a repository the provider does not have", body = ErrorBody),
    ))]
pub(crate) async fn import(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ImportDoc>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    warden_control::resources::may_write(&caller, "importing repositories")?;
    let body = body?;
    let request: ImportRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::invalid(format!("the body is not an import: {e}")))?;
    let imported = forges::import(
        &state.control,
        &caller,
        &name,
        &request.workspace,
        &request.repositories,
    )
    .await?;
    Ok(Json(ImportDoc {
        added: imported.added,
        revision: imported.applied.revision,
    }))
}
