//! Runs and their audit trails: every call with its decision, the rule that decided it, its
//! timing and outcome, and the records of the chain behind them.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;
use warden_control::{Caller, Refusal, runs};
use warden_core::audit::AuditRecord;

use super::caps::{RUNS_READ, Section};
use super::fmt;
use super::layout::{badge, closed, page, refusal, refused};
use super::signed_in::Signed;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub(crate) struct RunsQuery {
    agent: Option<String>,
    /// The page's cursor: runs older than this one (`<ms>.<run id>`).
    before: Option<String>,
}

/// Runs on one page.
const PAGE: i64 = 100;

/// `GET /runs`.
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Query(q): Query<RunsQuery>,
) -> Response {
    if !signed.holds(RUNS_READ) {
        return closed(&signed, Section::Runs);
    }
    let agent = q.agent.as_deref().map(str::trim).filter(|a| !a.is_empty());
    let before = q.before.as_deref().map(str::trim).filter(|b| !b.is_empty());
    let caller = Caller::Credential(signed.authority.clone());
    let found = match runs::page(&state.control, &caller, agent, before, PAGE, true).await {
        Ok(p) => p,
        Err(e) => return refused(&signed, &e),
    };
    let runs = &found.runs;
    let filter = agent.map_or_else(String::new, |a| format!("agent={}", fmt::encode(a)));
    let amp = if filter.is_empty() { "" } else { "&" };
    let body = html! {
        form.filters method="get" action="/runs" {
            label { "Agent " input type="text" name="agent" value=[agent]; }
            button type="submit" { "Filter" }
        }
        p.muted #runs-shown {
            @if runs.is_empty() { "No runs." } @else {
                "Showing " (runs.len()) " of " (found.matching.unwrap_or(0)) " runs, newest first."
            }
        }
        table.grid #runs {
            thead { tr { th { "Run" } th { "Started" } th { "Mode" } th { "Principal" } th { "Agent" } th { "Status" } } }
            tbody {
                @if runs.is_empty() { tr.empty { td colspan="6" { "No runs yet." } } }
                @for r in runs {
                    tr {
                        td { a href={ "/runs/" (r.id) } { code { (r.id) } } }
                        td.nowrap { (fmt::time(r.at)) }
                        td { (r.mode.as_deref().unwrap_or("—")) }
                        td { (r.principal.as_deref().unwrap_or("—")) }
                        td { (r.agent.as_deref().unwrap_or("—")) }
                        td { @if let Some(s) = &r.status { (badge(s)) } }
                    }
                }
            }
        }
        nav.pager {
            @if before.is_some() { a.button href={ "/runs?" (filter) } { "Newest" } " " }
            @if let Some(n) = &found.next {
                a.button #older href={ "/runs?" (filter) (amp) "before=" (fmt::encode(n)) } { "Older" }
            }
        }
    };
    page(&signed, Section::Runs, "Runs", body)
}

/// A record's payload field as text.
fn field(payload: &Value, key: &str) -> Option<String> {
    payload.get(key).and_then(|v| match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    })
}

/// The chain's records as a table: the trail behind a run (also the audit search's results).
/// A record whole, as `warden audit -o json` prints it (the payload as JSON, or as the text
/// it is when it is not JSON): what an `apply` applied, a call's argument hashes, its hash
/// and the one before.
fn record_text(r: &AuditRecord, payload: &Value) -> String {
    let mut whole = serde_json::to_value(r).unwrap_or(Value::Null);
    if let Some(obj) = whole.as_object_mut()
        && !payload.is_null()
    {
        obj.insert("payload".into(), payload.clone());
    }
    serde_json::to_string_pretty(&whole).unwrap_or_default()
}

