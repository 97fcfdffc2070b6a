//! Generators for the catalog (PERF-3) and audit-growth (PERF-4) scenarios, and resident
//! memory sampling.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::json;
use warden_core::audit::{NewRecord, RecordKind, canonical_json};
use warden_core::time::Millis;
use warden_store::{AuditFilter, Store};

/// Configuration of `projects` projects, each with one upstream at `upstream_url` (a
/// `warden bench upstream --extra-tools N`, so each project has N + 2 tools).
pub fn catalog_config(projects: usize, upstream_url: &str) -> String {
    let mut yaml = String::new();
    for i in 0..projects {
        let _ = write!(
            yaml,
            "kind: Project\nname: p{i:03}\n---\nkind: Upstream\nname: u{i:03}\nproject: p{i:03}\nhttp:\n  url: {upstream_url}\n---\n"
        );
    }
    yaml
}

/// What [`fill_audit`] wrote.
#[derive(Debug, serde::Serialize)]
pub struct Filled {
    /// Records appended.
    pub records: u64,
    /// Runs they belong to.
    pub runs: u64,
    /// A run id in the middle of the trail, for trail reads.
    pub sample_run: String,
    /// Seconds taken.
    pub seconds: f64,
}

/// Appends `records` synthetic records: runs of one `run` record and `calls_per_run` calls of
/// three records each (call, decision, outcome), chained like real ones, in batches.
pub async fn fill_audit(
    store: &Store,
    records: u64,
    calls_per_run: u64,
    progress: impl Fn(u64),
) -> Result<Filled, String> {
    let started = Instant::now();
    let per_run = 1 + 3 * calls_per_run.max(1);
    let batch_records: u64 = 20_000;
    let mut written = 0_u64;
    let mut runs = 0_u64;
    let mut sample_run = String::new();
    let at = Millis(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis(),
        )
        .unwrap_or(0),
    );
    let base = |kind, run: &str, call: Option<String>, decision: Option<&str>, payload| NewRecord {
        at,
        kind,
        run_id: run.to_owned(),
        call_id: call,
        principal: Some("user:bench".into()),
        agent: None,
        tool: Some("bench__read".into()),
        decision: decision.map(str::to_owned),
        code: None,
        payload,
    };
    while written < records {
        let mut batch = Vec::new();
        while (batch.len() as u64) < batch_records && written + (batch.len() as u64) < records {
            let run = format!("run_fill_{runs:010}");
            runs += 1;
            if written + (batch.len() as u64) >= records / 2 && sample_run.is_empty() {
                sample_run = run.clone();
            }
            batch.push(base(
                RecordKind::Run,
                &run,
                None,
                None,
                canonical_json(&json!({"mode": "caller", "principal": "user:bench"})),
            ));
            for c in 0..per_run.saturating_sub(1) / 3 {
                let call = Some(format!("call_{c}"));
                batch.push(base(
                    RecordKind::Call,
                    &run,
                    call.clone(),
                    None,
                    canonical_json(&json!({"arguments": {"key": "k"}, "class": "read"})),
                ));
                batch.push(base(
                    RecordKind::Decision,
                    &run,
                    call.clone(),
                    Some("allow"),
                    canonical_json(&json!({"rule": "bench", "step": "autonomy"})),
                ));
                batch.push(base(
                    RecordKind::Outcome,
                    &run,
                    call,
                    Some("executed"),
                    canonical_json(&json!({"status": "executed", "duration_ms": 0})),
                ));
            }
        }
        let remaining = usize::try_from(records - written).unwrap_or(usize::MAX);
        batch.truncate(remaining);
        let n = batch.len() as u64;
        store
            .append_audit(batch)
            .await
            .map_err(|e| format!("cannot append to the audit trail: {e}"))?;
        written += n;
        progress(written);
    }
    Ok(Filled {
        records: written,
        runs,
        sample_run,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Reads one run's whole trail `times` times; the durations, fastest first.
pub async fn read_trail(
    store: &Store,
    run_id: &str,
    times: usize,
) -> Result<(usize, Vec<Duration>), String> {
    let filter = AuditFilter {
        run_id: Some(run_id.to_owned()),
        limit: Some(100_000),
        ..AuditFilter::default()
    };
    let mut took = Vec::with_capacity(times);
    let mut records = 0;
    for _ in 0..times.max(1) {
        let began = Instant::now();
        let trail = store
            .audit(&filter)
            .await
            .map_err(|e| format!("cannot read the trail: {e}"))?;
        took.push(began.elapsed());
        records = trail.len();
    }
    took.sort();
    Ok((records, took))
}

/// Resident memory of a process, MiB (Linux `/proc`).
pub fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some((kib / 1024.0 * 10.0).round() / 10.0)
}
