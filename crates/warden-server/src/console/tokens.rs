//! Tokens (AUTH-1, AUTH-2): every credential without its secret; creating one for a user or
//! a service account, narrowed by project bindings and capability scopes, with a time to live
//! (its secret shown once, on the answer to the form); revoking one, which ends its sessions
//! and runs at their next request (RUN-8).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use maud::html;
use serde::Deserialize;
use warden_core::authority::Authority;
use warden_core::capability::{Capability, CapabilitySet, RUN_PROJECTS, validate_capability};
use warden_core::config::Kind;
use warden_core::name::Name;
use warden_core::principal::{Credential, CredentialKind, Principal};
use warden_store::TokenRequest;

use super::caps::{Section, TOKENS_READ, TOKENS_WRITE};
use super::fmt;
use super::layout::{badge, closed, csrf_field, page, refusal, see_other};
use super::session::Signed;
use crate::state::AppState;

fn actor(signed: &Signed) -> String {
    format!("console:{}", signed.credential.principal)
}

/// `GET /tokens`.
pub(crate) async fn list(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    if !(signed.holds(TOKENS_READ) || signed.holds(TOKENS_WRITE)) {
        return closed(&signed, Section::Tokens);
    }
    let writes = signed.holds(TOKENS_WRITE);
    let credentials = match state.gateway.store().credentials().await {
        Ok(c) => c,
        Err(e) => return refusal(&signed, StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let now = fmt::now();
    let config = &state.gateway.snapshot().policy.config;
    let mut owners: Vec<String> = config.of_kind(Kind::User).map(|r| r.key()).collect();
    owners.extend(config.of_kind(Kind::ServiceAccount).map(|r| r.key()));
    let body = html! {
        @if writes {
        h2 { "Create a token" }
        form.stack #create-token method="post" action="/tokens" {
            (csrf_field(&signed))
            label { "Owner " select name="owner_kind" {
                option value="user" { "user" }
                option value="service-account" { "service account" }
            } input type="text" name="owner" required list="token-owners" placeholder="alice"; }
            datalist #token-owners { @for o in &owners { option value=(o) {} } }
            label { "Project bindings " input type="text" name="projects" placeholder="blank: all of the owner's projects; or payments, infra"; }
            label { "Scopes " input type="text" name="scopes" placeholder="blank: all of the owner's capabilities; or run:projects:payments, approvals:decide"; }
            label { "Time to live " input type="text" name="ttl" placeholder="blank: no expiry; or 30d, 12h"; }
            label { "Description " input type="text" name="description" maxlength="200"; }
            button type="submit" { "Create" }
        }
        p.muted { "A token is never wider than the credential that creates it." }
        }
        h2 { "Tokens" }
        table.grid.compact #tokens {
            thead { tr { th { "Id" } th { "Owner" } th { "Bindings" } th { "Scopes" } th { "Created" } th { "Expires" } th { "State" } th { "Description" } th {} } }
            tbody {
                @for c in credentials.iter().rev() {
                    @let usable = c.check_usable(now).is_ok();
                    tr data-token=(c.id) {
                        td { code { (c.id) } @if c.kind == CredentialKind::Run { " " span.badge.plain { "run" } } }
                        td { (c.principal) }
                        td { @match &c.projects { Some(p) => { @for n in p { code { (n) } " " } }, None => span.muted { "all" } } }
                        td { @match &c.scopes { Some(s) => code { (serde_json::to_string(s).unwrap_or_default()) }, None => span.muted { "all" } } }
                        td.nowrap { (fmt::time(c.created_at.0)) }
                        td.nowrap { (c.expires_at.map(|e| fmt::time(e.0)).unwrap_or_else(|| "never".into())) }
                        td { @if c.revoked_at.is_some() { (badge("revoked")) } @else if !usable { (badge("expired")) } @else { (badge("ok")) } }
                        td { (c.description.as_deref().unwrap_or("")) }
                        td { @if writes && c.revoked_at.is_none() && c.kind == CredentialKind::ApiKey {
                            form method="post" action={ "/tokens/" (fmt::encode(&c.id)) "/revoke" } data-confirm="Revoke this token? Its sessions end at once." {
                                (csrf_field(&signed))
                                button.bad type="submit" { "Revoke" }
                            }
                        } }
                    }
                }
            }
        }
    };
    page(&signed, Section::Tokens, "Tokens", body)
}

#[derive(Debug, Deserialize)]
pub(crate) struct CreateForm {
    owner_kind: String,
    owner: String,
    #[serde(default)]
    projects: String,
    #[serde(default)]
    scopes: String,
    #[serde(default)]
    ttl: String,
    #[serde(default)]
    description: String,
}

