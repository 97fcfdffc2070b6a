//! Agent chat in the console: a thread started from a form, its tool calls and decisions, a
//! parked call approved from the console joining the thread; RUN-7 on every console route.

use serde_json::Value;
use warden_testkit::openai::{Reply, ScriptedModel};

use crate::common::*;
use crate::config;
use crate::plain::Plain;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_started_in_the_console_shows_its_calls_and_a_parked_call_approved_there() {
    let model = ScriptedModel::start(vec![
        Reply::call("c1", "ledger__echo", &[r#"{"text": "hi"}"#]),
        Reply::call("c2", "ledger__add_note", &[r#"{"text": "refund"}"#]),
        Reply::text("The note waits for an approval."),
        Reply::text("Thanks."),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "")).await;
    let alice = w.token("alice", None, None).await;
    let console = Plain::sign_in(&w, &alice).await;
    let (status, page) = console.get("/chat").await;
    assert_eq!(status, 200);
    assert!(page.contains(r#"<option value="helper""#), "{page}");
    // Nothing typed: refused beside the message, nothing started.
    let (status, page) = console
        .post("/chat", &[("agent", "helper"), ("message", " ")])
        .await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains(r#"data-field="message""#), "{page}");
    let (status, to) = console
        .post(
            "/chat",
            &[("agent", "helper"), ("message", "note a refund")],
        )
        .await;
    assert_eq!(status, 303, "{to}");
    let path = to.trim_end_matches("#end").to_owned();
    assert!(path.starts_with("/chat/thr_"), "{path}");
    let (status, page) = console.get(&path).await;
    assert_eq!(status, 200);
    for shown in [
        "note a refund",
        "ledger__echo",
        "ledger__add_note",
        "The note waits for an approval.",
        r#"class="card approval""#,
    ] {
        assert!(page.contains(shown), "{shown}: {page}");
    }
    let at = page
        .find(r#"href="/approvals/apr_"#)
        .expect("a link to the approval");
    let rest = &page[at + r#"href="/approvals/"#.len()..];
    let approval = rest[..rest.find('"').unwrap()].to_owned();
    // An operator approves it from the console.
    let operator = Plain::sign_in(&w, &w.admin).await;
    let (status, _) = operator
        .post(
            &format!("/approvals/{approval}/decide"),
            &[("verb", "approve"), ("reason", "checked")],
        )
        .await;
    assert_eq!(status, 303);
    let (_, page) = console.get(&path).await;
    assert!(page.contains(r#"data-role="notice""#), "{page}");
    assert!(page.contains("was executed"), "{page}");
    // The thread goes on from the console; the model is given the outcome.
    let (status, _) = console.post(&path, &[("message", "thanks")]).await;
    assert_eq!(status, 303);
    let last: Value = model.requests().pop().unwrap();
    let warden_said: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        warden_said.iter().any(|m| m.contains("was executed")),
        "{warden_said:?}"
    );
    let executed = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            tool: Some("ledger__add_note".into()),
            decision: Some("executed".into()),
            ..warden_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(executed.len(), 1, "executed once");
}

/// RUN-7 in the console: another principal's thread and a made-up id give the same status
/// and the same page on every route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_answers_anothers_thread_exactly_as_a_made_up_one() {
    let model = ScriptedModel::start(vec![Reply::text("Hello alice.")]).await;
    let w = TestWarden::start(&config(&model, "")).await;
    let alice = Plain::sign_in(&w, &w.token("alice", None, None).await).await;
    let (_, to) = alice
        .post("/chat", &[("agent", "helper"), ("message", "secret plans")])
        .await;
    let id = to
        .trim_start_matches("/chat/")
        .trim_end_matches("#end")
        .to_owned();
    let made_up = format!("thr_{}", "e".repeat(id.len() - 4));
    let bob = Plain::sign_in(&w, &w.token("bob", None, None).await).await;
    let (status, mine) = bob.get("/chat").await;
    assert_eq!(status, 200);
    assert!(!mine.contains(&id), "alice's thread is not listed for bob");
    let (theirs, nobodys) = (
        bob.get(&format!("/chat/{id}")).await,
        bob.get(&format!("/chat/{made_up}")).await,
    );
    assert_eq!(theirs.0, 404);
    assert_eq!(theirs, nobodys);
    let (theirs, nobodys) = (
        bob.post(&format!("/chat/{id}"), &[("message", "mine now")])
            .await,
        bob.post(&format!("/chat/{made_up}"), &[("message", "mine now")])
            .await,
    );
    assert_eq!(theirs.0, 404);
    assert_eq!(theirs, nobodys);
    let (theirs, nobodys) = (
        bob.post(&format!("/chat/{id}/delete"), &[]).await,
        bob.post(&format!("/chat/{made_up}/delete"), &[]).await,
    );
    assert_eq!(theirs.0, 404);
    assert_eq!(theirs, nobodys);
    let (status, page) = alice.get(&format!("/chat/{id}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("secret plans"));
    assert_eq!(model.requests().len(), 1);
}

/// The console's script streams a turn from `…/events` (with the form's anti-forgery field):
/// the same events as the API's; a refusal is its status and one line, for the script to post
/// the form itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_streams_a_turn_as_events_for_its_script() {
    let model = ScriptedModel::start(vec![
        Reply::Text(vec!["Hel".into(), "lo.".into()]),
        Reply::text("Again."),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "")).await;
    let console = Plain::sign_in(&w, &w.token("alice", None, None).await).await;
    let (status, stream) = console
        .post("/chat/events", &[("agent", "helper"), ("message", "hi")])
        .await;
    assert_eq!(status, 200, "{stream}");
    let names: Vec<&str> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("event:"))
        .map(str::trim)
        .collect();
    assert_eq!(names, ["thread", "delta", "delta", "done"], "{stream}");
    let id = stream
        .split('"')
        .find(|s| s.starts_with("thr_"))
        .unwrap()
        .to_owned();
    let (status, stream) = console
        .post(&format!("/chat/{id}/events"), &[("message", "again")])
        .await;
    assert_eq!(status, 200);
    assert!(stream.contains("Again."), "{stream}");
    let (status, line) = console
        .post("/chat/events", &[("agent", "helper"), ("message", "")])
        .await;
    assert_eq!(status, 400);
    assert!(line.contains("say something"), "{line}");
    // Without the form's anti-forgery field, nothing runs.
    let forged = reqwest::Client::new()
        .post(format!("{}/chat/events", w.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("agent=helper&message=hi")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    assert_eq!(model.requests().len(), 2);
}

/// In a browser, a turn streams into the thread's page while the model still writes (its
/// first words show before the rest is sent), then the page shows the thread as stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_streams_into_the_page_in_a_browser() {
    use std::time::{Duration, Instant};
    let model = ScriptedModel::start(vec![
        Reply::text("First."),
        Reply::Held(vec!["Streaming ".into(), "done.".into()]),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "")).await;
    let alice = w.token("alice", None, None).await;
    let plain = Plain::sign_in(&w, &alice).await;
    let (_, to) = plain
        .post("/chat", &[("agent", "helper"), ("message", "hi")])
        .await;
    let path = to.trim_end_matches("#end").to_owned();
    let chrome = crate::browser::Chrome::start().await;
    chrome.sign_in(&w, &alice).await;
    chrome.goto(&format!("{}{path}", w.base)).await;
    chrome.mark().await;
    chrome
        .fill("form#send textarea[name=message]", "go on")
        .await;
    chrome.click("form#send button[type=submit]").await;
    chrome.wait_for("#live", Duration::from_secs(10)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let streamed = loop {
        let shown = chrome.text("#messages").await;
        if shown.contains("Streaming") {
            break shown;
        }
        assert!(Instant::now() < deadline, "nothing streamed: {shown}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!streamed.contains("done."), "the rest is held: {streamed}");
    assert!(chrome.marked().await, "the page streamed in place");
    model.release();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if !chrome.marked().await && chrome.text("#messages").await.contains("Streaming done.") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the thread's page did not follow"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(chrome.path().await, path);
    chrome.screenshot("chat").await;
    chrome.quit().await;
}
