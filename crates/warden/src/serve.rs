//! `warden serve`.

use std::sync::Arc;

use warden_server::{AppState, Bound};

use crate::cli::ServeArgs;
use crate::{config_errors, location, now, open, read_config_files};

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let location = location(&args.store)?;
    // Configuration files are read before anything else: a bad file changes nothing.
    let resources = read_config_files(&args.config)?;
    let store = Arc::new(open(&location).await?);
    tracing::info!(store = %location.display(), backend = store.backend_name(), "store opened");
    let admin = store.bootstrap(now()).await?;
    if !resources.is_empty() {
        store
            .apply(resources, "serve --config", now())
            .await?
            .map_err(|e| config_errors(&e))?;
    }
    let bound = Bound::bind(args.listen, Arc::new(AppState { store })).await?;
    let addr = bound.local_addr()?;
    println!("mcp: http://{addr}/mcp");
    println!("console: http://{addr}/");
    if let Some(token) = admin {
        println!("admin token: {}", token.secret);
    }
    bound.serve(shutdown_signal()).await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}
