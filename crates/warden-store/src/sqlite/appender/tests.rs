#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use super::*;
use crate::backend::Sink;
use crate::sqlite::sink::{Durable, SqliteSink};
use crate::{Location, Store};
use warden_core::audit::{NewRecord, RecordKind};
use warden_core::time::Millis;

pub(crate) fn records(run: &str) -> Vec<NewRecord> {
    [RecordKind::Call, RecordKind::Decision]
        .into_iter()
        .map(|kind| NewRecord {
            at: Millis(1_700_000_000_000),
            kind,
            run_id: run.into(),
            call_id: Some("c1".into()),
            principal: Some("user:t".into()),
            agent: None,
            tool: Some("p__t".into()),
            decision: None,
            code: None,
            payload: "{}".into(),
        })
        .collect()
}

pub(crate) async fn embedded() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&Location::DataDir(dir.path().into()))
        .await
        .unwrap();
    (dir, store)
}

/// The sink of an embedded store that commits its appends (one that is not serving).
fn committing(store: &mut Store) -> &mut SqliteSink {
    match &mut store.sink {
        Sink::Sqlite(
            sink @ SqliteSink {
                durable: Durable::Committed { .. },
                ..
            },
        ) => sink,
        _ => panic!("an embedded store that is not serving commits its appends"),
    }
}

fn appender(store: &Store) -> &SqliteAppender {
    match &store.sink {
        Sink::Sqlite(SqliteSink {
            appender,
            durable: Durable::Committed { .. },
            ..
        }) => appender,
        _ => panic!("an embedded store that is not serving has the SQLite appender"),
    }
}

/// `mxFrame` (frames in the WAL) and `nBackfill` (frames copied into the database) of the
/// wal-index, read without taking part: bytes 16..20 and 96..100 of the `-shm` file, in
/// native byte order (SQLite's WAL format document).
fn wal_index(path: &Path) -> (u32, u32) {
    let shm = std::fs::read(format!("{}-shm", path.display())).unwrap();
    let word = |at: usize| u32::from_ne_bytes(shm[at..at + 4].try_into().unwrap());
    (word(16), word(96))
}

/// AUD, REL-3: a commit that is under way while a checkpoint copies the WAL no longer
/// keeps the log from starting over (under steady load it grew without bound): the
/// checkpoint finishes with the appender paused, and the next commit writes the WAL from
/// its start.
#[tokio::test]
async fn the_wal_starts_over_after_a_checkpoint_that_raced_a_commit() {
    let (dir, mut store) = embedded().await;
    let path = crate::Store::sqlite_path(dir.path());
    // No periodic checkpoint: this test runs the only one, at the moment it chooses.
    committing(&mut store).appender =
        SqliteAppender::start_with(&path, Duration::from_secs(24 * 3600)).unwrap();
    for i in 0..20 {
        store.append_audit(records(&format!("r{i}"))).await.unwrap();
    }
    let inner = appender(&store).inner.clone();
    let checkpointing = {
        // A commit under way on the appender's connection: begun, not yet written. Any
        // write will do; a counter row keeps the audit chain out of it.
        let conn = inner.conn.lock().unwrap();
        conn.execute_batch(
            "BEGIN IMMEDIATE; \
             INSERT INTO counters (key, window_start, count) VALUES ('raced', 0, 1)",
        )
        .unwrap();
        let (frames, _) = wal_index(&path);
        assert!(
            frames > 40,
            "{frames} frames: 20 commits of several pages each"
        );
        let checkpointing = {
            let inner = inner.clone();
            let path = path.clone();
            std::thread::spawn(move || checkpoint(&inner, &open(&path).unwrap()))
        };
        // The first pass copies everything there is, then the commit lands.
        while wal_index(&path).1 < frames {
            std::thread::sleep(Duration::from_millis(1));
        }
        conn.execute_batch("COMMIT").unwrap();
        checkpointing
    };
    checkpointing.join().unwrap();
    store.append_audit(records("after")).await.unwrap();
    let (frames, _) = wal_index(&path);
    assert!(
        frames < 10,
        "{frames} frames: the WAL started over with one commit"
    );
    assert_eq!(store.verify_audit().await.unwrap().unwrap(), 42);
}

