//! Kill switches: the ones pulled, and a form to pull one on a scope (everything, a project,
//! an agent, a tool, a principal) or release it. Pulling applies a `KillSwitch` resource, as
//! `warden kill` does; the gateway is refreshed at once, so a connected client's next call is
//! refused `KILL_SWITCH` (and every other replica follows within a second, STORE-1b).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use serde::Deserialize;
use warden_control::{Caller, killswitches};
use warden_core::config::{KillScope, KillSwitchSpec, Kind, Resource};
use warden_core::name::Name;
use warden_core::principal::Subject;

use super::caps::{CONFIG_READ, KILLSWITCHES_WRITE, Section};
use super::fmt;
use super::layout::{FormError, closed, csrf_field, form_error, page_with, refused, see_other};
use super::signed_in::Signed;
use crate::state::AppState;

/// The scopes of the picker, as (value, label).
const SCOPES: [(&str, &str); 6] = [
    ("all", "Everything"),
    ("project", "A project"),
    ("agent", "An agent"),
    ("tool", "A tool (name or glob)"),
    ("user", "A user"),
    ("service-account", "A service account"),
];

fn open_to(signed: &Signed) -> bool {
    signed.holds(KILLSWITCHES_WRITE) || signed.holds(CONFIG_READ)
}

/// `GET /kill-switches`.
pub(crate) async fn list(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    if !open_to(&signed) {
        return closed(&signed, Section::KillSwitches);
    }
    render(&state, &signed, &PullForm::default(), None)
}

/// The page, its form filled with `typed` and showing `error` (a refused pull).
fn render(
    state: &AppState,
    signed: &Signed,
    typed: &PullForm,
    error: Option<&FormError>,
) -> Response {
    let snapshot = state.gateway.snapshot();
    let config = &snapshot.policy.config;
    let pulled: Vec<(String, &KillSwitchSpec)> = config
        .of_kind(Kind::KillSwitch)
        .filter_map(|r| match r {
            Resource::KillSwitch(k) => Some((r.key(), k)),
            _ => None,
        })
        .collect();
    let writes = signed.holds(KILLSWITCHES_WRITE);
    let mut targets: Vec<String> = Vec::new();
    targets.extend(snapshot.policy.projects().keys().map(ToString::to_string));
    targets.extend(snapshot.policy.agents().keys().map(ToString::to_string));
    targets.extend(snapshot.catalog.iter().map(|t| t.name.to_string()));
    targets.extend(config.of_kind(Kind::User).map(Resource::key));
    targets.extend(config.of_kind(Kind::ServiceAccount).map(Resource::key));
    targets.sort();
    targets.dedup();
    let body = html! {
        table.grid #kill-switches {
            thead { tr { th { "Name" } th { "Scope" } th { "Reason" } th {} } }
            tbody {
                @if pulled.is_empty() { tr.empty { td colspan="4" { "No kill switch is pulled: everything runs." } } }
                @for (key, k) in &pulled {
                    tr.pulled data-kill=(key) {
                        td { code { (key) } }
                        td { span.badge.bad { (k.scope) } }
                        td.long { (k.reason) }
                        td { @if writes {
                            form method="post" action={ "/kill-switches/" (fmt::encode(key)) "/release" } data-confirm={ "Release kill switch " (key) " (" (k.scope) ")? Matching calls run again at once, on every replica." } {
                                (csrf_field(signed))
                                button type="submit" { "Release" }
                            }
                        } }
                    }
                }
            }
        }
        @if writes {
            h2 { "Pull a kill switch" }
            form.stack #pull method="post" action="/kill-switches" data-confirm-kill {
                (csrf_field(signed))
                (form_error(error, None))
                label { "Scope " select name="scope" {
                    @for (value, label) in SCOPES { option value=(value) selected[typed.scope == value] { (label) } }
                } }
                (form_error(error, Some("scope")))
                label { "Which " input type="text" name="target" value=(typed.target) list="kill-targets" placeholder="the project, agent, tool or principal (not for everything)"; }
                (form_error(error, Some("target")))
                datalist #kill-targets { @for t in &targets { option value=(t) {} } }
                label { "Reason " input type="text" name="reason" value=(typed.reason) required maxlength="500" placeholder="incident 4411"; }
                (form_error(error, Some("reason")))
                label { "Name " input type="text" name="name" value=(typed.name) placeholder="optional; by default the scope"; }
                (form_error(error, Some("name")))
                button.bad type="submit" { "Pull" }
            }
            p.muted { "A pulled switch refuses every matching call with " code { "KILL_SWITCH" } " before anything is recorded, on every replica." }
        }
    };
    let status = error.map_or(StatusCode::OK, |e| e.status);
    page_with(status, signed, Section::KillSwitches, "Kill switches", body)
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct PullForm {
    #[serde(default)]
    scope: String,
    #[serde(default)]
    target: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    name: String,
}

