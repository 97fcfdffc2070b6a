//! The SQLite backend's sqlx pool: one file under the data directory, WAL mode; every read,
//! and the writes that append no audit record (counters, agent runs, approvals, tasks).
//!
//! Writers are serialised in-process by a mutex and across processes (the CLI working on the
//! same data directory) — and against the audit sink's own connection (`appender.rs`) — by
//! `BEGIN IMMEDIATE` and the busy timeout. `synchronous = NORMAL` in WAL mode keeps every
//! committed transaction across a process crash (`kill -9`); only an operating-system crash
//! or power loss can roll back the last transactions.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};
use tokio::sync::{Mutex, MutexGuard};

use crate::epics::sql::epic_operations;
use crate::error::StoreError;
use crate::location::SQLITE_FILE;
use crate::notifications::sql::notification_operations;
use crate::pins::pin_operations;
use crate::sessions::sql::session_operations;
use crate::sign_ins::sql::sign_in_operations;
use crate::sql::shared_operations;
use crate::tasks::sql::task_operations;
use crate::threads::sql::thread_operations;

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

#[derive(Debug)]
pub(crate) struct SqliteBackend {
    pub(crate) pool: SqlitePool,
    write_lock: Mutex<()>,
    /// The database file: the audit sink opens its own connection to it.
    pub(crate) file: std::path::PathBuf,
}

impl SqliteBackend {
    pub(crate) async fn open_dir(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Invalid(format!(
                "cannot create the data directory `{}`: {e}",
                dir.display()
            ))
        })?;
        let file = dir.join(SQLITE_FILE);
        let options = SqliteConnectOptions::new().filename(&file);
        Self::open_with(options, file).await
    }

    /// Opens a database file named by a URL. An in-memory database is refused: the audit
    /// trail must survive the process (AUD-1, REL-3).
    pub(crate) async fn open_url(url: &str) -> Result<Self, StoreError> {
        if url.contains(":memory:") || url.contains("mode=memory") {
            return Err(StoreError::Invalid(format!(
                "`{url}` is an in-memory SQLite database, and an audit trail in memory does not \
                 survive the process; use a data directory or a file URL (`sqlite://PATH`)"
            )));
        }
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StoreError::Invalid(format!("`{url}` is not a valid SQLite URL: {e}")))?;
        let file = options.get_filename().to_path_buf();
        Self::open_with(options, file).await
    }

    async fn open_with(
        options: SqliteConnectOptions,
        file: std::path::PathBuf,
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

    /// Deletes at most `batch` archived records, those through `through` (AUD-6): the
    /// append-only trigger is lifted inside this transaction only.
    pub(crate) async fn delete_archived(
        &self,
        through: i64,
        batch: i64,
    ) -> Result<u64, StoreError> {
        let (_guard, mut tx) = self.begin_write().await?;
        sqlx::query("DROP TRIGGER IF EXISTS audit_no_delete")
            .execute(&mut *tx)
            .await?;
        let deleted = sqlx::query(crate::sql::DELETE_ARCHIVED)
            .bind(through)
            .bind(batch)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query(
            "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit \
             BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END",
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(deleted)
    }

    /// Gives the pages of deleted records back to the file system: a whole `VACUUM` the first
    /// time (which turns incremental vacuum on), an incremental one afterwards.
    pub(crate) async fn shrink(&self) -> Result<(), StoreError> {
        let _guard = self.write_lock.lock().await;
        let mut conn = self.pool.acquire().await?;
        let mode: i64 = sqlx::query_scalar("PRAGMA auto_vacuum")
            .fetch_one(&mut *conn)
            .await?;
        if mode == 2 {
            sqlx::query("PRAGMA incremental_vacuum")
                .execute(&mut *conn)
                .await?;
        } else {
            sqlx::query("PRAGMA auto_vacuum = INCREMENTAL")
                .execute(&mut *conn)
                .await?;
            sqlx::query("VACUUM").execute(&mut *conn).await?;
        }
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut *conn)
            .await?;
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
    task_operations!(Sqlite);
    session_operations!(Sqlite);
    sign_in_operations!(Sqlite);
    thread_operations!(Sqlite);
    epic_operations!(Sqlite);
    pin_operations!(Sqlite);
    notification_operations!(Sqlite);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use crate::{Location, Store};

    /// AUD-1, REL-3: a store whose audit trail would vanish with the process is refused when
    /// it is opened, in either spelling of an in-memory SQLite URL.
    #[tokio::test]
    async fn an_in_memory_sqlite_url_is_refused() {
        for url in ["sqlite::memory:", "sqlite://warden.db?mode=memory"] {
            let error = Store::open(&Location::Url(url.into())).await.unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "`{url}` is an in-memory SQLite database, and an audit trail in memory does \
                     not survive the process; use a data directory or a file URL (`sqlite://PATH`)"
                )
            );
        }
    }
}
