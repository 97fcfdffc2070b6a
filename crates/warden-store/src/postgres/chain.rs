//! The PostgreSQL chain insert, and the admin changes that append their record in the same
//! transaction. Writers are serialised on the audit-head row — an append moves it only from
//! the head its records were chained after, an admin change locks it (`FOR UPDATE`, as the
//! state row) — so the chain and the revision stay linear across replicas.

use sqlx::{Postgres, Transaction};
use warden_core::audit::NewRecord;

use super::backend::PgBackend;
use crate::error::StoreError;
use crate::rows::ResourceRow;
use crate::sink::{AdminChange, archived_already, revision_conflict};
use crate::sql;

/// [`sql::REVISION`], locking the row.
const LOCK_STATE: &str = "SELECT revision FROM state WHERE id = 1 FOR UPDATE";
/// [`sql::HEAD`], locking the row.
const LOCK_HEAD: &str = "SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE";

type Tx = Transaction<'static, Postgres>;

/// Appends chained records in one statement, and so one round trip and one commit: the head
/// moves from the one the records were chained after (`$3`, `$4`) to their last (`$1`, `$2`),
/// and the records are inserted only if it did — when another writer (another replica, an
/// admin change) moved the head first, nothing changes and the caller chains again.
const APPEND: &str = "WITH head AS (\
     UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1 AND seq = $3 AND hash = $4 RETURNING 1) \
     INSERT INTO audit (seq, at, kind, run_id, call_id, principal, agent, tool, decision, code, payload, prev_hash, hash) \
     SELECT * FROM UNNEST($5::bigint[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[], \
     $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[]) \
     WHERE EXISTS (SELECT 1 FROM head)";

/// How many times an append chains again after other writers moved the head.
const APPEND_TRIES: usize = 100;

impl PgBackend {
    /// Appends chained records after `head` (the chain's head as this writer last left it,
    /// `None` when unknown), in one statement; the new head, or the error. A head that moved
    /// meanwhile is read again and the records chained after it.
    ///
    /// One statement instead of a transaction of a locking read, one insert per record and
    /// the head's update: the round trips of a group commit were what bounded PostgreSQL's
    /// throughput (docs/benchmarks.md, "PostgreSQL").
    pub(crate) async fn append(
        &self,
        records: &[NewRecord],
        head: Option<(i64, String)>,
    ) -> Result<(i64, String), StoreError> {
        let mut head = head;
        for _ in 0..APPEND_TRIES {
            let (after_seq, after_hash) = match head.take() {
                Some(h) => h,
                None => sqlx::query_as(sql::HEAD).fetch_one(&self.pool).await?,
            };
            let Some(batch) = Chained::after(records, after_seq, &after_hash) else {
                return Ok((after_seq, after_hash));
            };
            let inserted = batch
                .insert(after_seq, &after_hash)
                .execute(&self.pool)
                .await?
                .rows_affected();
            if inserted == records.len() as u64 {
                return Ok((batch.last_seq, batch.last_hash));
            }
        }
        Err(StoreError::Unreachable(format!(
            "the audit chain's head kept moving: {APPEND_TRIES} appends were overtaken by other writers"
        )))
    }

