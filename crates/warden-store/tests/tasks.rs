//! The work domain's store contract: tasks, their environments and the agent runs bound to
//! them, on every backend `warden_testkit::stores()` provides (SQLite as the CLI and as
//! `warden serve` open it; PostgreSQL when `WARDEN_TEST_POSTGRES_URL` is set).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use warden_core::time::Millis;
use warden_store::{
    AgentRun, EnvironmentRepository, EnvironmentState, RequestedRepository, Store, StoreError,
    Task, TaskChange, TaskEnvironment, TaskFilter, TaskInsert, TaskState,
};
use warden_testkit::{TestStore, stores};

const NOW: i64 = 1_800_000_000_000;

/// A task of `workspace` created at `NOW + at`, with only what a task must have.
fn task(id: &str, workspace: &str, at: i64) -> Task {
    Task {
        id: id.into(),
        workspace: workspace.into(),
        parent_id: None,
        title: format!("title of {id}"),
        description: None,
        workflow_step: None,
        state: TaskState::Todo,
        workspace_mode: None,
        repositories: Vec::new(),
        external_id: None,
        created_by: r#"{"user":"alice"}"#.into(),
        created_in_session: None,
        from_office: false,
        agent_profile: None,
        created_at: NOW + at,
        updated_at: NOW + at,
    }
}

fn child(id: &str, parent: &str, at: i64) -> Task {
    Task {
        parent_id: Some(parent.into()),
        ..task(id, "ws", at)
    }
}

fn with_key(id: &str, workspace: &str, key: &str) -> Task {
    Task {
        external_id: Some(key.into()),
        ..task(id, workspace, 0)
    }
}

async fn insert(s: &TestStore, t: &Task) {
    assert_eq!(
        s.store.insert_task(t).await.unwrap(),
        TaskInsert::Inserted,
        "{}: {}",
        s.name,
        t.id
    );
}

fn ids(tasks: &[Task]) -> Vec<&str> {
    tasks.iter().map(|t| t.id.as_str()).collect()
}

fn repo(repository: &str, branch: &str, path: &str) -> EnvironmentRepository {
    EnvironmentRepository {
        repository: repository.into(),
        branch: branch.into(),
        path: path.into(),
        state: EnvironmentState::Active,
        error: None,
    }
}

fn environment(
    id: &str,
    task_id: &str,
    repositories: Vec<EnvironmentRepository>,
) -> TaskEnvironment {
    TaskEnvironment {
        id: id.into(),
        task_id: task_id.into(),
        path: format!("/work/{task_id}"),
        state: EnvironmentState::Active,
        error: None,
        created_at: NOW,
        updated_at: NOW,
        repositories,
    }
}

fn run(id: &str, queued_at: i64, task_id: Option<&str>) -> AgentRun {
    AgentRun {
        id: id.into(),
        agent: "coder".into(),
        trigger: "manual".into(),
        schedule_key: None,
        fire_at: None,
        status: "running".into(),
        requested_by: "{}".into(),
        credential_id: None,
        queued_at: NOW + queued_at,
        started_at: None,
        finished_at: None,
        exit_code: None,
        error: None,
        task_id: task_id.map(Into::into),
        output: None,
    }
}

