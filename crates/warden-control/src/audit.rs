//! The audit trail (AUD-1, AUD-2): reading it, a page or an export at a time, and verifying
//! its chain and the chain's end — the admin API, the console and `warden audit` alike. Each
//! needs `audit:read`.

use warden_core::audit::checkpoint::{AnchorProblem, Checkpoint};
use warden_core::audit::{AuditRecord, ChainBreak};
use warden_core::capability::AUDIT_READ;
use warden_store::{AuditFilter, StoreError};

use crate::{Caller, Control, Refusal};

/// The most records one page holds.
pub const MAX_PAGE: i64 = 1000;

/// How many records an export reads from the store at a time.
const EXPORT_CHUNK: i64 = 1000;

/// The records matching `filter`, in its order and within its limit.
pub async fn records(
    control: &Control,
    caller: &Caller,
    filter: &AuditFilter,
) -> Result<Vec<AuditRecord>, Refusal> {
    caller.require(AUDIT_READ, "reading the audit trail")?;
    Ok(control.store().audit(filter).await?)
}

/// How many records match `filter` (its limit aside).
pub async fn count(
    control: &Control,
    caller: &Caller,
    filter: &AuditFilter,
) -> Result<i64, Refusal> {
    caller.require(AUDIT_READ, "reading the audit trail")?;
    Ok(control.store().count_audit(filter).await?)
}

/// One page of the trail, newest first.
#[derive(Debug)]
pub struct Page {
    /// The records, newest first.
    pub records: Vec<AuditRecord>,
    /// The `before` of the next (older) page; `None` on the last page.
    pub next: Option<i64>,
    /// When counted: how many records the filter matches.
    pub matching: Option<i64>,
}

/// The page of at most `limit` records (at most [`MAX_PAGE`]) matching `filter`, older than
/// the record `before` (newest first); with `count`, how many match in all.
pub async fn page(
    control: &Control,
    caller: &Caller,
    mut filter: AuditFilter,
    before: Option<i64>,
    limit: i64,
    count: bool,
) -> Result<Page, Refusal> {
    caller.require(AUDIT_READ, "reading the audit trail")?;
    let limit = limit.min(MAX_PAGE);
    let matching = match count {
        true => Some(control.store().count_audit(&filter).await?),
        false => None,
    };
    filter.newest_first = true;
    // Newest first, the store's cursor reads "after" in the listing's order: older records.
    filter.after_seq = before;
    // One more than asked: whether an older page exists.
    filter.limit = Some(limit + 1);
    let mut records = control.store().audit(&filter).await?;
    let more = records.len() as i64 > limit;
    records.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next = more.then(|| records.last().map(|r| r.seq)).flatten();
    Ok(Page {
        records,
        next,
        matching,
    })
}

/// The records matching a filter, oldest first, read a chunk at a time as they are sent.
#[derive(Debug)]
pub struct Export {
    control: Control,
    filter: AuditFilter,
    left: i64,
}

impl Export {
    /// The next chunk, or `None` at the end. After a failure, nothing more.
    pub async fn next_chunk(&mut self) -> Option<Result<Vec<AuditRecord>, StoreError>> {
        if self.left <= 0 {
            return None;
        }
        self.filter.limit = Some(self.left.min(EXPORT_CHUNK));
        let records = match self.control.store().audit(&self.filter).await {
            Ok(r) => r,
            Err(e) => {
                self.left = 0;
                return Some(Err(e));
            }
        };
        let last = records.last()?.seq;
        self.left -= records.len() as i64;
        self.filter.after_seq = Some(last);
        Some(Ok(records))
    }
}

/// An export of at most `limit` records matching `filter`, oldest first.
pub fn export(
    control: &Control,
    caller: &Caller,
    mut filter: AuditFilter,
    limit: Option<i64>,
) -> Result<Export, Refusal> {
    caller.require(AUDIT_READ, "exporting the audit trail")?;
    filter.newest_first = false;
    Ok(Export {
        control: control.clone(),
        filter,
        left: limit.unwrap_or(i64::MAX),
    })
}

/// An export a SIEM can take and anyone can verify without Warden (AUD-5): the records from
/// `first` to the checkpoint `end`, oldest first, after the checkpoint `start` of the record
/// before them (when they do not start the chain).
#[derive(Debug)]
pub struct SignedExport {
    /// The checkpoint of the record before the first, signing where the export starts.
    pub start: Option<Checkpoint>,
    /// The records.
    pub records: Export,
    /// The checkpoint of the last record.
    pub end: Checkpoint,
}

