//! The command line (SPEC Appendix B), with clap. Every verb has `--help`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod bench;
mod options;

pub(crate) use bench::{BenchArgs, BenchCommand};
pub(crate) use options::{Output, RemoteArgs, StoreArgs};

/// Warden: a governed control plane for the tools AI agents call over MCP.
///
/// Exit status: 0 success, 1 runtime failure, 2 usage or configuration error.
#[derive(Debug, Parser)]
#[command(
    name = "warden",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,

    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Pretty, env = "WARDEN_LOG_FORMAT")]
    pub log_format: LogFormat,

    /// Log filter (tracing `EnvFilter` syntax), e.g. `info` or `warden=debug`.
    #[arg(
        long,
        global = true,
        default_value = "info,sqlx=warn,rmcp=warn",
        env = "WARDEN_LOG"
    )]
    pub log: String,
}

/// Log formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line.
    Json,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the HTTP server (MCP endpoints, admin API, health, metrics).
    ///
    /// With no flags it runs on the embedded default: an SQLite store under the data
    /// directory. On the first start of a new store it creates the first admin and prints
    /// `admin token: wdn_…` once.
    Serve(ServeArgs),

    /// Serve the MCP contract over stdin/stdout: embedded on the local store, or as a bridge
    /// to a running server (`--remote`). The token comes from `WARDEN_TOKEN`. Only protocol
    /// messages go to stdout; logs go to stderr.
    Stdio(StdioArgs),

    /// Apply migrations to the store and exit.
    Migrate(StoreOnly),

    /// Create or replace configuration resources from YAML files or directories.
    Apply(ApplyArgs),

    /// List resources of a kind, or show one.
    Get(GetArgs),

    /// Show one resource, or one run with its authority and calls (`describe run ID`).
    Describe(DescribeArgs),

    /// Delete one resource (refused while others reference it).
    Delete(DeleteArgs),

    /// Start work: `warden run agent NAME` starts a manual unattended run of an agent;
    /// `--task ID` makes it a session of that task.
    #[command(subcommand)]
    Run(RunCommand),

    /// Tasks of workspaces: `warden task create` (the office path, through a running server;
    /// token in `WARDEN_TOKEN`, a session's run credential included).
    #[command(subcommand)]
    Task(TaskCommand),

    /// Pull a kill switch: freeze everything, a project, an agent, a tool or a principal.
    Kill(KillArgs),

    /// Create, list and revoke tokens.
    #[command(subcommand)]
    Token(TokenCommand),

    /// List and filter the audit trail, or verify its hash chain.
    Audit(AuditArgs),

    /// Configuration helpers.
    #[command(subcommand)]
    Config(ConfigCommand),

    /// Explain what a call would decide, with the rules, without executing or recording
    /// anything (asks a running server; token in `WARDEN_TOKEN`).
    Explain(ExplainArgs),

    /// Parked calls: list them, read one, approve, reject or veto (asks a running server;
    /// token in `WARDEN_TOKEN`).
    #[command(subcommand)]
    Approvals(ApprovalsCommand),

    /// The live tool catalog of a running server.
    #[command(subcommand)]
    Tools(ToolsCommand),

    /// Serve the demo project's notebook as an MCP server over stdin/stdout: `list_notes` (a
    /// read), `add_note` (an ordinary mutation) and `delete_note` (a dangerous one). The
    /// embedded default registers it as the upstream `notes` of the project `demo`.
    DemoServer(DemoServerArgs),

    /// Measure an MCP endpoint (Warden or any other) under load, alone or against the upstream
    /// behind it (`--direct`); and the helpers for the benchmark scenarios (subcommands).
    ///
    /// Clients run a closed loop (each sends its next request when the last one answered)
    /// over Streamable HTTP in the chosen era. Reported: requests/s, latency p50/p90/p99/max
    /// per operation, errors by kind; with `--direct`, rounds alternate gateway, direct,
    /// gateway, … and the ratios gateway/direct are printed. See docs/benchmarks.md.
    ///
    /// The endpoint's bearer token, if it needs one, comes from `WARDEN_TOKEN` (never a flag);
    /// `--direct` is called without one. Exit status 0 when the run completed, whatever its
    /// error counts (they are in the report); 1 when it could not run (e.g. cannot connect).
    Bench(BenchArgs),
}

