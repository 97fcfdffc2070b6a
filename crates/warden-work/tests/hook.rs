//! A forge's CI report (WORK-3) on every backend: a failure reopens a merged task of an open
//! epic, is recorded only in a `done` one, and a report on a task no longer `merged` changes
//! nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use warden_core::config::{Config, parse_documents};
use warden_core::policy::Policy;
use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState, Risk};
use warden_runtime::Secrets;
use warden_store::{Epic, EpicTask, Store};
use warden_work::forges::hook::{Delivery, deliver, sign};

const NOW: i64 = 1_800_000_000_000;
const MERGE: &str = "0123456789abcdef0123456789abcdef01234567";

fn policy() -> Policy {
    let yaml = "kind: Project\nname: web\n---\nkind: GitProvider\nname: forge\nproject: web\n\
                type: git\nurl: /srv/git\nwebhookSecret: \"${secret:hook}\"\n";
    let config = Config::validate(parse_documents("t.yaml", yaml).unwrap()).unwrap();
    Policy::compile(config, 1)
}

async fn merged_task(store: &Store, epic_state: EpicState, id: &str) {
    let epic = Epic {
        id: format!("epc_{id}"),
        project: "web".into(),
        title: "Ledger".into(),
        description: String::new(),
        criteria: Vec::new(),
        tradeoffs: String::new(),
        risk: Risk::Low,
        state: epic_state,
        created_by: "user:alice".into(),
        created_at: Millis(NOW),
        updated_at: Millis(NOW),
    };
    store.insert_epic(&epic).await.unwrap();
    let task = EpicTask {
        id: format!("ept_{id}"),
        epic_id: epic.id.clone(),
        task_id: format!("task_{id}"),
        title: "Fix".into(),
        repository: "ledger".into(),
        base_branch: "main".into(),
        branch: "fix".into(),
        state: EpicTaskState::Accepted,
        created_by: "user:alice".into(),
        merge_commit: None,
        created_at: Millis(NOW),
        updated_at: Millis(NOW),
        conflicts: Vec::new(),
        ci_state: None,
        ci_url: None,
    };
    store.insert_epic_task(&task).await.unwrap();
    let merge = if id == "a" {
        MERGE.to_owned()
    } else {
        MERGE.replace('0', "f")
    };
    assert!(
        store
            .move_epic_task(
                &task.id,
                EpicTaskState::Accepted,
                EpicTaskState::Merged,
                "user:alice",
                Some(&merge),
                Millis(NOW + 1),
            )
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn a_failure_reopens_a_task_of_an_open_epic_and_is_recorded_only_in_a_done_one() {
    let secrets_dir = tempfile::tempdir().unwrap();
    std::fs::write(secrets_dir.path().join("hook"), "s3cret\n").unwrap();
    let secrets = Secrets::new(Some(secrets_dir.path().to_path_buf()));
    let policy = policy();
    for s in warden_testkit::stores().await {
        let store = &s.store;
        merged_task(store, EpicState::Open, "a").await;
        merged_task(store, EpicState::Done, "b").await;
        let report = |commit: &str, id: &'static str| {
            let body = serde_json::json!({"commit": commit, "state": "failure", "url": "https://ci.example/1"})
                .to_string();
            (body, id)
        };
        let send = |body: &str, id: &'static str| {
            let signature = sign("s3cret", body.as_bytes());
            let body = body.to_owned();
            let (policy, secrets) = (&policy, &secrets);
            async move {
                let delivery = Delivery {
                    signature: Some(&signature),
                    id: Some(id),
                    event: None,
                    body: body.as_bytes(),
                };
                deliver(store, policy, secrets, "forge", delivery, Millis(NOW + 2)).await
            }
        };

        // Open epic: reopened. Done epic: recorded, still merged.
        let (body, id) = report(MERGE, "d-1");
        let taken = send(&body, id).await.unwrap();
        assert_eq!(taken.reopened, ["ept_a"], "{}", s.name);
        let done_commit = MERGE.replace('0', "f");
        let (body, id) = report(&done_commit, "d-2");
        let taken = send(&body, id).await.unwrap();
        assert_eq!(
            (taken.recorded.len(), taken.reopened.len()),
            (1, 0),
            "{}",
            s.name
        );
        let b = store.epic_task("ept_b").await.unwrap().unwrap();
        assert_eq!(
            (b.state, b.ci_state.as_deref()),
            (EpicTaskState::Merged, Some("failure"))
        );

        // A report on the reopened task's old merge commit, under a new id and body, finds no
        // merged task: nothing is recorded.
        let body = serde_json::json!({"commit": MERGE, "state": "success"}).to_string();
        let taken = send(&body, "d-3").await.unwrap();
        assert!(taken.recorded.is_empty(), "{}: {taken:?}", s.name);
        let a = store.epic_task("ept_a").await.unwrap().unwrap();
        assert_eq!(
            (a.state, a.ci_state.as_deref()),
            (EpicTaskState::Reopened, Some("failure"))
        );
    }
}
