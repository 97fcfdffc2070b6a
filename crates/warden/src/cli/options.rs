//! Options many verbs take: where the store is, the output format, the server.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Where the store is: `--data-dir` (SQLite) or `--database-url` (PostgreSQL).
#[derive(Clone, Debug, Args)]
pub struct StoreArgs {
    /// Data directory of the embedded SQLite store [default: $XDG_DATA_HOME/warden, or
    /// ~/.local/share/warden].
    #[arg(
        long,
        env = "WARDEN_DATA_DIR",
        conflicts_with = "database_url",
        global = true
    )]
    pub data_dir: Option<PathBuf>,

    /// Database URL: `postgres://…` for PostgreSQL (or `sqlite://…`).
    #[arg(
        long,
        env = "WARDEN_DATABASE_URL",
        global = true,
        hide_env_values = true
    )]
    pub database_url: Option<String>,
}

/// Output formats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned columns.
    #[default]
    Table,
    /// JSON (JSON Lines for audit records).
    Json,
    /// YAML (resources can be applied again).
    Yaml,
}

/// Talking to a running server's admin API.
#[derive(Clone, Debug, Args)]
pub struct RemoteArgs {
    /// The server's base URL.
    #[arg(long, env = "WARDEN_SERVER", default_value = "http://127.0.0.1:8600")]
    pub server: String,
}
