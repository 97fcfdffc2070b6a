//! The web console end to end, in headless Chromium driven over WebDriver (Debian's
//! `chromium` and `chromium-driver`; OPS-5): sign-in, the live approvals inbox, deciding under
//! APR-4, kill switches, anti-forgery, and every page — whose screenshots become
//! `docs/console/*.png`. Rejecting and vetoing are in `console/decisions.rs`; sign-in's
//! anti-forgery and revoking a token in `console/signed_in.rs`; the browser in
//! `console/browser.rs`.
//!
//! Without `/usr/bin/chromedriver` these tests fail (they never skip): install
//! `apt-get install -y chromium chromium-driver`. `WARDEN_CHROMEDRIVER` and `WARDEN_CHROMIUM`
//! name other binaries.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

#[path = "console/browser.rs"]
mod browser;
#[path = "console/decisions.rs"]
mod decisions;
#[path = "console/doors.rs"]
mod doors;
#[path = "console/forms.rs"]
mod forms;
#[path = "console/overview.rs"]
mod overview;
#[path = "console/plain.rs"]
mod plain;
#[path = "console/signed_in.rs"]
mod signed_in;
#[path = "console/widths.rs"]
mod widths;

use std::time::Duration;

use browser::Chrome;
use common::*;
use fantoccini::Locator;
use serde_json::json;
use warden_core::config::Kind;

pub(crate) fn config() -> String {
    format!(
        r#"
kind: Project
name: payments
instructions: "How payments work here."
---
{ledger}
---
kind: ToolPolicy
project: payments
tool: ledger__add_note
class: mutation
capability: ledger:write
risk: dangerous
---
kind: ToolPolicy
project: payments
tool: ledger__echo
class: mutation
risk: ordinary
---
kind: User
name: alice
---
kind: User
name: carol
---
kind: User
name: dave
---
kind: Role
name: writer
permissions: ["run:projects:payments", "ledger:write", "tasks:read", "tasks:create"]
---
kind: User
name: erin
---
kind: Autonomy
subject: {{ user: erin }}
level: 3
vetoWindow: 10m
---
kind: Role
name: approver
permissions: ["approvals:decide"]
---
kind: Role
name: runner
permissions: ["run:projects:payments"]
---
kind: RoleBinding
role: writer
subject: {{ user: alice }}
---
kind: RoleBinding
role: writer
subject: {{ user: carol }}
---
kind: RoleBinding
role: writer
subject: {{ user: erin }}
---
kind: RoleBinding
role: runner
subject: {{ user: dave }}
---
kind: RoleBinding
role: approver
subject: {{ user: dave }}
---
kind: Agent
name: sre-bot
instructions: "You are the SRE reviewer."
memberships: [payments]
schedules: [ {{ cron: "0 3 * * *", runner: {{ command: "/bin/true" }} }} ]
---
kind: Workspace
name: web-board
mode: kanban
project: payments
"#,
        ledger = stdio_upstream("ledger", "payments", ""),
    )
}

/// Parks a call of `ledger__add_note` (dangerous: parked at the default level 2) as `client`.
pub(crate) async fn park(client: &Client, text: &str) -> (String, String) {
    let r = call(client, "ledger__add_note", json!({ "text": text })).await;
    let d = decision(&r);
    assert_eq!(d["status"], "pending_approval", "{r:?}");
    (
        d["approvalId"].as_str().unwrap().to_owned(),
        d["runId"].as_str().unwrap().to_owned(),
    )
}

