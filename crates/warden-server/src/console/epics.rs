//! Epics (WORK-1..3): the board of the epics the credential may read, by state; an epic with
//! its tasks by state; an epic task with its reviews, its merge and what CI said of it. Read
//! through `warden_control::epics`, as `GET /api/v1/epics…` and the `work__get_epic` tool read
//! them; an epic the credential may not read answers as one that does not exist.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use warden_control::epics;
use warden_core::work::{EpicState, EpicTaskState, State as _};
use warden_work::epics::args::ListEpicsArgs;
use warden_work::epics::{EpicError, code};

use super::caps::Section;
use super::fmt;
use super::layout::{badge, page, refusal};
use super::signed_in::Signed;
use crate::state::AppState;

/// The page of a refusal of the epics service.
fn refused(signed: &Signed, e: &EpicError) -> Response {
    match e {
        EpicError::Store(e) => refusal(signed, StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        other => {
            let (code, message) = other.refusal().unwrap_or(("", ""));
            let status = if code == code::NOT_FOUND {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::FORBIDDEN
            };
            refusal(signed, status, message)
        }
    }
}

fn epic_link(id: &str) -> Markup {
    html! { a href={ "/epics/" (fmt::encode(id)) } { code { (id) } } }
}

fn task_link(id: &str) -> Markup {
    html! { a href={ "/epic-tasks/" (fmt::encode(id)) } { code { (id) } } }
}

/// `GET /epics`: the board, a column per epic state.
pub(crate) async fn board(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    let args = ListEpicsArgs {
        project: None,
        status: None,
    };
    let all = match epics::list(&state.control, &signed.authority, &args).await {
        Ok(all) => all,
        Err(e) => return refused(&signed, &e),
    };
    let body = html! {
        @if all.is_empty() {
            p.empty #epics { "No epics you may read (`work:read` in a project whose tools you may use)." }
        } @else {
            div.board #epics {
                @for column in EpicState::ALL {
                    section.column data-state=(column.as_str()) {
                        h2 { (column.as_str()) }
                        @for e in all.iter().filter(|e| e.state == *column) {
                            article.card {
                                a href={ "/epics/" (fmt::encode(&e.id)) } { strong { (e.title) } }
                                br;
                                span.muted { (e.project) } " " (badge(e.risk.as_str()))
                                br;
                                span.muted { "updated " (fmt::time(e.updated_at.0)) }
                            }
                        }
                    }
                }
            }
        }
    };
    page(&signed, Section::Epics, "Epics", body)
}

/// `GET /epics/{id}`: the epic, its tasks a column per state, and its moves.
pub(crate) async fn epic(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
) -> Response {
    let view = match epics::get(&state.control, &signed.authority, &id).await {
        Ok(view) => view,
        Err(e) => return refused(&signed, &e),
    };
    let e = &view.epic;
    let body = html! {
        dl.facts #epic data-state=(e.state.as_str()) {
            dt { "Title" } dd { strong { (e.title) } }
            @if !e.description.is_empty() { dt { "Description" } dd { (e.description) } }
            dt { "State" } dd { (badge(e.state.as_str())) }
            dt { "Risk" } dd { (badge(e.risk.as_str())) }
            dt { "Project" } dd { (e.project) }
            @if !e.criteria.is_empty() {
                dt { "Criteria" } dd { ul { @for c in &e.criteria { li { (c) } } } }
            }
            @if !e.tradeoffs.is_empty() { dt { "Trade-offs" } dd { (e.tradeoffs) } }
            dt { "Created" } dd { (fmt::time(e.created_at.0)) " by " (e.created_by) }
        }
        h2 { "Tasks" }
        @if view.tasks.is_empty() {
            p.empty #tasks { "No tasks yet." }
        } @else {
            div.board #tasks {
                @for column in EpicTaskState::ALL {
                    @let here: Vec<_> = view.tasks.iter().filter(|t| t.task.state == *column).collect();
                    @if !here.is_empty() {
                        section.column data-state=(column.as_str()) {
                            h2 { (column.as_str()) }
                            @for t in here {
                                article.card {
                                    a href={ "/epic-tasks/" (fmt::encode(&t.task.id)) } { strong { (t.task.title) } }
                                    br;
                                    code { (t.task.repository) } " " code { (t.task.branch) } " → " code { (t.task.base_branch) }
                                    br;
                                    span.muted { (t.reviews.len()) " review(s)" }
                                    @if let Some(ci) = &t.task.ci_state { " " (badge(&format!("ci {ci}"))) }
                                }
                            }
                        }
                    }
                }
            }
        }
        (moves(&view.moves))
        p { a href="/epics" { "All epics" } }
    };
    let title = format!("Epic {}", fmt::cut(&e.title, 64));
    page(&signed, Section::Epics, &title, body)
}

