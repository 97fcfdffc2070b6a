//! Agents with their memberships, schedules (and when each fires next) and recent unattended
//! runs, and **Run now** for an agent with a manual runner (`agents:run`, through
//! `warden_control::runs::start`, as the API's `POST /api/v1/agents/{agent}/runs`); tasks of
//! the workspaces the credential may read, with those workspaces.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use serde_json::Value;
use warden_control::tasks;
use warden_control::{Caller, runs};
use warden_core::admission::RefusalCode;
use warden_core::config::WorkspaceMode;
use warden_work::args::ListTasksArgs;
use warden_work::tasks::{self as work, WorkError};

use super::caps::{AGENTS_RUN, CONFIG_READ, RUNS_READ, Section};
use super::fmt;
use super::layout::{
    FormError, badge, closed, csrf_field, form_error, page, page_with, refusal, see_other,
};
use super::signed_in::Signed;
use crate::state::AppState;

/// `GET /agents`.
pub(crate) async fn agents(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    if !signed.holds(CONFIG_READ) {
        return closed(&signed, Section::Agents);
    }
    render(&state, &signed, None).await
}

/// `POST /agents/{agent}/run`: starts a run with the agent's manual runner; the page says
/// which run started, or why none did.
pub(crate) async fn run_now(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(agent): Path<String>,
) -> Response {
    let caller = Caller::Credential(signed.authority.clone());
    match runs::start(&state.runner, &caller, &signed.credential, &agent, None).await {
        Ok(run) => {
            tracing::info!(agent = %agent, run = %run.id, by = %signed.credential.principal, "agent run started in the console");
            signed
                .flash(format!(
                    "Run {} of agent {agent} started ({}).",
                    run.id, run.status
                ))
                .await;
            see_other("/agents")
        }
        Err(e) if !signed.holds(CONFIG_READ) => super::layout::refused(&signed, &e),
        Err(e) => render(&state, &signed, Some(&FormError::refusal(&e, &[]))).await,
    }
}

/// The page, with `error` (a run that did not start) above the agents.
async fn render(state: &AppState, signed: &Signed, error: Option<&FormError>) -> Response {
    let snapshot = state.gateway.snapshot();
    let runs = if signed.holds(RUNS_READ) {
        let caller = Caller::Credential(signed.authority.clone());
        runs::agent_runs(&state.control, &snapshot.policy, &caller, None, 50)
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let now = state.control.now();
    let starts = signed.holds(AGENTS_RUN);
    let body = html! {
        (form_error(error, None))
        table.grid #agents {
            thead { tr { th { "Agent" } th { "Memberships" } th { "Schedules" } th { "Manual runner" } } }
            tbody {
                @if snapshot.policy.agents().is_empty() { tr.empty { td colspan="4" { "No agents are configured." } } }
                @for (name, a) in snapshot.policy.agents() {
                    tr data-agent=(name) {
                        td {
                            strong { (name) }
                            @if let Some(m) = &a.model { " " a.button href={ "/chat?agent=" (fmt::encode(name.as_str())) } title={ "through Model " (m) } { "Chat" } }
                            @if let Some(i) = &a.instructions { br; span.muted { (fmt::cut(i, 80)) } }
                        }
                        td { @for m in &a.memberships { span.badge.plain { (m) } " " } }
                        td {
                            @if a.schedules.is_empty() { span.muted { "none" } }
                            @for s in &a.schedules {
                                @let next = warden_core::cron::Schedule::parse(&s.cron).ok().and_then(|c| c.next_after(now));
                                div.schedule {
                                    code { (s.cron) } " → " code { (s.runner.command) }
                                    @if let Some(next) = next { br; span.muted { "next " (fmt::time(next.0)) " (in " (fmt::span(next.0 - now.0)) ")" } }
                                }
                            }
                        }
                        td {
                            @match a.manual_runner() {
                                Some((r, _)) => {
                                    code { (r.command) " " (r.args.join(" ")) }
                                    @if starts {
                                        form.inline method="post" action={ "/agents/" (fmt::encode(name.as_str())) "/run" } {
                                            (csrf_field(signed))
                                            button type="submit" { "Run now" }
                                        }
                                    }
                                },
                                None => span.muted { "none" },
                            }
                        }
                    }
                }
            }
        }
        h2 { "Recent unattended runs" }
        @if !signed.holds(RUNS_READ) { p.muted { "Runs need the " code { "runs:read" } " capability." } }
        table.grid.compact {
            thead { tr { th { "Run" } th { "Agent" } th { "Trigger" } th { "Status" } th { "Queued" } th { "Finished" } th { "Exit" } } }
            tbody {
                @if runs.is_empty() { tr.empty { td colspan="7" { "No unattended runs yet." } } }
                @for r in &runs {
                    tr {
                        td { a href={ "/runs/" (r.id) } { code { (fmt::cut(&r.id, 20)) } } }
                        td { (r.agent) }
                        td { (r.trigger) @if let Some(k) = &r.schedule_key { " " span.muted { (k) } } }
                        td { (badge(&r.status)) @if let Some(e) = &r.error { " " span.muted { (fmt::cut(e, 60)) } } }
                        td { (fmt::time(r.queued_at)) }
                        td { (r.finished_at.map(fmt::time).unwrap_or_default()) }
                        td {
                            (r.exit_code.map(|c| c.to_string()).unwrap_or_default())
                            @if let Some(out) = &r.output {
                                details.output { summary { "output" } pre.json { (out) } }
                            }
                        }
                    }
                }
            }
        }
    };
    let status = error.map_or(StatusCode::OK, |e| e.status);
    page_with(
        status,
        signed,
        Section::Agents,
        "Agents and schedules",
        body,
    )
}

