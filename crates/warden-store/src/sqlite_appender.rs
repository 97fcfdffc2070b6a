//! The audit appender of the embedded store: its own SQLite connection, prepared statements,
//! and group commit led by the callers themselves.
//!
//! The call path appends one or two records per governed call, so this is the hottest write
//! Warden makes. Through sqlx an append went caller task → writer task → sqlx's connection
//! thread → writer task → caller, and its statement was parsed every time: profiled in
//! docs/benchmarks.md, a third of the server's CPU at 64 clients, and at one client ~0.2 ms
//! of thread wake-ups around an 11 µs commit. Here a caller queues its records; if no append
//! is being written it becomes the *leader* and commits everything queued, its own records
//! included, on its own thread, with cached prepared statements; callers that queued while a
//! leader was writing are answered by the leader's next commit (group commit). At one client
//! an append costs one commit and no thread hop; under load, one commit serves many calls.
//!
//! Blocking is bounded: a leader writes at most [`LEADER_ROUNDS`] commits before handing the
//! rest to a blocking-pool thread, and it never waits on SQLite's lock on the runtime's thread
//! — when another writer (this process's pool, the CLI) holds it, the commit is retried on a
//! blocking-pool thread with the full busy timeout. WAL checkpoints run on their own thread so
//! a commit never pays for one.
//!
//! Correctness is that of the ordinary append: `BEGIN IMMEDIATE` takes SQLite's write lock,
//! the head is read inside the transaction, the records are chained after it and the head
//! moves in the same transaction. A caller is answered only after `COMMIT` returned, that is
//! once the records are in the WAL (`synchronous = NORMAL`: they survive a process crash;
//! REL-3).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior, params};

use crate::{GROUP_COMMIT_RECORDS, PendingAppend, StoreError};

/// Commits a leader writes on the caller's thread before handing over.
const LEADER_ROUNDS: usize = 2;
/// How long a commit waits for another writer's lock (off the runtime's threads).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Commits between checkpoint nudges, and the longest time between checkpoints. A checkpoint
/// copies the WAL into the database and syncs both; every 256 commits that was ~10 a second
/// under load and cost a sixth of the throughput at 64 clients (docs/benchmarks.md), so under
/// load it is about once a second, with a WAL of at most a second's commits.
const CHECKPOINT_EVERY: u32 = 4096;
const CHECKPOINT_PERIOD: Duration = Duration::from_secs(1);

/// The handle the store keeps.
#[derive(Clone, Debug)]
pub(crate) struct SqliteAppender {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    queue: Mutex<Queue>,
    conn: Mutex<Connection>,
    closed: AtomicBool,
    commits: AtomicU32,
    checkpoints: mpsc::Sender<()>,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: Vec<PendingAppend>,
    /// Whether a leader is writing (only it touches the connection).
    leading: bool,
}

/// How one commit went.
enum Commit {
    Done,
    /// Another writer holds the lock: retry where waiting is allowed.
    Busy(Vec<PendingAppend>),
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // The journal mode (WAL) is a property of the file, set when the pool created it; the
    // sync level is per connection and must match the pool's.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

impl SqliteAppender {
    /// Opens the appender's connection to the (migrated) database file and starts the
    /// checkpoint thread.
    pub(crate) fn start(path: &Path) -> Result<Self, StoreError> {
        let unreachable = |e: rusqlite::Error| {
            StoreError::Unreachable(format!(
                "cannot open `{}` for audit appends: {e}",
                path.display()
            ))
        };
        let conn = open(path).map_err(unreachable)?;
        // Checkpoints are the checkpoint thread's job; never inside a call's commit.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(unreachable)?;
        let checkpointer = open(path).map_err(unreachable)?;
        let (nudge, nudges) = mpsc::channel();
        std::thread::Builder::new()
            .name("warden-checkpoint".into())
            .spawn(move || checkpoint_loop(checkpointer, nudges))
            .map_err(|e| StoreError::Unreachable(format!("cannot start the checkpointer: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                queue: Mutex::new(Queue::default()),
                conn: Mutex::new(conn),
                closed: AtomicBool::new(false),
                commits: AtomicU32::new(0),
                checkpoints: nudge,
            }),
        })
    }

