//! The audit spool of the embedded store: how a serving Warden makes a call's audit records
//! durable with one `write`, and inserts them into SQLite in bulk off the call path.
//!
//! A governed call cannot be answered before its audit records would survive a crash
//! (AUD-1, REL-3). Committing them to SQLite — four chained, indexed rows in a WAL
//! transaction — was about half of Warden's CPU per call at one client (docs/benchmarks.md,
//! tenth round). With the spool, a call's records are appended to `warden.db-spool` (or
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

use serde::{Deserialize, Serialize};
use warden_core::audit::{NewRecord, RecordKind, RecordView};
use warden_core::time::Millis;

use crate::error::StoreError;
use crate::sqlite_appender::SqliteAppender;

/// The meta key holding the number of the last spooled batch that is in the audit table.
pub(crate) const INSERTED_KEY: &str = "audit_spool_inserted";
/// The value of [`INSERTED_KEY`] (none yet: 0). A value that is not a number is an error,
/// never 0: read as 0 it would have every spooled batch chained again.
pub(crate) fn parse_inserted(value: Option<&str>) -> Result<u64, String> {
    value.map_or(Ok(0), |v| {
        v.parse()
            .map_err(|_| format!("meta `{INSERTED_KEY}` is `{v}`, not a batch number"))
    })
}

/// How long the inserter gathers batches before inserting them, unless asked to go at once.
/// Overridden (in milliseconds) by `WARDEN_AUDIT_INSERT_DELAY_MS`. Measured at one client
/// (docs/benchmarks.md, eleventh round): 10 ms put a burst of inserting beside the calls a
/// hundred times a second and the added p99 went from +0.4–0.6 to +0.9 ms; 100 ms gave
/// +0.25–0.36 ms and the lowest CPU per call; 1 ms and 1 s were no better.
pub(crate) const DEFAULT_INSERT_DELAY: Duration = Duration::from_millis(100);
/// How long the inserter waits before trying again after an insert failed.
const RETRY: Duration = Duration::from_secs(1);
/// The size at which appends move to the other file, and below which the file they go to is
/// not emptied even when all its batches are inserted.
const CUT_BACK_AT: u64 = 1 << 20;
/// The size past which a file that is emptied is also cut back to nothing, rather than only
/// started over (see `Shared::cut_back`).
const SHRINK_PAST: u64 = 4 * CUT_BACK_AT;
/// How long another process waits for the owner to insert what it had spooled.
pub(crate) const BARRIER_TIMEOUT: Duration = Duration::from_secs(10);

/// A frame: magic, payload length, batch number, CRC-32C of number and payload; then the
/// payload, the batch's records in the binary form of [`Wire`] (postcard: lengths and bytes,
/// nothing escaped). A file that begins with another magic is refused (see [`claim`]).
const MAGIC: [u8; 4] = *b"WSP2";
const HEADER: usize = 20;
/// CRC-32C, sixteen bytes per table step (the one-byte default cost about as much per call
/// as writing the frame).
const CRC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);

/// A record as a frame carries it: the fields of [`NewRecord`], borrowed, with the kind in its
/// stored form (so that the bytes do not depend on the order of [`RecordKind`]'s variants).
/// Field order is the format: append new fields at the end, and only with a new magic.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Wire<'a> {
    at: i64,
    kind: &'a str,
    run_id: &'a str,
    #[serde(borrow)]
    call_id: Option<&'a str>,
    #[serde(borrow)]
    principal: Option<&'a str>,
    #[serde(borrow)]
    agent: Option<&'a str>,
    #[serde(borrow)]
    tool: Option<&'a str>,
    #[serde(borrow)]
    decision: Option<&'a str>,
    #[serde(borrow)]
    code: Option<&'a str>,
    payload: &'a str,
}

impl<'a> From<&'a NewRecord> for Wire<'a> {
    fn from(r: &'a NewRecord) -> Self {
        Wire {
            at: r.at.0,
            kind: r.kind.as_str(),
            run_id: &r.run_id,
            call_id: r.call_id.as_deref(),
            principal: r.principal.as_deref(),
            agent: r.agent.as_deref(),
            tool: r.tool.as_deref(),
            decision: r.decision.as_deref(),
            code: r.code.as_deref(),
            payload: &r.payload,
        }
    }
}