/// `GET /tasks`.
pub(crate) async fn tasks(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    let policy = state.gateway.snapshot().policy.clone();
    let args = ListTasksArgs {
        workspace_id: None,
        parent_id: None,
        state: None,
    };
    let tasks = match tasks::list(&state.control, &policy, &signed.authority, &args).await {
        Ok(t) => t,
        Err(WorkError::Refused(r)) => return refusal(&signed, StatusCode::FORBIDDEN, &r.message),
        Err(WorkError::Store(e)) => {
            return refusal(&signed, StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
        }
    };
    let spaces: Vec<_> = work::workspaces(&policy, &signed.authority, "tasks:read")
        .into_iter()
        .filter(|w| w.authorised)
        .collect();
    let body = html! {
        h2 { "Workspaces" }
        table.grid.compact #workspaces {
            thead { tr { th { "Workspace" } th { "Mode" } th { "Project" } th { "Repositories" } } }
            tbody {
                @if spaces.is_empty() { tr.empty { td colspan="4" { "No workspace whose tasks you may read." } } }
                @for w in &spaces {
                    tr {
                        td { strong { (w.name) } }
                        td { @match w.mode { WorkspaceMode::Kanban => "kanban", WorkspaceMode::Office => "office" } }
                        td { (w.project) }
                        td { @for r in &w.repositories { code { (r.name) @if let Some(b) = &r.branch { "@" (b) } } " " } }
                    }
                }
            }
        }
        h2 { "Tasks" }
        table.grid #tasks {
            thead { tr { th { "Task" } th { "Workspace" } th { "Title" } th { "State" } th { "Parent" } th { "Updated" } } }
            tbody {
                @if tasks.is_empty() { tr.empty { td colspan="6" { "No tasks." } } }
                @for t in &tasks {
                    tr {
                        td { a href={ "/tasks/" (fmt::encode(&t.id)) } { code { (t.id) } } @if t.from_office { " " span.badge.plain { "office" } } }
                        td { (t.workspace) }
                        td.long { (t.title) @if let Some(step) = &t.workflow_step { br; span.muted { (step) } } }
                        td { (badge(t.state.as_str())) }
                        td { @if let Some(p) = &t.parent_id { a href={ "/tasks/" (fmt::encode(p)) } { code { (p) } } } }
                        td { (fmt::time(t.updated_at)) }
                    }
                }
            }
        }
    };
    page(&signed, Section::Tasks, "Tasks", body)
}

