//! `warden context set|show|clear`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::options::Output;

/// `warden context …`.
#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// Use this server (and the token in this file) when neither flags nor the environment name
    /// a server or a store. `WARDEN_TOKEN` still wins over the file.
    Set(ContextSetArgs),
    /// Show the context (the token file's path, never the token).
    Show(ContextShowArgs),
    /// Forget the context.
    Clear,
}

/// `warden context set`.
#[derive(Debug, Args)]
pub struct ContextSetArgs {
    /// The server's base URL, e.g. `http://127.0.0.1:8600`.
    #[arg(long, value_name = "URL")]
    pub server: String,
    /// A file that holds the token for this server (its path is kept, not the token; the file
    /// is read at each use and is used for this server only).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
}

/// `warden context show`.
#[derive(Debug, Args)]
pub struct ContextShowArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
}
