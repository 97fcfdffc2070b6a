//! The embedded store's audit connection: its own rusqlite connection, group commit led by
//! the callers themselves, and the WAL checkpoints that keep the log bounded.
//!
//! A serving Warden that owns the audit spool (`spool/`) does not commit per call: its
//! inserter thread uses this connection through [`SqliteAppender::insert_spooled`]. The group
//! commit below serves every other store on a database file — the CLI, and a server that
//! found the spool owned by another process. Admin changes run on this connection too
//! ([`SqliteAppender::admin`]), so that one piece of code chains every audit row
//! (`chain.rs`).
//!
//! A caller queues its records; if no append is being written it becomes the *leader* and
//! commits everything queued, its own records included, on its own thread, with cached
//! prepared statements; callers that queued while a leader was writing are answered by the
//! leader's next commit (group commit). Under concurrency the sink has a leader yield to the
//! scheduler once before it commits ([`LeaderTurn::gather`] says when), so that the calls ready on
//! its thread queue their records and share its commit. At one client an append costs one
//! commit and no thread hop; under load, one commit serves many calls.
//!
//! Blocking is bounded: a leader writes at most [`LEADER_ROUNDS`] commits before handing the
//! rest to a blocking-pool thread, and it never waits on SQLite's lock on the runtime's thread
//! — when another writer (this process's pool, the CLI) holds it, the commit is retried on a
//! blocking-pool thread with the full busy timeout. WAL checkpoints run on their own thread so
//! a commit never pays for one; the commit that starts the WAL over after a checkpoint (it
//! syncs a new WAL header) runs on a blocking-pool thread too.
//!
//! The WAL stays bounded under continuous load. SQLite starts its log over only when a
//! checkpoint has copied all of it before the next write begins, which a checkpoint running
//! beside a steady stream of commits never achieves: under load the WAL grew by the whole
//! write rate, ~80 MB a second at 64 clients, until the disk was full. So a checkpoint copies
//! what it can without stopping anybody, then pauses the appender while it copies what was
//! committed during that first pass (a commit due in the pause waits on a blocking-pool
//! thread, never on the runtime's), and the next commit starts the log over;
//! `journal_size_limit` then cuts back what a burst grew it to beyond [`WAL_SIZE_LIMIT`]. A
//! reader holding an older snapshot at that moment (this process's pool, the CLI) can keep
//! the log from starting over; the next checkpoint, a second later, tries again.
//!
//! A caller is answered only after `COMMIT` returned, that is once its records are in the WAL
//! (`synchronous = NORMAL`: they survive a process crash; REL-3).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, TryLockError, Weak, mpsc};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};
use warden_core::audit::NewRecord;

