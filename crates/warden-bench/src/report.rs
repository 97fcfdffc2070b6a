//! Reports: figures per target and operation, and the gateway/direct ratios, as a table or as
//! JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::load::{Measured, Op, OpStats};

/// Figures of one operation (or of all together).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Figures {
    /// Requests sent while measuring.
    pub requests: u64,
    /// Failed requests.
    pub errors: u64,
    /// Successful requests per second.
    pub rps: f64,
    /// Latency percentiles of successful requests, milliseconds.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Maximum.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

fn ms(ns: u64) -> f64 {
    // Nanoseconds to milliseconds, rounded to the microsecond.
    (ns as f64 / 1_000.0).round() / 1_000.0
}

impl Figures {
    fn of(stats: &OpStats, seconds: f64) -> Self {
        let h = &stats.latency;
        let ok = h.len();
        Self {
            requests: stats.requests(),
            errors: stats.errors.values().sum(),
            rps: if seconds > 0.0 {
                ((ok as f64 / seconds) * 10.0).round() / 10.0
            } else {
                0.0
            },
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
            mean_ms: (h.mean() / 1_000.0).round() / 1_000.0,
        }
    }
}

/// One target's report.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TargetReport {
    /// The URL measured.
    pub url: String,
    /// Measured seconds (over all rounds).
    pub seconds: f64,
    /// All operations together.
    pub total: Figures,
    /// Per operation.
    pub ops: BTreeMap<Op, Figures>,
    /// Errors by kind.
    pub errors: BTreeMap<String, u64>,
    /// One message per error kind.
    pub error_samples: BTreeMap<String, String>,
}

impl TargetReport {
    /// The report of a target's measurements.
    pub fn of(url: &str, measured: &Measured) -> Self {
        let seconds = measured.elapsed.as_secs_f64();
        let all = measured.all();
        Self {
            url: url.to_owned(),
            seconds: (seconds * 1000.0).round() / 1000.0,
            total: Figures::of(&all, seconds),
            ops: measured
                .ops
                .iter()
                .map(|(op, s)| (*op, Figures::of(s, seconds)))
                .collect(),
            errors: all.errors.clone(),
            error_samples: measured.samples.clone(),
        }
    }
}

/// Gateway against direct, per operation both measured.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Ratio {
    /// Gateway rps ÷ direct rps.
    pub throughput: f64,
    /// Gateway p50 − direct p50, milliseconds.
    pub added_p50_ms: f64,
    /// Gateway p99 − direct p99, milliseconds.
    pub added_p99_ms: f64,
    /// Gateway p99 ÷ direct p99.
    pub p99_ratio: f64,
}

impl Ratio {
    fn of(gateway: &Figures, direct: &Figures) -> Self {
        let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
        Self {
            throughput: if direct.rps > 0.0 {
                round3(gateway.rps / direct.rps)
            } else {
                0.0
            },
            added_p50_ms: round3(gateway.p50_ms - direct.p50_ms),
            added_p99_ms: round3(gateway.p99_ms - direct.p99_ms),
            p99_ratio: if direct.p99_ms > 0.0 {
                round3(gateway.p99_ms / direct.p99_ms)
            } else {
                0.0
            },
        }
    }
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// What was run.
    pub config: serde_json::Value,
    /// The endpoint under test.
    pub gateway: TargetReport,
    /// The upstream measured directly, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct: Option<TargetReport>,
    /// Gateway against direct: all operations both measured together, and per operation.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ratios: BTreeMap<String, Ratio>,
    /// Resident memory of a process (`--rss-pid`) after the run, MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_mib: Option<f64>,
}

impl Report {
    /// Builds the report and its ratios.
    pub fn new(
        config: serde_json::Value,
        gateway: TargetReport,
        direct: Option<TargetReport>,
        rss_mib: Option<f64>,
    ) -> Self {
        let mut ratios = BTreeMap::new();
        if let Some(direct) = &direct {
            let mut common = Vec::new();
            for (op, g) in &gateway.ops {
                if let Some(d) = direct.ops.get(op) {
                    ratios.insert(op.as_str().to_owned(), Ratio::of(g, d));
                    common.push(*op);
                }
            }
            if common.len() > 1 || common.len() == gateway.ops.len() {
                ratios.insert("all".into(), Ratio::of(&gateway.total, &direct.total));
            }
        }
        Self {
            config,
            gateway,
            direct,
            ratios,
            rss_mib,
        }
    }

    /// The report as a table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<8} {:<7} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9}",
            "target", "op", "requests", "errors", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms"
        );
        let mut rows = vec![("gateway", &self.gateway)];
        if let Some(d) = &self.direct {
            rows.push(("direct", d));
        }
        for (label, target) in &rows {
            let mut lines: Vec<(&str, &Figures)> =
                target.ops.iter().map(|(op, f)| (op.as_str(), f)).collect();
            if target.ops.len() > 1 {
                lines.push(("all", &target.total));
            }
            for (op, f) in lines {
                let _ = writeln!(
                    out,
                    "{:<8} {:<7} {:>9} {:>7} {:>10.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                    label, op, f.requests, f.errors, f.rps, f.p50_ms, f.p90_ms, f.p99_ms, f.max_ms
                );
            }
        }
        if !self.ratios.is_empty() {
            let _ = writeln!(
                out,
                "\ngateway/direct throughput  added p50 ms  added p99 ms  p99 ratio"
            );
            for (op, r) in &self.ratios {
                let _ = writeln!(
                    out,
                    "{:<13} {:>11.3} {:>13.3} {:>13.3} {:>10.3}",
                    op, r.throughput, r.added_p50_ms, r.added_p99_ms, r.p99_ratio
                );
            }
        }
        for (label, target) in &rows {
            for (kind, n) in &target.errors {
                let sample = target
                    .error_samples
                    .get(kind)
                    .map(String::as_str)
                    .unwrap_or_default();
                let _ = writeln!(out, "{label}: {n} × {kind}: {sample}");
            }
        }
        if let Some(rss) = self.rss_mib {
            let _ = writeln!(out, "resident memory: {rss:.1} MiB");
        }
        out
    }
}