    /// Makes an admin change and appends its record in one transaction (`AuditSink::admin`).
    pub(crate) async fn admin(
        &self,
        change: AdminChange,
        record: NewRecord,
    ) -> Result<Option<u64>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let at = record.at.0;
        let revision = match change {
            AdminChange::Resources {
                upserts,
                deletes,
                expected,
            } => {
                let revision = bump_revision(&mut tx, expected).await?;
                upsert_resources(&mut tx, &upserts, revision, at).await?;
                for (kind, key) in &deletes {
                    sqlx::query(sql::DELETE_RESOURCE)
                        .bind(kind.as_str())
                        .bind(key)
                        .execute(&mut *tx)
                        .await?;
                }
                revision
            }
            AdminChange::Bootstrap { resources } => {
                let inserted = sqlx::query(sql::MARK_BOOTSTRAPPED)
                    .bind(at.to_string())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if inserted == 0 {
                    tx.rollback().await?;
                    return Ok(None);
                }
                let revision = bump_revision(&mut tx, None).await?;
                upsert_resources(&mut tx, &resources, revision, at).await?;
                revision
            }
            AdminChange::InsertCredential(row) => {
                let revision = bump_revision(&mut tx, None).await?;
                sqlx::query(sql::INSERT_CREDENTIAL)
                    .bind(&row.id)
                    .bind(&row.hash)
                    .bind(&row.kind)
                    .bind(&row.principal)
                    .bind(&row.projects)
                    .bind(&row.scopes)
                    .bind(row.created_at)
                    .bind(row.expires_at)
                    .bind(row.revoked_at)
                    .bind(&row.description)
                    .execute(&mut *tx)
                    .await?;
                revision
            }
            AdminChange::RevokeCredential { id, at: now } => {
                let exists: Option<String> = sqlx::query_scalar(sql::CREDENTIAL_EXISTS)
                    .bind(&id)
                    .fetch_optional(&mut *tx)
                    .await?;
                if exists.is_none() {
                    tx.rollback().await?;
                    return Ok(None);
                }
                let revision = bump_revision(&mut tx, None).await?;
                sqlx::query(sql::REVOKE_CREDENTIAL)
                    .bind(now.0)
                    .bind(&id)
                    .execute(&mut *tx)
                    .await?;
                revision
            }
            AdminChange::Pins {
                first,
                rows,
                expected,
            } => {
                let revision = bump_revision(&mut tx, expected).await?;
                for upstream in &first {
                    sqlx::query(sql::MARK_PINNED)
                        .bind(upstream)
                        .bind(at)
                        .execute(&mut *tx)
                        .await?;
                }
                for r in &rows {
                    sqlx::query(sql::UPSERT_PIN)
                        .bind(&r.upstream)
                        .bind(&r.tool)
                        .bind(&r.pinned_hash)
                        .bind(&r.pinned)
                        .bind(&r.offered_hash)
                        .bind(&r.offered)
                        .bind(r.offered_at)
                        .bind(&r.rejected_hash)
                        .bind(&r.decided_by)
                        .bind(r.decided_at)
                        .execute(&mut *tx)
                        .await?;
                }
                revision
            }
            AdminChange::AuditCut(cut) => {
                let archived: Option<i64> = sqlx::query_scalar(sql::AUDIT_CUT_SEQ)
                    .fetch_optional(&mut *tx)
                    .await?;
                if let Some(seq) = archived.filter(|seq| *seq >= cut.seq) {
                    tx.rollback().await?;
                    return Err(archived_already(seq));
                }
                sqlx::query(sql::SET_AUDIT_CUT)
                    .bind(&cut.store)
                    .bind(cut.seq)
                    .bind(&cut.hash)
                    .bind(cut.at.0)
                    .bind(&cut.key)
                    .bind(&cut.signature)
                    .execute(&mut *tx)
                    .await?;
                bump_revision(&mut tx, None).await?
            }
        };
        append_in(&mut tx, vec![record]).await?;
        tx.commit().await?;
        Ok(Some(sql::revision_u64(revision)))
    }
}

/// Bumps the revision inside a write transaction, checking it against `expected`.
async fn bump_revision(tx: &mut Tx, expected: Option<u64>) -> Result<i64, StoreError> {
    let current: i64 = sqlx::query_scalar(LOCK_STATE).fetch_one(&mut **tx).await?;
    if let Some(expected) = expected
        && sql::revision_u64(current) != expected
    {
        return Err(revision_conflict());
    }
    let next = current + 1;
    sqlx::query(sql::SET_REVISION)
        .bind(next)
        .execute(&mut **tx)
        .await?;
    Ok(next)
}

