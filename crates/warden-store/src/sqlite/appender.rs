//! The audit appender of the embedded store: its own SQLite connection, prepared statements,
//! and group commit led by the callers themselves.
//!
//! A serving Warden that owns the audit spool (`spool.rs`) does not commit per call: its
//! inserter thread uses this connection through [`SqliteAppender::insert_spooled`]. The group
//! commit below serves every other store on a database file — the CLI, and a server that
//! found the spool owned by another process.
//!
//! The call path appends one or two records per governed call, so this is the hottest write
//! Warden makes. Through sqlx an append went caller task → writer task → sqlx's connection
//! thread → writer task → caller, and its statement was parsed every time: profiled in
//! docs/benchmarks.md, a third of the server's CPU at 64 clients, and at one client ~0.2 ms
//! of thread wake-ups around an 11 µs commit. Here a caller queues its records; if no append
//! is being written it becomes the *leader* and commits everything queued, its own records
//! included, on its own thread, with cached prepared statements; callers that queued while a
//! leader was writing are answered by the leader's next commit (group commit). Under
//! concurrency the store's `append_audit` has a leader yield to the scheduler once before it
//! commits ([`Lead::gather`] says when), so that the calls ready on its thread queue their
//! records and share its commit. At one client an
//! append costs one commit and no thread hop; under load, one commit serves many calls.
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
//! Correctness is that of the ordinary append: `BEGIN IMMEDIATE` takes SQLite's write lock,
//! the head is read inside the transaction, the records are chained after it and the head
//! moves in the same transaction. A caller is answered only after `COMMIT` returned, that is
//! once the records are in the WAL (`synchronous = NORMAL`: they survive a process crash;
//! REL-3).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, TryLockError, Weak, mpsc};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension as _, params};
use warden_core::audit::{NewRecord, RecordView};

use crate::error::StoreError;
use crate::sqlite::spool::{self, Batch};
use crate::{GROUP_COMMIT_RECORDS, PendingAppend};

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
    /// [`GATHER_RAISE`] when one was, lowered by one when one was not (see [`Lead::gather`]).
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
    pub(crate) fn start(path: &Path) -> Result<Self, StoreError> {
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
    /// [`Lead`], and must [`Lead::run`] it (dropping it hands the commit to a pool thread).
    pub(crate) fn submit(&self, pending: PendingAppend) -> Result<Option<Lead>, StoreError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Unreachable("the store is closed".into()));
        }
        let lead = {
            let mut queue = self.inner.lock_queue();
            queue.waiting.push(pending);
            !std::mem::replace(&mut queue.leading, true)
        };
        Ok(lead.then(|| Lead(Some(self.inner.clone()))))
    }

    /// Inserts spooled batches into the chain in one transaction, which also records the
    /// last batch's number as inserted (`crate::spool`). Blocks: for the inserter's thread
    /// and for opening the store.
    pub(crate) fn insert_spooled(&self, batches: &[Batch]) -> Result<(), String> {
        let Some(last) = batches.last().map(|b| b.id) else {
            return Ok(());
        };
        let inner = &*self.inner;
        // The commit that starts the WAL over may run here: this is not a runtime thread.
        inner.restart_due.store(false, Ordering::Relaxed);
        let conn = inner
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let result = conn.busy_timeout(BUSY_TIMEOUT).and_then(|()| {
            transact(&conn, || {
                // Batches already inserted are skipped: a retry after a `COMMIT` that reported
                // an error but was durable must not chain them twice.
                let done = spool_inserted_on(&conn)?
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
                // The records are read in place from the bytes they were spooled as: no
                // copies, and what the calls allocated was freed on their own threads.
                let spooled = batches
                    .iter()
                    .filter(|b| b.id > done)
                    .map(Batch::records)
                    .collect::<Result<Vec<_>, String>>()
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
                chain_and_insert(&conn, spooled.into_iter().flatten())?;
                conn.prepare_cached(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )?
                .execute(params![spool::INSERTED_KEY, last.max(done).to_string()])
                .map(drop)
            })
        });
        drop(conn);
        result.map_err(|e| format!("the audit insert failed: {e}"))?;
        if inner.commits.fetch_add(1, Ordering::Relaxed) % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1
        {
            let _ = inner.checkpoints.send(());
        }
        Ok(())
    }

    /// The number of the last spooled batch that is in the audit table (0: none yet).
    pub(crate) fn spool_inserted(&self) -> Result<u64, String> {
        let conn = self
            .inner
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        conn.busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| spool_inserted_on(&conn))
            .map_err(|e| e.to_string())?
    }

    /// Later appends fail (`UNAVAILABLE` on the call path).
    pub(crate) fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
    }
}

