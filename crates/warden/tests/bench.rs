//! `warden bench` works end to end: against Warden in front of the bench upstream, in both
//! eras, with every operation of the mix, and against the upstream directly in the same run.
//! Counts and error kinds only — no timing assertion (figures live in docs/benchmarks.md).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use common::*;
use warden_bench::{Amount, BenchOptions, Era, Mix, Op, Tools};

async fn bench_upstream() -> String {
    let addr = warden_bench::upstream::spawn(
        warden_bench::upstream::BenchUpstream::new(1),
        "127.0.0.1:0".parse().unwrap(),
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    format!("http://{addr}/mcp")
}

fn config(upstream: &str) -> String {
    format!(
        "kind: Project\nname: bench\n---\nkind: Upstream\nname: bench\nproject: bench\nhttp:\n  url: {upstream}\n---\n\
         kind: ToolPolicy\nname: bench-write\nproject: bench\ntool: bench__write\nclass: mutation\nrisk: ordinary\n---\n\
         kind: ToolPolicy\nname: bench-denied\nproject: bench\ntool: bench__tool_0000\ndeny: always\n"
    )
}

fn options(url: String, token: String, direct: Option<String>, era: Era) -> BenchOptions {
    BenchOptions {
        url,
        token: Some(token),
        direct,
        direct_prefix: None,
        era,
        amount: Amount {
            clients: 4,
            duration: std::time::Duration::from_secs(1),
            requests: Some(80),
            warmup: std::time::Duration::ZERO,
        },
        rounds: 2,
        mix: Mix::parse("read=1,write=1,denied=1,list=1").unwrap(),
        tools: Tools {
            read: "bench__read".into(),
            write: "bench__write".into(),
            denied: "bench__tool_0000".into(),
            arguments: serde_json::json!({"key": "k"}),
        },
        rss_pid: Some(std::process::id()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_generator_measures_warden_and_the_upstream_in_both_eras() {
    let upstream = bench_upstream().await;
    let w = TestWarden::start(&config(&upstream)).await;
    for era in [Era::V2026, Era::V2025] {
        let report = warden_bench::run(options(
            w.mcp(),
            w.admin.clone(),
            Some(upstream.clone()),
            era,
        ))
        .await
        .unwrap();
        assert!(
            report.gateway.errors.is_empty(),
            "{era:?}: {:?}",
            report.gateway.error_samples
        );
        // 2 rounds × 80 requests, spread over the four operations.
        assert_eq!(report.gateway.total.requests, 160, "{}", report.table());
        for op in [Op::Read, Op::Write, Op::Denied, Op::List] {
            assert!(report.gateway.ops[&op].requests > 0, "{op:?} not measured");
        }
        // The upstream denies nothing: the direct rounds leave `denied` out.
        let direct = report.direct.as_ref().unwrap();
        assert!(direct.errors.is_empty(), "{:?}", direct.error_samples);
        assert_eq!(direct.total.requests, 160);
        assert!(!direct.ops.contains_key(&Op::Denied));
        assert!(report.ratios.contains_key("read"));
        assert!(report.rss_mib.is_some());
        let json = serde_json::to_value(&report).unwrap();
        assert!(json["ratios"]["all"]["throughput"].is_number(), "{json}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_counted_by_kind_and_named() {
    let upstream = bench_upstream().await;
    let w = TestWarden::start(&config(&upstream)).await;
    let mut o = options(w.mcp(), "wdn_not_a_real_token".into(), None, Era::V2026);
    o.rounds = 1;
    // A bad token cannot even connect in 2025-11-25; in 2026-07-28 every request is a 401.
    // Past 30 failures a minute the source is refused outright (429).
    o.amount.requests = Some(20);
    let report = warden_bench::run(o).await.unwrap();
    assert_eq!(report.gateway.errors.get("http_401"), Some(&20));
    assert!(report.gateway.error_samples["http_401"].contains("401"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_should_be_denied_but_runs_is_an_error() {
    let upstream = bench_upstream().await;
    let w = TestWarden::start(&config(&upstream)).await;
    let mut o = options(w.mcp(), w.admin.clone(), None, Era::V2026);
    o.rounds = 1;
    o.mix = Mix::parse("denied=1").unwrap();
    o.tools.denied = "bench__read".into();
    let report = warden_bench::run(o).await.unwrap();
    assert_eq!(report.gateway.errors.get("not_denied"), Some(&80));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bare_forwarder_carries_every_call_to_the_upstream() {
    let upstream = bench_upstream().await;
    let to = upstream
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let forwarder = warden_bench::forward::Forwarder::start("127.0.0.1:0".parse().unwrap(), to, 2)
        .await
        .unwrap();
    // Its port is in use for a second forwarder, although both would share it with SO_REUSEPORT.
    let again = warden_bench::forward::Forwarder::start(forwarder.addr(), to, 2).await;
    let err = again.expect_err("a second forwarder on the same port");
    assert!(err.to_string().contains("cannot listen on"), "{err}");
    let mut o = options(
        format!("http://{}/mcp", forwarder.addr()),
        String::new(),
        Some(upstream),
        Era::V2026,
    );
    o.token = None;
    o.mix = Mix::parse("read=1,write=1,list=1").unwrap();
    o.tools.read = "read".into();
    o.tools.write = "write".into();
    let report = warden_bench::run(o).await.unwrap();
    assert!(
        report.gateway.errors.is_empty(),
        "{:?}",
        report.gateway.error_samples
    );
    assert_eq!(report.gateway.total.requests, 160, "{}", report.table());
    let direct = report.direct.as_ref().unwrap();
    assert!(direct.errors.is_empty(), "{:?}", direct.error_samples);
    tokio::task::spawn_blocking(move || forwarder.stop())
        .await
        .unwrap();
}
