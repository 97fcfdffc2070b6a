//! The `warden` command: the operator CLI and `warden serve`, as a library so that tests run
//! exactly what users run.

mod audit_cmd;
mod bench_cmd;
mod checkpoints;
mod cli;
mod common;
mod config_cmd;
mod output;
mod remote;
mod runs_cmd;
mod serve;
mod stdio;
mod tasks_cmd;
mod token_cmd;

use std::process::ExitCode;

use clap::Parser as _;

pub use cli::Cli;
use cli::{Command, LogFormat};
pub use common::{UsageError, default_data_dir};
use common::{location, open};

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
    warden_mcp::http_client::install_tls();
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
        Command::Task(cli::TaskCommand::Create(args)) => remote::create_task(args).await,
        Command::Kill(args) => config_cmd::kill(args).await,
        Command::Token(cmd) => token_cmd::run(cmd).await,
        Command::Audit(args) => audit_cmd::run(args).await,
        Command::Config(cmd) => config_cmd::config(cmd),
        Command::Stdio(args) => stdio::run(args).await,
        Command::Explain(args) => remote::explain(args).await,
        Command::Approvals(cmd) => remote::approvals(cmd).await,
        Command::Tools(cli::ToolsCommand::Inventory(args)) => remote::inventory(args).await,
        Command::DemoServer(args) => {
            warden_mcp::demo::serve_stdio(warden_mcp::demo::DemoNotes::new(args.file)).await
        }
        Command::Bench(args) => bench_cmd::run(args).await,
    }
}
