//! The working environment of a task, materialised on disk before an agent session starts in
//! it: one git worktree per repository the task names, on a branch of its own.
//!
//! # Layout
//!
//! ```text
//! <root>/                                  the data dir's `environments/` area
//!   .mirrors/<key>.git                     one bare mirror per URL, shared by every environment
//!   <env_id>/                              one directory per environment
//!     <repository name>/                   a git worktree of the mirror of that repository's URL,
//!                                          on the local branch `warden/<env_id>/<repository name>`
//! ```
//!
//! `<key>` is the first 16 bytes of the SHA-256 of the URL exactly as given, in hex
//! ([`mirror_path`]): the same URL string always shares one mirror, and a URL (which may carry
//! credentials) never becomes a file name.
//!
//! # Why this shape
//!
//! - **Mirrors, cloned once**: the first environment of a URL pays for `git clone --mirror`, every
//!   later one for a `git fetch --prune`, and the objects are stored once however many
//!   environments use them.
//! - **Real worktrees** (`git worktree add`), not copies: an agent works in an ordinary checkout
//!   (`git status`, `git commit`, `git diff` behave as usual) whose commits land in the mirror,
//!   where Warden can read them after the session without copying anything back.
//! - **A branch per environment and repository**: two environments on the same branch of the same
//!   repository never see each other's commits, and a worktree's branch is never one the fetch
//!   updates. Branches under `warden/` are reserved: they are neither fetched from the source nor
//!   pruned by a fetch (a negative refspec, `^refs/heads/warden/*`, on the command line and in the
//!   mirror's configuration, so that a `git fetch` an agent runs inside its worktree keeps them
//!   too; git 2.29 or later). Requesting one as the start of an environment is refused, so that no
//!   environment starts from another's unpushed work.
//! - **No push mirroring**: `git clone --mirror` sets `remote.origin.mirror`, which would make a
//!   plain `git push` in a worktree mirror every ref of the cache onto the source (force-updating
//!   its branches to the cache's view and publishing every environment's branch). It is unset
//!   right after the clone; a push from a worktree pushes what the agent names, as in any clone.
//!
//! # Failures
//!
//! A problem with the root or the request itself (an invalid id or name, a root that cannot be
//! created, an environment that already exists) is a [`MaterialiseError`] and nothing is
//! materialised. A problem with one repository (an unreachable URL, an unknown branch, a git
//! command that timed out after [`GIT_TIMEOUT`]) is recorded as that repository's
//! [`RepositoryOutcome::Failed`] with a one-line reason, and the others are materialised anyway:
//! the caller decides whether a partial environment is worth a session. Reasons never carry the
//! `user:password@` part of a URL.
//!
//! # Git
//!
//! Git runs as a child process (`tokio::process::Command`, never through a shell), in the C
//! locale, with `GIT_TERMINAL_PROMPT=0` (a credential it lacks is a failure, not a prompt nobody
//! answers), `GIT_CONFIG_NOSYSTEM=1`, and without any `GIT_*` variable of Warden's own
//! environment (a `GIT_DIR` or `GIT_CONFIG_PARAMETERS` inherited from whoever started Warden must
//! not redirect it). The user's global configuration stays: credential helpers and `insteadOf`
//! rewrites are the operator's deliberate choices. `-c protocol.file.allow=always` is passed to
//! the commands that read a local-path or `file://` URL. Each command is bounded by
//! [`GIT_TIMEOUT`] and killed when it runs over.
//!
//! # Concurrency
//!
//! Everything that writes to a mirror (clone, fetch, `worktree add`, `worktree remove`, deleting
//! a branch) runs under that mirror's lock: an async mutex per mirror path, in a map global to
//! the process. Two environments materialising the same URL at once therefore take turns on the
//! mirror, while different URLs proceed in parallel. An in-process lock rather than a lock file,
//! because a data dir belongs to one Warden process (its embedded store makes the same
//! assumption), and a lock file outlives a crash and would need its own recovery. The map keeps
//! one small entry per mirror ever used, which is bounded by the number of URLs. The repositories
//! of one call are materialised one after another, so that dropping the call's future stops (and
//! kills) the git command under way.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;
use warden_core::url_credentials::redact;

use crate::git_auth::GitAuth;

use sha2::{Digest as _, Sha256};

#[cfg(test)]
mod tests;

/// How long one git command may run before it is killed and its repository fails.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The directory under the root that holds the mirrors. Its leading dot keeps it out of the
/// namespace of environment ids, which are `[a-z0-9_-]+`.
pub const MIRRORS_DIR: &str = ".mirrors";

