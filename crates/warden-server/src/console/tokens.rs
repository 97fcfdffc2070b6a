//! Tokens (AUTH-1, AUTH-2): every credential without its secret; creating one for a user or
//! a service account, narrowed by project bindings and capability scopes, with a time to live
//! (its secret shown once, on the answer to the form); revoking one, which ends its sessions
//! and runs at their next request (RUN-8). The rules are `warden_control::tokens`'; this page
//! parses the form and renders the answer.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::Response;
use maud::html;
use serde::Deserialize;
use warden_control::Caller;
use warden_control::tokens::{self, TokenDraft};
use warden_core::config::Kind;
use warden_core::principal::{CredentialKind, Principal};

use super::caps::{Section, TOKENS_ANY, TOKENS_READ, TOKENS_WRITE};
use super::fmt;
use super::layout::{badge, closed, csrf_field, page, refused, see_other};
use super::signed_in::Signed;
use crate::state::AppState;

/// `GET /tokens`.
pub(crate) async fn list(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    if !(signed.holds(TOKENS_READ) || signed.holds(TOKENS_WRITE)) {
        return closed(&signed, Section::Tokens);
    }
    let writes = signed.holds(TOKENS_WRITE);
    let caller = Caller::Credential(signed.authority.clone());
    let credentials = match tokens::list(&state.control, &caller).await {
        Ok(c) => c,
        Err(e) => return refused(&signed, &e),
    };
    let now = state.control.now();
    // The owners offered: any with `tokens:any`, else one's own (the only one allowed).
    let mut owners: Vec<String> = Vec::new();
    if signed.holds(TOKENS_ANY) {
        let config = &state.gateway.snapshot().policy.config;
        owners.extend(config.of_kind(Kind::User).map(|r| r.key()));
        owners.extend(config.of_kind(Kind::ServiceAccount).map(|r| r.key()));
    } else if let Principal::User { name } | Principal::ServiceAccount { name } =
        &signed.credential.principal
    {
        owners.push(name.to_string());
    }
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
        p.muted { "A token is never wider than the credential that creates it, and is for your own principal unless you hold " code { "tokens:any" } "." }
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

fn list_of(text: &str) -> Vec<String> {
    text.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The token a form asks for, as the service takes it.
fn draft(form: &CreateForm) -> TokenDraft {
    let owner = Some(form.owner.trim().to_owned());
    let (user, service_account) = match form.owner_kind.as_str() {
        "service-account" => (None, owner),
        _ => (owner, None),
    };
    let text = |t: &str| Some(t.trim().to_owned()).filter(|t| !t.is_empty());
    TokenDraft {
        user,
        service_account,
        projects: list_of(&form.projects),
        scopes: list_of(&form.scopes),
        ttl: text(&form.ttl),
        description: text(&form.description),
    }
}

/// `POST /tokens`: the new token's secret, shown once on this answer (never stored).
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    axum::Form(form): axum::Form<CreateForm>,
) -> Response {
    let caller = Caller::Credential(signed.authority.clone());
    let policy = state.gateway.snapshot().policy.clone();
    let created = tokens::create(&state.control, &policy, &caller, &draft(&form)).await;
    let token = match created {
        Ok(t) => t,
        Err(e) => return refused(&signed, &e),
    };
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
    let caller = Caller::Credential(signed.authority.clone());
    match tokens::revoke(&state.control, &caller, &id).await {
        Ok(_) => {
            tracing::info!(token = %id, by = %signed.credential.principal, "token revoked in the console");
            if id == signed.credential.id {
                return see_other("/sign-in?ended=revoked");
            }
            signed.flash(format!("Token {id} revoked."));
            see_other("/tokens")
        }
        Err(e) => refused(&signed, &e),
    }
}
