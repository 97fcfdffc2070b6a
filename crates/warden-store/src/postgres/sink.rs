//! The PostgreSQL audit sink: a writer task that group-commits. Calls queue their records;
//! the writer takes whatever is waiting (up to [`GROUP_COMMIT_RECORDS`]), appends it in one
//! statement (`chain.rs`) and answers each call once that commit is durable, so under
//! concurrency many calls share one commit.

use tokio::sync::{mpsc, oneshot};
use warden_core::audit::NewRecord;

use super::backend::PgBackend;
use crate::error::StoreError;
use crate::sink::{AdminChange, AuditSink, GROUP_COMMIT_RECORDS, PendingAppend};

/// The store's handle on the writer task, and the pool admin changes run on.
#[derive(Debug)]
pub(crate) struct PgSink {
    queue: mpsc::UnboundedSender<PendingAppend>,
    backend: PgBackend,
}

impl PgSink {
    /// Starts the writer task on the (migrated) database; it ends when the sink is dropped.
    pub(crate) fn start(backend: PgBackend) -> Self {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(write_appends(backend.clone(), waiting));
        PgSink { queue, backend }
    }
}

impl AuditSink for PgSink {
    /// A PostgreSQL store is its connection: a lost one fails the append itself.
    fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn append(&self, records: Vec<NewRecord>) -> Result<(), StoreError> {
        let (done, durable) = oneshot::channel();
        self.queue
            .send(PendingAppend { records, done })
            .map_err(|_| StoreError::Unreachable("the audit writer has stopped".into()))?;
        durable
            .await
            .map_err(|_| StoreError::Unreachable("the audit writer has stopped".into()))?
    }

    async fn admin(
        &self,
        change: AdminChange,
        record: NewRecord,
    ) -> Result<Option<u64>, StoreError> {
        // Every append was committed before it was acknowledged: nothing to wait for.
        self.backend.admin(change, record).await
    }

    async fn settle_for_read(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Closing the pool (the store does) makes later appends fail.
    fn close(&self) {}
}

/// The writer: takes what is waiting (up to [`GROUP_COMMIT_RECORDS`]), appends it in one
/// transaction, acknowledges each request with the result. Ends when the sink is dropped.
async fn write_appends(backend: PgBackend, mut queue: mpsc::UnboundedReceiver<PendingAppend>) {
    let mut carry: Option<PendingAppend> = None;
    // The chain's head as this writer left it; read again when unknown or overtaken.
    let mut head: Option<(i64, String)> = None;
    loop {
        let first = match carry.take() {
            Some(p) => p,
            None => match queue.recv().await {
                Some(p) => p,
                None => return,
            },
        };
        let mut count = first.records.len();
        let mut batch = vec![first];
        while count < GROUP_COMMIT_RECORDS {
            match queue.try_recv() {
                Ok(p) if count + p.records.len() <= GROUP_COMMIT_RECORDS => {
                    count += p.records.len();
                    batch.push(p);
                }
                Ok(p) => {
                    carry = Some(p);
                    break;
                }
                Err(_) => break,
            }
        }
        let mut records = Vec::with_capacity(count);
        let mut waiting = Vec::with_capacity(batch.len());
        for p in batch {
            records.extend(p.records);
            waiting.push(p.done);
        }
        let result = match backend.append(&records, head.take()).await {
            Ok(moved) => {
                head = Some(moved);
                Ok(())
            }
            Err(e) => Err(e),
        };
        for done in waiting {
            let _ = done.send(match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(StoreError::Unreachable(e.to_string())),
            });
        }
    }
}
