//! The approvals inbox: parked and staged calls, live (an event stream replaces the rows
//! whenever the set changes), each with its arguments, policy version and deadline; deciding
//! goes through [`warden_mcp::Gateway::decide_approval`], so the console enforces APR-4
//! exactly as the API does — a hidden button is never the only guard.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value};
use warden_control::{Caller, Refusal, approvals};
use warden_core::approval::{ApprovalKind, ApprovalStatus};
use warden_core::audit::{ArgumentsAudit, keep, redact};
use warden_core::authority::Authority;
use warden_core::principal::Principal;
use warden_mcp::gateway::{DecideError, Verb};
use warden_store::Approval;

use super::caps::{APPROVALS_DECIDE, Section};
use super::fmt;
use super::layout::{self, badge, json_block, page, refusal, see_other};
use super::signed_in::{Signed, resolve};
use crate::state::AppState;

/// How often the event stream looks for new parked calls.
const POLL: Duration = Duration::from_millis(500);
/// An event stream ends after this long and the browser reconnects by itself (told to retry
/// after a second): a stream never holds a server's graceful shutdown longer than this.
const STREAM_LIFETIME: Duration = Duration::from_secs(30);

/// The waiting calls `authority` may see: all, or only its own.
async fn waiting(state: &AppState, authority: &Arc<Authority>) -> Result<Vec<Approval>, Refusal> {
    approvals::list(
        &state.control,
        &Caller::Credential(authority.clone()),
        vec![ApprovalStatus::Pending, ApprovalStatus::Staged],
        Some(500),
    )
    .await
}

/// The arguments of a parked call as a decider sees them: as given, but for the values the
/// tool's schema marks secret (and everything secret-looking when the tool is gone).
fn shown_arguments(state: &AppState, a: &Approval) -> Option<String> {
    let args = a.args.as_deref()?;
    let parsed: Option<Map<String, Value>> = serde_json::from_str(args).ok();
    let snapshot = state.gateway.snapshot();
    let kept = match snapshot.catalog.get(&a.tool) {
        Some(tool) => keep(
            parsed.as_ref(),
            ArgumentsAudit::Full,
            &tool.secret_arguments,
        ),
        None => redact(parsed.as_ref()),
    };
    serde_json::to_string(&kept).ok()
}

fn deadline(a: &Approval, now: i64) -> Markup {
    let verb = match a.kind {
        ApprovalKind::Approval => "expires",
        ApprovalKind::Staged => "runs",
    };
    html! {
        span.countdown data-due=(a.due_at) data-verb=(verb) title=(fmt::time(a.due_at)) {
            @if a.due_at > now { (verb) " in " (fmt::span(a.due_at - now)) } @else { "due" }
        }
    }
}

/// The decision form of a waiting call, for a credential that holds `approvals:decide`.
fn decide_form(a: &Approval, csrf: &str) -> Markup {
    html! {
        form.decide method="post" action={ "/approvals/" (a.id) "/decide" } {
            input type="hidden" name=(super::csrf::FIELD) value=(csrf);
            input type="text" name="reason" placeholder="Reason" maxlength="500" aria-label="Reason";
            @match a.kind {
                ApprovalKind::Approval => {
                    button.good type="submit" name="verb" value="approve" { "Approve" }
                    button.bad type="submit" name="verb" value="reject" { "Reject" }
                }
                ApprovalKind::Staged => {
                    button.bad type="submit" name="verb" value="veto" { "Veto" }
                }
            }
        }
    }
}

/// The rows of the inbox (also what the event stream sends).
fn rows(state: &AppState, authority: &Authority, csrf: &str, waiting: &[Approval]) -> Markup {
    let now = state.control.now().0;
    let decides = authority.holds(APPROVALS_DECIDE);
    html! {
        @if waiting.is_empty() {
            tr.empty { td colspan="7" { "Nothing waits for a decision." } }
        }
        @for a in waiting.iter().rev() {
            tr id=(a.id) data-approval=(a.id) data-status=(a.status) {
                td { (badge(a.status.as_str())) br; a href={ "/approvals/" (a.id) } { code { (a.id) } } }
                td.long { strong { (a.tool) } @if let Some(p) = &a.project { br; span.muted { "project " (p) } } }
                td { (a.principal) @if let Some(agent) = &a.agent { br; span.muted { "agent " (agent) } } }
                td.args { @match shown_arguments(state, a) { Some(args) => (json_block(&args)), None => span.muted { "—" } } }
                td { "revision " (a.policy_revision) br; span.muted { (a.rule) } }
                td { span.muted { "parked " (fmt::time(a.created_at)) } br; (deadline(a, now)) }
                td { @if decides { (decide_form(a, csrf)) } @else { span.muted { "needs " code { "approvals:decide" } } } }
            }
        }
    }
}