/// `GET /epic-tasks/{id}`: an epic task with its reviews, merge and CI status.
pub(crate) async fn task(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
) -> Response {
    let found = match epics::get_task(&state.control, &signed.authority, &id).await {
        Ok(found) => found,
        Err(e) => return refused(&signed, &e),
    };
    let t = &found.task.task;
    let body = html! {
        dl.facts #epic-task data-state=(t.state.as_str()) {
            dt { "Title" } dd { strong { (t.title) } }
            dt { "State" } dd { (badge(t.state.as_str())) }
            dt { "Epic" } dd { (epic_link(&found.epic.id)) " " (found.epic.title) " " (badge(found.epic.risk.as_str())) }
            dt { "Task" } dd { a href={ "/tasks/" (fmt::encode(&t.task_id)) } { code { (t.task_id) } } }
            dt { "Repository" } dd { code { (t.repository) } ": " code { (t.branch) } " → " code { (t.base_branch) } }
            dt { "Merge" } dd #merge {
                @match &t.merge_commit {
                    Some(commit) => code { (commit) },
                    None => span.muted { "not merged" },
                }
            }
            @if !t.conflicts.is_empty() {
                dt { "Conflicts" } dd #conflicts { @for p in &t.conflicts { code { (p) } " " } }
            }
            dt { "CI" } dd #ci {
                @match &t.ci_state {
                    Some(state) => {
                        (badge(state))
                        @if let Some(url) = t.ci_url.as_deref().filter(|u| u.starts_with("https://") || u.starts_with("http://")) {
                            " " a href=(url) rel="noreferrer noopener" { "report" }
                        }
                    }
                    None => span.muted { "no report" },
                }
            }
            dt { "Added" } dd { (fmt::time(t.created_at.0)) " by " (t.created_by) }
        }
        h2 { "Reviews" }
        table.grid.compact #reviews {
            thead { tr { th { "#" } th { "Reviewer" } th { "Verdict" } th { "Commit" } th { "Comment" } th { "When" } } }
            tbody {
                @if found.task.reviews.is_empty() { tr.empty { td colspan="6" { "No reviews yet." } } }
                @for r in &found.task.reviews {
                    tr {
                        td { (r.seq) }
                        td { (r.reviewer) @if r.critical { " " span.badge.plain { "accept-critical" } } }
                        td { (badge(r.verdict.as_str())) }
                        td { @if let Some(h) = &r.head { code { (fmt::cut(h, 12)) } } }
                        td.long { (r.comment) }
                        td.nowrap { (fmt::time(r.at.0)) }
                    }
                }
            }
        }
        (moves(&found.moves))
        p { (task_link(&t.id)) " of " (epic_link(&found.epic.id)) }
    };
    let title = format!("Epic task {}", fmt::cut(&t.title, 64));
    page(&signed, Section::Epics, &title, body)
}

/// The recorded moves of an epic or an epic task.
fn moves(moves: &[warden_store::WorkMove]) -> Markup {
    html! {
        h2 { "Moves" }
        table.grid.compact #moves {
            thead { tr { th { "From" } th { "To" } th { "By" } th { "When" } } }
            tbody {
                @for m in moves {
                    tr {
                        td { @if let Some(from) = &m.from { (from) } @else { span.muted { "created" } } }
                        td { (m.to) }
                        td { (m.moved_by) }
                        td.nowrap { (fmt::time(m.at.0)) }
                    }
                }
            }
        }
    }
}
