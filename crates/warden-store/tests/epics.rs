//! The store contract of epics and epic tasks (WORK-1), on every backend
//! `warden_testkit::stores()` provides: what is stored reads back, a move happens only from
//! the state it was read in, and every move is recorded.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::sync::Arc;

use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState, Risk, Verdict};
use warden_store::{Epic, EpicChange, EpicFilter, EpicTask, Review, Store};
use warden_testkit::stores;

const NOW: i64 = 1_800_000_000_000;
const ALICE: &str = "user:alice";
const BOB: &str = "user:bob";

fn epic(id: &str, project: &str, at: i64) -> Epic {
    Epic {
        id: id.into(),
        project: project.into(),
        title: "Refunds in one step".into(),
        description: "Refund from the ledger without a ticket.".into(),
        criteria: vec!["a refund is one call".into(), "it is audited".into()],
        tradeoffs: "no partial refunds yet".into(),
        risk: Risk::High,
        state: EpicState::Draft,
        created_by: ALICE.into(),
        created_at: Millis(at),
        updated_at: Millis(at),
    }
}

fn epic_task(id: &str, epic_id: &str, at: i64) -> EpicTask {
    EpicTask {
        id: id.into(),
        epic_id: epic_id.into(),
        task_id: format!("task_{id}"),
        title: "The refund tool".into(),
        repository: "ledger".into(),
        base_branch: "main".into(),
        branch: "refund-tool".into(),
        state: EpicTaskState::Proposed,
        created_by: ALICE.into(),
        merge_commit: None,
        created_at: Millis(at),
        updated_at: Millis(at),
        conflicts: Vec::new(),
        ci_state: None,
        ci_url: None,
    }
}

