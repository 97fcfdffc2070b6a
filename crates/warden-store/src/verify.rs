//! Verifying the audit chain (AUD-2): every record against its hash and its predecessor, the
//! chain's end against the head, and the head against the latest trusted checkpoint.

use warden_core::audit::checkpoint::{self, AnchorProblem, Checkpoint};
use warden_core::audit::{AuditRecord, ChainBreak, ChainProblem, ChainVerifier, RecordKind};

use crate::Store;
use crate::error::StoreError;
use crate::sink::AuditSink as _;

impl Store {
    /// This store's checkpoints: its own (the latest thousand) and those of `outside` (a
    /// checkpoint file, an operator's copy) that name this store. The store's own are of this
    /// store whatever they name (one taken before checkpoints named their store names none);
    /// one of `outside` that names none could be of any store sharing the key, and is left out.
    pub async fn checkpoints_with(
        &self,
        outside: Vec<Checkpoint>,
    ) -> Result<Vec<Checkpoint>, StoreError> {
        let id = self.id().await?;
        let mut candidates: Vec<Checkpoint> = outside
            .into_iter()
            .filter(|c| c.store.as_deref() == Some(id.as_str()))
            .collect();
        candidates.extend(self.checkpoints(1_000).await?);
        Ok(candidates)
    }

    /// Checks the chain's end against the latest checkpoint signed with `trusted` (a public
    /// key, hex) of [this store's](Store::checkpoints_with). `Ok(None)` when there is none. Checkpoints of another key or another store are not considered (several
    /// stores may share a key and its file); one that names the trusted key without its valid
    /// signature is forged.
    pub async fn verify_anchor(
        &self,
        trusted: &str,
        outside: Vec<Checkpoint>,
    ) -> Result<Result<Option<Checkpoint>, AnchorProblem>, StoreError> {
        let candidates = self.checkpoints_with(outside).await?;
        let mut latest: Option<Checkpoint> = None;
        for c in candidates.into_iter().filter(|c| c.key == trusted) {
            if let Err(forged) = c.verify(trusted) {
                return Ok(Err(forged));
            }
            if latest.as_ref().is_none_or(|l| c.seq > l.seq) {
                latest = Some(c);
            }
        }
        // The archive cut (AUD-6) must be the trusted key's, signed as a cut: records removed
        // under a cut of another key, or under a checkpoint passed off as one, are not proven.
        let cut = self.backend.audit_cut().await?;
        if let Some(c) = &cut {
            let signed = if c.key == trusted {
                c.verify_cut(trusted)
            } else {
                Err(AnchorProblem::Forged { seq: c.seq })
            };
            if let Err(forged) = signed {
                return Ok(Err(forged));
            }
        }
        let Some(latest) = latest else {
            return Ok(Ok(None));
        };
        self.sink.settle_for_read().await?;
        let (head, _) = self.backend.head().await?;
        let hash = match &cut {
            // No checkpoint after the cut: the records archived are the archive's to prove.
            Some(c) if latest.seq <= c.seq => return Ok(Ok(None)),
            _ => self.backend.audit_hash_at(latest.seq).await?,
        };
        Ok(checkpoint::check(&latest, head, hash.as_deref()).map(|()| Some(latest)))
    }

    /// Verifies the whole chain (AUD-2), from the archive cut when there is one (AUD-6):
    /// `Ok(n)` with the number of records verified, or the first record that breaks it.
    ///
    /// The chain is checked against one consistent view while other writers append: the head
    /// is read first, then the records up to it. That view is a snapshot without holding a
    /// read transaction over the whole scan (which would pin SQLite's WAL and PostgreSQL's
    /// vacuum horizon for as long as millions of records take): every backend moves the head in
    /// the transaction that inserts the records it covers, and records are never updated or
    /// deleted, so every record up to a committed head is there to read, and records appended
    /// after it are not looked at. A record missing below the head is a real truncation.
    pub async fn verify_audit(&self) -> Result<Result<i64, ChainBreak>, StoreError> {
        self.verify_audit_with(|_| {}).await
    }

    /// [`Store::verify_audit`], telling `progress` how many records are verified after each
    /// page (for a progress bar; the head's `seq` from [`Store::audit_head`] is the total).
    pub async fn verify_audit_with(
        &self,
        mut progress: impl FnMut(u64),
    ) -> Result<Result<i64, ChainBreak>, StoreError> {
        const PAGE: i64 = 5_000;
        let mut verified = 0_u64;
        self.sink.settle_for_read().await?;
        let (head_seq, head_hash) = self.backend.head().await?;
        // After an archive (AUD-6) the chain starts at the cut, which a record of the chain
        // must name.
        let cut = self.backend.audit_cut().await?;
        let (mut verifier, mut after) = match &cut {
            Some(c) => (ChainVerifier::starting_at(c.seq + 1, &c.hash), c.seq),
            None => (ChainVerifier::default(), 0),
        };
        let mut recorded = cut.is_none();
        loop {
            let page = self.backend.scan_audit(after, head_seq, PAGE).await?;
            let full = page.len() as i64 == PAGE;
            let last_seq = page.last().map(|r| r.seq);
            for row in page {
                let seq = row.seq;
                // A row that cannot even be read back was tampered with.
                let Ok(record) = row.into_record() else {
                    return Ok(Err(ChainBreak {
                        seq,
                        problem: ChainProblem::Edited,
                    }));
                };
                if let Err(b) = verifier.push(&record) {
                    return Ok(Err(b));
                }
                if let Some(c) = cut.as_ref().filter(|_| !recorded) {
                    recorded = names_cut(&record, c);
                }
                verified += 1;
            }
            progress(verified);
            match last_seq {
                Some(seq) if full => after = seq,
                _ => break,
            }
        }
        // How many records were verified (after a cut, fewer than the head's seq).
        let count = i64::try_from(verified).unwrap_or(i64::MAX);
        let verified = verifier.finish(Some((head_seq, &head_hash))).map(|_| count);
        match cut {
            Some(c) if verified.is_ok() && !recorded => Ok(Err(ChainBreak {
                seq: c.seq,
                problem: ChainProblem::CutUnrecorded,
            })),
            _ => Ok(verified),
        }
    }
}

/// Whether `record` is the `audit.archive` record of the archive cut `cut`.
fn names_cut(record: &AuditRecord, cut: &Checkpoint) -> bool {
    let r = &record.record;
    if r.kind != RecordKind::Admin || r.tool.as_deref() != Some("audit.archive") {
        return false;
    }
    let payload: serde_json::Value = serde_json::from_str(&r.payload).unwrap_or_default();
    payload.get("through").and_then(serde_json::Value::as_i64) == Some(cut.seq)
        && payload.get("hash").and_then(serde_json::Value::as_str) == Some(cut.hash.as_str())
}
