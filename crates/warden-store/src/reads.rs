//! Reads for operators that count or summarise: how many audit records match, the parked
//! calls waiting, each run's status. Beside `views.rs`, whose pure functions they use.

use warden_core::approval::ApprovalStatus;

use crate::Store;
use crate::error::StoreError;
use crate::rows::AuditFilter;
use crate::sink::AuditSink as _;
use crate::views::{RunSummary, call_status};

impl Store {
    /// Fills in the status of runs without a lifecycle from their newest record: one small
    /// read per run (the `(run_id, seq)` index), whatever the length of its trail.
    pub(crate) async fn with_call_status(
        &self,
        mut runs: Vec<RunSummary>,
    ) -> Result<Vec<RunSummary>, StoreError> {
        for run in runs.iter_mut().filter(|r| r.status.is_none()) {
            let newest = self
                .backend
                .query_audit(&AuditFilter {
                    run_id: Some(run.id.clone()),
                    newest_first: true,
                    limit: Some(1),
                    ..AuditFilter::default()
                })
                .await?;
            run.status = Some(call_status(newest.first()));
        }
        Ok(runs)
    }

    /// How many audit records match `filter`, whatever its limit (for "showing the newest
    /// 100 of N").
    pub async fn count_audit(&self, filter: &AuditFilter) -> Result<i64, StoreError> {
        self.sink.settle_for_read().await?;
        self.backend.count_audit(filter).await
    }

    /// Parked calls still waiting, by status: `pending` (for a decision) and `staged` (for
    /// their veto window to pass).
    pub async fn waiting_approvals(&self) -> Result<Vec<(ApprovalStatus, i64)>, StoreError> {
        Ok(self
            .backend
            .waiting_approvals()
            .await?
            .into_iter()
            .filter_map(|(status, n)| Some((ApprovalStatus::parse(&status)?, n)))
            .collect())
    }
}
