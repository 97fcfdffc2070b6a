//! Runs (OBS-2, AGT-*): who ran what, with which authority, and the lifecycle of agent runs —
//! the admin API, the console and `warden runs` alike. Each needs `runs:read`; starting an
//! agent's run by hand ([`start`]) needs `agents:run`.

use std::sync::Arc;
use warden_core::audit::AuditRecord;

use warden_core::capability::{AGENTS_RUN, RUNS_READ};
use warden_core::policy::Policy;
use warden_core::principal::{Credential, PrincipalRef, Provenance};
use warden_store::{AgentRun, AuditFilter, RunCursor, RunDetail, RunSummary};
use warden_work::agents::{RunError, Runner, Trigger};

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
    Ok(page(control, caller, agent, None, limit, false).await?.runs)
}

/// A page of runs, newest first.
#[derive(Debug)]
pub struct RunsPage {
    /// The runs of the page.
    pub runs: Vec<RunSummary>,
    /// The cursor of the next (older) page, when there is one.
    pub next: Option<String>,
    /// How many runs there are in all, when counted.
    pub matching: Option<i64>,
}

/// The page of at most `limit` runs (at least 1), of `agent` when given, older than the
/// cursor `before` (from [`RunsPage::next`]); with `count`, how many there are in all.
pub async fn page(
    control: &Control,
    caller: &Caller,
    agent: Option<&str>,
    before: Option<&str>,
    limit: i64,
    count: bool,
) -> Result<RunsPage, Refusal> {
    caller.require(RUNS_READ, "listing runs")?;
    if limit < 1 {
        return Err(Refusal::Invalid {
            field: "limit",
            message: "must be at least 1".into(),
        });
    }
    let before = match before {
        Some(text) => Some(RunCursor::parse(text).ok_or_else(|| Refusal::Invalid {
            field: "before",
            message: format!("`{text}` is not a cursor of a runs page (`<ms>.<run id>`)"),
        })?),
        None => None,
    };
    let matching = match count {
        true => Some(control.store().count_runs(agent).await?),
        false => None,
    };
    // One more than asked: whether an older page exists.
    let mut runs = control
        .store()
        .runs(agent, before.as_ref(), limit.saturating_add(1))
        .await?;
    let more = runs.len() as i64 > limit;
    runs.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next = more
        .then(|| runs.last().map(|r| RunCursor::after(r).to_string()))
        .flatten();
    Ok(RunsPage {
        runs,
        next,
        matching,
    })
}

/// The run `id`: its authority, lifecycle and calls.
pub async fn get(control: &Control, caller: &Caller, id: &str) -> Result<RunDetail, Refusal> {
    caller.require(RUNS_READ, "reading runs")?;
    control
        .store()
        .describe_run(id)
        .await?
        .ok_or_else(|| Refusal::not_found(format!("no run `{id}`")))
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
        return Err(Refusal::not_found(format!("no agent named `{agent}`")));
    }
    Ok(control.store().agent_runs(agent, limit).await?)
}

/// Starts a run of `agent` by hand with its manual runner, for the credential `by` (its
/// provenance); with `task`, as a session of that task.
pub async fn start(
    runner: &Arc<Runner>,
    caller: &Caller,
    by: &Credential,
    agent: &str,
    task: Option<&str>,
) -> Result<AgentRun, Refusal> {
    caller.require(AGENTS_RUN, "starting an agent run")?;
    let provenance = Provenance::Principal {
        reference: PrincipalRef::ApiKey {
            id: by.id.clone(),
            owner: by.principal.clone(),
        },
    };
    runner
        .start(agent, Trigger::Manual(provenance), task)
        .await
        .map_err(|e| match e {
            RunError::UnknownAgent(_) | RunError::UnknownTask(_) => {
                Refusal::not_found(e.to_string())
            }
            RunError::NotAMember { .. } => Refusal::unprocessable(e.to_string()),
            RunError::NoRunner(_) | RunError::AlreadyRunning => Refusal::Conflict(e.to_string()),
            RunError::Store(e) => Refusal::Store(e),
        })
}
