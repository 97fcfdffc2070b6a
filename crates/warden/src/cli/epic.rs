//! `warden epic create|list|get|update` and `warden epic task add|move|review|accept` (WORK-1,
//! WORK-2): epics through a running server, which decides by the caller's credential.

use clap::{Args, Subcommand};

use super::options::{Output, TargetArgs};

/// `warden epic …`.
#[derive(Debug, Subcommand)]
pub enum EpicCommand {
    /// Create an epic in `draft` and print its id.
    Create(EpicCreateArgs),
    /// List the epics you may see, the last changed first.
    List(EpicListArgs),
    /// One epic, with its tasks and moves.
    Get(EpicGetArgs),
    /// Change an epic's text or risk, or move it (`--status`).
    Update(EpicUpdateArgs),
    /// The tasks of epics: add, move, review and accept them.
    #[command(subcommand)]
    Task(EpicTaskCommand),
}

/// `warden epic task …`.
#[derive(Debug, Subcommand)]
pub enum EpicTaskCommand {
    /// Add a task to an epic (its task is created through task admission) and print its id.
    Add(EpicTaskAddArgs),
    /// Move an epic task: ready, in_progress, review.
    Move(EpicTaskMoveArgs),
    /// Review an epic task in `review`: approve, or ask for changes.
    Review(EpicTaskReviewArgs),
    /// Accept an epic task whose review gate is open.
    Accept(EpicTaskAcceptArgs),
}

/// `warden epic create`.
#[derive(Debug, Args)]
pub struct EpicCreateArgs {
    /// The project it belongs to.
    #[arg(long)]
    pub project: String,
    /// Its title.
    #[arg(long)]
    pub title: String,
    /// What it is about.
    #[arg(long)]
    pub description: Option<String>,
    /// An acceptance criterion (repeatable).
    #[arg(long = "criterion", value_name = "TEXT")]
    pub criteria: Vec<String>,
    /// The trade-offs it makes.
    #[arg(long)]
    pub tradeoffs: Option<String>,
    /// `low`, `medium` (the default), `high` or `critical`.
    #[arg(long)]
    pub risk: Option<String>,
    /// Output format (`table` prints the id alone).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden epic list`.
#[derive(Debug, Args)]
pub struct EpicListArgs {
    /// Only this project's epics.
    #[arg(long)]
    pub project: Option<String>,
    /// Only epics in this state: `draft`, `open`, `done`, `archived`.
    #[arg(long)]
    pub status: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden epic get`.
#[derive(Debug, Args)]
pub struct EpicGetArgs {
    /// The epic (`epc_…`).
    pub id: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden epic update`.
#[derive(Debug, Args)]
pub struct EpicUpdateArgs {
    /// The epic (`epc_…`).
    pub id: String,
    /// A new title.
    #[arg(long)]
    pub title: Option<String>,
    /// A new description.
    #[arg(long)]
    pub description: Option<String>,
    /// New acceptance criteria, replacing the old (repeatable).
    #[arg(long = "criterion", value_name = "TEXT")]
    pub criteria: Vec<String>,
    /// New trade-offs.
    #[arg(long)]
    pub tradeoffs: Option<String>,
    /// A new risk.
    #[arg(long)]
    pub risk: Option<String>,
    /// Move the epic: `open`, `done`, `archived`.
    #[arg(long)]
    pub status: Option<String>,
    /// Output format (`table` prints the id and the state).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden epic task add`.
#[derive(Debug, Args)]
pub struct EpicTaskAddArgs {
    /// The epic (`epc_…`).
    pub epic: String,
    /// The task's title.
    #[arg(long)]
    pub title: String,
    /// What is to be done.
    #[arg(long)]
    pub description: Option<String>,
    /// The workspace its task is created in (of the epic's project).
    #[arg(long)]
    pub workspace: String,
    /// The workspace's repository the work is in.
    #[arg(long)]
    pub repository: String,
    /// The work branch.
    #[arg(long)]
    pub branch: String,
    /// The branch the work is merged into (default: the workspace's for the repository).
    #[arg(long)]
    pub base_branch: Option<String>,
    /// Output format (`table` prints the epic task's id and its task's).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden epic task move`.
#[derive(Debug, Args)]
pub struct EpicTaskMoveArgs {
    /// The epic task (`ept_…`).
    pub id: String,
    /// Where it moves: `ready`, `in_progress`, `review`.
    pub to: String,
    /// Output format (`table` prints the id and the state).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden epic task review`.
#[derive(Debug, Args)]
pub struct EpicTaskReviewArgs {
    /// The epic task (`ept_…`).
    pub id: String,
    /// `approve`, or `changes` (which moves it back to `in_progress`).
    #[arg(long)]
    pub verdict: String,
    /// What you say about it.
    #[arg(long)]
    pub comment: Option<String>,
    /// Output format (`table` prints the verdict and the commit reviewed).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden epic task accept`.
#[derive(Debug, Args)]
pub struct EpicTaskAcceptArgs {
    /// The epic task (`ept_…`).
    pub id: String,
    /// Output format (`table` prints the id and the state).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}