pub(crate) async fn status_of(w: &TestWarden, id: &str) -> String {
    w.store
        .store
        .approval(id)
        .await
        .unwrap()
        .unwrap()
        .status
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_parked_by_a_client_appears_in_the_inbox_live_and_approving_it_executes_it() {
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    assert_eq!(chrome.path().await, "/");
    chrome.goto(&format!("{}/approvals", w.base)).await;
    chrome
        .wait_for("#live[data-state=live]", Duration::from_secs(10))
        .await;
    assert!(chrome.exists("#inbox-rows tr.empty").await);
    // A client parks a call; the open page shows it without a reload (the marker set on the
    // page's `window` before survives).
    chrome.mark().await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let (id, run) = park(&client, "refund 42").await;
    let row = format!("#inbox-rows tr[data-approval={id}]");
    chrome.wait_for(&row, Duration::from_secs(10)).await;
    assert!(chrome.marked().await, "the page was reloaded");
    let text = chrome.text(&row).await;
    assert!(text.contains("ledger__add_note"), "{text}");
    assert!(text.contains("user:alice"), "{text}");
    assert!(text.contains("refund 42"), "the arguments: {text}");
    assert!(text.contains("expires in"), "the countdown: {text}");
    assert_eq!(chrome.path().await, "/approvals", "no navigation happened");
    chrome.screenshot("approvals").await;
    // Approve it, with a reason.
    chrome
        .fill(&format!("{row} input[name=reason]"), "checked the amount")
        .await;
    chrome.click(&format!("{row} button[value=approve]")).await;
    chrome
        .wait_for("#approval[data-status=executed]", Duration::from_secs(10))
        .await;
    assert_eq!(status_of(&w, &id).await, "executed");
    assert_eq!(
        chrome.text("p.flash").await,
        "Approved: the call was executed."
    );
    let facts = chrome.text("#approval").await;
    assert!(facts.contains("by user:admin"), "{facts}");
    assert!(facts.contains("checked the amount"), "{facts}");
    chrome.screenshot("approval").await;
    // Its run's trail shows the call parked, approved and executed.
    chrome.click(&format!("a[href='/runs/{run}']")).await;
    chrome
        .wait_for("#calls tr[data-outcome=executed]", Duration::from_secs(10))
        .await;
    let trail = chrome.text("table.trail").await;
    for needle in ["park", "approve", "executed", "approval:", "autonomy"] {
        assert!(trail.contains(needle), "`{needle}` in the trail: {trail}");
    }
    chrome.screenshot("run").await;
    chrome.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_who_could_perform_the_action_but_may_not_approve_is_refused_by_the_server() {
    let w = TestWarden::start(&config()).await;
    let (alice, carol, dave) = (
        w.token("alice", None, None).await,
        w.token("carol", None, None).await,
        w.token("dave", None, None).await,
    );
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let (id, _) = park(&client, "refund 43").await;
    let chrome = Chrome::start().await;
    // Carol could make this very call (writer) but holds no `approvals:decide`: the inbox
    // shows her no one else's approvals and no button; a forged form is refused all the same.
    chrome.sign_in(&w, &carol).await;
    chrome.goto(&format!("{}/approvals", w.base)).await;
    chrome
        .wait_for("#inbox-rows", Duration::from_secs(10))
        .await;
    assert!(!chrome.exists(&format!("tr[data-approval={id}]")).await);
    assert!(!chrome.exists("button[value=approve]").await);
    let csrf = chrome.csrf().await;
    chrome
        .post(
            &format!("/approvals/{id}/decide"),
            &[("_csrf", &csrf), ("verb", "approve")],
        )
        .await;
    assert_eq!(
        chrome.text("p.refusal[data-status='403']").await,
        "deciding approvals needs the approvals:decide capability"
    );
    // Names in a message show as code, not between backticks.
    assert_eq!(chrome.text("p.refusal code").await, "approvals:decide");
    assert_eq!(status_of(&w, &id).await, "pending");
    chrome.sign_out().await;
    // Dave may approve but could not perform the call (no `ledger:write`): he sees the button,
    // and the server refuses him when he presses it.
    chrome.sign_in(&w, &dave).await;
    chrome.goto(&format!("{}/approvals", w.base)).await;
    let row = format!("#inbox-rows tr[data-approval={id}]");
    chrome.wait_for(&row, Duration::from_secs(10)).await;
    chrome.click(&format!("{row} button[value=approve]")).await;
    chrome
        .wait_for("p.refusal[data-status='403']", Duration::from_secs(10))
        .await;
    assert_eq!(
        chrome.text("p.refusal").await,
        "your own authority does not cover ledger__add_note with these arguments, so you may not decide on it"
    );
    assert_eq!(status_of(&w, &id).await, "pending");
    assert_eq!(
        call(&client, "ledger__call_count", json!({}))
            .await
            .structured_content
            .unwrap()["calls"],
        0,
        "nothing was executed"
    );
    chrome.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_switch_pulled_in_the_console_stops_a_connected_clients_next_call() {
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let echo = || call(&client, "ledger__echo", json!({ "text": "hi" }));
    assert_eq!(decision(&echo().await)["status"], "executed");
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    chrome.goto(&format!("{}/kill-switches", w.base)).await;
    chrome
        .b()
        .find(Locator::Css("#pull select[name=scope] option[value=tool]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    chrome
        .fill("#pull input[name=target]", "ledger__echo")
        .await;
    chrome
        .fill("#pull input[name=reason]", "incident 4411")
        .await;
    // Pulling asks first (what it asks: console/signed_in.rs).
    chrome.confirm_everything().await;
    chrome.click("#pull button").await;
    chrome
        .wait_for("tr[data-kill='tool:ledger__echo']", Duration::from_secs(10))
        .await;
    assert_eq!(
        chrome.text("p.flash").await,
        "Kill switch tool:ledger__echo pulled."
    );
    chrome.screenshot("kill-switches").await;
    // The connected client's very next call is refused.
    let refused = echo().await;
    let d = decision(&refused);
    assert_eq!(d["status"], "denied", "{refused:?}");
    assert_eq!(d["code"], "KILL_SWITCH", "{refused:?}");
    assert_eq!(refused.is_error, Some(true));
    // Released (which asks first too), it runs again.
    chrome.confirm_everything().await;
    chrome
        .submit("tr[data-kill='tool:ledger__echo'] button")
        .await;
    assert_eq!(
        chrome.text("p.flash").await,
        "Kill switch tool:ledger__echo released."
    );
    assert!(!chrome.exists("tr[data-kill]").await);
    assert_eq!(decision(&echo().await)["status"], "executed");
    chrome.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_posted_without_its_csrf_token_is_refused_and_changes_nothing() {
    let w = TestWarden::start(&config()).await;
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    chrome.goto(&format!("{}/kill-switches", w.base)).await;
    let form = [("scope", "all"), ("reason", "forged")];
    chrome.post("/kill-switches", &form).await;
    let refused =
        "forbidden: the form was sent without its security token; reload the page and try again";
    assert_eq!(chrome.text("body").await, refused);
    chrome
        .post(
            "/kill-switches",
            &[
                ("_csrf", "0".repeat(64).as_str()),
                ("scope", "all"),
                ("reason", "forged"),
            ],
        )
        .await;
    assert_eq!(chrome.text("body").await, refused);
    w.settle().await;
    let kill_switches = || {
        w.gateway
            .snapshot()
            .policy
            .config
            .of_kind(Kind::KillSwitch)
            .count()
    };
    assert_eq!(kill_switches(), 0, "nothing was pulled");
    // The same answer, with its status, to a plain HTTP client holding the session cookie;
    // with the page's token the same form is accepted.
    chrome.goto(&format!("{}/kill-switches", w.base)).await;
    let (cookie, csrf) = (chrome.session_cookie().await, chrome.csrf().await);
    warden_mcp::http_client::install_tls();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let send = |body: String| {
        http.post(format!("{}/kill-switches", w.base))
            .header("cookie", format!("warden_session={cookie}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let r = send("scope=all&reason=forged".into()).await.unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(kill_switches(), 0);
    let r = send(format!("_csrf={csrf}&scope=all&reason=drill"))
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    w.settle().await;
    assert_eq!(kill_switches(), 1, "the form with its token is accepted");
    chrome.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_cannot_sign_in_and_a_revoked_tokens_session_ends() {
    let w = TestWarden::start(&config()).await;
    let carol = w.token("carol", None, None).await;
    let chrome = Chrome::start().await;
    chrome.goto(&format!("{}/approvals", w.base)).await;
    chrome
        .wait_for("form.signin", Duration::from_secs(10))
        .await;
    assert_eq!(
        chrome.path().await,
        "/sign-in",
        "no session: the sign-in page"
    );
    chrome.screenshot("sign-in").await;
    chrome.sign_in(&w, &format!("wdn_{}", "0".repeat(64))).await;
    chrome.wait_for("p.refusal", Duration::from_secs(10)).await;
    assert_eq!(
        chrome.text("p.refusal").await,
        "That token was not accepted: invalid token."
    );
    assert!(
        chrome
            .b()
            .get_all_cookies()
            .await
            .unwrap()
            .iter()
            .all(|c| c.name() != "warden_session")
    );
    chrome.sign_in(&w, &carol).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    assert_eq!(chrome.path().await, "/");
    assert_eq!(chrome.text("form.signout .who").await, "user:carol");
    // The session cookie is out of the page's scripts' reach.
    let visible = chrome
        .b()
        .execute("return document.cookie", vec![])
        .await
        .unwrap();
    assert!(
        !visible.as_str().unwrap_or("").contains("warden_session"),
        "{visible}"
    );
    let cookie = chrome
        .b()
        .get_all_cookies()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.name() == "warden_session")
        .unwrap();
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(format!("{:?}", cookie.same_site()), "Some(Strict)");
    chrome.goto(&format!("{}/approvals", w.base)).await;
    chrome
        .wait_for("#live[data-state=live]", Duration::from_secs(10))
        .await;
    // Revoking the token ends the session at its next request.
    let id = w
        .store
        .store
        .credentials()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.principal.to_string() == "user:carol")
        .unwrap()
        .id;
    assert!(
        w.store
            .store
            .revoke_token(&id, "test", now())
            .await
            .unwrap()
    );
    w.settle().await;
    // The live stream ends too.
    chrome
        .wait_for("#live[data-state=lost]", Duration::from_secs(10))
        .await;
    chrome.goto(&format!("{}/approvals", w.base)).await;
    chrome
        .wait_for("form.signin", Duration::from_secs(10))
        .await;
    assert_eq!(chrome.path().await, "/sign-in?ended=revoked");
    assert_eq!(
        chrome.text("p.flash").await,
        "Your session ended: its token was revoked."
    );
    chrome.quit().await;
}

/// Every page's path, the id of an element it must show, and its screenshot's name.
const PAGES: [(&str, &str, &str); 12] = [
    ("/", "#upstreams", "overview"),
    ("/runs", "#runs", "runs"),
    ("/audit?since=1h", "#audit-search", "audit"),
    ("/kill-switches", "#pull", ""),
    (
        "/explain?tool=ledger__add_note&arguments=%7B%22text%22%3A%22refund%22%7D&user=carol",
        "#explanation",
        "explain",
    ),
    ("/tools", "#inventory", "tools"),
    ("/agents", "#agents", "agents"),
    ("/tasks", "#workspaces", "tasks"),
    ("/epics", "#epics", ""),
    ("/tokens", "#tokens", ""),
    ("/approvals", "#inbox", ""),
    ("/audit/export?since=1h", "", ""),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_renders_for_the_admin() {
    let w = TestWarden::start(&config()).await;
    let (alice, dave) = (
        w.token("alice", None, None).await,
        w.token("dave", None, None).await,
    );
    // Some traffic for the charts: allowed, denied and parked calls.
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    for _ in 0..4 {
        call(&client, "ledger__call_count", json!({})).await;
    }
    call(&client, "ledger__echo", json!({ "text": "hi" })).await;
    for _ in 0..2 {
        call(&client, "ledger__refund", json!({ "amount": 5 })).await;
    }
    let other = http_client(&w.mcp(), &dave, Era::Sessions).await;
    for _ in 0..3 {
        call(&other, "ledger__add_note", json!({ "text": "x" })).await;
    }
    park(&client, "refund 44").await;
    let task = call(
        &client,
        "tasks__create_task",
        json!({ "title": "Reconcile the ledger", "workspace_id": "web-board" }),
    )
    .await;
    assert_eq!(decision(&task)["status"], "executed", "{task:?}");
    let chrome = Chrome::start().await;
    chrome.sign_in(&w, &w.admin).await;
    chrome.wait_for("header.top", Duration::from_secs(10)).await;
    // Each page answers 200 with the console's security headers, then renders in the browser.
    let cookie = chrome.session_cookie().await;
    warden_mcp::http_client::install_tls();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for (path, must, shot) in PAGES {
        let r = http
            .get(format!("{}{path}", w.base))
            .header("cookie", format!("warden_session={cookie}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(
            csp.starts_with("default-src 'none'; script-src 'self'"),
            "{path}: {csp}"
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        assert_eq!(r.headers()["referrer-policy"], "same-origin");
        if must.is_empty() {
            assert!(
                r.text().await.unwrap().contains("\"kind\":\"decision\""),
                "{path}"
            );
            continue;
        }
        let body = r.text().await.unwrap();
        assert!(!body.contains("style=\""), "{path}: no inline style");
        assert!(!body.contains("<script>"), "{path}: no inline script");
        chrome.goto(&format!("{}{path}", w.base)).await;
        chrome.wait_for(must, Duration::from_secs(10)).await;
        assert!(!chrome.exists("p.refusal").await, "{path}");
        if !shot.is_empty() {
            chrome.screenshot(shot).await;
        }
    }
    chrome.goto(&format!("{}/tasks", w.base)).await;
    assert!(chrome.text("#tasks").await.contains("Reconcile the ledger"));
    chrome.goto(&format!("{}/", w.base)).await;
    let overview = chrome.text("main").await;
    for needle in [
        "Calls per minute by decision",
        "Top refused tools",
        "UNKNOWN_TOOL",
        "CAPABILITY",
        "ledger",
    ] {
        assert!(
            overview.contains(needle),
            "`{needle}` on the overview: {overview}"
        );
    }
    assert!(chrome.exists("figure.chart svg rect.s-deny").await);
    chrome
        .goto(&format!(
            "{}/explain?tool=ledger__add_note&arguments=%7B%22text%22%3A%22x%22%7D&user=carol",
            w.base
        ))
        .await;
    assert_eq!(
        chrome
            .b()
            .find(Locator::Css("#explanation"))
            .await
            .unwrap()
            .attr("data-would")
            .await
            .unwrap()
            .as_deref(),
        Some("pending_approval")
    );
    // Verify the audit chain.
    chrome.goto(&format!("{}/audit", w.base)).await;
    chrome.click("form[action='/audit/verify'] button").await;
    chrome.wait_for("#verified", Duration::from_secs(10)).await;
    assert!(
        chrome
            .text("#verified")
            .await
            .starts_with("The chain is intact: ")
    );
    // Create a token bound to a project, narrowed by scopes, with a time to live.
    chrome.goto(&format!("{}/tokens", w.base)).await;
    chrome
        .fill("#create-token input[name=owner]", "carol")
        .await;
    chrome
        .fill("#create-token input[name=projects]", "payments")
        .await;
    chrome
        .fill(
            "#create-token input[name=scopes]",
            "run:projects:payments, ledger:write",
        )
        .await;
    chrome.fill("#create-token input[name=ttl]", "12h").await;
    chrome
        .fill(
            "#create-token input[name=description]",
            "made in the console",
        )
        .await;
    chrome.click("#create-token button").await;
    let secret = chrome
        .wait_for("#secret", Duration::from_secs(10))
        .await
        .text()
        .await
        .unwrap();
    let created = w.gateway.authenticate(secret.trim()).unwrap();
    assert_eq!(created.principal.to_string(), "user:carol");
    assert_eq!(created.projects.as_ref().map(|p| p.len()), Some(1));
    assert!(created.expires_at.is_some() && created.scopes.is_some());
    chrome.goto(&format!("{}/tokens", w.base)).await;
    chrome
        .wait_for(
            &format!("tr[data-token={}]", created.id),
            Duration::from_secs(10),
        )
        .await;
    chrome.screenshot("tokens").await;
    chrome.quit().await;
}
