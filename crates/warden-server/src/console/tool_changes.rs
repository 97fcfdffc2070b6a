//! Changed tool definitions (GOV-9): the tools held for review, and one change beside its pin
//! as a readable diff — the description word by word, the whole definition line by line — with
//! Accept and Reject. The rules are `warden_control::tools`'.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};
use warden_control::Caller;
use warden_control::tools::{self, Change, Verdict};

use super::caps::Section;
use super::fmt;
use super::layout::{badge, csrf_field, page, refused, see_other};
use super::signed_in::Signed;
use crate::state::AppState;

/// `GET /tools/changes`.
pub(crate) async fn list(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    let caller = Caller::Credential(signed.authority.clone());
    let changes = match tools::changes(&state.control, &caller).await {
        Ok(c) => c,
        Err(e) => return refused(&signed, &e),
    };
    let body = html! {
        p.lead {
            @if changes.is_empty() {
                "No tool definition differs from its pin."
            } @else {
                (changes.len()) " tool definitions differ from their pins. Held ones are out of every catalog — refused as unknown tools — until accepted."
            }
        }
        @if !changes.is_empty() {
            table.grid #changes {
                thead { tr { th { "Tool" } th { "Project" } th { "State" } th { "Since" } th { "Description offered" } } }
                tbody {
                    @for c in &changes {
                        tr data-tool=(c.tool) {
                            td { a href={ "/tools/changes/" (fmt::encode(&c.tool)) } { code { (c.tool) } } }
                            td { (c.project) }
                            td { (badge(c.state)) }
                            td { (fmt::time(c.offered_at.0)) }
                            td { (fmt::cut(description(&c.offered), 120)) }
                        }
                    }
                }
            }
        }
    };
    page(&signed, Section::Tools, "Changed tool definitions", body)
}

/// `GET /tools/changes/{tool}`.
pub(crate) async fn detail(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(tool): Path<String>,
) -> Response {
    let caller = Caller::Credential(signed.authority.clone());
    let c = match tools::change(&state.control, &caller, &tool).await {
        Ok(c) => c,
        Err(e) => return refused(&signed, &e),
    };
    let before = c.pinned.as_ref().map(description).unwrap_or_default();
    let body = html! {
        p.lead {
            code { (c.tool) } " of upstream " code { (c.upstream) } " (project " (c.project) ") "
            (badge(c.state)) ": "
            @match c.state {
                "new" => "it appeared after the upstream's tools were pinned.",
                "rejected" => "this definition was rejected; the tool stays out until its upstream offers another.",
                _ => "its upstream offers a definition different from the one pinned.",
            }
        }
        h2 { "Description" }
        div.diff #description { (words(before, description(&c.offered))) }
        h2 { "Definition" }
        p.muted { "Pinned " (c.pinned_hash.as_deref().unwrap_or("(none)")) " → offered " (c.offered_hash) ", first seen " (fmt::time(c.offered_at.0)) }
        pre.diff #definition { (lines(c.pinned.as_ref(), &c.offered)) }
        h2 { "Review" }
        (review(&signed, &c))
    };
    page(
        &signed,
        Section::Tools,
        &format!("Change of {}", c.tool),
        body,
    )
}

fn review(signed: &Signed, c: &Change) -> Markup {
    let action = |verb: &str| format!("/tools/changes/{}/{verb}", fmt::encode(&c.tool));
    html! {
        div.actions {
            form method="post" action=(action("accept")) data-confirm={ "Accept this definition of " (c.tool) "? Agents see it on every replica at once." } {
                (csrf_field(signed))
                input type="hidden" name="hash" value=(c.offered_hash);
                button.primary type="submit" { "Accept" }
            }
            @if c.state != "rejected" {
                form method="post" action=(action("reject")) {
                    (csrf_field(signed))
                    input type="hidden" name="hash" value=(c.offered_hash);
                    button type="submit" { "Reject" }
                }
            }
        }
    }
}

/// The review form: the definition reviewed.
#[derive(Debug, Deserialize)]
pub(crate) struct ReviewForm {
    #[serde(default)]
    hash: String,
}

/// `POST /tools/changes/{tool}/accept`.
pub(crate) async fn accept(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(tool): Path<String>,
    axum::Form(form): axum::Form<ReviewForm>,
) -> Response {
    decide(&state, &signed, &tool, Verdict::Accept, &form).await
}

/// `POST /tools/changes/{tool}/reject`.
pub(crate) async fn reject(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(tool): Path<String>,
    axum::Form(form): axum::Form<ReviewForm>,
) -> Response {
    decide(&state, &signed, &tool, Verdict::Reject, &form).await
}

async fn decide(
    state: &AppState,
    signed: &Signed,
    tool: &str,
    verdict: Verdict,
    form: &ReviewForm,
) -> Response {
    let caller = Caller::Credential(signed.authority.clone());
    let hash = Some(form.hash.trim()).filter(|h| !h.is_empty());
    match tools::decide(&state.control, &caller, tool, verdict, hash).await {
        Ok(d) => {
            tracing::info!(%tool, state = d.state, by = %signed.credential.principal, "tool definition reviewed in the console");
            let said = match verdict {
                Verdict::Accept => "accepted: it is served again",
                Verdict::Reject => {
                    "rejected: it stays out until its upstream offers another definition"
                }
            };
            signed.flash(format!("Tool {tool} {said}.")).await;
            see_other("/tools/changes")
        }
        Err(e) => refused(signed, &e),
    }
}

fn description(definition: &Value) -> &str {
    definition
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `before` → `after` word by word.
fn words(before: &str, after: &str) -> Markup {
    let diff = TextDiff::from_words(before, after);
    html! {
        @for change in diff.iter_all_changes() {
            @match change.tag() {
                ChangeTag::Equal => (change.value()),
                ChangeTag::Delete => del { (change.value()) },
                ChangeTag::Insert => ins { (change.value()) },
            }
        }
    }
}

/// The pinned definition → the offered one, line by line as indented JSON.
fn lines(before: Option<&Value>, after: &Value) -> Markup {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    let before = before.map(pretty).unwrap_or_default();
    let after = pretty(after);
    let diff = TextDiff::from_lines(&before, &after);
    html! {
        @for change in diff.iter_all_changes() {
            @match change.tag() {
                ChangeTag::Equal => { "  " (change.value()) }
                ChangeTag::Delete => span.del { "- " (change.value()) }
                ChangeTag::Insert => span.ins { "+ " (change.value()) }
            }
        }
    }
}
