//! The audit trail over the API (AUD-2, AUD-4): filtered, newest first in pages, exported as
//! JSON Lines, verified.

use serde_json::{Value, json};

use crate::common::*;
use crate::support::*;

/// `n` calls of `ledger__add` as alice; the run's id.
async fn calls(w: &TestWarden, n: usize) -> String {
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let mut run = String::new();
    for i in 0..n {
        let r = call(&client, "ledger__add", json!({"a": i, "b": 1})).await;
        assert_eq!(decision(&r)["status"], "executed", "{r:?}");
        run = decision(&r)["runId"].as_str().unwrap().to_owned();
    }
    run
}

fn seqs(records: &Value) -> Vec<i64> {
    records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seq"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trail_pages_newest_first_with_a_cursor_and_filters_by_run_principal_tool_and_kind() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let run = calls(&w, 5).await;
    let filter = format!("run={run}&principal=user:alice&tool=ledger__add&kind=call");
    let (status, first) = api
        .get(&w.admin, &format!("/api/v1/audit?{filter}&limit=2"))
        .await;
    assert_eq!(status, 200, "{first}");
    let mut all = seqs(&first["records"]);
    assert_eq!(all.len(), 2);
    let mut next = first["next"].as_i64();
    while let Some(before) = next {
        let (_, page) = api
            .get(
                &w.admin,
                &format!("/api/v1/audit?{filter}&limit=2&before={before}"),
            )
            .await;
        all.extend(seqs(&page["records"]));
        next = page["next"].as_i64();
    }
    assert_eq!(all.len(), 5, "{all:?}");
    assert!(all.windows(2).all(|p| p[0] > p[1]), "newest first: {all:?}");
    let record = &first["records"][0];
    assert_eq!(record["kind"], "call");
    assert_eq!(record["run_id"], run.as_str());
    assert_eq!(record["principal"], "user:alice");
    assert_eq!(record["payload"]["args"], json!({"a": 4, "b": 1}));
    // Decisions, by decision; none denied.
    let (_, allowed) = api
        .get(
            &w.admin,
            &format!("/api/v1/audit?run={run}&kind=decision&decision=allow"),
        )
        .await;
    assert_eq!(allowed["records"].as_array().unwrap().len(), 5);
    let (_, denied) = api
        .get(&w.admin, &format!("/api/v1/audit?run={run}&decision=deny"))
        .await;
    assert_eq!(denied, json!({"records": []}));
    // Time: an age, or milliseconds.
    let (_, recent) = api
        .get(
            &w.admin,
            &format!("/api/v1/audit?run={run}&kind=call&since=1h"),
        )
        .await;
    assert_eq!(recent["records"].as_array().unwrap().len(), 5);
    let (_, future) = api
        .get(
            &w.admin,
            &format!("/api/v1/audit?run={run}&since={}", now().0 + 3_600_000),
        )
        .await;
    assert_eq!(future["records"], json!([]));
    assert_eq!(
        api.get(&w.admin, "/api/v1/audit?since=yesterday").await,
        refusal(
            400,
            "INVALID_INPUT",
            "`since`: `yesterday` is neither milliseconds since the epoch nor an age (1h, 30m)"
        )
    );
    assert_eq!(
        api.get(&w.admin, "/api/v1/audit?kind=gossip").await,
        refusal(
            400,
            "INVALID_INPUT",
            "`kind`: `gossip` is not a record kind; use run, call, decision, outcome, admin or relay"
        )
    );
    let nobody = nobody(&w).await;
    assert_eq!(
        api.get(&nobody, "/api/v1/audit").await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "reading the audit trail needs the `audit:read` capability"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_export_streams_json_lines_oldest_first_and_verify_finds_an_edited_record() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let run = calls(&w, 3).await;
    let export = api
        .send(
            reqwest::Method::GET,
            Some(&w.admin),
            &format!("/api/v1/audit/export?run={run}"),
            None,
        )
        .await;
    assert_eq!(export.status, 200);
    assert_eq!(export.content_type, "application/jsonl");
    assert!(export.text.ends_with('\n'));
    let lines: Vec<Value> = export
        .text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // A run record, then call, decision and outcome for each call.
    assert_eq!(lines.len(), 10, "{}", export.text);
    let exported: Vec<i64> = lines.iter().map(|r| r["seq"].as_i64().unwrap()).collect();
    assert!(exported.windows(2).all(|p| p[0] < p[1]), "{exported:?}");
    // The same records as the listing, in the other order.
    let (_, listed) = api
        .get(&w.admin, &format!("/api/v1/audit?run={run}&limit=1000"))
        .await;
    let mut listed = seqs(&listed["records"]);
    listed.reverse();
    assert_eq!(listed, exported);
    let (status, body) = api.get(&w.admin, "/api/v1/audit/export?before=3").await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("INVALID_INPUT"))
    );
    // The whole export is the whole chain, which verifies.
    let whole = api
        .send(
            reqwest::Method::GET,
            Some(&w.admin),
            "/api/v1/audit/export",
            None,
        )
        .await;
    let head = w.store.store.audit_head().await.unwrap();
    assert_eq!(whole.text.lines().count() as i64, head);
    let (status, verified) = api.post(&w.admin, "/api/v1/audit/verify", json!({})).await;
    assert_eq!(status, 200, "{verified}");
    assert_eq!(verified["intact"], true);
    assert_eq!(verified["records"], head);
    assert_eq!(
        verified["message"],
        format!(
            "audit chain verified: {head} records; its end is not anchored (give `publicKey` or `checkpoints`)"
        )
    );
    // An attacker with the database edits a record: verify names it.
    let target = exported[2];
    w.store
        .store
        .execute_raw(&format!(
            "DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete; \
             UPDATE audit SET payload = '{{\"args\":{{\"a\":99}}}}' WHERE seq = {target}"
        ))
        .await
        .unwrap();
    let answer = api
        .send(
            reqwest::Method::POST,
            Some(&w.admin),
            "/api/v1/audit/verify",
            None,
        )
        .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json["intact"], false, "{}", answer.json);
    assert_eq!(answer.json["break"]["seq"], target);
    let (status, body) = api
        .post(&w.admin, "/api/v1/audit/verify", json!({"key": "x"}))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("INVALID_INPUT"))
    );
    let nobody = nobody(&w).await;
    assert_eq!(
        api.post(&nobody, "/api/v1/audit/verify", json!({})).await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "verifying the audit trail needs the `audit:read` capability"
        )
    );
}

