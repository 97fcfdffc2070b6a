//! The audit spool of the embedded store: how a serving Warden makes a call's audit records
//! durable with one `write`, and inserts them into SQLite in bulk off the call path.
//!
//! A governed call cannot be answered before its audit records would survive a crash
//! (AUD-1, REL-3). Committing them to SQLite — four chained, indexed rows in a WAL
//! transaction — was about half of Warden's CPU per call at one client (docs/benchmarks.md).
//! With the spool, a call's records are appended to `warden.db-spool` (or
//! `-spool2`: the two take turns, see [`SpoolFile`]) as one framed, numbered, checksummed
//! batch: one `write` to the file, after which a `kill -9` no longer loses them (the same
//! guarantee as SQLite's `synchronous = NORMAL`: the page cache survives a process crash, not
//! a power loss). The call is then answered. A thread of its
//! own (the *inserter*) gathers the spooled batches for [`DEFAULT_INSERT_DELAY`] and inserts
//! them into the audit chain in one transaction, which also records the number of the last
//! batch it inserted (`meta.audit_spool_inserted`). So a batch is in SQLite exactly when its
//! number is at most that one, and that is decided by the same commit.
//!
//! - **Replay.** Whoever opens the store and can take the spool's lock (an exclusive `flock`)
//!   inserts the batches a crashed server left behind — those numbered after
//!   `audit_spool_inserted`, in number order across both files — and empties them. A frame
//!   cut short or failing its checksum ends its file: it was being written when the process
//!   died, so it was never acknowledged. A file that begins with another magic than this
//!   format's is refused, and the store with it: its records are neither replayed as something
//!   else nor dropped.
//! - **Ownership.** Only a serving Warden ([`crate::Store::open_serving`]) keeps the lock and
//!   spools; the CLI replays if it can, then lets go and appends to SQLite directly, as a
//!   server that finds the lock taken does.
//! - **Reads.** A trail read in the owning process first waits until everything spooled has
//!   been inserted (the inserter goes at once when asked). Another process (the CLI beside a
//!   live server) reads the numbers in the spool's files and waits until `audit_spool_inserted`
//!   has reached them, so `warden audit` shows every call that was answered before it
//!   started. Admin changes in the owning process wait too, so the chain keeps the order in
//!   which things were acknowledged.
//! - **Failure.** A spool write that fails is cut back off the file and the call fails
//!   (`UNAVAILABLE`). While inserting fails (another writer holds SQLite's lock for longer
//!   than the busy timeout, a full disk), the records stay spooled and are retried every
//!   [`RETRY`]; new appends fail closed until an insert succeeds again.
//! - **Size.** A file is emptied once everything in it is inserted, by starting it over: new
//!   frames are written from its start, over inserted ones, which a reader takes for what they
//!   are (`Shared::cut_back`); see [`SpoolFile`]. Closing cuts both files to nothing.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use warden_core::audit::NewRecord;

use super::appender::SqliteAppender;
use super::chain::parse_inserted;
use crate::error::StoreError;

pub(super) mod frame;

use frame::{Batch, HEADER, MAGIC, cut_short, decode, encode, foreign_magic, views};

/// How long the inserter gathers batches before inserting them, unless asked to go at once.
/// Overridden (in milliseconds) by `WARDEN_AUDIT_INSERT_DELAY_MS`. Measured at one client
/// (docs/benchmarks.md): 10 ms put a burst of inserting beside the calls a
/// hundred times a second and the added p99 went from +0.4–0.6 to +0.9 ms; 100 ms gave
/// +0.25–0.36 ms and the lowest CPU per call; 1 ms and 1 s were no better.
const DEFAULT_INSERT_DELAY: Duration = Duration::from_millis(100);
/// How long the inserter waits before trying again after an insert failed.
const RETRY: Duration = Duration::from_secs(1);
/// The size at which appends move to the other file, and below which the file they go to is
/// not emptied even when all its batches are inserted.
const CUT_BACK_AT: u64 = 1 << 20;
/// The size past which a file that is emptied is also cut back to nothing, rather than only
/// started over (see `Shared::cut_back`).
const SHRINK_PAST: u64 = 4 * CUT_BACK_AT;
/// How long another process waits for the owner to insert what it had spooled.
pub(super) const BARRIER_TIMEOUT: Duration = Duration::from_secs(10);

/// The spool of a database file: beside it, as SQLite's `-wal` and `-shm` are, two files that
/// take turns (`-spool` and `-spool2`; see [`SpoolFile`]). The first also carries the lock.
pub(super) fn path_for(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-spool");
    PathBuf::from(name)
}