    /// Queues `pending`; leads the commit when nobody is writing. Its `done` is answered once
    /// the records are committed (or the commit failed).
    pub(crate) fn submit(&self, pending: PendingAppend) -> Result<(), StoreError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Unreachable("the store is closed".into()));
        }
        let lead = {
            let mut queue = self.inner.lock_queue();
            queue.waiting.push(pending);
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            self.inner.clone().lead(LEADER_ROUNDS);
        }
        Ok(())
    }

    /// Later appends fail (`UNAVAILABLE` on the call path).
    pub(crate) fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
    }
}

impl Inner {
    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes up to [`GROUP_COMMIT_RECORDS`] records' worth of waiting appends (at least one
    /// append); `None`, and leadership given up, when nothing waits.
    fn take_batch(&self) -> Option<Vec<PendingAppend>> {
        let mut queue = self.lock_queue();
        if queue.waiting.is_empty() {
            queue.leading = false;
            return None;
        }
        let mut count = 0;
        let mut n = 0;
        for p in &queue.waiting {
            if n > 0 && count + p.records.len() > GROUP_COMMIT_RECORDS {
                break;
            }
            count += p.records.len();
            n += 1;
        }
        Some(queue.waiting.drain(..n).collect())
    }

    /// Leads: commits what waits, `rounds` times at most on this thread, then hands the rest
    /// (and any commit that has to wait for the lock) to a blocking-pool thread.
    fn lead(self: Arc<Self>, rounds: usize) {
        for _ in 0..rounds {
            let Some(batch) = self.take_batch() else {
                return;
            };
            match self.commit(batch, Duration::ZERO) {
                Commit::Done => {}
                Commit::Busy(batch) => {
                    self.hand_over(Some(batch));
                    return;
                }
            }
        }
        self.hand_over(None);
    }

    /// Continues leading on a blocking-pool thread, where waiting is allowed.
    fn hand_over(self: Arc<Self>, busy: Option<Vec<PendingAppend>>) {
        let run = move || {
            if let Some(batch) = busy {
                self.commit_waiting(batch);
            }
            while let Some(batch) = self.take_batch() {
                self.commit_waiting(batch);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(run);
            }
            Err(_) => run(),
        }
    }

    fn commit_waiting(&self, batch: Vec<PendingAppend>) {
        if let Commit::Busy(batch) = self.commit(batch, BUSY_TIMEOUT) {
            answer(
                batch,
                Err("the audit append timed out waiting for the database lock".into()),
            );
        }
    }

    /// One transaction for the whole batch; answers every caller unless the lock was busy.
    fn commit(&self, batch: Vec<PendingAppend>, busy_timeout: Duration) -> Commit {
        let mut conn = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let result = conn
            .busy_timeout(busy_timeout)
            .and_then(|()| append(&mut conn, &batch));
        drop(conn);
        match result {
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {
                return Commit::Busy(batch);
            }
            Err(e) => answer(batch, Err(format!("the audit append failed: {e}"))),
            Ok(()) => answer(batch, Ok(())),
        }
        if self.commits.fetch_add(1, Ordering::Relaxed) % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1 {
            let _ = self.checkpoints.send(());
        }
        Commit::Done
    }
}

fn answer(batch: Vec<PendingAppend>, result: Result<(), String>) {
    for p in batch {
        let _ = p.done.send(result.clone().map_err(StoreError::Unreachable));
    }
}

/// Chains the batch's records after the stored head and inserts them, in one
/// `BEGIN IMMEDIATE` transaction. Nothing is written unless all of it is.
fn append(conn: &mut Connection, batch: &[PendingAppend]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (mut seq, mut prev): (i64, String) = tx
        .prepare_cached("SELECT seq, hash FROM audit_head WHERE id = 1")?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO audit (seq, at, kind, run_id, call_id, principal, agent, tool, decision, code, payload, prev_hash, hash) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?;
        for record in batch.iter().flat_map(|p| p.records.iter()) {
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
    tx.prepare_cached("UPDATE audit_head SET seq = ?1, hash = ?2 WHERE id = 1")?
        .execute(params![seq, prev])?;
    tx.commit()
}

/// Checkpoints the WAL when nudged (every [`CHECKPOINT_EVERY`] commits) or every
/// [`CHECKPOINT_PERIOD`]; `PASSIVE` never blocks a writer. Ends with the appender.
fn checkpoint_loop(conn: Connection, nudges: mpsc::Receiver<()>) {
    let _ = conn.busy_timeout(Duration::ZERO);
    loop {
        match nudges.recv_timeout(CHECKPOINT_PERIOD) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}
