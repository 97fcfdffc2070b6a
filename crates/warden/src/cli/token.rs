//! `warden token create|list|revoke`.

use clap::{Args, Subcommand};

use super::options::{Output, TargetArgs};

/// `warden token …`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print its secret (shown once) on stdout.
    Create(TokenCreateArgs),
    /// List tokens (never their secrets).
    List(TokenListArgs),
    /// Revoke a token by id (`tok_…`); running servers refuse it within a second.
    Revoke(TokenRevokeArgs),
}

/// `warden token create`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("owner").required(true).args(["user", "service_account"])))]
pub struct TokenCreateArgs {
    /// The owning user.
    #[arg(long)]
    pub user: Option<String>,
    /// The owning service account.
    #[arg(long)]
    pub service_account: Option<String>,
    /// Bind the token to a project (repeatable); without it, all of the owner's projects.
    #[arg(long = "project", value_name = "PROJECT")]
    pub projects: Vec<String>,
    /// Narrow the token to a capability pattern (repeatable); without it, all of the owner's
    /// capabilities. A token is never wider than its owner.
    #[arg(long = "scope", value_name = "CAPABILITY")]
    pub scopes: Vec<String>,
    /// Lifetime, e.g. `30d`, `12h`; without it, the token does not expire.
    #[arg(long)]
    pub ttl: Option<String>,
    /// A note shown in listings.
    #[arg(long)]
    pub description: Option<String>,
    /// Print `{"id", "secret", …}` as JSON instead of the secret alone.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden token list`.
#[derive(Debug, Args)]
pub struct TokenListArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden token revoke`.
#[derive(Debug, Args)]
pub struct TokenRevokeArgs {
    /// The token's id (`tok_…`), as `warden token list` shows it.
    pub id: String,
    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}
