//! A GitProvider's `credentials` handed to git (WORK-3): the token becomes an `Authorization`
//! header for the provider's `https://` repositories only — git's `http.<url>.extraHeader`,
//! scoped to the provider's URL (and to each repository it lists elsewhere), with redirects
//! not followed there, so that no other host ever sees it — given in git's
//! environment (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`), never on its
//! command line, where any local user could read it. It is sent as HTTP Basic with the user
//! `x-access-token`, which GitHub, GitLab, Gitea and Bitbucket take for a token.
//!
//! The provider that serves a repository is the one of the same project whose `url` the
//! repository's URL is under, or that lists it in `repositories`.

use std::fmt;

use base64::Engine as _;
use warden_core::config::{GitProviderSpec, Kind, Resource};
use warden_core::policy::Policy;
use warden_runtime::Secrets;

/// What git is given to reach a provider's repositories; empty for any other repository.
#[derive(Clone, Default)]
pub struct GitAuth {
    /// `(key, value)` of git configuration.
    config: Vec<(String, String)>,
}

impl fmt::Debug for GitAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitAuth")
            .field(
                "scopes",
                &self.config.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl GitAuth {
    /// The credentials of `provider` for its repositories, if it has any: its token resolved
    /// from `secrets`. An error names the reference, never a value.
    pub fn of(provider: &GitProviderSpec, secrets: &Secrets) -> Result<Self, String> {
        let Some(reference) = &provider.credentials else {
            return Ok(Self::default());
        };
        if !provider.url.starts_with("https://") {
            return Ok(Self::default());
        }
        let token = secrets.resolve(reference).map_err(|e| {
            format!(
                "the credentials of GitProvider `{}` cannot be read: {e}",
                provider.name
            )
        })?;
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
        let header = format!("Authorization: Basic {basic}");
        // The provider's URL, and each listed repository of its own elsewhere over https.
        let mut scopes = vec![format!("{}/", provider.url.trim_end_matches('/'))];
        for entry in &provider.repositories {
            let url = provider.repository_url(entry);
            if url.starts_with("https://") && !serves_under(provider, &url) {
                scopes.push(url);
            }
        }
        let mut config = Vec::new();
        for scope in scopes {
            config.push((format!("http.{scope}.extraHeader"), header.clone()));
            // A redirect would take the header to wherever it points: none is followed.
            config.push((format!("http.{scope}.followRedirects"), "false".to_owned()));
        }
        Ok(Self { config })
    }

    /// The credentials for the repository at `url` of `project`: its provider's, or none.
    pub fn for_repository(
        policy: &Policy,
        secrets: &Secrets,
        project: &str,
        url: &str,
    ) -> Result<Self, String> {
        let provider = policy
            .config
            .of_kind(Kind::GitProvider)
            .find_map(|r| match r {
                Resource::GitProvider(p) if p.project.as_str() == project && serves(p, url) => {
                    Some(p)
                }
                _ => None,
            });
        provider.map_or_else(|| Ok(Self::default()), |p| Self::of(p, secrets))
    }

    /// The environment that gives git this configuration.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![("GIT_CONFIG_COUNT".to_owned(), self.config.len().to_string())];
        for (i, (key, value)) in self.config.iter().enumerate() {
            env.push((format!("GIT_CONFIG_KEY_{i}"), key.clone()));
            env.push((format!("GIT_CONFIG_VALUE_{i}"), value.clone()));
        }
        env
    }
}

/// Whether the repository at `url` is under `provider`'s URL.
fn serves_under(provider: &GitProviderSpec, url: &str) -> bool {
    let base = provider.url.trim_end_matches('/');
    url.strip_prefix(base)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// Whether the repository at `url` is one of `provider`'s.
fn serves(provider: &GitProviderSpec, url: &str) -> bool {
    serves_under(provider, url)
        || provider
            .repositories
            .iter()
            .any(|entry| provider.repository_url(entry) == url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(url: &str, credentials: Option<&str>) -> GitProviderSpec {
        let mut spec =
            serde_json::json!({"name": "forge", "project": "p", "type": "git", "url": url});
        if let Some(c) = credentials {
            spec["credentials"] = c.into();
        }
        serde_json::from_value(spec).unwrap()
    }

    #[test]
    fn a_token_is_a_header_scoped_to_the_providers_https_url_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tok"), "t0ken\n").unwrap();
        let secrets = Secrets::new(Some(dir.path().to_path_buf()));
        let p = provider("https://git.example/org/", Some("${secret:tok}"));
        let auth = GitAuth::of(&p, &secrets).unwrap();
        let env = auth.env();
        assert_eq!(env[0], ("GIT_CONFIG_COUNT".into(), "2".into()));
        assert_eq!(env[1].1, "http.https://git.example/org/.extraHeader");
        let basic = base64::engine::general_purpose::STANDARD.encode("x-access-token:t0ken");
        assert_eq!(env[2].1, format!("Authorization: Basic {basic}"));
        assert_eq!(
            (env[3].1.as_str(), env[4].1.as_str()),
            ("http.https://git.example/org/.followRedirects", "false")
        );
        // A listed repository elsewhere over https gets the header for itself alone.
        let mut elsewhere = p.clone();
        elsewhere.repositories = vec!["https://mirror.example/app.git".into(), "x.git".into()];
        let env = GitAuth::of(&elsewhere, &secrets).unwrap().env();
        assert_eq!(env[0].1, "4");
        assert_eq!(env[5].1, "http.https://mirror.example/app.git.extraHeader");
        assert!(!format!("{auth:?}").contains(&basic));
        // Not for a directory of repositories, nor without credentials.
        assert!(
            GitAuth::of(&provider("/srv/git", Some("${secret:tok}")), &secrets)
                .unwrap()
                .config
                .is_empty()
        );
        assert!(
            GitAuth::of(&provider("https://git.example", None), &secrets)
                .unwrap()
                .config
                .is_empty()
        );
        // A missing secret is named.
        let err = GitAuth::of(
            &provider("https://git.example", Some("${secret:nope}")),
            &secrets,
        )
        .unwrap_err();
        assert!(err.contains("`nope`"), "{err}");
    }

    #[test]
    fn a_provider_serves_what_is_under_its_url_or_listed() {
        let mut p = provider("https://git.example/org", None);
        assert!(serves(&p, "https://git.example/org/app.git"));
        assert!(!serves(&p, "https://git.example/organisation/app.git"));
        assert!(!serves(&p, "https://other.example/org/app.git"));
        p.repositories = vec!["ssh://elsewhere/x.git".into()];
        assert!(serves(&p, "ssh://elsewhere/x.git"));
    }
}
