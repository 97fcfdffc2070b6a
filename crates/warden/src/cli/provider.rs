//! `warden provider discover|import` (WORK-3): the repositories of a `GitProvider`, and adding
//! them to a workspace. `warden get gitproviders` lists the providers.

use clap::{Args, Subcommand};

use super::options::{Output, TargetArgs};

/// `warden provider …`.
#[derive(Debug, Subcommand)]
pub enum ProviderCommand {
    /// List a GitProvider's repositories: the bare repositories of its directory, or its
    /// configured remote ones, each checked with `git ls-remote`.
    Discover(ProviderDiscoverArgs),
    /// Add a GitProvider's repositories to a workspace of its project.
    Import(ProviderImportArgs),
}

/// `warden provider discover`.
#[derive(Debug, Args)]
pub struct ProviderDiscoverArgs {
    /// The GitProvider.
    pub name: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: Output,
    /// Where to work.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden provider import`.
#[derive(Debug, Args)]
pub struct ProviderImportArgs {
    /// The GitProvider.
    pub name: String,
    /// The workspace to add them to.
    #[arg(long)]
    pub workspace: String,
    /// A repository to add, by the name `discover` shows (repeatable); every one when left
    /// out.
    #[arg(long = "repository", value_name = "NAME")]
    pub repositories: Vec<String>,
    /// Where to work.
    #[command(flatten)]
    pub target: TargetArgs,
}
