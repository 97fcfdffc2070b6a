//! The `warden` command: the operator CLI and `warden serve`, as a library so that tests run
//! exactly what users run.

mod api;
mod approvals_cmd;
mod audit_cmd;
mod audit_export;
mod audit_logs;
mod audit_verify;
mod bench_cmd;
mod chat_cmd;
mod checkpoints;
mod cli;
mod common;
mod config_cmd;
mod context_cmd;
mod epic_cmd;
mod notifiers_cmd;
mod output;
mod progress;
mod provider_cmd;
mod remote;
mod retention;
mod runs_cmd;
mod serve;
mod stdio;
mod target;
mod tasks_cmd;
mod telemetry;
mod token_cmd;
mod tools_cmd;
mod views;

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};

pub use cli::Cli;
use cli::Command;
use common::open;
pub use common::{UsageError, default_data_dir};

/// Runs the command line and returns the exit status (0 ok, 1 runtime failure, 2 usage or
/// configuration error).
pub fn main() -> ExitCode {
    output::quiet_when_stdout_closes();
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
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
    let telemetry = {
        let _runtime = runtime.enter();
        telemetry::init(cli.log_format, &cli.log, cli.command.otlp_endpoint())
    };
    let result = match telemetry {
        Ok(telemetry) => {
            let result = runtime.block_on(run(cli));
            telemetry.shutdown();
            result
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away (`| head`): it has what it wanted.
        Err(e) if output::is_stdout_closed(&e) => ExitCode::SUCCESS,
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

/// Runs one parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Migrate(args) => {
            let location = target::store(&args.store).await?;
            open(&location).await?;
            println!("store at {} is migrated", location.display());
            Ok(())
        }
        Command::Apply(args) => config_cmd::apply(args).await,
        Command::Get(args) => match args.kind.to_ascii_lowercase().as_str() {
            "run" | "runs" => runs_cmd::list(args).await,
            "task" | "tasks" => tasks_cmd::list(args).await,
            _ => config_cmd::get(args).await,
        },
        Command::Delete(args) => config_cmd::delete(args).await,
        Command::Describe(args) => runs_cmd::describe(args).await,
        Command::Run(cli::RunCommand::Agent(args)) => remote::run_agent(args).await,
        Command::Task(cli::TaskCommand::Create(args)) => remote::create_task(args).await,
        Command::Epic(cmd) => epic_cmd::run(cmd).await,
        Command::Provider(cmd) => provider_cmd::run(cmd).await,
        Command::Kill(args) => config_cmd::kill(args).await,
        Command::Token(cmd) => token_cmd::run(cmd).await,
        Command::Audit(args) => audit_cmd::run(args).await,
        Command::Config(cmd) => config_cmd::config(cmd),
        Command::Stdio(args) => stdio::run(args).await,
        Command::Explain(args) => remote::explain(args).await,
        Command::Call(args) => remote::call(args).await,
        Command::Chat(args) => chat_cmd::run(args).await,
        Command::Approvals(cmd) => approvals_cmd::run(cmd).await,
        Command::Context(cmd) => context_cmd::run(cmd),
        Command::Tools(cli::ToolsCommand::Inventory(args)) => remote::inventory(args).await,
        Command::Tools(cli::ToolsCommand::Upstreams(args)) => remote::upstreams(args).await,
        Command::Tools(cli::ToolsCommand::Changes(args)) => tools_cmd::changes(args).await,
        Command::Tools(cli::ToolsCommand::Accept(args)) => {
            tools_cmd::review(args, warden_control::tools::Verdict::Accept).await
        }
        Command::Tools(cli::ToolsCommand::Reject(args)) => {
            tools_cmd::review(args, warden_control::tools::Verdict::Reject).await
        }
        Command::DemoServer(args) => {
            warden_mcp::demo::serve_stdio(warden_mcp::demo::DemoNotes::new(args.file)).await
        }
        Command::Bench(args) => bench_cmd::run(args).await,
    }
}