use super::chain;
use super::spool::frame::Batch;
use crate::error::StoreError;
use crate::sink::{AdminChange, GROUP_COMMIT_RECORDS, PendingAppend};

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
/// What the WAL file is cut back to when it starts over (SQLite's `journal_size_limit`).
const WAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;
/// How much a shared commit raises [`Inner::sharing`], and its ceiling: after a shared commit
/// leaders gather until [`GATHER_RAISE`] commits in a row were not shared.
const GATHER_RAISE: u32 = 4;
const GATHER_CEILING: u32 = 16;

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
    /// Set by a checkpoint that let the WAL start over: the commit that restarts it writes and
    /// syncs a new WAL header (and may cut the file back), so it goes to a blocking-pool
    /// thread rather than run on a runtime thread.
    restart_due: AtomicBool,
    /// Whether commits have lately been shared by several appends: raised by
    /// [`GATHER_RAISE`] when one was, lowered by one when one was not (see [`LeaderTurn::gather`]).
    sharing: AtomicU32,
    checkpoints: mpsc::Sender<()>,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: Vec<PendingAppend>,
    /// Whether there is a leader (writing, or about to: it may be yielding first). Only the
    /// leader commits; the checkpointer also takes the connection, briefly.
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
    pub(super) fn start(path: &Path) -> Result<Self, StoreError> {
        Self::start_with(path, CHECKPOINT_PERIOD)
    }

    /// [`SqliteAppender::start`] with another longest time between checkpoints.
    fn start_with(path: &Path, period: Duration) -> Result<Self, StoreError> {
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
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)
            .map_err(unreachable)?;
        let checkpointer = open(path).map_err(unreachable)?;
        let (nudge, nudges) = mpsc::channel();
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue::default()),
            conn: Mutex::new(conn),
            closed: AtomicBool::new(false),
            commits: AtomicU32::new(0),
            sharing: AtomicU32::new(0),
            restart_due: AtomicBool::new(false),
            checkpoints: nudge,
        });
        let appender = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("warden-checkpoint".into())
            .spawn(move || checkpoint_loop(&appender, &checkpointer, &nudges, period))
            .map_err(|e| StoreError::Unreachable(format!("cannot start the checkpointer: {e}")))?;
        Ok(Self { inner })
    }

    /// Queues `pending`. Its `done` is answered once the records are committed (or the
    /// commit failed). When nobody is writing, the caller becomes the leader: it gets the
    /// [`LeaderTurn`], and must [`LeaderTurn::run`] it (dropping it hands the commit to a pool thread).
    pub(super) fn submit(&self, pending: PendingAppend) -> Result<Option<LeaderTurn>, StoreError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Unreachable("the store is closed".into()));
        }
        let lead = {
            let mut queue = self.inner.lock_queue();
            queue.waiting.push(pending);
            !std::mem::replace(&mut queue.leading, true)
        };
        Ok(lead.then(|| LeaderTurn(Some(self.inner.clone()))))
    }

    /// Inserts spooled batches into the chain in one transaction, which also records the
    /// last batch's number as inserted (`chain::insert_spooled`). Blocks: for the inserter's
    /// thread and for opening the store.
    pub(super) fn insert_spooled(&self, batches: &[Batch]) -> Result<(), String> {
        if batches.is_empty() {
            return Ok(());
        }
        let inner = &*self.inner;
        // The commit that starts the WAL over may run here: this is not a runtime thread.
        inner.restart_due.store(false, Ordering::Relaxed);
        let conn = inner.lock_conn();
        let result = conn
            .busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| chain::insert_spooled(&conn, batches));
        drop(conn);
        result.map_err(|e| format!("the audit insert failed: {e}"))?;
        inner.committed();
        Ok(())
    }

    /// Makes an admin change and chains its record in one transaction (`chain::admin`).
    /// Blocks: for a blocking-pool thread.
    pub(super) fn admin(
        &self,
        change: &AdminChange,
        record: &NewRecord,
    ) -> Result<Option<u64>, StoreError> {
        let inner = &*self.inner;
        if inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Unreachable("the store is closed".into()));
        }
        // As in `insert_spooled`: not a runtime thread.
        inner.restart_due.store(false, Ordering::Relaxed);
        let conn = inner.lock_conn();
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| StoreError::Database(e.to_string()))?;
        let done = chain::admin(&conn, change, record);
        drop(conn);
        inner.committed();
        done
    }

    /// The stored number of the last spooled batch that is in the audit table
    /// (`chain::parse_inserted` reads it). Blocks.
    pub(super) fn spool_inserted(&self) -> rusqlite::Result<Option<String>> {
        let conn = self.inner.lock_conn();
        conn.busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| chain::inserted_value(&conn))
    }

    /// Later appends fail (`UNAVAILABLE` on the call path).
    pub(super) fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
    }
}

/// The turn to commit what is queued, held by the caller that found nobody writing.
///
/// The caller may first let other ready tasks queue their records (the store yields to the
/// scheduler once), so that under load one commit serves every call that was ready — a commit
/// costs the same for one record pair as for fifty. A `LeaderTurn` dropped before it ran (its
/// caller was cancelled) hands the queue to a blocking-pool thread, so no queued append is
/// ever left without a leader.
#[derive(Debug)]
#[must_use = "a leader turn that is not run hands the commit to another thread"]
pub(crate) struct LeaderTurn(Option<Arc<Inner>>);

impl LeaderTurn {
    /// Whether the leader should let other ready calls queue their records before it commits:
    /// only while commits have lately been shared, that is under concurrency. A lone client
    /// (whose appends never overlap) commits at once and pays nothing for the wait.
    pub(crate) fn gather(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|inner| inner.sharing.load(Ordering::Relaxed) > 0)
    }

    /// Commits what is queued, on this thread (at most [`LEADER_ROUNDS`] commits).
    pub(crate) fn run(mut self) {
        if let Some(inner) = self.0.take() {
            inner.lead(LEADER_ROUNDS);
        }
    }
}

impl Drop for LeaderTurn {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            inner.hand_over(None);
        }
    }
}

/// The rest of a leader's work, for a blocking-pool thread. A runtime that is shutting down
/// drops it without running it; then it runs where it is dropped, so that no queued append is
/// left waiting with `leading` still set.
struct HandedOver(Option<(Arc<Inner>, Option<Vec<PendingAppend>>)>);