pub(crate) fn trail(records: &[AuditRecord], with_run: bool) -> Markup {
    html! {
        table.grid.compact.trail {
            thead { tr {
                th { "#" } th { "Time" } th { "Kind" }
                @if with_run { th { "Run" } }
                th { "Tool" } th { "Principal" } th { "Decision" } th { "Code" } th { "Rule" } th { "Step" } th { "Duration" } th { "Record" }
            } }
            tbody {
                @if records.is_empty() { tr.empty { td colspan="12" { "No records." } } }
                @for r in records {
                    @let payload: Value = serde_json::from_str(&r.record.payload).unwrap_or(Value::Null);
                    tr data-kind=(r.record.kind.as_str()) data-decision=[r.record.decision.as_deref()] {
                        td.seq { (r.seq) }
                        td.nowrap { (fmt::time(r.record.at.0)) }
                        td { (r.record.kind.as_str()) }
                        @if with_run { td { a href={ "/runs/" (r.record.run_id) } { code { (fmt::cut(&r.record.run_id, 16)) } } } }
                        td.long { (r.record.tool.as_deref().unwrap_or("")) }
                        td.long { (r.record.principal.as_deref().unwrap_or("")) }
                        td { @if let Some(d) = &r.record.decision { (badge(d)) } }
                        td { @if let Some(c) = &r.record.code { code { (c) } } }
                        td { @if let Some(rule) = field(&payload, "rule") { code { (rule) } } }
                        td { (field(&payload, "step").unwrap_or_default()) }
                        td { @if let Some(ms) = field(&payload, "duration_ms") { (ms) " ms" } }
                        td.record {
                            details {
                                summary { "all of it" }
                                pre.json { (record_text(r, &payload)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /runs/{id}`.
pub(crate) async fn detail(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
) -> Response {
    if !signed.holds(RUNS_READ) {
        return closed(&signed, Section::Runs);
    }
    let caller = Caller::Credential(signed.authority.clone());
    let run = match runs::get(&state.control, &caller, &id).await {
        Ok(run) => run,
        Err(Refusal::NotFound { .. }) => {
            return refusal(
                &signed,
                StatusCode::NOT_FOUND,
                &format!("no run `{}`", fmt::cut(&id, 64)),
            );
        }
        Err(e) => return refused(&signed, &e),
    };
    let records = runs::records(&state.control, &caller, &id)
        .await
        .unwrap_or_default();
    let authority = run.authority.as_ref();
    let text = |k: &str| authority.and_then(|a| field(a, k));
    let body = html! {
        dl.facts {
            dt { "Mode" } dd { (text("mode").unwrap_or_else(|| "—".into())) }
            dt { "Principal" } dd { (text("principal").unwrap_or_else(|| "—".into())) }
            dt { "Credential" } dd { code { (text("credential").unwrap_or_else(|| "—".into())) } }
            dt { "Agent" } dd { (text("agent").unwrap_or_else(|| "—".into())) }
            dt { "Policy revision" } dd { (text("policy_revision").unwrap_or_else(|| "—".into())) }
            @if let Some(life) = &run.lifecycle {
                dt { "Lifecycle" } dd {
                    (badge(&life.status)) " " (life.trigger) " · queued " (fmt::time(life.queued_at))
                    @if let Some(f) = life.finished_at { " · finished " (fmt::time(f)) }
                    @if let Some(e) = &life.error { " · " (e) }
                }
            }
        }
        @if let Some(projects) = authority.and_then(|a| a.get("projects")).and_then(|p| p.as_object()) {
            h2 { "Projects and why" }
            table.grid.compact #projects {
                thead { tr { th { "Project" } th { "Why the run may use its tools" } } }
                tbody {
                    @for (project, why) in projects {
                        tr { td { code { (project) } } td { (why.as_str().unwrap_or_default()) } }
                    }
                }
            }
        }
        h2 { "Calls" }
        table.grid #calls {
            thead { tr { th { "Call" } th { "Time" } th { "Tool" } th { "Decision" } th { "Code" } th { "Rule" } th { "Outcome" } th { "Duration" } } }
            tbody {
                @if run.calls.is_empty() { tr.empty { td colspan="8" { "No calls." } } }
                @for c in &run.calls {
                    tr data-call=(c.call_id) data-outcome=[c.outcome.as_deref()] {
                        td { code { (fmt::cut(&c.call_id, 18)) } }
                        td.nowrap { (fmt::time(c.at)) }
                        td.long { (c.tool.as_deref().unwrap_or("")) }
                        td { @if let Some(d) = &c.decision { (badge(d)) } }
                        td { @if let Some(code) = &c.code { code { (code) } } }
                        td { @if let Some(r) = &c.rule { code { (r) } } }
                        td { @if let Some(o) = &c.outcome { (badge(o)) } }
                        td { @if let Some(ms) = c.duration_ms { (ms) " ms" } }
                    }
                }
            }
        }
        h2 { "Audit trail" }
        (trail(&records, false))
    };
    let title = format!("Run {id}");
    page(&signed, Section::Runs, &title, body)
}
