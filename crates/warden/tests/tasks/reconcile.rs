//! Reconciliation (WORK-4) on an injected clock: a Reconciler moves the epic tasks
//! `in_progress` with no activity for `staleAfter` back to `ready`, stopping their sessions,
//! and the open epics whose tasks are all merged to `done` — through the governed pipeline as
//! its agent role: refused when the role lacks the capability, parked for approval (agent-role
//! provenance) at `autonomyCap: 1` and not asked twice, audited either way.

use std::sync::Arc;

use serde_json::{Value, json};
use warden_core::time::Millis;
use warden_core::work::EpicTaskState;
use warden_testkit::memory::ManualClock;
use warden_work::reconcilers::{Pass, Reconcilers};

use crate::epics::{PEOPLE, epics_world, open_epic, push, task_moved, work};
use crate::support::*;

/// Three Reconcilers of `web`: `stale-work` (cap 2), `cautious` (cap 1), and `weak`, whose role
/// may only read. None is due during the test (they run on New Year's Day).
const RECONCILERS: &str = "kind: Role\nname: janitor\npermissions: [\"run:projects:web\", \"work:read\", \"work:write\"]\n---\n\
     kind: Role\nname: looker\npermissions: [\"run:projects:web\", \"work:read\"]\n---\n\
     kind: Reconciler\nname: stale-work\nproject: web\nschedule: \"0 0 1 1 *\"\nrole: janitor\nstaleAfter: 2h\n---\n\
     kind: Reconciler\nname: cautious\nproject: web\nschedule: \"0 0 1 1 *\"\nrole: janitor\nautonomyCap: 1\nstaleAfter: 2h\n---\n\
     kind: Reconciler\nname: weak\nproject: web\nschedule: \"0 0 1 1 *\"\nrole: looker\nstaleAfter: 2h\n";

const HOUR: i64 = 3_600_000;

/// An open epic of `web` with a task per branch, each moved to `in_progress`; (epic, tasks).
async fn epic_in_progress(f: &Fixture, token: &str, branches: &[&str]) -> (String, Vec<String>) {
    let epic = open_epic(f, token, "medium").await;
    let mut tasks = Vec::new();
    for branch in branches {
        tasks.push(task_moved(f, token, &epic, branch, &["ready", "in_progress"]).await);
    }
    (epic, tasks)
}

async fn state(f: &Fixture, ept: &str) -> EpicTaskState {
    f.w.store.store.epic_task(ept).await.unwrap().unwrap().state
}