fn name(what: &str, value: &str) -> Result<Name, String> {
    Name::new(value.trim()).map_err(|e| format!("{what}: {e}"))
}

fn scope_of(form: &PullForm) -> Result<KillScope, FormError> {
    let target = form.target.trim();
    let bad = |field, message| FormError::new(StatusCode::BAD_REQUEST, Some(field), message);
    let named = |what: &str| name(what, target).map_err(|e| bad("target", e));
    if form.scope != "all" && target.is_empty() {
        return Err(bad(
            "target",
            "name what the switch freezes (or choose everything)".into(),
        ));
    }
    Ok(match form.scope.as_str() {
        "all" => KillScope::All(true),
        "project" => KillScope::Project(named("project")?),
        "agent" => KillScope::Agent(named("agent")?),
        "tool" => KillScope::Tool(target.to_owned()),
        "user" => KillScope::Principal(Subject::User(named("user")?)),
        "service-account" => {
            KillScope::Principal(Subject::ServiceAccount(named("service account")?))
        }
        other => {
            return Err(bad(
                "scope",
                format!("`{}` is not a scope", fmt::cut(other, 32)),
            ));
        }
    })
}

/// `POST /kill-switches`.
pub(crate) async fn pull(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    axum::Form(form): axum::Form<PullForm>,
) -> Response {
    let caller = Caller::Credential(signed.authority.clone());
    if let Err(e) = killswitches::may_pull(&caller) {
        return refused(&signed, &e);
    }
    let scope = match scope_of(&form) {
        Ok(s) => s,
        Err(e) => return render(&state, &signed, &form, Some(&e)),
    };
    let reason = form.reason.trim();
    if reason.is_empty() {
        let e = FormError::new(
            StatusCode::BAD_REQUEST,
            Some("reason"),
            "give a reason".into(),
        );
        return render(&state, &signed, &form, Some(&e));
    }
    let switch_name = match form.name.trim() {
        "" => None,
        n => match name("name", n) {
            Ok(n) => Some(n),
            Err(e) => {
                let e = FormError::new(StatusCode::BAD_REQUEST, Some("name"), e);
                return render(&state, &signed, &form, Some(&e));
            }
        },
    };
    let spec = KillSwitchSpec {
        name: switch_name,
        scope,
        reason: fmt::cut(reason, 500),
    };
    match killswitches::pull(&state.control, &caller, spec).await {
        Ok(pulled) => {
            tracing::warn!(kill_switch = %pulled.key, by = %signed.credential.principal, "kill switch pulled in the console");
            signed
                .flash(format!("Kill switch {} pulled.", pulled.key))
                .await;
            see_other("/kill-switches")
        }
        Err(e) => render(&state, &signed, &form, Some(&FormError::refusal(&e, &[]))),
    }
}

/// `POST /kill-switches/{key}/release`.
pub(crate) async fn release(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(key): Path<String>,
) -> Response {
    let caller = Caller::Credential(signed.authority.clone());
    match killswitches::release(&state.control, &caller, &key).await {
        Ok(_) => {
            tracing::warn!(kill_switch = %key, by = %signed.credential.principal, "kill switch released in the console");
            signed.flash(format!("Kill switch {key} released.")).await;
            see_other("/kill-switches")
        }
        Err(e) => refused(&signed, &e),
    }
}