/// `warden serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8600", env = "WARDEN_LISTEN")]
    pub listen: SocketAddr,

    /// Configuration files or directories applied at start (same as `warden apply -f`).
    #[arg(long = "config", value_name = "FILE")]
    pub config: Vec<PathBuf>,

    /// A `Host` name clients use (repeatable). Loopback listeners accept the loopback names
    /// without it; other listeners need it (`*` accepts any host).
    #[arg(
        long = "allowed-host",
        value_name = "HOST",
        env = "WARDEN_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,

    /// An `Origin` allowed besides the allowed hosts (repeatable), e.g. `https://app.example.com`.
    #[arg(
        long = "allowed-origin",
        value_name = "ORIGIN",
        env = "WARDEN_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    pub allowed_origins: Vec<String>,

    /// Do not load the demo configuration into a new embedded store.
    #[arg(long)]
    pub no_demo: bool,

    /// Directory of `${secret:NAME}` files [default: `secrets` in the data directory].
    #[arg(long, env = "WARDEN_SECRETS_DIR")]
    pub secrets_dir: Option<PathBuf>,

    /// Threads that serve HTTP connections, each with its own runtime and listening socket on
    /// the address (Linux; elsewhere one shared runtime); a stateless call stays on the thread
    /// of its connection [default: the number of CPUs].
    #[arg(long, env = "WARDEN_THREADS", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,

    /// The key that signs checkpoints of the audit chain (AUD-2), created (0600) if missing;
    /// checkpoints are appended to `audit-checkpoints.jsonl` beside it [default: `audit.key`
    /// in the data directory, for a database URL in the default data directory].
    #[arg(long, value_name = "FILE", env = "WARDEN_AUDIT_KEY")]
    pub audit_key: Option<PathBuf>,

    /// Export traces of governed calls (OPS-3) over OTLP/HTTP to this collector, e.g.
    /// `http://127.0.0.1:4318` (spans go to its `/v1/traces`). Off without it.
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden stdio`.
#[derive(Debug, Args)]
pub struct StdioArgs {
    /// Bridge to a running `warden serve` (its MCP URL, e.g. `http://127.0.0.1:8600/mcp`)
    /// instead of governing locally.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,

    /// Serve a run of this agent (as `/mcp/agents/{agent}` does over HTTP).
    #[arg(long)]
    pub agent: Option<String>,

    /// `on`: every call is governed (refused when governance is unavailable). `auto`: with
    /// `--remote`, fall back to direct execution on the local configuration when the remote
    /// cannot be reached, saying so on stderr — a convenience, not a security property.
    /// `off`: direct execution on the local configuration, still audited.
    #[arg(long, value_enum, default_value_t = GovernanceMode::On)]
    pub governance: GovernanceMode,

    /// The credential, from the environment only (never a flag, so it stays out of process
    /// listings).
    #[arg(skip)]
    pub token: Option<String>,

    /// Directory of `${secret:NAME}` files [default: `secrets` in the data directory].
    #[arg(long, env = "WARDEN_SECRETS_DIR")]
    pub secrets_dir: Option<PathBuf>,

    /// Export traces of governed calls over OTLP/HTTP to this collector (as for `warden
    /// serve`). Off without it.
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command {
    /// The OTLP collector traces go to, for the commands that govern calls.
    pub(crate) fn otlp_endpoint(&self) -> Option<&str> {
        match self {
            Command::Serve(args) => args.otlp_endpoint.as_deref(),
            Command::Stdio(args) => args.otlp_endpoint.as_deref(),
            _ => None,
        }
    }
}

/// Governance modes (GOV-6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GovernanceMode {
    /// Every call governed; refused when governance is unavailable.
    On,
    /// Governed; falls back to direct execution when the remote is unavailable.
    Auto,
    /// Direct execution, still audited.
    Off,
}

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
    /// The server.
    #[command(flatten)]
    pub remote: RemoteArgs,
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
    /// The server.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `warden approvals get`.
#[derive(Debug, Args)]
pub struct ApprovalIdArgs {
    /// The approval's id (`apr_…`).
    pub id: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server.
    #[command(flatten)]
    pub remote: RemoteArgs,
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
    /// The server.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `warden tools …`.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Every tool of the live catalog with its class, capability, risk and governance status
    /// (GOV-5).
    Inventory(InventoryArgs),
}