/// The two files of the spool at `base` (from [`path_for`]).
fn files_of(base: &Path) -> [PathBuf; 2] {
    let mut second = base.as_os_str().to_owned();
    second.push("2");
    [base.to_owned(), PathBuf::from(second)]
}

fn unreachable(path: &Path, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unreachable(format!(
        "cannot {what} the audit spool `{}`: {e}",
        path.display()
    ))
}

/// The spool's files, locked by this process, with every batch in them inserted.
#[derive(Debug)]
pub(super) struct Claimed {
    files: [File; 2],
    paths: [PathBuf; 2],
    /// The number of the last batch inserted (or spooled: none is left over).
    last: u64,
}

fn open_spool_file(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| unreachable(path, "open", e))
}

/// Takes the spool's lock and inserts what a stopped owner left in its files, in the order of
/// the batches' numbers, then empties them. `None` when another process (a live server) holds
/// the lock.
pub(super) fn claim(base: &Path, appender: &SqliteAppender) -> Result<Option<Claimed>, StoreError> {
    let paths = files_of(base);
    let [first, second] = &paths;
    let first = open_spool_file(first)?;
    match first.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Error(e)) => return Err(unreachable(base, "lock", e)),
    }
    let mut files = [first, open_spool_file(second)?];
    let inserted = appender
        .spool_inserted()
        .map_err(|e| e.to_string())
        .and_then(|value| parse_inserted(value.as_deref()))
        .map_err(|e| {
            StoreError::Unreachable(format!("cannot read the audit spool's state: {e}"))
        })?;
    let mut last = inserted;
    let mut left = Vec::new();
    let mut count = 0;
    for (file, path) in files.iter_mut().zip(&paths) {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| unreachable(path, "read", e))?;
        if let Some(magic) = foreign_magic(&bytes) {
            return Err(StoreError::Corrupt(format!(
                "the audit spool `{}` begins with `{}`, not `{}`, the one frame format this \
                 warden reads; its records are not replayed, and the store does not open while \
                 the file is there",
                path.display(),
                magic.escape_ascii(),
                MAGIC.escape_ascii()
            )));
        }
        let (frames, whole) = decode(&bytes);
        let rest = bytes.get(whole..).unwrap_or_default();
        let next = frames.last().map_or(0, |f| f.id + 1);
        if cut_short(rest, next) {
            tracing::warn!(
                spool = %path.display(),
                bytes = rest.len(),
                "the audit spool file ends in a batch that is cut short or fails its \
                 checksum: one being written when its server stopped, never acknowledged, \
                 is dropped; its bytes are not replayed"
            );
        }
        for frame in frames {
            let id = frame.id;
            last = last.max(id);
            if id <= inserted {
                continue;
            }
            let batch = views(frame.payload).map(|records| {
                count += records.len();
                Batch::new(id, frame.payload.to_vec())
            });
            left.push(batch.map_err(|e| {
                StoreError::Corrupt(format!(
                    "batch {id} of the audit spool `{}` passed its checksum but cannot be \
                     read: {e}",
                    path.display()
                ))
            })?);
        }
    }
    left.sort_by_key(|b| b.id);
    if let Some(pair) = left
        .windows(2)
        .find(|pair| pair.first().map(|b| b.id) == pair.last().map(|b| b.id))
    {
        return Err(StoreError::Corrupt(format!(
            "batch {} is in both files of the audit spool `{}`",
            pair.first().map_or(0, |b| b.id),
            base.display()
        )));
    }
    if !left.is_empty() {
        appender
            .insert_spooled(&left)
            .map_err(|e| StoreError::Unreachable(format!("cannot replay the audit spool: {e}")))?;
        tracing::info!(
            spool = %base.display(),
            batches = left.len(),
            records = count,
            "replayed the audit records a stopped server had spooled"
        );
    }
    for (file, path) in files.iter_mut().zip(&paths) {
        file.set_len(0).map_err(|e| unreachable(path, "empty", e))?;
        file.rewind().map_err(|e| unreachable(path, "empty", e))?;
    }
    Ok(Some(Claimed { files, paths, last }))
}

/// The owner's spool: appends, and the inserter thread behind them.
#[derive(Debug)]
pub(super) struct Spool {
    shared: Arc<Shared>,
    inserter: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Debug)]
struct Shared {
    file: Mutex<SpoolFile>,
    /// The number of the last batch written to the spool.
    written: AtomicU64,
    queue: Mutex<Queue>,
    wake: Condvar,
    progress: tokio::sync::watch::Sender<Progress>,
    closed: AtomicBool,
}

