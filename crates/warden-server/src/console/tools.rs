//! The tools inventory (GOV-5): every tool of the live catalog classified read or mutation,
//! each mutation governed (by which policy) or ungoverned with its reason — what the API's
//! inventory lists.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use maud::html;
use serde_json::Value;
use warden_core::tool::{GovernanceStatus, ToolDescriptor, ToolSource};

use super::caps::{Section, TOOLS_INVENTORY};
use super::layout::{badge, closed, page};
use super::signed_in::Signed;
use crate::state::AppState;

/// A serde enum's name as written (`mutation`, `dangerous`, `annotations`).
fn name_of(value: impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Where a tool comes from: `builtin` or `upstream`, and which.
fn source(t: &ToolDescriptor) -> (&'static str, &str) {
    match &t.source {
        ToolSource::Builtin { set, .. } => ("builtin", set.as_str()),
        ToolSource::Upstream { upstream, .. } => ("upstream", upstream.as_str()),
    }
}

/// The tool's governance and why.
fn governance(t: &ToolDescriptor) -> (&'static str, String) {
    match &t.governance {
        GovernanceStatus::Read => ("read", String::new()),
        GovernanceStatus::Governed { by } => ("governed", format!("by {by}")),
        GovernanceStatus::Ungoverned { reason } => ("ungoverned", reason.to_string()),
        GovernanceStatus::Unmapped => (
            "ungoverned",
            "no ToolPolicy classifies this mutation: calls are refused (UNGOVERNED)".into(),
        ),
    }
}

/// `GET /tools`.
pub(crate) async fn show(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    if !signed.holds(TOOLS_INVENTORY) {
        return closed(&signed, Section::Tools);
    }
    let snapshot = state.gateway.snapshot();
    let tools: Vec<&Arc<ToolDescriptor>> = snapshot.catalog.iter().collect();
    let count = |g: &str| tools.iter().filter(|t| governance(t).0 == g).count();
    let body = html! {
        p.lead {
            (tools.len()) " tools at policy revision " (snapshot.revision) ": "
            (count("read")) " reads, " (count("governed")) " governed mutations, "
            strong { (count("ungoverned")) " ungoverned" } "."
            @let held = snapshot.catalog.held_count();
            @if held > 0 {
                " " a href="/tools/changes" { strong { (held) " held for review" } } " (their definitions changed)."
            } @else {
                " " a href="/tools/changes" { "Changed definitions" }
            }
        }
        table.grid.compact #inventory {
            thead { tr { th { "Tool" } th { "Project" } th { "Source" } th { "Class" } th { "Risk" } th { "Capability" } th { "Governance" } th { "Why" } } }
            tbody {
                @for t in &tools {
                    @let (kind, from) = source(t);
                    @let (status, why) = governance(t);
                    tr data-tool=(t.name) {
                        td { code { (t.name) } }
                        td { @if let Some(p) = &t.project { (p) } }
                        td { (kind) " " span.muted { (from) } }
                        td { (name_of(t.class)) br; span.muted { "from " (name_of(t.class_source)) } }
                        td { (name_of(t.risk)) }
                        td { @if let Some(c) = &t.capability { code { (c) } } }
                        td { (badge(status)) }
                        td { (why) }
                    }
                }
            }
        }
    };
    page(&signed, Section::Tools, "Tools inventory", body)
}
