//! The PostgreSQL chain insert, and the admin changes that append their record in the same
//! transaction. Writers are serialised by row locks (`FOR UPDATE` on the state and audit-head
//! rows), so the chain and the revision stay linear across replicas.

use sqlx::{Postgres, Transaction};
use warden_core::audit::NewRecord;

use super::backend::PgBackend;
use crate::error::StoreError;
use crate::rows::ResourceRow;
use crate::sink::{AdminChange, revision_conflict};
use crate::sql;

/// [`sql::REVISION`], locking the row.
const LOCK_STATE: &str = "SELECT revision FROM state WHERE id = 1 FOR UPDATE";
/// [`sql::HEAD`], locking the row.
const LOCK_HEAD: &str = "SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE";

type Tx = Transaction<'static, Postgres>;

impl PgBackend {
    /// Appends chained records in one transaction.
    pub(crate) async fn append(&self, records: Vec<NewRecord>) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        append_in(&mut tx, records).await?;
        tx.commit().await?;
        Ok(())
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

/// Appends chained records inside a write transaction.
async fn append_in(tx: &mut Tx, records: Vec<NewRecord>) -> Result<(), StoreError> {
    let (mut seq, mut prev): (i64, String) = sqlx::query_as(LOCK_HEAD).fetch_one(&mut **tx).await?;
    for record in records {
        seq += 1;
        let r = record.chain(seq, &prev);
        sqlx::query(sql::INSERT_AUDIT)
            .bind(r.seq)
            .bind(r.record.at.0)
            .bind(r.record.kind.as_str())
            .bind(&r.record.run_id)
            .bind(&r.record.call_id)
            .bind(&r.record.principal)
            .bind(&r.record.agent)
            .bind(&r.record.tool)
            .bind(&r.record.decision)
            .bind(&r.record.code)
            .bind(&r.record.payload)
            .bind(&r.prev_hash)
            .bind(&r.hash)
            .execute(&mut **tx)
            .await?;
        prev = r.hash;
    }
    sqlx::query(sql::SET_HEAD)
        .bind(seq)
        .bind(&prev)
        .execute(&mut **tx)
        .await?;
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
