use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// Runs git for a fixture, isolated from the machine's configuration; its trimmed output.
fn git_sync(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Warden Test",
            "-c",
            "user.email=test@example.com",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A scratch directory holding source repositories and the environments' root.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("environments")
    }

    /// A repository with `README.md` on its default branch `main` and, besides, `FEATURE.md` on
    /// a branch `feature`.
    fn source(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join("sources").join(name);
        std::fs::create_dir_all(&path).unwrap();
        git_sync(&path, &["init", "--quiet", "--initial-branch=main"]);
        std::fs::write(path.join("README.md"), format!("# {name}\n")).unwrap();
        git_sync(&path, &["add", "README.md"]);
        git_sync(&path, &["commit", "--quiet", "-m", "initial"]);
        git_sync(&path, &["checkout", "--quiet", "-b", "feature"]);
        std::fs::write(path.join("FEATURE.md"), "a feature\n").unwrap();
        git_sync(&path, &["add", "FEATURE.md"]);
        git_sync(&path, &["commit", "--quiet", "-m", "feature"]);
        git_sync(&path, &["checkout", "--quiet", "main"]);
        path
    }

    /// A bare clone of [`Scratch::source`].
    fn bare_source(&self, name: &str) -> PathBuf {
        let source = self.source(&format!("{name}-work"));
        let bare = self.dir.path().join("sources").join(format!("{name}.git"));
        git_sync(
            self.dir.path(),
            &[
                "clone",
                "--quiet",
                "--bare",
                source.to_str().unwrap(),
                bare.to_str().unwrap(),
            ],
        );
        bare
    }
}

fn repository(name: &str, url: &Path, branch: Option<&str>) -> RepositorySource {
    RepositorySource {
        name: name.to_owned(),
        url: url.to_str().unwrap().to_owned(),
        branch: branch.map(str::to_owned),
    }
}

fn is_worktree(path: &Path) -> bool {
    git_sync(path, &["rev-parse", "--is-inside-work-tree"]) == "true"
}

fn worktree_list(mirror: &Path) -> String {
    git_sync(mirror, &["worktree", "list", "--porcelain"])
}

fn branches(mirror: &Path) -> String {
    git_sync(mirror, &["branch", "--format=%(refname:short)"])
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_default_branch_is_resolved_and_checked_out_as_a_real_worktree() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();

    let env = materialise(&root, "env_a", &[repository("app", &source, None)])
        .await
        .unwrap();

    let path = root.join("env_a").join("app");
    assert_eq!(
        env,
        Materialised {
            path: root.join("env_a"),
            repositories: vec![MaterialisedRepository {
                name: "app".into(),
                branch: Some("main".into()),
                path: path.clone(),
                outcome: RepositoryOutcome::Active,
            }],
        }
    );
    assert!(is_worktree(&path));
    assert!(path.join("README.md").is_file());
    assert!(!path.join("FEATURE.md").exists());
    assert_eq!(
        git_sync(&path, &["symbolic-ref", "--short", "HEAD"]),
        "warden/env_a/app"
    );
    let mirror = mirror_path(&root, source.to_str().unwrap());
    let canonical = std::fs::canonicalize(&path).unwrap();
    assert!(
        worktree_list(&mirror).contains(&format!("worktree {}\n", canonical.display())),
        "{}",
        worktree_list(&mirror)
    );
}

#[tokio::test]
async fn a_requested_branch_is_checked_out_with_its_files() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();

    let env = materialise(
        &root,
        "env_a",
        &[repository("app", &source, Some("feature"))],
    )
    .await
    .unwrap();

    let [repo] = env.repositories.as_slice() else {
        panic!("{env:?}")
    };
    assert_eq!(repo.branch.as_deref(), Some("feature"));
    assert_eq!(repo.outcome, RepositoryOutcome::Active);
    assert!(repo.path.join("FEATURE.md").is_file());
    assert_eq!(
        git_sync(&repo.path, &["rev-parse", "HEAD"]),
        git_sync(&source, &["rev-parse", "feature"])
    );
}

#[tokio::test]
async fn an_unknown_branch_fails_only_its_repository_with_a_readable_reason() {
    let scratch = Scratch::new();
    let app = scratch.source("app");
    let lib = scratch.source("lib");
    let root = scratch.root();

    let env = materialise(
        &root,
        "env_a",
        &[
            repository("app", &app, Some("no-such-branch")),
            repository("lib", &lib, None),
        ],
    )
    .await
    .unwrap();

    assert_eq!(
        env.repositories,
        vec![
            MaterialisedRepository {
                name: "app".into(),
                branch: Some("no-such-branch".into()),
                path: root.join("env_a").join("app"),
                outcome: RepositoryOutcome::Failed(format!(
                    "no branch `no-such-branch` in `{}`",
                    app.display()
                )),
            },
            MaterialisedRepository {
                name: "lib".into(),
                branch: Some("main".into()),
                path: root.join("env_a").join("lib"),
                outcome: RepositoryOutcome::Active,
            },
        ]
    );
    assert!(!root.join("env_a").join("app").exists());
    assert!(is_worktree(&root.join("env_a").join("lib")));
}

