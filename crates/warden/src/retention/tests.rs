//! Scheduled retention (AUD-6) on a store whose clock the test moves: what is archived at each
//! scheduled time, into which file, and what the store keeps.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::path::Path;

use clap::Parser as _;
use warden_core::audit::export;
use warden_core::config::parse_documents;
use warden_store::{Location, Store};
use warden_testkit::memory::ManualClock;

use super::*;
use crate::cli::{Cli, Command};

const HOUR: i64 = 3600 * 1000;
const DAY: i64 = 24 * HOUR;
/// 2026-12-01T00:00:00Z.
const DAY0: i64 = 1_796_083_200_000;

/// A store in `dir` with a project applied at each of `times` (an admin record each).
async fn store_with_records(dir: &Path, times: &[i64]) -> Arc<Store> {
    let store = Store::open(&Location::DataDir(dir.join("data")))
        .await
        .unwrap();
    for (i, t) in times.iter().enumerate() {
        let yaml = format!("kind: Project\nname: p{i}\n");
        let resources = parse_documents("p.yaml", &yaml).unwrap();
        store
            .apply(resources, "test", Millis(*t))
            .await
            .unwrap()
            .unwrap();
    }
    Arc::new(store)
}

/// `warden serve` with `args`, parsed.
fn serve_args(args: &[&str]) -> Result<RetentionArgs, clap::Error> {
    let argv = ["warden", "serve"].iter().chain(args);
    match Cli::try_parse_from(argv)?.command {
        Command::Serve(serve) => Ok(serve.retention),
        _ => panic!("serve"),
    }
}

/// A retention of `age` on `store`, archiving into `dir/archive` at 03:00 UTC, on `clock`.
fn retention(store: &Arc<Store>, dir: &Path, age: &str, clock: &Arc<ManualClock>) -> Retention {
    let archive = dir.join("archive");
    let args = serve_args(&[
        "--retention",
        age,
        "--retention-dir",
        archive.to_str().unwrap(),
    ])
    .unwrap();
    let key = Arc::new(AuditKey::load_or_create(&dir.join("audit.key")).unwrap());
    Retention::check(&args)
        .unwrap()
        .unwrap()
        .start(store.clone(), clock.clone(), key)
}

/// The files of `dir`, by name.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn each_scheduled_time_archives_what_is_older_than_the_age_into_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    // Day 0 at 01:00 and 05:00, day 1 at 01:00.
    let store = store_with_records(
        dir.path(),
        &[DAY0 + HOUR, DAY0 + 5 * HOUR, DAY0 + DAY + HOUR],
    )
    .await;
    let head = store.audit_head().await.unwrap();
    let clock = Arc::new(ManualClock::at(Millis(DAY0 + DAY + 2 * HOUR)));
    let retention = retention(&store, dir.path(), "1d", &clock);
    let archive_dir = dir.path().join("archive");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&archive_dir)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "the archive directory is its owner's");
    }

    // The first time is day 1 at 03:00; a minute before it nothing happens.
    let first = retention.next_after(clock.now());
    assert_eq!(first, Millis(DAY0 + DAY + 3 * HOUR));
    clock.advance(HOUR - 60_000);
    let (next, made) = retention.fire_due(first).await;
    assert!(made.is_none());
    assert_eq!(next, first);
    assert!(files(&archive_dir).is_empty());

    // At 03:00 (looked at a little late): the records before day 0 03:00 — the first apply's.
    clock.advance(90_000);
    let (next, made) = retention.fire_due(first).await;
    assert_eq!(next, Millis(DAY0 + 2 * DAY + 3 * HOUR), "the next day");
    let made = made.expect("an archive");
    let cut = store.audit_cut().await.unwrap().expect("the store's cut");
    assert_eq!(cut.seq, made.archived.through);
    assert!(made.archived.through < head);
    let name = audit_file::file_name(1, made.archived.through);
    assert_eq!(files(&archive_dir), vec![name.clone()]);
    let text = std::fs::read_to_string(archive_dir.join(&name)).unwrap();
    let verified = export::verify(&text, &retention.key.public_key()).unwrap();
    assert_eq!((verified.first, verified.last), (1, made.archived.through));
    assert_eq!(verified.records as u64, made.records);
    let left = store
        .audit(&warden_store::AuditFilter::default())
        .await
        .unwrap();
    assert!(
        left.iter()
            .all(|r| r.seq > cut.seq && r.record.at.0 >= DAY0 + 3 * HOUR)
    );
    let archived = left
        .iter()
        .find(|r| r.record.tool.as_deref() == Some("audit.archive"))
        .expect("the trail says who archived");
    assert_eq!(archived.record.principal.as_deref(), Some(ACTOR));

    // A replica on the same store, at the same time, archives nothing more — though a
    // record old enough came in since (written with an old time).
    let late = parse_documents("p.yaml", "kind: Project\nname: late\n").unwrap();
    store
        .apply(late, "test", Millis(DAY0 + 2 * HOUR))
        .await
        .unwrap()
        .unwrap();
    let replica = self::retention(&store, dir.path(), "1d", &clock);
    assert!(replica.fire(first).await.is_none());
    assert_eq!(files(&archive_dir).len(), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(archive_dir.join(&name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "an archive is its owner's");
    }

    // Day 2 at 03:00: the records before day 1 03:00, in a file that starts at the cut.
    clock.advance(DAY);
    let (_, made) = retention.fire_due(next).await;
    let made = made.expect("a second archive");
    let second = audit_file::file_name(cut.seq + 1, made.archived.through);
    assert_eq!(files(&archive_dir), vec![name, second.clone()]);
    let text = std::fs::read_to_string(archive_dir.join(&second)).unwrap();
    let verified = export::verify(&text, &retention.key.public_key()).unwrap();
    assert_eq!(verified.first, cut.seq + 1);
    assert!(made.archived.through >= head, "the day-1 apply went too");
}

