//! Epics and their tasks (WORK-1) over the `work` tool set, the admin API and `warden epic`:
//! created, changed and moved by users through the governed pipeline, each epic task linked to
//! a task made by task admission; every refused move names the allowed ones and changes
//! nothing; an epic of a project the caller may not use answers exactly as one that does not
//! exist. The helpers here serve `reviews.rs` too.

use serde_json::{Value, json};

use crate::support::*;

/// alice plans work in `web`; bob may only read it; dave and erin review it; carol works in
/// `other` only.
pub(crate) const PEOPLE: &str = "kind: User\nname: alice\n---\nkind: User\nname: bob\n---\n\
     kind: User\nname: carol\n---\nkind: User\nname: dave\n---\nkind: User\nname: erin\n---\n\
     kind: Role\nname: reviewer\npermissions: [\"run:projects:web\", \"work:read\", \"work:review\"]\n---\n\
     kind: RoleBinding\nrole: reviewer\nsubject: { user: dave }\n---\n\
     kind: RoleBinding\nrole: reviewer\nsubject: { user: erin }\n---\n\
     kind: Role\nname: planner\npermissions: [\"run:projects:web\", \"work:*\", \"tasks:create\", \"tasks:read\"]\n---\n\
     kind: Role\nname: watcher\npermissions: [\"run:projects:web\", \"work:read\"]\n---\n\
     kind: Role\nname: outsider\npermissions: [\"run:projects:other\", \"work:*\"]\n---\n\
     kind: RoleBinding\nrole: planner\nsubject: { user: alice }\n---\n\
     kind: RoleBinding\nrole: watcher\nsubject: { user: bob }\n---\n\
     kind: RoleBinding\nrole: outsider\nsubject: { user: carol }\n";

/// A `work` tool called as `token`: its data, or its refusal as `(code, message)`.
pub(crate) async fn work(
    f: &Fixture,
    token: &str,
    tool: &str,
    args: Value,
) -> Result<Value, (String, String)> {
    work_at(&f.w.mcp(), token, tool, args).await
}

/// A `work` tool called as `token` on the MCP endpoint `url`.
pub(crate) async fn work_at(
    url: &str,
    token: &str,
    tool: &str,
    args: Value,
) -> Result<Value, (String, String)> {
    let result = call_as(url, token, &format!("work__{tool}"), args).await;
    if result["isError"] == true {
        let data = outcome(&result);
        let message = data["message"]
            .as_str()
            .or_else(|| result["content"][0]["text"].as_str())
            .unwrap_or_default()
            .to_owned();
        let code = data["code"].as_str().unwrap_or_default().to_owned();
        return Err((code, message));
    }
    Ok(outcome(&result))
}

