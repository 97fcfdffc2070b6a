//! Upstream tasks (the tasks extension, SEP-2663; XPORT-4): a call an upstream runs as a
//! task reaches a client that declares the extension as a task under Warden's id, which only
//! its caller can follow (`tasks/get`, `tasks/cancel`), in the upstream's either era.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A 2026-07-28 request over HTTP as `token`, declaring the tasks extension or not; the answer.
async fn send(
    w: &TestWarden,
    token: &str,
    method: &str,
    name: &str,
    mut params: Value,
    tasks: bool,
) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {TASKS: {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks", "version": "1"}
    });
    warden_mcp::http_client::install_tls();
    let response = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    last_message(&response.text().await.unwrap())
}

async fn task_get(w: &TestWarden, token: &str, id: &str) -> Value {
    send(w, token, "tasks/get", id, json!({"taskId": id}), true).await
}

/// Warden in front of the conformance fixture over HTTP, its era negotiated or `pin`ned.
async fn fixture_warden(pin: &str) -> (TestWarden, tokio_util::sync::CancellationToken) {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(warden_testkit::conformance::serve_http(
        listener,
        shutdown.clone(),
        warden_testkit::conformance::Asking::Natively,
    ));
    let w = TestWarden::start(&format!(
        "kind: Project\nname: conf\n---\nkind: Upstream\nname: conf\nproject: conf\nprefix: \"\"\n{pin}\
         http: {{ url: \"http://{addr}/mcp\" }}\n---\nkind: ToolPolicy\nproject: conf\ntool: \"*\"\n\
         class: mutation\nrisk: ordinary\n"
    ))
    .await;
    (w, shutdown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_task_is_followed_by_its_caller_only_in_either_era() {
    for pin in ["", "protocol: \"2025-11-25\"\n"] {
        let (w, _fixture) = fixture_warden(pin).await;
        let args = json!({"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "t"}});

        // Without the extension the upstream answers the call itself.
        let plain = send(
            &w,
            &w.admin,
            "tools/call",
            "slow_compute",
            args.clone(),
            false,
        )
        .await;
        assert_eq!(plain["result"]["resultType"], "complete", "{pin}: {plain}");

        let created = send(
            &w,
            &w.admin,
            "tools/call",
            "slow_compute",
            args.clone(),
            true,
        )
        .await;
        let result = &created["result"];
        assert_eq!(result["resultType"], "task", "{pin}: {created}");
        let id = result["taskId"].as_str().unwrap().to_owned();
        assert!(id.starts_with("wtk.conf."), "{pin}: {created}");

        // Another credential, a changed id and a made-up one: unknown, alike.
        let other = w.token("admin", None, None).await;
        for (token, asked) in [
            (other.as_str(), id.clone()),
            (w.admin.as_str(), format!("{id}0")),
            (w.admin.as_str(), "wtk.conf.bm9wZQ.00".to_owned()),
        ] {
            let refused = task_get(&w, token, &asked).await;
            assert_eq!(refused["error"]["code"], -32602, "{pin}: {refused}");
            assert_eq!(
                refused["error"]["message"],
                format!("unknown task `{asked}`"),
                "{pin}: {refused}"
            );
        }

        let mut done = Value::Null;
        for _ in 0..50 {
            done = task_get(&w, &w.admin, &id).await;
            if done["result"]["status"] == "completed" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let task = &done["result"];
        assert_eq!(task["taskId"], id, "{pin}: {done}");
        assert_eq!(task["status"], "completed", "{pin}: {done}");
        assert_eq!(
            task["result"]["content"][0]["text"], "computed t in 0.3s",
            "{pin}: {done}"
        );

        // A long one, cancelled by its caller.
        let long = json!({"name": "slow_compute", "arguments": {"seconds": 60, "label": "c"}});
        let created = send(&w, &w.admin, "tools/call", "slow_compute", long, true).await;
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        let ack = send(
            &w,
            &w.admin,
            "tasks/cancel",
            &id,
            json!({"taskId": id}),
            true,
        )
        .await;
        assert_eq!(ack["result"]["resultType"], "complete", "{pin}: {ack}");
        let mut status = Value::Null;
        for _ in 0..50 {
            status = task_get(&w, &w.admin, &id).await["result"]["status"].clone();
            if status == "cancelled" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(status, "cancelled", "{pin}");

        // The call that made the task is recorded as such.
        let recorded = cli(
            &["audit", "--tool", "slow_compute", "-o", "json"],
            &w.store_args(),
        );
        let recorded = String::from_utf8_lossy(&recorded.stdout).to_string();
        assert!(
            recorded.contains("\"decision\":\"task\""),
            "{pin}: {recorded}"
        );
    }
}
