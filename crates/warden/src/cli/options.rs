//! Options many verbs take: where the store is, the server, the output format.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Where the store is: `--data-dir` (SQLite) or `--database-url` (PostgreSQL). Without them,
/// `WARDEN_DATA_DIR` or `WARDEN_DATABASE_URL`, else the default data directory (read by
/// `common::location`, so that a verb knows whether its store was named on its command line).
#[derive(Clone, Debug, Args)]
pub struct StoreArgs {
    /// Data directory of the embedded SQLite store (or `WARDEN_DATA_DIR`) [default:
    /// $XDG_DATA_HOME/warden, or ~/.local/share/warden].
    #[arg(long, conflicts_with = "database_url", global = true)]
    pub data_dir: Option<PathBuf>,

    /// Database URL: `postgres://…` for PostgreSQL, or `sqlite://…` (or `WARDEN_DATABASE_URL`).
    #[arg(long, global = true, value_name = "URL")]
    pub database_url: Option<String>,
}

/// Where a verb works: on a running server through its admin API (`--server`), or on the
/// store directly (`--data-dir`, `--database-url`). docs/cli.md has which verbs go where, and
/// how the choice is made when none of these is given.
#[derive(Clone, Debug, Args)]
pub struct TargetArgs {
    /// Work through the admin API of the server at this base URL (or `WARDEN_SERVER`, or the
    /// `warden context`), with the token in `WARDEN_TOKEN`, instead of on a store.
    #[arg(long, global = true, value_name = "URL")]
    pub server: Option<String>,

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
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
