//! The command line (SPEC Appendix B), with clap. Every verb has `--help`. The verbs that work
//! on a server or a store take [`TargetArgs`]; docs/cli.md has which go where.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod audit;
mod bench;
mod context;
mod epic;
mod options;
mod provider;
mod resources;
mod server;
mod token;

pub(crate) use audit::{
    ArchiveArgs, AuditArgs, AuditCommand, CheckpointCommand, ExportArgs, ExportFormat, KeyArgs,
    VerifyArgs, VerifyKeyArgs,
};
pub(crate) use bench::{BenchArgs, BenchCommand};
pub(crate) use context::{ContextCommand, ContextSetArgs, ContextShowArgs};
pub(crate) use epic::{EpicCommand, EpicTaskCommand};
pub(crate) use options::{Output, StoreArgs, TargetArgs};
pub(crate) use provider::ProviderCommand;
pub(crate) use resources::{ApplyArgs, DeleteArgs, DescribeArgs, GetArgs, KillArgs};
pub(crate) use server::{
    ApprovalDecideArgs, ApprovalsCommand, CallArgs, ChatArgs, ExplainArgs, InventoryArgs,
    RunAgentArgs, RunCommand, TaskCommand, TaskCreateArgs, ToolChangesArgs, ToolReviewArgs,
    ToolsCommand,
};
pub(crate) use token::{TokenCommand, TokenCreateArgs};