#[tokio::test]
async fn an_unreachable_url_fails_its_repository_and_leaves_no_mirror() {
    let scratch = Scratch::new();
    let missing = scratch.dir.path().join("missing");
    let root = scratch.root();

    let env = materialise(&root, "env_a", &[repository("app", &missing, None)])
        .await
        .unwrap();

    let [repo] = env.repositories.as_slice() else {
        panic!("{env:?}")
    };
    assert_eq!(repo.branch, None);
    assert_eq!(
        repo.outcome,
        RepositoryOutcome::Failed(format!(
            "git clone failed: repository '{}' does not exist",
            missing.display()
        ))
    );
    assert!(entries(&root.join(MIRRORS_DIR)).is_empty());
}

#[tokio::test]
async fn a_branch_in_the_reserved_namespace_or_with_revision_syntax_is_refused() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();

    let env = materialise(
        &root,
        "env_a",
        &[
            repository("a", &source, Some("warden/env_b/app")),
            repository("b", &source, Some("main~1")),
            repository("c", &source, Some("--orphan")),
        ],
    )
    .await
    .unwrap();

    let outcomes: Vec<_> = env.repositories.into_iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            RepositoryOutcome::Failed(
                "branch `warden/env_b/app` is reserved for Warden's environments".into()
            ),
            RepositoryOutcome::Failed("`main~1` is not a valid branch name".into()),
            RepositoryOutcome::Failed("`--orphan` is not a valid branch name".into()),
        ]
    );
}

#[tokio::test]
async fn a_bare_source_repository_is_materialised_like_any_other() {
    let scratch = Scratch::new();
    let source = scratch.bare_source("app");
    let root = scratch.root();

    let env = materialise(
        &root,
        "env_a",
        &[
            repository("app", &source, None),
            repository("app-feature", &source, Some("feature")),
        ],
    )
    .await
    .unwrap();

    let summary: Vec<_> = env
        .repositories
        .iter()
        .map(|r| (r.branch.as_deref(), r.outcome.clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (Some("main"), RepositoryOutcome::Active),
            (Some("feature"), RepositoryOutcome::Active),
        ]
    );
    assert!(is_worktree(&root.join("env_a").join("app")));
    assert!(root.join("env_a/app-feature/FEATURE.md").is_file());
}

#[tokio::test]
async fn two_environments_from_the_same_source_coexist_on_one_mirror() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();
    let repos = [repository("app", &source, None)];

    let (a, b) = tokio::join!(
        materialise(&root, "env_a", &repos),
        materialise(&root, "env_b", &repos)
    );

    for env in [a.unwrap(), b.unwrap()] {
        assert_eq!(env.repositories.len(), 1);
        for repo in env.repositories {
            assert_eq!(repo.outcome, RepositoryOutcome::Active, "{}", repo.name);
            assert!(is_worktree(&repo.path));
        }
    }
    assert_eq!(entries(&root.join(MIRRORS_DIR)).len(), 1);
    let mirror = mirror_path(&root, source.to_str().unwrap());
    assert_eq!(
        branches(&mirror),
        "feature\nmain\nwarden/env_a/app\nwarden/env_b/app"
    );
    std::fs::write(root.join("env_a/app/README.md"), "changed in a\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("env_b/app/README.md")).unwrap(),
        "# app\n"
    );
}

#[tokio::test]
async fn a_later_environment_fetches_new_commits_and_keeps_the_earlier_ones_branches() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();
    let repos = [repository("app", &source, None)];
    materialise(&root, "env_a", &repos).await.unwrap();
    let first = git_sync(&root.join("env_a/app"), &["rev-parse", "HEAD"]);
    git_sync(
        &source,
        &["commit", "--quiet", "--allow-empty", "-m", "second"],
    );

    materialise(&root, "env_b", &repos).await.unwrap();

    assert_eq!(
        git_sync(&root.join("env_b/app"), &["rev-parse", "HEAD"]),
        git_sync(&source, &["rev-parse", "main"])
    );
    assert_eq!(
        git_sync(&root.join("env_a/app"), &["rev-parse", "HEAD"]),
        first
    );
    let mirror = mirror_path(&root, source.to_str().unwrap());
    assert_eq!(
        branches(&mirror),
        "feature\nmain\nwarden/env_a/app\nwarden/env_b/app"
    );
}

#[tokio::test]
async fn a_second_materialisation_of_the_same_environment_is_refused() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();
    let repos = [repository("app", &source, None)];
    materialise(&root, "env_a", &repos).await.unwrap();

    let err = materialise(&root, "env_a", &repos).await.unwrap_err();

    assert_eq!(err.to_string(), "environment `env_a` already exists");
    assert!(is_worktree(&root.join("env_a").join("app")));
}

