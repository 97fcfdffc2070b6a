//! The deliveries' rows and their sqlx operations, the same SQL on both backends.

use warden_core::time::Millis;

use super::{Delivery, DeliveryStatus};

/// The columns of a [`DeliveryRow`].
pub(crate) const COLUMNS: &str =
    "id, notifier, event, body, created_at, status, attempts, next_at, last_at, last_error";

/// A row of `notifications`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct DeliveryRow {
    id: String,
    notifier: String,
    event: String,
    body: String,
    created_at: i64,
    status: String,
    attempts: i64,
    next_at: i64,
    last_at: Option<i64>,
    last_error: Option<String>,
}

impl DeliveryRow {
    pub(crate) fn into_delivery(self) -> Delivery {
        Delivery {
            id: self.id,
            notifier: self.notifier,
            event: self.event,
            body: self.body,
            created_at: Millis(self.created_at),
            status: DeliveryStatus::parse(&self.status),
            attempts: u32::try_from(self.attempts).unwrap_or(u32::MAX),
            next_at: Millis(self.next_at),
            last_at: self.last_at.map(Millis),
            last_error: self.last_error,
        }
    }
}

/// The records that may hold an event (`warden_core::notify::notices`): operators' changes and
/// approvals' decisions. Calls' records, nearly all of the trail, are skipped in the query.
pub(crate) const NOTABLE: &str = "kind = 'admin' OR (kind = 'decision' AND decision IN \
     ('park', 'stage', 'approve', 'reject', 'veto', 'expire'))";

/// The deliveries' sqlx operations, expanded in each backend's `impl` block.
macro_rules! notification_operations {
    ($db:ty) => {
        pub(crate) async fn notify_cursor(&self) -> Result<Option<i64>, $crate::error::StoreError> {
            Ok(sqlx::query_scalar("SELECT seq FROM notify_cursor WHERE id = 1")
                .fetch_optional(&self.pool)
                .await?)
        }

        pub(crate) async fn notable_records(
            &self,
            after: i64,
            through: i64,
            limit: i64,
        ) -> Result<Vec<$crate::rows::AuditRow>, $crate::error::StoreError> {
            let statement = format!(
                "SELECT {} FROM audit WHERE seq > $1 AND seq <= $2 AND ({}) ORDER BY seq LIMIT $3",
                $crate::rows::AUDIT_COLUMNS,
                $crate::notifications::sql::NOTABLE
            );
            Ok(sqlx::query_as(sqlx::AssertSqlSafe(statement))
                .bind(after)
                .bind(through)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?)
        }

        /// Inserts `rows` (those already there are kept) and moves the cursor from `from` to
        /// `to` unless another replica moved it first; `false` then.
        pub(crate) async fn enqueue_notifications(
            &self,
            rows: &[$crate::notifications::NewDelivery],
            cursor: Option<(Option<i64>, i64)>,
        ) -> Result<bool, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            for d in rows {
                sqlx::query(
                    "INSERT INTO notifications (id, notifier, event, body, created_at, status, next_at) \
                     VALUES ($1, $2, $3, $4, $5, 'pending', $5) ON CONFLICT (id) DO NOTHING",
                )
                .bind(&d.id)
                .bind(&d.notifier)
                .bind(&d.event)
                .bind(&d.body)
                .bind(d.created_at.0)
                .execute(&mut *tx)
                .await?;
            }
            let moved = match cursor {
                None => true,
                Some((None, to)) => {
                    sqlx::query("INSERT INTO notify_cursor (id, seq) VALUES (1, $1) ON CONFLICT (id) DO NOTHING")
                        .bind(to)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected()
                        == 1
                }
                Some((Some(from), to)) => {
                    sqlx::query("UPDATE notify_cursor SET seq = $2 WHERE id = 1 AND seq = $1")
                        .bind(from)
                        .bind(to)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected()
                        == 1
                }
            };
            if moved {
                tx.commit().await?;
            }
            Ok(moved)
        }

        pub(crate) async fn due_deliveries(
            &self,
            now: i64,
            limit: i64,
        ) -> Result<Vec<$crate::notifications::sql::DeliveryRow>, $crate::error::StoreError> {
            let statement = format!(
                "SELECT {} FROM notifications WHERE status = 'pending' AND next_at <= $1 \
                 AND claimed_until < $1 ORDER BY next_at LIMIT $2",
                $crate::notifications::sql::COLUMNS
            );
            Ok(sqlx::query_as(sqlx::AssertSqlSafe(statement))
                .bind(now)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?)
        }

        pub(crate) async fn claim_delivery(
            &self,
            id: &str,
            now: i64,
            until: i64,
        ) -> Result<Option<$crate::notifications::sql::DeliveryRow>, $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            let done = sqlx::query(
                "UPDATE notifications SET claimed_until = $3 \
                 WHERE id = $1 AND status = 'pending' AND claimed_until < $2 AND next_at <= $2",
            )
            .bind(id)
            .bind(now)
            .bind(until)
            .execute(&mut *tx)
            .await?;
            let row = if done.rows_affected() == 1 {
                let statement = format!(
                    "SELECT {} FROM notifications WHERE id = $1",
                    $crate::notifications::sql::COLUMNS
                );
                sqlx::query_as(sqlx::AssertSqlSafe(statement))
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?
            } else {
                None
            };
            tx.commit().await?;
            Ok(row)
        }

        pub(crate) async fn finish_delivery(
            &self,
            id: &str,
            attempt: &$crate::notifications::Attempt,
            forget_before: i64,
        ) -> Result<(), $crate::error::StoreError> {
            let (_guard, mut tx) = self.begin_write().await?;
            sqlx::query(
                "UPDATE notifications SET status = $2, attempts = attempts + 1, next_at = $3, \
                 claimed_until = 0, last_at = $4, last_error = COALESCE($5, last_error) WHERE id = $1",
            )
            .bind(id)
            .bind(attempt.status.as_str())
            .bind(attempt.next_at.0)
            .bind(attempt.at.0)
            .bind(attempt.error.as_deref())
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM notifications WHERE status <> 'pending' AND created_at < $1")
                .bind(forget_before)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        }

        pub(crate) async fn delivery_counts(
            &self,
        ) -> Result<Vec<(String, String, i64, Option<i64>)>, $crate::error::StoreError> {
            Ok(sqlx::query_as(
                "SELECT notifier, status, COUNT(*), MAX(last_at) FROM notifications GROUP BY notifier, status",
            )
            .fetch_all(&self.pool)
            .await?)
        }

        pub(crate) async fn failed_deliveries(
            &self,
            notifier: &str,
            limit: i64,
        ) -> Result<Vec<$crate::notifications::sql::DeliveryRow>, $crate::error::StoreError> {
            let statement = format!(
                "SELECT {} FROM notifications WHERE notifier = $1 AND last_error IS NOT NULL \
                 ORDER BY last_at DESC LIMIT $2",
                $crate::notifications::sql::COLUMNS
            );
            Ok(sqlx::query_as(sqlx::AssertSqlSafe(statement))
                .bind(notifier)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?)
        }
    };
}
pub(crate) use notification_operations;