/// The longest environment id accepted, in bytes (a directory name and a branch component).
pub const MAX_ENVIRONMENT_ID_LEN: usize = 128;

/// The longest repository name accepted, in bytes.
pub const MAX_REPOSITORY_NAME_LEN: usize = 64;

/// The longest failure reason recorded, in characters.
pub const MAX_REASON_CHARS: usize = 200;

/// The reserved branch namespace of the environments' own branches.
const BRANCH_NAMESPACE: &str = "warden/";

/// The refspec that keeps the environments' branches out of every fetch into a mirror (and out of
/// its pruning).
const KEEP_ENVIRONMENT_BRANCHES: &str = "^refs/heads/warden/*";

/// One repository an environment should contain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepositorySource {
    /// The directory name of its worktree inside the environment: `[a-z0-9][a-z0-9_-]*`, unique
    /// within the environment, at most [`MAX_REPOSITORY_NAME_LEN`] bytes.
    pub name: String,
    /// Where to clone it from: a local path to a repository (bare or not) or anything else
    /// `git clone` accepts (`https://…`, `ssh://…`, `git@host:path`). The same string shares one
    /// mirror; two spellings of one repository get two.
    pub url: String,
    /// The branch the environment starts from; `None` for the repository's default branch (the
    /// branch the source's `HEAD` names).
    pub branch: Option<String>,
}

/// A materialised environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Materialised {
    /// The environment's directory, `<root>/<env_id>`.
    pub path: PathBuf,
    /// One entry per requested repository, in the order requested.
    pub repositories: Vec<MaterialisedRepository>,
}

/// One repository of a materialised environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaterialisedRepository {
    /// Its name, as requested.
    pub name: String,
    /// The branch its worktree started from (`main`): the requested branch, or the default branch
    /// once resolved. `None` only when the default branch was asked for and could not be read
    /// (the repository could not be fetched, or its `HEAD` names no branch).
    pub branch: Option<String>,
    /// Its worktree, `<root>/<env_id>/<name>` (absent when it failed).
    pub path: PathBuf,
    /// Whether it is there.
    pub outcome: RepositoryOutcome,
}

/// What became of one repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepositoryOutcome {
    /// Its worktree is checked out on its environment branch.
    Active,
    /// It is not there; one line, at most [`MAX_REASON_CHARS`] characters, saying why (git's own
    /// words where git failed), without URL credentials.
    Failed(String),
}

/// A removed environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    /// The environment's directory, `<root>/<env_id>`, which no longer exists.
    pub path: PathBuf,
    /// One entry per worktree found in it, by name; empty when the environment did not exist.
    pub repositories: Vec<RemovedRepository>,
}

/// One repository of a removed environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemovedRepository {
    /// The worktree's directory name.
    pub name: String,
    /// Where the worktree was.
    pub path: PathBuf,
    /// `Ok` when its worktree and its environment branch are gone from the mirror; otherwise one
    /// line saying what is left behind and why. Its directory is gone either way.
    pub outcome: Result<(), String>,
}

/// Why an environment could not be materialised or removed at all.
#[derive(Debug, thiserror::Error)]
pub enum MaterialiseError {
    /// The environment id is not `[a-z0-9_-]+` of at most [`MAX_ENVIRONMENT_ID_LEN`] bytes.
    #[error("environment id `{0}` is invalid: use 1 to 128 lowercase letters, digits, `_` or `-`")]
    InvalidEnvironmentId(String),
    /// A repository name is not `[a-z0-9][a-z0-9_-]*` of at most [`MAX_REPOSITORY_NAME_LEN`]
    /// bytes.
    #[error(
        "repository name `{0}` is invalid: use up to 64 lowercase letters, digits, `_` or `-`, \
         starting with a letter or a digit"
    )]
    InvalidRepositoryName(String),
    /// Two repositories of one environment have the same name.
    #[error("repository name `{0}` is used twice")]
    DuplicateRepositoryName(String),
    /// The environment's directory exists already: remove the environment first.
    #[error("environment `{0}` already exists")]
    AlreadyExists(String),
    /// The file system refused.
    #[error("cannot {action} `{}`: {source}", .path.display())]
    Io {
        /// What was being done (`create`, `read`, `remove`).
        action: &'static str,
        /// To what.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
}