/// Warden: a governed control plane for the tools AI agents call over MCP.
///
/// The operator verbs work through a running server's admin API (`--server URL` or
/// `WARDEN_SERVER`, token in `WARDEN_TOKEN`, or `warden context`) or on the store directly
/// (`--data-dir`, `--database-url`), with the same output; docs/cli.md.
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
    /// token in `WARDEN_TOKEN`, a session's run credential included). `warden get tasks` and
    /// `warden describe task ID` read them.
    #[command(subcommand)]
    Task(TaskCommand),

    /// Epics and their tasks (WORK-1, WORK-2), through a running server (token in
    /// `WARDEN_TOKEN`): `warden epic create|list|get|update`, `warden epic task
    /// add|move|review|accept`; docs/work.md.
    #[command(subcommand)]
    Epic(EpicCommand),

    /// Forges (WORK-3): `warden provider discover NAME` lists a GitProvider's repositories,
    /// `warden provider import NAME --workspace W` adds them to a workspace; docs/work.md.
    #[command(subcommand)]
    Provider(ProviderCommand),

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

    /// Call a tool through a running server's MCP endpoint, governed and recorded as any
    /// client's call is (token in `WARDEN_TOKEN`): it executes, parks for approval, or is
    /// denied.
    Call(CallArgs),

    /// Talk to an agent through a running server (RUN-9): its text streams as it comes, its
    /// tool calls and Warden's decisions on them show as they happen (token in
    /// `WARDEN_TOKEN`); docs/chat.md.
    Chat(ChatArgs),

    /// Parked calls: list them, read one (on a server or a store), approve, reject or veto (a
    /// running server executes the decision; token in `WARDEN_TOKEN`).
    #[command(subcommand)]
    Approvals(ApprovalsCommand),

    /// The live tool catalog of a running server.
    #[command(subcommand)]
    Tools(ToolsCommand),

    /// The server and token the verbs use when neither flags nor the environment name a
    /// server or a store: `set`, `show`, `clear` (kept in `$XDG_CONFIG_HOME/warden/context.json`
    /// or `~/.config/warden/context.json`).
    #[command(subcommand)]
    Context(ContextCommand),

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

    /// The URL clients reach this server at when it is not its listener's (behind a TLS
    /// proxy), e.g. `https://warden.example.com`: OAuth resource URLs and default audiences
    /// (docs/oauth.md) and links to approval pages are built from it.
    #[arg(long, value_name = "URL", env = "WARDEN_PUBLIC_URL", value_parser = public_url)]
    pub public_url: Option<String>,

    /// Failed authentications one source address may have per minute; past it, a bad
    /// credential from that address is answered 429 (AUTH-5). Valid credentials are never
    /// limited.
    #[arg(long, value_name = "N", env = "WARDEN_AUTH_FAILURE_LIMIT",
        default_value_t = warden_server::DEFAULT_FAILURE_LIMIT,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub auth_failure_limit: u32,

    /// Open 2025-11-25 sessions this server keeps at most; past it, an `initialize` is
    /// answered 429 (docs/mcp.md, "Limits").
    #[arg(long, value_name = "N", env = "WARDEN_MAX_SESSIONS",
        default_value_t = warden_server::DEFAULT_MAX_SESSIONS,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,

    /// Open 2025-11-25 sessions one principal keeps at most on this server; past it, its
    /// `initialize` is answered 429.
    #[arg(long, value_name = "N", env = "WARDEN_MAX_SESSIONS_PER_PRINCIPAL",
        default_value_t = warden_server::DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions_per_principal: u32,

    /// How long a client has to send a request's headers on a new or kept-alive connection;
    /// one that sends half a request, or nothing, is closed then.
    #[arg(long, value_name = "DURATION", env = "WARDEN_HEADER_READ_TIMEOUT", default_value = "30s",
        value_parser = positive_duration)]
    pub header_read_timeout: std::time::Duration,

    /// Export traces of governed calls (OPS-3) over OTLP/HTTP to this collector, e.g.
    /// `http://127.0.0.1:4318` (spans go to its `/v1/traces`). Off without it.
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// Also send the audit trail to that collector as OTLP logs (its `/v1/logs`): each record
    /// in order, from a cursor kept beside the audit key, sent again until the collector
    /// takes it (docs/audit.md).
    #[arg(long, env = "WARDEN_OTLP_AUDIT", value_parser = clap::builder::BoolishValueParser::new())]
    pub otlp_audit: bool,

    /// Scheduled retention of the audit trail.
    #[command(flatten)]
    pub retention: RetentionArgs,

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden serve`'s scheduled retention (AUD-6): the archive `warden audit archive` makes, on
/// a schedule, into a directory (docs/audit.md).
#[derive(Debug, Args)]
pub struct RetentionArgs {
    /// Archive the audit records older than this (`90d`) on `--retention-schedule` into
    /// `--retention-dir`, removing them from the store as `warden audit archive` does. Off
    /// without it.
    #[arg(long, value_name = "AGE", env = "WARDEN_RETENTION", value_parser = positive_duration,
        requires = "retention_dir")]
    pub retention: Option<std::time::Duration>,

    /// The directory archives are written to, each a new file named after the records it
    /// holds (created, readable by its owner only, when missing).
    #[arg(
        long,
        value_name = "DIR",
        env = "WARDEN_RETENTION_DIR",
        requires = "retention"
    )]
    pub retention_dir: Option<PathBuf>,

    /// When archives are made: a five-field cron expression, UTC.
    #[arg(long, value_name = "CRON", env = "WARDEN_RETENTION_SCHEDULE",
        default_value = "0 3 * * *", value_parser = cron, requires = "retention")]
    pub retention_schedule: String,
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
    /// Files or directories (`-`: standard input).
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE|DIR",
        required = true
    )]
    pub files: Vec<PathBuf>,
}

/// `--public-url`: an absolute http(s) URL without query or fragment.
fn public_url(value: &str) -> Result<String, String> {
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"))
        .ok_or_else(|| format!("`{value}` is not an http(s) URL"))?;
    if rest.is_empty() || rest.starts_with('/') || rest.contains(['?', '#', ' ']) {
        return Err(format!(
            "`{value}` is not a URL clients can reach: give scheme, host and optional path, e.g. https://warden.example.com"
        ));
    }
    Ok(value.trim_end_matches('/').to_owned())
}

/// A five-field cron expression, checked.
fn cron(value: &str) -> Result<String, String> {
    warden_core::cron::Schedule::parse(value).map(|_| value.to_owned())
}

/// A duration flag (`30s`, `2m`) that must be greater than zero.
fn positive_duration(value: &str) -> Result<std::time::Duration, String> {
    let d = warden_core::time::parse_duration(value)?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}