/// Every epic, epic task and move, and every task: what a refusal must leave as it was.
pub(crate) async fn epics_world(f: &Fixture) -> Value {
    let store = &f.w.store.store;
    let mut all = Vec::new();
    let everywhere = warden_store::EpicFilter {
        projects: vec!["web".into(), "other".into()],
        state: None,
    };
    for epic in store.epics(&everywhere, 1000).await.unwrap() {
        let tasks = store.epic_tasks(&epic.id).await.unwrap();
        let mut moves = store.work_moves(&epic.id).await.unwrap();
        let mut reviews = Vec::new();
        for t in &tasks {
            moves.extend(store.work_moves(&t.id).await.unwrap());
            reviews.extend(store.reviews(&t.id).await.unwrap());
        }
        all.push(json!({"epic": epic, "tasks": tasks, "moves": moves, "reviews": reviews}));
    }
    let tasks = store
        .tasks(&warden_store::TaskFilter::default())
        .await
        .unwrap();
    json!({"epics": all, "tasks": tasks.len()})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_epic_and_its_tasks_move_only_as_the_machines_allow() {
    let f = Fixture::start_with(PEOPLE).await;
    let alice = f.w.token("alice", None, None).await;

    let created = work(
        &f,
        &alice,
        "create_epic",
        json!({"project": "web", "title": " Refunds in one step ", "criteria": ["one call", "audited"], "risk": "high"}),
    )
    .await
    .unwrap();
    let epic = created["id"].as_str().unwrap().to_owned();
    assert!(epic.starts_with("epc_"), "{created}");
    assert_eq!(created["epic"]["title"], "Refunds in one step");
    assert_eq!(created["epic"]["state"], "draft");
    assert_eq!(created["epic"]["createdBy"], "user:alice");

    // A task cannot be moved past its machine, and a refusal changes nothing.
    let added = work(
        &f,
        &alice,
        "add_task",
        json!({"epic": epic, "title": "The refund tool", "workspace": "board", "repository": "api", "branch": "refund-tool"}),
    )
    .await
    .unwrap();
    let ept = added["id"].as_str().unwrap().to_owned();
    assert!(ept.starts_with("ept_"), "{added}");
    let task = added["task"].as_str().unwrap();
    assert!(task.starts_with("task_"), "{added}");
    let stored = f.w.store.store.task(task).await.unwrap().unwrap();
    assert_eq!(stored.workspace, "board");
    assert_eq!(
        stored.repositories[0].branch.as_deref(),
        Some("refund-tool")
    );
    assert_eq!(added["epicTask"]["baseBranch"], "main");
    assert_eq!(added["epicTask"]["state"], "proposed");

    let before = epics_world(&f).await;
    let refused = work(
        &f,
        &alice,
        "move_task",
        json!({"id": ept, "to": "in_progress"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused,
        (
            "INVALID_MOVE".into(),
            "an epic task cannot move from `proposed` to `in_progress`; from `proposed` it can move to `ready`".into()
        )
    );
    let refused = work(
        &f,
        &alice,
        "update_epic",
        json!({"id": epic, "status": "done", "title": "Renamed"}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.0, "INVALID_MOVE");
    assert!(refused.1.contains("`draft` to `done`"), "{refused:?}");
    assert_eq!(
        epics_world(&f).await,
        before,
        "a refused move changed something"
    );

    for to in ["ready", "in_progress", "review"] {
        let moved = work(&f, &alice, "move_task", json!({"id": ept, "to": to}))
            .await
            .unwrap();
        assert_eq!(moved["epicTask"]["state"], to);
    }
    // `accepted`, `merged` and `reopened` belong to gates, never to a plain move.
    let before = epics_world(&f).await;
    let gated = work(
        &f,
        &alice,
        "move_task",
        json!({"id": ept, "to": "accepted"}),
    )
    .await
    .unwrap_err();
    assert_eq!(gated.0, "GATED", "{gated:?}");
    let refused = work(&f, &alice, "move_task", json!({"id": ept, "to": "merged"}))
        .await
        .unwrap_err();
    assert_eq!(
        refused.1,
        "an epic task cannot move from `review` to `merged`; from `review` it can move to `in_progress` or `accepted`"
    );
    assert_eq!(epics_world(&f).await, before);

    // The epic opens; it is not done while a task is not merged.
    let opened = work(
        &f,
        &alice,
        "update_epic",
        json!({"id": epic, "status": "open", "tradeoffs": "no partial refunds"}),
    )
    .await
    .unwrap();
    assert_eq!(opened["epic"]["state"], "open");
    assert_eq!(opened["epic"]["tradeoffs"], "no partial refunds");
    let not_done = work(
        &f,
        &alice,
        "update_epic",
        json!({"id": epic, "status": "done"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        not_done.1,
        format!("epic `{epic}` is done once every task is merged; not merged: `{ept}` (review)")
    );

    // Every move is recorded: who, from, to.
    let got = work(&f, &alice, "get_epic", json!({"id": epic}))
        .await
        .unwrap();
    let moves: Vec<(Value, Value, Value)> = got["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["from"].clone(), m["to"].clone(), m["movedBy"].clone()))
        .collect();
    assert_eq!(
        moves,
        [
            (Value::Null, json!("draft"), json!("user:alice")),
            (json!("draft"), json!("open"), json!("user:alice")),
        ]
    );
    assert_eq!(got["tasks"][0]["state"], "review");
    assert_eq!(
        f.w.store.store.work_moves(&ept).await.unwrap().len(),
        4,
        "created, ready, in_progress, review"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_epic_is_seen_and_changed_only_by_whom_its_project_allows() {
    let f = Fixture::start_with(PEOPLE).await;
    let alice = f.w.token("alice", None, None).await;
    let bob = f.w.token("bob", None, None).await;
    let carol = f.w.token("carol", None, None).await;
    let epic = work(
        &f,
        &alice,
        "create_epic",
        json!({"project": "web", "title": "Search"}),
    )
    .await
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // bob reads it; writing is denied by the pipeline (he lacks `work:write`).
    let read = work(&f, &bob, "get_epic", json!({"id": epic}))
        .await
        .unwrap();
    assert_eq!(read["epic"]["risk"], "medium");
    let listed = work(&f, &bob, "list_epics", json!({})).await.unwrap();
    assert_eq!(listed["epics"].as_array().unwrap().len(), 1);
    let before = epics_world(&f).await;
    assert!(
        work(
            &f,
            &bob,
            "update_epic",
            json!({"id": epic, "status": "open"})
        )
        .await
        .is_err()
    );
    assert_eq!(epics_world(&f).await, before);

    // carol, of another project, cannot tell it from an epic that does not exist.
    let hidden = work(&f, &carol, "get_epic", json!({"id": epic}))
        .await
        .unwrap_err();
    let made_up = "epc_00000000000000000000000000000000";
    let missing = work(&f, &carol, "get_epic", json!({"id": made_up}))
        .await
        .unwrap_err();
    assert_eq!(hidden.0, "NOT_FOUND");
    assert_eq!(
        hidden.1.replace(&epic, "ID"),
        missing.1.replace(made_up, "ID")
    );
    let hidden = work(
        &f,
        &carol,
        "update_epic",
        json!({"id": epic, "status": "archived"}),
    )
    .await
    .unwrap_err();
    assert_eq!(hidden.0, "NOT_FOUND");
    assert!(
        work(&f, &carol, "list_epics", json!({})).await.unwrap()["epics"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Nor create one in a project it may not use, nor add a task from another project's
    // workspace.
    let refused = work(
        &f,
        &carol,
        "create_epic",
        json!({"project": "web", "title": "Mine"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused,
        (
            "NOT_FOUND".into(),
            "no project `web` whose tools this run may use".into()
        )
    );
    let other = work(
        &f,
        &carol,
        "create_epic",
        json!({"project": "other", "title": "Vault"}),
    )
    .await
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = work(
        &f,
        &alice,
        "add_task",
        json!({"epic": epic, "title": "x", "workspace": "vault", "repository": "api", "branch": "b"}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused, ("NOT_FOUND".into(), "no workspace `vault`".into()));
    let refused = work(
        &f,
        &carol,
        "add_task",
        json!({"epic": other, "title": "x", "workspace": "vault", "repository": "none", "branch": "b"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused,
        (
            "NOT_FOUND".into(),
            "workspace `vault` has no repository `none`".into()
        )
    );
    assert_eq!(epics_world(&f).await["tasks"], 0, "no task was created");
}

/// `method` on the admin API as `token`: the status and the JSON body.
pub(crate) async fn api(
    f: &Fixture,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}/api/v1/{path}", f.w.base))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// `warden epic …` as `token` through the fixture's server: its stdout, or its stderr when it
/// failed.
fn cli(f: &Fixture, token: &str, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(crate::common::WARDEN)
        .arg("epic")
        .args(args)
        .args(["--server", &f.w.base])
        .env("WARDEN_TOKEN", token)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_owned();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_and_the_cli_make_every_write_the_tools_make() {
    use reqwest::Method;
    let f = Fixture::start_with(PEOPLE).await;
    let alice = f.w.token("alice", None, None).await;
    let carol = f.w.token("carol", None, None).await;

    // The API: create, change and move an epic, add a task and move it.
    let (status, epic) = api(
        &f,
        &alice,
        Method::POST,
        "epics",
        Some(json!({"project": "web", "title": "Over the API", "risk": "low"})),
    )
    .await;
    assert_eq!(status, 201, "{epic}");
    let id = epic["id"].as_str().unwrap().to_owned();
    let (status, opened) = api(
        &f,
        &alice,
        Method::PATCH,
        &format!("epics/{id}"),
        Some(json!({"status": "open", "criteria": ["it works"]})),
    )
    .await;
    assert_eq!(
        (status, &opened["state"], &opened["criteria"]),
        (200, &json!("open"), &json!(["it works"])),
        "{opened}"
    );
    let (status, added) = api(
        &f,
        &alice,
        Method::POST,
        &format!("epics/{id}/tasks"),
        Some(json!({"title": "API task", "workspace": "board", "repository": "api", "branch": "api-work", "baseBranch": "main"})),
    )
    .await;
    assert_eq!(status, 201, "{added}");
    let ept = added["id"].as_str().unwrap().to_owned();
    assert!(added["task"].as_str().unwrap().starts_with("task_"));
    let (status, moved) = api(
        &f,
        &alice,
        Method::POST,
        &format!("epic-tasks/{ept}/move"),
        Some(json!({"to": "ready"})),
    )
    .await;
    assert_eq!((status, &moved["state"]), (200, &json!("ready")), "{moved}");
    // Refusals: a move the machine lacks (409, nothing changed), a gate, the path's field in
    // the body, an unknown field, an epic the caller may not see.
    let before = epics_world(&f).await;
    let (status, body) = api(
        &f,
        &alice,
        Method::POST,
        &format!("epic-tasks/{ept}/move"),
        Some(json!({"to": "review"})),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("INVALID_MOVE")),
        "{body}"
    );
    assert_eq!(
        body["error"],
        "an epic task cannot move from `ready` to `review`; from `ready` it can move to `in_progress`"
    );
    let (status, body) = api(
        &f,
        &alice,
        Method::PATCH,
        &format!("epics/{id}"),
        Some(json!({"id": "epc_other"})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("`id` is given by the path"),
        "{body}"
    );
    let (status, body) = api(
        &f,
        &alice,
        Method::POST,
        "epics",
        Some(json!({"project": "web", "title": "x", "owner": "me"})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("unknown field `owner`"),
        "{body}"
    );
    let (status, body) = api(&f, &alice, Method::GET, "epics?status=finished", None).await;
    assert_eq!(status, 400, "{body}");
    let (hidden, hidden_body) = api(&f, &carol, Method::GET, &format!("epics/{id}"), None).await;
    let (missing, missing_body) = api(&f, &carol, Method::GET, "epics/epc_made_up", None).await;
    assert_eq!((hidden, missing), (404, 404));
    assert_eq!(hidden_body["code"], missing_body["code"]);
    assert_eq!(epics_world(&f).await, before, "a refusal changed something");
    let (status, listed) = api(
        &f,
        &alice,
        Method::GET,
        "epics?project=web&status=open",
        None,
    )
    .await;
    assert_eq!(
        (status, listed.as_array().unwrap().len()),
        (200, 1),
        "{listed}"
    );

    // The CLI: the same writes, through the server.
    let cli_epic = cli(
        &f,
        &alice,
        &[
            "create",
            "--project",
            "web",
            "--title",
            "Over the CLI",
            "--criterion",
            "one",
            "--criterion",
            "two",
        ],
    )
    .unwrap();
    assert!(cli_epic.starts_with("epc_"), "{cli_epic}");
    assert_eq!(
        cli(&f, &alice, &["update", &cli_epic, "--status", "open"]).unwrap(),
        format!("{cli_epic} open")
    );
    let added = cli(
        &f,
        &alice,
        &[
            "task",
            "add",
            &cli_epic,
            "--title",
            "CLI task",
            "--workspace",
            "board",
            "--repository",
            "api",
            "--branch",
            "cli-work",
        ],
    )
    .unwrap();
    let cli_ept = added.split(' ').next().unwrap().to_owned();
    assert!(
        cli_ept.starts_with("ept_") && added.contains(" task_"),
        "{added}"
    );
    assert_eq!(
        cli(&f, &alice, &["task", "move", &cli_ept, "ready"]).unwrap(),
        format!("{cli_ept} ready")
    );
    let refused = cli(&f, &alice, &["task", "move", &cli_ept, "merged"]).unwrap_err();
    assert_eq!(
        refused,
        "error: an epic task cannot move from `ready` to `merged`; from `ready` it can move to `in_progress`"
    );
    let shown = cli(&f, &alice, &["get", &cli_epic]).unwrap();
    assert!(
        shown.contains("criterion: two") && shown.contains(&cli_ept),
        "{shown}"
    );
    let listed = cli(&f, &alice, &["list", "-o", "json"]).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&listed)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        cli(&f, &carol, &["get", &cli_epic]).unwrap_err(),
        format!("error: no epic `{cli_epic}`")
    );

    // Reviewing and accepting: over the API and the CLI alike.
    let dave = f.w.token("dave", None, None).await;
    push(&f, "api-review", "api.txt");
    push(&f, "cli-review", "cli.txt");
    let (_, low) = in_review(&f, &alice, "low", "api-review").await;
    let (status, review) = api(
        &f,
        &dave,
        Method::POST,
        &format!("epic-tasks/{low}/reviews"),
        Some(json!({"verdict": "approve"})),
    )
    .await;
    assert_eq!(
        (status, &review["verdict"]),
        (201, &json!("approve")),
        "{review}"
    );
    let (status, body) = api(
        &f,
        &alice,
        Method::POST,
        &format!("epic-tasks/{low}/reviews"),
        Some(json!({"verdict": "approve"})),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("FORBIDDEN")),
        "{body}"
    );
    assert_eq!(
        cli(&f, &alice, &["task", "accept", &low]).unwrap(),
        format!("{low} accepted")
    );
    let (_, other) = in_review(&f, &alice, "low", "cli-review").await;
    let (status, body) = api(
        &f,
        &alice,
        Method::POST,
        &format!("epic-tasks/{other}/accept"),
        None,
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("GATED")),
        "{body}"
    );
    assert!(
        cli(
            &f,
            &dave,
            &["task", "review", &other, "--verdict", "approve"]
        )
        .unwrap()
        .starts_with("approve")
    );
    let (status, accepted) = api(
        &f,
        &alice,
        Method::POST,
        &format!("epic-tasks/{other}/accept"),
        None,
    )
    .await;
    // Accepted; the fixture's repository (its `main` checked out) refuses the merge's push.
    assert_eq!(
        (status, &accepted["epicTask"]["state"]),
        (200, &json!("accepted")),
        "{accepted}"
    );
    let why = accepted["notMerged"].as_str().unwrap();
    assert!(
        why.starts_with("the merge failed: git push failed"),
        "{why}"
    );
}

/// A commit on `branch` of the fixture's repository (created from `main` when new), as a
/// session's push lands there; its id.
pub(crate) fn push(f: &Fixture, branch: &str, file: &str) -> String {
    let exists = !git(&f.repo, &["branch", "--list", branch]).is_empty();
    if exists {
        git(&f.repo, &["checkout", "-q", branch]);
    } else {
        git(&f.repo, &["checkout", "-q", "-b", branch]);
    }
    std::fs::write(f.repo.join(file), file).unwrap();
    git(&f.repo, &["add", "."]);
    git(&f.repo, &["commit", "-q", "-m", file]);
    let head = git(&f.repo, &["rev-parse", "HEAD"]);
    git(&f.repo, &["checkout", "-q", "main"]);
    head
}

/// An open epic of `risk` with one task on `branch`, moved to `review`; (epic, epic task).
pub(crate) async fn in_review(
    f: &Fixture,
    token: &str,
    risk: &str,
    branch: &str,
) -> (String, String) {
    let epic = open_epic(f, token, risk).await;
    let ept = task_moved(f, token, &epic, branch, &["ready", "in_progress", "review"]).await;
    (epic, ept)
}

/// An open epic of `risk` in `web`; its id.
pub(crate) async fn open_epic(f: &Fixture, token: &str, risk: &str) -> String {
    let epic = work(
        f,
        token,
        "create_epic",
        json!({"project": "web", "title": "Reviewed", "risk": risk}),
    )
    .await
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    work(
        f,
        token,
        "update_epic",
        json!({"id": epic, "status": "open"}),
    )
    .await
    .unwrap();
    epic
}

/// A task of `epic` in the workspace `board` on `branch`, moved through `moves`; its id.
pub(crate) async fn task_moved(
    f: &Fixture,
    token: &str,
    epic: &str,
    branch: &str,
    moves: &[&str],
) -> String {
    let ept = work(
        f,
        token,
        "add_task",
        json!({"epic": epic, "title": "Work", "workspace": "board", "repository": "api", "branch": branch}),
    )
    .await
    .unwrap()["id"]
    .as_str()
    .unwrap()
    .to_owned();
    for to in moves {
        work(f, token, "move_task", json!({"id": ept, "to": to}))
            .await
            .unwrap();
    }
    ept
}
