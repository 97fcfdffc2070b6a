//! The store's epic operations ([`Store::insert_epic`] and the rest).

use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState, State as _};

use super::sql::{EpicRow, EpicTaskRow, MoveRow, Step};
use super::{Epic, EpicChange, EpicFilter, EpicTask, WorkMove};
use crate::Store;
use crate::backend::Backend;
use crate::error::StoreError;

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

    /// The recorded moves of `subject` (an epic or an epic task), the first first.
    pub async fn work_moves(&self, subject: &str) -> Result<Vec<WorkMove>, StoreError> {
        Ok(on!(self, b => b.work_move_rows(subject).await)?
            .into_iter()
            .map(MoveRow::into_move)
            .collect())
    }
}
