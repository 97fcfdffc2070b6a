//! The work domain end to end (TASK-1..TASK-8): workspaces with real git repositories, tasks
//! created over MCP by external callers and by real sessions (`warden run agent … --task`,
//! under their run credentials), the office path (`warden task create`, `POST /api/v1/tasks`),
//! materialised environments, idempotent retries, and nothing written before admission.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

#[path = "tasks/environments.rs"]
mod environments;
#[path = "tasks/epics.rs"]
mod epics;
#[path = "tasks/forges.rs"]
mod forges;
#[path = "console/plain.rs"]
#[allow(
    dead_code,
    reason = "the console's helpers, of which the epics' pages use some"
)]
mod plain;
#[path = "tasks/reconcile.rs"]
mod reconcile;
#[path = "tasks/refusals.rs"]
mod refusals;
#[path = "tasks/retries.rs"]
mod retries;
#[path = "tasks/reviews.rs"]
mod reviews;
#[path = "tasks/support.rs"]
mod support;

use common::*;
use serde_json::{Value, json};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_create_tasks_as_their_surface_allows() {
    let f = Fixture::start().await;
    let w = &f.w;
    let agent_mcp = f.agent_mcp();

    // An external caller creates in both modes.
    let kanban_id = f
        .external_task(
            json!({"title": "board root", "workspace_id": "board", "workspace_mode": "new_workspace"}),
        )
        .await;
    let office = call_as(
        &w.mcp(),
        &w.admin,
        "tasks__create_task",
        json!({"title": "org root", "workspace_id": "org", "external_id": "e-1"}),
    )
    .await;
    let office_task = &outcome(&office)["task"];
    assert_eq!(office_task["fromOffice"], true, "{office}");
    let office_id = office_task["id"].as_str().unwrap().to_owned();

    // A kanban session: its runner starts in a real worktree of `main`.
    let k = f.session(&kanban_id).await;
    assert!(
        k.env.contains(&format!("WARDEN_TASK_ID={kanban_id}")),
        "{}",
        k.env
    );
    assert!(k.env.contains("WARDEN_WORKSPACE=board"), "{}", k.env);
    let checkout = k.pwd.join("api");
    assert_eq!(
        git(&checkout, &["rev-parse", "--is-inside-work-tree"]),
        "true"
    );
    assert_eq!(
        git(&checkout, &["rev-parse", "HEAD"]),
        git(&f.repo, &["rev-parse", "main"]),
        "the worktree is at the requested branch"
    );
    assert!(checkout.join("main.txt").exists() && !checkout.join("feature.txt").exists());

    // It creates a child in its workspace, inheriting its environment.
    let child = call_as(
        &agent_mcp,
        &k.token,
        "tasks__create_task",
        json!({"title": "child", "parent_id": kanban_id}),
    )
    .await;
    assert_eq!(child["isError"], false, "{child}");
    let child_task = outcome(&child)["task"].clone();
    assert_eq!(child_task["workspaceMode"], "inherit_parent", "{child}");
    assert_eq!(child_task["createdInSession"], json!(k.run), "{child}");
    let child_id = child_task["id"].as_str().unwrap().to_owned();

    // The child's session runs in its parent's directory.
    let c = f.session(&child_id).await;
    assert_eq!(
        c.pwd, k.pwd,
        "inherit_parent reuses the parent's environment"
    );

    // An office session creates on its own path, in its office workspace.
    let o = f.session(&office_id).await;
    let created = std::process::Command::new(WARDEN)
        .args([
            "task",
            "create",
            "--title",
            "from office",
            "--server",
            &w.base,
        ])
        .env("WARDEN_TOKEN", &o.token)
        .output()
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    let stored = w.store.store.task(&id).await.unwrap().unwrap();
    assert_eq!(stored.workspace, "org");
    assert!(stored.from_office);
    assert_eq!(stored.created_in_session.as_deref(), Some(o.run.as_str()));

    // The operators' view.
    let described = cli(
        &["describe", "task", &kanban_id, "-o", "json"],
        &w.store_args(),
    );
    let described: Value = serde_json::from_slice(&described.stdout).unwrap();
    assert_eq!(
        described["environment"]["repositories"][0]["branch"],
        "main"
    );
    assert_eq!(described["sessions"][0]["id"], json!(k.run));
    let listed = cli(&["get", "tasks", "-o", "json"], &w.store_args());
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4, "{listed}");

    for s in [&k, &c, &o] {
        s.end();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_mode_is_an_exact_enum_and_bad_values_write_nothing_in_both_eras() {
    let f = Fixture::start().await;
    let w = &f.w;
    // A task and its session, so that there is an environment and a run to leave alone.
    let root = f
        .external_task(json!({"title": "root", "workspace_id": "board"}))
        .await;
    let session = f.session(&root).await;
    for era in [Era::Stateless, Era::Sessions] {
        let client = http_client(&w.mcp(), &w.admin, era).await;
        let tools = client.list_all_tools().await.unwrap();
        let create = tools
            .iter()
            .find(|t| t.name == "tasks__create_task")
            .unwrap();
        let schema = Value::Object((*create.input_schema).clone());
        let mode = &schema["properties"]["workspace_mode"];
        assert_eq!(
            mode["enum"],
            json!(["inherit_parent", "new_workspace"]),
            "{era:?}"
        );
        assert!(mode.get("default").is_none(), "{era:?}: {mode}");
        assert_eq!(
            mode["description"],
            "Optional materialized-workspace mode. Omit for subtasks to inherit the parent's workspace/worktree. inherit_parent requires parent_id and reuses the parent's materialized workspace/worktree; new_workspace requests a separate workspace/worktree."
        );
        assert!(
            !schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!("workspace_mode")),
            "{era:?}"
        );
        for bad in ["", " ", " inherit_parent", "inherit_parent ", "shared"] {
            let before = f.world().await;
            let result = call(
                &client,
                "tasks__create_task",
                json!({"title": "t", "workspace_id": "board", "workspace_mode": bad}),
            )
            .await;
            assert_eq!(
                decision(&result)["code"],
                "VALIDATION",
                "{era:?} `{bad}`: {result:?}"
            );
            assert_eq!(f.world().await, before, "{era:?} `{bad}` changed something");
        }
    }
    session.end();
}
