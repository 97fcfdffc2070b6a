//! Upstream credentials (FED-3): `${env:NAME}` and `${secret:NAME}` references in an
//! upstream's `env` and `headers`, resolved by Warden — never taken from a client.
//!
//! `${secret:NAME}` reads the file `NAME` in the secrets directory (by default `secrets/`
//! under the data directory; `--secrets-dir` or `WARDEN_SECRETS_DIR` choose another), the way
//! container platforms mount secrets. Secrets therefore never enter the store.

use std::path::PathBuf;

/// Resolves references in configuration values.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    dir: Option<PathBuf>,
}

impl Secrets {
    /// Secrets read from files in `dir`.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    /// Replaces every `${env:NAME}` and `${secret:NAME}` in `value`. The error names the
    /// missing reference, never a value.
    pub fn resolve(&self, value: &str) -> Result<String, String> {
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        while let Some(start) = rest.find("${") {
            out.push_str(rest.get(..start).unwrap_or_default());
            let after = rest.get(start + 2..).unwrap_or_default();
            let end = after
                .find('}')
                .ok_or_else(|| "an unterminated `${` in a value".to_owned())?;
            let reference = after.get(..end).unwrap_or_default();
            out.push_str(&self.lookup(reference)?);
            rest = after.get(end + 1..).unwrap_or_default();
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The directory secrets are read from, if one is configured.
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.dir.as_deref()
    }

    /// Writes `value` as the secret `name` (a file readable by its owner only, written whole
    /// or not at all), replacing what was there. An error names the secret and the directory,
    /// never the value.
    pub fn put(&self, name: &str, value: &str) -> Result<(), String> {
        valid_name(name)?;
        let dir = self.dir.as_ref().ok_or_else(|| {
            format!(
                "secret `{name}` cannot be stored: no secrets directory is configured \
                 (`warden serve --secrets-dir`, or `WARDEN_SECRETS_DIR`); give a `${{secret:NAME}}` reference \
                 instead"
            )
        })?;
        let failed = |e: std::io::Error| {
            format!(
                "secret `{name}` cannot be stored in `{}`: {e}",
                dir.display()
            )
        };
        create_private_dir(dir).map_err(failed)?;
        // A name of its own per writer, so that two writers never interleave in one file.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let partial = dir.join(format!(".{name}.{}.{n}.partial", std::process::id()));
        let written =
            write_private(&partial, value).and_then(|()| std::fs::rename(&partial, dir.join(name)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&partial);
            return Err(failed(e));
        }
        Ok(())
    }

    /// Removes the secret `name`, if it is there (best effort: an error is logged by the
    /// caller's choice, never fatal).
    pub fn remove(&self, name: &str) -> Result<(), String> {
        valid_name(name)?;
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        match std::fs::remove_file(dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("secret `{name}` cannot be removed: {e}"))
            }
            _ => Ok(()),
        }
    }

    fn lookup(&self, reference: &str) -> Result<String, String> {
        if let Some(name) = reference.strip_prefix("env:") {
            return std::env::var(name)
                .map_err(|_| format!("the environment variable `{name}` is not set"));
        }
        if let Some(name) = reference.strip_prefix("secret:") {
            valid_name(name)?;
            let dir = self.dir.as_ref().ok_or_else(|| {
                format!("secret `{name}` is referenced but no secrets directory is configured")
            })?;
            let text = std::fs::read_to_string(dir.join(name))
                .map_err(|_| format!("secret `{name}` is not in the secrets directory"))?;
            return Ok(text.trim_end_matches(['\n', '\r']).to_owned());
        }
        Err(format!(
            "`${{{reference}}}` is not a reference; write `${{env:NAME}}` or `${{secret:NAME}}`"
        ))
    }
}

fn valid_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !name.starts_with('.');
    if valid {
        Ok(())
    } else {
        Err(format!("`{name}` is not a valid secret name"))
    }
}

/// `dir` and its parents, made where missing, `dir` readable by its owner only (names of
/// secrets are not for every local user either).
#[cfg(unix)]
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn write_private(path: &std::path::Path, value: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(value.as_bytes())?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &std::path::Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_from_the_environment_and_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ledger-auth"), "Bearer s3cret\n").unwrap();
        let s = Secrets::new(Some(dir.path().to_path_buf()));
        assert_eq!(s.resolve("${secret:ledger-auth}").unwrap(), "Bearer s3cret");
        assert_eq!(s.resolve("plain").unwrap(), "plain");
        assert_eq!(
            s.resolve("${secret:missing}").unwrap_err(),
            "secret `missing` is not in the secrets directory"
        );
        assert_eq!(
            s.resolve("${secret:../etc}").unwrap_err(),
            "`../etc` is not a valid secret name"
        );
        assert_eq!(
            s.resolve("x ${env:WARDEN_SURELY_UNSET_VAR} y").unwrap_err(),
            "the environment variable `WARDEN_SURELY_UNSET_VAR` is not set"
        );
    }

    #[test]
    fn a_stored_secret_reads_back_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Secrets::new(Some(dir.path().join("secrets")));
        assert_eq!(s.put("hook", "abc"), Ok(()));
        assert_eq!(s.resolve("${secret:hook}").unwrap(), "abc");
        assert_eq!(s.put("hook", "def"), Ok(()));
        assert_eq!(s.resolve("${secret:hook}").unwrap(), "def");
        assert_eq!(s.remove("hook"), Ok(()));
        assert_eq!(s.remove("hook"), Ok(()));
        assert!(s.resolve("${secret:hook}").is_err());
        assert!(
            s.put("../x", "v")
                .unwrap_err()
                .contains("not a valid secret name")
        );
        let none = Secrets::new(None);
        assert!(
            none.put("hook", "v")
                .unwrap_err()
                .contains("no secrets directory")
        );
    }
}
