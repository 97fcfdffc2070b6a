//! Reviews of epic tasks (WORK-2): recorded in order, never changed; the review gate reads
//! them back.

use warden_core::time::Millis;
use warden_core::work::{EpicTaskState, State as _, Verdict};

use super::Review;
use super::sql::ReviewRow;
use crate::Store;
use crate::backend::Backend;
use crate::error::StoreError;

impl ReviewRow {
    pub(crate) fn into_review(self) -> Result<Review, StoreError> {
        let verdict = Verdict::parse(&self.verdict).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "the verdict `{}` is stored, which this warden does not know",
                self.verdict
            ))
        })?;
        Ok(Review {
            epic_task_id: self.epic_task_id,
            seq: self.seq,
            reviewer: self.reviewer,
            verdict,
            comment: self.comment,
            head: self.head,
            critical: self.critical != 0,
            at: Millis(self.at),
        })
    }
}

impl Store {
    /// Records `review` of an epic task in `review` (its `seq` is given here, after the
    /// task's last) and, with `then`, moves the task there, recorded as moved by the
    /// reviewer — all in one transaction. Its number, or `None` (nothing written) when the
    /// task is no longer in `review`.
    pub async fn insert_review(
        &self,
        review: &Review,
        then: Option<EpicTaskState>,
    ) -> Result<Option<i64>, StoreError> {
        let then = then.map(|s| s.as_str());
        match &self.backend {
            Backend::Sqlite(b) => b.insert_review(review, then).await,
            Backend::Postgres(b) => b.insert_review(review, then).await,
        }
    }

    /// The reviews of the epic task `id`, the first first.
    pub async fn reviews(&self, id: &str) -> Result<Vec<Review>, StoreError> {
        let rows = match &self.backend {
            Backend::Sqlite(b) => b.review_rows(id).await?,
            Backend::Postgres(b) => b.review_rows(id).await?,
        };
        rows.into_iter().map(ReviewRow::into_review).collect()
    }
}
