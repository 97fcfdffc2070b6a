//! Audit search with the filters of `warden audit` (AUD-4): run, principal, agent, tool,
//! decision, code, kind and time; export of the same selection as JSON Lines; verification
//! of the whole chain (AUD-2).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::{Deserialize, Serialize};
use warden_control::Caller;
use warden_control::audit::{self, Verification};
use warden_core::audit::{DECISIONS, KINDS};
use warden_core::time::Millis;
use warden_store::AuditFilter;

use super::caps::{AUDIT_READ, Section};
use super::fmt;
use super::layout::{closed, csrf_field, page, refusal, refused};
use super::runs::trail;
use super::signed_in::Signed;
use crate::state::AppState;

/// The search form, as the page's address carries it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub(crate) struct Search {
    #[serde(default)]
    run: String,
    #[serde(default)]
    principal: String,
    #[serde(default)]
    agent: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    /// Free text, found in any field.
    #[serde(default)]
    q: String,
    #[serde(default)]
    limit: Option<i64>,
    /// The page's cursor: records older than this sequence number.
    #[serde(default)]
    before: Option<i64>,
}

fn some(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

impl Search {
    fn filter(&self, max: i64, now: Millis) -> Result<AuditFilter, String> {
        let time = |t: &str| some(t).map(|t| fmt::parse_time(&t, now)).transpose();
        Ok(AuditFilter {
            run_id: some(&self.run),
            principal: some(&self.principal),
            agent: some(&self.agent),
            tool: some(&self.tool),
            decision: some(&self.decision),
            code: some(&self.code),
            kind: some(&self.kind),
            since: time(&self.since).map_err(|e| format!("since: {e}"))?,
            until: time(&self.until).map_err(|e| format!("until: {e}"))?,
            contains: some(&self.q),
            limit: Some(self.limit.unwrap_or(100).clamp(1, max)),
            newest_first: true,
            after_seq: None,
        })
    }

    /// The search with its times as they are now (`1h` → the time an hour ago), and its page
    /// size: what the pages after this one search, so that paging does not move with the
    /// clock.
    fn pinned(&self, now: Millis) -> String {
        let pin = |t: &str| match some(t).map(|t| fmt::parse_time(&t, now)) {
            Some(Ok(at)) => fmt::time(at.0),
            _ => t.to_owned(),
        };
        let pinned = Self {
            since: pin(&self.since),
            until: pin(&self.until),
            ..self.clone()
        };
        match self.limit {
            Some(n) => format!("{}&limit={n}", pinned.query()),
            None => pinned.query(),
        }
    }

    fn query(&self) -> String {
        let pairs: Vec<String> = [
            ("run", &self.run),
            ("principal", &self.principal),
            ("agent", &self.agent),
            ("tool", &self.tool),
            ("decision", &self.decision),
            ("code", &self.code),
            ("kind", &self.kind),
            ("since", &self.since),
            ("until", &self.until),
            ("q", &self.q),
        ]
        .into_iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| format!("{k}={}", fmt::encode(v.trim())))
        .collect();
        pairs.join("&")
    }
}

/// Records on one page, unless the address asks for another number.
const PAGE: i64 = 100;

