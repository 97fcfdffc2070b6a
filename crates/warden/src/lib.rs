//! The `warden` command: the operator CLI and `warden serve`, as a library so that tests run
//! exactly what users run.

mod audit_cmd;
mod bench_cmd;
mod cli;
mod config_cmd;
mod output;
mod remote;
mod runs_cmd;
mod serve;
mod stdio;
mod token_cmd;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use warden_core::config::{ConfigError, Located, parse_documents};
use warden_core::time::Millis;
use warden_store::{Location, Store};

pub use cli::Cli;
use cli::{Command, LogFormat, StoreArgs};

/// A usage or configuration error: exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for a usage error.
pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// Configuration errors, one per line: exit status 2.
pub(crate) fn config_errors(errors: &[ConfigError]) -> anyhow::Error {
    usage(
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\nerror: "),
    )
}

/// Runs the command line and returns the exit status (0 ok, 1 runtime failure, 2 usage or
/// configuration error).
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    init_tracing(cli.log_format, &cli.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn init_tracing(format: LogFormat, filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal as _;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Pretty => builder.with_target(false).try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Runs one parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Migrate(args) => {
            let location = location(&args.store)?;
            open(&location).await?;
            println!("store at {} is migrated", location.display());
            Ok(())
        }
        Command::Apply(args) => config_cmd::apply(args).await,
        Command::Get(args) => config_cmd::get(args).await,
        Command::Delete(args) => config_cmd::delete(args).await,
        Command::Describe(args) => runs_cmd::describe(args).await,
        Command::Run(cli::RunCommand::Agent(args)) => remote::run_agent(args).await,
        Command::Kill(args) => config_cmd::kill(args).await,
        Command::Token(cmd) => token_cmd::run(cmd).await,
        Command::Audit(args) => audit_cmd::run(args).await,
        Command::Config(cmd) => config_cmd::config(cmd),
        Command::Stdio(args) => stdio::run(args).await,
        Command::Explain(args) => remote::explain(args).await,
        Command::Approvals(cmd) => remote::approvals(cmd).await,
        Command::Tools(cli::ToolsCommand::Inventory(args)) => remote::inventory(args).await,
        Command::UpstreamFixture(args) => {
            let server = warden_mcp::fixture::NotesServer::new(args.file.clone());
            match args.listen {
                Some(addr) => {
                    let listener = tokio::net::TcpListener::bind(addr)
                        .await
                        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
                    println!("mcp: http://{}/mcp", listener.local_addr()?);
                    let shutdown = tokio_util::sync::CancellationToken::new();
                    let signal = shutdown.clone();
                    tokio::spawn(async move {
                        serve::shutdown_signal().await;
                        signal.cancel();
                    });
                    warden_mcp::fixture::serve_http(server, listener, shutdown).await
                }
                None => warden_mcp::fixture::serve_stdio(server).await,
            }
        }
        Command::Bench(args) => bench_cmd::run(args).await,
        Command::ConformanceFixture(args) => match args.listen {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
                println!("mcp: http://{}/mcp", listener.local_addr()?);
                let shutdown = tokio_util::sync::CancellationToken::new();
                let signal = shutdown.clone();
                tokio::spawn(async move {
                    serve::shutdown_signal().await;
                    signal.cancel();
                });
                warden_mcp::conformance::serve_http(listener, shutdown).await
            }
            None => warden_mcp::conformance::serve_stdio().await,
        },
    }
}

/// The default data directory: `$XDG_DATA_HOME/warden` or `~/.local/share/warden`.
pub fn default_data_dir() -> anyhow::Result<PathBuf> {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("warden"));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            usage("cannot find a default data directory ($HOME is not set); pass --data-dir")
        })?;
    Ok(PathBuf::from(home).join(".local/share/warden"))
}

pub(crate) fn location(args: &StoreArgs) -> anyhow::Result<Location> {
    Ok(match (&args.data_dir, &args.database_url) {
        (_, Some(url)) => Location::Url(url.clone()),
        (Some(dir), None) => Location::DataDir(dir.clone()),
        (None, None) => Location::DataDir(default_data_dir()?),
    })
}

pub(crate) async fn open(location: &Location) -> anyhow::Result<Store> {
    opened(location, Store::open(location).await)
}

/// [`open`] for `warden serve`: on the embedded store, the server owns the audit spool.
pub(crate) async fn open_serving(location: &Location) -> anyhow::Result<Store> {
    opened(location, Store::open_serving(location).await)
}

fn opened(
    location: &Location,
    store: Result<Store, warden_store::StoreError>,
) -> anyhow::Result<Store> {
    store.map_err(|e| match e {
        warden_store::StoreError::Invalid(m) => usage(m),
        other => anyhow::Error::new(other).context(format!(
            "failed to open the store at {}",
            location.display()
        )),
    })
}

pub(crate) fn now() -> Millis {
    Millis(chrono::Utc::now().timestamp_millis())
}

/// Who is acting, for operator records in the audit trail.
pub(crate) fn cli_actor() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    format!("cli:{user}")
}

/// Reads YAML resources from files and directories (`.yaml`/`.yml`, sorted by name).
pub(crate) fn read_config_files(paths: &[PathBuf]) -> anyhow::Result<Vec<Located>> {
    let mut files = Vec::new();
    for path in paths {
        collect_files(path, &mut files)?;
    }
    let mut resources = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        let label = file.display().to_string();
        let text = std::fs::read_to_string(&file)
            .map_err(|e| usage(format!("{label}: cannot be read: {e}")))?;
        match parse_documents(&label, &text) {
            Ok(mut docs) => resources.append(&mut docs),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if !errors.is_empty() {
        return Err(config_errors(&errors));
    }
    Ok(resources)
}

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path)
        .map_err(|e| usage(format!("{}: cannot be read: {e}", path.display())))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("failed to list {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
            .collect();
        entries.sort();
        if entries.is_empty() {
            return Err(usage(format!(
                "{}: no .yaml or .yml files in this directory",
                path.display()
            )));
        }
        out.extend(entries);
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}