fn list_of(text: &str) -> Vec<&str> {
    text.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The token a form asks for, checked as `warden token create` checks it.
fn request(state: &AppState, form: &CreateForm) -> Result<TokenRequest, String> {
    let name = Name::new(form.owner.trim()).map_err(|e| format!("owner: {e}"))?;
    let config = &state.gateway.snapshot().policy.config;
    let (principal, kind) = match form.owner_kind.as_str() {
        "user" => (Principal::User { name: name.clone() }, Kind::User),
        "service-account" => (
            Principal::ServiceAccount { name: name.clone() },
            Kind::ServiceAccount,
        ),
        other => return Err(format!("`{}` is not an owner kind", fmt::cut(other, 32))),
    };
    if !config.contains(kind, name.as_str()) {
        return Err(format!("no {kind} named `{name}`; apply it first"));
    }
    let mut projects = Vec::new();
    for p in list_of(&form.projects) {
        let p = Name::new(p).map_err(|e| format!("projects: {e}"))?;
        if !config.contains(Kind::Project, p.as_str()) {
            return Err(format!("projects: no Project named `{p}`"));
        }
        projects.push(p);
    }
    let scopes = list_of(&form.scopes);
    for s in &scopes {
        validate_capability(s).map_err(|e| format!("scopes: {e}"))?;
    }
    let ttl = match form.ttl.trim() {
        "" => None,
        t => Some(warden_core::time::parse_duration(t).map_err(|e| format!("time to live: {e}"))?),
    };
    if ttl.is_some_and(|t| t.is_zero()) {
        return Err("time to live: must be greater than zero".into());
    }
    let description = form.description.trim();
    Ok(TokenRequest {
        principal,
        projects: (!projects.is_empty()).then_some(projects),
        scopes: (!scopes.is_empty())
            .then(|| CapabilitySet::from_patterns(scopes.iter().map(|s| Capability::new(*s)))),
        ttl,
        description: (!description.is_empty()).then(|| fmt::cut(description, 200)),
        kind: CredentialKind::ApiKey,
    })
}

/// Refuses a token that would hold what `caller` does not (AUTH-2), as the API does: a
/// capability the caller's authority does not cover, or a project whose tools it cannot use.
fn within(state: &AppState, caller: &Authority, request: &TokenRequest) -> Result<(), String> {
    let minted = Credential {
        id: "token-to-create".into(),
        kind: request.kind,
        principal: request.principal.clone(),
        projects: request.projects.clone().map(|p| p.into_iter().collect()),
        scopes: request.scopes.clone(),
        created_at: fmt::now(),
        expires_at: None,
        revoked_at: None,
        description: None,
        groups: Vec::new(),
    };
    let minted = state
        .gateway
        .authority(&minted, None)
        .map_err(|e| e.to_string())?;
    for held in minted.effective_capabilities() {
        let wider = match held.as_str().strip_prefix(RUN_PROJECTS) {
            Some(project) => !caller.projects.keys().any(|p| p.as_str() == project),
            None => !caller.holds(held.as_str()),
        };
        if wider {
            return Err(format!(
                "the token would hold `{held}`, which you do not: a token is never wider than the credential that creates it; narrow it with scopes or project bindings"
            ));
        }
    }
    Ok(())
}

/// `POST /tokens`: the new token's secret, shown once on this answer (never stored).
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    axum::Form(form): axum::Form<CreateForm>,
) -> Response {
    if !signed.holds(TOKENS_WRITE) {
        return refusal(
            &signed,
            StatusCode::FORBIDDEN,
            "creating a token needs the `tokens:write` capability",
        );
    }
    let request = match request(&state, &form) {
        Ok(r) => r,
        Err(e) => return refusal(&signed, StatusCode::BAD_REQUEST, &e),
    };
    if let Err(e) = within(&state, &signed.authority, &request) {
        return refusal(&signed, StatusCode::FORBIDDEN, &e);
    }
    let token = match state
        .gateway
        .store()
        .create_token(request, &actor(&signed), fmt::now())
        .await
    {
        Ok(t) => t,
        Err(e) => return refusal(&signed, StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    state.gateway.refresh().await;
    tracing::info!(token = %token.credential.id, owner = %token.credential.principal, by = %signed.credential.principal, "token created in the console");
    let body = html! {
        p.flash role="status" { "Token " code { (token.credential.id) } " created for " (token.credential.principal) "." }
        p { "Copy its secret now: it is shown this once and never stored." }
        pre.secret #secret { (token.secret) }
        p { a href="/tokens" { "Back to the tokens" } }
    };
    let mut response = page(&signed, Section::Tokens, "New token", body);
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    response
}

/// `POST /tokens/{id}/revoke`.
pub(crate) async fn revoke(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
) -> Response {
    if !signed.holds(TOKENS_WRITE) {
        return refusal(
            &signed,
            StatusCode::FORBIDDEN,
            "revoking a token needs the `tokens:write` capability",
        );
    }
    match state
        .gateway
        .store()
        .revoke_token(&id, &actor(&signed), fmt::now())
        .await
    {
        Ok(true) => {
            state.gateway.refresh().await;
            tracing::info!(token = %id, by = %signed.credential.principal, "token revoked in the console");
            if id == signed.credential.id {
                return see_other("/sign-in?ended=revoked");
            }
            signed.flash(format!("Token {id} revoked."));
            see_other("/tokens")
        }
        Ok(false) => refusal(
            &signed,
            StatusCode::NOT_FOUND,
            &format!("no token `{}`", fmt::cut(&id, 64)),
        ),
        Err(e) => refusal(&signed, StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}
