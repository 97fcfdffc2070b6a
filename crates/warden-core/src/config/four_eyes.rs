//! Four eyes (APR-8): who may decide a parked call. `selfApproval: deny` on a ToolPolicy or an
//! Autonomy keeps the principal that parked a call from deciding it; `approvals: N` on a
//! ToolPolicy asks for N distinct deciders before the call runs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most deciders a ToolPolicy may ask for.
pub const MOST_DECIDERS: u8 = 5;

/// Whether the principal that parked a call may decide it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SelfApproval {
    /// It may (the default: a single admin can approve what they asked for).
    #[default]
    Allow,
    /// Someone else decides it, whichever credential of the requester asks.
    Deny,
}

/// What is wrong with `approvals`, if anything.
pub(super) fn deciders_problem(approvals: Option<u8>) -> Option<String> {
    approvals
        .filter(|n| !(1..=MOST_DECIDERS).contains(n))
        .map(|_| format!("must be between 1 and {MOST_DECIDERS}"))
}
