//! GOV-8: the same logical call over HTTP and over `warden stdio` yields the same decision, the
//! same audit records and the same result shape. A property test drives both transports with
//! the same generated calls and compares.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use warden_store::AuditFilter;

const CALLS: &[(&str, &str)] = &[
    ("alpha__echo", r#"{"text": "hello"}"#),
    ("alpha__echo", r#"{"text": 5}"#),
    ("alpha__echo", r#"{}"#),
    ("alpha__add_note", r#"{"text": "a note"}"#),
    ("alpha__delete_note", r#"{"id": 1}"#),
    ("alpha__call_count", r#"{}"#),
    ("alpha__add", r#"{"a": 1, "b": 2}"#),
    ("alpha__list_notes", r#"{"unexpected": true}"#),
    ("beta__echo", r#"{"text": "hidden"}"#),
    ("nope", r#"{}"#),
    ("warden__whoami", r#"{}"#),
    ("warden__explain", r#"{"tool": "alpha__delete_note"}"#),
];

fn config() -> String {
    format!(
        r#"
kind: Project
name: alpha
---
kind: Project
name: beta
---
{alpha}
---
{beta}
---
kind: User
name: alice
---
kind: Role
name: runner
permissions: ["run:projects:*"]
---
kind: RoleBinding
role: runner
subject: {{ user: alice }}
---
kind: ToolPolicy
project: alpha
tool: alpha__add_note
class: mutation
---
kind: ToolPolicy
project: alpha
tool: alpha__delete_note
class: mutation
risk: dangerous
---
kind: ToolPolicy
project: alpha
tool: alpha__call_count
deny: "counting is private"
---
kind: ToolPolicy
project: alpha
tool: alpha__list_notes
class: read
strict: true
---
kind: KillSwitch
scope: {{ tool: alpha__add }}
reason: drill
"#,
        alpha = stdio_upstream("alpha", "alpha", ""),
        beta = stdio_upstream("beta", "beta", ""),
    )
}

/// What must be equal across transports: the result without ids, and the audit records of
/// the call (kind, decision, code, tool, rule).
async fn observe(w: &TestWarden, client: &Client, tool: &str, args: &str) -> (Value, Vec<Value>) {
    let result = call(client, tool, serde_json::from_str(args).unwrap()).await;
    // A refusal that records nothing (kill switch, invalid input) names no run.
    let records = match decision(&result)["runId"].as_str() {
        Some(run) => w
            .store
            .store
            .audit(&AuditFilter {
                run_id: Some(run.to_owned()),
                limit: Some(100_000),
                ..AuditFilter::default()
            })
            .await
            .unwrap(),
        None => Vec::new(),
    };
    let last_call = records.iter().rev().find_map(|r| r.record.call_id.clone());
    let trail = records
        .iter()
        .filter(|r| r.record.call_id.is_some() && r.record.call_id == last_call)
        .map(|r| {
            let payload: Value = serde_json::from_str(&r.record.payload).unwrap();
            json!({
                "kind": r.record.kind.as_str(),
                "decision": r.record.decision,
                "code": r.record.code,
                "tool": r.record.tool,
                "rule": payload.get("rule"),
                "step": payload.get("step"),
                "args_hash": payload.get("args_hash"),
            })
        })
        .collect();
    (without_ids(&result), trail)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_calls_over_http_and_stdio_give_the_same_decisions_records_and_results() {
    let w = TestWarden::start(&config()).await;
    let token = w.token("alice", Some(&["alpha"]), None).await;
    let http = http_client(&w.mcp(), &token, Era::Sessions).await;
    let stdio = stdio_client(&w.store_args(), &token, &[]).await;
    let handle = tokio::runtime::Handle::current();
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = proptest::collection::vec(0..CALLS.len(), 1..6);
    let result = runner.run(&strategy, |sequence| {
        tokio::task::block_in_place(|| {
            handle.block_on(async {
                for i in sequence {
                    let (tool, args) = CALLS[i];
                    let over_http = observe(&w, &http, tool, args).await;
                    let over_stdio = observe(&w, &stdio, tool, args).await;
                    prop_assert_eq!(&over_http.0, &over_stdio.0, "result of {} {}", tool, args);
                    prop_assert_eq!(
                        &over_http.1,
                        &over_stdio.1,
                        "audit records of {} {}",
                        tool,
                        args
                    );
                }
                Ok(())
            })
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// `warden serve` serves on several threads, each with its own socket on the one address; when
/// the server stops, every thread stops and the port is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_threads_answer_and_stop_with_the_server() {
    let w = TestWarden::start("").await;
    let addr = w.addr;
    // While it serves, the port is taken for anyone else (a second server is refused).
    assert!(std::net::TcpListener::bind(addr).is_err());
    warden_mcp::http_client::install_tls();
    let client = reqwest::Client::new();
    let asks = (0..16).map(|_| {
        let client = client.clone();
        let url = format!("{}/healthz", w.base);
        async move { client.get(url).send().await.unwrap().status() }
    });
    for status in futures::future::join_all(asks).await {
        assert_eq!(status, 200);
    }
    drop(w);
    // A bounded wait for the threads to close their sockets, not a timing assertion.
    for _ in 0..300 {
        if std::net::TcpListener::bind(addr).is_ok() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the port stayed in use after the server stopped");
}
