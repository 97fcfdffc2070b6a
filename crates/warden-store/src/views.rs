//! Operator views over the audit trail and the agent runs: `warden get runs`,
//! `warden describe run ID`, and the same in the admin API.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use warden_core::audit::{AuditRecord, RecordKind};

use crate::rows::{AgentRun, AuditFilter, AuditRow};

/// One line of `warden get runs`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// The run.
    pub id: String,
    /// When it was opened or queued (ms).
    pub at: i64,
    /// `caller`, `agent` or `service-account` (unknown until the run's first call).
    pub mode: Option<String>,
    /// The principal.
    pub principal: Option<String>,
    /// The agent, if a run of an agent.
    pub agent: Option<String>,
    /// Where the run stands. An unattended agent run: its lifecycle (queued, running,
    /// succeeded, failed, timed_out, stopped). Any other run, which has no end: its last call's —
    /// `executed`, `failed`, `cancelled`, `interrupted`, … (its outcome), `denied`,
    /// `pending_approval`, or `open` while that call has no outcome yet.
    pub status: Option<String>,
}

/// One call of a run, as `warden describe run` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallDetail {
    /// The call.
    pub call_id: String,
    /// When (ms).
    pub at: i64,
    /// The tool as requested.
    pub tool: Option<String>,
    /// `allow` or `deny`.
    pub decision: Option<String>,
    /// The denial code.
    pub code: Option<String>,
    /// The rule that decided.
    pub rule: Option<String>,
    /// `executed` or `failed`, for admitted calls.
    pub outcome: Option<String>,
    /// Duration of the execution (ms).
    pub duration_ms: Option<i64>,
}

/// `warden describe run ID`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDetail {
    /// The run.
    pub id: String,
    /// The run record's payload: mode, principal, credential, agent, effective projects and
    /// why, knowledge-only projects, policy revision.
    pub authority: Option<Value>,
    /// The unattended run's lifecycle, if any.
    pub lifecycle: Option<AgentRun>,
    /// Every call, in order.
    pub calls: Vec<CallDetail>,
}

/// Where a page of runs starts: after the run `id` that started at `at` (ms), in the
/// listing's order (newest first, then by id). Written `<at>.<id>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunCursor {
    /// When the last run of the page before started (ms).
    pub at: i64,
    /// That run.
    pub id: String,
}

impl RunCursor {
    /// The cursor after `run`.
    pub fn after(run: &RunSummary) -> Self {
        Self {
            at: run.at,
            id: run.id.clone(),
        }
    }

    /// Reads `<at>.<id>`; `None` when `text` is not such a cursor.
    pub fn parse(text: &str) -> Option<Self> {
        let (at, id) = text.split_once('.')?;
        let at = at.parse().ok()?;
        (!id.is_empty()).then(|| Self {
            at,
            id: id.to_owned(),
        })
    }

    /// Whether `run` comes after the cursor in the listing's order.
    fn precedes(&self, run: &RunSummary) -> bool {
        (run.at, run.id.as_str()) < (self.at, self.id.as_str())
    }
}

impl std::fmt::Display for RunCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.at, self.id)
    }
}

/// The run records that [`summaries`] reads, newest first: of runs that started at or before
/// the cursor.
pub(crate) fn run_records(
    agent: Option<&str>,
    before: Option<&RunCursor>,
    limit: i64,
) -> AuditFilter {
    AuditFilter {
        kind: Some(RecordKind::Run.as_str().into()),
        agent: agent.map(str::to_owned),
        until: before.map(|c| warden_core::time::Millis(c.at.saturating_add(1))),
        limit: Some(limit.saturating_mul(4)),
        newest_first: true,
        ..AuditFilter::default()
    }
}

