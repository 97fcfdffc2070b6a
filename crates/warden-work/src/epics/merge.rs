//! The merge on acceptance (WORK-2): an accepted epic task's work branch, at exactly the commit
//! its reviews approved, merged into its base branch and pushed to the repository — or nothing
//! pushed at all.
//!
//! The merge is made in a scratch clone of the base branch (a temporary directory, removed
//! after), with a merge commit (`--no-ff`) by `Warden`. The work branch is fetched and must still
//! point at the approved commit; a conflict aborts with the conflicting paths; the push is a
//! plain fast-forward of the base branch, so a base that moved meanwhile is refused by the
//! repository rather than overwritten. Only a successful push counts as merged.

use std::ffi::OsStr;
use std::path::Path;

use crate::git_auth::GitAuth;
use crate::materialise::git_with;

/// What a merge did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Merge {
    /// Merged and pushed: the merge commit.
    Merged(String),
    /// The work branch conflicts with the base branch in these paths; nothing pushed.
    Conflict(Vec<String>),
    /// The work branch no longer points at the approved commit; nothing pushed.
    Moved,
    /// Git could not do it (the repository unreachable, the push refused); nothing pushed, or
    /// the push itself failed.
    Failed(String),
}

/// Merges `branch` at `approved` into `base` of the repository at `url`, with `message`,
/// reaching it with `auth`.
pub(crate) async fn merge(
    url: &str,
    base: &str,
    branch: &str,
    approved: &str,
    message: &str,
    auth: &GitAuth,
) -> Merge {
    let local = warden_core::git_url::classify(url) == Ok(warden_core::git_url::GitUrl::Local);
    let scratch = match tempfile::Builder::new().prefix("warden-merge-").tempdir() {
        Ok(dir) => dir,
        Err(e) => return Merge::Failed(format!("cannot make a scratch directory: {e}")),
    };
    let dir = scratch.path().join("repository");
    let at = Repository {
        dir: &dir,
        local,
        url,
        auth,
    };
    match merge_in(&at, base, branch, approved, message).await {
        Ok(merge) | Err(merge) => merge,
    }
}

/// Where a merge is made: the scratch clone `dir` of the repository at `url`.
struct Repository<'a> {
    dir: &'a Path,
    local: bool,
    url: &'a str,
    auth: &'a GitAuth,
}

impl Repository<'_> {
    /// git in the scratch clone (`None`: the clone itself), reaching the repository when
    /// `remote`.
    async fn git<I, S>(&self, inside: bool, remote: bool, args: I) -> Result<String, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let no_auth = GitAuth::default();
        let auth = if remote { self.auth } else { &no_auth };
        let dir = inside.then_some(self.dir);
        git_with(dir, remote && self.local, auth, args).await
    }
}

async fn merge_in(
    at: &Repository<'_>,
    base: &str,
    branch: &str,
    approved: &str,
    message: &str,
) -> Result<Merge, Merge> {
    let (dir, url) = (at.dir, at.url);
    let failed = Merge::Failed;
    let clone = [
        OsStr::new("clone"),
        OsStr::new("--quiet"),
        OsStr::new("--no-tags"),
        OsStr::new("--single-branch"),
        OsStr::new("--branch"),
        OsStr::new(base),
        OsStr::new("--"),
        OsStr::new(url),
        dir.as_os_str(),
    ];
    at.git(false, true, clone).await.map_err(failed)?;
    let work = format!("refs/heads/{branch}");
    at.git(true, true, ["fetch", "--quiet", "origin", work.as_str()])
        .await
        .map_err(failed)?;
    let fetched = at
        .git(true, false, ["rev-parse", "FETCH_HEAD"])
        .await
        .map_err(failed)?;
    if fetched.trim() != approved {
        return Ok(Merge::Moved);
    }
    let merged = at
        .git(
            true,
            false,
            [
                "-c",
                "user.name=Warden",
                "-c",
                "user.email=warden@localhost",
                "merge",
                "--no-ff",
                "--no-edit",
                "-m",
                message,
                approved,
            ],
        )
        .await;
    if let Err(reason) = merged {
        let conflicts = at
            .git(true, false, ["diff", "--name-only", "--diff-filter=U"])
            .await
            .unwrap_or_default();
        let paths: Vec<String> = conflicts.lines().map(str::to_owned).collect();
        return Ok(if paths.is_empty() {
            Merge::Failed(reason)
        } else {
            Merge::Conflict(paths)
        });
    }
    let commit = at
        .git(true, false, ["rev-parse", "HEAD"])
        .await
        .map_err(failed)?;
    let target = format!("HEAD:refs/heads/{base}");
    at.git(true, true, ["push", "--quiet", "origin", target.as_str()])
        .await
        .map_err(failed)?;
    Ok(Merge::Merged(commit.trim().to_owned()))
}
