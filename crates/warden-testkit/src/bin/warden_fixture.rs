//! The test fixtures as MCP servers of their own, for tests that need a real child process or
//! a real URL:
//!
//! ```text
//! warden_fixture notes [--stdio | --listen ADDR] [--file FILE] [--definitions FILE]
//!                                                              the tests' upstream
//! warden_fixture conformance [--stdio | --listen ADDR] [--asks-on-session]
//!                                                              the conformance suite's server
//! warden_fixture hostile [--huge-metadata] [--tools N]           an upstream that misbehaves (stdio)
//! ```
//!
//! Over HTTP it prints `mcp: http://ADDR/mcp` on stdout once it listens, and stops on SIGINT
//! or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use tokio_util::sync::CancellationToken;
use warden_testkit::{conformance, notes};

#[derive(Debug, Parser)]
#[command(
    name = "warden_fixture",
    about = "Warden's test fixtures as MCP servers"
)]
struct Cli {
    #[command(subcommand)]
    server: Server,
}

#[derive(Debug, Subcommand)]
enum Server {
    /// The tests' upstream (`warden_testkit::notes`).
    Notes {
        #[command(flatten)]
        transport: Transport,
        /// Keep the notes in this JSON file.
        #[arg(long)]
        file: Option<PathBuf>,
        /// Speak 2026-07-28 only (refuse `initialize`), as a server of the new era alone.
        #[arg(long, conflicts_with = "only_2025")]
        only_2026: bool,
        /// Speak 2025-11-25 only (`server/discover` is not found), as most servers still do.
        #[arg(long)]
        only_2025: bool,
        /// Read tool definition changes from this JSON file at each `tools/list`.
        #[arg(long)]
        definitions: Option<PathBuf>,
    },
    /// The MCP conformance suite's fixture server (`warden_testkit::conformance`).
    Conformance {
        #[command(flatten)]
        transport: Transport,
        /// Ask the client only through a session's peer, as servers written before
        /// 2026-07-28 do (`conformance::Asking::OnSession`).
        #[arg(long)]
        asks_on_session: bool,
    },
    /// An upstream that misbehaves on request, over stdio (`warden_testkit::hostile`).
    Hostile {
        /// List a tool with a 5 MB description and one with a 6.5 MB input schema.
        #[arg(long)]
        huge_metadata: bool,
        /// List this many filler tools too.
        #[arg(long, default_value_t = 0)]
        tools: usize,
    },
}

#[derive(Debug, Args)]
struct Transport {
    /// Serve over stdin/stdout (the default).
    #[arg(long, conflicts_with = "listen")]
    stdio: bool,
    /// Serve Streamable HTTP at `/mcp` on this address.
    #[arg(long)]
    listen: Option<SocketAddr>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Server::Hostile {
        huge_metadata,
        tools,
    } = cli.server
    {
        // Plain blocking I/O: it must write exactly what it is asked to, when asked.
        return Ok(warden_testkit::hostile::serve_stdio(
            warden_testkit::hostile::Options {
                huge_metadata,
                fillers: tools,
            },
        )?);
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve(cli))
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    tracing_subscriber_init();
    let listen = match &cli.server {
        Server::Notes { transport, .. } | Server::Conformance { transport, .. } => transport.listen,
        Server::Hostile { .. } => None,
    };
    let Some(addr) = listen else {
        return match cli.server {
            Server::Notes {
                file,
                only_2026,
                only_2025,
                definitions,
                ..
            } => {
                let server = notes::NotesServer::new(file)
                    .only_2026(only_2026)
                    .only_2025(only_2025)
                    .definitions(definitions);
                notes::serve_stdio(server).await
            }
            Server::Conformance {
                asks_on_session, ..
            } => conformance::serve_stdio(asking(asks_on_session)).await,
            Server::Hostile { .. } => Ok(()),
        };
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    println!("mcp: http://{}/mcp", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        stopped().await;
        signal.cancel();
    });
    match cli.server {
        Server::Notes {
            file,
            only_2026,
            only_2025,
            definitions,
            ..
        } => {
            let server = notes::NotesServer::new(file)
                .only_2026(only_2026)
                .only_2025(only_2025)
                .definitions(definitions);
            notes::serve_http(server, listener, shutdown).await
        }
        Server::Conformance {
            asks_on_session, ..
        } => conformance::serve_http(listener, shutdown, asking(asks_on_session)).await,
        Server::Hostile { .. } => Ok(()),
    }
}

fn asking(on_session: bool) -> conformance::Asking {
    if on_session {
        conformance::Asking::OnSession
    } else {
        conformance::Asking::Natively
    }
}

/// Logs go to stderr (stdout is the protocol over stdio).
fn tracing_subscriber_init() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
}

async fn stopped() {
    let interrupt = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| anyhow::anyhow!("cannot watch SIGTERM: {e}"));
    match term.as_mut() {
        Ok(term) => {
            tokio::select! {
                _ = interrupt => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = interrupt.await;
        }
    }
}
