//! The SQLite backend: the embedded default, one file under the data directory, WAL mode.
//!
//! Writers are serialised in-process by a mutex and across processes (the CLI working on the
//! same data directory) — and against the audit appender's own connection
//! (`sqlite_appender`) — by `BEGIN IMMEDIATE` and the busy timeout. `synchronous = NORMAL` in
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
    /// The database file, when it is one (not in memory): the audit appender
    /// (`sqlite_appender`) opens its own connection to it. An in-memory database appends
    /// through the pool.
    pub(crate) file: Option<std::path::PathBuf>,
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