/// The spool's two files. Appends go to the active one; once it has grown past
/// [`CUT_BACK_AT`] and the other is empty, they go to the other. The inserter empties a file
/// once every batch written to it is inserted (the active one only when it has grown past
/// [`CUT_BACK_AT`]). So under continuous load, when there is never a moment with nothing left
/// to insert, each file is emptied in turn, and the spool stays within about twice
/// [`CUT_BACK_AT`] plus what the inserts lag behind (on disk at most twice [`SHRINK_PAST`]
/// once a burst is inserted: emptying keeps a file's size up to that).
#[derive(Debug)]
struct SpoolFile {
    files: [File; 2],
    paths: [PathBuf; 2],
    /// Where each file's frames end: the next frame is written there.
    len: [u64; 2],
    /// The size of each file: `len` or more, when it was emptied by starting over.
    size: [u64; 2],
    /// The number of the last batch written to each file.
    top: [u64; 2],
    active: usize,
    /// Set when a failed write could not be cut back off the file: frames after it could
    /// not be read back, so nothing more is appended.
    broken: Option<String>,
    buf: Vec<u8>,
}

#[derive(Debug, Default)]
struct Queue {
    batches: VecDeque<Batch>,
    /// Somebody waits for the inserts: go without gathering.
    urgent: bool,
    /// The inserter waits for a first batch (and is to be woken when one comes).
    idle: bool,
}