/// Runs, newest first, at most `limit`, after `before` when given: those with run records
/// (from [`run_records`]) and the unattended agent runs.
pub(crate) fn summaries(
    records: Vec<AuditRecord>,
    agent_runs: Vec<AgentRun>,
    before: Option<&RunCursor>,
    limit: i64,
) -> Vec<RunSummary> {
    let mut by_id: BTreeMap<String, RunSummary> = BTreeMap::new();
    for r in records {
        let payload: Value = serde_json::from_str(&r.record.payload).unwrap_or(Value::Null);
        by_id
            .entry(r.record.run_id.clone())
            .or_insert_with(|| RunSummary {
                id: r.record.run_id.clone(),
                at: r.record.at.0,
                mode: payload
                    .get("mode")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                principal: r.record.principal.clone(),
                agent: r.record.agent.clone(),
                status: None,
            });
    }
    for run in agent_runs {
        let entry = by_id.entry(run.id.clone()).or_insert_with(|| RunSummary {
            id: run.id.clone(),
            at: run.queued_at,
            mode: Some("agent".into()),
            principal: Some(format!("agent:{}/{}", run.agent, run.id)),
            agent: Some(run.agent.clone()),
            status: None,
        });
        entry.status = Some(run.status.clone());
        entry.at = entry.at.min(run.queued_at);
    }
    let mut runs: Vec<RunSummary> = by_id
        .into_values()
        .filter(|r| before.is_none_or(|c| c.precedes(r)))
        .collect();
    runs.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| b.id.cmp(&a.id)));
    runs.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    runs
}

/// Every record of run `id`, in order, for [`detail`].
pub(crate) fn records_of(id: &str) -> AuditFilter {
    AuditFilter {
        run_id: Some(id.to_owned()),
        limit: Some(1_000_000),
        ..AuditFilter::default()
    }
}

/// Run `id` in detail from its records (from [`records_of`]) and its lifecycle; `None` when
/// there is neither.
pub(crate) fn detail(
    id: &str,
    records: Vec<AuditRecord>,
    lifecycle: Option<AgentRun>,
) -> Option<RunDetail> {
    if records.is_empty() && lifecycle.is_none() {
        return None;
    }
    let mut authority = None;
    let mut calls: Vec<CallDetail> = Vec::new();
    for r in records {
        let payload: Value = serde_json::from_str(&r.record.payload).unwrap_or(Value::Null);
        let text = |k: &str| payload.get(k).and_then(Value::as_str).map(str::to_owned);
        match r.record.kind {
            RecordKind::Run => {
                if authority.is_none() {
                    authority = Some(payload.clone());
                }
            }
            RecordKind::Call => calls.push(CallDetail {
                call_id: r.record.call_id.clone().unwrap_or_default(),
                at: r.record.at.0,
                tool: r.record.tool.clone(),
                ..CallDetail::default()
            }),
            RecordKind::Decision | RecordKind::Outcome => {
                let Some(call) = calls
                    .iter_mut()
                    .rev()
                    .find(|c| Some(&c.call_id) == r.record.call_id.as_ref())
                else {
                    continue;
                };
                if r.record.kind == RecordKind::Decision {
                    call.decision = r.record.decision.clone();
                    call.code = r.record.code.clone();
                    call.rule = text("rule");
                } else {
                    call.outcome = r.record.decision.clone();
                    call.duration_ms = payload.get("duration_ms").and_then(Value::as_i64);
                }
            }
            RecordKind::Admin | RecordKind::Relay => {}
        }
    }
    Some(RunDetail {
        id: id.to_owned(),
        authority,
        lifecycle,
        calls,
    })
}

/// The status of a run without a lifecycle, from its newest audit record (see
/// [`RunSummary::status`]).
pub(crate) fn call_status(newest: Option<&AuditRow>) -> String {
    let Some(row) = newest else {
        return "open".into();
    };
    let decision = row.decision.as_deref().unwrap_or_default();
    match row.kind.as_str() {
        "outcome" if !decision.is_empty() => decision.to_owned(),
        "decision" => match decision {
            "deny" => "denied".into(),
            "park" | "stage" => "pending_approval".into(),
            _ => "open".into(),
        },
        _ => "open".into(),
    }
}
