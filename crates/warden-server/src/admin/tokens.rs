//! Tokens over the API (AUTH-1, AUTH-2): create (the secret in that answer only), list
//! (never a secret), revoke — `warden token create|list|revoke`. The rules are
//! `warden_control::tokens`'; this door parses and renders.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use warden_control::Caller;
use warden_control::tokens::{self, TokenDraft};
use warden_core::pipeline::Clock as _;
use warden_core::principal::Credential;
use warden_core::time::Millis;
use warden_mcp::Authenticated;
use warden_runtime::SystemClock;

use super::access::own_authority;
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// `POST /api/v1/tokens`: whom the token is for, and how it is narrowed.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct CreateToken {
    /// The owner, a User (give this or `serviceAccount`).
    user: Option<String>,
    /// The owner, a ServiceAccount (give this or `user`).
    service_account: Option<String>,
    /// Project bindings (none: all of the owner's projects).
    #[serde(default)]
    projects: Vec<String>,
    /// Capability scopes (none: all of the owner's capabilities).
    #[serde(default)]
    scopes: Vec<String>,
    /// Time to live (`30d`, `12h`); none: it does not expire.
    ttl: Option<String>,
    /// A note shown in listings.
    description: Option<String>,
}

/// A token, without its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Token {
    /// Its public id (`tok_…`): what revokes it.
    id: String,
    /// `api_key`, or `run` for a credential minted for one agent run.
    kind: &'static str,
    /// The owner (`user:alice`, `serviceAccount:deploy-bot`, `agent:sre-bot/run_…`).
    principal: String,
    /// Project bindings (none: all of the owner's projects).
    projects: Option<Vec<String>>,
    /// Capability scopes (none: all of the owner's capabilities).
    scopes: Option<Vec<String>>,
    /// When it was created (ms since the epoch).
    created_at: i64,
    /// When it expires (ms).
    expires_at: Option<i64>,
    /// When it was revoked (ms).
    revoked_at: Option<i64>,
    /// The note.
    description: Option<String>,
    /// `active`, `revoked` or `expired`.
    status: &'static str,
}

fn view(c: &Credential, now: Millis) -> Token {
    let Credential {
        id,
        kind,
        principal,
        projects,
        scopes,
        created_at,
        expires_at,
        revoked_at,
        description,
        groups: _,
    } = c;
    Token {
        id: id.clone(),
        kind: kind.as_str(),
        principal: principal.to_string(),
        projects: projects
            .as_ref()
            .map(|p| p.iter().map(ToString::to_string).collect()),
        scopes: scopes
            .as_ref()
            .map(|s| s.patterns().iter().map(|c| c.as_str().to_owned()).collect()),
        created_at: created_at.0,
        expires_at: expires_at.map(|m| m.0),
        revoked_at: revoked_at.map(|m| m.0),
        description: description.clone(),
        status: c.status(now),
    }
}

/// A token just created, with its secret: shown in this answer only, stored only as a hash.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CreatedToken {
    /// The token.
    token: Token,
    /// The secret (`wdn_…`).
    secret: String,
}

/// Creates a token. The secret is in this answer only.
#[utoipa::path(post, path = "/tokens", operation_id = "createToken", tag = "tokens",
    request_body = CreateToken,
    responses(
        (status = 201, description = "created; the secret is shown once", body = CreatedToken),
        (status = 400, description = "a malformed request, naming the field", body = ErrorBody),
        (status = 403, description = "without `tokens:write`; for another principal without `tokens:any`; or a token wider than the caller", body = ErrorBody),
        (status = 422, description = "an owner or project that is not configured", body = ErrorBody),
    ))]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Result<Json<CreateToken>, JsonRejection>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let Json(req) = body?;
    let draft = TokenDraft {
        user: req.user,
        service_account: req.service_account,
        projects: req.projects,
        scopes: req.scopes,
        ttl: req.ttl,
        description: req.description,
    };
    let now = SystemClock.now();
    let policy = state.gateway.snapshot().policy.clone();
    let token = tokens::create(&state.control, &policy, &caller, &draft).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedToken {
            token: view(&token.credential, now),
            secret: token.secret,
        }),
    ))
}

/// Every token, without secrets.
#[utoipa::path(get, path = "/tokens", operation_id = "listTokens", tag = "tokens",
    responses(
        (status = 200, description = "every token and run credential; with `tokens:write` alone, the caller's own principal's", body = Vec<Token>),
        (status = 403, description = "without `tokens:read` or `tokens:write`", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<Vec<Token>>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let now = SystemClock.now();
    let credentials = tokens::list(&state.control, &caller).await?;
    Ok(Json(credentials.iter().map(|c| view(c, now)).collect()))
}

/// A revoked token.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Revoked {
    /// The token's id.
    id: String,
}

/// Revokes a token: it is refused from its next use on, by sessions already open too
/// (RUN-8). Revoking twice keeps the first time.
#[utoipa::path(delete, path = "/tokens/{id}", operation_id = "revokeToken", tag = "tokens",
    params(("id" = String, Path, description = "the token's id (`tok_…`)")),
    responses(
        (status = 200, description = "revoked", body = Revoked),
        (status = 403, description = "without `tokens:write`, or another principal's token without `tokens:any`", body = ErrorBody),
        (status = 404, description = "no token with this id", body = ErrorBody),
    ))]
pub(crate) async fn revoke(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<Revoked>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    tokens::revoke(&state.control, &caller, &id).await?;
    Ok(Json(Revoked { id }))
}
