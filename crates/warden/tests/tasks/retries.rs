//! Idempotent retries (TASK-7) rechecked as the caller was admitted, and who is a session: an
//! office session gets its task back on its own path; a legacy office task in a kanban
//! workspace is refused like an unknown one on a retry and takes no children; an agent run
//! bound to no task is an external caller.

use serde_json::json;

use crate::common::*;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_office_session_retrying_on_its_own_path_gets_its_task_back() {
    let f = Fixture::start().await;
    let office = f
        .external_task(json!({"title": "org root", "workspace_id": "org"}))
        .await;
    let o = f.session(&office).await;
    let args = json!({"title": "from office", "external_id": "office-1"});
    let (first, text) = create(&f, Via::Cli, "", &o.token, &args).await.unwrap();
    let id = first.id().to_owned();
    assert!(id.starts_with("task_"), "{text}");
    // The same key again, on both forms of its path: the same task, nothing new.
    let (again, text) = create(&f, Via::Cli, "", &o.token, &args).await.unwrap();
    assert_eq!(
        again,
        Answer::Task {
            id: id.clone(),
            created: None
        },
        "{text}"
    );
    let before = f.world().await;
    let (api, text) = create(&f, Via::Api, "", &o.token, &args).await.unwrap();
    assert_eq!(
        api,
        Answer::Task {
            id: id.clone(),
            created: Some(false)
        },
        "{text}"
    );
    assert_eq!(f.world().await, before);
    let stored = f.w.store.store.task(&id).await.unwrap().unwrap();
    assert_eq!(stored.workspace, "org");
    assert!(stored.from_office);
    assert_eq!(stored.created_in_session.as_deref(), Some(o.run.as_str()));
    o.end();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_office_task_in_a_kanban_workspace_is_never_returned_and_takes_no_children() {
    let f = Fixture::start().await;
    let root = f
        .external_task(json!({"title": "board root", "workspace_id": "board"}))
        .await;
    // A legacy record: office-created, in the kanban workspace, with an external id.
    let now = now().0;
    let legacy = warden_store::Task {
        id: "task_legacy".into(),
        workspace: "board".into(),
        parent_id: None,
        title: "legacy office title".into(),
        description: Some("legacy office description".into()),
        workflow_step: None,
        state: warden_store::TaskState::Todo,
        workspace_mode: None,
        repositories: Vec::new(),
        external_id: Some("legacy-1".into()),
        created_by: "{}".into(),
        created_in_session: None,
        from_office: true,
        agent_profile: None,
        created_at: now,
        updated_at: now,
    };
    assert_eq!(
        f.w.store.store.insert_task(&legacy).await.unwrap(),
        warden_store::TaskInsert::Inserted
    );
    let k = f.session(&root).await;
    let args = json!({"title": "t", "workspace_id": "board", "external_id": "legacy-1"});
    for via in [Via::Mcp, Via::Api, Via::Cli] {
        let before = f.world().await;
        let (answer, text) = create(&f, via, &f.agent_mcp(), &k.token, &args)
            .await
            .unwrap();
        assert_eq!(
            answer,
            Answer::refusal(
                via,
                "NOT_FOUND",
                "external id `legacy-1` cannot be used here",
                404
            ),
            "{via:?}: {text}"
        );
        for hidden in [
            "task_legacy",
            "legacy office title",
            "legacy office description",
        ] {
            assert!(!text.contains(hidden), "{via:?} leaked `{hidden}`: {text}");
        }
        assert_eq!(f.world().await, before, "{via:?}: something changed");
    }
    // As a parent: a kanban session is told it creates in kanban only; an external caller
    // that the record is inconsistent.
    let args = json!({"title": "t", "parent_id": "task_legacy"});
    for via in [Via::Mcp, Via::Api, Via::Cli] {
        for (mcp, token, refusal) in [
            (
                f.agent_mcp(),
                &k.token,
                Answer::refusal(
                    via,
                    "KANBAN_ONLY",
                    "a session creates tasks over MCP in kanban workspaces only: parent task `task_legacy` was created by office",
                    403,
                ),
            ),
            (
                f.w.mcp(),
                &f.w.admin,
                Answer::refusal(
                    via,
                    "INCONSISTENT",
                    "task `task_legacy` and its workspace disagree on its mode; it takes no children until they are reconciled",
                    409,
                ),
            ),
        ] {
            let before = f.world().await;
            let (answer, text) = create(&f, via, &mcp, token, &args).await.unwrap();
            assert_eq!(answer, refusal, "{via:?}: {text}");
            assert!(!text.contains("legacy office"), "{via:?} leaked: {text}");
            assert_eq!(f.world().await, before, "{via:?}: something changed");
        }
    }
    k.end();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_bound_to_no_task_creates_tasks_as_an_external_caller() {
    let f = Fixture::start().await;
    let run = f.run("dev", None).await;
    assert!(!run.env.contains("WARDEN_TASK_ID"), "{}", run.env);
    let mcp = f.agent_mcp();
    // Not a session: an office workspace is open to it, and the task is office's, created in
    // no session.
    let (answer, text) = create(
        &f,
        Via::Mcp,
        &mcp,
        &run.token,
        &json!({"title": "t", "workspace_id": "org"}),
    )
    .await
    .unwrap();
    let stored = f.w.store.store.task(answer.id()).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.workspace.as_str(),
            stored.from_office,
            stored.created_in_session
        ),
        ("org", true, None),
        "{text}"
    );
    // The same access checks as any external caller: its agent's projects (`vault` is of
    // `other`), and it is no session to claim one.
    let refusals = [
        (
            json!({"title": "t"}),
            "AMBIGUOUS_DESTINATION",
            "several workspaces are possible (board, org): name one with `workspace_id`",
        ),
        (
            json!({"title": "t", "workspace_id": "vault"}),
            "NOT_FOUND",
            "no workspace `vault`",
        ),
        (
            json!({"title": "t", "workspace_id": "board", "source_session_id": run.run}),
            "CONFLICTING_IDENTITY",
            "`source_session_id` is only for sessions; this credential is not one",
        ),
    ];
    for (args, code, message) in refusals {
        let before = f.world().await;
        let (answer, text) = create(&f, Via::Mcp, &mcp, &run.token, &args).await.unwrap();
        assert_eq!(
            answer,
            Answer::refusal(Via::Mcp, code, message, 0),
            "{args}: {text}"
        );
        assert_eq!(f.world().await, before, "{args}: something changed");
    }
    // Its capabilities: an agent that may only read tasks creates none.
    let watcher = f.run("watcher", None).await;
    let before = f.world().await;
    let denied = call_as(
        &mcp.replace("/dev", "/watcher"),
        &watcher.token,
        "tasks__create_task",
        json!({"title": "t", "workspace_id": "board"}),
    )
    .await;
    assert_eq!(
        denied["structuredContent"],
        json!({
            "code": "CAPABILITY",
            "message": "this run lacks the capability `tasks:create` that `tasks__create_task` requires",
            "runId": watcher.run,
            "status": "denied"
        }),
        "{denied}"
    );
    assert_eq!(f.world().await, before);
    run.end();
    watcher.end();
}
