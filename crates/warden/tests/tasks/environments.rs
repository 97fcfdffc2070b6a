//! Sessions' environments end to end (TASK-1): a root task at a branch works in a git worktree
//! of that branch.

use std::path::Path;

use serde_json::json;

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
