//! `warden stdio`: the MCP contract over stdin/stdout, embedded or bridged (SPEC §2).
//! stdout carries protocol messages only; everything else goes to stderr.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt as _;
use warden_core::pipeline::Governance;
use warden_mcp::bridge::{self, Bridge};
use warden_mcp::{Gateway, GatewayOptions, McpHandler, SessionAuth};

use crate::cli::{GovernanceMode, StdioArgs};
use crate::common::{open, usage};

pub(crate) async fn run(args: StdioArgs) -> anyhow::Result<()> {
    let token = std::env::var("WARDEN_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            usage(
                "WARDEN_TOKEN is not set: create a token with `warden token create` and export it",
            )
        })?;
    let token = token.trim().to_owned();
    match (&args.remote, args.governance) {
        (Some(url), mode) => {
            let remote = match bridge::connect(url, &token).await {
                Ok(r) => Some(r),
                // A refused token is the caller's to fix: no fallback stands in for it.
                Err(bridge::ConnectError::Refused(why)) => {
                    return Err(usage(format!("WARDEN_TOKEN: {why}")));
                }
                Err(e) => {
                    tracing::error!(error = %e, "the remote Warden cannot be reached");
                    None
                }
            };
            let fallback = match mode {
                GovernanceMode::On => None,
                GovernanceMode::Auto | GovernanceMode::Off => {
                    Some(local_handler(&args, &token, Governance::Off).await?)
                }
            };
            if mode == GovernanceMode::Off {
                eprintln!(
                    "warden stdio: WARNING: governance is off: calls execute directly on the local configuration, without decisions"
                );
                return serve(fallback.ok_or_else(|| anyhow::anyhow!("no local configuration"))?)
                    .await;
            }
            serve(Bridge::new(url, remote.as_ref(), fallback)).await
        }
        (None, GovernanceMode::On) => {
            serve(local_handler(&args, &token, Governance::On).await?).await
        }
        (None, GovernanceMode::Off) => {
            eprintln!(
                "warden stdio: WARNING: governance is off: calls execute directly, without decisions (still audited)"
            );
            serve(local_handler(&args, &token, Governance::Off).await?).await
        }
        (None, GovernanceMode::Auto) => Err(usage(
            "--governance auto needs --remote (locally, governance is always available)",
        )),
    }
}

async fn local_handler(
    args: &StdioArgs,
    token: &str,
    governance: Governance,
) -> anyhow::Result<McpHandler> {
    let location = crate::target::store(&args.store).await?;
    let store = Arc::new(open(&location).await?);
    // A token this store never issued, revoked or expired is refused before any upstream
    // is started (what else the gateway checks, it checks below).
    let known = store
        .credential_for_token(token)
        .await?
        .ok_or(warden_core::principal::CredentialRejection::Unknown)
        .and_then(|c| c.check_usable(crate::common::now()));
    if let Err(e) = known {
        return Err(usage(format!("WARDEN_TOKEN: {e}")));
    }
    let secrets_dir = crate::common::secrets_dir(args.secrets_dir.clone(), &location);
    let gateway = Gateway::start(
        store,
        GatewayOptions {
            secrets_dir,
            ..GatewayOptions::default()
        },
    )
    .await;
    gateway.wait_for_upstreams(Duration::from_secs(10)).await;
    // Refuse a bad token at start rather than at the first call.
    gateway
        .authenticate(token)
        .map_err(|e| usage(format!("WARDEN_TOKEN: {e}")))?;
    let handler = McpHandler::new(
        gateway,
        SessionAuth::Token(Arc::from(token)),
        args.agent.clone(),
    );
    Ok(handler.with_governance(governance))
}

async fn serve<H: rmcp::ServerHandler>(handler: H) -> anyhow::Result<()> {
    let running = match handler.serve(rmcp::transport::stdio()).await {
        Ok(r) => r,
        // stdin closed before an `initialize` (nothing, or only stateless 2026 requests such
        // as `server/discover`): the client is done, which is not a failure.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(anyhow::anyhow!("stdio session failed: {e}")),
    };
    running.waiting().await?;
    Ok(())
}
