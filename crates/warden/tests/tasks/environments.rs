//! Sessions' environments end to end (TASK-1, TASK-6): a root task at a branch works in a git
//! worktree of that branch, and an inheriting child works in its parent's environment as it
//! is — checked at launch only for what it named.

use std::path::Path;

use serde_json::json;

use crate::common::*;
use crate::support::*;

/// `git rev-parse --path-format=absolute ARG` in `dir`.
fn absolute(dir: &Path, arg: &str) -> String {
    git(dir, &["rev-parse", "--path-format=absolute", arg])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_at_a_branch_works_in_a_git_worktree_of_that_branch() {
    let f = Fixture::start().await;
    let root = f
        .external_task(json!({
            "title": "at feature", "workspace_id": "board",
            "repositories": [{"repository": "api", "branch": "feature"}]
        }))
        .await;
    let r = f.session(&root).await;
    let checkout = r.pwd.join("api");
    assert_eq!(
        git(&checkout, &["rev-parse", "--show-toplevel"]),
        checkout.canonicalize().unwrap().display().to_string(),
        "the repository's directory is a checkout of its own"
    );
    assert_eq!(
        git(&checkout, &["rev-parse", "HEAD"]),
        git(&f.repo, &["rev-parse", "feature"]),
        "HEAD is at `feature`, not at the default `main`"
    );
    assert!(checkout.join("feature.txt").exists());
    // A worktree: its git directory is one of the worktrees of a shared repository (Warden's
    // mirror), not a clone of its own.
    let git_dir = absolute(&checkout, "--git-dir");
    let common = absolute(&checkout, "--git-common-dir");
    assert_ne!(
        git_dir, common,
        "a worktree's git dir is not the common one"
    );
    assert_eq!(
        Path::new(&git_dir).parent().unwrap(),
        Path::new(&common).join("worktrees"),
        "{git_dir}"
    );
    assert!(
        Path::new(&common).starts_with(f.environments.join(".mirrors").canonicalize().unwrap()),
        "{common}"
    );
    let listed = git(Path::new(&common), &["worktree", "list", "--porcelain"]);
    assert!(
        listed.contains(&format!(
            "worktree {}",
            checkout.canonicalize().unwrap().display()
        )),
        "{listed}"
    );
    // The environment records the branch it checked out.
    let env = f.w.store.store.environment(&root).await.unwrap().unwrap();
    assert_eq!(env.repositories.len(), 1, "{env:?}");
    assert_eq!(env.repositories[0].branch, "feature");
    r.end();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inheriting_child_naming_no_repositories_works_in_its_parents_environment_as_it_is() {
    let f = Fixture::start().await;
    let root = f
        .external_task(json!({
            "title": "at feature", "workspace_id": "board",
            "repositories": [{"repository": "api", "branch": "feature"}]
        }))
        .await;
    // Children created before the parent has an environment: checked when they launch.
    let plain = f
        .external_task(json!({"title": "plain", "parent_id": root}))
        .await;
    let explicit = f
        .external_task(json!({
            "title": "explicit", "parent_id": root,
            "repositories": [{"repository": "api", "branch": "main"}]
        }))
        .await;
    let stored = f.w.store.store.task(&plain).await.unwrap().unwrap();
    assert_eq!(stored.workspace_mode.as_deref(), Some("inherit_parent"));
    assert!(
        stored.repositories.is_empty(),
        "it named none, and none is recorded: {:?}",
        stored.repositories
    );

    let r = f.session(&root).await;
    // A child created from the parent's session, once its environment exists.
    let later = call_as(
        &f.agent_mcp(),
        &r.token,
        "tasks__create_task",
        json!({"title": "later", "parent_id": root}),
    )
    .await;
    assert_eq!(later["isError"], false, "{later}");
    assert_eq!(
        outcome(&later)["task"]["repositories"],
        json!([]),
        "{later}"
    );
    let later = outcome(&later)["task"]["id"].as_str().unwrap().to_owned();
    for child in [&plain, &later] {
        let c = f.session(child).await;
        assert_eq!(c.pwd, r.pwd, "{child} works in its parent's environment");
        assert_eq!(
            git(&c.pwd.join("api"), &["rev-parse", "HEAD"]),
            git(&f.repo, &["rev-parse", "feature"])
        );
        c.end();
    }

    // What a child named is checked against the environment it inherits, named as its
    // parent's.
    let refused = std::process::Command::new(WARDEN)
        .args([
            "run", "agent", "dev", "--task", &explicit, "--wait", "--server", &f.w.base,
        ])
        .env("WARDEN_TOKEN", &f.w.admin)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let runs = f.w.store.store.runs_of_task(&explicit).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].error.as_deref(),
        Some(
            format!(
                "`api@main` is not in the environment of parent task `{root}`, which `inherit_parent` reuses as it is; choose `workspace_mode` `new_workspace` for an environment of its own"
            )
            .as_str()
        )
    );
    r.end();
}
