//! Archiving the audit trail (AUD-6): the cut — a checkpoint of the last record archived,
//! signed with the audit key — is set together with the admin record `audit.archive` that
//! names it, then the records through it are removed a batch at a time and the files shrunk.
//! From then on the chain is verified from the cut (`verify.rs`); the archive, an AUD-5 export,
//! is verified on its own.

use warden_core::audit::checkpoint::Checkpoint;
use warden_core::time::Millis;

use crate::Store;
use crate::backend::{Backend, dispatch};
use crate::error::StoreError;
use crate::sink::{AdminChange, AuditSink as _, admin_record};

/// Records removed in one transaction.
const BATCH: i64 = 10_000;

impl Store {
    /// The audit trail's archive cut: the records through its `seq` were archived.
    pub async fn audit_cut(&self) -> Result<Option<Checkpoint>, StoreError> {
        self.backend.audit_cut().await
    }

    /// Sets `cut` as the archive cut, with the admin record `audit.archive` by `actor` and
    /// `details`, in one transaction; refused (conflict) when the records through it are
    /// archived already. Nothing is removed yet ([`Store::remove_archived`]).
    pub async fn set_audit_cut(
        &self,
        cut: Checkpoint,
        actor: &str,
        details: serde_json::Value,
        now: Millis,
    ) -> Result<(), StoreError> {
        let record = admin_record(now, actor, "audit.archive", details);
        self.sink
            .admin(AdminChange::AuditCut(cut), record)
            .await
            .map(drop)
    }

    /// Removes the records through the archive cut, a batch per transaction (what an archive
    /// interrupted before the end left too). How many were removed.
    pub async fn remove_archived(&self) -> Result<u64, StoreError> {
        let Some(cut) = self.audit_cut().await? else {
            return Ok(0);
        };
        let mut removed = 0;
        loop {
            let n = self.backend.delete_archived(cut.seq, BATCH).await?;
            removed += n;
            if n < BATCH as u64 {
                break;
            }
        }
        Ok(removed)
    }

    /// Gives the space of removed records back: SQLite's file shrinks (a `VACUUM` the first
    /// time, an incremental vacuum after), PostgreSQL's space becomes reusable.
    pub async fn shrink_audit(&self) -> Result<(), StoreError> {
        self.backend.shrink().await
    }
}

impl Backend {
    pub(crate) async fn audit_cut(&self) -> Result<Option<Checkpoint>, StoreError> {
        const CUT: &str = "SELECT store, seq, hash, at, key, signature FROM audit_cut WHERE id = 1";
        let row: Option<(Option<String>, i64, String, i64, String, String)> =
            dispatch!(self, b => sqlx::query_as(CUT).fetch_optional(&b.pool).await)?;
        Ok(
            row.map(|(store, seq, hash, at, key, signature)| Checkpoint {
                store,
                seq,
                hash,
                at: Millis(at),
                key,
                signature,
            }),
        )
    }

    async fn delete_archived(&self, through: i64, batch: i64) -> Result<u64, StoreError> {
        dispatch!(self, b => b.delete_archived(through, batch).await)
    }

    async fn shrink(&self) -> Result<(), StoreError> {
        dispatch!(self, b => b.shrink().await)
    }
}
