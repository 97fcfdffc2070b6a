//! `warden context set|show|clear`: the server (and the file holding its token) that the verbs
//! use when neither flags nor the environment choose a server or a store. Kept in
//! `$XDG_CONFIG_HOME/warden/context.json` (or `~/.config/warden/context.json`), mode 0600. It
//! holds the token file's path, never a token, and the token file is used only for the
//! context's own server.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::cli::{ContextCommand, ContextSetArgs, ContextShowArgs, Output};
use crate::common::usage;
use crate::output;

/// The context file's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Context {
    /// The server's base URL.
    pub(crate) server: String,
    /// The file that holds the token for `server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token_file: Option<PathBuf>,
}

/// Where the context is kept, if there is a home for it.
fn file() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })?;
    Some(config.join("warden").join("context.json"))
}

/// The context, if one is set.
pub(crate) fn load() -> anyhow::Result<Option<Context>> {
    let Some(path) = file() else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(usage(format!("{}: cannot be read: {e}", path.display()))),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        usage(format!(
            "{}: not a Warden context ({e}); fix it or remove it with `warden context clear`",
            path.display()
        ))
    })
}

impl Context {
    /// The token for `server` from the token file, when `server` is the context's server.
    pub(crate) fn token_for(&self, server: &str) -> anyhow::Result<Option<String>> {
        let same = self.server.trim_end_matches('/') == server.trim_end_matches('/');
        let (true, Some(path)) = (same, &self.token_file) else {
            return Ok(None);
        };
        read_token(path).map(Some)
    }
}

fn read_token(path: &Path) -> anyhow::Result<String> {
    let token = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("the token file {}: {e}", path.display())))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(usage(format!("the token file {} is empty", path.display())));
    }
    Ok(token.to_owned())
}

pub(crate) fn run(cmd: ContextCommand) -> anyhow::Result<()> {
    match cmd {
        ContextCommand::Set(args) => set(args),
        ContextCommand::Show(args) => show(&args),
        ContextCommand::Clear => clear(),
    }
}

fn home() -> anyhow::Result<PathBuf> {
    file().ok_or_else(|| {
        usage("cannot find where to keep the context ($XDG_CONFIG_HOME and $HOME are not set)")
    })
}

fn set(args: ContextSetArgs) -> anyhow::Result<()> {
    let server = args.server.trim_end_matches('/').to_owned();
    // The same check as every verb's, now rather than at the first use.
    crate::api::Api::new(&server, String::new())?;
    let token_file = match &args.token_file {
        Some(path) => {
            let path = std::path::absolute(path)
                .map_err(|e| usage(format!("--token-file {}: {e}", path.display())))?;
            read_token(&path)?;
            Some(path)
        }
        None => None,
    };
    let context = Context { server, token_file };
    let path = home()?;
    write_private(&path, &serde_json::to_vec_pretty(&context)?)
        .with_context(|| format!("failed to write the context to {}", path.display()))?;
    match &context.token_file {
        Some(t) => println!(
            "context: the server at {}, with the token in {}",
            context.server,
            t.display()
        ),
        None => println!(
            "context: the server at {}, with the token in WARDEN_TOKEN",
            context.server
        ),
    }
    Ok(())
}

/// Writes `bytes` to `path` readable by its owner only, replacing it whole.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let partial = path.with_extension("json.partial");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut out = options.open(&partial)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        out.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    out.write_all(bytes)?;
    out.sync_all()?;
    std::fs::rename(&partial, path)
}

/// The context as `show -o json` prints it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    file: &'a Path,
    server: &'a str,
    token_file: Option<&'a Path>,
}

fn show(args: &ContextShowArgs) -> anyhow::Result<()> {
    let path = home()?;
    let context = load()?;
    let shown = context.as_ref().map(|c| Shown {
        file: &path,
        server: &c.server,
        token_file: c.token_file.as_deref(),
    });
    match args.output {
        Output::Json => output::json(&shown),
        Output::Yaml => output::yaml_docs(&[&shown]),
        Output::Table => {
            let Some(shown) = shown else {
                eprintln!(
                    "no context: the verbs use their defaults (`warden context set --server URL` sets one)"
                );
                return Ok(());
            };
            println!("server:     {}", shown.server);
            println!(
                "token:      {}",
                shown.token_file.map_or_else(
                    || "from WARDEN_TOKEN".to_owned(),
                    |t| format!("from the file {}", t.display())
                )
            );
            println!("kept in:    {}", shown.file.display());
            for var in ["WARDEN_SERVER", "WARDEN_DATA_DIR", "WARDEN_DATABASE_URL"] {
                if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
                    eprintln!("{var} is set: it wins over the context");
                }
            }
            Ok(())
        }
    }
}

fn clear() -> anyhow::Result<()> {
    let path = home()?;
    match std::fs::remove_file(&path) {
        Ok(()) => println!("context cleared"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => println!("no context to clear"),
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(format!("failed to remove the context {}", path.display())));
        }
    }
    Ok(())
}
