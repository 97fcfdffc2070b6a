//! The overview: the last hour at a glance — calls per minute by decision, the tools and
//! codes refused most, what waits for a decision, and the upstreams' health — drawn from the
//! audit trail and the gateway, each part shown only to a credential that may read it.
//!
//! Refusals that leave no audit record (a kill switch, a failed schema validation: GOV-2
//! steps 1 and 2) are counted by the gateway of this process (`Gateway::unaudited_refusals`)
//! and shown with the trail's, so that a freeze or a flood of bad requests is never invisible.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};
use warden_control::{Caller, approvals, audit};
use warden_core::approval::ApprovalStatus;
use warden_core::audit::AuditRecord;
use warden_core::time::Millis;
use warden_mcp::gateway::Unaudited;
use warden_mcp::upstream::UpstreamStatus;
use warden_store::AuditFilter;

use super::caps::{AUDIT_READ, Section, TOOLS_INVENTORY};
use super::chart::{self, Series};
use super::fmt;
use super::layout::{badge, page};
use super::signed_in::Signed;
use crate::state::AppState;

const MINUTES: usize = 60;
/// Decisions read for the charts at most (the newest).
const MAX_RECORDS: i64 = 50_000;

const SERIES: [Series; 3] = [
    Series {
        name: "allowed",
        class: "s-allow",
    },
    Series {
        name: "parked or staged",
        class: "s-park",
    },
    Series {
        name: "denied",
        class: "s-deny",
    },
];

/// A refusal of the last hour, from the trail (one record) or the gateway's count of those
/// that leave none.
#[derive(Debug)]
struct Refused {
    at: Millis,
    tool: String,
    code: String,
    count: u64,
}

/// Every refusal of the last hour: the trail's `deny` decisions and the unaudited ones.
fn refusals(records: &[AuditRecord], unaudited: &[Unaudited]) -> Vec<Refused> {
    let audited = records
        .iter()
        .filter(|r| r.record.decision.as_deref() == Some("deny"))
        .map(|r| Refused {
            at: r.record.at,
            tool: r.record.tool.clone().unwrap_or_default(),
            code: r.record.code.clone().unwrap_or_default(),
            count: 1,
        });
    let counted = unaudited.iter().map(|u| Refused {
        at: u.minute,
        tool: u.tool.clone(),
        code: u.code.as_str().to_owned(),
        count: u.count,
    });
    audited.chain(counted).collect()
}

/// Calls per minute by decision, oldest minute first, ending with the current one.
fn per_minute(records: &[AuditRecord], refused: &[Refused], now: Millis) -> Vec<Vec<u64>> {
    let mut buckets = vec![vec![0u64; SERIES.len()]; MINUTES];
    let start_minute = now.0 / 60_000 - (MINUTES as i64 - 1);
    let mut add = |at: Millis, series: usize, n: u64| {
        let Ok(i) = usize::try_from(at.0 / 60_000 - start_minute) else {
            return;
        };
        if let Some(slot) = buckets.get_mut(i).and_then(|b| b.get_mut(series)) {
            *slot += n;
        }
    };
    for r in records {
        match r.record.decision.as_deref() {
            Some("allow") => add(r.record.at, 0, 1),
            Some("park" | "stage") => add(r.record.at, 1, 1),
            _ => {}
        }
    }
    for r in refused {
        add(r.at, 2, r.count);
    }
    buckets
}

/// The `n` most frequent values, most frequent first (ties by name).
fn top(values: impl Iterator<Item = (String, u64)>, n: usize) -> Vec<(String, u64)> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (v, k) in values {
        *counts.entry(v).or_default() += k;
    }
    let mut sorted: Vec<(String, u64)> = counts.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    sorted.truncate(n);
    sorted
}

fn tile(label: &str, value: Markup, link: Option<&str>) -> Markup {
    html! {
        div.tile {
            div.value { (value) }
            div.label { @match link { Some(href) => a href=(href) { (label) }, None => (label) } }
        }
    }
}

/// "12 KILL_SWITCH, 3 VALIDATION": the unaudited refusals by code.
fn unaudited_codes(unaudited: &[Unaudited]) -> String {
    top(
        unaudited
            .iter()
            .map(|u| (u.code.as_str().to_owned(), u.count)),
        usize::MAX,
    )
    .into_iter()
    .map(|(code, n)| format!("{n} {code}"))
    .collect::<Vec<_>>()
    .join(", ")
}