#[tokio::test]
async fn an_epic_reads_back_changes_and_lists_by_project() {
    for s in stores().await {
        let st = &s.store;
        st.insert_epic(&epic("epc_a", "payments", NOW))
            .await
            .unwrap();
        st.insert_epic(&epic("epc_b", "payments", NOW + 1))
            .await
            .unwrap();
        st.insert_epic(&epic("epc_c", "search", NOW + 2))
            .await
            .unwrap();
        assert_eq!(
            st.epic("epc_a").await.unwrap(),
            Some(epic("epc_a", "payments", NOW)),
            "{}",
            s.name
        );
        assert_eq!(st.epic("epc_none").await.unwrap(), None);
        let ids = |epics: Vec<Epic>| epics.into_iter().map(|e| e.id).collect::<Vec<_>>();
        let of = |projects: &[&str], state| EpicFilter {
            projects: projects.iter().map(|p| (*p).to_owned()).collect(),
            state,
        };
        assert_eq!(
            ids(st.epics(&of(&["payments"], None), 10).await.unwrap()),
            ["epc_b", "epc_a"]
        );
        assert_eq!(
            ids(st
                .epics(&of(&["payments", "search"], None), 10)
                .await
                .unwrap()),
            ["epc_c", "epc_b", "epc_a"]
        );
        assert_eq!(
            ids(st
                .epics(&of(&["payments", "search"], None), 1)
                .await
                .unwrap()),
            ["epc_c"]
        );
        assert!(st.epics(&of(&[], None), 10).await.unwrap().is_empty());
        assert!(
            st.epics(&of(&["payments"], Some(EpicState::Open)), 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Only what the change gives is set.
        let change = EpicChange {
            criteria: Some(vec!["one call".into()]),
            risk: Some(Risk::Critical),
            ..EpicChange::default()
        };
        assert!(
            st.update_epic("epc_a", &change, Millis(NOW + 5))
                .await
                .unwrap()
        );
        let changed = st.epic("epc_a").await.unwrap().unwrap();
        assert_eq!(changed.criteria, ["one call"]);
        assert_eq!(changed.risk, Risk::Critical);
        assert_eq!(changed.title, "Refunds in one step");
        assert_eq!(changed.updated_at, Millis(NOW + 5));
        assert!(
            !st.update_epic("epc_none", &change, Millis(NOW))
                .await
                .unwrap()
        );
    }
}

#[tokio::test]
async fn a_move_happens_only_from_the_state_it_was_read_in_and_is_recorded() {
    for s in stores().await {
        let st = &s.store;
        st.insert_epic(&epic("epc_a", "payments", NOW))
            .await
            .unwrap();
        st.insert_epic_task(&epic_task("ept_1", "epc_a", NOW + 1))
            .await
            .unwrap();
        st.insert_epic_task(&epic_task("ept_2", "epc_a", NOW + 2))
            .await
            .unwrap();
        let tasks = st.epic_tasks("epc_a").await.unwrap();
        assert_eq!(tasks.len(), 2, "{}", s.name);
        assert_eq!(tasks[0], epic_task("ept_1", "epc_a", NOW + 1));
        assert!(st.epic_tasks("epc_none").await.unwrap().is_empty());

        assert!(
            st.move_epic(
                "epc_a",
                EpicState::Draft,
                EpicState::Open,
                BOB,
                Millis(NOW + 3)
            )
            .await
            .unwrap()
        );
        // A second move from the state it no longer holds changes nothing.
        assert!(
            !st.move_epic(
                "epc_a",
                EpicState::Draft,
                EpicState::Archived,
                BOB,
                Millis(NOW + 4)
            )
            .await
            .unwrap()
        );
        assert_eq!(
            st.epic("epc_a").await.unwrap().unwrap().state,
            EpicState::Open
        );

        let merged = [
            (EpicTaskState::Proposed, EpicTaskState::Ready),
            (EpicTaskState::Ready, EpicTaskState::InProgress),
            (EpicTaskState::InProgress, EpicTaskState::Review),
            (EpicTaskState::Review, EpicTaskState::Accepted),
        ];
        for (i, (from, to)) in merged.into_iter().enumerate() {
            let at = Millis(NOW + 10 + i64::try_from(i).unwrap());
            assert!(
                st.move_epic_task("ept_1", from, to, BOB, None, at)
                    .await
                    .unwrap()
            );
        }
        assert!(
            st.move_epic_task(
                "ept_1",
                EpicTaskState::Accepted,
                EpicTaskState::Merged,
                BOB,
                Some("a1b2c3"),
                Millis(NOW + 20)
            )
            .await
            .unwrap()
        );
        let task = st.epic_task("ept_1").await.unwrap().unwrap();
        assert_eq!(task.state, EpicTaskState::Merged);
        assert_eq!(task.merge_commit.as_deref(), Some("a1b2c3"));
        assert_eq!(task.updated_at, Millis(NOW + 20));
        assert!(
            !st.move_epic_task(
                "ept_2",
                EpicTaskState::Ready,
                EpicTaskState::InProgress,
                BOB,
                None,
                Millis(NOW + 21)
            )
            .await
            .unwrap()
        );
        assert!(
            !st.move_epic_task(
                "ept_none",
                EpicTaskState::Proposed,
                EpicTaskState::Ready,
                BOB,
                None,
                Millis(NOW)
            )
            .await
            .unwrap()
        );
        assert_eq!(
            st.epic_task("ept_2").await.unwrap().unwrap().state,
            EpicTaskState::Proposed
        );

        let moves = st.work_moves("ept_1").await.unwrap();
        let steps: Vec<(Option<&str>, &str, &str)> = moves
            .iter()
            .map(|m| (m.from.as_deref(), m.to.as_str(), m.moved_by.as_str()))
            .collect();
        assert_eq!(
            steps,
            [
                (None, "proposed", ALICE),
                (Some("proposed"), "ready", BOB),
                (Some("ready"), "in_progress", BOB),
                (Some("in_progress"), "review", BOB),
                (Some("review"), "accepted", BOB),
                (Some("accepted"), "merged", BOB),
            ]
        );
        assert_eq!(
            moves.iter().map(|m| m.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5, 6]
        );
        assert_eq!(moves[5].at, Millis(NOW + 20));
        let epic_moves = st.work_moves("epc_a").await.unwrap();
        assert_eq!(epic_moves.len(), 2);
        assert_eq!(epic_moves[1].from.as_deref(), Some("draft"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_racing_moves_from_one_state_exactly_one_happens() {
    for s in stores().await {
        let st = &s.store;
        st.insert_epic(&epic("epc_a", "payments", NOW))
            .await
            .unwrap();
        st.insert_epic_task(&epic_task("ept_1", "epc_a", NOW))
            .await
            .unwrap();
        // Two handles on one database, as two replicas hold.
        let handles = [
            Arc::new(Store::open(&s.location).await.unwrap()),
            Arc::new(Store::open(&s.location).await.unwrap()),
        ];
        let mut racers = Vec::new();
        for n in 0..8 {
            let st = handles[n % 2].clone();
            racers.push(tokio::spawn(async move {
                st.move_epic_task(
                    "ept_1",
                    EpicTaskState::Proposed,
                    EpicTaskState::Ready,
                    &format!("user:racer{n}"),
                    None,
                    Millis(NOW + 1),
                )
                .await
                .unwrap()
            }));
        }
        let mut won = 0;
        for racer in racers {
            won += usize::from(racer.await.unwrap());
        }
        assert_eq!(won, 1, "{}", s.name);
        assert_eq!(st.work_moves("ept_1").await.unwrap().len(), 2);
    }
}

#[tokio::test]
async fn reviews_are_numbered_in_order_recorded_only_in_review_and_read_back_as_given() {
    for s in stores().await {
        let st = &s.store;
        st.insert_epic(&epic("epc_a", "payments", NOW))
            .await
            .unwrap();
        st.insert_epic_task(&epic_task("ept_1", "epc_a", NOW))
            .await
            .unwrap();
        let review = |reviewer: &str, verdict, at| Review {
            epic_task_id: "ept_1".into(),
            seq: 0,
            reviewer: reviewer.into(),
            verdict,
            comment: "looked at it".into(),
            head: Some("a1b2".into()),
            critical: reviewer == BOB,
            at: Millis(at),
        };
        let first = review(BOB, Verdict::Approve, NOW + 1);
        // Not in review yet: nothing is written.
        assert_eq!(
            st.insert_review(&first, None).await.unwrap(),
            None,
            "{}",
            s.name
        );
        assert!(st.reviews("ept_1").await.unwrap().is_empty());
        for (from, to) in [
            (EpicTaskState::Proposed, EpicTaskState::Ready),
            (EpicTaskState::Ready, EpicTaskState::InProgress),
            (EpicTaskState::InProgress, EpicTaskState::Review),
        ] {
            assert!(
                st.move_epic_task("ept_1", from, to, ALICE, None, Millis(NOW))
                    .await
                    .unwrap()
            );
        }
        let second = review("user:carol", Verdict::Changes, NOW + 2);
        assert_eq!(st.insert_review(&first, None).await.unwrap(), Some(1));
        // `changes` moves the task back, in the same transaction, recorded as the reviewer's.
        assert_eq!(
            st.insert_review(&second, Some(EpicTaskState::InProgress))
                .await
                .unwrap(),
            Some(2)
        );
        let task = st.epic_task("ept_1").await.unwrap().unwrap();
        assert_eq!(task.state, EpicTaskState::InProgress);
        let last = st.work_moves("ept_1").await.unwrap().pop().unwrap();
        assert_eq!(
            (
                last.from.as_deref(),
                last.to.as_str(),
                last.moved_by.as_str()
            ),
            (Some("review"), "in_progress", "user:carol")
        );
        assert_eq!(st.insert_review(&first, None).await.unwrap(), None);
        let read = st.reviews("ept_1").await.unwrap();
        assert_eq!(
            read,
            [Review { seq: 1, ..first }, Review { seq: 2, ..second }]
        );
        assert!(st.reviews("ept_none").await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_forges_reports_are_kept_found_by_merge_commit_and_deliveries_taken_once() {
    for s in stores().await {
        let st = &s.store;
        st.insert_epic(&epic("epc_a", "payments", NOW))
            .await
            .unwrap();
        st.insert_epic(&epic("epc_b", "search", NOW)).await.unwrap();
        let mut merged = epic_task("ept_a", "epc_a", NOW);
        merged.state = EpicTaskState::Accepted;
        st.insert_epic_task(&merged).await.unwrap();
        let mut other = epic_task("ept_b", "epc_b", NOW);
        other.state = EpicTaskState::Accepted;
        st.insert_epic_task(&other).await.unwrap();
        for id in ["ept_a", "ept_b"] {
            let moved = st
                .move_epic_task(
                    id,
                    EpicTaskState::Accepted,
                    EpicTaskState::Merged,
                    ALICE,
                    Some("abc123"),
                    Millis(NOW + 1),
                )
                .await
                .unwrap();
            assert!(moved, "{}", s.name);
        }

        // By merge commit, within the project only.
        let found = st.merged_epic_tasks("payments", "abc123").await.unwrap();
        assert_eq!(
            found.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["ept_a"],
            "{}",
            s.name
        );
        assert!(
            st.merged_epic_tasks("payments", "def456")
                .await
                .unwrap()
                .is_empty()
        );

        // A CI report and conflicts read back; an unknown task is false.
        let ci = warden_store::Report::Ci {
            state: "failure",
            url: Some("https://ci.example/7"),
        };
        assert!(
            st.report_epic_task("ept_a", ci, Millis(NOW + 2))
                .await
                .unwrap()
        );
        let paths = vec!["a.txt".to_owned(), "b/c.rs".to_owned()];
        let conflicts = warden_store::Report::Conflicts(&paths);
        assert!(
            st.report_epic_task("ept_a", conflicts, Millis(NOW + 3))
                .await
                .unwrap()
        );
        assert!(
            !st.report_epic_task("ept_none", ci, Millis(NOW + 3))
                .await
                .unwrap()
        );
        let got = st.epic_task("ept_a").await.unwrap().unwrap();
        assert_eq!(
            (
                got.ci_state.as_deref(),
                got.ci_url.as_deref(),
                got.conflicts
            ),
            (Some("failure"), Some("https://ci.example/7"), paths),
            "{}",
            s.name
        );

        // A delivery is known by any of its ids, per provider; old ones are forgotten.
        let ids = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(
            !st.git_delivery_seen("forge", &ids(&["d-1", "sha256:x"]))
                .await
                .unwrap()
        );
        st.record_git_delivery("forge", &ids(&["d-1", "sha256:x"]), Millis(NOW))
            .await
            .unwrap();
        assert!(
            st.git_delivery_seen("forge", &ids(&["d-2", "sha256:x"]))
                .await
                .unwrap()
        );
        assert!(st.git_delivery_seen("forge", &ids(&["d-1"])).await.unwrap());
        assert!(!st.git_delivery_seen("other", &ids(&["d-1"])).await.unwrap());
        st.record_git_delivery("forge", &ids(&["d-1"]), Millis(NOW))
            .await
            .unwrap();
        let later = Millis(NOW + 31 * 24 * 3600 * 1000);
        st.record_git_delivery("forge", &ids(&["d-9"]), later)
            .await
            .unwrap();
        assert!(
            !st.git_delivery_seen("forge", &ids(&["d-1"])).await.unwrap(),
            "{}",
            s.name
        );
    }
}
