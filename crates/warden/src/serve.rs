//! `warden serve`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use warden_core::config::{Located, parse_documents};
use warden_mcp::{Gateway, GatewayOptions};
use warden_server::{AppState, Bound, HostPolicy};
use warden_store::{AuditKey, Location};

use crate::audit_logs::AuditLogs;
use crate::checkpoints;
use crate::cli::ServeArgs;
use crate::common::{
    SERVING_FILE, audit_key_path, config_errors, now, open_serving, read_config_files, usage,
};
use crate::output;
use crate::retention::Retention;
use crate::target::location;

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        tracing::warn!(
            "this warden is an unoptimised build (the `dev` profile): fine to try Warden, slow \
             under load; for real use build it with `cargo build --release` (README, builds)"
        );
    }
    let hosts = HostPolicy::for_listener(args.listen, &args.allowed_hosts, &args.allowed_origins)
        .map_err(usage)?;
    let location = location(&args.store)?;
    // Configuration files are read before anything else: a bad file changes nothing.
    let resources = read_config_files(&args.config)?;
    // Then the address: a port in use is refused before a new store is created (with an
    // admin token nobody would see) and before any upstream process is started.
    let listener = Bound::listener(args.listen)?;
    let retention = Retention::check(&args.retention)?;
    let key_path = audit_key_path(args.audit_key.as_deref(), &location)?;
    let audit_logs = match (&args.otlp_endpoint, args.otlp_audit) {
        (Some(endpoint), true) => {
            let cursor = key_path.with_file_name("audit-otlp-logs.cursor");
            Some(AuditLogs::new(endpoint, cursor)?)
        }
        (None, true) => {
            return Err(usage(
                "`--otlp-audit` sends to the `--otlp-endpoint` collector: name one",
            ));
        }
        _ => None,
    };
    let store = Arc::new(open_serving(&location).await?);
    tracing::info!(store = %location.display(), backend = store.backend_name(), "store opened");
    let key = Arc::new(AuditKey::load_or_create(&key_path).map_err(|e| match e {
        warden_store::StoreError::Invalid(m) => usage(m),
        other => anyhow::Error::new(other).context("failed to open the audit key"),
    })?);
    let clock = Arc::new(warden_runtime::SystemClock);
    let retention = retention.map(|plan| plan.start(store.clone(), clock, key.clone()));
    let admin = store.bootstrap(now()).await?;
    // Where the trail's logs start is settled before any call is served.
    let audit_logs = match audit_logs {
        Some(logs) => {
            let after = logs.start(&store).await?;
            Some((logs, after))
        }
        None => None,
    };
    let secrets_dir = crate::common::secrets_dir(args.secrets_dir.clone(), &location);
    if !resources.is_empty() {
        // The one apply every door makes (a GitProvider's secret settled the same way).
        let control = crate::common::control(store.clone())
            .with_secrets(warden_runtime::Secrets::new(secrets_dir.clone()));
        let caller = warden_control::Caller::Operator("serve --config".into());
        warden_control::resources::apply(&control, &caller, resources, false)
            .await
            .map_err(|e| match e {
                warden_control::Refusal::Config { errors, .. } => config_errors(&errors),
                other => other.into(),
            })?;
    } else if let (Some(_), false, Location::DataDir(dir)) = (&admin, args.no_demo, &location) {
        // The embedded default: a new store gets a demo project whose tools work offline.
        let demo = demo_config(dir)?;
        store
            .apply(demo, "demo", now())
            .await?
            .map_err(|e| config_errors(&e))?;
        tracing::info!(
            "loaded the demo configuration (project `demo`); start with --no-demo to skip it"
        );
    }
    let gateway = Gateway::start(
        store,
        GatewayOptions {
            secrets_dir,
            ..GatewayOptions::default()
        },
    )
    .await;
    gateway.wait_for_upstreams(Duration::from_secs(10)).await;
    if let Some(url) = &args.public_url {
        // Links people open (approval pages) use it; agents started here keep the listener.
        gateway.set_public_url(url.trim_end_matches('/').to_owned());
    }
    let state = Arc::new(
        AppState::new(gateway.clone(), hosts)
            .with_public_url(args.public_url.clone())
            .with_auth_failure_limit(args.auth_failure_limit)
            .with_header_read_timeout(args.header_read_timeout)
            .with_session_limits(warden_server::SessionLimits {
                total: args.max_sessions as usize,
                per_principal: args.max_sessions_per_principal as usize,
            }),
    );
    // Sessions' environments (TASK-1) live beside the store, or in the default data dir.
    let environments = match &location {
        Location::DataDir(dir) => dir.join("environments"),
        Location::Url(_) => crate::common::default_data_dir()?.join("environments"),
    };
    state.runner.set_environments(environments);
    let bound = Bound::on(listener, state)?;
    let addr = bound.local_addr()?;
    // Which server uses this data directory, for the CLI's commands on it (`common.rs`).
    let serving = match &location {
        Location::DataDir(dir) => Some(dir.join(SERVING_FILE)),
        Location::Url(_) => None,
    };
    if let Some(file) = &serving
        && let Err(e) = std::fs::write(file, format!("{addr}\n"))
    {
        tracing::debug!(file = %file.display(), error = %e, "cannot note the serving address");
    }
    // Nobody reading these lines any more is no reason to stop serving.
    output::announce(&format!("mcp: http://{addr}/mcp"));
    output::announce(&format!("console: http://{addr}/"));
    if let Some(token) = admin {
        output::announce(&format!("admin token: {}", token.secret));
    }
    let shutdown = CancellationToken::new();
    let signal = shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        signal.cancel();
        // Open requests finish first; a second signal does not wait for them. Nothing is
        // lost: what the audit spool holds is inserted at the next start (REL-3).
        shutdown_signal().await;
        tracing::warn!("second signal: stopping now, without waiting for open requests");
        std::process::exit(130);
    });
    let threads = args.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        usize::from,
    );
    let signing = tokio::spawn(checkpoints::sign_while(
        gateway.store().clone(),
        key.clone(),
        shutdown.clone(),
    ));
    let archiving = retention.map(|r| tokio::spawn(r.run_while(shutdown.clone())));
    let sending = audit_logs.map(|(logs, after)| {
        tokio::spawn(logs.send_while(gateway.store().clone(), after, shutdown.clone()))
    });
    let result = bound.serve_on_threads(threads, shutdown).await;
    gateway.shutdown();
    let _ = signing.await;
    for task in [archiving, sending].into_iter().flatten() {
        let _ = task.await;
    }
    // The last records the chain got, anchored before the process ends.
    checkpoints::sign(gateway.store(), &key).await;
    // Inserts what is still spooled, so that the store is whole when the process ends.
    gateway.store().close().await;
    if let Some(file) = &serving {
        let _ = std::fs::remove_file(file);
    }
    result
}