/// The duty to commit what is queued, held by the caller that found nobody writing.
///
/// The caller may first let other ready tasks queue their records (the store yields to the
/// scheduler once), so that under load one commit serves every call that was ready — a commit
/// costs the same for one record pair as for fifty. A `Lead` dropped before it ran (its
/// caller was cancelled) hands the queue to a blocking-pool thread, so no queued append is
/// ever left without a leader.
#[derive(Debug)]
#[must_use = "a lead that is not run hands the commit to another thread"]
pub(crate) struct Lead(Option<Arc<Inner>>);

impl Lead {
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

impl Drop for Lead {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            inner.hand_over(None);
        }
    }
}

/// The rest of a leader's work, for a blocking-pool thread. A runtime that is shutting down
/// drops it without running it; then it runs where it is dropped, so that no queued append is
/// left waiting with `leading` still set.
struct Duty(Option<(Arc<Inner>, Option<Vec<PendingAppend>>)>);

impl Duty {
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

impl Drop for Duty {
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
        let mut duty = Duty(Some((self, busy)));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || duty.run());
            }
            Err(_) => duty.run(),
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
fn append(conn: &Connection, batch: &[PendingAppend]) -> rusqlite::Result<()> {
    transact(conn, || {
        chain_and_insert(
            conn,
            batch
                .iter()
                .flat_map(|p| p.records.iter().map(NewRecord::view)),
        )
    })
}

/// [`SqliteAppender::spool_inserted`] on a connection (inside a transaction, or not).
fn spool_inserted_on(conn: &Connection) -> rusqlite::Result<Result<u64, String>> {
    let value: Option<String> = conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([spool::INSERTED_KEY], |row| row.get(0))
        .optional()?;
    Ok(spool::parse_inserted(value.as_deref()))
}

/// Runs `body` in one `BEGIN IMMEDIATE` transaction: nothing is written unless all of it is.
fn transact(
    conn: &Connection,
    body: impl FnOnce() -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    if !conn.is_autocommit() {
        // A transaction left open (a panic half-way through an earlier commit, or a failed
        // rollback) would make every later `BEGIN` fail and hold the write lock: end it.
        conn.execute_batch("ROLLBACK")?;
    }
    // `BEGIN` and `COMMIT` are cached statements too: rusqlite's `Transaction` parses both
    // anew for every commit.
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let written = body().and_then(|()| conn.prepare_cached("COMMIT")?.execute([]).map(drop));
    if written.is_err() && !conn.is_autocommit() {
        // Nothing is written unless all of it is.
        let _ = conn.execute_batch("ROLLBACK");
    }
    written
}

/// The body of [`append`]'s transaction.
fn chain_and_insert<'a>(
    tx: &Connection,
    records: impl Iterator<Item = RecordView<'a>>,
) -> rusqlite::Result<()> {
    let (mut seq, mut prev): (i64, String) = tx
        .prepare_cached("SELECT seq, hash FROM audit_head WHERE id = 1")?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO audit (seq, at, kind, run_id, call_id, principal, agent, tool, decision, code, payload, prev_hash, hash) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?;
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
    tx.prepare_cached("UPDATE audit_head SET seq = ?1, hash = ?2 WHERE id = 1")?
        .execute(params![seq, prev])?;
    Ok(())
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
