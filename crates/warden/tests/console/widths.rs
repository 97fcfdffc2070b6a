//! The console at ordinary sizes: no page scrolls sideways on a 420 px phone or a 1400 px
//! desktop, however long its values (rule names, hashes, arguments); a phone can approve; a
//! dark system gets a dark console.

use std::time::Duration;

use serde_json::json;

use crate::browser::Chrome;
use crate::common::*;
use crate::{config, park, status_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_scrolls_sideways_on_a_phone_or_a_desktop_and_a_phone_can_approve() {
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    // Long values without a place to break, where they show: arguments, tools, rules, hashes.
    let long = "refund-".repeat(40);
    call(&client, "ledger__echo", json!({ "text": long })).await;
    call(&client, &format!("ledger__{}", "x".repeat(120)), json!({})).await;
    call(&client, "ledger__refund", json!({ "amount": 5 })).await;
    let (id, run) = park(&client, &long).await;
    let _second = park(&client, "another").await;
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    let pages = [
        "/".to_owned(),
        "/approvals".into(),
        format!("/approvals/{id}"),
        "/runs".into(),
        format!("/runs/{run}"),
        "/audit?since=1h".into(),
        format!("/audit?since=1h&run={run}"),
        "/kill-switches".into(),
        "/explain?tool=ledger__add_note&arguments=%7B%22text%22%3A%22x%22%7D&user=carol".into(),
        "/tools".into(),
        "/agents".into(),
        "/tasks".into(),
        "/epics".into(),
        "/tokens".into(),
    ];
    let mut problems = Vec::new();
    for width in [420, 1400] {
        chrome.set_width(width).await;
        for path in &pages {
            chrome.goto(&format!("{}{path}", w.base)).await;
            chrome.wait_for("main h1", Duration::from_secs(10)).await;
            if let Some(o) = chrome.overflow().await {
                problems.push(format!("{width} px, {path}: {o}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "pages wider than the window:\n{}",
        problems.join("\n")
    );
    // On the phone, the Approve button is on screen and works.
    chrome.set_width(420).await;
    chrome.goto(&format!("{}/approvals", w.base)).await;
    let row = format!("#inbox-rows tr[data-approval={id}]");
    chrome.wait_for(&row, Duration::from_secs(10)).await;
    let approve = format!("{row} button[value=approve]");
    assert!(chrome.within_width(&approve).await, "Approve is off-screen");
    chrome.click(&approve).await;
    chrome
        .wait_for("#approval[data-status=executed]", Duration::from_secs(10))
        .await;
    assert_eq!(status_of(&w, &id).await, "executed");
    chrome.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dark_system_gets_a_dark_console() {
    let w = TestWarden::start(&config()).await;
    let chrome = Chrome::start_with(&["--force-dark-mode"]).await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    let background = chrome
        .b()
        .execute(
            "return getComputedStyle(document.documentElement).backgroundColor",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(background.as_str(), Some("rgb(18, 22, 32)"), "{background}");
    chrome.screenshot("overview-dark").await;
    chrome.quit().await;
}