/// Appends chained records inside a write transaction, after the head it locks: the statement
/// of the audit writer's appends, which cannot be overtaken here.
async fn append_in(tx: &mut Tx, records: Vec<NewRecord>) -> Result<(), StoreError> {
    let (seq, hash): (i64, String) = sqlx::query_as(LOCK_HEAD).fetch_one(&mut **tx).await?;
    let Some(batch) = Chained::after(&records, seq, &hash) else {
        return Ok(());
    };
    let inserted = batch
        .insert(seq, &hash)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    // The head is locked, so the statement's guard holds; a short count would commit the
    // change without its record.
    if inserted != records.len() as u64 {
        return Err(StoreError::Corrupt(format!(
            "an audit append inserted {inserted} of {} records",
            records.len()
        )));
    }
    Ok(())
}

async fn upsert_resources(
    tx: &mut Tx,
    rows: &[ResourceRow],
    revision: i64,
    now: i64,
) -> Result<(), StoreError> {
    for (kind, key, spec) in rows {
        sqlx::query(sql::UPSERT_RESOURCE)
            .bind(kind.as_str())
            .bind(key)
            .bind(spec)
            .bind(now)
            .bind(revision)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Records chained after a head, as the columns [`APPEND`] binds.
struct Chained<'a> {
    seq: Vec<i64>,
    at: Vec<i64>,
    kind: Vec<&'static str>,
    run_id: Vec<&'a str>,
    call_id: Vec<Option<&'a str>>,
    principal: Vec<Option<&'a str>>,
    agent: Vec<Option<&'a str>>,
    tool: Vec<Option<&'a str>>,
    decision: Vec<Option<&'a str>>,
    code: Vec<Option<&'a str>>,
    payload: Vec<&'a str>,
    prev_hash: Vec<String>,
    hash: Vec<String>,
    last_seq: i64,
    last_hash: String,
}

impl<'a> Chained<'a> {
    /// [`APPEND`] of these records, chained after `seq` and `hash`.
    fn insert<'q>(
        &'q self,
        seq: i64,
        hash: &'q str,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        sqlx::query(APPEND)
            .bind(self.last_seq)
            .bind(&self.last_hash)
            .bind(seq)
            .bind(hash)
            .bind(&self.seq)
            .bind(&self.at)
            .bind(&self.kind)
            .bind(&self.run_id)
            .bind(&self.call_id)
            .bind(&self.principal)
            .bind(&self.agent)
            .bind(&self.tool)
            .bind(&self.decision)
            .bind(&self.code)
            .bind(&self.payload)
            .bind(&self.prev_hash)
            .bind(&self.hash)
    }

    /// `records` chained after `seq` and `hash`; `None` when there are none.
    fn after(records: &'a [NewRecord], seq: i64, hash: &str) -> Option<Self> {
        let n = records.len();
        let mut c = Chained {
            seq: Vec::with_capacity(n),
            at: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            run_id: Vec::with_capacity(n),
            call_id: Vec::with_capacity(n),
            principal: Vec::with_capacity(n),
            agent: Vec::with_capacity(n),
            tool: Vec::with_capacity(n),
            decision: Vec::with_capacity(n),
            code: Vec::with_capacity(n),
            payload: Vec::with_capacity(n),
            prev_hash: Vec::with_capacity(n),
            hash: Vec::with_capacity(n),
            last_seq: seq,
            last_hash: hash.to_owned(),
        };
        for r in records {
            let seq = c.last_seq + 1;
            let hash = r.chain_hash(seq, &c.last_hash);
            c.seq.push(seq);
            c.at.push(r.at.0);
            c.kind.push(r.kind.as_str());
            c.run_id.push(&r.run_id);
            c.call_id.push(r.call_id.as_deref());
            c.principal.push(r.principal.as_deref());
            c.agent.push(r.agent.as_deref());
            c.tool.push(r.tool.as_deref());
            c.decision.push(r.decision.as_deref());
            c.code.push(r.code.as_deref());
            c.payload.push(&r.payload);
            c.prev_hash
                .push(std::mem::replace(&mut c.last_hash, hash.clone()));
            c.hash.push(hash);
            c.last_seq = seq;
        }
        (n > 0).then_some(c)
    }
}
