//! No side effect before admission (TASK-3): every refusal, on every path it can take — MCP,
//! `POST /api/v1/tasks`, `warden task create` — answers the same and leaves the store (tasks,
//! environments, agent runs) and the environments on disk exactly as they were, with nothing of
//! a task the caller did not name in the answer (TASK-8).

use serde_json::{Value, json};

use crate::support::*;

const ALL: &[Via] = &[Via::Mcp, Via::Api, Via::Cli];
/// The operators' path only: an office session does not create over MCP at all.
const OWN: &[Via] = &[Via::Api, Via::Cli];
/// The CLI has no `source_session_id`.
const NOT_CLI: &[Via] = &[Via::Mcp, Via::Api];

/// One refusal: who asks, with what, and what every path of `paths` answers.
struct Case {
    who: &'static str,
    args: Value,
    code: &'static str,
    message: String,
    status: u16,
    paths: &'static [Via],
}

fn case(
    who: &'static str,
    args: Value,
    code: &'static str,
    message: impl Into<String>,
    status: u16,
    paths: &'static [Via],
) -> Case {
    Case {
        who,
        args,
        code,
        message: message.into(),
        status,
        paths,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_on_every_path_answers_alike_and_changes_nothing() {
    let f = Fixture::start().await;
    let kanban_id = f
        .external_task(
            json!({"title": "board root", "workspace_id": "board", "workspace_mode": "new_workspace"}),
        )
        .await;
    let office_id = f
        .external_task(json!({"title": "org root", "workspace_id": "org", "external_id": "e-1"}))
        .await;
    let k = f.session(&kanban_id).await;
    let o = f.session(&office_id).await;
    // A token bound to another project: its ceiling applies to the workspace the arguments
    // name (RUN-3), which answers like one that does not exist.
    let bound = f.w.token("admin", Some(&["other"]), None).await;

    let inherit_without_parent = "`workspace_mode` `inherit_parent` needs a `parent_id`: a root task has no parent workspace to inherit; omit it or choose `new_workspace`";
    let kanban_only =
        "a session creates tasks over MCP in kanban workspaces only: `org` is an office workspace";
    let cases = [
        // External callers (the first admin's token).
        case(
            "admin",
            json!({"title": "t"}),
            "AMBIGUOUS_DESTINATION",
            "several workspaces are possible (board, org, vault): name one with `workspace_id`",
            422,
            ALL,
        ),
        case(
            "admin",
            json!({"title": "t", "parent_id": kanban_id, "workspace_id": "org"}),
            "CROSS_WORKSPACE_PARENT",
            format!(
                "task `{kanban_id}` is in workspace `board`, not `org`: a parent never crosses workspaces"
            ),
            422,
            ALL,
        ),
        case(
            "admin",
            json!({"title": "t", "workspace_id": "board", "workspace_mode": "inherit_parent"}),
            "INHERIT_WITHOUT_PARENT",
            inherit_without_parent,
            422,
            ALL,
        ),
        case(
            "admin",
            json!({"title": "t", "parent_id": "task_nope"}),
            "NOT_FOUND",
            "no task `task_nope`",
            404,
            ALL,
        ),
        case(
            "admin",
            json!({"title": "t", "workspace_id": "board", "repositories": [{"repository": "nope"}]}),
            "NOT_FOUND",
            "workspace `board` has no repository `nope`",
            404,
            ALL,
        ),
        case(
            "admin",
            json!({"title": "t", "workspace_id": "board", "source_session_id": k.run}),
            "CONFLICTING_IDENTITY",
            "`source_session_id` is only for sessions; this credential is not one",
            403,
            NOT_CLI,
        ),
        // The schema refuses a padded mode on the operators' path too (over MCP: `VALIDATION`,
        // the gateway's, in `workspace_mode_is_an_exact_enum…`).
        case(
            "admin",
            json!({"title": "t", "workspace_id": "board", "workspace_mode": " inherit_parent"}),
            "INVALID_INPUT",
            "invalid task: `/workspace_mode`: \" inherit_parent\" is not one of \"inherit_parent\" or \"new_workspace\"",
            400,
            OWN,
        ),
        // The token ceiling.
        case(
            "bound",
            json!({"title": "t", "workspace_id": "board"}),
            "NOT_FOUND",
            "no workspace `board`",
            404,
            ALL,
        ),
        // A kanban session.
        case(
            "kanban",
            json!({"title": "t", "workspace_id": "org"}),
            "KANBAN_ONLY",
            kanban_only,
            403,
            ALL,
        ),
        // A retry naming the office task's external id: refused before any lookup.
        case(
            "kanban",
            json!({"title": "t", "workspace_id": "org", "external_id": "e-1"}),
            "KANBAN_ONLY",
            kanban_only,
            403,
            ALL,
        ),
        case(
            "kanban",
            json!({"title": "t", "parent_id": office_id}),
            "KANBAN_ONLY",
            kanban_only,
            403,
            ALL,
        ),
        case(
            "kanban",
            json!({"title": "t", "parent_id": kanban_id, "repositories": [{"repository": "api", "branch": "feature"}]}),
            "INHERITED_REPOSITORY_MISMATCH",
            format!(
                "`api@feature` is not in the environment of parent task `{kanban_id}`, which `inherit_parent` reuses as it is; choose `workspace_mode` `new_workspace` for an environment of its own"
            ),
            422,
            ALL,
        ),
        case(
            "kanban",
            json!({"title": "t", "parent_id": kanban_id, "workspace_id": "vault"}),
            "NOT_FOUND",
            "no workspace `vault`",
            404,
            ALL,
        ),
        case(
            "kanban",
            json!({"title": "t", "workspace_mode": "inherit_parent"}),
            "INHERIT_WITHOUT_PARENT",
            inherit_without_parent,
            422,
            ALL,
        ),
        case(
            "kanban",
            json!({"title": "t", "parent_id": "task_nope"}),
            "NOT_FOUND",
            "no task `task_nope`",
            404,
            ALL,
        ),
        case(
            "kanban",
            json!({"title": "t", "source_session_id": "run_someone_else"}),
            "CONFLICTING_IDENTITY",
            "`source_session_id` names another session than the caller's",
            403,
            NOT_CLI,
        ),
        // An office session: pointed to its own path over MCP, never to the external transport…
        case(
            "office",
            json!({"title": "t"}),
            "OFFICE_SESSION",
            "an office session does not create tasks over MCP: use its own path, `warden task create` or `POST /api/v1/tasks`, which apply the run's capabilities and its workspace, parent and project checks",
            403,
            &[Via::Mcp],
        ),
        // …where its run's scope holds: its office workspace only.
        case(
            "office",
            json!({"title": "t", "workspace_id": "board"}),
            "NOT_FOUND",
            "no workspace `board`",
            404,
            OWN,
        ),
        case(
            "office",
            json!({"title": "t", "parent_id": kanban_id}),
            "NOT_FOUND",
            format!("no task `{kanban_id}`"),
            404,
            OWN,
        ),
        case(
            "office",
            json!({"title": "t", "workspace_mode": "inherit_parent"}),
            "INHERIT_WITHOUT_PARENT",
            inherit_without_parent,
            422,
            OWN,
        ),
        case(
            "office",
            json!({"title": "t", "source_session_id": "run_someone_else"}),
            "CONFLICTING_IDENTITY",
            "`source_session_id` names another session than the caller's",
            403,
            &[Via::Api],
        ),
    ];

    let tasks =
        f.w.store
            .store
            .tasks(&warden_store::TaskFilter::default())
            .await
            .unwrap();
    for c in &cases {
        let (mcp, token) = match c.who {
            "admin" => (f.w.mcp(), f.w.admin.as_str()),
            "bound" => (f.w.mcp(), bound.as_str()),
            "kanban" => (f.agent_mcp(), k.token.as_str()),
            "office" => (f.agent_mcp(), o.token.as_str()),
            other => unreachable!("{other}"),
        };
        for &via in c.paths {
            let before = f.world().await;
            let (answer, text) = create(&f, via, &mcp, token, &c.args).await.unwrap();
            let what = format!("{} {via:?} {}", c.who, c.args);
            assert_eq!(
                answer,
                Answer::refusal(via, c.code, &c.message, c.status),
                "{what}: {text}"
            );
            assert_eq!(f.world().await, before, "{what}: something changed");
            // Nothing of a task the request did not name: neither its id nor its title.
            for t in &tasks {
                if !c.args.to_string().contains(&t.id) {
                    assert!(!text.contains(&t.id), "{what} leaked {}: {text}", t.id);
                }
                assert!(!text.contains(&t.title), "{what} leaked a title: {text}");
            }
        }
    }

    // Without a credential, neither path answers, and nothing changes.
    let before = f.world().await;
    let client = reqwest::Client::new();
    let api = client
        .post(format!("{}/api/v1/tasks", f.w.base))
        .json(&json!({"title": "t", "workspace_id": "board"}))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status().as_u16(), 401);
    assert_eq!(
        api.json::<Value>().await.unwrap()["code"],
        "UNAUTHENTICATED"
    );
    let mcp = client
        .post(f.w.mcp())
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "tasks__create_task", "arguments": {"title": "t", "workspace_id": "board"}
            }}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(mcp.status().as_u16(), 401);
    assert_eq!(
        f.world().await,
        before,
        "an unauthenticated call changed something"
    );

    k.end();
    o.end();
}