/// What each move of a pass became, as (id, status).
fn outcomes(pass: &Pass) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = pass
        .asked
        .iter()
        .map(|a| (a.id.clone(), a.status.clone()))
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciler_moves_stale_work_as_its_agent_role_within_its_role_and_cap() {
    let clock = Arc::new(ManualClock::at(crate::common::now()));
    let f =
        Fixture::start_on_clock(&format!("{PEOPLE}---\n{RECONCILERS}"), Some(clock.clone())).await;
    let alice = f.w.token("alice", None, None).await;
    let reconcilers = Reconcilers::new(f.w.gateway.clone());
    let store = &f.w.store.store;

    // `hung` has a session that stopped doing anything; `idle` has none; `done` is an epic
    // whose one task is merged.
    let (_, tasks) = epic_in_progress(&f, &alice, &["hung", "idle", "revived"]).await;
    let (hung, idle, revived) = (tasks[0].clone(), tasks[1].clone(), tasks[2].clone());
    let hung_task = store.epic_task(&hung).await.unwrap().unwrap().task_id;
    push(&f, "hung", "hung.txt");
    let session = f.session(&hung_task).await;
    let (finished, merged) = epic_in_progress(&f, &alice, &["merged"]).await;
    let merged = &merged[0];
    work(
        &f,
        &alice,
        "move_task",
        json!({"id": merged, "to": "review"}),
    )
    .await
    .unwrap();
    let at = clock_now(&clock);
    for (from, to) in [
        (EpicTaskState::Review, EpicTaskState::Accepted),
        (EpicTaskState::Accepted, EpicTaskState::Merged),
    ] {
        assert!(
            store
                .move_epic_task(merged, from, to, "user:alice", Some("abc"), at)
                .await
                .unwrap()
        );
    }

    // Nothing is stale yet.
    let pass = reconcilers.reconcile("stale-work").await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [(finished.clone(), "executed".to_owned())],
        "only the finished epic: {pass:?}"
    );
    assert_eq!(
        store.epic(&finished).await.unwrap().unwrap().state,
        warden_core::work::EpicState::Done
    );

    // Three hours later, `fresh` was just moved: activity.
    clock.advance(3 * HOUR);
    let (_, fresh) = epic_in_progress(&f, &alice, &["fresh"]).await;
    let fresh = &fresh[0];

    // A role that may only read: refused at the capability step, audited, nothing changed.
    let before = epics_world(&f).await;
    let pass = reconcilers.reconcile("weak").await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [
            (hung.clone(), "denied".to_owned()),
            (idle.clone(), "denied".to_owned()),
            (revived.clone(), "denied".to_owned())
        ]
    );
    assert!(
        pass.asked
            .iter()
            .all(|a| a.code.as_deref() == Some("CAPABILITY")),
        "{pass:?}"
    );
    assert_eq!(epics_world(&f).await, before);
    let denied = audit(&f, "agentRole:looker/reconciler:weak").await;
    assert!(
        denied
            .iter()
            .any(|r| r["tool"] == "work__move_task" && r["code"] == "CAPABILITY"),
        "{denied:#?}"
    );

    // At cap 1 each move parks for approval, by reference to the agent role; asked once.
    let pass = reconcilers.reconcile("cautious").await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [
            (hung.clone(), "pending_approval".to_owned()),
            (idle.clone(), "pending_approval".to_owned()),
            (revived.clone(), "pending_approval".to_owned())
        ]
    );
    assert_eq!(epics_world(&f).await, before);
    let parked = pass
        .asked
        .iter()
        .find(|a| a.id == idle)
        .and_then(|a| a.approval_id.clone())
        .unwrap();
    let approval = f.w.store.store.approval(&parked).await.unwrap().unwrap();
    assert_eq!(approval.principal, "agentRole:janitor/reconciler:cautious");
    assert_eq!(
        serde_json::from_str::<Value>(approval.requested_by.as_deref().unwrap()).unwrap(),
        json!({"kind": "agentRole", "role": "janitor", "intentId": "reconciler:cautious", "autonomyCap": 1})
    );
    assert_eq!(approval.rule, "reconciler:cautious:autonomy-cap:L1");
    let again = reconcilers.reconcile("cautious").await.unwrap();
    assert_eq!(
        outcomes(&again),
        [
            (hung.clone(), "waiting".to_owned()),
            (idle.clone(), "waiting".to_owned()),
            (revived.clone(), "waiting".to_owned())
        ]
    );

    // Approved, it runs as the agent role (∩ the decider).
    approve(&f, &parked).await;
    assert_eq!(state(&f, &idle).await, EpicTaskState::Ready);
    let moves = store.work_moves(&idle).await.unwrap();
    assert_eq!(
        moves.last().unwrap().moved_by,
        "agentRole:janitor/reconciler:cautious"
    );

    // A task that came back to life while its move waited is checked again when the move
    // runs, and stays.
    let revived_parked = pass
        .asked
        .iter()
        .find(|a| a.id == revived)
        .and_then(|a| a.approval_id.clone())
        .unwrap();
    push(&f, "revived", "revived.txt");
    let revived_task = store.epic_task(&revived).await.unwrap().unwrap().task_id;
    let revived_session = f.session(&revived_task).await;
    approve(&f, &revived_parked).await;
    assert_eq!(state(&f, &revived).await, EpicTaskState::InProgress);
    let refused = store.approval(&revived_parked).await.unwrap().unwrap();
    // The work service said no: the tool's answer is the action's result.
    let message = refused.result.unwrap_or_default();
    assert!(
        message.contains(&format!(
            "epic task `{revived}` is no longer stale: it saw activity at"
        )),
        "{message}"
    );
    assert_eq!(
        store
            .agent_run(&revived_session.run)
            .await
            .unwrap()
            .unwrap()
            .status,
        "running",
        "its session goes on"
    );
    revived_session.end();

    // At the default cap the move runs: `hung` goes back to `ready` and its session stops;
    // `fresh` stays.
    let pass = reconcilers.reconcile("stale-work").await.unwrap();
    assert_eq!(outcomes(&pass), [(hung.clone(), "executed".to_owned())]);
    assert_eq!(state(&f, &hung).await, EpicTaskState::Ready);
    assert_eq!(state(&f, fresh).await, EpicTaskState::InProgress);
    let run = store.agent_run(&session.run).await.unwrap().unwrap();
    assert_eq!(run.status, "stopped");
    assert_eq!(
        run.error.as_deref(),
        Some(
            format!(
                "stopped by agentRole:janitor/reconciler:stale-work: epic task `{hung}` went back to `ready`"
            )
            .as_str()
        )
    );
    let credential = run.credential_id.unwrap();
    let credentials = store.credentials().await.unwrap();
    assert!(
        credentials
            .iter()
            .find(|c| c.id == credential)
            .unwrap()
            .revoked_at
            .is_some(),
        "the session's credential is revoked"
    );
    let executed = audit(&f, "agentRole:janitor/reconciler:stale-work").await;
    assert!(
        executed
            .iter()
            .any(|r| r["tool"] == "work__move_task" && r["decision"] == "allow"),
        "{executed:#?}"
    );

    // People cannot make that move; the refusal says who does.
    let refused = work(&f, &alice, "move_task", json!({"id": fresh, "to": "ready"}))
        .await
        .unwrap_err();
    assert_eq!(
        refused,
        (
            "INVALID_MOVE".into(),
            "an epic task cannot move from `in_progress` to `ready`; from `in_progress` it can move to `review`; only reconciliation moves a stale task back (a Reconciler's `staleAfter`)".into()
        )
    );
    session.end();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_reconciler_is_named() {
    let f = Fixture::start_with(&format!("{PEOPLE}---\n{RECONCILERS}")).await;
    let reconcilers = Reconcilers::new(f.w.gateway.clone());
    let err = reconcilers.reconcile("nobody").await.unwrap_err();
    assert_eq!(err.to_string(), "no Reconciler named `nobody`");
}

/// Approves the approval `id` as the first admin.
async fn approve(f: &Fixture, id: &str) {
    let approved = reqwest::Client::new()
        .post(format!("{}/api/v1/approvals/{id}/approve", f.w.base))
        .bearer_auth(&f.w.admin)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(
        approved.status().is_success(),
        "{}",
        approved.text().await.unwrap()
    );
}

fn clock_now(clock: &ManualClock) -> Millis {
    use warden_core::pipeline::Clock as _;
    clock.now()
}

/// The audit records of `principal`, as `warden audit -o json` prints them.
async fn audit(f: &Fixture, principal: &str) -> Vec<Value> {
    let filter = warden_store::AuditFilter {
        principal: Some(principal.to_owned()),
        limit: Some(1000),
        ..warden_store::AuditFilter::default()
    };
    f.w.store
        .store
        .audit(&filter)
        .await
        .unwrap()
        .into_iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect()
}
