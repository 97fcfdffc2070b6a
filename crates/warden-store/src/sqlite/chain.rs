//! The one SQLite chain insert, over rusqlite: every audit row the embedded store writes is
//! chained and inserted by [`chain_and_insert`], in a transaction of [`transact`] — a group
//! commit of calls' records (`appender.rs`), spooled batches ([`insert_spooled`]) or an admin
//! change with its record ([`admin`]).
//!
//! Correctness is that of any append: `BEGIN IMMEDIATE` takes SQLite's write lock, the head
//! is read inside the transaction, the records are chained after it and the head moves in the
//! same transaction. Nothing is written unless all of it is.

use rusqlite::{Connection, OptionalExtension as _, params};
use warden_core::audit::{NewRecord, RecordView};

use super::spool::frame::Batch;
use crate::error::StoreError;
use crate::rows::ResourceRow;
use crate::sink::{AdminChange, archived_already, revision_conflict};
use crate::sql;

/// The meta key holding the number of the last spooled batch that is in the audit table.
pub(super) const INSERTED_KEY: &str = "audit_spool_inserted";

/// The value of [`INSERTED_KEY`] (none yet: 0). A value that is not a number is an error,
/// never 0: read as 0 it would have every spooled batch chained again.
pub(super) fn parse_inserted(value: Option<&str>) -> Result<u64, String> {
    value.map_or(Ok(0), |v| {
        v.parse()
            .map_err(|_| format!("meta `{INSERTED_KEY}` is `{v}`, not a batch number"))
    })
}

/// The stored value of [`INSERTED_KEY`] (inside a transaction, or not).
pub(super) fn inserted_value(conn: &Connection) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(sql::META_GET)?
        .query_row([INSERTED_KEY], |row| row.get(0))
        .optional()
}

/// Runs `body` in one `BEGIN IMMEDIATE` transaction: nothing is written unless all of it is.
pub(super) fn transact<T, E: From<rusqlite::Error>>(
    conn: &Connection,
    body: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    if !conn.is_autocommit() {
        // A transaction left open (a panic half-way through an earlier commit, or a failed
        // rollback) would make every later `BEGIN` fail and hold the write lock: end it.
        conn.execute_batch("ROLLBACK")?;
    }
    // `BEGIN` and `COMMIT` are cached statements too: rusqlite's `Transaction` parses both
    // anew for every commit.
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let written = body().and_then(|done| {
        conn.prepare_cached("COMMIT")?.execute([])?;
        Ok(done)
    });
    if written.is_err() && !conn.is_autocommit() {
        // Nothing is written unless all of it is.
        let _ = conn.execute_batch("ROLLBACK");
    }
    written
}

/// Chains `records` after the stored head and inserts them, inside a transaction.
pub(super) fn chain_and_insert<'a>(
    tx: &Connection,
    records: impl Iterator<Item = RecordView<'a>>,
) -> rusqlite::Result<()> {
    let (mut seq, mut prev): (i64, String) = tx
        .prepare_cached(sql::HEAD)?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    {
        let mut insert = tx.prepare_cached(sql::INSERT_AUDIT)?;
        for record in records {
            seq += 1;
            let hash = record.chain_hash(seq, &prev);
            insert.execute(params![
                seq,
                record.at.0,
                record.kind.as_str(),
                record.run_id,
                record.call_id,
                record.principal,
                record.agent,
                record.tool,
                record.decision,
                record.code,
                record.payload,
                prev,
                hash,
            ])?;
            prev = hash;
        }
    }
    tx.prepare_cached(sql::SET_HEAD)?
        .execute(params![seq, prev])?;
    Ok(())
}

/// Inserts spooled batches into the chain in one transaction, which also records the last
/// batch's number as inserted (`spool/`).
pub(super) fn insert_spooled(conn: &Connection, batches: &[Batch]) -> rusqlite::Result<()> {
    let Some(last) = batches.last().map(|b| b.id) else {
        return Ok(());
    };
    let failure = |e: String| rusqlite::Error::ToSqlConversionFailure(e.into());
    transact(conn, || {
        // Batches already inserted are skipped: a retry after a `COMMIT` that reported an
        // error but was durable must not chain them twice.
        let done = parse_inserted(inserted_value(conn)?.as_deref()).map_err(failure)?;
        // The records are read in place from the bytes they were spooled as: no copies, and
        // what the calls allocated was freed on their own threads.
        let spooled = batches
            .iter()
            .filter(|b| b.id > done)
            .map(Batch::records)
            .collect::<Result<Vec<_>, String>>()
            .map_err(failure)?;
        chain_and_insert(conn, spooled.into_iter().flatten())?;
        conn.prepare_cached(sql::META_SET)?
            .execute(params![INSERTED_KEY, last.max(done).to_string()])
            .map(drop)
    })
}

