#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use super::frame::Batch;
use super::frame::{HEADER, cut_short, decode, encode, seal};
use super::*;
use crate::backend::Sink;
use crate::sqlite::appender::tests::{embedded, records};
use crate::sqlite::chain::INSERTED_KEY;
use crate::sqlite::sink::{Durable, SqliteSink};
use crate::{AuditFilter, Location, Store};

/// How the store makes its appends durable.
fn durable(store: &Store) -> &Durable {
    match &store.sink {
        Sink::Sqlite(SqliteSink { durable, .. }) => durable,
        Sink::Postgres(_) => panic!("an embedded store has the SQLite sink"),
    }
}

/// Where the audit spool's two files end (their frames not yet inserted, or inserted but not
/// yet started over): a file that started over keeps its size.
fn spool_lens(store: &Store) -> [u64; 2] {
    match durable(store) {
        Durable::Spooled(spool) => spool.lens(),
        Durable::Committed { .. } => [0; 2],
    }
}

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
    assert!(matches!(durable(&cli), Durable::Committed { .. }));
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
    let Sink::Sqlite(SqliteSink {
        appender,
        durable: Durable::Committed { spool },
        ..
    }) = &store.sink
    else {
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
    let size = |i: usize| spool_lens(&store)[i];
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
    assert!(matches!(durable(&store), Durable::Spooled(_)));
    let second = serving(dir.path(), Duration::ZERO).await;
    assert!(matches!(durable(&second), Durable::Committed { .. }));
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
    assert!(matches!(durable(&next), Durable::Spooled(_)));
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

/// AUD-1: an admin change in the process that owns the spool is chained after the records it
/// acknowledged before the change, though those were still only spooled: the chain keeps the
/// order in which things were acknowledged.
#[tokio::test]
async fn an_admin_change_is_chained_after_what_was_spooled_before_it() {
    let (dir, _) = embedded().await;
    let store = serving(dir.path(), Duration::from_secs(3600)).await;
    store.append_audit(records("spooled")).await.unwrap();
    assert_eq!(rows(dir.path()), 0, "spooled, not yet inserted");
    let token = store
        .bootstrap(warden_core::time::Millis(1_700_000_000_000))
        .await
        .unwrap();
    assert!(token.is_some());
    store.append_audit(records("after")).await.unwrap();
    assert_eq!(
        runs(&store).await,
        ["spooled", "spooled", "admin", "admin", "after", "after"]
    );
    assert_eq!(store.verify_audit().await.unwrap().unwrap(), 6);
}
