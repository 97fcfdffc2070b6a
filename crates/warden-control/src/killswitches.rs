//! Kill switches (GOV-2 step 1): pull and release — the admin API, the console and
//! `warden kill` / `warden delete killswitch` alike. Both need `killswitches:write`.

use warden_core::capability::{CONFIG_READ, KILLSWITCHES_WRITE};
use warden_core::config::{KillSwitchSpec, Kind, Located, Resource};

use crate::resources::{ChangeStatus, remove, write};
use crate::{Caller, Control, Refusal};

/// A pulled kill switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pulled {
    /// Its key (`tool:ledger__refund`, `all`, or its name).
    pub key: String,
    /// The configuration's revision after it.
    pub revision: u64,
    /// Whether a kill switch with this key was there and is replaced.
    pub replaced: bool,
}

/// The kill switches pulled now, by key.
pub async fn list(control: &Control, caller: &Caller) -> Result<Vec<KillSwitchSpec>, Refusal> {
    caller.require(CONFIG_READ, "listing kill switches")?;
    let (config, _) = control.store().load_config().await?;
    Ok(config
        .of_kind(Kind::KillSwitch)
        .filter_map(|r| match r {
            Resource::KillSwitch(k) => Some(k.clone()),
            _ => None,
        })
        .collect())
}

/// Refuses a caller that may not pull a kill switch (`killswitches:write`): a door asks before
/// it reads the kill switch, so that a refusal comes before any complaint about it.
pub fn may_pull(caller: &Caller) -> Result<(), Refusal> {
    caller.require(KILLSWITCHES_WRITE, "pulling a kill switch")
}

/// Pulls `spec`: every call in its scope is refused (`KILL_SWITCH`) from the next call on.
pub async fn pull(
    control: &Control,
    caller: &Caller,
    spec: KillSwitchSpec,
) -> Result<Pulled, Refusal> {
    may_pull(caller)?;
    let resource = Resource::KillSwitch(spec);
    let key = resource.key();
    let located = Located {
        source: None,
        resource,
    };
    let applied = write(control, caller, vec![located], false).await?;
    Ok(Pulled {
        key,
        revision: applied.revision,
        replaced: applied
            .changes
            .first()
            .is_some_and(|c| c.status != ChangeStatus::Created),
    })
}

/// Releases the kill switch `key`. The new revision.
pub async fn release(control: &Control, caller: &Caller, key: &str) -> Result<u64, Refusal> {
    caller.require(KILLSWITCHES_WRITE, "releasing a kill switch")?;
    remove(control, caller, Kind::KillSwitch, key).await
}