/// The records of a page.
fn records(page: &Value) -> &Vec<Value> {
    page["records"].as_array().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trail_filters_by_agent_and_code_and_counts_what_matches_on_request() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    calls(&w, 2).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Stateless).await;
    let refused = call(&client, "nope", json!({})).await;
    assert_eq!(decision(&refused)["code"], "UNKNOWN_TOOL", "{refused:?}");
    let (status, started) = api
        .post(&w.admin, "/api/v1/agents/nightly/runs", json!({}))
        .await;
    assert_eq!(status, 201, "{started}");
    // By agent: the records of the agent's runs, and only those.
    let (status, by_agent) = api.get(&w.admin, "/api/v1/audit?agent=nightly").await;
    assert_eq!(status, 200, "{by_agent}");
    assert!(!records(&by_agent).is_empty(), "{by_agent}");
    for r in records(&by_agent) {
        assert_eq!(r["agent"], "nightly", "{r}");
    }
    assert_eq!(
        api.get(&w.admin, "/api/v1/audit?agent=nobody").await,
        (200, json!({"records": []}))
    );
    // By denial code.
    let (_, by_code) = api.get(&w.admin, "/api/v1/audit?code=UNKNOWN_TOOL").await;
    assert!(!records(&by_code).is_empty(), "{by_code}");
    for r in records(&by_code) {
        assert_eq!(
            (&r["code"], &r["tool"]),
            (&json!("UNKNOWN_TOOL"), &json!("nope")),
            "{r}"
        );
    }
    assert_eq!(
        api.get(&w.admin, "/api/v1/audit?code=KILL_SWITCH").await,
        (200, json!({"records": []}))
    );
    // `count=true` adds how many match, on every page; without it, nothing is counted.
    let (_, all) = api
        .get(&w.admin, "/api/v1/audit?principal=user:alice&limit=1000")
        .await;
    let matching = records(&all).len();
    assert!(matching > 2, "{all}");
    assert_eq!(all.get("matching"), None, "{all}");
    let (_, first) = api
        .get(
            &w.admin,
            "/api/v1/audit?principal=user:alice&limit=1&count=true",
        )
        .await;
    assert_eq!(records(&first).len(), 1);
    assert_eq!(first["matching"], matching, "{first}");
    let before = first["next"].as_i64().unwrap();
    let (_, second) = api
        .get(
            &w.admin,
            &format!("/api/v1/audit?principal=user:alice&limit=1&count=true&before={before}"),
        )
        .await;
    assert_eq!(second["matching"], matching, "{second}");
    assert_eq!(
        api.get(&w.admin, "/api/v1/audit/export?count=true").await,
        refusal(
            400,
            "INVALID_INPUT",
            "`count`: counts for the listing only; an export is every record that matches"
        )
    );
}