/// AUD: a batch that fails half-way writes nothing — the chain head and the records stay
/// as they were — and the next commit on the same connection (its cached `BEGIN` and
/// `COMMIT`) chains after the last durable record.
#[tokio::test]
async fn a_failed_commit_writes_nothing_and_the_next_one_chains_on() {
    let (dir, store) = embedded().await;
    let path = crate::Store::sqlite_path(dir.path());
    store.append_audit(records("before")).await.unwrap();
    let outside = open(&path).unwrap();
    outside
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON audit WHEN NEW.run_id = 'refused' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        )
        .unwrap();
    let mut batch = records("accepted");
    batch.extend(records("refused"));
    let error = store.append_audit(batch).await.unwrap_err();
    assert!(error.to_string().contains("refused by the test"), "{error}");
    let head = |conn: &Connection| -> (i64, i64) {
        conn.query_row(
            "SELECT (SELECT seq FROM audit_head), (SELECT count(*) FROM audit)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap()
    };
    assert_eq!(head(&outside), (2, 2), "nothing of the failed batch");
    let inner = appender(&store).inner.clone();
    assert!(
        inner.conn.lock().unwrap().is_autocommit(),
        "the failed transaction is rolled back, not left open"
    );
    outside.execute_batch("DROP TRIGGER refuse").unwrap();
    store.append_audit(records("after")).await.unwrap();
    assert_eq!(head(&outside), (4, 4));
    assert_eq!(store.verify_audit().await.unwrap().unwrap(), 4);
}

/// A transaction left open on the appender's connection (as a panic half-way through a
/// commit would leave it) is ended by the next commit instead of failing every later one.
#[tokio::test]
async fn a_transaction_left_open_does_not_block_later_commits() {
    let (_dir, store) = embedded().await;
    store.append_audit(records("before")).await.unwrap();
    let inner = appender(&store).inner.clone();
    inner
        .conn
        .lock()
        .unwrap()
        .execute_batch(
            "BEGIN IMMEDIATE; INSERT INTO counters (key, window_start, count) \
             VALUES ('abandoned', 0, 1)",
        )
        .unwrap();
    store.append_audit(records("after")).await.unwrap();
    assert!(inner.conn.lock().unwrap().is_autocommit());
    assert_eq!(store.verify_audit().await.unwrap().unwrap(), 4);
}

/// A leader cancelled before it ran (its call dropped while it yielded) hands the commit
/// over: its own append, and any queued behind it, still complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_lead_hands_the_commit_over() {
    let (_dir, store) = embedded().await;
    let appender = appender(&store);
    let (done, durable) = tokio::sync::oneshot::channel();
    let lead = appender
        .submit(PendingAppend {
            records: records("dropped"),
            done,
        })
        .unwrap()
        .expect("nobody else is writing");
    let (done, queued) = tokio::sync::oneshot::channel();
    let follower = appender
        .submit(PendingAppend {
            records: records("queued"),
            done,
        })
        .unwrap();
    assert!(follower.is_none(), "one leader at a time");
    drop(lead);
    durable.await.unwrap().unwrap();
    queued.await.unwrap().unwrap();
    assert_eq!(store.verify_audit().await.unwrap().unwrap(), 4);
}

/// AUD-1: an admin change and its audit record are one transaction on the audit connection:
/// when the record cannot be chained, the change is not made either, and the next attempt
/// makes both.
#[tokio::test]
async fn an_admin_change_and_its_record_are_written_together_or_not_at_all() {
    let (dir, store) = embedded().await;
    let outside = open(&Store::sqlite_path(dir.path())).unwrap();
    outside
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON audit WHEN NEW.run_id = 'admin' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        )
        .unwrap();
    let now = Millis(1_700_000_000_000);
    let before = store.revision().await.unwrap();
    let error = store.bootstrap(now).await.unwrap_err();
    assert_eq!(error.to_string(), "database error: refused by the test");
    assert_eq!(store.revision().await.unwrap(), before);
    assert!(
        store
            .load_config()
            .await
            .unwrap()
            .0
            .resources()
            .next()
            .is_none()
    );
    assert!(store.credentials().await.unwrap().is_empty());
    assert_eq!(store.verify_audit().await.unwrap().unwrap(), 0);
    outside.execute_batch("DROP TRIGGER refuse").unwrap();
    assert!(store.bootstrap(now).await.unwrap().is_some());
    assert_eq!(store.revision().await.unwrap(), before + 2);
    assert_eq!(store.credentials().await.unwrap().len(), 1);
    assert_eq!(store.verify_audit().await.unwrap().unwrap(), 2);
}
