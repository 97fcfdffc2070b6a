//! Runs, agents and their runs, tasks and workspaces, whoami, explain and the inventory over
//! the API.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_listed_newest_first_and_described_with_their_calls() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let r = call(&client, "ledger__add", json!({"a": 1, "b": 2})).await;
    let run = decision(&r)["runId"].as_str().unwrap().to_owned();
    let (status, runs) = api.get(&w.admin, "/api/v1/runs?limit=10").await;
    assert_eq!(status, 200, "{runs}");
    assert_eq!(runs[0]["id"], run.as_str());
    assert_eq!(runs[0]["principal"], "user:alice");
    assert_eq!(runs[0]["mode"], "caller");
    let (status, detail) = api.get(&w.admin, &format!("/api/v1/runs/{run}")).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["authority"]["principal"], "user:alice");
    assert_eq!(detail["calls"][0]["tool"], "ledger__add");
    assert_eq!(detail["calls"][0]["decision"], "allow");
    assert_eq!(detail["calls"][0]["outcome"], "executed");
    assert_eq!(detail["lifecycle"], Value::Null);
    assert_eq!(
        api.get(&w.admin, "/api/v1/runs/run_nothing").await,
        refusal(404, "NOT_FOUND", "no run `run_nothing`")
    );
    assert_eq!(
        api.get(&w.admin, "/api/v1/runs?limit=0").await,
        refusal(400, "INVALID_INPUT", "`limit`: must be at least 1")
    );
    assert_eq!(
        api.get(&alice, "/api/v1/runs").await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "listing runs needs the `runs:read` capability"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_are_listed_with_their_schedules_and_a_run_started_by_hand_is_listed() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let (status, agents) = api.get(&w.admin, "/api/v1/agents").await;
    assert_eq!(status, 200, "{agents}");
    let nightly = &agents[0];
    assert_eq!(nightly["name"], "nightly");
    assert_eq!(nightly["memberships"], json!(["payments"]));
    assert_eq!(nightly["schedules"][0]["cron"], "0 3 1 1 *");
    assert_eq!(nightly["schedules"][0]["runner"]["command"], "true");
    assert!(nightly["schedules"][0]["nextFireAt"].as_i64().unwrap() > now().0);
    assert_eq!(nightly["manualRunner"]["command"], "true");
    let (status, started) = api
        .post(&w.admin, "/api/v1/agents/nightly/runs", json!({}))
        .await;
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    assert_eq!(started["agent"], "nightly");
    assert_eq!(started["trigger"], "manual");
    assert_eq!(started["requestedBy"]["kind"], "principal", "{started}");
    let mut status = String::new();
    for _ in 0..100 {
        let (_, runs) = api.get(&w.admin, "/api/v1/agents/nightly/runs").await;
        let run = runs
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id.as_str())
            .cloned()
            .unwrap();
        status = run["status"].as_str().unwrap().to_owned();
        if status == "succeeded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, "succeeded");
    assert_eq!(
        api.post(&w.admin, "/api/v1/agents/ghost/runs", json!({}))
            .await,
        refusal(404, "NOT_FOUND", "no agent named `ghost`")
    );
    assert_eq!(
        api.get(&w.admin, "/api/v1/agents/ghost/runs").await,
        refusal(404, "NOT_FOUND", "no agent named `ghost`")
    );
    let alice = w.token("alice", None, None).await;
    assert_eq!(
        api.post(&alice, "/api/v1/agents/nightly/runs", json!({}))
            .await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "starting an agent run needs the `agents:run` capability"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_created_listed_and_read_in_the_workspaces_the_caller_may_use() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let (status, workspaces) = api.get(&w.admin, "/api/v1/workspaces").await;
    assert_eq!(
        (status, workspaces),
        (
            200,
            json!([{"name": "board", "mode": "kanban", "project": "payments", "repositories": []}])
        )
    );
    let (status, created) = api
        .post(
            &w.admin,
            "/api/v1/tasks",
            json!({"title": "reconcile", "workspace_id": "board"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["created"], true);
    let id = created["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["task"]["state"], "todo");
    let (_, tasks) = api.get(&w.admin, "/api/v1/tasks?workspace=board").await;
    assert_eq!(tasks[0]["id"], id.as_str());
    let (status, task) = api.get(&w.admin, &format!("/api/v1/tasks/{id}")).await;
    assert_eq!(status, 200, "{task}");
    assert_eq!(task["task"]["title"], "reconcile");
    assert_eq!(task["sessions"], json!([]));
    let (status, body) = api.post(&w.admin, "/api/v1/tasks", json!({})).await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("INVALID_INPUT"))
    );
    assert!(body["error"].as_str().unwrap().contains("title"), "{body}");
    // A user without tasks:read sees no workspace, and its tasks as if they did not exist.
    let alice = w.token("alice", None, None).await;
    assert_eq!(
        api.get(&alice, "/api/v1/workspaces").await,
        (200, json!([]))
    );
    let (status, body) = api.get(&alice, &format!("/api/v1/tasks/{id}")).await;
    assert_eq!(
        (status, body["code"].clone()),
        (404, json!("NOT_FOUND")),
        "{body}"
    );
    assert_eq!(
        api.get(&w.admin, "/api/v1/tasks?state=someday").await,
        refusal(
            400,
            "INVALID_INPUT",
            "`state` must be one of todo, in_progress, review, done, archived; got `someday`"
        )
    );
    assert_eq!(
        api.post(&alice, "/api/v1/tasks", json!({"title": "x"}))
            .await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "creating a task needs the `tasks:create` capability"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whoami_explain_and_the_inventory_answer_from_the_callers_authority() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let alice = w.token("alice", Some(&["payments"]), None).await;
    let (status, me) = api.get(&alice, "/api/v1/whoami").await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["principal"], "user:alice");
    assert_eq!(me["mode"], "caller");
    assert_eq!(me["projects"][0]["project"], "payments");
    let (status, explained) = api
        .post(
            &alice,
            "/api/v1/explain",
            json!({"tool": "ledger__echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(status, 200, "{explained}");
    assert_eq!(explained["principal"], "user:alice");
    assert_eq!(explained["explanation"]["would"], "pending_approval");
    assert_eq!(explained["explanation"]["visible"], true);
    let (status, body) = api
        .post(&alice, "/api/v1/explain", json!({"tol": "x"}))
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("INVALID_INPUT")),
        "{body}"
    );
    assert_eq!(
        api.post(
            &alice,
            "/api/v1/explain",
            json!({"tool": "ledger__add", "user": "bob"})
        )
        .await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "explaining another principal needs the `explain:any` capability"
        )
    );
    let (status, for_bob) = api
        .post(
            &w.admin,
            "/api/v1/explain",
            json!({"tool": "ledger__add", "user": "bob"}),
        )
        .await;
    assert_eq!(
        (status, for_bob["principal"].clone()),
        (200, json!("user:bob"))
    );
    let (status, inventory) = api.get(&w.admin, "/api/v1/tools/inventory").await;
    assert_eq!(status, 200);
    let echo = inventory["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "ledger__echo")
        .unwrap();
    assert_eq!(echo["class"], "mutation");
    assert_eq!(echo["risk"], "dangerous");
    assert_eq!(
        api.get(&alice, "/api/v1/tools/inventory").await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "the tool inventory needs the `tools:inventory` capability"
        )
    );
}