impl<'a> Wire<'a> {
    fn view(self) -> Result<RecordView<'a>, String> {
        Ok(RecordView {
            at: Millis(self.at),
            kind: RecordKind::parse(self.kind)
                .ok_or_else(|| format!("`{}` is not a kind of audit record", self.kind))?,
            run_id: self.run_id,
            call_id: self.call_id,
            principal: self.principal,
            agent: self.agent,
            tool: self.tool,
            decision: self.decision,
            code: self.code,
            payload: self.payload,
        })
    }
}

/// The records of a payload in the binary form, borrowed from it.
fn views(payload: &[u8]) -> Result<Vec<RecordView<'_>>, String> {
    postcard::from_bytes::<Vec<Wire<'_>>>(payload)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(Wire::view)
        .collect()
}

/// A batch's records, written as a sequence of [`Wire`] without copying them.
struct WireBatch<'a>(&'a [NewRecord]);

impl Serialize for WireBatch<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Wire::from))
    }
}

/// A whole frame read back from a spool file.
#[derive(Debug, PartialEq, Eq)]
struct Frame<'a> {
    id: u64,
    payload: &'a [u8],
}

#[cfg(test)]
impl Frame<'_> {
    /// The frame's records.
    fn records(&self) -> Result<Vec<NewRecord>, String> {
        Ok(views(self.payload)?
            .into_iter()
            .map(NewRecord::from)
            .collect())
    }
}

/// The spool of a database file: beside it, as SQLite's `-wal` and `-shm` are, two files that
/// take turns (`-spool` and `-spool2`; see [`SpoolFile`]). The first also carries the lock.
pub(crate) fn path_for(db: &Path) -> PathBuf {
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

/// Appends one frame to `out`: batch `id`, with `records` as its payload.
fn encode(id: u64, records: &[NewRecord], out: &mut Vec<u8>) -> Result<(), StoreError> {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER]);
    *out = postcard::to_extend(&WireBatch(records), std::mem::take(out))
        .map_err(|e| StoreError::Invalid(format!("an audit record cannot be encoded: {e}")))?;
    seal(out, start, MAGIC, id)
}

/// Fills in the header of the frame that starts at `start` of `out` (header space, then the
/// payload up to the end): `magic`, the payload's length, batch `id` and the checksum.
fn seal(out: &mut [u8], start: usize, magic: [u8; 4], id: u64) -> Result<(), StoreError> {
    let payload = out.get(start + HEADER..).unwrap_or_default();
    let len = u32::try_from(payload.len())
        .map_err(|_| StoreError::Invalid("an audit batch of more than 4 GiB".into()))?;
    let mut digest = CRC.digest();
    digest.update(&id.to_le_bytes());
    digest.update(payload);
    let crc = digest.finalize();
    let (len, id, crc) = (len.to_le_bytes(), id.to_le_bytes(), crc.to_le_bytes());
    let header = magic.iter().chain(&len).chain(&id).chain(&crc);
    for (slot, byte) in out.iter_mut().skip(start).zip(header) {
        *slot = *byte;
    }
    Ok(())
}

