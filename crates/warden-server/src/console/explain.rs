//! Explain (GOV-7): what `tools/list` would show and what `tools/call` would decide for a
//! principal, an agent, a tool and arguments, step by step with the rules — from the same
//! functions the pipeline runs, executing and recording nothing. As in the API, explaining
//! another principal (and seeing the rules of tools hidden from it) needs `explain:any`.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value};
use warden_control::Caller;
use warden_control::explain::{self, Explained, Question};
use warden_core::name::Name;
use warden_core::principal::Principal;

use super::caps::{EXPLAIN_ANY, Section};
use super::layout::{FormError, badge, form_error, page_with};
use super::signed_in::Signed;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ExplainForm {
    #[serde(default)]
    tool: String,
    #[serde(default)]
    arguments: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    service_account: String,
    #[serde(default)]
    agent: String,
    #[serde(default)]
    projects: String,
}

fn some(text: &str) -> Option<&str> {
    let t = text.trim();
    (!t.is_empty()).then_some(t)
}

/// The principal explained, when another than the caller's own, and the projects its
/// credential is bound to.
type Subject = Option<(Principal, Option<Vec<String>>)>;

/// The principal explained: none (the caller's own credential), or the named one with the
/// given projects (as a token bound to them would be).
fn subject(form: &ExplainForm) -> Result<Subject, FormError> {
    let bad = |field, e: String| FormError::new(StatusCode::BAD_REQUEST, Some(field), e);
    let principal = match (some(&form.user), some(&form.service_account)) {
        (None, None) => return Ok(None),
        (Some(u), None) => Principal::User {
            name: Name::new(u).map_err(|e| bad("user", e.to_string()))?,
        },
        (None, Some(s)) => Principal::ServiceAccount {
            name: Name::new(s).map_err(|e| bad("service_account", e.to_string()))?,
        },
        (Some(_), Some(_)) => {
            return Err(bad(
                "service_account",
                "give a user or a service account, not both".into(),
            ));
        }
    };
    let projects = some(&form.projects).map(|list| {
        list.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()
    });
    Ok(Some((principal, projects)))
}

/// The explain service's arguments (as the admin API names them) → the form's fields.
const FIELDS: &[(&str, &str)] = &[
    ("user", "user"),
    ("serviceAccount", "service_account"),
    ("agent", "agent"),
    ("projects", "projects"),
];

fn answer(state: &AppState, signed: &Signed, form: &ExplainForm) -> Result<Markup, FormError> {
    let Some(tool) = some(&form.tool) else {
        return Ok(html! {});
    };
    let arguments: Option<Map<String, Value>> = match some(&form.arguments) {
        None => None,
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Some(m),
            Ok(_) => {
                return Err(FormError::new(
                    StatusCode::BAD_REQUEST,
                    Some("arguments"),
                    "the arguments must be a JSON object".into(),
                ));
            }
            Err(e) => {
                return Err(FormError::new(
                    StatusCode::BAD_REQUEST,
                    Some("arguments"),
                    format!("the arguments are not JSON: {e}"),
                ));
            }
        },
    };
    let subject = subject(form)?;
    let snapshot = state.gateway.snapshot();
    let question = Question {
        subject: subject
            .as_ref()
            .map(|(principal, projects)| (principal, projects.as_deref())),
        agent: some(&form.agent),
        tool,
        arguments: arguments.as_ref(),
        now: state.control.now(),
    };
    let Explained {
        authority,
        explanation: e,
    } = explain::explain(
        &snapshot.policy,
        &snapshot.catalog,
        &Caller::Credential(signed.authority.clone()),
        &signed.credential,
        question,
        |c, agent| state.gateway.authority(c, agent),
    )
    .map_err(|e| FormError::refusal(&e, FIELDS))?;
    Ok(html! {
        section.explanation #explanation data-would=(e.would) {
            h2 { "For " (authority.principal) @if let Some(a) = &authority.agent { ", a run of " (a) } " (" (authority.mode) " mode)" }
            dl.facts {
                dt { "tools/list" } dd { @if e.visible { (badge("pass")) " shows " } @else { (badge("deny")) " hides " } code { (e.tool) } }
                dt { "tools/call" } dd {
                    (badge(e.would))
                    @if let Some(c) = e.code { " " code { (c.as_str()) } }
                    @if let Some(r) = &e.rule { " by rule " code { (r) } }
                }
                @if let Some(m) = &e.message { dt { "Message" } dd { (m) } }
                dt { "Policy revision" } dd { (e.policy_revision) }
            }
            table.grid.compact {
                thead { tr { th { "Step" } th { "Outcome" } th { "Rule" } th { "Detail" } } }
                tbody {
                    @for s in &e.steps {
                        tr { td { (s.step) } td { (badge(s.outcome)) } td { @if let Some(r) = &s.rule { code { (r) } } } td.long { (s.detail.as_deref().unwrap_or("")) } }
                    }
                }
            }
            p.muted { "Nothing was executed or recorded." }
        }
    })
}

/// `GET /explain`.
pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Query(form): Query<ExplainForm>,
) -> Response {
    let (result, error) = match answer(&state, &signed, &form) {
        Ok(m) => (m, None),
        Err(e) => (html! {}, Some(e)),
    };
    let error = error.as_ref();
    let snapshot = state.gateway.snapshot();
    let any = signed.holds(EXPLAIN_ANY);
    let body = html! {
        form.stack #explain method="get" action="/explain" {
            (form_error(error, None))
            label { "Tool " input type="text" name="tool" value=(form.tool) list="explain-tools" required placeholder="ledger__refund"; }
            datalist #explain-tools {
                @for t in snapshot.catalog.iter() {
                    @if any || warden_core::decision::resolve_tool(&snapshot.catalog, &signed.authority, &t.name).is_ok() {
                        option value=(t.name) {}
                    }
                }
            }
            label { "Arguments (JSON) " textarea name="arguments" rows="4" placeholder="{\"amount\": 42}" { (form.arguments) } }
            (form_error(error, Some("arguments")))
            @if any {
                label { "User " input type="text" name="user" value=(form.user) placeholder="blank: yourself"; }
                (form_error(error, Some("user")))
                label { "Service account " input type="text" name="service_account" value=(form.service_account); }
                (form_error(error, Some("service_account")))
                label { "As if bound to projects " input type="text" name="projects" value=(form.projects) placeholder="payments, infra"; }
                (form_error(error, Some("projects")))
            }
            label { "Agent " input type="text" name="agent" value=(form.agent) placeholder="blank: no agent"; }
            (form_error(error, Some("agent")))
            button type="submit" { "Explain" }
        }
        (result)
    };
    let status = error.map_or(StatusCode::OK, |e| e.status);
    page_with(status, &signed, Section::Explain, "Explain", body)
}
