//! The Overview during an incident: refusals that leave no audit record are counted too.

use serde_json::json;

use crate::common::*;
use crate::config;
use crate::plain::Plain;

/// The number of the Overview's tile labelled `label`.
fn tile(page: &str, label: &str) -> u64 {
    let at = page
        .find(label)
        .unwrap_or_else(|| panic!("no tile `{label}`: {page}"));
    let before = &page[..at];
    let value = before.rfind("class=\"value\">").expect("the tile's value");
    let digits: String = before[value + "class=\"value\">".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("a number")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_before_the_audit_step_show_on_the_overview_by_code() {
    // GOV-2: a kill switch and a failed validation create no audit run; the Overview still
    // counts them (issue: "0 denied" while a project was frozen).
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let console = Plain::sign_in(&w, &w.admin).await;
    let (_, page) = console.get("/").await;
    assert_eq!(tile(&page, "denied in the last hour"), 0);
    assert!(!page.contains("id=\"unaudited\""), "{page}");
    let (status, _) = console
        .post(
            "/kill-switches",
            &[
                ("scope", "project"),
                ("target", "payments"),
                ("reason", "drill"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    for _ in 0..2 {
        let r = call(&client, "ledger__echo", json!({ "text": "hi" })).await;
        assert_eq!(decision(&r)["code"], "KILL_SWITCH", "{r:?}");
    }
    let (status, _) = console
        .post("/kill-switches/project:payments/release", &[])
        .await;
    assert_eq!(status, 303);
    let r = call(&client, "ledger__echo", json!({ "text": 5 })).await;
    assert_eq!(decision(&r)["code"], "VALIDATION", "{r:?}");
    let (_, page) = console.get("/").await;
    assert_eq!(tile(&page, "denied in the last hour"), 3, "{page}");
    let line = &page[page.find("id=\"unaudited\"").expect("the unaudited line")..];
    let line = &line[..line.find("</p>").unwrap()];
    assert!(
        line.contains("3 of the refusals left no audit record")
            && line.contains("2 KILL_SWITCH, 1 VALIDATION"),
        "{line}"
    );
    // The charts rank them with the rest.
    assert!(page.contains("KILL_SWITCH"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_search_pages_with_a_cursor_says_how_many_match_and_finds_free_text() {
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    for i in 0..50 {
        call(&client, "ledger__echo", json!({ "text": format!("t{i}") })).await;
    }
    let console = Plain::sign_in(&w, &w.admin).await;
    let (status, page) = console.get("/audit?since=1h&tool=ledger__echo").await;
    assert_eq!(status, 200);
    let total = w
        .store
        .store
        .count_audit(&warden_store::AuditFilter {
            tool: Some("ledger__echo".into()),
            ..warden_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert!(total > 100, "{total}");
    assert!(
        page.contains(&format!("Showing 100 of {total} matching records")),
        "{page}"
    );
    // Older pages on from the last record shown, to the end.
    let mut seen = 100;
    let mut page = page;
    while let Some(at) = page.find("id=\"older\" href=\"") {
        let rest = &page[at + "id=\"older\" href=\"".len()..];
        let next = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
        assert!(
            next.contains("tool=ledger__echo"),
            "the filters kept: {next}"
        );
        let (_, older) = console.get(&next).await;
        seen += older.matches("<tr data-kind=").count();
        page = older;
    }
    assert_eq!(seen as i64, total, "every record once");
    // Free text: a rule's name, in any case.
    let (_, found) = console.get("/audit?since=1h&q=AUTONOMY%3A").await;
    assert!(found.contains("Showing "), "{found}");
    assert!(!found.contains("No records match."), "{found}");
    let (_, none) = console.get("/audit?since=1h&q=no-such-text-anywhere").await;
    assert!(none.contains("No records match."), "{none}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_page_pages_on_with_a_cursor_and_says_how_many() {
    let w = TestWarden::start(&config()).await;
    let at = now().0;
    for i in 0..130 {
        let run = warden_store::AgentRun {
            id: format!("run_paged{i:03}"),
            agent: "sre-bot".into(),
            trigger: "manual".into(),
            schedule_key: None,
            fire_at: None,
            status: "succeeded".into(),
            requested_by: "{}".into(),
            credential_id: None,
            // Some in the same millisecond: the cursor tells them apart.
            queued_at: at - i / 3,
            started_at: None,
            finished_at: None,
            exit_code: Some(0),
            error: None,
            task_id: None,
            output: None,
        };
        assert!(w.store.store.insert_agent_run(&run).await.unwrap());
    }
    let console = Plain::sign_in(&w, &w.admin).await;
    let (status, page) = console.get("/runs?agent=sre-bot").await;
    assert_eq!(status, 200);
    assert!(page.contains("Showing 100 of 130 runs"), "{page}");
    let mut seen: Vec<String> = Vec::new();
    let mut page = page;
    loop {
        seen.extend(
            page.match_indices("href=\"/runs/run_paged")
                .map(|(i, _)| page[i + 12..i + 24].to_owned()),
        );
        let Some(at) = page.find("id=\"older\" href=\"") else {
            break;
        };
        let rest = &page[at + "id=\"older\" href=\"".len()..];
        let next = rest[..rest.find('"').unwrap()].replace("&amp;", "&");
        assert!(next.contains("agent=sre-bot"), "the filter kept: {next}");
        page = console.get(&next).await.1;
    }
    let expected: Vec<String> = (0..130).map(|i| format!("run_paged{i:03}")).collect();
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, expected, "every run once");
    let (status, page) = console.get("/runs?before=yesterday").await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("is not a cursor"), "{page}");
}