#[tokio::test]
async fn remove_cleans_up_worktrees_and_branches_and_is_idempotent() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let lib = scratch.source("lib");
    let root = scratch.root();
    let repos = [
        repository("app", &source, None),
        repository("lib", &lib, Some("feature")),
    ];
    materialise(&root, "env_a", &repos).await.unwrap();
    materialise(&root, "env_b", &repos).await.unwrap();
    std::fs::write(root.join("env_a/app/untracked.txt"), "work\n").unwrap();

    let removed = remove(&root, "env_a").await.unwrap();

    assert_eq!(
        removed,
        Removed {
            path: root.join("env_a"),
            repositories: vec![
                RemovedRepository {
                    name: "app".into(),
                    path: root.join("env_a/app"),
                    outcome: Ok(()),
                },
                RemovedRepository {
                    name: "lib".into(),
                    path: root.join("env_a/lib"),
                    outcome: Ok(()),
                },
            ],
        }
    );
    assert!(!root.join("env_a").exists());
    let mirror = mirror_path(&root, source.to_str().unwrap());
    assert!(!worktree_list(&mirror).contains("env_a"));
    assert_eq!(branches(&mirror), "feature\nmain\nwarden/env_b/app");
    assert!(is_worktree(&root.join("env_b/app")));

    let again = remove(&root, "env_a").await.unwrap();
    assert_eq!(
        again,
        Removed {
            path: root.join("env_a"),
            repositories: vec![],
        }
    );
    // The id is free again.
    let env = materialise(&root, "env_a", &repos).await.unwrap();
    assert!(
        env.repositories
            .iter()
            .all(|r| r.outcome == RepositoryOutcome::Active)
    );
}

#[tokio::test]
async fn removing_from_a_root_that_does_not_exist_is_ok() {
    let scratch = Scratch::new();

    let removed = remove(&scratch.root(), "env_a").await.unwrap();

    assert!(removed.repositories.is_empty());
    assert!(!scratch.root().exists());
}

#[tokio::test]
async fn invalid_environment_ids_are_refused_before_anything_is_written() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();
    std::fs::create_dir(&root).unwrap();
    let repos = [repository("app", &source, None)];

    for id in [
        "",
        "Env",
        "env a",
        "../env",
        ".mirrors",
        "env/a",
        "é",
        &"a".repeat(129),
    ] {
        let err = materialise(&root, id, &repos).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "environment id `{}` is invalid: use 1 to 128 lowercase letters, digits, `_` or `-`",
                truncate(id, 80)
            )
        );
        let err = remove(&root, id).await.unwrap_err();
        assert!(matches!(err, MaterialiseError::InvalidEnvironmentId(_)));
    }
    assert!(entries(&root).is_empty());
}

#[tokio::test]
async fn invalid_or_duplicate_repository_names_are_refused_before_anything_is_written() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();
    std::fs::create_dir(&root).unwrap();

    for name in [
        "",
        "-app",
        "_app",
        "App",
        "a/b",
        "..",
        ".git",
        &"a".repeat(65),
    ] {
        let repos = [
            repository("ok", &source, None),
            repository(name, &source, None),
        ];
        let err = materialise(&root, "env_a", &repos).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "repository name `{name}` is invalid: use up to 64 lowercase letters, digits, \
                 `_` or `-`, starting with a letter or a digit"
            )
        );
    }
    let repos = [
        repository("app", &source, None),
        repository("app", &source, Some("feature")),
    ];
    let err = materialise(&root, "env_a", &repos).await.unwrap_err();
    assert_eq!(err.to_string(), "repository name `app` is used twice");
    assert!(entries(&root).is_empty());
}

#[test]
fn mirrors_are_named_by_the_first_16_bytes_of_the_urls_sha256() {
    // SHA-256("https://example.com/app.git") begins with these 16 bytes.
    let digest = Sha256::digest(b"https://example.com/app.git");
    let expected = hex::encode(digest.get(..16).unwrap());
    assert_eq!(
        mirror_path(
            Path::new("/data/environments"),
            "https://example.com/app.git"
        ),
        PathBuf::from(format!("/data/environments/.mirrors/{expected}.git"))
    );
    assert_eq!(expected.len(), 32);
}

#[test]
fn a_reason_is_git_s_first_error_line_without_its_severity() {
    assert_eq!(
        first_error_line("Cloning into 'x'...\nfatal: repository 'x' does not exist\n"),
        Some("repository 'x' does not exist")
    );
    assert_eq!(
        first_error_line("\n  something odd  \n"),
        Some("something odd")
    );
    assert_eq!(first_error_line(""), None);
    assert_eq!(
        truncate(&"é".repeat(300), MAX_REASON_CHARS).chars().count(),
        200
    );
}

#[tokio::test]
async fn a_mirror_pushes_no_mirror_and_fetches_no_environment_branches() {
    let scratch = Scratch::new();
    let source = scratch.source("app");
    let root = scratch.root();

    materialise(&root, "env_a", &[repository("app", &source, None)])
        .await
        .unwrap();

    let mirror = mirror_path(&root, source.to_str().unwrap());
    assert_eq!(
        git_sync(&mirror, &["config", "--get-all", "remote.origin.fetch"]),
        "+refs/*:refs/*\n^refs/heads/warden/*"
    );
    assert_eq!(
        git_sync(
            &mirror,
            &["config", "--get", "--default=unset", "remote.origin.mirror"]
        ),
        "unset"
    );
}
