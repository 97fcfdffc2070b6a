//! Crash reconciliation (REL-3): a call that was allowed, and whose process stopped before it
//! recorded what happened (`kill -9`, a power cut), gets an outcome record `interrupted` — in
//! `warden audit` and `warden describe run` like any outcome — and is never run again.
//!
//! A call still running in this or another process (`warden stdio` on the same data
//! directory, another replica) has no outcome yet either, so only calls decided longer ago
//! than any call may run are taken: the longest upstream timeout configured (60 s by
//! default) plus a margin. The first sweep, at start, marks what an earlier process left; later
//! sweeps, every [`SWEEP_EVERY`], mark what became old enough since. Each sweep reads the
//! chain in windows of [`WINDOW`] records from where the last one was sure it had seen
//! everything.

use std::collections::VecDeque;
use std::sync::Weak;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use warden_core::config::{Kind, Resource};
use warden_core::pipeline::{Clock as _, interrupted_record};
use warden_core::time::Millis;

use super::state::Gateway;
use crate::upstream::DEFAULT_CALL_TIMEOUT;

/// How often the chain is swept.
const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// Beyond the longest call timeout: time for an outcome to be recorded, and clock skew between
/// replicas.
const MARGIN: Duration = Duration::from_secs(30);
/// Records read per query.
const WINDOW: i64 = 50_000;

/// Sweeps until `cancel`.
pub(super) async fn sweep_forever(gateway: Weak<Gateway>, cancel: CancellationToken) {
    // (time of a sweep, head of the chain then): once that time is older than a cutoff,
    // every record up to that head was decided before the cutoff.
    let mut heads: VecDeque<(Millis, i64)> = VecDeque::new();
    let mut done_upto = 0;
    let mut timer = tokio::time::interval(SWEEP_EVERY);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = timer.tick() => {}
        }
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        match sweep(&gateway, &mut heads, done_upto).await {
            Ok(upto) => done_upto = upto,
            Err(e) => {
                tracing::warn!(error = %e, "crash reconciliation could not read the audit trail; next sweep retries")
            }
        }
    }
}

/// One sweep: marks the unfinished calls older than the cutoff after `done_upto`; returns up
/// to where the next sweep need not look again.
async fn sweep(
    gateway: &Gateway,
    heads: &mut VecDeque<(Millis, i64)>,
    done_upto: i64,
) -> Result<i64, warden_store::StoreError> {
    let now = gateway.clock.now();
    let cutoff = Millis(
        now.0
            .saturating_sub(millis(longest_timeout(gateway) + MARGIN)),
    );
    let head = gateway.store.audit_head().await?;
    let mut from = done_upto;
    while from < head {
        let to = (from + WINDOW).min(head);
        for decision in gateway.store.unfinished_calls(from, to, cutoff).await? {
            let record = interrupted_record(&decision, now);
            gateway.store.append_audit(vec![record]).await?;
            tracing::warn!(
                run = %decision.record.run_id,
                tool = decision.record.tool.as_deref().unwrap_or_default(),
                "a call allowed before a stop has no outcome: recorded as interrupted, not run again"
            );
        }
        from = to;
    }
    heads.push_back((now, head));
    // Every record up to the head of a sweep older than the cutoff is settled.
    let mut settled = done_upto;
    while let Some(&(at, seen)) = heads.front() {
        if at.0 >= cutoff.0 {
            break;
        }
        settled = settled.max(seen);
        heads.pop_front();
    }
    Ok(settled)
}

/// The longest upstream timeout of the current configuration.
fn longest_timeout(gateway: &Gateway) -> Duration {
    let snapshot = gateway.snapshot();
    snapshot
        .policy
        .config
        .of_kind(Kind::Upstream)
        .filter_map(|r| match r {
            Resource::Upstream(u) => u.timeout,
            _ => None,
        })
        .fold(DEFAULT_CALL_TIMEOUT, Duration::max)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
