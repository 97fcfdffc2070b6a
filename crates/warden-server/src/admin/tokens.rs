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
use warden_control::tokens::{self, Token, TokenDraft};
use warden_mcp::Authenticated;

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
    let policy = state.gateway.snapshot().policy.clone();
    let token = tokens::create(&state.control, &policy, &caller, &draft).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedToken {
            token: Token::of(&token.credential, state.control.now()),
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
    let credentials = tokens::list(&state.control, &caller).await?;
    let now = state.control.now();
    Ok(Json(
        credentials.iter().map(|c| Token::of(c, now)).collect(),
    ))
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
