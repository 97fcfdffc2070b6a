//! Kill switches (GOV-2 step 1): pull and release — the admin API, the console and
//! `warden kill` / `warden delete killswitch` alike. Both need `killswitches:write`.

use warden_core::capability::KILLSWITCHES_WRITE;
use warden_core::config::{KillSwitchSpec, Kind, Located, Resource};
use warden_core::time::Millis;
use warden_store::Store;

use crate::resources::{ChangeStatus, remove, write};
use crate::{Caller, Refusal};

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

/// Refuses a caller that may not pull a kill switch (`killswitches:write`): a door asks before
/// it reads the kill switch, so that a refusal comes before any complaint about it.
pub fn may_pull(caller: &Caller) -> Result<(), Refusal> {
    caller.require(KILLSWITCHES_WRITE, "pulling a kill switch")
}

/// Pulls `spec`: every call in its scope is refused (`KILL_SWITCH`) from the next call on.
pub async fn pull(
    store: &Store,
    caller: &Caller,
    spec: KillSwitchSpec,
    now: Millis,
) -> Result<Pulled, Refusal> {
    may_pull(caller)?;
    let resource = Resource::KillSwitch(spec);
    let key = resource.key();
    let located = Located {
        source: None,
        resource,
    };
    let applied = write(store, caller, vec![located], false, now).await?;
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
pub async fn release(
    store: &Store,
    caller: &Caller,
    key: &str,
    now: Millis,
) -> Result<u64, Refusal> {
    caller.require(KILLSWITCHES_WRITE, "releasing a kill switch")?;
    remove(store, caller, Kind::KillSwitch, key, now).await
}
