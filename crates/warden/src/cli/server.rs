//! The verbs that ask a running server, and those of approvals: `explain`, `tools inventory`,
//! `approvals …`, `run agent`, `task create`.

use clap::{Args, Subcommand};

use super::options::{Output, TargetArgs};

/// `warden explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The tool's catalog name.
    #[arg(long)]
    pub tool: String,
    /// The call's arguments as a JSON object.
    #[arg(long = "args", value_name = "JSON")]
    pub arguments: Option<String>,
    /// Explain for this user (needs `explain:any`; default: the token's own principal).
    #[arg(long)]
    pub user: Option<String>,
    /// Explain for this service account (needs `explain:any`).
    #[arg(long)]
    pub service_account: Option<String>,
    /// Explain a run of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// As if the token were bound to this project (repeatable).
    #[arg(long = "project")]
    pub projects: Vec<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's catalog name.
    pub tool: String,
    /// The call's arguments as a JSON object.
    #[arg(long = "args", value_name = "JSON")]
    pub arguments: Option<String>,
    /// Output format (json: the MCP result).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: a call is made by a running server).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The agent to talk to (it names a Model).
    pub agent: String,
    /// One message: one turn, then exit (status 1 when the model failed). Without it, an
    /// interactive session: a line is a message; an empty line or end of input ends it.
    pub message: Option<String>,
    /// Go on with this thread (`thr_…`) instead of starting one.
    #[arg(long, value_name = "ID")]
    pub thread: Option<String>,
    /// The server (chat runs on a running server: its model, tools and pipeline).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden approvals …`.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// List parked calls (all of them with `approvals:read` or `approvals:decide`, else yours).
    List(ApprovalsListArgs),
    /// One parked call, with its outcome and result once decided.
    Get(ApprovalIdArgs),
    /// Approve: the action runs now with your authority intersected with the requester's.
    Approve(ApprovalDecideArgs),
    /// Reject: the action never runs.
    Reject(ApprovalDecideArgs),
    /// Veto a staged action before its window ends.
    Veto(ApprovalDecideArgs),
}

/// `warden approvals list`.
#[derive(Debug, Args)]
pub struct ApprovalsListArgs {
    /// Only these statuses (comma-separated): pending, staged, approved, executing, executed,
    /// failed, rejected, expired, vetoed.
    #[arg(long)]
    pub status: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server or the store (`warden approvals list|get` read the store too).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden approvals get`.
#[derive(Debug, Args)]
pub struct ApprovalIdArgs {
    /// The approval's id (`apr_…`).
    pub id: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server or the store (`warden approvals list|get` read the store too).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden approvals approve|reject|veto`.
#[derive(Debug, Args)]
pub struct ApprovalDecideArgs {
    /// The approval's id (`apr_…`).
    pub id: String,
    /// Why (recorded in the audit trail).
    #[arg(long)]
    pub reason: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden tools …`.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Every tool of the live catalog with its class, capability, risk and governance status
    /// (GOV-5).
    Inventory(InventoryArgs),
    /// Every upstream with its state: up (and in which protocol), starting, or down and why.
    Upstreams(InventoryArgs),
    /// The tool definitions that changed since they were pinned, held out of every catalog
    /// until reviewed (GOV-9), with those rejected.
    Changes(ToolChangesArgs),
    /// Accept the definition a tool offers now: it becomes the pin, and the tool is served
    /// again on every replica.
    Accept(ToolReviewArgs),
    /// Reject the definition a tool offers now: the tool stays out until its upstream offers
    /// another.
    Reject(ToolReviewArgs),
}

/// `warden tools changes`.
#[derive(Debug, Args)]
pub struct ToolChangesArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden tools accept|reject`.
#[derive(Debug, Args)]
pub struct ToolReviewArgs {
    /// The tool's catalog name (`notes__echo`).
    pub tool: String,
    /// The definition reviewed (`warden tools changes` shows it): refused if the tool changed
    /// again since.
    #[arg(long, value_name = "HASH")]
    pub hash: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden tools inventory` and `warden tools upstreams`.
#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden run …`.
#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// Start a manual unattended run of an agent (RUN-2 `agent` mode) on a running server and
    /// print its run id. The server mints a run credential and starts the agent's runner.
    Agent(RunAgentArgs),
}

/// `warden task …`.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task (TASK-2's own path): an office session creates its tasks here, with the
    /// same admission as over MCP otherwise. Prints the task's id.
    Create(TaskCreateArgs),
}

/// `warden task create`.
#[derive(Debug, Args)]
pub struct TaskCreateArgs {
    /// The destination workspace (default: the parent's, else the session's own, else the one
    /// workspace the token may create tasks in).
    #[arg(long)]
    pub workspace: Option<String>,
    /// The task's title.
    #[arg(long)]
    pub title: String,
    /// What is to be done.
    #[arg(long)]
    pub description: Option<String>,
    /// The parent task.
    #[arg(long)]
    pub parent: Option<String>,
    /// A repository of the workspace, `NAME` or `NAME@BRANCH` (repeatable).
    #[arg(long = "repository", value_name = "NAME[@BRANCH]")]
    pub repositories: Vec<String>,
    /// `inherit_parent` or `new_workspace`.
    #[arg(long, value_name = "MODE")]
    pub workspace_mode: Option<String>,
    /// An idempotency key, unique per workspace.
    #[arg(long)]
    pub external_id: Option<String>,
    /// Output format (`table` prints the id alone).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden run agent`.
#[derive(Debug, Args)]
pub struct RunAgentArgs {
    /// The agent.
    pub name: String,
    /// Run it as a session of this task: in the task's environment, with its surface.
    #[arg(long)]
    pub task: Option<String>,
    /// Wait until the run ends and exit 0 only if it succeeded.
    #[arg(long)]
    pub wait: bool,
    /// The server (this verb does not work on a store: docs/cli.md says why).
    #[command(flatten)]
    pub target: TargetArgs,
}