#[tokio::test]
async fn a_task_round_trips_every_field() {
    for s in stores().await {
        insert(&s, &task("task_parent", "ws", 0)).await;
        let full = Task {
            id: "task_full".into(),
            workspace: "ws".into(),
            parent_id: Some("task_parent".into()),
            title: "Fix the ledger".into(),
            description: Some("Refunds round the wrong way.\nSee the issue.".into()),
            workflow_step: Some("implement".into()),
            state: TaskState::InProgress,
            workspace_mode: Some("new_workspace".into()),
            repositories: vec![
                RequestedRepository {
                    repository: "ledger".into(),
                    branch: Some("fix/rounding".into()),
                },
                RequestedRepository {
                    repository: "docs".into(),
                    branch: None,
                },
            ],
            external_id: Some("JIRA-42".into()),
            created_by: r#"{"agentRole":{"role":"office","intentId":"i1"}}"#.into(),
            created_in_session: Some("run_office".into()),
            from_office: true,
            agent_profile: Some("careful-coder".into()),
            created_at: NOW + 1,
            updated_at: NOW + 2,
        };
        insert(&s, &full).await;
        assert_eq!(
            s.store.task("task_full").await.unwrap(),
            Some(full.clone()),
            "{}",
            s.name
        );
        assert_eq!(
            s.store.task_by_external_id("ws", "JIRA-42").await.unwrap(),
            Some(full.clone()),
            "{}",
            s.name
        );
        // A key is looked up in its workspace only.
        assert_eq!(
            s.store
                .task_by_external_id("other", "JIRA-42")
                .await
                .unwrap(),
            None
        );
        assert_eq!(s.store.task("task_missing").await.unwrap(), None);
        // The task with nothing optional comes back with nothing optional.
        assert_eq!(
            s.store.task("task_parent").await.unwrap(),
            Some(task("task_parent", "ws", 0)),
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

/// Of racing creators with one idempotency key, through two store handles on the same
/// database (as two replicas would), exactly one inserts and every other learns its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_inserts_with_one_external_id_store_exactly_one_task() {
    for s in stores().await {
        let other = Store::open(&s.location).await.unwrap();
        let handles = [&s.store, &other];
        let racers: Vec<Task> = (0..8)
            .map(|i| with_key(&format!("task_racer{i}"), "ws", "key-1"))
            .collect();
        let inserts = racers
            .iter()
            .enumerate()
            .map(|(i, t)| handles[i % 2].insert_task(t));
        let results: Vec<TaskInsert> = futures::future::join_all(inserts)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let winners: Vec<&str> = racers
            .iter()
            .zip(&results)
            .filter(|(_, r)| **r == TaskInsert::Inserted)
            .map(|(t, _)| t.id.as_str())
            .collect();
        assert_eq!(winners.len(), 1, "{}: {results:?}", s.name);
        let winner = winners[0];
        for r in results.iter().filter(|r| **r != TaskInsert::Inserted) {
            assert_eq!(
                *r,
                TaskInsert::ExternalIdTaken {
                    existing: winner.into()
                },
                "{}",
                s.name
            );
        }
        let stored = s.store.tasks(&TaskFilter::default()).await.unwrap();
        assert_eq!(ids(&stored), vec![winner], "{}", s.name);
        // The same key in another workspace is another task's; tasks without keys never clash.
        insert(&s, &with_key("task_elsewhere", "other", "key-1")).await;
        insert(&s, &task("task_nokey1", "ws", 0)).await;
        insert(&s, &task("task_nokey2", "ws", 0)).await;
        drop(other);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_retried_insert_finds_itself_and_a_taken_id_is_refused() {
    for s in stores().await {
        let t = with_key("task_a", "ws", "key-a");
        insert(&s, &t).await;
        assert_eq!(
            s.store.insert_task(&t).await.unwrap(),
            TaskInsert::ExternalIdTaken {
                existing: "task_a".into()
            },
            "{}",
            s.name
        );
        let err = s
            .store
            .insert_task(&task("task_a", "ws", 5))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{}: {err}", s.name);
        assert_eq!(err.to_string(), "a task `task_a` exists already");
        assert_eq!(s.store.task("task_a").await.unwrap(), Some(t), "{}", s.name);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_task_whose_parent_does_not_exist_is_refused() {
    for s in stores().await {
        let err = s
            .store
            .insert_task(&child("task_orphan", "task_nobody", 0))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{}: {err}", s.name);
        assert_eq!(
            err.to_string(),
            "there is no task `task_nobody` to be the parent of task `task_orphan`"
        );
        assert_eq!(s.store.task("task_orphan").await.unwrap(), None);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn tasks_are_listed_newest_first_by_workspace_parent_and_state() {
    for s in stores().await {
        insert(&s, &task("task_p", "ws", 0)).await;
        insert(&s, &child("task_c1", "task_p", 10)).await;
        // Created at the same time as task_c1: the id breaks the tie.
        insert(&s, &child("task_c2", "task_p", 10)).await;
        insert(
            &s,
            &Task {
                state: TaskState::Done,
                ..child("task_c3", "task_p", 20)
            },
        )
        .await;
        insert(&s, &task("task_other", "other", 30)).await;

        let all = s.store.tasks(&TaskFilter::default()).await.unwrap();
        assert_eq!(
            ids(&all),
            ["task_other", "task_c3", "task_c2", "task_c1", "task_p"],
            "{}",
            s.name
        );
        let in_ws = s
            .store
            .tasks(&TaskFilter {
                workspace: Some("ws".into()),
                limit: Some(2),
                ..TaskFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(ids(&in_ws), ["task_c3", "task_c2"], "{}", s.name);
        let open_children = s
            .store
            .tasks(&TaskFilter {
                parent: Some("task_p".into()),
                states: Some(vec![TaskState::Todo, TaskState::InProgress]),
                ..TaskFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(ids(&open_children), ["task_c2", "task_c1"], "{}", s.name);
        let no_state = s
            .store
            .tasks(&TaskFilter {
                states: Some(Vec::new()),
                ..TaskFilter::default()
            })
            .await
            .unwrap();
        assert!(no_state.is_empty(), "{}", s.name);
        let children = s.store.children("task_p").await.unwrap();
        assert_eq!(
            ids(&children),
            ["task_c3", "task_c2", "task_c1"],
            "{}",
            s.name
        );
        assert!(s.store.children("task_c1").await.unwrap().is_empty());
        s.cleanup().await;
    }
}

#[tokio::test]
async fn an_update_changes_only_the_given_fields_and_sets_updated_at() {
    for s in stores().await {
        let original = Task {
            description: Some("before".into()),
            workflow_step: Some("plan".into()),
            ..task("task_u", "ws", 0)
        };
        insert(&s, &original).await;
        let later = Millis(NOW + 1_000);
        let changed = s
            .store
            .update_task(
                "task_u",
                &TaskChange {
                    title: Some("renamed".into()),
                    state: Some(TaskState::Review),
                    ..TaskChange::default()
                },
                later,
            )
            .await
            .unwrap();
        let expected = Task {
            title: "renamed".into(),
            state: TaskState::Review,
            updated_at: later.0,
            ..original.clone()
        };
        assert_eq!(changed, Some(expected.clone()), "{}", s.name);
        assert_eq!(s.store.task("task_u").await.unwrap(), Some(expected));

        let last = s
            .store
            .update_task(
                "task_u",
                &TaskChange {
                    description: Some("after".into()),
                    workflow_step: Some("review".into()),
                    ..TaskChange::default()
                },
                Millis(NOW + 2_000),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(last.description.as_deref(), Some("after"));
        assert_eq!(last.workflow_step.as_deref(), Some("review"));
        assert_eq!(last.title, "renamed");
        assert_eq!(last.state, TaskState::Review);
        assert_eq!(last.created_at, original.created_at);
        assert_eq!(last.updated_at, NOW + 2_000);

        let missing = s
            .store
            .update_task("task_missing", &TaskChange::default(), later)
            .await
            .unwrap();
        assert_eq!(missing, None, "{}", s.name);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_task_with_children_is_not_deleted_and_nothing_changes() {
    for s in stores().await {
        insert(&s, &task("task_p", "ws", 0)).await;
        insert(&s, &child("task_c1", "task_p", 1)).await;
        insert(&s, &child("task_c2", "task_p", 2)).await;
        insert(&s, &child("task_g", "task_c1", 3)).await;
        let env = environment(
            "env_p",
            "task_p",
            vec![repo("ledger", "main", "/work/p/ledger")],
        );
        assert!(s.store.insert_environment(&env).await.unwrap());

        let err = s.store.delete_task("task_p").await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{}: {err}", s.name);
        assert_eq!(
            err.to_string(),
            "task `task_p` has 2 child tasks; delete them first"
        );
        let err = s.store.delete_task("task_c1").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "task `task_c1` has 1 child task; delete them first"
        );
        let left = s.store.tasks(&TaskFilter::default()).await.unwrap();
        assert_eq!(
            ids(&left),
            ["task_g", "task_c2", "task_c1", "task_p"],
            "{}",
            s.name
        );
        assert_eq!(
            s.store.environment("task_p").await.unwrap(),
            Some(env),
            "{}",
            s.name
        );

        // Leaves first, and the parent goes with its environment.
        for id in ["task_g", "task_c1", "task_c2", "task_p"] {
            assert!(s.store.delete_task(id).await.unwrap(), "{}: {id}", s.name);
        }
        assert_eq!(s.store.task("task_p").await.unwrap(), None);
        assert_eq!(s.store.environment("task_p").await.unwrap(), None);
        assert!(!s.store.delete_task("task_p").await.unwrap(), "{}", s.name);
        // Its environment id is free again.
        insert(&s, &task("task_q", "ws", 9)).await;
        assert!(
            s.store
                .insert_environment(&environment("env_p", "task_q", Vec::new()))
                .await
                .unwrap(),
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn an_environment_keeps_its_repositories_in_order_with_duplicates() {
    for s in stores().await {
        insert(&s, &task("task_e", "ws", 0)).await;
        let env = environment(
            "env_e",
            "task_e",
            vec![
                repo("ledger", "main", "/work/e/ledger"),
                repo("docs", "dev", "/work/e/docs"),
                repo("ledger", "main", "/work/e/ledger-2"),
            ],
        );
        assert!(s.store.insert_environment(&env).await.unwrap());
        assert_eq!(
            s.store.environment("task_e").await.unwrap(),
            Some(env.clone()),
            "{}",
            s.name
        );
        // One environment per task: a second one is not stored.
        let second = environment("env_e2", "task_e", vec![repo("x", "y", "/z")]);
        assert!(!s.store.insert_environment(&second).await.unwrap());
        assert_eq!(
            s.store.environment("task_e").await.unwrap(),
            Some(env.clone())
        );
        let err = s
            .store
            .insert_environment(&environment("env_x", "task_missing", Vec::new()))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{}: {err}", s.name);
        assert_eq!(
            err.to_string(),
            "there is no task `task_missing` to have environment `env_x`"
        );

        // Both duplicates change; the store does not pick one.
        let changed = s
            .store
            .set_environment_repo_state(
                "env_e",
                "ledger",
                "main",
                EnvironmentState::Failed,
                Some("clone failed"),
            )
            .await
            .unwrap();
        assert_eq!(changed, 2, "{}", s.name);
        let none = s
            .store
            .set_environment_repo_state("env_e", "ledger", "dev", EnvironmentState::Deleted, None)
            .await
            .unwrap();
        assert_eq!(none, 0, "{}", s.name);
        assert!(
            s.store
                .set_environment_state(
                    "env_e",
                    EnvironmentState::Failed,
                    Some("ledger failed"),
                    Millis(NOW + 5),
                )
                .await
                .unwrap()
        );
        let failed = |r: &EnvironmentRepository| EnvironmentRepository {
            state: EnvironmentState::Failed,
            error: Some("clone failed".into()),
            ..r.clone()
        };
        let expected = TaskEnvironment {
            state: EnvironmentState::Failed,
            error: Some("ledger failed".into()),
            updated_at: NOW + 5,
            repositories: vec![
                failed(&env.repositories[0]),
                env.repositories[1].clone(),
                failed(&env.repositories[2]),
            ],
            ..env.clone()
        };
        assert_eq!(
            s.store.environment("task_e").await.unwrap(),
            Some(expected),
            "{}",
            s.name
        );
        // Back to active: the error is cleared.
        assert!(
            s.store
                .set_environment_state("env_e", EnvironmentState::Active, None, Millis(NOW + 6))
                .await
                .unwrap()
        );
        let active = s.store.environment("task_e").await.unwrap().unwrap();
        assert_eq!(
            (active.state, active.error, active.updated_at),
            (EnvironmentState::Active, None, NOW + 6)
        );
        assert!(
            !s.store
                .set_environment_state("env_missing", EnvironmentState::Deleted, None, Millis(NOW))
                .await
                .unwrap()
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn stored_states_the_binary_does_not_know_are_errors() {
    for s in stores().await {
        insert(&s, &task("task_s", "ws", 0)).await;
        let env = environment("env_s", "task_s", vec![repo("ledger", "main", "/l")]);
        assert!(s.store.insert_environment(&env).await.unwrap());

        s.store
            .execute_raw("UPDATE tasks SET state = 'frozen' WHERE id = 'task_s'")
            .await
            .unwrap();
        let unreadable =
            "the store holds unreadable data: task `task_s` has an unknown state `frozen`";
        let err = s.store.task("task_s").await.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt(_)), "{}: {err}", s.name);
        assert_eq!(err.to_string(), unreadable);
        let err = s.store.tasks(&TaskFilter::default()).await.unwrap_err();
        assert_eq!(err.to_string(), unreadable, "{}", s.name);

        s.store
            .execute_raw(
                "UPDATE tasks SET state = 'todo', repositories = 'ledger' WHERE id = 'task_s'",
            )
            .await
            .unwrap();
        let err = s.store.task("task_s").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "the store holds unreadable data: task `task_s` has unreadable repositories: expected value at line 1 column 1",
            "{}",
            s.name
        );

        s.store
            .execute_raw(
                "UPDATE task_environment_repos SET state = 'gone' WHERE environment_id = 'env_s'",
            )
            .await
            .unwrap();
        let err = s.store.environment("task_s").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "the store holds unreadable data: repository `ledger` of environment `env_s` has an unknown state `gone`",
            "{}",
            s.name
        );
        s.store
            .execute_raw("UPDATE task_environments SET state = 'paused' WHERE id = 'env_s'")
            .await
            .unwrap();
        let err = s.store.environment("task_s").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "the store holds unreadable data: environment `env_s` has an unknown state `paused`",
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn the_runs_bound_to_a_task_are_its_sessions_and_outlive_it() {
    for s in stores().await {
        insert(&s, &task("task_r", "ws", 0)).await;
        insert(&s, &task("task_other", "ws", 0)).await;
        for r in [
            run("run_1", 1, Some("task_r")),
            run("run_2", 2, Some("task_r")),
            run("run_3", 3, Some("task_other")),
            run("run_4", 4, None),
        ] {
            assert!(s.store.insert_agent_run(&r).await.unwrap(), "{}", s.name);
        }
        let sessions = s.store.runs_of_task("task_r").await.unwrap();
        assert_eq!(
            sessions,
            vec![
                run("run_2", 2, Some("task_r")),
                run("run_1", 1, Some("task_r"))
            ],
            "{}",
            s.name
        );
        assert_eq!(
            s.store.agent_run("run_4").await.unwrap().unwrap().task_id,
            None
        );

        // A lifecycle update keeps the binding, whatever the run it is given says.
        let mut finished = run("run_1", 1, None);
        finished.status = "succeeded".into();
        s.store.update_agent_run(&finished).await.unwrap();
        let stored = s.store.agent_run("run_1").await.unwrap().unwrap();
        assert_eq!(
            (stored.status.as_str(), stored.task_id.as_deref()),
            ("succeeded", Some("task_r")),
            "{}",
            s.name
        );

        // Binding is its own change.
        assert!(s.store.set_run_task("run_4", Some("task_r")).await.unwrap());
        assert!(s.store.set_run_task("run_2", None).await.unwrap());
        assert!(
            !s.store
                .set_run_task("run_missing", Some("task_r"))
                .await
                .unwrap()
        );
        let sessions = s.store.runs_of_task("task_r").await.unwrap();
        let session_ids: Vec<&str> = sessions.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(session_ids, ["run_4", "run_1"], "{}", s.name);

        // The runs are history: deleting the task leaves them, naming it.
        assert!(s.store.delete_task("task_r").await.unwrap());
        assert_eq!(s.store.runs_of_task("task_r").await.unwrap().len(), 2);
        assert!(
            s.store
                .runs_of_task("task_missing")
                .await
                .unwrap()
                .is_empty()
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_stopped_session_stays_stopped_and_loses_its_credential() {
    for s in stores().await {
        insert(&s, &task("task_st", "ws", 0)).await;
        let token = s
            .store
            .create_token(
                warden_store::TokenRequest {
                    principal: warden_core::principal::Principal::User {
                        name: warden_core::name::Name::new("coder").unwrap(),
                    },
                    projects: None,
                    scopes: None,
                    ttl: None,
                    description: None,
                    kind: warden_core::principal::CredentialKind::Run,
                },
                "test",
                Millis(NOW),
            )
            .await
            .unwrap();
        let mut running = run("run_st", 1, Some("task_st"));
        running.credential_id = Some(token.credential.id.clone());
        let mut done = run("run_done", 0, Some("task_st"));
        done.status = "succeeded".into();
        for r in [&running, &done] {
            assert!(s.store.insert_agent_run(r).await.unwrap(), "{}", s.name);
        }
        let stopped = s
            .store
            .stop_task_sessions(
                "task_st",
                "stale",
                "agentRole:j/reconciler:r",
                Millis(NOW + 5),
            )
            .await
            .unwrap();
        assert_eq!(stopped, ["run_st"], "only what still runs: {}", s.name);
        let revoked = s.store.credentials().await.unwrap();
        let credential = revoked
            .iter()
            .find(|c| c.id == token.credential.id)
            .unwrap();
        assert!(credential.revoked_at.is_some(), "{}", s.name);

        // The runner reports its end later: the run stays stopped, for its reason.
        running.status = "failed".into();
        running.error = Some("the runner exited with signal 9".into());
        running.finished_at = Some(NOW + 7);
        s.store.update_agent_run(&running).await.unwrap();
        let stored = s.store.agent_run("run_st").await.unwrap().unwrap();
        assert_eq!(
            (
                stored.status.as_str(),
                stored.error.as_deref(),
                stored.finished_at
            ),
            ("stopped", Some("stale"), Some(NOW + 7)),
            "{}",
            s.name
        );
        assert_eq!(
            s.store.agent_run("run_done").await.unwrap().unwrap().status,
            "succeeded"
        );
        // Stopping again stops nothing.
        assert!(
            s.store
                .stop_task_sessions("task_st", "again", "x", Millis(NOW + 9))
                .await
                .unwrap()
                .is_empty()
        );
        s.cleanup().await;
    }
}
