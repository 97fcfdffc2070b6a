//! The SQLite backend: the embedded default, one file under the data directory, WAL mode.
//!
//! Writers are serialised in-process by a mutex and across processes (the CLI working on the
//! same data directory) by `BEGIN IMMEDIATE` and the busy timeout. `synchronous = NORMAL` in
//! WAL mode keeps every committed transaction across a process crash (`kill -9`); only an
//! operating-system crash or power loss can roll back the last transactions.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};
use tokio::sync::{Mutex, MutexGuard};

use crate::StoreError;
use crate::backend::shared_operations;

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

#[derive(Debug)]
pub(crate) struct SqliteBackend {
    pub(crate) pool: SqlitePool,
    write_lock: Mutex<()>,
    /// The audit head as this process last wrote it: the fast append's guess, checked by the
    /// database in the same statement that moves it.
    head: std::sync::Mutex<Option<(i64, String)>>,
    /// The database file, when it is one (not in memory): the audit appender opens its own
    /// connection to it.
    pub(crate) file: Option<std::path::PathBuf>,
}

/// A text value as an SQL literal that no content can escape: the UTF-8 bytes as a blob
/// literal, cast to text.
fn text_literal(sql: &mut String, value: Option<&str>) {
    match value {
        Some(v) => {
            sql.push_str("CAST(X'");
            sql.push_str(&hex::encode(v.as_bytes()));
            sql.push_str("' AS TEXT)");
        }
        None => sql.push_str("NULL"),
    }
}

impl SqliteBackend {
    const LOCK_STATE: &'static str = "SELECT revision FROM state WHERE id = 1";
    const LOCK_HEAD: &'static str = "SELECT seq, hash FROM audit_head WHERE id = 1";

    pub(crate) async fn open_dir(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Invalid(format!(
                "cannot create the data directory `{}`: {e}",
                dir.display()
            ))
        })?;
        let file = dir.join(crate::SQLITE_FILE);
        let options = SqliteConnectOptions::new().filename(&file);
        Self::open_with(options, Some(file)).await
    }

    pub(crate) async fn open_url(url: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StoreError::Invalid(format!("`{url}` is not a valid SQLite URL: {e}")))?;
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let file = (!in_memory).then(|| options.get_filename().to_path_buf());
        Self::open_with(options, file).await
    }

    async fn open_with(
        options: SqliteConnectOptions,
        file: Option<std::path::PathBuf>,
    ) -> Result<Self, StoreError> {
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(1)
            // A local file does not go stale like a network connection; pinging it before
            // every use is one more round trip to the connection's thread per statement.
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        Ok(Self {
            pool,
            write_lock: Mutex::new(()),
            head: std::sync::Mutex::new(None),
            file,
        })
    }

    async fn begin_write(
        &self,
    ) -> Result<(MutexGuard<'_, ()>, Transaction<'static, Sqlite>), StoreError> {
        let guard = self.write_lock.lock().await;
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok((guard, tx))
    }

    /// Appends audit records in one round trip to the database when this process wrote the
    /// head last (the common case): one script moves the head from the expected value —
    /// `WHERE seq = … AND hash = …`, so a writer in another process is noticed — and inserts
    /// the records only if it did (`changes() = 1`), in one `BEGIN IMMEDIATE` transaction.
    /// Otherwise (first append, another writer, an error) the ordinary append reads the head
    /// under the lock. Values are inlined as blob literals, never as SQL text, so no content
    /// can change the statement. Measured in docs/benchmarks.md: one round trip instead of
    /// four or more per append.
    pub(crate) async fn append_fast(
        &self,
        records: Vec<warden_core::audit::NewRecord>,
    ) -> Result<(), StoreError> {
        let guess = self.head.lock().ok().and_then(|h| h.clone());
        let Some((seq0, hash0)) = guess else {
            return self.append_and_remember(records).await;
        };
        let mut seq = seq0;
        let mut prev = hash0.clone();
        let mut sql = String::with_capacity(512 * records.len() + 256);
        let mut values = String::with_capacity(512 * records.len());
        let mut chained = Vec::with_capacity(records.len());
        for record in records {
            seq += 1;
            let r = record.chain(seq, &prev);
            values.push_str(if values.is_empty() { "(" } else { ", (" });
            values.push_str(&r.seq.to_string());
            values.push_str(", ");
            values.push_str(&r.record.at.0.to_string());
            for text in [
                Some(r.record.kind.as_str()),
                Some(r.record.run_id.as_str()),
                r.record.call_id.as_deref(),
                r.record.principal.as_deref(),
                r.record.agent.as_deref(),
                r.record.tool.as_deref(),
                r.record.decision.as_deref(),
                r.record.code.as_deref(),
                Some(r.record.payload.as_str()),
                Some(r.prev_hash.as_str()),
                Some(r.hash.as_str()),
            ] {
                values.push_str(", ");
                text_literal(&mut values, text);
            }
            values.push(')');
            prev.clone_from(&r.hash);
            chained.push(r);
        }
        sql.push_str("BEGIN IMMEDIATE; UPDATE audit_head SET seq = ");
        sql.push_str(&seq.to_string());
        sql.push_str(", hash = ");
        text_literal(&mut sql, Some(&prev));
        sql.push_str(" WHERE id = 1 AND seq = ");
        sql.push_str(&seq0.to_string());
        sql.push_str(" AND hash = ");
        text_literal(&mut sql, Some(&hash0));
        sql.push_str(
            "; INSERT INTO audit (seq, at, kind, run_id, call_id, principal, agent, tool, decision, code, payload, prev_hash, hash) \
             SELECT * FROM (VALUES ",
        );
        sql.push_str(&values);
        sql.push_str(
            ") WHERE changes() = 1; SELECT seq, hash FROM audit_head WHERE id = 1; COMMIT;",
        );
        let guard = self.write_lock.lock().await;
        let mut conn = self.pool.acquire().await?;
        let written = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .fetch_all(&mut *conn)
            .await
            .map(|rows| {
                use sqlx::Row as _;
                rows.first().and_then(|row| {
                    Some((
                        row.try_get::<i64, _>(0).ok()?,
                        row.try_get::<String, _>(1).ok()?,
                    ))
                })
            });
        match written {
            // The head is where these records put it: they are in.
            Ok(Some((at, hash))) if at == seq && hash == prev => {
                if let Ok(mut head) = self.head.lock() {
                    *head = Some((seq, prev));
                }
                Ok(())
            }
            other => {
                // Another writer moved the head, or the script failed part-way: end any open
                // transaction and take the ordinary path.
                if other.is_err() {
                    let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
                }
                drop(conn);
                drop(guard);
                self.append_and_remember(chained.into_iter().map(|r| r.record).collect())
                    .await
            }
        }
    }

    /// The ordinary append, remembering the head it leaves.
    async fn append_and_remember(
        &self,
        records: Vec<warden_core::audit::NewRecord>,
    ) -> Result<(), StoreError> {
        if let Ok(mut head) = self.head.lock() {
            *head = None;
        }
        let (guard, mut tx) = self.begin_write().await?;
        Self::append_in(&mut tx, records).await?;
        let head: (i64, String) = sqlx::query_as(Self::LOCK_HEAD).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        drop(guard);
        if let Ok(mut h) = self.head.lock() {
            *h = Some(head);
        }
        Ok(())
    }

    pub(crate) async fn migrate(&self) -> Result<(), StoreError> {
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(&self.pool)
                .await
                .unwrap_or(None);
        crate::migrations::check_not_newer(&MIGRATOR, applied)?;
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Migration(e.to_string()))
    }

    shared_operations!(Sqlite);
}