/// The whole frames at the start of `bytes`, in order, and how many bytes they take. Reading
/// stops at the first frame that is cut short, fails its checksum or does not number after
/// the one before it.
fn decode(bytes: &[u8]) -> (Vec<Frame<'_>>, usize) {
    let mut frames: Vec<Frame<'_>> = Vec::new();
    let mut at = 0;
    loop {
        let frame = bytes.get(at..).unwrap_or_default();
        let Some((magic, rest)) = frame.split_first_chunk::<4>() else {
            break;
        };
        let Some((len, rest)) = rest.split_first_chunk::<4>() else {
            break;
        };
        let Some((id, rest)) = rest.split_first_chunk::<8>() else {
            break;
        };
        let Some((crc, rest)) = rest.split_first_chunk::<4>() else {
            break;
        };
        let len = u32::from_le_bytes(*len) as usize;
        let Some(payload) = rest.get(..len) else {
            break;
        };
        let id = u64::from_le_bytes(*id);
        let mut digest = CRC.digest();
        digest.update(&id.to_le_bytes());
        digest.update(payload);
        let in_order = frames.last().is_none_or(|last| id > last.id);
        if *magic != MAGIC || u32::from_le_bytes(*crc) != digest.finalize() || !in_order {
            break;
        }
        frames.push(Frame { id, payload });
        at += HEADER + len;
    }
    (frames, at)
}

/// Whether `rest`, the bytes after a file's whole frames, begin with a frame cut short: one
/// being written when its writer stopped (numbered `next`, or too short to tell). Anything
/// else there is what was left of frames written before the file started over (see
/// `Shared::cut_back`), all inserted before it did.
fn cut_short(rest: &[u8], next: u64) -> bool {
    if rest.is_empty() {
        return false;
    }
    let Some((magic, header)) = rest.split_first_chunk::<4>() else {
        return true;
    };
    let id = header
        .get(4..12)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes);
    *magic == MAGIC && id.is_none_or(|id| next == 0 || id == next)
}

/// The magic a file begins with when it is not [`MAGIC`]. A file's first bytes are always a
/// frame's start (a file starts over from its start), so another magic there is a spool of
/// another format, never what is left of inserted frames.
fn foreign_magic(bytes: &[u8]) -> Option<[u8; 4]> {
    bytes
        .first_chunk::<4>()
        .copied()
        .filter(|magic| *magic != MAGIC)
}

fn unreachable(path: &Path, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unreachable(format!(
        "cannot {what} the audit spool `{}`: {e}",
        path.display()
    ))
}

/// The spool's files, locked by this process, with every batch in them inserted.
#[derive(Debug)]
pub(crate) struct Claimed {
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
pub(crate) fn claim(base: &Path, appender: &SqliteAppender) -> Result<Option<Claimed>, StoreError> {
    let paths = files_of(base);
    let [first, second] = &paths;
    let first = open_spool_file(first)?;
    match first.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Error(e)) => return Err(unreachable(base, "lock", e)),
    }
    let mut files = [first, open_spool_file(second)?];
    let inserted = appender.spool_inserted().map_err(|e| {
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
                Batch {
                    id,
                    payload: frame.payload.to_vec(),
                }
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

/// A spooled batch waiting for the inserter: its records in the binary form, as spooled. The
/// inserter reads them in place; the call's own records were freed on the call's thread (freed
/// on the inserter's, each of their strings would come back to the call's thread's allocator
/// cold from the other core).
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) id: u64,
    payload: Vec<u8>,
}

impl Batch {
    /// Batch `id` of `records`.
    #[cfg(test)]
    fn of(id: u64, records: &[NewRecord]) -> Result<Self, String> {
        let payload = postcard::to_allocvec(&WireBatch(records)).map_err(|e| e.to_string())?;
        Ok(Batch { id, payload })
    }

    /// The batch's records, borrowed from it.
    pub(crate) fn records(&self) -> Result<Vec<RecordView<'_>>, String> {
        views(&self.payload)
    }
}

