//! When an epic task is stale (WORK-4): `in_progress` with no activity for its Reconciler's
//! `staleAfter`. Activity is a move or a review of the epic task, a change of its task, a
//! session of the task queued, started or ended, or a tool call of one of its sessions. The
//! Reconcilers pick their candidates with it, and the move back to `ready` checks it again when
//! it runs — an approved move of a task that came back to life is refused.

use std::time::Duration;

use warden_core::time::Millis;
use warden_store::{AuditFilter, EpicTask, Store, StoreError};

/// The time before which activity does not count, for `stale_after` at `now`.
pub fn cutoff(stale_after: Duration, now: Millis) -> Millis {
    let span = i64::try_from(stale_after.as_millis()).unwrap_or(i64::MAX);
    Millis(now.0.saturating_sub(span))
}

/// The time of the first activity of `task` seen at or after `cutoff`, if any.
pub async fn active_since(
    store: &Store,
    task: &EpicTask,
    cutoff: Millis,
) -> Result<Option<Millis>, StoreError> {
    if task.updated_at >= cutoff {
        return Ok(Some(task.updated_at));
    }
    if let Some(review) = store
        .reviews(&task.id)
        .await?
        .into_iter()
        .find(|r| r.at >= cutoff)
    {
        return Ok(Some(review.at));
    }
    if let Some(t) = store.task(&task.task_id).await?
        && t.updated_at >= cutoff.0
    {
        return Ok(Some(Millis(t.updated_at)));
    }
    for run in store.runs_of_task(&task.task_id).await? {
        let times = [Some(run.queued_at), run.started_at, run.finished_at];
        if let Some(at) = times.into_iter().flatten().find(|at| *at >= cutoff.0) {
            return Ok(Some(Millis(at)));
        }
        let calls = AuditFilter {
            run_id: Some(run.id.clone()),
            since: Some(cutoff),
            limit: Some(1),
            ..AuditFilter::default()
        };
        if let Some(call) = store.audit(&calls).await?.first() {
            return Ok(Some(call.record.at));
        }
    }
    Ok(None)
}
