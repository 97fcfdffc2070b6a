//! The review gate and the merge on acceptance (WORK-2) with real git: reviews by others than
//! the task's authors, as many as the epic's risk asks, of the work branch's current commit;
//! acceptance merging exactly the approved commit into the base branch of a bare repository,
//! and a conflict pushing nothing; a session moving its own task to review but no further.

use serde_json::json;

use crate::epics::{PEOPLE, epics_world, in_review, push, work, work_at};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acceptance_needs_reviews_by_others_of_the_current_commit_as_many_as_the_risk_asks() {
    let f = Fixture::start_with(PEOPLE).await;
    let alice = f.w.token("alice", None, None).await;
    let bob = f.w.token("bob", None, None).await;
    let dave = f.w.token("dave", None, None).await;
    let erin = f.w.token("erin", None, None).await;
    let first = push(&f, "refund", "refund.txt");
    let (epic, ept) = in_review(&f, &alice, "high", "refund").await;

    // Its author cannot review it; a reader may not.
    let refused = work(
        &f,
        &alice,
        "review",
        json!({"id": ept, "verdict": "approve"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused,
        (
            "FORBIDDEN".into(),
            format!("user:alice is an author of epic task `{ept}`; its reviews are by others")
        )
    );
    assert!(
        work(&f, &bob, "review", json!({"id": ept, "verdict": "approve"}))
            .await
            .is_err()
    );

    // Nor whoever started a session of its task: it is an author too.
    let task =
        f.w.store
            .store
            .epic_task(&ept)
            .await
            .unwrap()
            .unwrap()
            .task_id;
    let session = f.session(&task).await;
    let refused = work(
        &f,
        &f.w.admin,
        "review",
        json!({"id": ept, "verdict": "approve"}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.0, "FORBIDDEN", "{refused:?}");
    assert!(
        refused.1.contains("is an author of epic task"),
        "{refused:?}"
    );
    session.end();
    // The risk is not lowered under a task in review.
    let refused = work(
        &f,
        &alice,
        "update_epic",
        json!({"id": epic, "risk": "low"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused.1,
        format!(
            "the risk of epic `{epic}` is not lowered while its tasks are under review: `{ept}` (review)"
        )
    );

    // One approval of two: the gate names what it lacks, and nothing moves.
    let review = work(
        &f,
        &dave,
        "review",
        json!({"id": ept, "verdict": "approve", "comment": "fine"}),
    )
    .await
    .unwrap();
    assert_eq!(review["review"]["head"], first, "the commit reviewed");
    let before = epics_world(&f).await;
    let gated = work(&f, &alice, "accept", json!({"id": ept}))
        .await
        .unwrap_err();
    assert_eq!(
        gated,
        (
            "GATED".into(),
            format!(
                "epic task `{ept}` cannot be accepted: it needs 2 approving reviews by principals other than its authors (risk `high`); it has 1 (user:dave)"
            )
        )
    );
    assert_eq!(epics_world(&f).await, before);

    // A second reviewer opens it.
    work(
        &f,
        &erin,
        "review",
        json!({"id": ept, "verdict": "approve"}),
    )
    .await
    .unwrap();
    let accepted = work(&f, &alice, "accept", json!({"id": ept}))
        .await
        .unwrap();
    assert_eq!(accepted["epicTask"]["state"], "accepted");
    let got = work(&f, &alice, "get_epic", json!({"id": epic}))
        .await
        .unwrap();
    let reviewers: Vec<&str> = got["tasks"][0]["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reviewer"].as_str().unwrap())
        .collect();
    assert_eq!(reviewers, ["user:dave", "user:erin"]);
    let last =
        f.w.store
            .store
            .work_moves(&ept)
            .await
            .unwrap()
            .pop()
            .unwrap();
    assert_eq!(
        (
            last.from.as_deref(),
            last.to.as_str(),
            last.moved_by.as_str()
        ),
        (Some("review"), "accepted", "user:alice")
    );

    // A work branch that was never pushed has nothing to review.
    let (_, unpushed) = in_review(&f, &alice, "low", "never-pushed").await;
    let refused = work(
        &f,
        &dave,
        "review",
        json!({"id": unpushed, "verdict": "approve"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused,
        (
            "INVALID_ARGUMENT".into(),
            format!(
                "the work branch `never-pushed` of epic task `{unpushed}` does not exist in repository `api`; push it first"
            )
        )
    );

    // A push after a review leaves the review behind.
    push(&f, "second", "one.txt");
    let (_, second) = in_review(&f, &alice, "low", "second").await;
    work(
        &f,
        &dave,
        "review",
        json!({"id": second, "verdict": "approve"}),
    )
    .await
    .unwrap();
    push(&f, "second", "two.txt");
    let gated = work(&f, &alice, "accept", json!({"id": second}))
        .await
        .unwrap_err();
    assert_eq!(
        gated.1,
        format!(
            "epic task `{second}` cannot be accepted: it needs 1 approving review by principals other than its authors (risk `low`); it has none; the approvals of user:dave were of an earlier commit of the work branch"
        )
    );
    // Changes asked move it back; once in review again, a fresh approval opens the gate.
    work(
        &f,
        &dave,
        "review",
        json!({"id": second, "verdict": "changes", "comment": "again"}),
    )
    .await
    .unwrap();
    let state =
        f.w.store
            .store
            .epic_task(&second)
            .await
            .unwrap()
            .unwrap()
            .state;
    assert_eq!(state.to_string(), "in_progress");
    work(
        &f,
        &alice,
        "move_task",
        json!({"id": second, "to": "review"}),
    )
    .await
    .unwrap();
    work(
        &f,
        &dave,
        "review",
        json!({"id": second, "verdict": "approve"}),
    )
    .await
    .unwrap();
    assert_eq!(
        work(&f, &alice, "accept", json!({"id": second}))
            .await
            .unwrap()["epicTask"]["state"],
        "accepted"
    );
}

/// `branch` of the clone `work`, started at `from`, with `file` holding `content`, pushed to
/// its origin as a session pushes its work; the commit.
pub(crate) fn publish(
    work: &std::path::Path,
    branch: &str,
    from: &str,
    file: &str,
    content: &str,
) -> String {
    git(work, &["checkout", "-q", "-B", branch, from]);
    std::fs::write(work.join(file), content).unwrap();
    git(work, &["add", "."]);
    git(work, &["commit", "-q", "-m", file]);
    git(
        work,
        &["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")],
    );
    git(work, &["rev-parse", "HEAD"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepting_merges_the_approved_commit_into_the_base_and_a_conflict_pushes_nothing() {
    // A bare repository as the forge, seeded with `main`.
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("shared.txt"), "one\n").unwrap();
    git(&seed, &["add", "."]);
    git(&seed, &["commit", "-q", "-m", "seed"]);
    let bare = dir.path().join("forge.git");
    git(dir.path(), &["clone", "-q", "--bare", "seed", "forge.git"]);
    let clone = dir.path().join("work");
    git(dir.path(), &["clone", "-q", "forge.git", "work"]);
    let forge = format!(
        "{PEOPLE}---\nkind: Workspace\nname: forge\nmode: kanban\nproject: web\n\
         repositories: [{{ name: ledger, url: {:?}, branch: main }}]\n",
        bare.display().to_string()
    );
    let f = Fixture::start_with(&forge).await;
    let alice = f.w.token("alice", None, None).await;
    let dave = f.w.token("dave", None, None).await;
    let erin = f.w.token("erin", None, None).await;
    let seeded = git(&bare, &["rev-parse", "main"]);

    let epic = work(
        &f,
        &alice,
        "create_epic",
        json!({"project": "web", "title": "Ledger", "risk": "high"}),
    )
    .await
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    work(
        &f,
        &alice,
        "update_epic",
        json!({"id": epic, "status": "open"}),
    )
    .await
    .unwrap();
    let approved_by_two = |branch: &'static str| {
        let (f, alice, dave, erin, epic) = (&f, &alice, &dave, &erin, &epic);
        async move {
            let ept = work(
                f,
                alice,
                "add_task",
                json!({"epic": epic, "title": branch, "workspace": "forge", "repository": "ledger", "branch": branch}),
            )
            .await
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
            for to in ["ready", "in_progress", "review"] {
                work(f, alice, "move_task", json!({"id": ept, "to": to}))
                    .await
                    .unwrap();
            }
            for reviewer in [dave, erin] {
                work(
                    f,
                    reviewer,
                    "review",
                    json!({"id": ept, "verdict": "approve"}),
                )
                .await
                .unwrap();
            }
            ept
        }
    };

    // Approved twice at high risk: accepted, merged into `main` of the forge, pushed.
    let a = publish(&clone, "feature-a", "origin/main", "a.txt", "a\n");
    let first = approved_by_two("feature-a").await;
    let done = work(&f, &alice, "accept", json!({"id": first}))
        .await
        .unwrap();
    assert_eq!(done["epicTask"]["state"], "merged", "{done}");
    let merge = done["epicTask"]["mergeCommit"].as_str().unwrap().to_owned();
    assert_eq!(git(&bare, &["rev-parse", "main"]), merge);
    assert_eq!(
        git(&bare, &["rev-list", "--parents", "-n", "1", "main"]),
        format!("{merge} {seeded} {a}"),
        "a merge commit of the base and the approved commit"
    );
    let last =
        f.w.store
            .store
            .work_moves(&first)
            .await
            .unwrap()
            .pop()
            .unwrap();
    assert_eq!(
        (last.from.as_deref(), last.to.as_str()),
        (Some("accepted"), "merged")
    );

    // A branch that conflicts with `main`: accepted, not merged, the forge unchanged.
    publish(&clone, "feature-b", &seeded, "shared.txt", "two\n");
    git(&clone, &["fetch", "-q", "origin"]);
    publish(&clone, "main", "origin/main", "shared.txt", "three\n");
    let main_before = git(&bare, &["rev-parse", "main"]);
    let second = approved_by_two("feature-b").await;
    let done = work(&f, &alice, "accept", json!({"id": second}))
        .await
        .unwrap();
    assert_eq!(done["epicTask"]["state"], "accepted", "{done}");
    assert_eq!(done["conflicts"], json!(["shared.txt"]));
    assert_eq!(
        done["notMerged"],
        "`feature-b` conflicts with `main`; nothing was pushed"
    );
    assert_eq!(
        git(&bare, &["rev-parse", "main"]),
        main_before,
        "nothing pushed"
    );
    assert!(done["epicTask"].get("mergeCommit").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_moves_its_own_task_to_review_but_cannot_review_or_accept_it() {
    let worker = format!(
        "{PEOPLE}---\nkind: Role\nname: worker\npermissions: [\"work:read\", \"work:write\"]\n---\n\
         kind: RoleBinding\nrole: worker\nsubject: {{ agent: dev }}\n"
    );
    let f = Fixture::start_with(&worker).await;
    let alice = f.w.token("alice", None, None).await;
    let epic = work(
        &f,
        &alice,
        "create_epic",
        json!({"project": "web", "title": "By a session", "risk": "low"}),
    )
    .await
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    work(
        &f,
        &alice,
        "update_epic",
        json!({"id": epic, "status": "open"}),
    )
    .await
    .unwrap();
    let added = work(
        &f,
        &alice,
        "add_task",
        json!({"epic": epic, "title": "Session work", "workspace": "board", "repository": "api", "branch": "session-work"}),
    )
    .await
    .unwrap();
    let ept = added["id"].as_str().unwrap().to_owned();
    for to in ["ready", "in_progress"] {
        work(&f, &alice, "move_task", json!({"id": ept, "to": to}))
            .await
            .unwrap();
    }
    push(&f, "session-work", "session.txt");
    let session = f.session(added["task"].as_str().unwrap()).await;
    let mcp = f.agent_mcp();
    let moved = work_at(
        &mcp,
        &session.token,
        "move_task",
        json!({"id": ept, "to": "review"}),
    )
    .await
    .unwrap();
    assert_eq!(moved["epicTask"]["state"], "review");
    assert!(
        work_at(
            &mcp,
            &session.token,
            "review",
            json!({"id": ept, "verdict": "approve"})
        )
        .await
        .is_err()
    );
    assert!(
        work_at(&mcp, &session.token, "accept", json!({"id": ept}))
            .await
            .is_err()
    );
    session.end();
    let state =
        f.w.store
            .store
            .epic_task(&ept)
            .await
            .unwrap()
            .unwrap()
            .state;
    assert_eq!(state.to_string(), "review", "neither reviewed nor accepted");
    assert!(f.w.store.store.reviews(&ept).await.unwrap().is_empty());
}