/// Why an admin change was not made: a database error, or the change's own refusal.
struct Refused(StoreError);

impl From<rusqlite::Error> for Refused {
    fn from(e: rusqlite::Error) -> Self {
        Refused(StoreError::Database(e.to_string()))
    }
}

/// Makes an admin change and chains its record in one transaction (`AuditSink::admin`).
/// Admin changes are rare: their statements are prepared anew, so that they never push the
/// appends' statements out of the connection's cache.
pub(super) fn admin(
    conn: &Connection,
    change: &AdminChange,
    record: &NewRecord,
) -> Result<Option<u64>, StoreError> {
    let at = record.at.0;
    transact(conn, || -> Result<Option<u64>, Refused> {
        let revision = match change {
            AdminChange::Resources {
                upserts,
                deletes,
                expected,
            } => {
                let revision = bump_revision(conn, *expected)?;
                upsert_resources(conn, upserts, revision, at)?;
                let mut delete = conn.prepare(sql::DELETE_RESOURCE)?;
                for (kind, key) in deletes {
                    delete.execute(params![kind.as_str(), key])?;
                }
                revision
            }
            AdminChange::Bootstrap { resources } => {
                let inserted = conn
                    .prepare(sql::MARK_BOOTSTRAPPED)?
                    .execute([at.to_string()])?;
                if inserted == 0 {
                    return Ok(None);
                }
                let revision = bump_revision(conn, None)?;
                upsert_resources(conn, resources, revision, at)?;
                revision
            }
            AdminChange::InsertCredential(row) => {
                let revision = bump_revision(conn, None)?;
                conn.prepare(sql::INSERT_CREDENTIAL)?.execute(params![
                    row.id,
                    row.hash,
                    row.kind,
                    row.principal,
                    row.projects,
                    row.scopes,
                    row.created_at,
                    row.expires_at,
                    row.revoked_at,
                    row.description,
                ])?;
                revision
            }
            AdminChange::RevokeCredential { id, at: now } => {
                let exists: Option<String> = conn
                    .prepare(sql::CREDENTIAL_EXISTS)?
                    .query_row([id], |row| row.get(0))
                    .optional()?;
                if exists.is_none() {
                    return Ok(None);
                }
                let revision = bump_revision(conn, None)?;
                conn.prepare(sql::REVOKE_CREDENTIAL)?
                    .execute(params![now.0, id])?;
                revision
            }
            AdminChange::Pins {
                first,
                rows,
                expected,
            } => {
                let revision = bump_revision(conn, *expected)?;
                let mut mark = conn.prepare(sql::MARK_PINNED)?;
                for upstream in first {
                    mark.execute(params![upstream, at])?;
                }
                let mut upsert = conn.prepare(sql::UPSERT_PIN)?;
                for r in rows {
                    upsert.execute(params![
                        r.upstream,
                        r.tool,
                        r.pinned_hash,
                        r.pinned,
                        r.offered_hash,
                        r.offered,
                        r.offered_at,
                        r.rejected_hash,
                        r.decided_by,
                        r.decided_at,
                    ])?;
                }
                revision
            }
            AdminChange::AuditCut(cut) => {
                let archived: Option<i64> = conn
                    .prepare(sql::AUDIT_CUT_SEQ)?
                    .query_row([], |row| row.get(0))
                    .optional()?;
                if let Some(seq) = archived.filter(|seq| *seq >= cut.seq) {
                    return Err(Refused(archived_already(seq)));
                }
                conn.prepare(sql::SET_AUDIT_CUT)?.execute(params![
                    cut.store,
                    cut.seq,
                    cut.hash,
                    cut.at.0,
                    cut.key,
                    cut.signature,
                ])?;
                bump_revision(conn, None)?
            }
        };
        chain_and_insert(conn, std::iter::once(record.view()))?;
        Ok(Some(sql::revision_u64(revision)))
    })
    .map_err(|Refused(e)| e)
}

/// Bumps the revision inside a write transaction, checking it against `expected`.
fn bump_revision(conn: &Connection, expected: Option<u64>) -> Result<i64, Refused> {
    let current: i64 = conn
        .prepare(sql::REVISION)?
        .query_row([], |row| row.get(0))?;
    if let Some(expected) = expected
        && sql::revision_u64(current) != expected
    {
        return Err(Refused(revision_conflict()));
    }
    let next = current + 1;
    conn.prepare(sql::SET_REVISION)?.execute([next])?;
    Ok(next)
}

fn upsert_resources(
    conn: &Connection,
    rows: &[ResourceRow],
    revision: i64,
    now: i64,
) -> rusqlite::Result<()> {
    let mut upsert = conn.prepare(sql::UPSERT_RESOURCE)?;
    for (kind, key, spec) in rows {
        upsert.execute(params![kind.as_str(), key, spec, now, revision])?;
    }
    Ok(())
}
