//! The embedded store's one audit sink: the audit connection (`appender.rs`) and, for a
//! serving store that owns it, the audit spool (`spool/`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use warden_core::audit::NewRecord;

use super::appender::SqliteAppender;
use super::chain::parse_inserted;
use super::files::DatabaseFile;
use super::spool::{self, Spool};
use crate::error::StoreError;
use crate::sink::{AdminChange, AuditSink, PendingAppend};

/// How long a serving store waits for the audit spool's lock before it commits directly.
const SPOOL_CLAIM_WAIT: Duration = Duration::from_secs(1);

/// The sink of a store on an SQLite file.
#[derive(Debug)]
pub(crate) struct SqliteSink {
    /// The connection that chains every audit row: group commits, spooled batches, admin
    /// changes.
    pub(super) appender: SqliteAppender,
    pub(super) durable: Durable,
    /// The database file this sink writes, checked before an append is acknowledged.
    pub(super) database: DatabaseFile,
}

/// How an append is made durable.
#[derive(Debug)]
pub(super) enum Durable {
    /// Written to the spool this store owns, and chained moments later by its inserter.
    Spooled(Spool),
    /// Committed to the chain before it is acknowledged (group commit); `spool` is the spool
    /// that a server may own.
    Committed { spool: PathBuf },
}

impl SqliteSink {
    /// Opens the audit connection to the (migrated) database `file` and inserts what a stopped
    /// server left in its spool, unless a live server owns the spool. `serving` is the spool's
    /// insert delay for a serving store, which keeps the spool and appends to it.
    pub(super) async fn open(file: &Path, serving: Option<Duration>) -> Result<Self, StoreError> {
        let appender = SqliteAppender::start(file)?;
        let database = DatabaseFile::capture(file)?;
        let spool_path = spool::path_for(file);
        let mut claimed = spool::claim(&spool_path, &appender)?;
        if serving.is_some() {
            // A CLI command holds the lock only while it opens the store: wait for it rather
            // than commit directly for the server's whole life.
            let until = Instant::now() + SPOOL_CLAIM_WAIT;
            while claimed.is_none() && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(50)).await;
                claimed = spool::claim(&spool_path, &appender)?;
            }
            if claimed.is_none() {
                tracing::warn!(
                    spool = %spool_path.display(),
                    "another process owns the audit spool (another server on this data \
                     directory?); audit records are committed to the database directly"
                );
            }
        }
        let durable = match (claimed, serving) {
            (Some(claimed), Some(delay)) => {
                Durable::Spooled(Spool::start(claimed, appender.clone(), delay)?)
            }
            // Replayed (and let go), or owned by a live server: commit directly.
            _ => Durable::Committed { spool: spool_path },
        };
        Ok(Self {
            appender,
            durable,
            database,
        })
    }

    /// Before an admin change: waits until what this process spooled is in the chain, so that
    /// the chain keeps the order in which records were acknowledged. A committed append is in
    /// the chain when it is acknowledged.
    async fn settle_for_write(&self) -> Result<(), StoreError> {
        match &self.durable {
            Durable::Spooled(spool) => spool.sync().await,
            Durable::Committed { .. } => Ok(()),
        }
    }

    /// The number of the last spooled batch in the chain, read on the audit connection.
    async fn spool_inserted(&self) -> Result<u64, StoreError> {
        let appender = self.appender.clone();
        let value = tokio::task::spawn_blocking(move || appender.spool_inserted())
            .await
            .map_err(|e| {
                StoreError::Unreachable(format!("cannot read the audit spool's state: {e}"))
            })?
            .map_err(|e| StoreError::Database(e.to_string()))?;
        parse_inserted(value.as_deref()).map_err(StoreError::Corrupt)
    }
}

impl AuditSink for SqliteSink {
    /// Await it to the end or drop it: a committing append may be leading a group commit
    /// that other calls wait for (dropped, it hands that over).
    async fn append(&self, records: Vec<NewRecord>) -> Result<(), StoreError> {
        // A store found lost takes nothing more; whether it is lost now is looked at once
        // the records are written, before they are acknowledged.
        self.database.check_lost()?;
        match &self.durable {
            Durable::Spooled(spool) => {
                spool.append(records)?;
                // Durable, but only acknowledged while it is durable in *the store*.
                self.database.check()
            }
            Durable::Committed { .. } => {
                let (done, durable) = oneshot::channel();
                if let Some(lead) = self.appender.submit(PendingAppend { records, done })? {
                    // Under concurrency, the calls that are ready on this thread queue their
                    // records before the commit and share it (group commit; measured in
                    // docs/benchmarks.md). Cancelled here, the lead is handed over.
                    if lead.gather() {
                        tokio::task::yield_now().await;
                    }
                    lead.run();
                }
                durable.await.map_err(|_| {
                    StoreError::Unreachable("the audit writer has stopped".into())
                })??;
                self.database.check()
            }
        }
    }

    fn check(&self) -> Result<(), StoreError> {
        self.database.check()
    }

    async fn admin(
        &self,
        change: AdminChange,
        record: NewRecord,
    ) -> Result<Option<u64>, StoreError> {
        self.settle_for_write().await?;
        let appender = self.appender.clone();
        tokio::task::spawn_blocking(move || appender.admin(&change, &record))
            .await
            .map_err(|e| StoreError::Unreachable(format!("the admin change stopped: {e}")))?
    }

    async fn settle_for_read(&self) -> Result<(), StoreError> {
        let spool_path = match &self.durable {
            Durable::Spooled(spool) => return spool.sync().await,
            Durable::Committed { spool } => spool,
        };
        // A server that owned the spool and stopped left its batches to whoever takes the
        // lock: insert them now rather than wait for an owner that is gone.
        if spool::claim(spool_path, &self.appender)?.is_some() {
            return Ok(());
        }
        let last = spool::last_in_file(spool_path.clone()).await?;
        let until = Instant::now() + spool::BARRIER_TIMEOUT;
        if last == 0 {
            return Ok(());
        }
        loop {
            if self.spool_inserted().await? >= last {
                return Ok(());
            }
            if Instant::now() >= until {
                return Err(StoreError::Unreachable(format!(
                    "the server that owns the audit spool `{}` has not inserted its records \
                     within {} s (its log says why)",
                    spool_path.display(),
                    spool::BARRIER_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    fn close(&self) {
        if let Durable::Spooled(spool) = &self.durable {
            spool.close();
        }
        self.appender.close();
    }
}
