//! The repository URLs Warden hands to git (a Workspace's `repositories[].url`): which ones it
//! takes, and whether git reads one from this machine's file system. One rule for the
//! configuration that refuses a URL and for the code that clones it.
//!
//! Taken: a local path, `file://`, `https://`, `ssh://`, `git://`, and the scp-like
//! `[user@]host:path` that git reads as SSH. Refused: every other scheme (`http://` sends
//! credentials and code in the clear), git's remote helpers (`<transport>::<address>`, such as
//! `fd::3`, which made `git clone` wait its full timeout, or `ext::`, which runs a command), and
//! anything that starts like an option.

/// Where git finds a repository.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GitUrl {
    /// On this machine's file system: a path or `file://`.
    Local,
    /// Over a network transport: `https://`, `ssh://`, `git://` or scp-like SSH.
    Remote,
}

/// The schemes taken, besides local paths.
const SCHEMES: &[&str] = &["file://", "https://", "ssh://", "git://"];

/// What `url` is, or why it is refused (a message for the configuration's error).
pub fn classify(url: &str) -> Result<GitUrl, String> {
    let url = url.trim();
    if url.is_empty() {
        return Err("give a local path or a URL `git clone` accepts".into());
    }
    if url.starts_with('-') {
        return Err(format!("`{url}` starts like an option"));
    }
    if url.contains("::") {
        return Err(format!(
            "`{url}` names a git remote helper; give a local path or a file://, https://, ssh:// or git:// URL"
        ));
    }
    if let Some(at) = url.find("://") {
        return match SCHEMES.iter().find(|s| url.starts_with(**s)) {
            Some(&"file://") => Ok(GitUrl::Local),
            Some(_) => Ok(GitUrl::Remote),
            None => Err(format!(
                "`{}` is not a transport Warden uses; give a local path or a file://, https://, ssh:// or git:// URL",
                url.get(..at + 3).unwrap_or(url)
            )),
        };
    }
    // Git's rule: a colon before the first slash makes it scp-like `host:path`, over SSH.
    Ok(match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) if colon < slash => GitUrl::Remote,
        (Some(_), None) => GitUrl::Remote,
        _ => GitUrl::Local,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_and_the_four_transports_are_taken_and_told_apart() {
        for url in [
            "/srv/app.git",
            "./app",
            "app",
            "file:///srv/app.git",
            "/a:b",
        ] {
            assert_eq!(classify(url), Ok(GitUrl::Local), "{url}");
        }
        for url in [
            "https://example.com/app.git",
            "ssh://git@example.com/app.git",
            "git://example.com/app.git",
            "git@example.com:app.git",
            "host:app",
        ] {
            assert_eq!(classify(url), Ok(GitUrl::Remote), "{url}");
        }
    }

    #[test]
    fn helpers_other_schemes_and_options_are_refused_naming_them() {
        assert_eq!(
            classify("fd::3").unwrap_err(),
            "`fd::3` names a git remote helper; give a local path or a file://, https://, ssh:// or git:// URL"
        );
        assert!(classify("ext::sh -c touch% /tmp/pwned").is_err());
        assert_eq!(
            classify("http://example.com/app.git").unwrap_err(),
            "`http://` is not a transport Warden uses; give a local path or a file://, https://, ssh:// or git:// URL"
        );
        assert!(classify("ftp://example.com/app.git").is_err());
        assert!(classify("--upload-pack=touch /tmp/x").is_err());
        assert!(classify("  ").is_err());
    }
}
