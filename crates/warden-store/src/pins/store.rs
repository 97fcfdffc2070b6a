//! The store's operations on pins: read them all, write a change with its admin record.

use serde_json::Value;
use warden_core::pins::Pins;
use warden_core::time::Millis;

use super::{PinRow, PinWrite};
use crate::Store;
use crate::error::StoreError;
use crate::sink::{AdminChange, AuditSink as _, admin_record};

impl Store {
    /// Every pin.
    pub async fn pins(&self) -> Result<Pins, StoreError> {
        let upstreams = self.backend.pinned_upstreams().await?;
        let rows = self.backend.pin_rows().await?;
        Ok(Pins::new(
            upstreams,
            rows.into_iter()
                .map(PinRow::into_pin)
                .collect::<Result<_, _>>()?,
        ))
    }

    /// Writes `write` as `actor` did `action` (`tools.pin`, `tools.change`, `tools.accept`,
    /// `tools.reject`) with `details`, unless the revision is no longer `expected`
    /// ([`StoreError::Conflict`]). The new revision.
    pub async fn write_pins(
        &self,
        write: PinWrite,
        actor: &str,
        action: &str,
        details: Value,
        now: Millis,
        expected: Option<u64>,
    ) -> Result<u64, StoreError> {
        let record = admin_record(now, actor, action, details);
        let change = AdminChange::Pins {
            first: write.first,
            rows: write.pins.iter().map(PinRow::of).collect(),
            expected,
        };
        self.sink
            .admin(change, record)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a write of pins reported no revision".into()))
    }
}