/// The records from the first at or after `since` (the whole chain without it) up to the
/// chain's head, signed with `key` at both ends ([`SignedExport`]).
pub async fn signed_export(
    control: &Control,
    caller: &Caller,
    since: Option<warden_core::time::Millis>,
    key: &warden_store::AuditKey,
) -> Result<SignedExport, Refusal> {
    caller.require(AUDIT_READ, "exporting the audit trail")?;
    let store = control.store();
    let now = control.now();
    // The head, signed (and kept as the store's checkpoint when the chain grew since the last).
    let end = match store.checkpoint(key, now).await? {
        Some(c) => c,
        None => {
            let newest = AuditFilter {
                newest_first: true,
                limit: Some(1),
                ..AuditFilter::default()
            };
            let head = store
                .audit(&newest)
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| {
                    Refusal::unprocessable("the audit trail is empty: nothing to export")
                })?;
            key.sign(&store.id().await?, head.seq, &head.hash, now)
        }
    };
    // After an archive (AUD-6) the store's chain starts after its cut.
    let cut = store.audit_cut().await?;
    let from = cut.as_ref().map_or(1, |c| c.seq + 1);
    let first = match since {
        None => from,
        Some(since) => {
            let filter = AuditFilter {
                since: Some(since),
                limit: Some(1),
                ..AuditFilter::default()
            };
            store
                .audit(&filter)
                .await?
                .first()
                .map(|r| r.seq.max(from))
                .filter(|seq| *seq <= end.seq)
                .ok_or_else(|| {
                    Refusal::unprocessable("no audit record at or after `since` to export")
                })?
        }
    };
    let start = if let Some(c) = cut.filter(|c| c.seq + 1 == first) {
        // The archive cut, signed now as a checkpoint of where the export starts.
        Some(key.sign(&store.id().await?, c.seq, &c.hash, now))
    } else if first > 1 {
        let before = AuditFilter {
            after_seq: Some(first - 2),
            limit: Some(1),
            ..AuditFilter::default()
        };
        let record = store
            .audit(&before)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Refusal::Store(StoreError::Corrupt(format!(
                    "audit record {} is missing",
                    first - 1
                )))
            })?;
        Some(key.sign(&store.id().await?, record.seq, &record.hash, now))
    } else {
        None
    };
    let filter = AuditFilter {
        after_seq: Some(first - 1),
        ..AuditFilter::default()
    };
    Ok(SignedExport {
        start,
        records: export(control, caller, filter, Some(end.seq - first + 1))?,
        end,
    })
}

/// What verifying the trail found.
#[derive(Debug)]
pub enum Verification {
    /// The chain breaks here.
    Broken(ChainBreak),
    /// The chain holds its records; its end as far as it could be checked.
    Intact {
        /// How many records.
        records: i64,
        /// Its end.
        end: End,
    },
}

/// The end of an intact chain.
#[derive(Debug)]
pub enum End {
    /// Nothing trusted to check it against.
    Unanchored,
    /// A key is trusted, but it has signed no checkpoint of this store yet.
    NoCheckpoint,
    /// It matches this checkpoint, the latest of the trusted key.
    Anchored(Checkpoint),
    /// It does not match what the trusted key signed.
    Problem(AnchorProblem),
}

/// Verifies every record's hash and link, then — when a key is `trusted` (a public key, hex),
/// or given `checkpoints`, all of one key — the chain's end against the latest checkpoint
/// that key signed, of the store's own and `checkpoints`. `progress` hears how many records
/// are verified as it goes.
pub async fn verify(
    control: &Control,
    caller: &Caller,
    trusted: Option<String>,
    checkpoints: Vec<Checkpoint>,
    progress: impl FnMut(u64),
) -> Result<Verification, Refusal> {
    caller.require(AUDIT_READ, "verifying the audit trail")?;
    let trusted = trusted.or_else(|| checkpoints.first().map(|c| c.key.clone()));
    if let Some(t) = &trusted
        && checkpoints.iter().any(|c| &c.key != t)
    {
        return Err(Refusal::Invalid {
            field: "checkpoints",
            message: "signed by another key than the trusted one".into(),
        });
    }
    let store = control.store();
    let records = match store.verify_audit_with(progress).await? {
        Ok(n) => n,
        Err(b) => return Ok(Verification::Broken(b)),
    };
    let end = match trusted {
        None => End::Unanchored,
        Some(trusted) => match store.verify_anchor(&trusted, checkpoints).await? {
            Ok(Some(c)) => End::Anchored(c),
            Ok(None) => End::NoCheckpoint,
            Err(problem) => End::Problem(problem),
        },
    };
    Ok(Verification::Intact { records, end })
}
