//! Sessions on any replica (STORE-3): a 2025-11-25 session opened on one server is served by
//! every other on the same store, still belongs to the credential that opened it, and ends
//! for all when it is ended; on the embedded default it outlives a restart.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use common::*;
use serde_json::{Value, json};

const CONFIG: &str = "kind: Project\nname: demo\n---\nkind: ToolPolicy\nproject: demo\ntool: notes__add_note\nclass: mutation\n";

fn config() -> String {
    format!("{CONFIG}---\n{}", stdio_upstream("notes", "demo", ""))
}

/// A JSON-RPC request on `session` of `w`, as `token`: the HTTP status and the last message.
async fn on(w: &TestWarden, token: &str, session: &str, body: Value) -> (u16, Option<Value>) {
    let response = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, (status == 200).then(|| last_message(&text)))
}

fn list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

fn add_note(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "notes__add_note", "arguments": {"text": text}}})
}

fn tool_names(message: &Value) -> Vec<String> {
    message["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {message}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn delete(w: &TestWarden, token: &str, session: &str) -> u16 {
    reqwest::Client::new()
        .delete(w.mcp())
        .bearer_auth(token)
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_replica_is_served_by_another() {
    let Some(pg) = warden_testkit::postgres_store().await else {
        return;
    };
    let a = TestWarden::start_on(pg, &config()).await;
    let b = a.replica().await;
    let session = open_session(&a, &a.admin).await;
    // Every request lands on the other replica, which has never seen the session.
    let (status, listed) = on(&b, &b.admin, &session, list(2)).await;
    assert_eq!(status, 200);
    assert!(tool_names(&listed.unwrap()).contains(&"notes__add_note".to_owned()));
    let (status, added) = on(&b, &b.admin, &session, add_note(3, "from b")).await;
    assert_eq!(status, 200);
    let added = added.unwrap();
    assert_eq!(added["result"]["isError"], false, "{added}");
    // …and back on the first, in the same run: one session is one run on every replica.
    let (status, again) = on(&a, &a.admin, &session, add_note(4, "from a")).await;
    assert_eq!(status, 200);
    let run = |m: &Value| m["result"]["_meta"]["warden/decision"]["runId"].clone();
    assert!(run(&added).is_string(), "{added}");
    assert_eq!(run(&again.unwrap()), run(&added));
    // The session still belongs to the credential that opened it, on every replica.
    let other = a.token("admin", None, None).await;
    let c = a.replica().await;
    assert_eq!(on(&c, &other, &session, list(5)).await.0, 404);
    assert_eq!(delete(&c, &other, &session).await, 404);
    assert_eq!(on(&c, &a.admin, &session, list(6)).await.0, 200);
    // Ended on one replica, it is unknown to a replica that has not served it.
    assert_eq!(delete(&b, &b.admin, &session).await, 200);
    let d = a.replica().await;
    assert_eq!(on(&d, &d.admin, &session, list(7)).await.0, 404);
    assert_eq!(a.store.store.mcp_session(&session).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_outlives_a_restart_of_the_embedded_default() {
    let w = TestWarden::start(&config()).await;
    let session = open_session(&w, &w.admin).await;
    assert_eq!(on(&w, &w.admin, &session, list(2)).await.0, 200);
    let w = w.restart().await;
    let (status, listed) = on(&w, &w.admin, &session, list(3)).await;
    assert_eq!(status, 200);
    assert!(tool_names(&listed.unwrap()).contains(&"notes__add_note".to_owned()));
    // An id no server ever gave is still unknown.
    assert_eq!(on(&w, &w.admin, "no-such-session", list(4)).await.0, 404);
}