#[tokio::test]
async fn a_file_in_the_way_is_kept_and_nothing_is_archived() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_records(dir.path(), &[DAY0 + HOUR]).await;
    let head = store.audit_head().await.unwrap();
    let clock = Arc::new(ManualClock::at(Millis(DAY0 + 2 * DAY)));
    let retention = retention(&store, dir.path(), "1d", &clock);
    let in_the_way = dir
        .path()
        .join("archive")
        .join(audit_file::file_name(1, head));
    std::fs::write(&in_the_way, "someone's file\n").unwrap();

    assert!(retention.fire(Millis(DAY0 + 2 * DAY)).await.is_none());
    assert_eq!(
        std::fs::read_to_string(&in_the_way).unwrap(),
        "someone's file\n"
    );
    assert!(store.audit_cut().await.unwrap().is_none());
    assert_eq!(store.audit_head().await.unwrap(), head, "nothing removed");
    assert_eq!(
        files(&dir.path().join("archive")),
        vec![audit_file::file_name(1, head)],
        "what was written under its own name is gone"
    );
}

#[tokio::test]
async fn nothing_old_enough_makes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_records(dir.path(), &[DAY0 + HOUR]).await;
    let clock = Arc::new(ManualClock::at(Millis(DAY0 + 2 * HOUR)));
    let retention = retention(&store, dir.path(), "30d", &clock);
    assert!(retention.fire(Millis(DAY0 + 3 * HOUR)).await.is_none());
    assert!(files(&dir.path().join("archive")).is_empty());
    assert!(store.audit_cut().await.unwrap().is_none());
}

#[test]
fn retention_flags_are_checked_before_the_server_starts() {
    let without_dir = serve_args(&["--retention", "90d"]).unwrap_err();
    assert!(
        without_dir.to_string().contains("--retention-dir"),
        "{without_dir}"
    );
    let without_age = serve_args(&["--retention-dir", "/tmp/a"]).unwrap_err();
    assert!(
        without_age.to_string().contains("--retention"),
        "{without_age}"
    );
    let bad_age = serve_args(&["--retention", "soon", "--retention-dir", "/tmp/a"]).unwrap_err();
    assert!(
        bad_age.to_string().contains("`soon` is not a duration"),
        "{bad_age}"
    );
    let bad_cron = serve_args(&[
        "--retention",
        "90d",
        "--retention-dir",
        "/tmp/a",
        "--retention-schedule",
        "daily",
    ])
    .unwrap_err();
    assert!(
        bad_cron.to_string().contains("five-field cron"),
        "{bad_cron}"
    );
    let off = serve_args(&[]).unwrap();
    assert!(off.retention.is_none() && off.retention_dir.is_none());
    assert_eq!(off.retention_schedule, "0 3 * * *");
}
