//! Notifications (NOTIFY-1) end to end: a receiver in the test is told of a parked call, signed
//! as documented, within a second; a 500 is tried again; decisions and kill switches — pulled
//! with the CLI on the store, with no request to the server — are told too.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use common::*;
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const SECRET: &str = "whsec-test-key";

/// What the receiver got.
#[derive(Debug)]
struct Got {
    signature: String,
    delivery: String,
    event: String,
    body: String,
    at: Instant,
}

/// A receiver answering with `answers` in turn (then 200), telling the test what it got.
async fn receiver(answers: Vec<u16>) -> (String, mpsc::UnboundedReceiver<Got>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let answers = Arc::new(Mutex::new(VecDeque::from(answers)));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let tx = tx.clone();
            let answers = answers.clone();
            async move {
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned()
                };
                let _ = tx.send(Got {
                    signature: header("warden-signature"),
                    delivery: header("warden-delivery"),
                    event: header("warden-event"),
                    body,
                    at: Instant::now(),
                });
                let code = answers.lock().unwrap().pop_front().unwrap_or(200);
                (StatusCode::from_u16(code).unwrap(), "receiver says no")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), rx)
}

/// What a receiver does with `Warden-Signature` (docs/notifications.md): refuse a time more
/// than five minutes away, then compare the HMAC of "<t>.<body>" under its key.
fn verify(secret: &str, header: &str, body: &str) -> Result<(), String> {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        if let Some(x) = part.strip_prefix("t=") {
            t = x.parse::<i64>().ok();
        } else if let Some(x) = part.strip_prefix("v1=") {
            v1 = Some(x.to_owned());
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return Err(format!("malformed signature `{header}`"));
    };
    if (now().0 / 1000 - t).abs() > 300 {
        return Err("too old".into());
    }
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if expected == v1 {
        Ok(())
    } else {
        Err("signature mismatch".into())
    }
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Got>, what: &str) -> Got {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap_or_else(|_| panic!("no delivery of {what} within 10 s"))
        .unwrap()
}

fn config(url: &str, events: &str, extra: &str) -> String {
    format!(
        r#"
kind: Project
name: payments
---
{ledger}
---
kind: ToolPolicy
project: payments
tool: ledger__add_note
class: mutation
risk: dangerous
---
kind: User
name: alice
---
kind: Role
name: writer
permissions: ["run:projects:payments"]
---
kind: RoleBinding
role: writer
subject: {{ user: alice }}
---
kind: Notifier
name: pager
url: "{url}"
secret: "${{secret:pager-hmac}}"
events: [{events}]
{extra}"#,
        ledger = stdio_upstream("ledger", "payments", ""),
    )
}

/// The notifier's key, where `${secret:pager-hmac}` is read from.
fn keep_secret(w: &TestWarden) {
    let warden_store::Location::DataDir(dir) = &w.store.location else {
        panic!("a data directory")
    };
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::write(dir.join("secrets/pager-hmac"), SECRET).unwrap();
}

