//! Retention that keeps the proof (AUD-6): `warden audit archive --before T -o FILE` writes the
//! records before `T` as a signed export and removes them from the store, whose file shrinks;
//! `audit verify` then proves the store from the cut and `verify --file` the archive, and a
//! record edited in either half is named.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::path::Path;

use common::*;
use serde_json::json;

/// `warden ARGS` on the store: its exit code, stdout and stderr.
fn run(w: &TestWarden, args: &[&str]) -> (Option<i32>, String, String) {
    let out = cli(args, &w.store_args());
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The bytes the store's database takes, its write-ahead log included.
fn store_bytes(dir: &Path) -> u64 {
    ["warden.db", "warden.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// An edit of the database as an attacker with access to its file makes it: past the
/// append-only triggers.
fn tamper(dir: &Path, sql: &str) {
    let db = rusqlite::Connection::open(dir.join("warden.db")).unwrap();
    db.execute_batch(&format!(
        "DROP TRIGGER IF EXISTS audit_no_update; {sql}; \
         CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit \
         BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;"
    ))
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_and_the_store_after_it_verify_apart_and_name_an_edited_record() {
    let config = format!(
        "kind: Project\nname: demo\n---\n{}",
        stdio_upstream("notes", "demo", "")
    );
    let w = TestWarden::start(&config).await;
    let warden_store::Location::DataDir(dir) = w.store.location.clone() else {
        panic!("the embedded store")
    };
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    for i in 0..150 {
        let text = format!("{i} {}", "x".repeat(2000));
        call(&client, "notes__echo", json!({ "text": text })).await;
    }
    let archived_head = w.store.store.audit_head().await.unwrap();
    for text in ["after", "the", "cut"] {
        call(&client, "notes__echo", json!({ "text": text })).await;
    }
    // `before` is the time of the first record after those 150 calls.
    let later = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            after_seq: Some(archived_head),
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap()
        .remove(0);
    let before = chrono::DateTime::from_timestamp_millis(later.record.at.0)
        .unwrap()
        .to_rfc3339();
    let keys = tempfile::tempdir().unwrap();
    let key_path = keys.path().join("audit.key");
    let key = warden_store::AuditKey::load_or_create(&key_path).unwrap();
    let k = key_path.display().to_string();
    let archive = keys.path().join("archive.jsonl");
    let a = archive.display().to_string();
    let size_before = store_bytes(&dir);

    let (code, _, err) = run(
        &w,
        &[
            "audit",
            "archive",
            "--before",
            &before,
            "-o",
            &a,
            "--audit-key",
            &k,
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.starts_with("archived "), "{err}");
    let cut = w.store.store.audit_cut().await.unwrap().unwrap();
    assert!(cut.seq > 100 && cut.seq <= archived_head, "{cut:?}");
    assert!(
        store_bytes(&dir) < size_before,
        "{} bytes after, {size_before} before",
        store_bytes(&dir)
    );
    assert!(
        w.store
            .store
            .audit(&warden_store::AuditFilter::default())
            .await
            .unwrap()
            .iter()
            .all(|r| r.seq > cut.seq),
        "nothing through the cut is left"
    );

    // Both halves verify: the store from the cut, the archive alone.
    let (code, out, err) = run(&w, &["audit", "verify", "--audit-key", &k]);
    assert_eq!(code, Some(0), "{out}{err}");
    let public = key.public_key();
    let (code, out, err) = run(
        &w,
        &["audit", "verify", "--file", &a, "--public-key", &public],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "export verified: {} audit records (seq 1..={})",
            cut.seq, cut.seq
        )),
        "{out}"
    );
    // An export now starts at the cut, signed by it.
    let (code, out, err) = run(&w, &["audit", "export", "--audit-key", &k]);
    assert_eq!(code, Some(0), "{err}");
    let exported = keys.path().join("now.jsonl");
    std::fs::write(&exported, &out).unwrap();
    let (code, out, err) = run(
        &w,
        &[
            "audit",
            "verify",
            "--file",
            &exported.display().to_string(),
            "--public-key",
            &public,
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(&format!("(seq {}..=", cut.seq + 1)), "{out}");

    // Archiving the same again changes nothing, and says why.
    let again = keys.path().join("again.jsonl");
    let (code, _, err) = run(
        &w,
        &[
            "audit",
            "archive",
            "--before",
            &before,
            "-o",
            &again.display().to_string(),
            "--audit-key",
            &k,
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("archived already"), "{err}");
    assert!(!again.exists());

    // A record edited in the archive is named by its verification.
    let text = std::fs::read_to_string(&archive).unwrap();
    let edited: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 10 {
                l.replacen("notes__echo", "notes__ech0", 1)
            } else {
                l.to_owned()
            }
        })
        .collect();
    assert_ne!(edited.join("\n"), text.trim_end());
    let forged = keys.path().join("forged.jsonl");
    std::fs::write(&forged, edited.join("\n") + "\n").unwrap();
    let (code, _, err) = run(
        &w,
        &[
            "audit",
            "verify",
            "--file",
            &forged.display().to_string(),
            "--public-key",
            &public,
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("does not match its hash"), "{err}");

    // A record edited in the store after the cut is named by the store's verification.
    let victim = cut.seq + 2;
    tamper(
        &dir,
        &format!("UPDATE audit SET tool = 'forged' WHERE seq = {victim}"),
    );
    let (code, out, err) = run(&w, &["audit", "verify", "--audit-key", &k]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        format!("{out}{err}").contains(&format!("audit record {victim} does not match its hash")),
        "{out}{err}"
    );
}

/// Records removed by someone with the database's file, who writes a cut for them: the chain
/// after it links, but no `audit.archive` record of the chain names that cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_removed_under_a_cut_no_record_names_are_named_by_verify() {
    let w = TestWarden::start("kind: Project\nname: demo\n---\nkind: User\nname: u\n").await;
    let warden_store::Location::DataDir(dir) = w.store.location.clone() else {
        panic!("the embedded store")
    };
    assert!(w.store.store.audit_head().await.unwrap() >= 3);
    let second = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            after_seq: Some(1),
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap()
        .remove(0);
    let db = rusqlite::Connection::open(dir.join("warden.db")).unwrap();
    db.execute_batch(&format!(
        "DROP TRIGGER audit_no_delete; DELETE FROM audit WHERE seq <= 2; \
         INSERT INTO audit_cut (id, store, seq, hash, at, key, signature) \
         VALUES (1, NULL, 2, '{}', 0, 'k', 's');",
        second.hash
    ))
    .unwrap();
    drop(db);
    let (code, out, err) = run(&w, &["audit", "verify"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("audit records through 2 are gone, and no `audit.archive` record of the chain says they were archived"),
        "{out}{err}"
    );
}

/// An archive made with another key than the audit key — by someone with the database's file
/// and a key of their own — proves nothing: verifying with the audit key refuses its cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_signed_by_another_key_is_refused_by_verify_with_the_audit_key() {
    let w = TestWarden::start("kind: Project\nname: demo\n---\nkind: User\nname: u\n").await;
    let keys = tempfile::tempdir().unwrap();
    let real = keys.path().join("real.key");
    let other = keys.path().join("other.key");
    warden_store::AuditKey::load_or_create(&real).unwrap();
    warden_store::AuditKey::load_or_create(&other).unwrap();
    let (real, other) = (real.display().to_string(), other.display().to_string());
    let (code, _, err) = run(&w, &["audit", "verify", "--audit-key", &real]);
    assert_eq!(code, Some(0), "{err}");
    let before = chrono::Utc::now().to_rfc3339();
    let a = keys.path().join("a.jsonl").display().to_string();
    let (code, _, err) = run(
        &w,
        &[
            "audit",
            "archive",
            "--before",
            &before,
            "-o",
            &a,
            "--audit-key",
            &other,
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let cut = w.store.store.audit_cut().await.unwrap().unwrap();
    let (code, out, err) = run(&w, &["audit", "verify", "--audit-key", &real]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains(&format!(
            "the checkpoint of seq {} is not signed by the audit key",
            cut.seq
        )),
        "{out}{err}"
    );
    // With the key that signed it, it holds.
    let (code, out, err) = run(&w, &["audit", "verify", "--audit-key", &other]);
    assert_eq!(code, Some(0), "{out}{err}");
}