/// The owner's spool: appends, and the inserter thread behind them.
#[derive(Debug)]
pub(crate) struct Spool {
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
    pub(crate) fn start(
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
    pub(crate) fn append(&self, records: Vec<NewRecord>) -> Result<(), StoreError> {
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
        let batch = Batch {
            id,
            payload: spool.buf.get(HEADER..).unwrap_or_default().to_vec(),
        };
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
    pub(crate) fn lens(&self) -> [u64; 2] {
        lock(&self.shared.file).len
    }

    /// Waits until every batch spooled so far is in the audit table.
    pub(crate) async fn sync(&self) -> Result<(), StoreError> {
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
    pub(crate) fn close(&self) {
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
    /// clients (docs/benchmarks.md, thirteenth round). A file a burst grew past
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
pub(crate) async fn last_in_file(base: PathBuf) -> Result<u64, StoreError> {
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
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::sqlite_appender::tests::{embedded, records};
    use crate::{AuditFilter, Location, Store};

    async fn serving(dir: &Path, delay: Duration) -> Store {
        Store::open_as(&Location::DataDir(dir.into()), Some(delay))
            .await
            .unwrap()
    }

    /// Rows in the audit table, counted on a connection of its own (as another process sees
    /// them, without waiting for anything).
    fn rows(dir: &Path) -> i64 {
        rusqlite::Connection::open(Store::sqlite_path(dir))
            .unwrap()
            .query_row("SELECT count(*) FROM audit", [], |row| row.get(0))
            .unwrap()
    }

    fn all() -> AuditFilter {
        AuditFilter {
            limit: Some(1_000),
            ..AuditFilter::default()
        }
    }

    /// The run of every record in the trail, in order.
    async fn runs(store: &Store) -> Vec<String> {
        let records = store.audit(&all()).await.unwrap();
        records.into_iter().map(|r| r.record.run_id).collect()
    }

    /// AUD-1, REL-3: a serving store acknowledges an append once it is in the spool; a trail
    /// read in the same process waits for the inserts and sees every acknowledged record, in
    /// a chain that verifies.
    #[tokio::test]
    async fn a_serving_store_acknowledges_from_the_spool_and_reads_see_every_record() {
        let (dir, _) = embedded().await;
        let store = serving(dir.path(), Duration::from_secs(3600)).await;
        for run in ["r1", "r2", "r3"] {
            store.append_audit(records(run)).await.unwrap();
        }
        assert_eq!(rows(dir.path()), 0, "spooled, not yet inserted");
        assert_eq!(store.audit(&all()).await.unwrap().len(), 6);
        assert_eq!(rows(dir.path()), 6);
        assert_eq!(store.verify_audit().await.unwrap().unwrap(), 6);
    }

    /// STORE-1b, AUD-1: the CLI beside a live server (another store on the same file, which
    /// cannot own the spool) reads every record the server acknowledged before the read, and
    /// its own appends go straight into the same chain.
    #[tokio::test]
    async fn another_store_reads_what_the_owner_acknowledged() {
        let (dir, _) = embedded().await;
        let server = serving(dir.path(), Duration::from_millis(300)).await;
        let cli = Store::open(&Location::DataDir(dir.path().into()))
            .await
            .unwrap();
        assert!(matches!(cli.appends, crate::Appends::Leader(..)));
        server.append_audit(records("served")).await.unwrap();
        assert_eq!(rows(dir.path()), 0);
        assert_eq!(cli.audit(&all()).await.unwrap().len(), 2);
        cli.append_audit(records("cli")).await.unwrap();
        server.append_audit(records("served again")).await.unwrap();
        assert_eq!(cli.verify_audit().await.unwrap().unwrap(), 6);
    }

    /// REL-3: what a server that died (`kill -9`) left in its spool is inserted by the next
    /// store to open — once, in the order of the batches across both files: batches already
    /// inserted are skipped, and a batch cut short by the crash (never acknowledged) is
    /// dropped. The files are emptied.
    #[tokio::test]
    async fn a_dead_servers_spool_is_replayed_once_and_a_torn_tail_dropped() {
        let (dir, store) = embedded().await;
        // Batch 1 made it into the chain before the crash; 2 to 4 did not; 5 was torn.
        store.append_audit(records("b1")).await.unwrap();
        store
            .execute_raw("INSERT INTO meta (key, value) VALUES ('audit_spool_inserted', '1')")
            .await
            .unwrap();
        drop(store);
        let mut spooled = [Vec::new(), Vec::new()];
        for (id, run, file) in [
            (1, "b1", 0),
            (2, "b2", 1),
            (3, "b3", 0),
            (4, "b4", 1),
            (5, "b5", 0),
        ] {
            encode(id, &records(run), &mut spooled[file]).unwrap();
        }
        let [mut first, second] = spooled;
        first.truncate(first.len() - 5);
        let files = leave_spool(dir.path(), &first, &second);
        for _ in 0..2 {
            let store = Store::open(&Location::DataDir(dir.path().into()))
                .await
                .unwrap();
            assert_eq!(
                runs(&store).await,
                ["b1", "b1", "b2", "b2", "b3", "b3", "b4", "b4"]
            );
            assert_eq!(store.verify_audit().await.unwrap().unwrap(), 8);
            for file in &files {
                assert_eq!(std::fs::metadata(file).unwrap().len(), 0);
            }
        }
        // Numbering goes on after the replayed batches.
        let store = serving(dir.path(), Duration::ZERO).await;
        store.append_audit(records("b6")).await.unwrap();
        assert_eq!(store.verify_audit().await.unwrap().unwrap(), 10);
        assert_eq!(
            store
                .backend
                .meta_get(INSERTED_KEY)
                .await
                .unwrap()
                .as_deref(),
            Some("5")
        );
    }

    /// A store that is not the spool's owner (the CLI, a second server), reading after the
    /// owner died, inserts what the owner left instead of waiting for it; and inserting the
    /// same batches again (a retry after a `COMMIT` that failed late) chains nothing twice.
    #[tokio::test]
    async fn a_reader_replays_what_a_dead_owner_left_and_nothing_twice() {
        let (_dir, store) = embedded().await;
        let crate::Appends::Leader(appender, spool) = &store.appends else {
            panic!("a store opened by the CLI appends directly");
        };
        let mut left = Vec::new();
        for (id, run) in [(1, "d1"), (2, "d2")] {
            encode(id, &records(run), &mut left).unwrap();
        }
        std::fs::write(spool, &left).unwrap();
        assert_eq!(runs(&store).await, ["d1", "d1", "d2", "d2"]);
        let again = vec![Batch::of(2, &records("d2")).unwrap()];
        appender.insert_spooled(&again).unwrap();
        assert_eq!(store.verify_audit().await.unwrap().unwrap(), 4);
    }

    /// Writes the spool's two files as a stopped server would have left them; their paths.
    fn leave_spool(dir: &Path, first: &[u8], second: &[u8]) -> [PathBuf; 2] {
        let files = files_of(&path_for(&Store::sqlite_path(dir)));
        std::fs::write(&files[0], first).unwrap();
        std::fs::write(&files[1], second).unwrap();
        files
    }

    /// The spool's files take turns: past [`CUT_BACK_AT`] appends go to the other file, and
    /// each file is emptied once its batches are inserted — also when new batches keep
    /// coming, so that under continuous load the spool does not grow without bound.
    #[tokio::test]
    async fn the_files_take_turns_and_are_emptied_once_inserted() {
        let (dir, _) = embedded().await;
        let files = files_of(&path_for(&Store::sqlite_path(dir.path())));
        let on_disk = |i: usize| std::fs::metadata(&files[i]).unwrap().len();
        let store = serving(dir.path(), Duration::from_secs(3600)).await;
        let size = |i: usize| store.spool_lens()[i];
        let mut appended: i64 = 0;
        while size(1) == 0 {
            store.append_audit(records("turns")).await.unwrap();
            appended += 2;
        }
        assert!(size(0) >= CUT_BACK_AT);
        // Inserting empties the first file, not the second, which is not yet full. The
        // first starts over: it keeps its pages.
        assert_eq!(store.verify_audit().await.unwrap().unwrap(), appended);
        assert_eq!((size(0) == 0, size(1) > 0), (true, true));
        assert!(on_disk(0) >= CUT_BACK_AT);
        // The second fills up while the first is empty: appends go back to the first, over
        // its inserted frames.
        while size(0) == 0 {
            store.append_audit(records("turns")).await.unwrap();
            appended += 2;
        }
        assert!(size(1) >= CUT_BACK_AT);
        store.append_audit(records("turns")).await.unwrap();
        appended += 2;
        assert_eq!(store.verify_audit().await.unwrap().unwrap(), appended);
        assert_eq!((size(0) > 0, size(1)), (true, 0));
        assert!(on_disk(0) >= CUT_BACK_AT && on_disk(1) >= CUT_BACK_AT);
        // Another process reading the files (the CLI) sees the first file's new frames, not
        // the inserted ones behind them.
        let last = last_in_file(path_for(&Store::sqlite_path(dir.path())))
            .await
            .unwrap();
        assert_eq!(last, u64::try_from(appended / 2).unwrap());
        // Closing cuts both to nothing.
        store.close().await;
        assert_eq!((on_disk(0), on_disk(1)), (0, 0));
    }

    /// A file that started over holds its new frames and, behind them, what is left of frames
    /// inserted before (from a frame's start, or from anywhere inside one): replay inserts the
    /// new ones only, once, and takes the rest for what it is, not for a batch cut short.
    #[tokio::test]
    async fn a_file_that_started_over_replays_its_new_frames_only() {
        let (dir, store) = embedded().await;
        store
            .execute_raw("INSERT INTO meta (key, value) VALUES ('audit_spool_inserted', '4')")
            .await
            .unwrap();
        drop(store);
        let mut old = Vec::new();
        for (id, run) in [(1, "o1"), (2, "o2"), (3, "o3"), (4, "o4")] {
            encode(id, &records(run), &mut old).unwrap();
        }
        let mut new = Vec::new();
        encode(5, &records("n5"), &mut new).unwrap();
        encode(6, &records("n6"), &mut new).unwrap();
        let mut newer = Vec::new();
        encode(7, &records("n7"), &mut newer).unwrap();
        // Where the old frames end: new frames end at the start of one, or inside one.
        let ends: Vec<usize> = decode(&old)
            .0
            .iter()
            .scan(0, |at, f| {
                *at += HEADER + f.payload.len();
                Some(*at)
            })
            .collect();
        let mut first = new.clone();
        first.extend_from_slice(&old[ends[1]..]);
        let mut second = newer.clone();
        second.extend_from_slice(&old[ends[0] + 7..]);
        for (file, ids, next) in [(&first, [5, 6].as_slice(), 7), (&second, &[7], 8)] {
            let (frames, whole) = decode(file);
            assert_eq!(frames.iter().map(|f| f.id).collect::<Vec<_>>(), ids);
            assert!(whole < file.len());
            assert!(!cut_short(&file[whole..], next));
        }
        leave_spool(dir.path(), &first, &second);
        for _ in 0..2 {
            let store = Store::open(&Location::DataDir(dir.path().into()))
                .await
                .unwrap();
            assert_eq!(runs(&store).await, ["n5", "n5", "n6", "n6", "n7", "n7"]);
            assert_eq!(store.verify_audit().await.unwrap().unwrap(), 6);
        }
    }

    /// What follows a file's whole frames is a frame cut short only when it is numbered next
    /// (or too short to tell).
    #[test]
    fn only_the_next_frame_is_taken_for_one_cut_short() {
        let mut frames = Vec::new();
        encode(7, &records("r"), &mut frames).unwrap();
        let torn = &frames[..frames.len() - 3];
        assert!(cut_short(torn, 7));
        assert!(cut_short(&torn[..10], 7));
        assert!(!cut_short(torn, 9), "an older frame left over");
        assert!(!cut_short(&torn[5..], 7), "the inside of an older frame");
        assert!(!cut_short(&[], 7));
    }

    /// Fail closed: while the inserts fail, reads say why and new appends are refused; the
    /// spooled records are kept and inserted once inserting works again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failing_inserts_refuse_new_appends_until_they_succeed() {
        let (dir, _) = embedded().await;
        let store = serving(dir.path(), Duration::ZERO).await;
        store.append_audit(records("before")).await.unwrap();
        assert_eq!(store.audit(&all()).await.unwrap().len(), 2);
        let outside = rusqlite::Connection::open(Store::sqlite_path(dir.path())).unwrap();
        outside
            .execute_batch(
                "CREATE TRIGGER refuse BEFORE INSERT ON audit \
                 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
            )
            .unwrap();
        store.append_audit(records("spooled")).await.unwrap();
        let error = store.audit(&all()).await.unwrap_err().to_string();
        assert!(error.contains("refused by the test"), "{error}");
        let error = store.append_audit(records("refused")).await.unwrap_err();
        assert!(error.to_string().contains("cannot be stored"), "{error}");
        outside.execute_batch("DROP TRIGGER refuse").unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while store.append_audit(records("after")).await.is_err() {
            assert!(Instant::now() < until, "appends never resumed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            runs(&store).await,
            ["before", "before", "spooled", "spooled", "after", "after"]
        );
        assert_eq!(store.verify_audit().await.unwrap().unwrap(), 6);
    }

    /// A server that starts while a CLI command holds the spool's lock (it does while it opens
    /// the store) waits for it and owns the spool; one that finds it held for longer (another
    /// server) appends directly.
    #[tokio::test]
    async fn a_server_waits_briefly_for_the_spool_lock() {
        let (dir, _) = embedded().await;
        let lock = File::open(path_for(&Store::sqlite_path(dir.path()))).unwrap();
        lock.lock().unwrap();
        let held = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(lock);
        });
        let store = serving(dir.path(), Duration::ZERO).await;
        held.join().unwrap();
        assert!(matches!(store.appends, crate::Appends::Spooled(_)));
        let second = serving(dir.path(), Duration::ZERO).await;
        assert!(matches!(second.appends, crate::Appends::Leader(..)));
        second.append_audit(records("second")).await.unwrap();
        store.append_audit(records("first")).await.unwrap();
        assert_eq!(store.verify_audit().await.unwrap().unwrap(), 4);
    }

    /// Closing (a server shutting down) inserts what is spooled and empties the spool's files,
    /// so that nothing is left for the next start to read; dropped, the store lets go of the
    /// spool and the next server owns it.
    #[tokio::test]
    async fn closing_inserts_what_is_spooled_and_empties_the_spool() {
        let (dir, _) = embedded().await;
        let store = serving(dir.path(), Duration::from_secs(3600)).await;
        store.append_audit(records("last")).await.unwrap();
        store.close().await;
        assert_eq!(rows(dir.path()), 2);
        for file in files_of(&path_for(&Store::sqlite_path(dir.path()))) {
            assert_eq!(std::fs::metadata(file).unwrap().len(), 0);
        }
        let error = store.append_audit(records("late")).await.unwrap_err();
        assert!(error.to_string().contains("closed"), "{error}");
        drop(store);
        let next = serving(dir.path(), Duration::ZERO).await;
        assert!(matches!(next.appends, crate::Appends::Spooled(_)));
    }

    #[test]
    fn frames_read_back_and_a_torn_or_altered_tail_ends_the_spool() {
        let mut bytes = Vec::new();
        encode(1, &records("a"), &mut bytes).unwrap();
        encode(2, &[], &mut bytes).unwrap();
        let whole = bytes.len();
        let (frames, len) = decode(&bytes);
        assert_eq!(len, whole);
        let ids: Vec<u64> = frames.iter().map(|f| f.id).collect();
        assert_eq!(ids, [1, 2]);
        assert_eq!(frames[0].records().unwrap(), records("a"));
        assert_eq!(frames[1].records().unwrap(), []);
        // Torn: a third frame cut short.
        let mut torn = bytes.clone();
        encode(3, &records("c"), &mut torn).unwrap();
        torn.truncate(torn.len() - 2);
        assert_eq!(decode(&torn).1, whole);
        // Altered: a payload byte changed.
        let mut altered = bytes.clone();
        encode(3, &records("c"), &mut altered).unwrap();
        *altered.last_mut().unwrap() ^= 1;
        assert_eq!(decode(&altered).0.len(), 2);
        // Out of order: a batch numbered before the one ahead of it.
        let mut reordered = bytes.clone();
        encode(2, &[], &mut reordered).unwrap();
        assert_eq!(decode(&reordered).1, whole);
        // An unknown magic ends the file too.
        let mut unknown = bytes.clone();
        encode(3, &records("c"), &mut unknown).unwrap();
        unknown[whole] = b'X';
        assert_eq!(decode(&unknown).1, whole);
    }

    /// The binary form carries every field as it is — absent ones, Unicode, quotes and
    /// control characters in a payload — and its bytes are fixed: a spool written by this
    /// version must read back in the next one (the kind is written by name, so reordering
    /// [`RecordKind`]'s variants changes nothing). Changing this form needs a new magic.
    #[test]
    fn the_binary_form_keeps_every_field_and_its_bytes_are_fixed() {
        let record = NewRecord {
            at: Millis(-7),
            kind: RecordKind::Outcome,
            run_id: "r".into(),
            call_id: None,
            principal: Some("user:é".into()),
            agent: None,
            tool: Some("p__t".into()),
            decision: Some("executed".into()),
            code: None,
            payload: "{\"a\":\"\\\"\u{1}\"}".into(),
        };
        let mut many = records("x");
        many.push(record.clone());
        let mut frame = Vec::new();
        encode(9, &many, &mut frame).unwrap();
        let (frames, _) = decode(&frame);
        assert_eq!(&frame[..4], &MAGIC);
        assert_eq!(frames[0].records().unwrap(), many);

        let mut one = Vec::new();
        encode(1, std::slice::from_ref(&record), &mut one).unwrap();
        assert_eq!(&one[..4], b"WSP2");
        assert_eq!(
            hex::encode(&one[HEADER..]),
            // One record: `at` (zigzag), the kind by name, `r`, no call id, the principal,
            // no agent, the tool, the decision, no code, the payload. Strings are a length
            // then their bytes, a present option is 01 before it, an absent one 00.
            "01 0d 076f7574636f6d65 0172 00 01 07757365723ac3a9 00 01 04705f5f74 \
             01 086578656375746564 00 0b7b2261223a225c2201227d"
                .replace(' ', "")
        );
        // A kind this version does not know is an error, not a guess.
        let later = [Wire {
            kind: "later",
            ..Wire::from(&record)
        }];
        let mut unknown = postcard::to_allocvec(&later[..]).unwrap();
        let frame = Frame {
            id: 1,
            payload: &unknown,
        };
        assert!(frame.records().unwrap_err().contains("`later`"));
        unknown.truncate(3);
        let cut = Frame {
            id: 1,
            payload: &unknown,
        };
        assert!(cut.records().is_err());
    }

    /// A spool file in a frame format this version does not read — the records as JSON behind
    /// the magic `WSP1`, a format no released version wrote — is refused with an error that
    /// names it, never replayed as something else nor emptied; the store opens once it is gone.
    #[tokio::test]
    async fn a_spool_file_with_another_magic_is_refused_and_kept() {
        let (dir, store) = embedded().await;
        drop(store);
        let mut first = Vec::new();
        first.extend_from_slice(&[0; HEADER]);
        serde_json::to_writer(&mut first, &records("old")).unwrap();
        seal(&mut first, 0, *b"WSP1", 1).unwrap();
        encode(2, &records("new"), &mut first).unwrap();
        let files = leave_spool(dir.path(), &first, &[]);
        let location = Location::DataDir(dir.path().into());
        for open in [
            Store::open(&location).await,
            Store::open_serving(&location).await,
        ] {
            assert_eq!(
                open.unwrap_err().to_string(),
                format!(
                    "the store holds unreadable data: the audit spool `{}` begins with `WSP1`, \
                     not `WSP2`, the one frame format this warden reads; its records are not \
                     replayed, and the store does not open while the file is there",
                    files[0].display()
                )
            );
            assert_eq!(std::fs::read(&files[0]).unwrap(), first, "the file is kept");
        }
        std::fs::remove_file(&files[0]).unwrap();
        let store = Store::open(&location).await.unwrap();
        assert_eq!(store.verify_audit().await.unwrap().unwrap(), 0);
    }
}