/// `GET /approvals`.
pub(crate) async fn inbox(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    let list = match waiting(&state, &signed.authority).await {
        Ok(list) => list,
        Err(e) => return refusal(&signed, StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let finished = approvals::list(
        &state.control,
        &Caller::Credential(signed.authority.clone()),
        ApprovalStatus::ALL
            .into_iter()
            .filter(|s| !matches!(s, ApprovalStatus::Pending | ApprovalStatus::Staged))
            .collect(),
        Some(1000),
    )
    .await
    .unwrap_or_default();
    let body = html! {
        p.lead {
            @if approvals::reads_all(&Caller::Credential(signed.authority.clone())) { "Every parked call and staged action waiting for a decision." }
            @else { "Your own parked calls waiting for a decision." }
            " This list updates by itself when a call parks."
            span #live.live data-state="connecting" { "●" }
        }
        table.grid #inbox {
            thead { tr { th { "Status" } th { "Tool" } th { "Requester" } th { "Arguments" } th { "Policy" } th { "Deadline" } th { "Decision" } } }
            tbody #inbox-rows data-stream="/approvals/events" {
                (rows(&state, &signed.authority, &signed.csrf, &list))
            }
        }
        h2 { "Recently decided" }
        table.grid.compact {
            thead { tr { th { "Approval" } th { "Tool" } th { "Requester" } th { "Status" } th { "Outcome" } th { "Finished" } } }
            tbody {
                @if finished.is_empty() { tr.empty { td colspan="6" { "Nothing decided yet." } } }
                @for a in finished.iter().rev().take(20) {
                    tr {
                        td { a href={ "/approvals/" (a.id) } { code { (a.id) } } }
                        td.long { (a.tool) }
                        td { (a.principal) }
                        td { (badge(a.status.as_str())) }
                        td { @if let Some(c) = a.outcome_code { code { (c.as_str()) } " " } (a.outcome_message.as_deref().unwrap_or("")) }
                        td.nowrap { (a.finished_at.or(a.decided_at).map(fmt::time).unwrap_or_default()) }
                    }
                }
            }
        }
    };
    page(&signed, Section::Approvals, "Approvals", body)
}

