//! The audit sink: the one way audit records reach a backend's chain. Each backend has one
//! (`sqlite::SqliteSink`, `postgres::PgSink`), and the store holds the one it was opened on.
//!
//! Every write that chains a record goes through the sink: the calls' records
//! ([`AuditSink::append`]) and the admin changes, whose record is appended in the same
//! transaction as the change ([`AuditSink::admin`]). So on each backend one piece of code
//! chains and inserts audit rows.

use std::future::Future;

use warden_core::audit::{NewRecord, RecordKind, canonical_json};
use warden_core::config::Kind;
use warden_core::time::Millis;

use crate::error::StoreError;
use crate::rows::{CredentialRow, ResourceRow};

/// At most this many records go into one group commit.
pub(crate) const GROUP_COMMIT_RECORDS: usize = 2_000;

/// Where a backend's audit records go.
pub(crate) trait AuditSink {
    /// Appends records, chained after the head, in order; returns once they are durable (or
    /// fails, and then none of them is in the chain).
    fn append(
        &self,
        records: Vec<NewRecord>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Makes `change` and appends its `record` in one transaction: both or neither. The record
    /// is chained after every record this store acknowledged before the call, so the chain
    /// keeps the order in which things were acknowledged. Returns the new revision, or `None`
    /// when there was nothing to change (see [`AdminChange`]).
    fn admin(
        &self,
        change: AdminChange,
        record: NewRecord,
    ) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send;

    /// Before reading the audit trail: waits until every record acknowledged so far — by this
    /// process, or by another that shares the database — is in the chain.
    fn settle_for_read(&self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Whether the store this sink writes is still the store it opened (the embedded store's
    /// database file, `sqlite/files.rs`); a lost store fails every later append.
    fn check(&self) -> Result<(), StoreError>;

    /// Refuses later appends and admin changes; what is acknowledged but not yet in the chain
    /// is inserted first.
    fn close(&self);
}

/// An admin change, made in the transaction that appends its record.
#[derive(Debug)]
pub(crate) enum AdminChange {
    /// Creates or replaces `upserts` and deletes `deletes`, refused with a conflict when the
    /// revision is no longer `expected`.
    Resources {
        upserts: Vec<ResourceRow>,
        deletes: Vec<(Kind, String)>,
        expected: Option<u64>,
    },
    /// Creates the first administrator's resources, once per store (`None` afterwards).
    Bootstrap { resources: Vec<ResourceRow> },
    /// Stores a new credential.
    InsertCredential(CredentialRow),
    /// Revokes a credential, keeping an earlier revocation's time (`None`: no such
    /// credential).
    RevokeCredential { id: String, at: Millis },
    /// Marks `first` pinned and stores `rows` (GOV-9), refused with a conflict when the
    /// revision is no longer `expected`.
    Pins {
        first: Vec<String>,
        rows: Vec<crate::pins::PinRow>,
        expected: Option<u64>,
    },
    /// Sets the audit trail's archive cut (AUD-6), refused with a conflict when the records
    /// through it are archived already.
    AuditCut(warden_core::audit::checkpoint::Checkpoint),
}

/// The error of an archive cut at or before the one there.
pub(crate) fn archived_already(seq: i64) -> StoreError {
    StoreError::Conflict(format!(
        "the audit records through seq {seq} are archived already"
    ))
}

/// Records waiting for a group commit, and who to tell when they are durable.
#[derive(Debug)]
pub(crate) struct PendingAppend {
    pub(crate) records: Vec<NewRecord>,
    pub(crate) done: tokio::sync::oneshot::Sender<Result<(), StoreError>>,
}

/// The error of an admin change whose revision moved on meanwhile.
pub(crate) fn revision_conflict() -> StoreError {
    StoreError::Conflict(
        "the configuration changed while this change was prepared; run the command again".into(),
    )
}

/// The audit record of an operator's change: who (`actor`) did `action`, with `details`.
pub(crate) fn admin_record(
    now: Millis,
    actor: &str,
    action: &str,
    details: serde_json::Value,
) -> NewRecord {
    NewRecord {
        at: now,
        kind: RecordKind::Admin,
        run_id: "admin".into(),
        call_id: None,
        principal: Some(actor.to_owned()),
        agent: None,
        tool: Some(action.to_owned()),
        decision: None,
        code: None,
        payload: canonical_json(&details),
    }
}