fn warden(w: &TestWarden, args: &[&str]) -> std::process::Output {
    let out = cli(args, &w.store_args());
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `warden ARGS --server …` as the first admin.
fn on_server(w: &TestWarden, args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new(WARDEN)
        .args(args)
        .args(["--server", &w.base])
        .env("WARDEN_TOKEN", &w.admin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// NOTIFY-1: the acceptance's receiver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_is_told_signed_within_a_second_and_a_refused_delivery_is_tried_again() {
    let (url, mut rx) = receiver(vec![500]).await;
    let events = "approval.parked, approval.decided, killswitch.pulled, killswitch.released";
    let w = TestWarden::start(&config(&url, events, "")).await;
    keep_secret(&w);
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Stateless).await;

    let parked_at = Instant::now();
    let r = call(
        &client,
        "ledger__add_note",
        json!({"text": "refund 42 to acct_9"}),
    )
    .await;
    let id = decision(&r)["approvalId"].as_str().unwrap().to_owned();

    // The first attempt: within a second, signed, answered 500.
    let first = next(&mut rx, "approval.parked").await;
    assert!(
        first.at.duration_since(parked_at) < Duration::from_secs(1),
        "told after {:?}",
        first.at.duration_since(parked_at)
    );
    assert_eq!(first.event, "approval.parked");
    assert!(first.delivery.starts_with("dlv_"), "{first:?}");
    verify(SECRET, &first.signature, &first.body).unwrap();
    // A receiver with another key refuses it; so does one given an edited body.
    assert_eq!(
        verify("another-key", &first.signature, &first.body),
        Err("signature mismatch".into())
    );
    assert_eq!(
        verify(
            SECRET,
            &first.signature,
            &first.body.replace("alice", "mallory")
        ),
        Err("signature mismatch".into())
    );
    let body: Value = serde_json::from_str(&first.body).unwrap();
    assert_eq!(body["id"], first.delivery);
    assert_eq!(body["event"], "approval.parked");
    assert_eq!(body["subject"]["approval"], id);
    assert_eq!(body["subject"]["tool"], "ledger__add_note");
    assert_eq!(body["subject"]["project"], "payments");
    assert_eq!(body["subject"]["principal"], "user:alice");
    assert_eq!(body["link"], format!("{}/approvals/{id}", w.base));
    assert!(
        !first.body.contains("refund 42"),
        "argument values: {}",
        first.body
    );

    // The 500 is tried again: the same delivery, the same body, signed anew.
    let second = next(&mut rx, "the retry").await;
    assert_eq!(second.delivery, first.delivery);
    assert_eq!(second.body, first.body);
    verify(SECRET, &second.signature, &second.body).unwrap();
    assert!(second.at.duration_since(first.at) >= Duration::from_millis(900));

    // The outcome is recorded: the API shows it, and `warden get notifiers` the same on the
    // server and on the store.
    let mut shown = Value::Null;
    for _ in 0..50 {
        shown = reqwest::Client::new()
            .get(format!("{}/api/v1/notifiers", w.base))
            .bearer_auth(&w.admin)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if shown["items"][0]["delivered"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pager = &shown["items"][0];
    assert_eq!(pager["name"], "pager");
    assert_eq!(pager["delivered"], 1, "{shown}");
    let failure = &pager["lastFailures"][0];
    assert_eq!(failure["id"], first.delivery.as_str());
    assert_eq!(failure["status"], "delivered");
    assert_eq!(failure["attempts"], 2);
    assert!(
        failure["error"].as_str().unwrap().contains("500"),
        "{failure}"
    );
    let table = String::from_utf8(on_server(&w, &["get", "notifiers"]).stdout).unwrap();
    assert!(
        table.contains("LAST FAILURE") && table.contains("the receiver answered 500"),
        "{table}"
    );
    assert_eq!(
        String::from_utf8(warden(&w, &["get", "notifiers"]).stdout).unwrap(),
        table
    );
    // As JSON, a notifier is the resource as configured, to apply again.
    let configured: Value =
        serde_json::from_slice(&warden(&w, &["get", "notifiers", "-o", "json"]).stdout).unwrap();
    assert_eq!(configured[0]["kind"], "Notifier");
    assert_eq!(configured[0]["secret"], "${secret:pager-hmac}");

    // A decision is told.
    on_server(&w, &["approvals", "reject", &id, "--reason", "no"]);
    let decided = next(&mut rx, "approval.decided").await;
    let body: Value = serde_json::from_str(&decided.body).unwrap();
    assert_eq!(decided.event, "approval.decided");
    assert_eq!(
        (
            body["subject"]["approval"].as_str(),
            body["subject"]["decision"].as_str()
        ),
        (Some(id.as_str()), Some("reject"))
    );

    // A kill switch pulled and released with the CLI on the store, the server not asked: the
    // trail has it, so it is told.
    warden(&w, &["kill", "--project", "payments", "--reason", "drill"]);
    let pulled = next(&mut rx, "killswitch.pulled").await;
    let body: Value = serde_json::from_str(&pulled.body).unwrap();
    assert_eq!(pulled.event, "killswitch.pulled");
    assert_eq!(body["subject"]["key"], "project:payments");
    warden(&w, &["delete", "killswitch", "project:payments"]);
    let released = next(&mut rx, "killswitch.released").await;
    assert_eq!(released.event, "killswitch.released");
    verify(SECRET, &released.signature, &released.body).unwrap();

    // Nothing else, and nothing twice.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(rx.try_recv().is_err());
}

/// `approval.expiring`: told once a quarter of a parked call's time is left, on Warden's
/// clock (moved here, not waited for), and once only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_with_a_quarter_of_its_time_left_is_told_once() {
    let (url, mut rx) = receiver(vec![]).await;
    let clock = Arc::new(warden_testkit::memory::ManualClock::at(now()));
    let autonomy = "---\nkind: Autonomy\nsubject: { user: alice }\nlevel: 2\napprovalTtl: 1h\n";
    let w =
        TestWarden::start_with_clock(&config(&url, "approval.expiring", autonomy), clock.clone())
            .await;
    keep_secret(&w);
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Stateless).await;
    let r = call(&client, "ledger__add_note", json!({"text": "x"})).await;
    let id = decision(&r)["approvalId"].as_str().unwrap().to_owned();
    // With 40 minutes left, nothing; with 14, told.
    clock.advance(20 * 60 * 1000);
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), rx.recv())
            .await
            .is_err(),
        "told too early"
    );
    clock.advance(26 * 60 * 1000);
    let told = next(&mut rx, "approval.expiring").await;
    assert_eq!(told.event, "approval.expiring");
    let body: Value = serde_json::from_str(&told.body).unwrap();
    assert_eq!(body["subject"]["approval"], id);
    assert_eq!(body["subject"]["project"], "payments");
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), rx.recv())
            .await
            .is_err(),
        "told twice"
    );
}

/// `tool.quarantined`: an upstream tool whose definition changed between two starts is held
/// (GOV-9), and the notifier is told which, with the console's page of the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_tool_is_told() {
    let (url, mut rx) = receiver(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let definitions = dir.path().join("definitions.json");
    let file = definitions.display().to_string();
    let config = format!(
        "kind: Project\nname: demo\n---\n{}---\nkind: Notifier\nname: pager\nurl: \"{url}\"\nsecret: \"${{secret:pager-hmac}}\"\nevents: [tool.quarantined]\n",
        stdio_upstream_with("notes", "demo", &["--definitions", &file], ""),
    );
    let w = TestWarden::start(&config).await;
    keep_secret(&w);
    // The first pinning is no quarantine.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !w.store.store.pins().await.unwrap().pinned("notes") {
        assert!(Instant::now() < deadline, "never pinned");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::write(
        &definitions,
        json!({"echo": {"description": "Echo, changed"}}).to_string(),
    )
    .unwrap();
    let w = w.restart().await;
    let told = next(&mut rx, "tool.quarantined").await;
    assert_eq!(told.event, "tool.quarantined");
    verify(SECRET, &told.signature, &told.body).unwrap();
    let body: Value = serde_json::from_str(&told.body).unwrap();
    assert_eq!(body["subject"]["tool"], "notes__echo");
    assert_eq!(body["subject"]["upstream"], "notes");
    assert_eq!(body["subject"]["state"], "changed");
    assert_eq!(
        body["link"],
        format!("{}/tools/changes/notes__echo", w.base)
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(1000), rx.recv())
            .await
            .is_err(),
        "one tool changed, one delivery"
    );
}