/// `GET /audit`.
pub(crate) async fn search(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Query(q): Query<Search>,
) -> Response {
    if !signed.holds(AUDIT_READ) {
        return closed(&signed, Section::Audit);
    }
    let caller = Caller::Credential(signed.authority.clone());
    let size = q.limit.unwrap_or(PAGE).clamp(1, audit::MAX_PAGE);
    let (found, problem) = match q.filter(audit::MAX_PAGE, state.control.now()) {
        Ok(filter) => {
            match audit::page(&state.control, &caller, filter, q.before, size, true).await {
                Ok(p) => (Some(p), None),
                Err(e) => (None, Some(e.to_string())),
            }
        }
        Err(e) => (None, Some(e)),
    };
    let records = found.as_ref().map_or(&[][..], |p| &p.records[..]);
    let matching = found.as_ref().and_then(|p| p.matching).unwrap_or(0);
    let next = found.as_ref().and_then(|p| p.next);
    let query = q.query();
    let pages = q.pinned(state.control.now());
    let amp = if pages.is_empty() { "" } else { "&" };
    let text = |name: &'static str, label: &'static str, value: &str, hint: &'static str| {
        html! { label { (label) input type="text" name=(name) value=(value) placeholder=(hint); } }
    };
    let body = html! {
        form.filters #audit-search method="get" action="/audit" {
            (text("run", "Run", &q.run, "run_…"))
            (text("principal", "Principal", &q.principal, "user:alice"))
            (text("agent", "Agent", &q.agent, ""))
            (text("tool", "Tool", &q.tool, "ledger__refund"))
            label { "Decision" select name="decision" {
                option value="" { "any" }
                @for d in DECISIONS { option value=(d) selected[q.decision == d] { (d) } }
            } }
            (text("code", "Code", &q.code, "CAPABILITY"))
            label { "Kind" select name="kind" {
                option value="" { "any" }
                @for k in KINDS { option value=(k) selected[q.kind == k] { (k) } }
            } }
            (text("since", "Since", &q.since, "1h or 2026-12-02T14:00"))
            (text("until", "Until", &q.until, ""))
            (text("q", "Text", &q.q, "any id, name, rule or value"))
            button type="submit" { "Search" }
            a.button href={ "/audit/export?" (query) } download="audit.jsonl" { "Export JSON Lines" }
        }
        @if let Some(p) = &problem { p.refusal role="alert" { (fmt::prose(p)) } }
        p.muted #showing {
            @if records.is_empty() { "No records match." } @else {
                "Showing " (records.len()) " of " (matching) " matching records, newest first"
                @if let (Some(first), Some(last)) = (records.first(), records.last()) { " (#" (first.seq) " to #" (last.seq) ")" }
                ". The export takes up to 100,000."
            }
        }
        (trail(records, true))
        nav.pager {
            @if q.before.is_some() { a.button href={ "/audit?" (query) } { "Newest" } " " }
            @if let Some(n) = next { a.button #older href={ "/audit?" (pages) (amp) "before=" (n) } { "Older" } }
        }
        h2 { "Verify the chain" }
        form method="post" action="/audit/verify" {
            (csrf_field(&signed))
            p.muted { "Recomputes every record's hash from the first one and checks the chain's end." }
            button type="submit" { "Verify" }
        }
    };
    page(&signed, Section::Audit, "Audit", body)
}

/// `GET /audit/export`: the selection as JSON Lines.
pub(crate) async fn export(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Query(q): Query<Search>,
) -> Response {
    if !signed.holds(AUDIT_READ) {
        return closed(&signed, Section::Audit);
    }
    let mut filter = match q.filter(100_000, state.control.now()) {
        Ok(f) => f,
        Err(e) => return refusal(&signed, StatusCode::BAD_REQUEST, &e),
    };
    filter.limit = Some(q.limit.unwrap_or(100_000).clamp(1, 100_000));
    filter.newest_first = false;
    let caller = Caller::Credential(signed.authority.clone());
    match audit::records(&state.control, &caller, &filter).await {
        Ok(records) => {
            let mut out = String::new();
            for r in &records {
                // As `warden audit -o json` writes it: the payload as JSON, not as a string.
                let Ok(mut v) = serde_json::to_value(r) else {
                    continue;
                };
                if let Some(obj) = v.as_object_mut()
                    && let Some(serde_json::Value::String(p)) = obj.get("payload")
                {
                    let parsed = serde_json::from_str(p)
                        .unwrap_or_else(|_| serde_json::Value::String(p.clone()));
                    obj.insert("payload".into(), parsed);
                }
                if let Ok(line) = serde_json::to_string(&v) {
                    out.push_str(&line);
                    out.push('\n');
                }
            }
            (
                [
                    (header::CONTENT_TYPE, "application/jsonl; charset=utf-8"),
                    (
                        header::CONTENT_DISPOSITION,
                        "attachment; filename=\"audit.jsonl\"",
                    ),
                ],
                out,
            )
                .into_response()
        }
        Err(e) => refused(&signed, &e),
    }
}

/// `POST /audit/verify`.
pub(crate) async fn verify(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    if !signed.holds(AUDIT_READ) {
        return closed(&signed, Section::Audit);
    }
    let caller = Caller::Credential(signed.authority.clone());
    let body = match audit::verify(&state.control, &caller, None, Vec::new(), |_| {}).await {
        Ok(Verification::Intact { records: n, .. }) => html! {
            p.flash.good #verified role="status" { "The chain is intact: " (n) " records, each hash recomputed." }
        },
        Ok(Verification::Broken(b)) => html! {
            p.refusal #verified role="alert" { "The chain is broken at record " (b.seq) ": " (format!("{:?}", b.problem)) "." }
        },
        Err(e) => return refused(&signed, &e),
    };
    let body = html! { (body) p { a href="/audit" { "Back to the search" } } };
    page(&signed, Section::Audit, "Audit verification", body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_link_carries_the_filters_encoded() {
        let q = Search {
            principal: "user:alice".into(),
            since: " 1h ".into(),
            ..Search::default()
        };
        assert_eq!(q.query(), "principal=user%3Aalice&since=1h");
    }
}