/// Materialises environment `env_id` under `root`: one worktree per repository in
/// `repositories`, each on its own branch `warden/<env_id>/<name>` (see the module
/// documentation for the layout).
///
/// Everything is validated before anything is written. The environment's directory is created
/// even when every repository fails; [`remove`] cleans it up either way.
pub async fn materialise(
    root: &Path,
    env_id: &str,
    repositories: &[RepositorySource],
) -> Result<Materialised, MaterialiseError> {
    validate_environment_id(env_id)?;
    let mut names = BTreeSet::new();
    for repository in repositories {
        validate_repository_name(&repository.name)?;
        if !names.insert(repository.name.as_str()) {
            return Err(MaterialiseError::DuplicateRepositoryName(
                repository.name.clone(),
            ));
        }
    }

    let mirrors = root.join(MIRRORS_DIR);
    std::fs::create_dir_all(&mirrors).map_err(io_error("create", &mirrors))?;
    // The mirrors' lock keys and the paths git records must not depend on how `root` is spelled.
    let abs_root = std::fs::canonicalize(root).map_err(io_error("read", root))?;
    let path = root.join(env_id);
    match std::fs::create_dir(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(MaterialiseError::AlreadyExists(env_id.to_owned()));
        }
        Err(e) => return Err(io_error("create", &path)(e)),
    }

    let mut materialised = Vec::with_capacity(repositories.len());
    for repository in repositories {
        let (branch, outcome) = match materialise_one(&abs_root, env_id, repository).await {
            Ok(branch) => (Some(branch), RepositoryOutcome::Active),
            Err(failure) => {
                tracing::warn!(
                    environment = env_id,
                    repository = %repository.name,
                    reason = %failure.reason,
                    "cannot materialise a repository"
                );
                let reason = truncate(&failure.reason, MAX_REASON_CHARS);
                (failure.branch, RepositoryOutcome::Failed(reason))
            }
        };
        materialised.push(MaterialisedRepository {
            name: repository.name.clone(),
            branch,
            path: path.join(&repository.name),
            outcome,
        });
    }
    Ok(Materialised {
        path,
        repositories: materialised,
    })
}

/// Removes environment `env_id` from under `root`: each worktree is removed through its mirror
/// (`git worktree remove --force`), the environment's directory is deleted with everything in it,
/// the mirrors' worktree records are pruned and the environment's branches deleted. The mirrors
/// themselves stay, for the next environment.
///
/// Removing an environment that does not exist is `Ok` with no repositories. A repository whose
/// mirror could not be cleaned is reported in its [`RemovedRepository::outcome`]; only a directory
/// that cannot be read or deleted is an error.
pub async fn remove(root: &Path, env_id: &str) -> Result<Removed, MaterialiseError> {
    validate_environment_id(env_id)?;
    let path = root.join(env_id);
    let entries = match std::fs::read_dir(&path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Removed {
                path,
                repositories: Vec::new(),
            });
        }
        Err(e) => return Err(io_error("read", &path)(e)),
    };
    let abs_root = std::fs::canonicalize(root).map_err(io_error("read", root))?;
    let mut worktrees = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error("read", &path))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        // Only what points into one of our mirrors is treated as a worktree: the directory is the
        // agent's, and a `.git` file it rewrote must not steer git into another repository.
        if let Some(mirror) = worktree_mirror(&entry.path(), &abs_root) {
            worktrees.push((name, mirror));
        }
    }
    worktrees.sort();

    let mut outcomes = Vec::with_capacity(worktrees.len());
    for (name, mirror) in &worktrees {
        let worktree = abs_root.join(env_id).join(name);
        let outcome = if mirror.is_dir() {
            let _guard = lock_mirror(mirror).await;
            git(
                Some(mirror),
                false,
                [
                    OsStr::new("worktree"),
                    OsStr::new("remove"),
                    OsStr::new("--force"),
                    worktree.as_os_str(),
                ],
            )
            .await
            .map(drop)
        } else {
            Err(format!("the mirror of `{name}` is missing"))
        };
        outcomes.push(outcome);
    }

    std::fs::remove_dir_all(&path).map_err(io_error("remove", &path))?;

    let mut repositories = Vec::with_capacity(worktrees.len());
    for ((name, mirror), removed) in worktrees.into_iter().zip(outcomes) {
        let outcome = match removed {
            Err(reason) if !mirror.is_dir() => Err(reason),
            removed => {
                let _guard = lock_mirror(&mirror).await;
                // Prune first: a worktree `remove` failed to unregister still holds its branch.
                let pruned = git_in(&mirror, &["worktree", "prune"]).await;
                let deleted = if validate_repository_name(&name).is_ok() {
                    delete_branch(&mirror, &environment_branch(env_id, &name)).await
                } else {
                    Ok(())
                };
                removed.and(pruned.map(drop)).and(deleted)
            }
        };
        repositories.push(RemovedRepository {
            path: path.join(&name),
            name,
            outcome,
        });
    }
    Ok(Removed { path, repositories })
}

