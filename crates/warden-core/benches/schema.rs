//! Validating `tools/call` arguments against a tool's input schema (GOV-1, GOV-2 step 2).
//!
//! Every governed call validates its arguments with the validator compiled once per tool
//! when the catalog is built ([`InputSchema::compile`]); the `schema/validate/*` benches
//! measure exactly that cached call-path form, for valid and invalid arguments and for a
//! strict (`additionalProperties: false`) schema. It is part of PERF-1's ≤ 0.15 ms p50 of
//! added latency. `schema/compile` measures compilation, which happens at catalog build time
//! only, never per call. `schema/baseline/*` runs the same `jsonschema` validator on borrowed
//! arguments, to show what [`InputSchema::validate`] itself adds on top of the library.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmark setup")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use warden_core::schema::InputSchema;

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A typical upstream tool schema (an issue tracker's `create_issue`).
fn issue_schema() -> Map<String, Value> {
    obj(json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "body": {"type": "string", "maxLength": 65536},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
            "priority": {"type": "string", "enum": ["low", "normal", "high", "urgent"]},
            "assignee": {"type": "string"},
        },
        "required": ["title"],
    }))
}

fn valid_args() -> Map<String, Value> {
    obj(json!({
        "title": "Refund job times out for invoices over 10k lines",
        "body": "Since the 2.3 deploy the nightly refund job exceeds its 30 min budget when an \
                 invoice has more than 10 000 lines. Logs attached in the incident channel.",
        "tags": ["billing", "regression", "p2"],
        "priority": "high",
    }))
}

/// Two problems: a title of the wrong type and a priority outside the enum.
fn invalid_args() -> Map<String, Value> {
    obj(json!({
        "title": 4411,
        "body": "Since the 2.3 deploy the nightly refund job exceeds its 30 min budget.",
        "tags": ["billing", "regression", "p2"],
        "priority": "whenever",
    }))
}

/// Valid under the loose schema, refused by the strict one (`dryRun` is not declared).
fn unknown_field_args() -> Map<String, Value> {
    let mut m = valid_args();
    m.insert("dryRun".into(), Value::Bool(true));
    m
}

fn validate(c: &mut Criterion) {
    let loose = InputSchema::compile(issue_schema(), false).unwrap();
    let strict = InputSchema::compile(issue_schema(), true).unwrap();
    let valid = valid_args();
    let invalid = invalid_args();
    let unknown = unknown_field_args();
    // INVARIANT: each bench measures the outcome its name says.
    assert!(loose.validate(Some(&valid)).is_ok());
    assert_eq!(
        loose.validate(Some(&invalid)).unwrap_err().problems.len(),
        2
    );
    assert!(strict.validate(Some(&valid)).is_ok());
    assert!(strict.validate(Some(&unknown)).is_err());

    let mut g = c.benchmark_group("schema/validate");
    g.bench_function("valid", |b| {
        b.iter(|| black_box(&loose).validate(Some(black_box(&valid))));
    });
    g.bench_function("invalid", |b| {
        b.iter(|| black_box(&loose).validate(Some(black_box(&invalid))));
    });
    g.bench_function("strict_valid", |b| {
        b.iter(|| black_box(&strict).validate(Some(black_box(&valid))));
    });
    g.bench_function("strict_unknown_field", |b| {
        b.iter(|| black_box(&strict).validate(Some(black_box(&unknown))));
    });
    g.finish();

    // The library alone on borrowed arguments: no copy of the argument map, no error report.
    let schema = Value::Object(issue_schema());
    let validator = jsonschema::validator_for(&schema).unwrap();
    let valid_value = Value::Object(valid.clone());
    let invalid_value = Value::Object(invalid.clone());
    let mut g = c.benchmark_group("schema/baseline");
    g.bench_function("jsonschema_is_valid_valid", |b| {
        b.iter(|| black_box(&validator).is_valid(black_box(&valid_value)));
    });
    g.bench_function("jsonschema_is_valid_invalid", |b| {
        b.iter(|| black_box(&validator).is_valid(black_box(&invalid_value)));
    });
    g.finish();
}

fn compile(c: &mut Criterion) {
    let schema = issue_schema();
    let mut g = c.benchmark_group("schema/compile");
    // Catalog build time only (once per tool and configuration revision), not the call path.
    // Includes cloning the schema map, as `ToolDescriptor::for_upstream` does.
    g.bench_function("loose", |b| {
        b.iter(|| InputSchema::compile(black_box(&schema).clone(), false));
    });
    g.bench_function("strict", |b| {
        b.iter(|| InputSchema::compile(black_box(&schema).clone(), true));
    });
    g.finish();
}

criterion_group!(benches, validate, compile);
criterion_main!(benches);
