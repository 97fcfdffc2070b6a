//! `audit` (filters, limits, JSON Lines), `audit verify` and `audit checkpoint export`, both
//! ways.

use serde_json::json;

use crate::common::{Era, TestWarden, call, decision, http_client, now};
use crate::support::{Both, config};

/// The sequence numbers of JSON Lines.
fn seqs(lines: &str) -> Vec<i64> {
    lines
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_i64()
                .unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_trail_lists_and_filters_the_same_records_both_ways() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    let echoed = call(&client, "alpha__echo", json!({"text": "hi"})).await;
    let run = decision(&echoed)["runId"].as_str().unwrap().to_owned();
    call(&client, "nope", json!({})).await;
    // An unattended run of the agent `bot`, whose records name it.
    cli.api(&["run", "agent", "bot", "--wait"]).ok();
    cli.store(&["kill", "--tool", "alpha__echo", "--reason", "drill"])
        .ok();
    cli.api(&["delete", "killswitch", "tool:alpha__echo"]).ok();
    let all = cli.same(&["audit", "-o", "json", "--limit", "1000"]).ok();
    let listed = seqs(&all.stdout);
    assert!(listed.len() > 6, "{}", all.stdout);
    assert!(listed.windows(2).all(|p| p[0] > p[1]), "newest first");
    for args in [
        vec!["audit"],
        vec!["audit", "-o", "yaml"],
        vec!["audit", "--kind", "admin", "-o", "json"],
        vec!["audit", "--tool", "alpha__echo", "-o", "json"],
        vec!["audit", "--decision", "deny"],
        vec![
            "audit",
            "--principal",
            "user:admin",
            "--kind",
            "call",
            "-o",
            "json",
        ],
        vec!["audit", "--since", "1h", "--oldest-first", "-o", "json"],
        vec!["audit", "--until", "2000-01-01T00:00:00Z"],
        vec!["audit", "--run", &run],
        vec!["audit", "--agent", "bot"],
        vec!["audit", "--code", "UNKNOWN_TOOL"],
    ] {
        cli.same(&args).ok();
    }
    // Each of these filters keeps some records, and only those it names.
    for (flag, value, field) in [
        ("--run", run.as_str(), "run_id"),
        ("--agent", "bot", "agent"),
        ("--code", "UNKNOWN_TOOL", "code"),
        ("--principal", "user:admin", "principal"),
        ("--tool", "alpha__echo", "tool"),
    ] {
        let kept = cli.same(&["audit", flag, value, "-o", "json"]).ok();
        let records: Vec<serde_json::Value> = kept
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!records.is_empty(), "{flag} {value}: no record");
        for r in &records {
            assert_eq!(r[field], value, "{flag} {value}: {r}");
        }
    }
    cli.same(&["audit", "--agent", "nobody", "-o", "json"]).ok();
    assert_eq!(
        cli.same(&["audit", "--agent", "nobody"]).stderr,
        "no audit records match\n"
    );
    // The test's own configuration, then the kill switch of the CLI.
    let applies = cli.same(&["audit", "--tool", "apply", "-o", "json"]).ok();
    let newest: serde_json::Value =
        serde_json::from_str(applies.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(applies.stdout.lines().count(), 2, "{}", applies.stdout);
    assert_eq!(
        newest["payload"]["resources"],
        json!(["KillSwitch/tool:alpha__echo"])
    );
    // The newest and the oldest few, and a notice of how many match (the same both ways).
    let newest = cli.same(&["audit", "-o", "json", "--limit", "3"]).ok();
    assert_eq!(seqs(&newest.stdout), listed[..3]);
    assert_eq!(
        newest.stderr,
        format!(
            "showing the newest 3 of {}; use --limit or filters\n",
            listed.len()
        )
    );
    let oldest = cli
        .same(&["audit", "-o", "json", "--limit", "2", "--oldest-first"])
        .ok();
    assert_eq!(seqs(&oldest.stdout), [1, 2]);
    assert_eq!(
        oldest.stderr,
        format!(
            "showing the oldest 2 of {}; use --limit or filters\n",
            listed.len()
        )
    );
    let calls = cli.same(&["audit", "--kind", "call", "--limit", "1"]).ok();
    assert_eq!(
        calls.stderr,
        "showing the newest 1 of 2; use --limit or filters\n"
    );

    cli.same_failure(
        &["audit", "--since", "garbage"],
        2,
        "error: `garbage` is neither an RFC 3339 time (2026-11-29T10:00:00Z) nor an age (1h, 30m)\n",
    );
    cli.same_failure(
        &["audit", "--limit", "0"],
        2,
        "error: --limit must be at least 1\n",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_listings_page_through_the_api_as_through_the_store() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    cli.store(&["bench", "fill-audit", "--records", "2600"])
        .ok();
    let newest = cli.same(&["audit", "-o", "json", "--limit", "2300"]).ok();
    let listed = seqs(&newest.stdout);
    assert_eq!(listed.len(), 2300);
    assert!(
        listed.windows(2).all(|p| p[0] == p[1] + 1),
        "no gap, newest first"
    );
    let oldest = cli
        .same(&["audit", "-o", "json", "--limit", "1500", "--oldest-first"])
        .ok();
    assert_eq!(seqs(&oldest.stdout), (1..=1500).collect::<Vec<i64>>());
    let everything = cli.same(&["audit", "-o", "json", "--limit", "100000"]).ok();
    assert_eq!(everything.stderr, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_verifies_alike_both_ways_and_a_broken_one_is_named_alike() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    cli.store(&["kill", "--all", "--reason", "drill"]).ok();
    cli.api(&["delete", "killswitch", "all"]).ok();
    // Without a key to trust: verified, unanchored, and each says what it would need. On the
    // store, the audit key is looked for where `warden serve` keeps it, beside the store; a
    // server is given nothing to trust unless the command names it (docs/cli.md).
    let records = w.store.store.audit_head().await.unwrap();
    let data_dir = match &w.store.location {
        warden_store::Location::DataDir(d) => d.display().to_string(),
        warden_store::Location::Url(_) => unreachable!("TestWarden starts on SQLite"),
    };
    let (api, store) = (
        cli.api(&["audit", "verify"]).ok(),
        cli.store(&["audit", "verify"]).ok(),
    );
    assert_eq!(
        (api.stdout, api.stderr),
        (
            format!(
                "audit chain verified: {records} records\n\
                 its end is not anchored: nothing to check it against was given (pass --anchor FILE, or --audit-key FILE with the server's audit key)\n"
            ),
            String::new()
        )
    );
    assert_eq!(
        (store.stdout, store.stderr),
        (
            format!(
                "audit chain verified: {records} records\n\
                 its end is not anchored: no audit key at {data_dir}/audit.key (`warden serve` creates one; or pass --anchor FILE)\n"
            ),
            String::new()
        )
    );
    // With the audit key, before and after it signed a checkpoint.
    let keys = tempfile::tempdir().unwrap();
    let key_path = keys.path().join("audit.key");
    let key = warden_store::AuditKey::load_or_create(&key_path).unwrap();
    let k = key_path.display().to_string();
    let unsigned = cli.same(&["audit", "verify", "--audit-key", &k]).ok();
    assert_eq!(
        unsigned.stdout,
        format!(
            "audit chain verified: {records} records; no checkpoint signed by the audit key yet\n"
        )
    );
    let signed = w
        .store
        .store
        .checkpoint(&key, now())
        .await
        .unwrap()
        .unwrap();
    let anchored = cli.same(&["audit", "verify", "--audit-key", &k]).ok();
    let at = chrono::DateTime::from_timestamp_millis(signed.at.0)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ");
    assert_eq!(
        anchored.stdout,
        format!(
            "audit chain verified: {records} records, its end anchored by the checkpoint of {at} (seq {})\n",
            signed.seq
        )
    );
    // The export is the store's; its checkpoint anchors the chain both ways.
    let refused = cli.api(&["audit", "checkpoint", "export", "--audit-key", &k]);
    assert_eq!(refused.code, Some(2));
    assert_eq!(
        refused.stderr,
        "error: `warden audit checkpoint export` works on the store, not through a server: it reads the audit key and its checkpoint file, which are where the store is; give it --data-dir or --database-url (or run it where the store is)\n"
    );
    let exported = cli
        .store(&["audit", "checkpoint", "export", "--audit-key", &k])
        .ok();
    let anchor = keys.path().join("kept-elsewhere.jsonl");
    std::fs::write(&anchor, &exported.stdout).unwrap();
    let a = anchor.display().to_string();
    let by_anchor = cli.same(&["audit", "verify", "--anchor", &a]).ok();
    assert_eq!(
        (by_anchor.stdout, by_anchor.stderr),
        (anchored.stdout, String::new())
    );

    // An edited record: the same error, exit 1, both ways.
    w.store
        .store
        .execute_raw("DROP TRIGGER audit_no_update; UPDATE audit SET principal = 'cli:mallory' WHERE seq = 2")
        .await
        .unwrap();
    cli.same_failure(
        &["audit", "verify"],
        1,
        "error: audit record 2 does not match its hash: it was edited or moved\n",
    );
}

/// `warden audit verify --file F --public-key K` with no store: exit status and stderr.
fn verify_offline(
    home: &std::path::Path,
    file: &std::path::Path,
    key: &str,
) -> (Option<i32>, String, String) {
    let f = file.display().to_string();
    let out = crate::support::warden(
        home,
        &["audit", "verify", "--file", &f, "--public-key", key],
    )
    .output()
    .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// AUD-5: an export, whole or from a time on, in either format, is verified with the key's
/// public half alone after the store is gone; an edited, removed or reordered line is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_verifies_offline_after_the_store_is_gone_and_names_each_tampering() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    for text in ["one", "two", "three"] {
        call(&client, "alpha__echo", json!({ "text": text })).await;
    }
    let keys = tempfile::tempdir().unwrap();
    let key_path = keys.path().join("audit.key");
    let key = warden_store::AuditKey::load_or_create(&key_path).unwrap();
    let k = key_path.display().to_string();
    let public = cli
        .store(&["audit", "key", "--public", "--audit-key", &k])
        .ok();
    assert_eq!(public.stdout.trim(), key.public_key());
    let missing = cli.store(&["audit", "key", "--audit-key", &k]);
    assert_eq!(missing.code, Some(2), "the secret half is never printed");

    let whole = keys.path().join("whole.jsonl");
    let written = cli
        .store(&[
            "audit",
            "export",
            "--audit-key",
            &k,
            "-o",
            &whole.display().to_string(),
        ])
        .ok();
    assert!(
        written.stderr.starts_with("exported "),
        "{}",
        written.stderr
    );
    // From a time on, in OCSF: the record before the first is signed too.
    let third = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            after_seq: Some(2),
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap()
        .remove(0);
    let since = chrono::DateTime::from_timestamp_millis(third.record.at.0)
        .unwrap()
        .to_rfc3339();
    let part = keys.path().join("part.ocsf.jsonl");
    cli.store(&[
        "audit",
        "export",
        "--audit-key",
        &k,
        "--since",
        &since,
        "--format",
        "ocsf",
        "-o",
        &part.display().to_string(),
    ])
    .ok();
    let head = w.store.store.audit_head().await.unwrap();

    // The store is gone; the exports and the public key are all there is.
    let warden_store::Location::DataDir(data_dir) = w.store.location.clone() else {
        unreachable!("the embedded store")
    };
    drop((cli, client));
    drop(w);
    if data_dir.exists() {
        std::fs::remove_dir_all(&data_dir).unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = verify_offline(home.path(), &whole, &key.public_key());
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert!(
        out.starts_with(&format!(
            "export verified: {head} audit records (seq 1..={head}), 1 checkpoints"
        )),
        "{out}"
    );
    let (code, out, _) = verify_offline(home.path(), &part, &key.public_key());
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("2 checkpoints"), "{out}");
    let ocsf: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&part)
            .unwrap()
            .lines()
            .nth(1)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(ocsf["class_uid"], 6003, "{ocsf}");

    // Each tampering, named by its line.
    let lines: Vec<String> = std::fs::read_to_string(&whole)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let tampered = keys.path().join("tampered.jsonl");
    let said = |lines: &[String]| {
        std::fs::write(&tampered, lines.join("\n")).unwrap();
        let (code, out, err) = verify_offline(home.path(), &tampered, &key.public_key());
        assert_eq!((code, out.as_str()), (Some(1), ""), "{err}");
        err
    };
    let mut edited = lines.clone();
    edited[1] = edited[1].replacen("\"at\":", "\"at\":1", 1);
    assert_eq!(
        said(&edited),
        "export broken: line 2: audit record 2 does not match its hash: it was edited or moved\n"
    );
    let mut removed = lines.clone();
    removed.remove(2);
    assert_eq!(
        said(&removed),
        "export broken: line 3: audit record 3 is missing\n"
    );
    let mut reordered = lines.clone();
    reordered.swap(3, 4);
    assert_eq!(
        said(&reordered),
        "export broken: line 4: audit record 4 is missing\n"
    );
    let (code, _, err) = verify_offline(home.path(), &whole, &"0".repeat(64));
    assert_eq!(code, Some(1));
    assert!(err.contains("is not signed by the trusted key"), "{err}");
}