/// What the inserter has done.
#[derive(Clone, Debug, Default)]
struct Progress {
    inserted: u64,
    /// Why the last insert failed, until one succeeds.
    failure: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Spool {
    /// Starts spooling to a claimed file, with its inserter thread.
    pub(super) fn start(
        claimed: Claimed,
        appender: SqliteAppender,
        delay: Duration,
    ) -> Result<Self, StoreError> {
        let (progress, _) = tokio::sync::watch::channel(Progress {
            inserted: claimed.last,
            failure: None,
        });
        let shared = Arc::new(Shared {
            file: Mutex::new(SpoolFile {
                files: claimed.files,
                paths: claimed.paths,
                len: [0; 2],
                size: [0; 2],
                top: [0; 2],
                active: 0,
                broken: None,
                buf: Vec::with_capacity(8 * 1024),
            }),
            written: AtomicU64::new(claimed.last),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            progress,
            closed: AtomicBool::new(false),
        });
        let inserter = std::thread::Builder::new()
            .name("warden-audit-insert".into())
            .spawn({
                let shared = shared.clone();
                move || shared.insert_loop(&appender, delay)
            })
            .map_err(|e| {
                StoreError::Unreachable(format!("cannot start the audit inserter: {e}"))
            })?;
        Ok(Self {
            shared,
            inserter: Mutex::new(Some(inserter)),
        })
    }

    /// Makes `records` durable in the spool and queues them for insertion. Fails — writing
    /// nothing — while the store is closed or inserts fail.
    pub(super) fn append(&self, records: Vec<NewRecord>) -> Result<(), StoreError> {
        let shared = &*self.shared;
        if shared.closed.load(Ordering::Acquire) {
            return Err(StoreError::Unreachable("the store is closed".into()));
        }
        if let Some(failure) = &shared.progress.borrow().failure {
            return Err(StoreError::Unreachable(format!(
                "audit records cannot be stored: {failure}"
            )));
        }
        let mut file = lock(&shared.file);
        // Again under the lock: `close` sets the flag holding it, so an append either comes
        // before (and its batch is queued before the inserter's last round) or fails.
        if shared.closed.load(Ordering::Acquire) {
            return Err(StoreError::Unreachable("the store is closed".into()));
        }
        if let Some(broken) = &file.broken {
            return Err(StoreError::Unreachable(broken.clone()));
        }
        let id = shared.written.load(Ordering::Relaxed) + 1;
        let spool = &mut *file;
        spool.buf.clear();
        encode(id, &records, &mut spool.buf)?;
        let active = spool.active;
        let (Some(f), Some(len), Some(path)) = (
            spool.files.get_mut(active),
            spool.len.get_mut(active),
            spool.paths.get(active),
        ) else {
            return Err(StoreError::Unreachable(
                "the audit spool has no such file".into(),
            ));
        };
        if let Err(e) = f.write_all(&spool.buf) {
            // What was written of the frame fails its checksum and ends the file for a reader;
            // the next frame is written over it.
            let error = format!("cannot write the audit spool `{}`: {e}", path.display());
            if let Err(back) = f.seek(SeekFrom::Start(*len)) {
                spool.broken = Some(format!(
                    "{error}; going back to the end of the last whole frame failed too \
                     ({back}), so the spool takes no more records until Warden restarts"
                ));
            }
            return Err(StoreError::Unreachable(error));
        }
        *len += spool.buf.len() as u64;
        if let Some(size) = spool.size.get_mut(active) {
            *size = (*size).max(*len);
        }
        let full = *len >= CUT_BACK_AT;
        if let Some(top) = spool.top.get_mut(active) {
            *top = id;
        }
        if full && spool.len.get(1 - active) == Some(&0) {
            spool.active = 1 - active;
        }
        // Queued before it counts as written, so that a reader that waits for it (`sync`) never
        // sends the inserter off without it.
        let batch = Batch::new(id, spool.buf.get(HEADER..).unwrap_or_default().to_vec());
        let mut queue = lock(&shared.queue);
        queue.batches.push_back(batch);
        shared.written.store(id, Ordering::Release);
        // Only an idle inserter is woken: one that is gathering finds the batch when its
        // delay is up, and a wake-up per call would cost a context switch each.
        let wake = std::mem::take(&mut queue.idle);
        drop(file);
        drop(queue);
        if wake {
            shared.wake.notify_one();
        }
        Ok(())
    }

    #[cfg(test)]
    pub(super) fn lens(&self) -> [u64; 2] {
        lock(&self.shared.file).len
    }

    /// Waits until every batch spooled so far is in the audit table.
    pub(super) async fn sync(&self) -> Result<(), StoreError> {
        let shared = &*self.shared;
        let target = shared.written.load(Ordering::Acquire);
        let mut progress = shared.progress.subscribe();
        if progress.borrow_and_update().inserted >= target {
            return Ok(());
        }
        lock(&shared.queue).urgent = true;
        shared.wake.notify_one();
        loop {
            {
                let now = progress.borrow_and_update();
                if now.inserted >= target {
                    return Ok(());
                }
                if let Some(failure) = &now.failure {
                    return Err(StoreError::Unreachable(format!(
                        "spooled audit records cannot be inserted: {failure}"
                    )));
                }
            }
            progress
                .changed()
                .await
                .map_err(|_| StoreError::Unreachable("the audit inserter has stopped".into()))?;
        }
    }

    /// Refuses further appends, inserts what is spooled, empties the files and stops the
    /// inserter. The spool's lock goes with the store, when it is dropped.
    pub(super) fn close(&self) {
        {
            // Under both locks: appends check the flag under the file lock, the inserter
            // under the queue lock before it waits, so neither misses it.
            let _file = lock(&self.shared.file);
            let _queue = lock(&self.shared.queue);
            self.shared.closed.store(true, Ordering::Release);
        }
        self.shared.wake.notify_one();
        if let Some(inserter) = lock(&self.inserter).take() {
            let _ = inserter.join();
        }
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    /// The inserter: waits for batches, gathers them for `delay` (unless somebody waits for
    /// them), inserts them in one transaction; after a failure, keeps them and tries again
    /// after [`RETRY`]. Once closed, makes one last attempt and ends.
    fn insert_loop(&self, appender: &SqliteAppender, delay: Duration) {
        let _stopped = Stopped(self);
        loop {
            let mut queue = lock(&self.queue);
            while queue.batches.is_empty() {
                if self.closed.load(Ordering::Acquire) {
                    drop(queue);
                    // Everything is inserted: leave nothing for the next start to read.
                    self.cut_back(self.progress.borrow().inserted, true);
                    return;
                }
                queue.idle = true;
                queue = self
                    .wake
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            queue.idle = false;
            let until = Instant::now() + delay;
            while !queue.urgent && !self.closed.load(Ordering::Acquire) {
                let now = Instant::now();
                if now >= until {
                    break;
                }
                queue = self
                    .wake
                    .wait_timeout(queue, until - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            queue.urgent = false;
            let batches: Vec<Batch> = queue.batches.drain(..).collect();
            drop(queue);
            let last = batches.last().map_or(0, |b| b.id);
            match appender.insert_spooled(&batches) {
                Ok(()) => {
                    self.cut_back(last, false);
                    self.progress.send_modify(|p| {
                        p.inserted = last;
                        p.failure = None;
                    });
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot insert spooled audit records; new calls fail until this succeeds");
                    self.progress.send_modify(|p| p.failure = Some(e));
                    let mut queue = lock(&self.queue);
                    for batch in batches.into_iter().rev() {
                        queue.batches.push_front(batch);
                    }
                    if self.closed.load(Ordering::Acquire) {
                        tracing::warn!(
                            "stopping with audit records in the spool; the next start inserts them"
                        );
                        return;
                    }
                    let _ = self.wake.wait_timeout(queue, RETRY);
                }
            }
        }
    }

    /// Empties each file whose batches are all inserted: the one appends go to only once it
    /// has grown past [`CUT_BACK_AT`], unless `all` (closing: the files are then cut to
    /// nothing). A file is emptied by starting it over: its next frame is written at its start,
    /// into pages the system already holds, over frames that are all inserted (a reader stops at
    /// the first frame not numbered after the one before it, see [`decode`]). Cutting it to
    /// nothing each time had every frame's pages allocated anew: 2–3 % of Warden's CPU at 64
    /// clients (docs/benchmarks.md). A file a burst grew past
    /// [`SHRINK_PAST`] is cut back to nothing.
    fn cut_back(&self, inserted: u64, all: bool) {
        let mut file = lock(&self.file);
        let spool = &mut *file;
        for (i, ((f, path), ((len, size), top))) in spool
            .files
            .iter_mut()
            .zip(&spool.paths)
            .zip(
                spool
                    .len
                    .iter_mut()
                    .zip(spool.size.iter_mut())
                    .zip(&spool.top),
            )
            .enumerate()
        {
            if *size == 0 || *top > inserted || (!all && i == spool.active && *len < CUT_BACK_AT) {
                continue;
            }
            if *len == 0 && !all && *size <= SHRINK_PAST {
                continue;
            }
            let shrink = all || *size > SHRINK_PAST;
            let emptied = if shrink { f.set_len(0) } else { Ok(()) }.and_then(|()| f.rewind());
            match emptied {
                Ok(()) => {
                    *len = 0;
                    if shrink {
                        *size = 0;
                    }
                }
                Err(e) => {
                    tracing::warn!(spool = %path.display(), error = %e, "cannot empty the audit spool");
                }
            }
        }
    }
}

/// Marks the inserter as stopped when its thread ends, however it ends (a panic included), so
/// that readers waiting for inserts get an error instead of waiting forever, and appends fail.
struct Stopped<'a>(&'a Shared);

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        self.0.progress.send_modify(|p| {
            if p.failure.is_none() {
                p.failure = Some("the audit inserter has stopped".into());
            }
        });
    }
}

/// For another process than the owner: the number of the last batch in the spool's files now
/// (0 when there is none). Once `meta.audit_spool_inserted` reaches it, every record that was
/// acknowledged before this read is in the chain.
pub(super) async fn last_in_file(base: PathBuf) -> Result<u64, StoreError> {
    tokio::task::spawn_blocking(move || -> Result<u64, StoreError> {
        let mut last = 0;
        for path in files_of(&base) {
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(unreachable(&path, "read", e)),
            };
            last = decode(&bytes)
                .0
                .last()
                .map_or(last, |frame| last.max(frame.id));
        }
        Ok(last)
    })
    .await
    .map_err(|e| StoreError::Unreachable(format!("cannot read the audit spool: {e}")))?
}

/// Reads `bytes` as replay reads a spool file — its whole frames, what follows them, each
/// frame's records — and, as if its checksum had passed, `bytes` as one frame's payload: the
/// fuzz target `spool` (REL-1). The number of records read.
#[cfg(feature = "fuzz")]
pub(crate) fn read_as_replay(bytes: &[u8]) -> usize {
    let direct = views(bytes).map_or(0, |records| records.len());
    if foreign_magic(bytes).is_some() {
        return direct;
    }
    let (frames, whole) = decode(bytes);
    let next = frames.last().map_or(0, |f| f.id + 1);
    let _ = cut_short(bytes.get(whole..).unwrap_or_default(), next);
    direct
        + frames
            .iter()
            .filter_map(|f| views(f.payload).ok())
            .map(|records| records.len())
            .sum::<usize>()
}

/// The inserter's gathering delay: `WARDEN_AUDIT_INSERT_DELAY_MS`, else the default.
pub(crate) fn insert_delay() -> Result<Duration, StoreError> {
    match std::env::var("WARDEN_AUDIT_INSERT_DELAY_MS") {
        Err(_) => Ok(DEFAULT_INSERT_DELAY),
        Ok(ms) => ms.trim().parse().map(Duration::from_millis).map_err(|_| {
            StoreError::Invalid(format!(
                "WARDEN_AUDIT_INSERT_DELAY_MS is `{ms}`; expected a whole number of milliseconds"
            ))
        }),
    }
}

#[cfg(test)]
mod tests;
