//! Archiving the audit trail (AUD-6) — `warden audit archive --before T -o FILE`: the records
//! before a time are written as an AUD-5 export signed at both ends, then removed from the
//! store, which keeps a signed cut so that `audit verify` proves the rest from there.
//! `audit_file::archive` writes the file between [`plan`] and [`set_cut`]: nothing is removed
//! before it is written.

use serde_json::json;
use warden_core::audit::checkpoint::Checkpoint;
use warden_core::capability::AUDIT_ARCHIVE;
use warden_core::time::Millis;
use warden_store::AuditFilter;

use crate::audit::{SignedExport, export};
use crate::{Caller, Control, Refusal};

/// The records to archive: those after the store's cut (its start) through the last record
/// before `before`, signed with `key` at that end. Needs `audit:archive`.
pub async fn plan(
    control: &Control,
    caller: &Caller,
    before: Millis,
    key: &warden_store::AuditKey,
) -> Result<SignedExport, Refusal> {
    caller.require(AUDIT_ARCHIVE, "archiving the audit trail")?;
    let store = control.store();
    // What an archive interrupted after its cut left is removed first.
    store.remove_archived().await?;
    let newest_before = AuditFilter {
        until: Some(before),
        newest_first: true,
        limit: Some(1),
        ..AuditFilter::default()
    };
    let last = store.audit(&newest_before).await?.into_iter().next();
    let cut = store.audit_cut().await?;
    let archived_already = |c: &Checkpoint| {
        Refusal::unprocessable(format!(
            "the audit records before that time are archived already (through seq {})",
            c.seq
        ))
    };
    let last = match (last, &cut) {
        (Some(last), Some(c)) if last.seq <= c.seq => return Err(archived_already(c)),
        (Some(last), _) => last,
        (None, Some(c)) => return Err(archived_already(c)),
        (None, None) => {
            return Err(Refusal::unprocessable(
                "no audit record before that time: nothing to archive",
            ));
        }
    };
    let first = cut.as_ref().map_or(1, |c| c.seq + 1);
    let id = store.id().await?;
    let now = control.now();
    let end = key.sign(&id, last.seq, &last.hash, now);
    // The archive starts where the last one ended: a checkpoint of its cut, signed now.
    let start = cut.map(|c| key.sign(&id, c.seq, &c.hash, now));
    let filter = AuditFilter {
        after_seq: Some(first - 1),
        ..AuditFilter::default()
    };
    Ok(SignedExport {
        start,
        records: export(control, caller, filter, Some(last.seq - first + 1))?,
        end,
    })
}

/// What an archive removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Archived {
    /// The records archived run through this one.
    pub through: i64,
    /// Records removed from the store.
    pub removed: u64,
    /// Why the store's files could not be shrunk (the archive is complete all the same).
    pub not_shrunk: Option<String>,
}

/// Sets the store's cut at `end` — the [`plan`]'s, once its `records` are written to `file`
/// (named in the admin record) — signed with `key` as a cut: from here on the records through
/// it are the file's. Refused (a conflict) when they are archived already.
pub async fn set_cut(
    control: &Control,
    caller: &Caller,
    key: &warden_store::AuditKey,
    end: &Checkpoint,
    records: u64,
    file: &str,
) -> Result<(), Refusal> {
    caller.require(AUDIT_ARCHIVE, "archiving the audit trail")?;
    let store = control.store();
    let now = control.now();
    let cut = key.sign_cut(&store.id().await?, end.seq, &end.hash, now);
    let details = json!({
        "through": end.seq,
        "hash": end.hash,
        "records": records,
        "file": file,
    });
    Ok(store
        .set_audit_cut(cut, &caller.actor(), details, now)
        .await?)
}

/// After [`set_cut`] through `end`: removes the records through it, shrinks the store's files
/// and signs a checkpoint of the head with `key`. What fails here, the next archive finishes.
pub async fn after_cut(
    control: &Control,
    key: &warden_store::AuditKey,
    end: &Checkpoint,
) -> Result<Archived, Refusal> {
    let store = control.store();
    let removed = store.remove_archived().await?;
    let not_shrunk = store.shrink_audit().await.err().map(|e| e.to_string());
    store.checkpoint(key, control.now()).await?;
    Ok(Archived {
        through: end.seq,
        removed,
        not_shrunk,
    })
}
