//! Pinned tool definitions (GOV-9), kept where every replica reads them. Each write bumps the
//! revision, so that every replica reloads them at its next poll, and chains an admin record
//! in the same transaction: who pinned, recorded or decided what.

mod store;

use warden_core::pins::{Definition, Pin};
use warden_core::time::Millis;

use crate::error::StoreError;

/// A row of `tool_pins`.
#[derive(Clone, Debug, sqlx::FromRow)]
pub(crate) struct PinRow {
    pub(crate) upstream: String,
    pub(crate) tool: String,
    pub(crate) pinned_hash: Option<String>,
    pub(crate) pinned: Option<String>,
    pub(crate) offered_hash: Option<String>,
    pub(crate) offered: Option<String>,
    pub(crate) offered_at: Option<i64>,
    pub(crate) rejected_hash: Option<String>,
    pub(crate) decided_by: Option<String>,
    pub(crate) decided_at: Option<i64>,
}

impl PinRow {
    pub(crate) fn of(pin: &Pin) -> Self {
        let (pinned_hash, pinned) = split(pin.pinned.as_ref());
        let (offered_hash, offered) = split(pin.offered.as_ref());
        Self {
            upstream: pin.upstream.clone(),
            tool: pin.tool.clone(),
            pinned_hash,
            pinned,
            offered_hash,
            offered,
            offered_at: pin.offered_at.map(|m| m.0),
            rejected_hash: pin.rejected.clone(),
            decided_by: pin.decided_by.clone(),
            decided_at: pin.decided_at.map(|m| m.0),
        }
    }

    pub(crate) fn into_pin(self) -> Result<Pin, StoreError> {
        let join = |hash: Option<String>, json: Option<String>, what: &str| match (hash, json) {
            (Some(hash), Some(json)) => Ok(Some(Definition { hash, json })),
            (None, None) => Ok(None),
            _ => Err(StoreError::Corrupt(format!(
                "the pin of `{}` on upstream `{}` has a {what} hash without its definition, or the reverse",
                self.tool, self.upstream
            ))),
        };
        Ok(Pin {
            pinned: join(self.pinned_hash.clone(), self.pinned.clone(), "pinned")?,
            offered: join(self.offered_hash.clone(), self.offered.clone(), "offered")?,
            offered_at: self.offered_at.map(Millis),
            rejected: self.rejected_hash,
            decided_by: self.decided_by,
            decided_at: self.decided_at.map(Millis),
            upstream: self.upstream,
            tool: self.tool,
        })
    }
}

fn split(d: Option<&Definition>) -> (Option<String>, Option<String>) {
    (d.map(|d| d.hash.clone()), d.map(|d| d.json.clone()))
}

/// The pins' sqlx reads, expanded in each backend's `impl` block.
macro_rules! pin_operations {
    ($db:ty) => {
        pub(crate) async fn pin_rows(
            &self,
        ) -> Result<Vec<$crate::pins::PinRow>, $crate::error::StoreError> {
            Ok(sqlx::query_as(
                "SELECT upstream, tool, pinned_hash, pinned, offered_hash, offered, offered_at, \
                 rejected_hash, decided_by, decided_at FROM tool_pins ORDER BY upstream, tool",
            )
            .fetch_all(&self.pool)
            .await?)
        }

        pub(crate) async fn pinned_upstreams(
            &self,
        ) -> Result<Vec<String>, $crate::error::StoreError> {
            Ok(sqlx::query_scalar("SELECT upstream FROM pinned_upstreams")
                .fetch_all(&self.pool)
                .await?)
        }
    };
}
pub(crate) use pin_operations;

/// A write of pins: the upstreams pinned for the first time, and the pins to store.
#[derive(Clone, Debug, Default)]
pub struct PinWrite {
    /// Upstreams pinned for the first time.
    pub first: Vec<String>,
    /// Pins to create or replace.
    pub pins: Vec<Pin>,
}