/// `v`'s field `key`, `null` when it has none.
fn at<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or(&Value::Null)
}

/// Who created a task, from its provenance (stored as JSON): the principal it names.
fn creator(created_by: &Value) -> Option<String> {
    let provenance: Value = serde_json::from_str(created_by.as_str()?).ok()?;
    let owner = provenance.pointer("/ref/owner")?.clone();
    serde_json::from_value::<warden_core::principal::Principal>(owner)
        .ok()
        .map(|p| p.to_string())
}

/// `GET /tasks/{id}`: one task, its environment (repositories and where they are) and its
/// sessions (the agent runs bound to it), for a credential that may read its workspace.
pub(crate) async fn task(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
) -> Response {
    let policy = state.gateway.snapshot().policy.clone();
    let described = match tasks::describe(&state.control, &policy, &signed.authority, &id).await {
        Ok(d) => d,
        Err(WorkError::Refused(r)) if r.code == RefusalCode::NotFound => {
            return refusal(&signed, StatusCode::NOT_FOUND, &r.message);
        }
        Err(WorkError::Refused(r)) => return refusal(&signed, StatusCode::FORBIDDEN, &r.message),
        Err(WorkError::Store(e)) => {
            return refusal(&signed, StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
        }
    };
    let task = at(&described, "task");
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        other => other.to_string(),
    };
    let when = |v: &Value| v.as_i64().map_or_else(|| "—".into(), fmt::time);
    let sessions = at(&described, "sessions")
        .as_array()
        .cloned()
        .unwrap_or_default();
    let body = html! {
        dl.facts #task data-state=(text(at(task, "state"))) {
            dt { "Title" } dd { strong { (text(at(task, "title"))) } }
            @if let Some(d) = at(task, "description").as_str() { dt { "Description" } dd { (d) } }
            dt { "State" } dd { (badge(&text(at(task, "state")))) @if let Some(s) = at(task, "workflowStep").as_str() { " " span.muted { (s) } } }
            dt { "Workspace" } dd { (text(at(task, "workspace"))) }
            @if let Some(p) = at(task, "parentId").as_str() { dt { "Parent" } dd { a href={ "/tasks/" (fmt::encode(p)) } { code { (p) } } } }
            dt { "Created" } dd { (when(at(task, "createdAt"))) @if let Some(by) = creator(at(task, "createdBy")) { " by " (by) } }
            dt { "Updated" } dd { (when(at(task, "updatedAt"))) }
        }
        h2 { "Environment" }
        pre.json #environment { (serde_json::to_string_pretty(at(&described, "environment")).unwrap_or_default()) }
        h2 { "Sessions" }
        table.grid.compact #sessions {
            thead { tr { th { "Run" } th { "Agent" } th { "Status" } th { "Queued" } th { "Finished" } } }
            tbody {
                @if sessions.is_empty() { tr.empty { td colspan="5" { "No agent run is bound to this task." } } }
                @for s in &sessions {
                    tr {
                        td { @if let Some(run) = at(s, "id").as_str() { a href={ "/runs/" (fmt::encode(run)) } { code { (run) } } } }
                        td { (text(at(s, "agent"))) }
                        td { (badge(&text(at(s, "status")))) }
                        td.nowrap { (when(at(s, "queuedAt"))) }
                        td.nowrap { (when(at(s, "finishedAt"))) }
                    }
                }
            }
        }
        p { a href="/tasks" { "All tasks" } }
    };
    let title = format!("Task {}", fmt::cut(&id, 64));
    page(&signed, Section::Tasks, &title, body)
}
