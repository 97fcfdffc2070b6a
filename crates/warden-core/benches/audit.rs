//! The pure parts of the audit trail (AUD-1..3) that every governed call pays.
//!
//! Each audited call writes a call record (its payload holds [`hash_arguments`] and
//! [`redact`] of the arguments, serialized by [`canonical_json`]), a decision record and an
//! outcome record, and each record is linked to its predecessor by
//! [`NewRecord::chain_hash`] (called by [`NewRecord::chain`] in the stores' append). The
//! chaining itself lives here in the core; the stores only sequence and persist. All of it
//! sits inside PERF-1's ≤ 0.15 ms p50 of added latency.
//!
//! `audit/call_record/build_and_chain` strings the steps together as `pipeline::Recorder`
//! builds a call record; `audit/baseline/*` are reference points (plain `serde_json`
//! serialization and a bare SHA-256) that show what the canonical form itself costs.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmark setup")]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use warden_core::audit::{
    GENESIS_HASH, NewRecord, RecordKind, canonical_json, hash_arguments, redact,
};
use warden_core::time::Millis;

/// A typical `create_issue` call: a long body (cut by redaction at 256 characters), a few
/// tags, a nested object and one secret-looking key (replaced by redaction).
fn issue_args() -> Map<String, Value> {
    let body = "Since the 2.3 deploy the nightly refund job exceeds its 30 min budget when an \
                invoice has more than 10 000 lines. ";
    let Value::Object(m) = json!({
        "title": "Refund job times out for invoices over 10k lines",
        "body": body.repeat(5),
        "tags": ["billing", "regression", "p2"],
        "priority": "high",
        "links": {"incident": "INC-4411", "dashboard": "https://grafana.example/d/refunds"},
        "apiToken": "tkn_5f1c2a9e0b7d",
    }) else {
        unreachable!()
    };
    m
}

/// The call record's payload, exactly as `pipeline::Recorder::open` assembles it.
fn call_payload(args: &Map<String, Value>) -> Value {
    json!({
        "args_hash": hash_arguments(Some(args)),
        "args": redact(Some(args)),
        "project": "payments",
        "class": "mutation",
    })
}

fn call_record(payload: String) -> NewRecord {
    NewRecord {
        at: Millis(1_800_000_000_000),
        kind: RecordKind::Call,
        run_id: "run_01JZ8Q4M7X2V9C3B5N6K".into(),
        call_id: Some("call_7".into()),
        principal: Some("user:alice".into()),
        agent: Some("sre-bot".into()),
        tool: Some("tracker__create_issue".into()),
        decision: None,
        code: None,
        payload,
    }
}

fn audit(c: &mut Criterion) {
    let args = issue_args();
    let payload = call_payload(&args);
    let record = call_record(canonical_json(&payload));
    let prev = hash_arguments(None);
    // INVARIANT: redaction does what the benches claim it does on this input.
    let redacted = redact(Some(&args));
    assert_eq!(redacted.get("apiToken"), Some(&json!("[redacted]")));
    assert!(
        redacted
            .get("body")
            .and_then(Value::as_str)
            .unwrap()
            .ends_with("…[570 chars]")
    );

    let mut g = c.benchmark_group("audit");
    g.bench_function("canonical_json/call_payload", |b| {
        b.iter(|| canonical_json(black_box(&payload)));
    });
    g.bench_function("hash_arguments", |b| {
        b.iter(|| hash_arguments(Some(black_box(&args))));
    });
    g.bench_function("redact", |b| {
        b.iter(|| redact(Some(black_box(&args))));
    });
    g.bench_function("chain_hash", |b| {
        b.iter(|| black_box(&record).chain_hash(black_box(42), black_box(&prev)));
    });
    // `chain` consumes the record; clone it outside the timed part.
    g.bench_function("chain", |b| {
        b.iter_batched(
            || record.clone(),
            |r| r.chain(black_box(42), black_box(GENESIS_HASH)),
            BatchSize::SmallInput,
        );
    });
    g.bench_function("call_record/build_and_chain", |b| {
        b.iter(|| {
            let payload = canonical_json(&call_payload(black_box(&args)));
            call_record(payload).chain(black_box(42), black_box(&prev))
        });
    });
    g.finish();

    let canonical = canonical_json(&payload);
    let mut g = c.benchmark_group("audit/baseline");
    // With the workspace's serde_json features (no `preserve_order`) this writes the very same
    // bytes as `canonical_json`, since `Map` is then sorted already.
    g.bench_function("serde_json_to_string/call_payload", |b| {
        b.iter(|| serde_json::to_string(black_box(&payload)).unwrap());
    });
    g.bench_function("sha256_hex/call_payload", |b| {
        b.iter(|| hex::encode(Sha256::digest(black_box(canonical.as_bytes()))));
    });
    g.finish();
}

criterion_group!(benches, audit);
criterion_main!(benches);
