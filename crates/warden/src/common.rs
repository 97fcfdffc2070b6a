//! What the verbs share: errors with their exit status, where the store is, reading
//! configuration files, the clock.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use warden_control::Control;
use warden_core::config::{ConfigError, Kind, Located, parse_documents};
use warden_core::pipeline::Clock as _;
use warden_core::time::Millis;
use warden_runtime::SystemClock;
use warden_store::{Location, Store};

/// A usage or configuration error: exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for a usage error.
pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// Configuration errors, one per line: exit status 2.
pub(crate) fn config_errors(errors: &[ConfigError]) -> anyhow::Error {
    usage(
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\nerror: "),
    )
}

/// The default data directory: `$XDG_DATA_HOME/warden` or `~/.local/share/warden`.
pub fn default_data_dir() -> anyhow::Result<PathBuf> {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("warden"));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            usage("cannot find a default data directory ($HOME is not set); pass --data-dir")
        })?;
    Ok(PathBuf::from(home).join(".local/share/warden"))
}

pub(crate) async fn open(location: &Location) -> anyhow::Result<Store> {
    opened(location, Store::open(location).await)
}

/// The file in a data directory that names the address of the `warden serve` using it (while
/// it runs).
pub(crate) const SERVING_FILE: &str = "serving";

/// Where the audit key is: `explicit`, else `audit.key` in the data directory (the default
/// data directory for a database URL).
pub(crate) fn audit_key_path(
    explicit: Option<&Path>,
    location: &Location,
) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    Ok(match location {
        Location::DataDir(dir) => dir.join(warden_store::KEY_FILE),
        Location::Url(_) => default_data_dir()?.join(warden_store::KEY_FILE),
    })
}

/// [`open`] for a command that reads, or changes only what exists: a missing store is a
/// runtime error (exit 1), and nothing is created.
pub(crate) async fn open_existing(location: &Location) -> anyhow::Result<Store> {
    opened(location, Store::open_existing(location).await)
}

/// [`open`] for `warden serve`: on the embedded store, the server owns the audit spool.
pub(crate) async fn open_serving(location: &Location) -> anyhow::Result<Store> {
    opened(location, Store::open_serving(location).await)
}

fn opened(
    location: &Location,
    store: Result<Store, warden_store::StoreError>,
) -> anyhow::Result<Store> {
    store.map_err(|e| match e {
        warden_store::StoreError::Invalid(m) => usage(m),
        warden_store::StoreError::Missing(m) => anyhow::anyhow!(m),
        other => anyhow::Error::new(other).context(format!(
            "failed to open the store at {}",
            location.display()
        )),
    })
}

pub(crate) fn now() -> Millis {
    SystemClock.now()
}

/// The operator services over `store`, which has no server to tell of changes: a server on
/// the same store sees them at its next poll.
pub(crate) fn control(store: impl Into<Arc<Store>>) -> Control {
    Control::new(store.into(), Arc::new(SystemClock))
}

/// Where `${secret:NAME}` files are for a store at `location`: `explicit` (`--secrets-dir`,
/// `WARDEN_SECRETS_DIR`), else `secrets` in the data directory; none for a database URL.
pub(crate) fn secrets_dir(explicit: Option<PathBuf>, location: &Location) -> Option<PathBuf> {
    explicit.or_else(|| match location {
        Location::DataDir(dir) => Some(dir.join("secrets")),
        Location::Url(_) => None,
    })
}

/// The secrets of the store at `location` for a verb without `--secrets-dir`:
/// `WARDEN_SECRETS_DIR`, else `secrets` in the data directory.
pub(crate) fn store_secrets(location: &Location) -> warden_runtime::Secrets {
    let explicit = std::env::var_os("WARDEN_SECRETS_DIR").map(Into::into);
    warden_runtime::Secrets::new(secrets_dir(explicit, location))
}

/// Who is acting, for operator records in the audit trail.
pub(crate) fn cli_actor() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    format!("cli:{user}")
}

/// Reads YAML resources from files and directories (`.yaml`/`.yml`, sorted by name).
pub(crate) fn read_config_files(paths: &[PathBuf]) -> anyhow::Result<Vec<Located>> {
    parse_config_texts(&read_config_texts(paths)?)
}

/// The files of `paths` (directories' `.yaml`/`.yml` files, sorted by name; `-` standard
/// input, once), each with the label errors name it by.
pub(crate) fn read_config_texts(paths: &[PathBuf]) -> anyhow::Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    let mut texts = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            if texts.iter().any(|(label, _)| label == STDIN) {
                return Err(usage("-: standard input can be read once"));
            }
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                return Err(usage(
                    "-: standard input is a terminal; pipe the configuration in (`… | warden apply -f -`)",
                ));
            }
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| usage(format!("{STDIN}: cannot be read: {e}")))?;
            texts.push((STDIN.to_owned(), text));
            continue;
        }
        collect_files(path, &mut files)?;
        for file in files.drain(..) {
            let label = file.display().to_string();
            let text = std::fs::read_to_string(&file)
                .map_err(|e| usage(format!("{label}: cannot be read: {e}")))?;
            texts.push((label, text));
        }
    }
    Ok(texts)
}

/// How errors name standard input.
const STDIN: &str = "<stdin>";

/// The resources of labelled texts, or every problem of all of them (exit status 2).
pub(crate) fn parse_config_texts(files: &[(String, String)]) -> anyhow::Result<Vec<Located>> {
    let mut resources = Vec::new();
    let mut errors = Vec::new();
    for (label, text) in files {
        match parse_documents(label, text) {
            Ok(mut docs) => resources.append(&mut docs),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if !errors.is_empty() {
        return Err(config_errors(&errors));
    }
    Ok(resources)
}

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path)
        .map_err(|e| usage(format!("{}: cannot be read: {e}", path.display())))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("failed to list {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
            .collect();
        entries.sort();
        if entries.is_empty() {
            return Err(usage(format!(
                "{}: no .yaml or .yml files in this directory",
                path.display()
            )));
        }
        out.extend(entries);
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

/// A kind named on the command line (`get`, `describe`, `delete`), in any case, singular or
/// plural.
pub(crate) fn parse_kind(s: &str) -> anyhow::Result<Kind> {
    Kind::parse_loose(s).ok_or_else(|| {
        let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        usage(format!(
            "unknown kind `{s}`; expected one of {}",
            kinds.join(", ")
        ))
    })
}
