//! Rejecting a parked call and vetoing a staged one in the inbox, whose deadline counts down
//! in the open page.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::browser::Chrome;
use crate::common::*;
use crate::{config, park, status_of};

/// How many calls reached the fixture upstream.
async fn calls_executed(client: &Client) -> u64 {
    let r = call(client, "ledger__call_count", json!({})).await;
    r.structured_content.unwrap()["calls"].as_u64().unwrap()
}

/// The seconds a countdown (`runs in 9m 58s`) shows.
fn seconds_left(countdown: &str) -> u64 {
    let rest = countdown
        .strip_prefix("runs in ")
        .unwrap_or_else(|| panic!("not a countdown to execution: `{countdown}`"));
    rest.split(' ')
        .map(|part| {
            let (n, unit) = part.split_at(part.len() - 1);
            let n: u64 = n.parse().unwrap_or_else(|_| panic!("`{countdown}`"));
            match unit {
                "m" => n * 60,
                "s" => n,
                _ => panic!("`{countdown}`"),
            }
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_rejected_in_the_inbox_never_runs_and_its_page_says_who_and_why() {
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let (id, _) = park(&client, "refund 45").await;
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    chrome.goto(&format!("{}/approvals", w.base)).await;
    let row = format!("#inbox-rows tr[data-approval={id}]");
    chrome.wait_for(&row, Duration::from_secs(10)).await;
    // A parked call is approved or rejected; only a staged one is vetoed.
    assert!(chrome.exists(&format!("{row} button[value=reject]")).await);
    assert!(!chrome.exists(&format!("{row} button[value=veto]")).await);
    chrome
        .fill(&format!("{row} input[name=reason]"), "wrong amount")
        .await;
    chrome.submit(&format!("{row} button[value=reject]")).await;
    chrome
        .wait_for("#approval[data-status=rejected]", Duration::from_secs(10))
        .await;
    assert_eq!(chrome.path().await, format!("/approvals/{id}"));
    assert_eq!(
        chrome.text("p.flash").await,
        "Rejected: the call will not run."
    );
    let facts = chrome.text("#approval").await;
    assert!(
        facts.contains("by user:admin — “wrong amount”"),
        "who and why: {facts}"
    );
    assert!(
        facts.contains("APPROVAL_REJECTED rejected by user:admin"),
        "the outcome: {facts}"
    );
    assert!(
        !chrome.exists("form.decide").await,
        "nothing left to decide"
    );
    assert_eq!(status_of(&w, &id).await, "rejected");
    assert_eq!(calls_executed(&client).await, 0, "nothing was executed");
    // The inbox no longer offers it.
    chrome.goto(&format!("{}/approvals", w.base)).await;
    chrome
        .wait_for("#live[data-state=live]", Duration::from_secs(10))
        .await;
    assert!(!chrome.exists(&row).await);
    chrome.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_call_counts_down_in_the_open_inbox_and_a_veto_stops_it() {
    let w = TestWarden::start(&config()).await;
    let erin = w.token("erin", None, None).await;
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    chrome.goto(&format!("{}/approvals", w.base)).await;
    chrome
        .wait_for("#live[data-state=live]", Duration::from_secs(10))
        .await;
    chrome.mark().await;
    // Erin acts at autonomy level 3: her dangerous call is staged for its veto window.
    let client = http_client(&w.mcp(), &erin, Era::Sessions).await;
    let staged = call(&client, "ledger__add_note", json!({ "text": "staged" })).await;
    let d = decision(&staged);
    assert_eq!(d["status"], "pending_approval", "{staged:?}");
    let id = d["approvalId"].as_str().unwrap().to_owned();
    assert_eq!(status_of(&w, &id).await, "staged");
    let row = format!("#inbox-rows tr[data-approval={id}]");
    chrome.wait_for(&row, Duration::from_secs(10)).await;
    assert!(chrome.marked().await, "the page was reloaded");
    assert_eq!(chrome.path().await, "/approvals");
    assert!(chrome.exists(&format!("{row}[data-status=staged]")).await);
    let text = chrome.text(&row).await;
    assert!(text.contains("user:erin"), "{text}");
    // Its deadline counts down to execution, in the page, without a reload.
    let countdown = format!("{row} .countdown[data-verb=runs]");
    let first = seconds_left(&chrome.text(&countdown).await);
    assert!((590..=600).contains(&first), "{first}s left of 10 minutes");
    let since = Instant::now();
    let later = loop {
        let left = seconds_left(&chrome.text(&countdown).await);
        if left < first {
            break left;
        }
        assert!(
            since.elapsed() < Duration::from_secs(5),
            "the countdown stayed at {left}s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(later >= first - 5, "{first}s, then {later}s");
    assert!(chrome.marked().await, "the page was reloaded");
    // A staged call is vetoed, not approved or rejected.
    assert!(!chrome.exists(&format!("{row} button[value=approve]")).await);
    assert!(!chrome.exists(&format!("{row} button[value=reject]")).await);
    chrome
        .fill(
            &format!("{row} input[name=reason]"),
            "not during the freeze",
        )
        .await;
    chrome.submit(&format!("{row} button[value=veto]")).await;
    chrome
        .wait_for("#approval[data-status=vetoed]", Duration::from_secs(10))
        .await;
    assert_eq!(
        chrome.text("p.flash").await,
        "Vetoed: the staged call will not run."
    );
    let facts = chrome.text("#approval").await;
    assert!(
        facts.contains("by user:admin — “not during the freeze”"),
        "{facts}"
    );
    assert!(facts.contains("VETOED vetoed by user:admin"), "{facts}");
    assert_eq!(status_of(&w, &id).await, "vetoed");
    assert_eq!(calls_executed(&client).await, 0, "nothing was executed");
    chrome.quit().await;
}

/// Issue 45 (observed: every live update replaced every row, wiping a half-typed reason and
/// the keyboard focus whenever another call parked): the inbox updates its rows in place and
/// never touches the row being edited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reason_being_typed_survives_another_call_parking() {
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let (first, _) = park(&client, "refund 45").await;
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    chrome.goto(&format!("{}/approvals", w.base)).await;
    let row = format!("#inbox-rows tr[data-approval={first}]");
    chrome.wait_for(&row, Duration::from_secs(10)).await;
    let reason = format!("{row} input[name=reason]");
    chrome.click(&reason).await;
    chrome.fill(&reason, "half-typ").await;
    let (second, _) = park(&client, "refund 46").await;
    chrome
        .wait_for(
            &format!("#inbox-rows tr[data-approval={second}]"),
            Duration::from_secs(10),
        )
        .await;
    let kept = chrome
        .b()
        .execute(
            "var input = document.querySelector(arguments[0]); \
             return [input.value, document.activeElement === input];",
            vec![json!(reason)],
        )
        .await
        .unwrap();
    assert_eq!(kept, json!(["half-typ", true]));
    chrome.quit().await;
}
