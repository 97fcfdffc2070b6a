//! The verbs of configuration resources: `apply`, `get`, `describe`, `delete`, `kill`.

use std::path::PathBuf;

use clap::Args;

use super::options::{Output, TargetArgs};

/// `warden apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// A YAML file (several documents separated by `---`), a directory of `.yaml`/`.yml`
    /// files, or `-` for standard input. Repeatable.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE|DIR",
        required = true
    )]
    pub files: Vec<PathBuf>,

    /// Validate only; change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The kind: user, serviceaccount, role, rolebinding, project, upstream, agent,
    /// toolpolicy, autonomy, writebudget, killswitch, workspace (plural and any case work),
    /// `runs` or `tasks`.
    pub kind: String,

    /// One resource by name (or key).
    pub name: Option<String>,

    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,

    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden describe`.
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The kind (a configuration kind, `run` or `task`).
    pub kind: String,

    /// The name, key or run id.
    pub name: String,

    /// Output format (`table` is a readable summary).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,

    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The kind.
    pub kind: String,

    /// The resource's name (or key, as `warden get` shows it).
    pub name: String,

    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden kill`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("scope").required(true).args(["all", "project", "agent", "tool", "user", "service_account"])))]
pub struct KillArgs {
    /// Freeze everything.
    #[arg(long)]
    pub all: bool,
    /// Freeze every tool of a project.
    #[arg(long)]
    pub project: Option<String>,
    /// Freeze every run of an agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Freeze a tool (catalog name or glob).
    #[arg(long)]
    pub tool: Option<String>,
    /// Freeze everything a user does.
    #[arg(long)]
    pub user: Option<String>,
    /// Freeze everything a service account does.
    #[arg(long)]
    pub service_account: Option<String>,
    /// Why (required; shown to callers and operators).
    #[arg(long)]
    pub reason: String,
    /// A name for the switch (default: the scope), used to release it with
    /// `warden delete killswitch NAME`.
    #[arg(long)]
    pub name: Option<String>,

    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}
