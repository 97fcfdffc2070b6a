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

    fn lookup(&self, reference: &str) -> Result<String, String> {
        if let Some(name) = reference.strip_prefix("env:") {
            return std::env::var(name)
                .map_err(|_| format!("the environment variable `{name}` is not set"));
        }
        if let Some(name) = reference.strip_prefix("secret:") {
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && !name.starts_with('.');
            if !valid {
                return Err(format!("`{name}` is not a valid secret name"));
            }
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
}
