//! Forges (WORK-3): a `kind: GitProvider` — any remote git understands — whose repositories
//! are discovered here and imported into a workspace, and whose CI reports come in through
//! its webhook ([`hook`]).
//!
//! Discovery of a directory (a local path or `file://`) lists the bare repositories directly
//! under it; of a remote, the provider's configured `repositories`, each checked with
//! `git ls-remote`. Importing adds discovered repositories to a workspace of the provider's
//! project — a configuration change the caller's door applies (`warden_control::forges`).

pub mod hook;

use std::path::{Path, PathBuf};

use serde::Serialize;
use warden_core::config::{GitProviderSpec, WorkspaceRepository, WorkspaceSpec};
use warden_core::git_url::{GitUrl, classify};
use warden_core::name::Name;

use warden_runtime::Secrets;

use crate::git_auth::GitAuth;
use crate::materialise::git_with;

/// A repository a provider has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovered {
    /// Its name in a workspace once imported (the last path segment, without `.git`).
    pub name: String,
    /// Its URL.
    pub url: String,
    /// Why git could not read it, when it could not (it is listed all the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The repositories of `provider`, by name, reached with its credentials from `secrets`.
pub async fn discover(
    provider: &GitProviderSpec,
    secrets: &Secrets,
) -> Result<Vec<Discovered>, String> {
    let auth = GitAuth::of(provider, secrets)?;
    let mut found = match classify(&provider.url)? {
        GitUrl::Local => in_directory(&directory(&provider.url))?,
        GitUrl::Remote => Vec::new(),
    };
    for entry in &provider.repositories {
        found.push(checked(provider.repository_url(entry), &auth).await);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name).then(a.url.cmp(&b.url)));
    found.dedup_by(|a, b| a.url == b.url);
    Ok(found)
}

fn directory(url: &str) -> PathBuf {
    PathBuf::from(url.strip_prefix("file://").unwrap_or(url))
}

/// The bare repositories directly under `dir`.
fn in_directory(dir: &Path) -> Result<Vec<Discovered>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list `{}`: {e}", dir.display()))?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let bare = path.join("HEAD").is_file() && path.join("objects").is_dir();
        if !bare {
            continue;
        }
        let url = path.to_string_lossy().into_owned();
        found.push(Discovered {
            name: repository_name(&url),
            url,
            problem: None,
        });
    }
    Ok(found)
}

/// `url`, with why git cannot read it if it cannot.
async fn checked(url: String, auth: &GitAuth) -> Discovered {
    let local = classify(&url) == Ok(GitUrl::Local);
    let problem = git_with(None, local, auth, ["ls-remote", "--heads", url.as_str()])
        .await
        .err();
    Discovered {
        name: repository_name(&url),
        url: warden_core::url_credentials::redact(&url),
        problem,
    }
}

/// The last path segment of `url` without `.git`, made a valid name (`-` for anything else).
fn repository_name(url: &str) -> String {
    let last = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or(url);
    let stem = last.strip_suffix(".git").unwrap_or(last);
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    name.trim_matches('-').to_owned()
}

/// `workspace` with the repositories of `found` that `names` picks (all when empty) added;
/// those it has already (by URL) are left as they are. The names it added, or why not.
pub fn import(
    workspace: &mut WorkspaceSpec,
    found: &[Discovered],
    names: &[String],
) -> Result<Vec<String>, String> {
    for name in names {
        if !found.iter().any(|d| &d.name == name) {
            return Err(format!(
                "the provider has no repository `{name}`; `warden provider discover` lists them"
            ));
        }
    }
    let mut added = Vec::new();
    for d in found {
        if !(names.is_empty() || names.contains(&d.name)) {
            continue;
        }
        if workspace.repositories.iter().any(|r| r.url == d.url) {
            continue;
        }
        if workspace
            .repositories
            .iter()
            .any(|r| r.name.as_str() == d.name)
        {
            return Err(format!(
                "workspace `{}` has a repository named `{}` at another URL",
                workspace.name, d.name
            ));
        }
        let name = Name::new(&d.name)
            .map_err(|e| format!("`{}` cannot be a repository's name: {e}", d.name))?;
        workspace.repositories.push(WorkspaceRepository {
            name,
            url: d.url.clone(),
            branch: None,
        });
        added.push(d.name.clone());
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_is_named_after_its_last_segment() {
        assert_eq!(repository_name("/srv/git/App.git"), "app");
        assert_eq!(repository_name("https://git.example/org/api.git/"), "api");
        assert_eq!(repository_name("git@host:org/web"), "web");
        assert_eq!(repository_name("/srv/git/my repo.git"), "my-repo");
    }
}