/// `GET /`.
pub(crate) async fn show(State(state): State<Arc<AppState>>, signed: Signed) -> Response {
    let now = state.control.now();
    let caller = Caller::Credential(signed.authority.clone());
    let audit = signed.holds(AUDIT_READ);
    let decisions = if audit {
        audit::records(
            &state.control,
            &caller,
            &AuditFilter {
                kind: Some("decision".into()),
                since: Some(Millis(now.0 - (MINUTES as i64) * 60_000)),
                limit: Some(MAX_RECORDS),
                newest_first: true,
                ..AuditFilter::default()
            },
        )
        .await
        .ok()
    } else {
        None
    };
    let unaudited = if audit {
        state.gateway.unaudited_refusals()
    } else {
        Vec::new()
    };
    let refused = decisions
        .as_deref()
        .map(|d| refusals(d, &unaudited))
        .unwrap_or_default();
    let unaudited_total: u64 = unaudited.iter().map(|u| u.count).sum();
    let waiting = approvals::list(
        &state.control,
        &caller,
        vec![ApprovalStatus::Pending, ApprovalStatus::Staged],
        Some(1000),
    )
    .await
    .map(|a| a.len());
    // The upstreams' state and errors are the inventory's, as `/api/v1/tools/upstreams` is.
    let inventory = signed.holds(TOOLS_INVENTORY);
    let upstreams = if inventory {
        state.gateway.upstreams().all()
    } else {
        Vec::new()
    };
    let up = upstreams
        .iter()
        .filter(|u| matches!(u.status(), UpstreamStatus::Up { .. }))
        .count();
    let labels: Vec<(usize, String)> = [0usize, 15, 30, 45, 59]
        .into_iter()
        .map(|i| {
            let ago = MINUTES - 1 - i;
            (
                i,
                if ago == 0 {
                    "now".into()
                } else {
                    format!("−{ago}m")
                },
            )
        })
        .collect();
    let body = html! {
        div.tiles {
            @if let Some(d) = &decisions {
                @let denied: u64 = refused.iter().map(|r| r.count).sum();
                (tile("decisions in the last hour", html! { (d.len() as u64 + unaudited_total) }, Some("/audit?kind=decision&since=1h")))
                (tile("denied in the last hour", html! { (denied) }, Some("/audit?decision=deny&since=1h")))
            }
            @match waiting {
                Ok(n) => (tile("waiting for a decision", html! { (n) }, Some("/approvals"))),
                Err(_) => (tile("waiting for a decision", html! { "?" }, Some("/approvals"))),
            }
            @if inventory {
                (tile("upstreams up", html! { (up) " / " (upstreams.len()) }, None))
            }
        }
        @if let Some(d) = &decisions {
            section.panel {
                h2 { "Calls per minute by decision" }
                (chart::stacked_bars("Decisions per minute, the last hour", &SERIES, &per_minute(d, &refused, now), &labels))
                @if unaudited_total > 0 {
                    p.muted #unaudited {
                        (unaudited_total) " of the refusals left no audit record: "
                        (unaudited_codes(&unaudited))
                        ". A kill switch and a failed validation come before the audit step; these are counted by this server in the last hour (not by other replicas, and not across a restart)."
                    }
                }
            }
            div.columns {
                section.panel {
                    h2 { "Top refused tools" }
                    (chart::ranking("Denials by tool, the last hour", "s-deny", &top(
                        refused.iter().map(|r| (r.tool.clone(), r.count)), 8)))
                }
                section.panel {
                    h2 { "Top denial codes" }
                    (chart::ranking("Denials by code, the last hour", "s-code", &top(
                        refused.iter().map(|r| (r.code.clone(), r.count)), 8)))
                }
            }
        } @else {
            p.muted { "The charts of the audit trail need the " code { "audit:read" } " capability." }
        }
        @if !inventory {
            p.muted { "The upstreams' health needs the " code { "tools:inventory" } " capability." }
        } @else {
        section.panel {
            h2 { "Upstream health" }
            table.grid.compact #upstreams {
                thead { tr { th { "Upstream" } th { "Project" } th { "State" } th { "Tools" } th { "Detail" } } }
                tbody {
                    @if upstreams.is_empty() { tr.empty { td colspan="5" { "No upstreams are configured." } } }
                    @for u in upstreams.iter() {
                        @let status = u.status();
                        tr {
                            td { strong { (u.spec.name) } }
                            td { (u.spec.project) }
                            td { @match &status {
                                UpstreamStatus::Up { .. } => (badge("up")),
                                UpstreamStatus::Starting => (badge("starting")),
                                UpstreamStatus::Down { .. } => (badge("down")),
                            } }
                            td { (u.offer().tools.len()) }
                            td { @match &status {
                                UpstreamStatus::Up { protocol } => span.muted { "protocol " (protocol) },
                                UpstreamStatus::Starting => span.muted { "connecting" },
                                UpstreamStatus::Down { reason, failures } => span.muted { (fmt::cut(reason, 120)) " (" (failures) " failures)" },
                            } }
                        }
                    }
                }
            }
        }
        }
    };
    page(&signed, Section::Overview, "Overview", body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, reason = "tests")]

    use super::*;
    use warden_core::audit::{NewRecord, RecordKind};

    fn decision(at: i64, decision: &str) -> AuditRecord {
        AuditRecord {
            seq: 1,
            record: NewRecord {
                at: Millis(at),
                kind: RecordKind::Decision,
                run_id: "run_1".into(),
                call_id: None,
                principal: None,
                agent: None,
                tool: None,
                decision: Some(decision.into()),
                code: None,
                payload: "{}".into(),
            },
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    #[test]
    fn decisions_fall_into_their_minute_of_the_last_hour() {
        let now = Millis(100 * 60_000 + 30_000);
        let records = [
            decision(now.0, "allow"),
            decision(now.0 - 60_000, "deny"),
            decision(now.0 - 59 * 60_000, "park"),
            decision(now.0 - 61 * 60_000, "allow"),
            decision(now.0, "approve"),
        ];
        let refused = refusals(&records, &[]);
        let b = per_minute(&records, &refused, now);
        assert_eq!(b.len(), 60);
        assert_eq!(b[59], vec![1, 0, 0]);
        assert_eq!(b[58], vec![0, 0, 1]);
        assert_eq!(b[0], vec![0, 1, 0]);
        assert_eq!(b.iter().flatten().sum::<u64>(), 3);
    }

    #[test]
    fn the_top_list_is_by_count_then_name() {
        let t = top(
            ["b", "a", "b", "c", "a"]
                .into_iter()
                .map(|s| (s.to_owned(), 1)),
            2,
        );
        assert_eq!(t, vec![("a".into(), 2), ("b".into(), 2)]);
    }
}