/// `GET /approvals/events`: the inbox's rows, each time they change (and once at the start),
/// for as long as the session lasts and the server runs.
pub(crate) async fn events(
    State(state): State<Arc<AppState>>,
    axum::Extension(stopping): axum::Extension<crate::state::Stopping>,
    signed: Signed,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let started = Instant::now();
    let seed = (state, signed, None::<String>);
    let stream = futures::stream::unfold(seed, move |(state, signed, last)| async move {
        loop {
            if last.is_some() {
                tokio::time::sleep(POLL).await;
            }
            if started.elapsed() > STREAM_LIFETIME {
                return None;
            }
            // The session and its credential, checked again on every round (RUN-8).
            let live = signed.sessions.active(&signed.sid).await;
            let Ok((_, authority)) = resolve(&state, &signed.credential.id) else {
                return None;
            };
            if !live {
                return None;
            }
            let Ok(list) = waiting(&state, &authority).await else {
                continue;
            };
            let print: String = list
                .iter()
                .map(|a| format!("{}:{};", a.id, a.status))
                .chain([format!("decides:{}", authority.holds(APPROVALS_DECIDE))])
                .collect();
            if last.as_deref() == Some(print.as_str()) {
                continue;
            }
            let html = rows(&state, &authority, &signed.csrf, &list).into_string();
            let mut event = Event::default().event("approvals").data(html);
            if last.is_none() {
                event = event.retry(Duration::from_secs(1));
            }
            return Some((Ok(event), (state, signed, Some(print))));
        }
    });
    let stream = futures::StreamExt::take_until(stream, stopping.0.cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[derive(Debug, Deserialize)]
pub(crate) struct DecideForm {
    verb: String,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /approvals/{id}/decide`.
pub(crate) async fn decide(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<DecideForm>,
) -> Response {
    let verb = match form.verb.as_str() {
        "approve" => Verb::Approve,
        "reject" => Verb::Reject,
        "veto" => Verb::Veto,
        other => {
            return refusal(
                &signed,
                StatusCode::BAD_REQUEST,
                &format!(
                    "`{}` is not a decision: approve, reject or veto",
                    fmt::cut(other, 32)
                ),
            );
        }
    };
    let reason = form
        .reason
        .map(|r| fmt::cut(r.trim(), 500))
        .filter(|r| !r.is_empty());
    match state
        .gateway
        .decide_approval(&id, &signed.credential, verb, reason)
        .await
    {
        Ok(a) => {
            let message = a.outcome_message.as_deref().unwrap_or("");
            signed
                .flash(match a.status {
                    ApprovalStatus::Executed => "Approved: the call was executed.".to_owned(),
                    ApprovalStatus::Failed => {
                        format!("Approved, but the call was refused or failed: {message}")
                    }
                    ApprovalStatus::Rejected => "Rejected: the call will not run.".to_owned(),
                    ApprovalStatus::Vetoed => "Vetoed: the staged call will not run.".to_owned(),
                    ApprovalStatus::Pending => format!(
                        "Approved: {} of the {} approvals it needs; it waits for another decider.",
                        a.approvers.len(),
                        a.deciders
                    ),
                    other => format!("Decided: the approval is {other}."),
                })
                .await;
            see_other(&format!("/approvals/{}", a.id))
        }
        Err(e) => {
            let status = match e {
                DecideError::NotFound(_) => StatusCode::NOT_FOUND,
                DecideError::Forbidden(_) => StatusCode::FORBIDDEN,
                DecideError::Conflict(_) => StatusCode::CONFLICT,
                DecideError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            tracing::info!(approval = %id, decider = %signed.credential.principal, error = %e, "console decision refused");
            refusal(&signed, status, &e.to_string())
        }
    }
}

/// `GET /approvals/{id}`: one parked call, its outcome once decided, and its run.
pub(crate) async fn detail(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
) -> Response {
    // Someone else's approval answers like one that does not exist (as in the API).
    let caller = Caller::Credential(signed.authority.clone());
    let a = match approvals::get(&state.control, &caller, &id).await {
        Ok(a) => a,
        Err(Refusal::NotFound { .. }) => {
            return refusal(
                &signed,
                StatusCode::NOT_FOUND,
                &format!("no approval `{}`", fmt::cut(&id, 64)),
            );
        }
        Err(e) => return refusal(&signed, StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let waiting = matches!(a.status, ApprovalStatus::Pending | ApprovalStatus::Staged);
    let decider = a
        .decided_by
        .as_deref()
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
        .and_then(|d| d.pointer("/ref/owner").cloned())
        .and_then(|owner| serde_json::from_value::<Principal>(owner).ok())
        .map(|p| p.to_string());
    let body = html! {
        dl.facts #approval data-status=(a.status) {
            dt { "Kind" } dd { @match a.kind {
                ApprovalKind::Approval => "a parked call: it runs only when approved",
                ApprovalKind::Staged => "a staged action: it runs when its veto window ends, unless vetoed",
            } }
            dt { "Status" } dd { (badge(a.status.as_str())) }
            dt { "Tool" } dd { strong { (a.tool) } @if let Some(p) = &a.project { " in " (p) } }
            dt { "Requester" } dd { (a.principal) @if let Some(agent) = &a.agent { " (agent " (agent) ")" } }
            dt { "Run" } dd { a href={ "/runs/" (a.run_id) } { code { (a.run_id) } } " · call " code { (a.call_id) } }
            dt { "Policy" } dd { "revision " (a.policy_revision) ", rule " code { (a.rule) } }
            dt { "Arguments hash" } dd { code.hash { (a.args_hash) } }
            @if a.deciders > 1 || a.self_denied_by.is_some() {
                dt { "Four eyes" } dd {
                    @if a.deciders > 1 {
                        (a.approvers.len()) " of " (a.deciders) " approvals"
                        @if !a.approvers.is_empty() { " (" (a.approvers.join(", ")) ")" }
                    }
                    @if a.deciders > 1 && a.self_denied_by.is_some() { " · " }
                    @if let Some(rule) = &a.self_denied_by { "not decided by its requester (" code { (rule) } ")" }
                }
            }
            dt { "Parked" } dd { (fmt::time(a.created_at)) }
            dt { @if a.kind == ApprovalKind::Staged { "Runs at" } @else { "Expires" } }
            dd { (fmt::time(a.due_at)) @if waiting { " · " (deadline(&a, state.control.now().0)) } }
            @if let Some(at) = a.decided_at {
                dt { "Decided" } dd { (fmt::time(at)) @if let Some(d) = &decider { " by " (d) } @if let Some(r) = &a.reason { " — “" (r) "”" } }
            }
            @if a.outcome_code.is_some() || a.outcome_message.is_some() {
                dt { "Outcome" } dd { @if let Some(c) = a.outcome_code { code { (c.as_str()) } " " } (a.outcome_message.as_deref().unwrap_or("")) }
            } @else if a.status == ApprovalStatus::Executed {
                dt { "Outcome" } dd { "executed" }
            }
        }
        @if let Some(args) = shown_arguments(&state, &a) {
            h2 { "Arguments" } (json_block(&args))
        }
        @if let Some(result) = &a.result {
            h2 { "Result" } (json_block(result))
        }
        @if waiting && signed.holds(APPROVALS_DECIDE) {
            h2 { "Decide" } (decide_form(&a, &signed.csrf))
        }
        p { a href="/approvals" { "Back to the inbox" } }
    };
    let title = format!("Approval {}", a.id);
    layout::page(&signed, Section::Approvals, &title, body).into_response()
}
