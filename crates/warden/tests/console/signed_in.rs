//! Signing in only through the sign-in form, and a token revoked in the console.

use std::time::Duration;

use serde_json::json;

use crate::browser::Chrome;
use crate::common::*;
use crate::config;

const REFUSED: &str =
    "forbidden: the form was sent without its security token; reload the page and try again";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_posted_without_its_csrf_token_is_refused_and_signs_nobody_in() {
    let w = TestWarden::start(&config()).await;
    let chrome = Chrome::start().await;
    chrome.goto(&format!("{}/sign-in", w.base)).await;
    chrome
        .wait_for("form.signin", Duration::from_secs(10))
        .await;
    // A valid token, posted without the form's anti-forgery token or with a wrong one (as
    // another site's page would post it): refused, and no session.
    chrome.post("/sign-in", &[("token", &w.admin)]).await;
    assert_eq!(chrome.text("body").await, REFUSED);
    assert!(!chrome.has_session().await);
    chrome.goto(&format!("{}/sign-in", w.base)).await;
    chrome
        .wait_for("form.signin", Duration::from_secs(10))
        .await;
    let wrong = "0".repeat(32);
    chrome
        .post("/sign-in", &[("_csrf", &wrong), ("token", &w.admin)])
        .await;
    assert_eq!(chrome.text("body").await, REFUSED);
    assert!(!chrome.has_session().await);
    chrome.goto(&format!("{}/", w.base)).await;
    chrome
        .wait_for("form.signin", Duration::from_secs(10))
        .await;
    assert_eq!(chrome.path().await, "/sign-in", "nobody is signed in");
    // The same to a plain HTTP client, with its status: 403 and no session cookie.
    warden_mcp::http_client::install_tls();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = http
        .post(format!("{}/sign-in", w.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={}", w.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.headers().get("set-cookie").is_none(), "{:?}", r.headers());
    assert_eq!(r.text().await.unwrap(), format!("{REFUSED}\n"));
    // Through the form, the same token signs in.
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    assert_eq!(chrome.path().await, "/");
    assert!(chrome.has_session().await);
    chrome.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_in_the_console_stops_working_over_mcp() {
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let id = w.gateway.authenticate(&alice).unwrap().id;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let echo = call(&client, "ledger__echo", json!({ "text": "hi" })).await;
    assert_eq!(decision(&echo)["status"], "executed", "{echo:?}");
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    chrome.goto(&format!("{}/tokens", w.base)).await;
    let row = format!("#tokens tr[data-token={id}]");
    chrome.wait_for(&row, Duration::from_secs(10)).await;
    chrome.confirm_everything().await;
    chrome.submit(&format!("{row} button")).await;
    assert_eq!(chrome.path().await, "/tokens");
    assert_eq!(chrome.text("p.flash").await, format!("Token {id} revoked."));
    assert!(chrome.exists(&format!("{row} .badge")).await);
    assert!(
        chrome.text(&row).await.contains("revoked"),
        "{}",
        chrome.text(&row).await
    );
    assert!(!chrome.exists(&format!("{row} button")).await);
    // The open MCP session's next call is refused, and so is a new request with the token.
    let refused = client
        .call_tool(rmcp::model::CallToolRequestParams::new("ledger__echo"))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    warden_mcp::http_client::install_tls();
    let r = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(&alice)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.text().await.unwrap(), "token revoked\n");
    chrome.quit().await;
}