/// The mirror of `url` under `root`: `<root>/.mirrors/<first 16 bytes of SHA-256(url), hex>.git`.
pub fn mirror_path(root: &Path, url: &str) -> PathBuf {
    root.join(MIRRORS_DIR).join(mirror_file_name(url))
}

/// The local branch of repository `name` in environment `env_id`: `warden/<env_id>/<name>`.
pub fn environment_branch(env_id: &str, name: &str) -> String {
    format!("{BRANCH_NAMESPACE}{env_id}/{name}")
}

/// A repository that failed, with the branch it got as far as resolving.
#[derive(Debug)]
struct Failure {
    branch: Option<String>,
    reason: String,
}

impl Failure {
    fn new(branch: Option<&str>, reason: String) -> Self {
        Self {
            branch: branch.map(str::to_owned),
            reason,
        }
    }
}

/// Fetches (or clones) the mirror, resolves the branch and adds the worktree; the resolved branch.
async fn materialise_one(
    abs_root: &Path,
    env_id: &str,
    repository: &RepositorySource,
) -> Result<String, Failure> {
    let requested = repository.branch.as_deref();
    if let Some(branch) = requested {
        check_branch_name(branch).map_err(|reason| Failure::new(requested, reason))?;
    }
    let url = &repository.url;
    let mirror = mirror_path(abs_root, url);
    let _guard = lock_mirror(&mirror).await;
    update_mirror(&mirror, url)
        .await
        .map_err(|reason| Failure::new(requested, reason))?;
    let branch = match requested {
        Some(branch) => branch.to_owned(),
        None => default_branch(&mirror, url)
            .await
            .map_err(|reason| Failure::new(None, reason))?,
    };
    let failed = |reason| Failure::new(Some(&branch), reason);
    if requested.is_none() {
        check_branch_name(&branch).map_err(failed)?;
    }
    let reference = format!("refs/heads/{branch}^{{commit}}");
    let commit = git_in(
        &mirror,
        &["rev-parse", "--verify", "--quiet", reference.as_str()],
    )
    .await
    .map_err(|_| failed(format!("no branch `{branch}` in `{}`", redact(url))))?;
    let worktree = abs_root.join(env_id).join(&repository.name);
    let local = environment_branch(env_id, &repository.name);
    git(
        Some(&mirror),
        false,
        [
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("--no-track"),
            // `-B`: a branch left behind by a crash between `worktree add` and the record of it
            // is reset rather than blocking the id forever.
            OsStr::new("-B"),
            OsStr::new(&local),
            worktree.as_os_str(),
            OsStr::new(commit.trim()),
        ],
    )
    .await
    .map_err(failed)?;
    Ok(branch)
}

/// Clones the mirror of `url` if it is new, fetches it otherwise. The caller holds its lock.
async fn update_mirror(mirror: &Path, url: &str) -> Result<(), String> {
    // The configuration refuses such a URL; a workspace stored before it was refused is not
    // cloned either.
    let local = warden_core::git_url::classify(url)? == warden_core::git_url::GitUrl::Local;
    if mirror.is_dir() {
        let mut fetch = vec![
            OsStr::new("fetch"),
            OsStr::new("--quiet"),
            OsStr::new("--prune"),
            OsStr::new("origin"),
        ];
        fetch.extend(["+refs/*:refs/*", KEEP_ENVIRONMENT_BRANCHES].map(OsStr::new));
        git(Some(mirror), local, fetch).await?;
        refresh_head(mirror, local).await;
        // Records of worktrees whose directories are gone, so that their branches can be reused.
        git_in(mirror, &["worktree", "prune"]).await?;
        return Ok(());
    }
    // Cloned beside the mirror and renamed into place, so that a clone killed half-way is never
    // taken for a mirror.
    let mut partial = mirror.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    remove_partial(&partial)?;
    let cloned = clone_mirror(&partial, url, local).await;
    if cloned.is_err() {
        remove_partial(&partial)?;
    }
    cloned?;
    std::fs::rename(&partial, mirror).map_err(|e| {
        format!(
            "cannot move the new mirror of `{}` into place: {e}",
            redact(url)
        )
    })
}

