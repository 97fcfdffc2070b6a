//! `warden bench`: the load generator and the helpers of the benchmark scenarios.

use warden_bench::{Amount, BenchOptions, Era, Mix, Op, Tools};

use crate::cli::{BenchArgs, BenchCommand, Output};
use crate::common::{open, open_existing, usage};
use crate::progress::Progress;
use crate::serve;

pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        Some(BenchCommand::Upstream(a)) => {
            let listener = tokio::net::TcpListener::bind(a.listen)
                .await
                .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", a.listen))?;
            println!("mcp: http://{}/mcp", listener.local_addr()?);
            let shutdown = tokio_util::sync::CancellationToken::new();
            let signal = shutdown.clone();
            tokio::spawn(async move {
                serve::shutdown_signal().await;
                signal.cancel();
            });
            let extra = usize::try_from(a.extra_tools).unwrap_or(0);
            warden_bench::upstream::serve(
                warden_bench::upstream::BenchUpstream::new(extra),
                listener,
                shutdown,
            )
            .await
        }
        Some(BenchCommand::Catalog(a)) => {
            let projects = usize::try_from(a.projects).unwrap_or(0);
            print!(
                "{}",
                warden_bench::seed::catalog_config(projects, &a.upstream)
            );
            Ok(())
        }
        Some(BenchCommand::FillAudit(a)) => {
            let store = open(&crate::target::store(&a.store).await?).await?;
            let step = (a.records / 20).max(100_000);
            // A bar on a terminal; elsewhere (logs, CI) a line now and then.
            let progress = Progress::new(a.records, "records appended");
            let filled = warden_bench::seed::fill_audit(&store, a.records, a.calls_per_run, |n| {
                if progress.shown() {
                    progress.set(n);
                } else if n % step < 20_000 || n == a.records {
                    eprintln!("fill-audit: {n} records");
                }
            })
            .await
            .map_err(anyhow::Error::msg)?;
            progress.finish();
            println!("{}", serde_json::to_string_pretty(&filled)?);
            Ok(())
        }
        Some(BenchCommand::Trail(a)) => {
            let store = open_existing(&crate::target::store(&a.store).await?).await?;
            let (records, took) =
                warden_bench::seed::read_trail(&store, &a.run, usize::from(a.times))
                    .await
                    .map_err(anyhow::Error::msg)?;
            if records == 0 {
                return Err(usage(format!("run `{}` has no audit records", a.run)));
            }
            let ms = |d: &std::time::Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
            let median = took.get(took.len() / 2).map(ms).unwrap_or_default();
            let max = took.last().map(ms).unwrap_or_default();
            let p = serde_json::json!({
                "run": a.run,
                "records": records,
                "reads": took.len(),
                "median_ms": median,
                "max_ms": max,
            });
            println!("{}", serde_json::to_string_pretty(&p)?);
            Ok(())
        }
        Some(BenchCommand::Forward(a)) => {
            let to = tokio::net::lookup_host(&a.to)
                .await
                .map_err(|e| {
                    usage(format!(
                        "--to `{}`: not HOST:PORT or not resolvable: {e}",
                        a.to
                    ))
                })?
                .next()
                .ok_or_else(|| usage(format!("--to `{}`: resolves to no address", a.to)))?;
            let threads = a.threads.map_or_else(
                || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
                usize::from,
            );
            let forwarder = warden_bench::forward::Forwarder::start(a.listen, to, threads).await?;
            println!("forward: {} to {to}", forwarder.addr());
            serve::shutdown_signal().await;
            tokio::task::spawn_blocking(move || forwarder.stop()).await?;
            Ok(())
        }
        None => load(args).await,
    }
}

async fn load(args: BenchArgs) -> anyhow::Result<()> {
    let mix = Mix::parse(&args.mix).map_err(|e| usage(format!("--mix: {e}")))?;
    let arguments: serde_json::Value = serde_json::from_str(&args.arguments)
        .map_err(|e| usage(format!("--arguments: not JSON: {e}")))?;
    if !arguments.is_object() {
        return Err(usage("--arguments: must be a JSON object"));
    }
    let era = match args.era.as_str() {
        "2025-11-25" => Era::V2025,
        _ => Era::V2026,
    };
    let token = std::env::var("WARDEN_TOKEN")
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    if let Some(prefix) = &args.direct_prefix {
        for (op, flag, name) in [
            (Op::Read, "--read-tool", &args.read_tool),
            (Op::Write, "--write-tool", &args.write_tool),
        ] {
            if mix.0.get(&op).is_some_and(|w| *w > 0) && !name.starts_with(prefix.as_str()) {
                return Err(usage(format!(
                    "{flag} `{name}` does not start with --direct-prefix `{prefix}`"
                )));
            }
        }
    }
    let options = BenchOptions {
        url: args.url,
        token,
        direct: args.direct.clone(),
        direct_prefix: args.direct_prefix.clone(),
        era,
        amount: Amount {
            clients: usize::from(args.clients),
            duration: args.duration,
            requests: args.requests,
            warmup: args.warmup,
        },
        rounds: usize::from(
            args.rounds
                .unwrap_or(if args.direct.is_some() { 3 } else { 1 }),
        ),
        mix,
        tools: Tools {
            read: args.read_tool,
            write: args.write_tool,
            denied: args.denied_tool,
            arguments,
        },
        rss_pid: args.rss_pid,
    };
    let report = warden_bench::run(options)
        .await
        .map_err(anyhow::Error::msg)?;
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        _ => print!("{}", report.table()),
    }
    Ok(())
}
