//! Forges (WORK-3) for the operators' doors: `warden provider discover|import` and
//! `/api/v1/gitproviders/{name}/repositories|import`. What a provider holds is the work
//! domain's (`warden_work::forges`); importing is an apply of the workspace it changes.

use warden_core::config::{GitProviderSpec, Kind, Located, Resource};
use warden_core::policy::Policy;
use warden_work::forges::hook::{self, Delivery, HookError, Taken};
use warden_work::forges::{self, Discovered};

use crate::resources::{self, Applied, may_read, may_write};
use crate::{Caller, Control, Refusal};

/// What an import did.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The repositories added to the workspace, by name (none: it had them all).
    pub added: Vec<String>,
    /// The apply that wrote the workspace.
    pub applied: Applied,
}

async fn provider(control: &Control, name: &str) -> Result<GitProviderSpec, Refusal> {
    let (config, _) = control.store().load_config().await?;
    match config.get(Kind::GitProvider, name) {
        Some(Resource::GitProvider(p)) => Ok(p.clone()),
        _ => Err(Refusal::not_found(format!("no GitProvider named `{name}`"))),
    }
}

/// The repositories of the GitProvider `name` (`config:read`).
pub async fn discover(
    control: &Control,
    caller: &Caller,
    name: &str,
) -> Result<Vec<Discovered>, Refusal> {
    may_read(caller)?;
    let provider = provider(control, name).await?;
    forges::discover(&provider, control.secrets())
        .await
        .map_err(|e| Refusal::Conflict(format!("GitProvider `{name}`: {e}")))
}

/// Adds the repositories `names` (all when empty) of the GitProvider `name` to `workspace`, a
/// workspace of the provider's project (`config:write`).
pub async fn import(
    control: &Control,
    caller: &Caller,
    name: &str,
    workspace: &str,
    names: &[String],
) -> Result<Imported, Refusal> {
    may_write(caller, "importing repositories")?;
    let provider = provider(control, name).await?;
    let (config, _) = control.store().load_config().await?;
    let Some(Resource::Workspace(found)) = config.get(Kind::Workspace, workspace) else {
        return Err(Refusal::NotFound {
            field: Some("workspace"),
            message: format!("no Workspace named `{workspace}`"),
        });
    };
    if found.project != provider.project {
        return Err(Refusal::Unprocessable {
            field: Some("workspace"),
            message: format!(
                "workspace `{workspace}` belongs to project `{}`; GitProvider `{name}` serves `{}`",
                found.project, provider.project
            ),
        });
    }
    let mut changed = found.clone();
    let discovered = forges::discover(&provider, control.secrets())
        .await
        .map_err(|e| Refusal::Conflict(format!("GitProvider `{name}`: {e}")))?;
    let added = forges::import(&mut changed, &discovered, names).map_err(|message| {
        Refusal::Unprocessable {
            field: Some("repositories"),
            message,
        }
    })?;
    let located = Located {
        source: None,
        resource: Resource::Workspace(changed),
    };
    let applied = resources::write(control, caller, vec![located], false).await?;
    Ok(Imported { added, applied })
}

/// Takes a delivery of the GitProvider `name`'s webhook (see `warden_work::forges::hook`):
/// signed by the provider's secret, not by a caller's credential.
pub async fn deliver(
    control: &Control,
    policy: &Policy,
    name: &str,
    delivery: Delivery<'_>,
) -> Result<Taken, HookError> {
    hook::deliver(
        control.store(),
        policy,
        control.secrets(),
        name,
        delivery,
        control.now(),
    )
    .await
}

/// Whether a delivery to the GitProvider `name`'s webhook is signed by its secret (writing
/// nothing): a rate limit lets such a delivery through.
pub fn verified(control: &Control, policy: &Policy, name: &str, delivery: Delivery<'_>) -> bool {
    hook::verified(policy, control.secrets(), name, delivery)
}