async fn clone_mirror(partial: &Path, url: &str, local: bool) -> Result<(), String> {
    git(
        None,
        local,
        [
            OsStr::new("clone"),
            OsStr::new("--mirror"),
            OsStr::new("--quiet"),
            OsStr::new("--"),
            OsStr::new(url),
            partial.as_os_str(),
        ],
    )
    .await?;
    git_in(partial, &["config", "--unset", "remote.origin.mirror"]).await?;
    let keep = [
        "config",
        "--add",
        "remote.origin.fetch",
        KEEP_ENVIRONMENT_BRANCHES,
    ];
    git_in(partial, &keep).await.map(drop)
}

fn remove_partial(partial: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(partial) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove `{}`: {e}", partial.display())),
    }
}

/// The commit that `branch` of the repository at `url` points at, or `None` when it has no such
/// branch: `git ls-remote`, as a push there is seen.
pub async fn remote_head(
    url: &str,
    branch: &str,
    auth: &GitAuth,
) -> Result<Option<String>, String> {
    let local = warden_core::git_url::classify(url)? == warden_core::git_url::GitUrl::Local;
    let reference = format!("refs/heads/{branch}");
    let listing = git_with(None, local, auth, ["ls-remote", url, reference.as_str()]).await?;
    Ok(listing.lines().find_map(|line| {
        let (commit, name) = line.split_once('\t')?;
        (name == reference).then(|| commit.to_owned())
    }))
}

/// Points the mirror's `HEAD` where the source's points now: a fetch does not follow a change of
/// the source's default branch. Best effort: a source that does not say keeps the known `HEAD`.
async fn refresh_head(mirror: &Path, local: bool) {
    let Ok(listing) = git(
        Some(mirror),
        local,
        ["ls-remote", "--symref", "origin", "HEAD"].map(OsStr::new),
    )
    .await
    else {
        return;
    };
    let target = listing.lines().find_map(|line| {
        let (reference, name) = line.strip_prefix("ref: ")?.split_once('\t')?;
        (name == "HEAD" && reference.starts_with("refs/heads/")).then_some(reference)
    });
    if let Some(target) = target
        && let Err(reason) = git_in(mirror, &["symbolic-ref", "HEAD", target]).await
    {
        tracing::debug!(mirror = %mirror.display(), %reason, "cannot refresh the mirror's HEAD");
    }
}

/// The branch the mirror's `HEAD` names (`main`).
async fn default_branch(mirror: &Path, url: &str) -> Result<String, String> {
    let head = git_in(mirror, &["symbolic-ref", "--quiet", "HEAD"])
        .await
        .map_err(|_| format!("the default branch of `{}` is unknown", redact(url)))?;
    head.trim()
        .strip_prefix("refs/heads/")
        .map(str::to_owned)
        .ok_or_else(|| format!("the default branch of `{}` is not a branch", redact(url)))
}

/// Refuses what is no branch name, and the environments' own branches.
fn check_branch_name(branch: &str) -> Result<(), String> {
    // Git's own rules are checked by `rev-parse`, which is only ever given `refs/heads/<branch>`:
    // what is left to refuse here is what would change the meaning of that argument.
    let revision_syntax = ['~', '^', ':', '?', '*', '[', '\\', ' '];
    if branch.is_empty()
        || branch.starts_with('-')
        || branch.contains("..")
        || branch.contains("@{")
        || branch
            .chars()
            .any(|c| c.is_control() || revision_syntax.contains(&c))
    {
        return Err(format!(
            "`{}` is not a valid branch name",
            truncate(branch, 80)
        ));
    }
    if branch.starts_with(BRANCH_NAMESPACE) {
        return Err(format!(
            "branch `{}` is reserved for Warden's environments",
            truncate(branch, 80)
        ));
    }
    Ok(())
}

async fn delete_branch(mirror: &Path, branch: &str) -> Result<(), String> {
    let reference = format!("refs/heads/{branch}");
    let exists = git_in(
        mirror,
        &["rev-parse", "--verify", "--quiet", reference.as_str()],
    )
    .await
    .is_ok();
    if !exists {
        return Ok(());
    }
    git_in(mirror, &["branch", "--quiet", "-D", branch])
        .await
        .map(drop)
}

