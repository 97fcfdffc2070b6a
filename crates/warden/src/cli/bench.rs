//! `warden bench`: the load generator's options and its helpers' subcommands.

use clap::{Args, Subcommand};

use super::options::{Output, StoreArgs};

/// `warden bench`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// A helper instead of a load run.
    #[command(subcommand)]
    pub command: Option<BenchCommand>,

    /// The MCP endpoint to measure.
    #[arg(default_value = "http://127.0.0.1:8600/mcp")]
    pub url: String,

    /// Bearer token for the endpoint (optional; from the environment only).
    #[arg(skip)]
    pub token: Option<String>,

    /// Also measure this upstream URL directly, alternating rounds with the endpoint; tool
    /// names lose their `<prefix>__` there (or `--direct-prefix`), and `denied` calls are left
    /// out.
    #[arg(long, value_name = "URL")]
    pub direct: Option<String>,

    /// With `--direct`: what the endpoint puts before the upstream's tool names (e.g.
    /// `bench-` for a gateway that calls `read` `bench-read`), taken off the read and write
    /// tools' names for the direct rounds [default: everything up to the first `__`].
    #[arg(long, value_name = "PREFIX", requires = "direct")]
    pub direct_prefix: Option<String>,

    /// Protocol era: `2026-07-28` (stateless) or `2025-11-25` (sessions).
    #[arg(long, default_value = "2026-07-28", value_parser = ["2026-07-28", "2025-11-25"])]
    pub era: String,

    /// Concurrent clients (each a closed loop; in 2025-11-25 each its own session).
    #[arg(short = 'c', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub clients: u16,

    /// How long to measure each round, e.g. `10s`.
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_span)]
    pub duration: std::time::Duration,

    /// Measure this many requests per round instead of a duration.
    #[arg(short = 'n', long, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,

    /// Unmeasured warm-up before each round, e.g. `2s`.
    #[arg(long, default_value = "2s", value_parser = parse_span)]
    pub warmup: std::time::Duration,

    /// Rounds per target [default: 3 with --direct, else 1].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub rounds: Option<u16>,

    /// The call mix as OP=WEIGHT pairs: `read` (a read tool; must execute), `write` (a
    /// mutation; must execute), `denied` (a call the endpoint must deny), `list` (tools/list).
    #[arg(long, default_value = "read=1")]
    pub mix: String,

    /// The read tool.
    #[arg(long, default_value = "bench__read")]
    pub read_tool: String,

    /// The mutation.
    #[arg(long, default_value = "bench__write")]
    pub write_tool: String,

    /// A tool the caller may not call (for `denied`; scripts/bench.sh denies this one with a
    /// ToolPolicy).
    #[arg(long, default_value = "bench__tool_0000")]
    pub denied_tool: String,

    /// Arguments of every call, as a JSON object.
    #[arg(long, default_value = r#"{"key":"k"}"#)]
    pub arguments: String,

    /// Report the resident memory of this process after the run (e.g. Warden's pid).
    #[arg(long, value_name = "PID")]
    pub rss_pid: Option<u32>,

    /// Output: a table, or the whole report as JSON.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

/// `warden bench …` helpers.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Serve the benchmark upstream over Streamable HTTP (both eras): `read` (a trivial read),
    /// `write` (a trivial ordinary mutation) and `--extra-tools` more read tools.
    Upstream(BenchUpstreamArgs),

    /// Print configuration for the catalog scenario: N projects, each with one upstream at
    /// URL (a `warden bench upstream --extra-tools 98` gives 100 tools per project).
    Catalog(BenchCatalogArgs),

    /// Append N synthetic, correctly chained records to the audit trail of a store (for the
    /// audit-growth scenario). Stop Warden first, or use a copy: this writes to the store.
    FillAudit(BenchFillArgs),

    /// Time reading one run's whole audit trail from a store.
    Trail(BenchTrailArgs),

    /// Forward TCP connections to an address, copying bytes both ways and parsing nothing, with
    /// Warden's threading: measured in front of `warden bench upstream` with `--direct`, what
    /// any proxy costs on this machine before it reads a byte of HTTP.
    Forward(BenchForwardArgs),
}

/// `warden bench forward`.
#[derive(Debug, Args)]
pub struct BenchForwardArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:8701")]
    pub listen: std::net::SocketAddr,

    /// Where to forward every connection: HOST:PORT (e.g. the `warden bench upstream`'s).
    #[arg(long, value_name = "HOST:PORT")]
    pub to: String,

    /// Forwarding threads, each accepting on a socket of its own [default: the CPUs].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// `warden bench upstream`.
#[derive(Debug, Args)]
pub struct BenchUpstreamArgs {
    /// Address to listen on (port 0 picks a free port; the URL is printed).
    #[arg(long, default_value = "127.0.0.1:8700")]
    pub listen: std::net::SocketAddr,

    /// Extra read tools (`tool_0000`…), for catalog benchmarks.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub extra_tools: u32,
}

/// `warden bench catalog`.
#[derive(Debug, Args)]
pub struct BenchCatalogArgs {
    /// Number of projects.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub projects: u32,

    /// The upstream every project uses (a `warden bench upstream`).
    #[arg(long, default_value = "http://127.0.0.1:8700/mcp")]
    pub upstream: String,
}

/// `warden bench fill-audit`.
#[derive(Debug, Args)]
pub struct BenchFillArgs {
    /// Records to append.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub records: u64,

    /// Calls per synthetic run (each call is 3 records, each run 1 more).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub calls_per_run: u64,

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `warden bench trail`.
#[derive(Debug, Args)]
pub struct BenchTrailArgs {
    /// The run whose trail to read (`fill-audit` prints one from the middle of the trail).
    #[arg(long)]
    pub run: String,

    /// Reads to time.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    pub times: u16,

    /// Where the store is.
    #[command(flatten)]
    pub store: StoreArgs,
}

fn parse_span(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s)
        .map_err(|_| format!("`{s}` is not a duration (e.g. 500ms, 10s, 1m)"))
}