/// `warden tools inventory`.
#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `warden demo-server`.
#[derive(Debug, Args)]
pub struct DemoServerArgs {
    /// Keep the notes in this JSON file (in memory without it).
    #[arg(long)]
    pub file: Option<PathBuf>,
}

/// Commands that only need the store.
#[derive(Debug, Args)]
pub struct StoreOnly {
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// A YAML file (several documents separated by `---`) or a directory of `.yaml`/`.yml`
    /// files. Repeatable.
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

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
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

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
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

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
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
    /// The server.
    #[command(flatten)]
    pub remote: RemoteArgs,
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
    /// The server.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `warden delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The kind.
    pub kind: String,

    /// The resource's name (or key, as `warden get` shows it).
    pub name: String,

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
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

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

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
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden token list`.
#[derive(Debug, Args)]
pub struct TokenListArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden token revoke`.
#[derive(Debug, Args)]
pub struct TokenRevokeArgs {
    /// The token's id (`tok_…`), as `warden token list` shows it.
    pub id: String,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// `verify` checks the hash chain; without it, records are listed.
    #[command(subcommand)]
    pub command: Option<AuditCommand>,

    /// Only this run.
    #[arg(long)]
    pub run: Option<String>,
    /// Only this principal (`user:alice`, `serviceAccount:deploy-bot`).
    #[arg(long)]
    pub principal: Option<String>,
    /// Only runs of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only this tool.
    #[arg(long)]
    pub tool: Option<String>,
    /// Only this decision: allow, deny, park, stage (calls); executed, failed, cancelled,
    /// input_required (outcomes); approve, reject, veto, expire, refuse (approvals); relayed,
    /// refused (relays).
    #[arg(long, value_parser = ["allow", "deny", "park", "stage", "executed", "failed", "approve", "reject", "veto", "expire", "refuse", "cancelled", "input_required", "relayed", "refused"])]
    pub decision: Option<String>,
    /// Only this denial code (e.g. CAPABILITY).
    #[arg(long)]
    pub code: Option<String>,
    /// Only this kind of record: run, call, decision, outcome, admin, relay.
    #[arg(long, value_parser = ["run", "call", "decision", "outcome", "admin", "relay"])]
    pub kind: Option<String>,
    /// At or after this time: RFC 3339 (`2026-11-29T10:00:00Z`) or an age (`1h`, `30m`).
    #[arg(long)]
    pub since: Option<String>,
    /// Before this time (same forms as `--since`).
    #[arg(long)]
    pub until: Option<String>,
    /// At most this many records, the newest (a notice on stderr says when more match).
    #[arg(long, default_value_t = 100)]
    pub limit: i64,
    /// The oldest records first (the default is the newest first), e.g. to export in order.
    #[arg(long)]
    pub oldest_first: bool,
    /// Output format (`json` gives JSON Lines).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden audit …`.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Verify the hash chain, and its end against the latest signed checkpoint (AUD-2); names
    /// the first record that breaks it, or the records missing after a truncation (exit 1).
    Verify(VerifyArgs),
    /// Signed checkpoints of the chain's head.
    #[command(subcommand)]
    Checkpoint(CheckpointCommand),
}

/// `warden audit verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Check the chain's end against the checkpoints in this file (from `warden audit
    /// checkpoint export`, kept where the database's writers cannot reach), trusting the key
    /// that signed them.
    #[arg(long, value_name = "FILE")]
    pub anchor: Option<PathBuf>,
    /// The audit key, whose public half the checkpoints must verify with, and beside which the
    /// checkpoint file is [default: as for `warden serve`].
    #[arg(long, value_name = "FILE", env = "WARDEN_AUDIT_KEY")]
    pub audit_key: Option<PathBuf>,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden audit checkpoint …`.
#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// Print the latest signed checkpoint as one JSON line, to keep outside the database (and
    /// give to `warden audit verify --anchor`).
    Export(VerifyKeyArgs),
}

/// The store and the audit key.
#[derive(Debug, Args)]
pub struct VerifyKeyArgs {
    /// The audit key [default: as for `warden serve`].
    #[arg(long, value_name = "FILE", env = "WARDEN_AUDIT_KEY")]
    pub audit_key: Option<PathBuf>,
    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the JSON Schema of configuration documents.
    Schema,
    /// Validate files without a store: syntax, fields and references among the files.
    Validate(ValidateArgs),
}

/// `warden config validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files or directories.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE|DIR",
        required = true
    )]
    pub files: Vec<PathBuf>,
}
