//! The store's epic operations ([`Store::insert_epic`] and the rest).

use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState, State as _};

use super::sql::{EpicRow, EpicTaskRow, MoveRow, Step};
use super::{Epic, EpicChange, EpicFilter, EpicTask, Report, WorkMove};
use crate::Store;
use crate::backend::Backend;
use crate::error::StoreError;

/// How long a GitProvider's deliveries are remembered, so that a repeated one is ignored
/// (forges redeliver within days).
pub(crate) const DELIVERIES_KEPT: std::time::Duration =
    std::time::Duration::from_secs(30 * 24 * 3600);

/// The most epics one read returns.
const MAX_LIMIT: i64 = 10_000;

/// Calls the backend the store was opened on.
macro_rules! on {
    ($store:ident, $b:ident => $e:expr) => {
        match &$store.backend {
            Backend::Sqlite($b) => $e,
            Backend::Postgres($b) => $e,
        }
    };
}

impl Store {
    /// Stores a new epic and records its creation as its first move.
    pub async fn insert_epic(&self, epic: &Epic) -> Result<(), StoreError> {
        on!(self, b => b.insert_epic(epic).await)
    }

    /// The epic `id`.
    pub async fn epic(&self, id: &str) -> Result<Option<Epic>, StoreError> {
        on!(self, b => b.epic_row(id).await)?
            .map(EpicRow::into_epic)
            .transpose()
    }

    /// The last changed `limit` epics that `filter` lets through, the newest first.
    pub async fn epics(&self, filter: &EpicFilter, limit: i64) -> Result<Vec<Epic>, StoreError> {
        let limit = limit.clamp(1, MAX_LIMIT);
        on!(self, b => b.epic_rows(filter, limit).await)?
            .into_iter()
            .map(EpicRow::into_epic)
            .collect()
    }

    /// Sets what `change` gives of the epic `id`; false when there is no such epic.
    pub async fn update_epic(
        &self,
        id: &str,
        change: &EpicChange,
        now: Millis,
    ) -> Result<bool, StoreError> {
        on!(self, b => b.update_epic(id, change, now.0).await)
    }

    /// Moves the epic `id` from `from` to `to`, recording who moved it: false when it is not
    /// in `from` (moved meanwhile, on any replica, or gone).
    pub async fn move_epic(
        &self,
        id: &str,
        from: EpicState,
        to: EpicState,
        moved_by: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let step = Step {
            table: "epics",
            id,
            from: from.as_str(),
            to: to.as_str(),
            moved_by,
            merge_commit: None,
            at: now.0,
        };
        on!(self, b => b.move_work(&step).await)
    }

    /// Stores a new epic task and records its creation as its first move.
    pub async fn insert_epic_task(&self, task: &EpicTask) -> Result<(), StoreError> {
        on!(self, b => b.insert_epic_task(task).await)
    }

    /// The epic task `id`.
    pub async fn epic_task(&self, id: &str) -> Result<Option<EpicTask>, StoreError> {
        on!(self, b => b.epic_task_row(id).await)?
            .map(EpicTaskRow::into_task)
            .transpose()
    }

    /// The tasks of the epic `epic_id`, in the order they were added.
    pub async fn epic_tasks(&self, epic_id: &str) -> Result<Vec<EpicTask>, StoreError> {
        on!(self, b => b.epic_task_rows(epic_id).await)?
            .into_iter()
            .map(EpicTaskRow::into_task)
            .collect()
    }

    /// Moves the epic task `id` from `from` to `to`, recording who moved it and, for a merge,
    /// its merge commit: false when it is not in `from`.
    pub async fn move_epic_task(
        &self,
        id: &str,
        from: EpicTaskState,
        to: EpicTaskState,
        moved_by: &str,
        merge_commit: Option<&str>,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let step = Step {
            table: "epic_tasks",
            id,
            from: from.as_str(),
            to: to.as_str(),
            moved_by,
            merge_commit,
            at: now.0,
        };
        on!(self, b => b.move_work(&step).await)
    }

    /// The merged epic tasks of `project` whose merge commit is `commit`.
    pub async fn merged_epic_tasks(
        &self,
        project: &str,
        commit: &str,
    ) -> Result<Vec<EpicTask>, StoreError> {
        on!(self, b => b.merged_epic_task_rows(project, commit).await)?
            .into_iter()
            .map(EpicTaskRow::into_task)
            .collect()
    }

    /// Records `report` of the epic task `id`; false when there is no such task.
    pub async fn report_epic_task(
        &self,
        id: &str,
        report: Report<'_>,
        now: Millis,
    ) -> Result<bool, StoreError> {
        on!(self, b => b.set_epic_task_report(id, &report, now.0).await)
    }

    /// Whether the GitProvider `provider` took a delivery known by any of `ids` before.
    pub async fn git_delivery_seen(
        &self,
        provider: &str,
        ids: &[String],
    ) -> Result<bool, StoreError> {
        if ids.is_empty() {
            return Ok(false);
        }
        on!(self, b => b.git_delivery_seen(provider, ids).await)
    }

    /// Records that the GitProvider `provider` took the delivery known by `ids`, forgetting
    /// its deliveries older than [`DELIVERIES_KEPT`].
    pub async fn record_git_delivery(
        &self,
        provider: &str,
        ids: &[String],
        now: Millis,
    ) -> Result<(), StoreError> {
        let kept = i64::try_from(DELIVERIES_KEPT.as_millis()).unwrap_or(i64::MAX);
        let before = now.0.saturating_sub(kept);
        on!(self, b => b.insert_git_deliveries(provider, ids, now.0, before).await)
    }

    /// The recorded moves of `subject` (an epic or an epic task), the first first.
    pub async fn work_moves(&self, subject: &str) -> Result<Vec<WorkMove>, StoreError> {
        Ok(on!(self, b => b.work_move_rows(subject).await)?
            .into_iter()
            .map(MoveRow::into_move)
            .collect())
    }
}
