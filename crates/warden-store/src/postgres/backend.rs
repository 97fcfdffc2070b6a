//! The PostgreSQL backend's pool and the operations it shares with SQLite (`crate::sql`).

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};

use crate::epics::sql::epic_operations;
use crate::error::StoreError;
use crate::location::redact_url;
use crate::notifications::sql::notification_operations;
use crate::pins::pin_operations;
use crate::sessions::sql::session_operations;
use crate::sign_ins::sql::sign_in_operations;
use crate::sql::shared_operations;
use crate::tasks::sql::task_operations;
use crate::threads::sql::thread_operations;

/// How long a statement waits for a lock before it fails.
const LOCK_TIMEOUT: &str = "5s";

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

#[derive(Clone, Debug)]
pub(crate) struct PgBackend {
    pub(crate) pool: PgPool,
}

impl PgBackend {
    pub(crate) async fn open(url: &str) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            StoreError::Invalid(format!(
                "`{}` is not a valid PostgreSQL URL: {e}",
                redact_url(url)
            ))
        })?;
        // A held lock (a long migration, an operator's `LOCK TABLE`) must not hold a governed
        // call forever: the statement fails after LOCK_TIMEOUT and the call is refused
        // `UNAVAILABLE` (REL-2). A URL that sets its own `lock_timeout` keeps it.
        let options = if url.contains("lock_timeout") {
            options
        } else {
            options.options([("lock_timeout", LOCK_TIMEOUT)])
        };
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(5))
            .connect_with(options)
            .await?;
        Ok(Self { pool })
    }

    async fn begin_write(&self) -> Result<((), Transaction<'static, Postgres>), StoreError> {
        Ok(((), self.pool.begin().await?))
    }

    /// Deletes at most `batch` archived records, those through `through` (AUD-6): the
    /// append-only trigger is lifted inside this transaction only.
    pub(crate) async fn delete_archived(
        &self,
        through: i64,
        batch: i64,
    ) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("ALTER TABLE audit DISABLE TRIGGER audit_no_change")
            .execute(&mut *tx)
            .await?;
        let deleted = sqlx::query(crate::sql::DELETE_ARCHIVED)
            .bind(through)
            .bind(batch)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("ALTER TABLE audit ENABLE TRIGGER audit_no_change")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(deleted)
    }

    /// Makes the space of deleted records reusable (the files keep their size; PostgreSQL
    /// reuses it for new records).
    pub(crate) async fn shrink(&self) -> Result<(), StoreError> {
        sqlx::raw_sql("VACUUM audit").execute(&self.pool).await?;
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

    shared_operations!(Postgres);
    task_operations!(Postgres);
    session_operations!(Postgres);
    sign_in_operations!(Postgres);
    thread_operations!(Postgres);
    epic_operations!(Postgres);
    pin_operations!(Postgres);
    notification_operations!(Postgres);
}