/// The mirror a worktree directory belongs to, if its `.git` file names one of `abs_root`'s
/// mirrors: `gitdir: <abs_root>/.mirrors/<key>.git/worktrees/<id>`. Only the mirror's file name is
/// taken from the file; its location is always ours.
fn worktree_mirror(dir: &Path, abs_root: &Path) -> Option<PathBuf> {
    let dot_git = std::fs::read_to_string(dir.join(".git")).ok()?;
    let gitdir = Path::new(dot_git.strip_prefix("gitdir:")?.trim());
    let mirror = gitdir.parent()?.parent()?;
    let file_name = mirror.file_name()?.to_str()?;
    let key = file_name.strip_suffix(".git")?;
    let is_key = key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    is_key.then(|| abs_root.join(MIRRORS_DIR).join(file_name))
}

fn mirror_file_name(url: &str) -> String {
    let digest = Sha256::digest(url.as_bytes());
    let key: Vec<u8> = digest.iter().take(16).copied().collect();
    format!("{}.git", hex::encode(key))
}

/// The lock of one mirror, shared by every caller in the process (see the module documentation).
async fn lock_mirror(mirror: &Path) -> tokio::sync::OwnedMutexGuard<()> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let lock = LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(mirror.to_path_buf())
        .or_default()
        .clone();
    lock.lock_owned().await
}

/// Runs git in `dir` on no URL: [`git`] for the common case.
async fn git_in(dir: &Path, args: &[&str]) -> Result<String, String> {
    git(Some(dir), false, args).await
}

/// Runs git (in `dir` when given) and returns its standard output, or one line saying why not.
pub(crate) async fn git<I, S>(
    dir: Option<&Path>,
    local_url: bool,
    args: I,
) -> Result<String, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    git_with(dir, local_url, &GitAuth::default(), args).await
}

/// [`git`], given `auth` (a GitProvider's credentials) in its environment.
pub(crate) async fn git_with<I, S>(
    dir: Option<&Path>,
    local_url: bool,
    auth: &GitAuth,
    args: I,
) -> Result<String, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let subcommand = args
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cmd = tokio::process::Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .envs(auth.env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = dir {
        cmd.arg("-C").arg(dir);
    }
    if local_url {
        cmd.args(["-c", "protocol.file.allow=always"]);
    }
    cmd.args(&args);
    // Dropping the output future on a timeout drops the child, which `kill_on_drop` kills.
    let output = match tokio::time::timeout(GIT_TIMEOUT, cmd.output()).await {
        Err(_) => {
            return Err(format!(
                "git {subcommand} did not finish within {}s and was stopped",
                GIT_TIMEOUT.as_secs()
            ));
        }
        Ok(Err(e)) => {
            return Err(truncate(
                &format!("cannot run `git`: {e}"),
                MAX_REASON_CHARS,
            ));
        }
        Ok(Ok(output)) => output,
    };
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reason = match first_error_line(&stderr) {
        Some(line) => format!("git {subcommand} failed: {line}"),
        None => format!("git {subcommand} failed with {}", output.status),
    };
    Err(truncate(&redact(&reason), MAX_REASON_CHARS))
}

/// Git's first line that says what went wrong (`fatal:`/`error:`), else its first line, without
/// the severity prefix.
fn first_error_line(stderr: &str) -> Option<&str> {
    let mut lines = stderr.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.clone().next()?;
    let line = lines
        .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .unwrap_or(first);
    Some(
        line.strip_prefix("fatal:")
            .or_else(|| line.strip_prefix("error:"))
            .map_or(line, str::trim_start),
    )
}

/// At most `max` characters of `text`, on one line.
fn truncate(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(max) {
        Some((end, _)) => line.get(..end).unwrap_or(line).to_owned(),
        None => line.to_owned(),
    }
}

fn validate_environment_id(env_id: &str) -> Result<(), MaterialiseError> {
    let valid = !env_id.is_empty()
        && env_id.len() <= MAX_ENVIRONMENT_ID_LEN
        && env_id
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(MaterialiseError::InvalidEnvironmentId(truncate(env_id, 80)))
    }
}

fn validate_repository_name(name: &str) -> Result<(), MaterialiseError> {
    let mut bytes = name.bytes();
    let valid = name.len() <= MAX_REPOSITORY_NAME_LEN
        && bytes
            .next()
            .is_some_and(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(MaterialiseError::InvalidRepositoryName(truncate(name, 80)))
    }
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> MaterialiseError {
    let path = path.to_path_buf();
    move |source| MaterialiseError::Io {
        action,
        path,
        source,
    }
}
