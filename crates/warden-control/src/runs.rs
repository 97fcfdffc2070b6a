//! Runs (OBS-2, AGT-*): who ran what, with which authority, and the lifecycle of agent runs —
//! the admin API, the console and `warden runs` alike. Each needs `runs:read`.

use warden_core::audit::AuditRecord;
use warden_core::capability::RUNS_READ;
use warden_core::policy::Policy;
use warden_store::{AgentRun, AuditFilter, RunDetail, RunSummary};

use crate::{Caller, Control, Refusal};

/// The most records of one run [`calls`] reads.
const MAX_RUN_RECORDS: i64 = 5_000;

/// The newest `limit` runs (at least 1), of `agent` when given.
pub async fn list(
    control: &Control,
    caller: &Caller,
    agent: Option<&str>,
    limit: i64,
) -> Result<Vec<RunSummary>, Refusal> {
    caller.require(RUNS_READ, "listing runs")?;
    if limit < 1 {
        return Err(Refusal::Invalid {
            field: "limit",
            message: "must be at least 1".into(),
        });
    }
    Ok(control.store().runs(agent, limit).await?)
}

/// The run `id`: its authority, lifecycle and calls.
pub async fn get(control: &Control, caller: &Caller, id: &str) -> Result<RunDetail, Refusal> {
    caller.require(RUNS_READ, "reading runs")?;
    control
        .store()
        .describe_run(id)
        .await?
        .ok_or_else(|| Refusal::NotFound(format!("no run `{id}`")))
}

/// The audit records of the run `id`, oldest first (at most 5,000).
pub async fn records(
    control: &Control,
    caller: &Caller,
    id: &str,
) -> Result<Vec<AuditRecord>, Refusal> {
    caller.require(RUNS_READ, "reading runs")?;
    let filter = AuditFilter {
        run_id: Some(id.to_owned()),
        limit: Some(MAX_RUN_RECORDS),
        ..AuditFilter::default()
    };
    Ok(control.store().audit(&filter).await?)
}

/// The lifecycles of the newest `limit` agent runs, of the configured agent `agent` when
/// given (else of every agent).
pub async fn agent_runs(
    control: &Control,
    policy: &Policy,
    caller: &Caller,
    agent: Option<&str>,
    limit: i64,
) -> Result<Vec<AgentRun>, Refusal> {
    caller.require(RUNS_READ, "listing agent runs")?;
    if let Some(agent) = agent
        && policy.agent(agent).is_none()
    {
        return Err(Refusal::NotFound(format!("no agent named `{agent}`")));
    }
    Ok(control.store().agent_runs(agent, limit).await?)
}
