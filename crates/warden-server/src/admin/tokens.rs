//! Tokens over the API (AUTH-1, AUTH-2): create (the secret in that answer only), list
//! (never a secret), revoke — `warden token create|list|revoke`. A token is never wider than
//! the credential that creates it.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use warden_core::authority::Authority;
use warden_core::capability::{Capability, CapabilitySet, RUN_PROJECTS, validate_capability};
use warden_core::config::Kind;
use warden_core::name::Name;
use warden_core::pipeline::Clock as _;
use warden_core::principal::{Credential, CredentialKind, Principal};
use warden_core::time::Millis;
use warden_mcp::Authenticated;
use warden_mcp::clock::SystemClock;
use warden_store::TokenRequest;

use super::access::{TOKENS_READ, TOKENS_WRITE, actor, caller_holding};
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
    let status = if revoked_at.is_some() {
        "revoked"
    } else if expires_at.is_some_and(|e| e <= now) {
        "expired"
    } else {
        "active"
    };
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
        status,
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

/// Refuses a token that would hold what `caller` does not (AUTH-2): a capability pattern
/// the caller's authority does not cover, or a project whose tools the caller cannot use.
fn within(caller: &Authority, minted: &Authority) -> Result<(), ApiError> {
    for held in minted.effective_capabilities() {
        let wider = if let Some(project) = held.as_str().strip_prefix(RUN_PROJECTS) {
            !caller.projects.keys().any(|p| p.as_str() == project)
        } else {
            !caller.holds(held.as_str())
        };
        if wider {
            return Err(ApiError::forbidden(format!(
                "the token would hold `{held}`, which you do not: a token is never wider than the credential that creates it; narrow it with `scopes` or `projects`"
            )));
        }
    }
    Ok(())
}

/// Creates a token. The secret is in this answer only.
#[utoipa::path(post, path = "/tokens", operation_id = "createToken", tag = "tokens",
    request_body = CreateToken,
    responses(
        (status = 201, description = "created; the secret is shown once", body = CreatedToken),
        (status = 400, description = "a malformed request, naming the field", body = ErrorBody),
        (status = 403, description = "without `tokens:write`, or a token wider than the caller", body = ErrorBody),
        (status = 422, description = "an owner or project that is not configured", body = ErrorBody),
    ))]
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Result<Json<CreateToken>, JsonRejection>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    let caller = caller_holding(&state, &credential, TOKENS_WRITE, "creating tokens")?;
    let Json(req) = body?;
    let name = |field: &str, value: &str| {
        Name::new(value).map_err(|e| ApiError::invalid(format!("`{field}`: {e}")))
    };
    let (principal, kind) = match (&req.user, &req.service_account) {
        (Some(u), None) => (
            Principal::User {
                name: name("user", u)?,
            },
            Kind::User,
        ),
        (None, Some(s)) => (
            Principal::ServiceAccount {
                name: name("serviceAccount", s)?,
            },
            Kind::ServiceAccount,
        ),
        _ => {
            return Err(ApiError::invalid(
                "give exactly one of `user` or `serviceAccount`",
            ));
        }
    };
    let projects = req
        .projects
        .iter()
        .map(|p| name("projects", p))
        .collect::<Result<Vec<_>, _>>()?;
    for s in &req.scopes {
        validate_capability(s).map_err(|e| ApiError::invalid(format!("`scopes`: {e}")))?;
    }
    let ttl = req
        .ttl
        .as_deref()
        .map(warden_core::time::parse_duration)
        .transpose()
        .map_err(|e| ApiError::invalid(format!("`ttl`: {e}")))?;
    if ttl.is_some_and(|t| t.is_zero()) {
        return Err(ApiError::invalid("`ttl`: must be greater than zero"));
    }
    let policy = state.gateway.snapshot().policy.clone();
    let owner = match &principal {
        Principal::User { name } | Principal::ServiceAccount { name } => name,
        Principal::AgentRun { agent, .. } => agent,
    };
    if !policy.config.contains(kind, owner.as_str()) {
        let field = if kind == Kind::User {
            "user"
        } else {
            "serviceAccount"
        };
        return Err(ApiError::unprocessable(format!(
            "`{field}`: no {kind} named `{owner}`; apply it first"
        )));
    }
    for p in &projects {
        if !policy.config.contains(Kind::Project, p.as_str()) {
            return Err(ApiError::unprocessable(format!(
                "`projects`: no Project named `{p}`"
            )));
        }
    }
    let request = TokenRequest {
        principal,
        projects: (!projects.is_empty()).then_some(projects),
        scopes: (!req.scopes.is_empty())
            .then(|| CapabilitySet::from_patterns(req.scopes.iter().map(Capability::new))),
        ttl,
        description: req.description.clone(),
        kind: CredentialKind::ApiKey,
    };
    let now = SystemClock.now();
    let minted = Credential {
        id: "token-to-create".into(),
        kind: request.kind,
        principal: request.principal.clone(),
        projects: request.projects.clone().map(|p| p.into_iter().collect()),
        scopes: request.scopes.clone(),
        created_at: now,
        expires_at: None,
        revoked_at: None,
        description: None,
        groups: Vec::new(),
    };
    let minted = state
        .gateway
        .authority(&minted, None)
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    within(&caller, &minted)?;
    let token = state
        .gateway
        .store()
        .create_token(request, &actor(&credential), now)
        .await?;
    state.gateway.refresh().await;
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
        (status = 200, description = "every token and run credential", body = Vec<Token>),
        (status = 403, description = "without `tokens:read`", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<Vec<Token>>, ApiError> {
    caller_holding(&state, &credential, TOKENS_READ, "listing tokens")?;
    let now = SystemClock.now();
    let credentials = state.gateway.store().credentials().await?;
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
        (status = 403, description = "without `tokens:write`", body = ErrorBody),
        (status = 404, description = "no token with this id", body = ErrorBody),
    ))]
pub(crate) async fn revoke(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<Revoked>, ApiError> {
    caller_holding(&state, &credential, TOKENS_WRITE, "revoking tokens")?;
    let store = state.gateway.store();
    if !store
        .revoke_token(&id, &actor(&credential), SystemClock.now())
        .await?
    {
        return Err(ApiError::not_found(format!("no token with id `{id}`")));
    }
    state.gateway.refresh().await;
    Ok(Json(Revoked { id }))
}
