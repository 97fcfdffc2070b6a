//! The store's operations on notifications.

use std::collections::BTreeMap;

use warden_core::audit::AuditRecord;
use warden_core::time::Millis;

use super::{Attempt, Delivery, DeliveryStatus, NewDelivery, NotifierDeliveries};
use crate::Store;
use crate::backend::{Backend, dispatch};
use crate::error::StoreError;
use crate::rows::AuditRow;

/// How long delivered and given-up deliveries are kept.
const KEPT_MS: i64 = 7 * 24 * 3600 * 1000;

impl Store {
    /// The last audit record read for events; none before the first read.
    pub async fn notify_cursor(&self) -> Result<Option<i64>, StoreError> {
        self.backend.notify_cursor().await
    }

    /// The records after `after`, up to `through`, that may hold an event (operators'
    /// changes, approvals' decisions), at most `limit`, in order.
    pub async fn notable_records(
        &self,
        after: i64,
        through: i64,
        limit: i64,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        self.backend
            .notable_records(after, through, limit)
            .await?
            .into_iter()
            .map(AuditRow::into_record)
            .collect()
    }

    /// The last record's sequence number as the table has it now (no wait for records
    /// acknowledged but not yet inserted: they are read at a later poll).
    pub async fn audit_inserted_head(&self) -> Result<i64, StoreError> {
        Ok(self.backend.head().await?.0)
    }

    /// Inserts `deliveries` (one already there, found by another replica, is kept) and moves
    /// the cursor from `from` (none: never set) to `to`; nothing when another replica moved it
    /// first (`false`). Without a cursor move, only inserts.
    pub async fn enqueue_notifications(
        &self,
        deliveries: &[NewDelivery],
        cursor: Option<(Option<i64>, i64)>,
    ) -> Result<bool, StoreError> {
        self.backend.enqueue_notifications(deliveries, cursor).await
    }

    /// Pending deliveries whose next attempt is due at `now` and that no replica is sending.
    pub async fn due_deliveries(
        &self,
        now: Millis,
        limit: i64,
    ) -> Result<Vec<Delivery>, StoreError> {
        Ok(self
            .backend
            .due_deliveries(now.0, limit)
            .await?
            .into_iter()
            .map(super::sql::DeliveryRow::into_delivery)
            .collect())
    }

    /// Claims delivery `id` for sending until `until`: the row as claimed (its attempts so
    /// far), or none when another replica has it, it is no longer pending or not due.
    pub async fn claim_delivery(
        &self,
        id: &str,
        now: Millis,
        until: Millis,
    ) -> Result<Option<Delivery>, StoreError> {
        Ok(self
            .backend
            .claim_delivery(id, now.0, until.0)
            .await?
            .map(super::sql::DeliveryRow::into_delivery))
    }

    /// Records an attempt of delivery `id`, and forgets finished deliveries older than a week.
    pub async fn finish_delivery(&self, id: &str, attempt: &Attempt) -> Result<(), StoreError> {
        self.backend
            .finish_delivery(id, attempt, attempt.at.0.saturating_sub(KEPT_MS))
            .await
    }

    /// Each notifier's deliveries in brief, by name.
    pub async fn notifier_deliveries(
        &self,
    ) -> Result<BTreeMap<String, NotifierDeliveries>, StoreError> {
        let mut out: BTreeMap<String, NotifierDeliveries> = BTreeMap::new();
        for (notifier, status, count, last_at) in self.backend.delivery_counts().await? {
            let entry = out.entry(notifier).or_default();
            match DeliveryStatus::parse(&status) {
                DeliveryStatus::Pending => entry.pending = count,
                DeliveryStatus::Delivered => {
                    entry.delivered = count;
                    entry.last_delivered_at = last_at.map(Millis);
                }
                DeliveryStatus::Failed => entry.failed = count,
            }
        }
        for (notifier, entry) in &mut out {
            entry.last_failures = self
                .backend
                .failed_deliveries(notifier, 5)
                .await?
                .into_iter()
                .map(super::sql::DeliveryRow::into_delivery)
                .collect();
        }
        Ok(out)
    }
}

/// The dispatch of the deliveries' operations to the backend in use.
impl Backend {
    async fn notify_cursor(&self) -> Result<Option<i64>, StoreError> {
        dispatch!(self, b => b.notify_cursor().await)
    }

    async fn notable_records(
        &self,
        after: i64,
        through: i64,
        limit: i64,
    ) -> Result<Vec<AuditRow>, StoreError> {
        dispatch!(self, b => b.notable_records(after, through, limit).await)
    }

    async fn enqueue_notifications(
        &self,
        rows: &[NewDelivery],
        cursor: Option<(Option<i64>, i64)>,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.enqueue_notifications(rows, cursor).await)
    }

    async fn due_deliveries(
        &self,
        now: i64,
        limit: i64,
    ) -> Result<Vec<super::sql::DeliveryRow>, StoreError> {
        dispatch!(self, b => b.due_deliveries(now, limit).await)
    }

    async fn claim_delivery(
        &self,
        id: &str,
        now: i64,
        until: i64,
    ) -> Result<Option<super::sql::DeliveryRow>, StoreError> {
        dispatch!(self, b => b.claim_delivery(id, now, until).await)
    }

    async fn finish_delivery(
        &self,
        id: &str,
        attempt: &Attempt,
        forget_before: i64,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.finish_delivery(id, attempt, forget_before).await)
    }

    async fn delivery_counts(&self) -> Result<Vec<(String, String, i64, Option<i64>)>, StoreError> {
        dispatch!(self, b => b.delivery_counts().await)
    }

    async fn failed_deliveries(
        &self,
        notifier: &str,
        limit: i64,
    ) -> Result<Vec<super::sql::DeliveryRow>, StoreError> {
        dispatch!(self, b => b.failed_deliveries(notifier, limit).await)
    }
}