/// The demo configuration: project `demo` with the notes tool set (`warden demo-server`,
/// started from this very binary as a stdio child), a read, an ordinary mutation and a
/// dangerous one.
fn demo_config(data_dir: &Path) -> anyhow::Result<Vec<Located>> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find the warden binary for the demo: {e}"))?;
    let quote = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
    let notes = data_dir.join("demo-notes.json");
    let yaml = format!(
        r#"
kind: Project
name: demo
instructions: "A demo notebook. notes__list_notes reads; notes__add_note writes (an ordinary mutation); notes__delete_note is dangerous and needs a human approval."
---
kind: Upstream
name: notes
project: demo
stdio: {{ command: {exe}, args: ["demo-server", "--file", {notes}] }}
---
kind: ToolPolicy
project: demo
tool: "notes__add_note"
class: mutation
risk: ordinary
---
kind: ToolPolicy
project: demo
tool: "notes__delete_note"
class: mutation
risk: dangerous
---
kind: Role
name: demo-user
permissions: ["run:projects:demo"]
"#,
        exe = quote(&exe.display().to_string()),
        notes = quote(&notes.display().to_string()),
    );
    parse_documents("demo", &yaml).map_err(|e| config_errors(&e))
}

pub(crate) async fn shutdown_signal() {
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