impl HandedOver {
    fn run(&mut self) {
        if let Some((inner, busy)) = self.0.take() {
            if let Some(batch) = busy {
                inner.commit_waiting(batch);
            }
            while let Some(batch) = inner.take_batch() {
                inner.commit_waiting(batch);
            }
        }
    }
}

impl Drop for HandedOver {
    fn drop(&mut self) {
        self.run();
    }
}

impl Inner {
    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The connection, waiting for it (off the runtime's threads).
    fn lock_conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a commit, nudging the checkpointer every [`CHECKPOINT_EVERY`] commits.
    fn committed(&self) {
        if self.commits.fetch_add(1, Ordering::Relaxed) % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1 {
            let _ = self.checkpoints.send(());
        }
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
        let sharing = self.sharing.load(Ordering::Relaxed);
        self.sharing.store(
            if n > 1 {
                (sharing + GATHER_RAISE).min(GATHER_CEILING)
            } else {
                sharing.saturating_sub(1)
            },
            Ordering::Relaxed,
        );
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
        let mut handed_over = HandedOver(Some((self, busy)));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || handed_over.run());
            }
            Err(_) => handed_over.run(),
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
    /// With no busy timeout (on a runtime thread) it does not wait for the connection either:
    /// the checkpointer may hold it for a moment.
    fn commit(&self, batch: Vec<PendingAppend>, busy_timeout: Duration) -> Commit {
        let conn = if busy_timeout.is_zero() {
            if self.restart_due.swap(false, Ordering::Relaxed) {
                return Commit::Busy(batch);
            }
            match self.conn.try_lock() {
                Ok(conn) => conn,
                Err(TryLockError::WouldBlock) => return Commit::Busy(batch),
                Err(TryLockError::Poisoned(conn)) => conn.into_inner(),
            }
        } else {
            self.conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let result = conn
            .busy_timeout(busy_timeout)
            .and_then(|()| append(&conn, &batch));
        drop(conn);
        match result {
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {
                return Commit::Busy(batch);
            }
            Err(e) => answer(batch, Err(format!("the audit append failed: {e}"))),
            Ok(()) => answer(batch, Ok(())),
        }
        self.committed();
        Commit::Done
    }
}

fn answer(batch: Vec<PendingAppend>, result: Result<(), String>) {
    for p in batch {
        let _ = p.done.send(result.clone().map_err(StoreError::Unreachable));
    }
}

/// Chains the batch's records after the stored head and inserts them, in one transaction.
fn append(conn: &Connection, batch: &[PendingAppend]) -> rusqlite::Result<()> {
    chain::transact(conn, || {
        chain::chain_and_insert(
            conn,
            batch
                .iter()
                .flat_map(|p| p.records.iter().map(NewRecord::view)),
        )
    })
}

/// Checkpoints the WAL when nudged (every [`CHECKPOINT_EVERY`] commits) or every `period`.
/// Ends with the appender.
fn checkpoint_loop(
    appender: &Weak<Inner>,
    conn: &Connection,
    nudges: &mpsc::Receiver<()>,
    period: Duration,
) {
    let _ = conn.busy_timeout(Duration::ZERO);
    loop {
        match nudges.recv_timeout(period) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => match appender.upgrade() {
                Some(appender) => checkpoint(&appender, conn),
                None => return,
            },
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        // Nudges that came during a long checkpoint are answered by it.
        while nudges.try_recv().is_ok() {}
    }
}

/// Copies the WAL into the database so that the next commit starts the log over (module
/// docs): first without stopping anybody, then with the appender paused, for what was
/// committed during the first pass — and for a commit that began before the first pass
/// finished, which would otherwise keep the log from starting over even when that pass copied
/// everything. The second pass costs nothing when there is nothing left to copy. `PASSIVE`
/// never waits for another writer or a reader; a reader's older snapshot limits what it may
/// copy, and the next checkpoint tries again.
fn checkpoint(appender: &Inner, conn: &Connection) {
    copy_wal(conn);
    let _paused = appender
        .conn
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if copy_wal(conn) {
        appender.restart_due.store(true, Ordering::Relaxed);
    }
}

/// One `PASSIVE` checkpoint; whether it left a WAL with frames all copied (which the next
/// commit starts over).
fn copy_wal(conn: &Connection) -> bool {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        let (busy, log, copied): (i64, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
        Ok(busy == 0 && log > 0 && log == copied)
    })
    .unwrap_or(false)
}

#[cfg(test)]
pub(crate) mod tests;
