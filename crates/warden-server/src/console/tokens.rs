//! Tokens (AUTH-1, AUTH-2): every credential without its secret; creating one for a user or
//! a service account, narrowed by project bindings and capability scopes, with a time to live
//! (the form's answer redirects to the tokens page, which shows its secret once: reloading it
//! creates nothing and shows the secret no more); revoking one, which ends its sessions
//! and runs at their next request (RUN-8). The rules are `warden_control::tokens`'; this page
//! parses the form and renders the answer.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use maud::html;
use serde::Deserialize;
use warden_control::Caller;
use warden_control::tokens::{self, TokenDraft};
use warden_core::config::Kind;
use warden_core::principal::{CredentialKind, Principal};

use super::caps::{Section, TOKENS_ANY, TOKENS_READ, TOKENS_WRITE};
use super::fmt;
use super::layout::{
    FormError, badge, closed, csrf_field, form_error, page_with, refused, see_other,
};
use super::signed_in::{NewToken, Signed};
use crate::state::AppState;

/// `GET /tokens`.
pub(crate) async fn list(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    if !(signed.holds(TOKENS_READ) || signed.holds(TOKENS_WRITE)) {
        return closed(&signed, Section::Tokens);
    }
    render(&state, &signed, &CreateForm::default(), None, None).await
}

/// The page, its form filled with `typed` and showing `error` (a refused create), and the
/// secret of `created` (else of the token this session created last, if not shown yet).
async fn render(
    state: &AppState,
    signed: &Signed,
    typed: &CreateForm,
    error: Option<&FormError>,
    created: Option<NewToken>,
) -> Response {
    let writes = signed.holds(TOKENS_WRITE);
    let caller = Caller::Credential(signed.authority.clone());
    let credentials = match tokens::list(&state.control, &caller).await {
        Ok(c) => c,
        Err(e) => return refused(signed, &e),
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
    let new_token = match created {
        Some(t) => Some(t),
        None => signed.take_new_token().await,
    };
    let signed_in = signed.sessions.counts().await;
    let body = html! {
        @if let Some(t) = &new_token {
            div.created #created {
                p.flash role="status" { "Token " code { (t.id) } " created for " (t.principal) "." }
                p { "Copy its secret now: it is shown this once and never stored." }
                pre.secret #secret { (t.secret) }
            }
        }
        @if writes {
        h2 { "Create a token" }
        form.stack #create-token method="post" action="/tokens" {
            (csrf_field(signed))
            (form_error(error, None))
            label { "Owner " select name="owner_kind" {
                option value="user" { "user" }
                option value="service-account" selected[typed.owner_kind == "service-account"] { "service account" }
            } input type="text" name="owner" value=(typed.owner) required list="token-owners" placeholder="alice"; }
            (form_error(error, Some("owner")))
            datalist #token-owners { @for o in &owners { option value=(o) {} } }
            label { "Project bindings " input type="text" name="projects" value=(typed.projects) placeholder="blank: all of the owner's projects; or payments, infra"; }
            (form_error(error, Some("projects")))
            label { "Scopes " input type="text" name="scopes" value=(typed.scopes) placeholder="blank: all of the owner's capabilities; or run:projects:payments, approvals:decide"; }
            (form_error(error, Some("scopes")))
            label { "Time to live " input type="text" name="ttl" value=(typed.ttl) placeholder="blank: no expiry; or 30d, 12h"; }
            (form_error(error, Some("ttl")))
            label { "Description " input type="text" name="description" value=(typed.description) maxlength="200"; }
            (form_error(error, Some("description")))
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
                        td.long { (c.description.as_deref().unwrap_or("")) }
                        td { @if writes && c.revoked_at.is_none() && c.kind == CredentialKind::ApiKey {
                            form method="post" action={ "/tokens/" (fmt::encode(&c.id)) "/revoke" } data-confirm=(revoke_question(signed, c, &signed_in)) {
                                (csrf_field(signed))
                                button.bad type="submit" { "Revoke" }
                            }
                        } }
                    }
                }
            }
        }
    };
    let status = error.map_or(StatusCode::OK, |e| e.status);
    let mut response = page_with(status, signed, Section::Tokens, "Tokens", body);
    if new_token.is_some() {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("no-store"),
        );
    }
    response
}

/// What revoking `c` does, said before it is done.
fn revoke_question(
    signed: &Signed,
    c: &warden_core::principal::Credential,
    signed_in: &HashMap<String, u64>,
) -> String {
    if c.id == signed.credential.id {
        return format!(
            "This is the token you are signed in with ({}, {}). Revoking it signs you out at once, \
             and every client using it is refused. If it is your only admin token, create \
             another first: a lost one is recovered on the store with \
             warden token create --user admin --data-dir DIR. Revoke it?",
            c.id, c.principal
        );
    }
    let sessions = signed_in.get(&c.id).copied().unwrap_or(0);
    format!(
        "Revoke token {} of {}? Every client using it is refused from its next request, its \
         runs end, and {sessions} console session{} signed in with it end{}.",
        c.id,
        c.principal,
        if sessions == 1 { "" } else { "s" },
        if sessions == 1 { "s" } else { "" },
    )
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CreateForm {
    #[serde(default)]
    owner_kind: String,
    #[serde(default)]
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

/// The service's arguments (as the admin API names them) and the form's fields for them.
const FIELDS: &[(&str, &str)] = &[
    ("user", "owner"),
    ("serviceAccount", "owner"),
    ("projects", "projects"),
    ("scopes", "scopes"),
    ("ttl", "ttl"),
    ("description", "description"),
];

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

/// `POST /tokens`: creates the token and redirects to the tokens page, which shows its
/// secret once (post/redirect/get: a reload does not post again).
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
        Err(e) => {
            let e = FormError::refusal(&e, FIELDS);
            return render(&state, &signed, &form, Some(&e), None).await;
        }
    };
    tracing::info!(token = %token.credential.id, owner = %token.credential.principal, by = %signed.credential.principal, "token created in the console");
    let created = NewToken {
        id: token.credential.id.clone(),
        principal: token.credential.principal.to_string(),
        secret: token.secret,
    };
    if !signed.keep_new_token(&created).await {
        // Shown now rather than lost (the answer is not cached; a reload asks to post again).
        return render(&state, &signed, &CreateForm::default(), None, Some(created)).await;
    }
    see_other("/tokens")
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
            signed.flash(format!("Token {id} revoked.")).await;
            see_other("/tokens")
        }
        Err(e) => refused(&signed, &e),
    }
}
