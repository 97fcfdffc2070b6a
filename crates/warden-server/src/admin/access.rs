//! Who may use which route of the admin API: the named capabilities, and the one table that
//! gives each operation its capability (docs/api.md shows it, and a test fails when the two
//! differ; the OpenAPI document is given its security requirements from it, and a test fails
//! when an operation has no row).
//!
//! A capability is a permission string that roles grant ([`warden_core::capability`]); the
//! built-in `admin` role grants `*`, so it holds every one of these. A token narrowed by
//! scopes holds only what its scopes allow too (AUTH-2).

use std::sync::Arc;

use warden_core::authority::Authority;
use warden_core::principal::Credential;

use super::error::ApiError;
use crate::state::AppState;

/// Starting agent runs by hand.
pub use warden_core::capability::AGENTS_RUN;
/// Deciding approvals (APR-4), with a scope covering the action.
pub(crate) use warden_core::capability::APPROVALS_DECIDE;
/// Reading every approval (requesters always see their own).
pub use warden_core::capability::APPROVALS_READ;
/// Reading, exporting and verifying the audit trail (AUD-4).
pub(crate) use warden_core::capability::AUDIT_READ;
/// Explaining calls of other principals, with the rules of hidden tools (GOV-7).
pub use warden_core::capability::EXPLAIN_ANY;
/// Pulling and releasing kill switches.
pub(crate) use warden_core::capability::KILLSWITCHES_WRITE;
/// Reading runs and their calls.
pub use warden_core::capability::RUNS_READ;
/// Reading the tool inventory (GOV-5).
pub use warden_core::capability::TOOLS_INVENTORY;
/// Reviewing changed tool definitions (GOV-9; in the upstream's project).
pub(crate) use warden_core::capability::TOOLS_REVIEW;
/// Reading configuration resources, and applying and deleting them.
pub(crate) use warden_core::capability::{CONFIG_READ, CONFIG_WRITE};
/// Reading the tasks of a workspace, and creating tasks (per workspace, with the project's
/// tools; TASK-2).
pub(crate) use warden_core::capability::{TASKS_CREATE, TASKS_READ};
/// Listing tokens (never their secrets); creating and revoking them, of one's own principal
/// or (`tokens:any`) of any.
pub(crate) use warden_core::capability::{TOKENS_READ, TOKENS_WRITE};
/// Reading epics; creating, changing and moving them; reviewing and accepting their tasks
/// (WORK-1, WORK-2; in the epic's project, with the project's tools).
pub(crate) use warden_core::capability::{WORK_ACCEPT, WORK_READ, WORK_REVIEW, WORK_WRITE};

/// How an operation uses its capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Refused (403, naming the capability) without it.
    Required(&'static str),
    /// Open to every verified credential; the capability widens what it shows or may do.
    Widens(&'static str),
    /// Open to every verified credential; it answers for the caller's own authority.
    Open,
}

/// One row of the table: an operation (by its OpenAPI operation id) and its gate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    pub(crate) operation: &'static str,
    pub(crate) gate: Gate,
    /// What the gate means for this operation, for the document.
    pub(crate) note: &'static str,
}

const fn row(operation: &'static str, gate: Gate, note: &'static str) -> Row {
    Row {
        operation,
        gate,
        note,
    }
}

/// Every operation of the admin API and the capability it needs.
pub(crate) const TABLE: &[Row] = &[
    row("whoami", Gate::Open, "the caller's own authority"),
    row(
        "explain",
        Gate::Widens(EXPLAIN_ANY),
        "explaining another principal, and the rules of hidden tools, need `explain:any`",
    ),
    row("toolInventory", Gate::Required(TOOLS_INVENTORY), ""),
    row("upstreamHealth", Gate::Required(TOOLS_INVENTORY), ""),
    row(
        "listToolChanges",
        Gate::Required(TOOLS_REVIEW),
        "lists the changes in projects whose tools the caller may use (GOV-9)",
    ),
    row(
        "getToolChange",
        Gate::Required(TOOLS_REVIEW),
        "a change in a project the caller may not use answers like one that does not exist",
    ),
    row(
        "acceptToolChange",
        Gate::Required(TOOLS_REVIEW),
        "in the upstream's project, whose tools the caller may use",
    ),
    row(
        "rejectToolChange",
        Gate::Required(TOOLS_REVIEW),
        "in the upstream's project, whose tools the caller may use",
    ),
    row("applyResources", Gate::Required(CONFIG_WRITE), ""),
    row("listResources", Gate::Required(CONFIG_READ), ""),
    row("getResource", Gate::Required(CONFIG_READ), ""),
    row("deleteResource", Gate::Required(CONFIG_WRITE), ""),
    row(
        "createToken",
        Gate::Required(TOKENS_WRITE),
        "and, for another principal, `tokens:any`; the token is never wider than the caller (AUTH-2)",
    ),
    row(
        "listTokens",
        Gate::Required(TOKENS_READ),
        "(or `tokens:write`, which lists the tokens of the caller's own principal)",
    ),
    row(
        "revokeToken",
        Gate::Required(TOKENS_WRITE),
        "and, for another principal's token, `tokens:any` (AUTH-2)",
    ),
    row("pullKillSwitch", Gate::Required(KILLSWITCHES_WRITE), ""),
    row("listKillSwitches", Gate::Required(CONFIG_READ), ""),
    row("releaseKillSwitch", Gate::Required(KILLSWITCHES_WRITE), ""),
    row(
        "listNotifiers",
        Gate::Required(CONFIG_READ),
        "with each notifier's deliveries: counts and the latest failures (NOTIFY-1)",
    ),
    row("listAudit", Gate::Required(AUDIT_READ), ""),
    row("exportAudit", Gate::Required(AUDIT_READ), ""),
    row("verifyAudit", Gate::Required(AUDIT_READ), ""),
    row("listRuns", Gate::Required(RUNS_READ), ""),
    row("getRun", Gate::Required(RUNS_READ), ""),
    row(
        "listApprovals",
        Gate::Widens(APPROVALS_READ),
        "a requester sees its own; `approvals:read` or `approvals:decide` shows every one",
    ),
    row(
        "getApproval",
        Gate::Widens(APPROVALS_READ),
        "a requester reads its own (anyone else's answers 404); `approvals:read` or `approvals:decide` reads any",
    ),
    row(
        "approveApproval",
        Gate::Required(APPROVALS_DECIDE),
        "and a scope at least as wide as the action's (APR-4), and not being its requester under `selfApproval: deny` (APR-8)",
    ),
    row(
        "rejectApproval",
        Gate::Required(APPROVALS_DECIDE),
        "and a scope at least as wide as the action's (APR-4), and not being its requester under `selfApproval: deny` (APR-8)",
    ),
    row(
        "vetoApproval",
        Gate::Required(APPROVALS_DECIDE),
        "and a scope at least as wide as the action's (APR-4)",
    ),
    row("listAgents", Gate::Required(CONFIG_READ), ""),
    row("startAgentRun", Gate::Required(AGENTS_RUN), ""),
    row("listAgentRuns", Gate::Required(RUNS_READ), ""),
    row(
        "listWorkspaces",
        Gate::Widens(TASKS_READ),
        "shows the workspaces where the caller holds `tasks:read` and the project's tools",
    ),
    row(
        "listTasks",
        Gate::Widens(TASKS_READ),
        "lists the tasks of workspaces where the caller holds `tasks:read` and the project's tools",
    ),
    row(
        "getTask",
        Gate::Widens(TASKS_READ),
        "a task of a workspace the caller may not read answers like one that does not exist",
    ),
    row(
        "createTask",
        Gate::Required(TASKS_CREATE),
        "and task admission (TASK-2..8) decides where",
    ),
    row(
        "createEpic",
        Gate::Widens(WORK_WRITE),
        "`work:write` in the epic's project, whose tools the caller may use",
    ),
    row(
        "listEpics",
        Gate::Widens(WORK_READ),
        "lists the epics of projects where the caller holds `work:read` and the project's tools",
    ),
    row(
        "getEpic",
        Gate::Widens(WORK_READ),
        "an epic the caller may not see answers like one that does not exist",
    ),
    row(
        "updateEpic",
        Gate::Widens(WORK_WRITE),
        "`work:write` in the epic's project; an epic the caller may not see answers like one that does not exist",
    ),
    row(
        "addEpicTask",
        Gate::Widens(WORK_WRITE),
        "`work:write` in the epic's project, and task admission (`tasks:create`) for its task",
    ),
    row(
        "moveEpicTask",
        Gate::Widens(WORK_WRITE),
        "`work:write` in the epic's project",
    ),
    row(
        "reviewEpicTask",
        Gate::Widens(WORK_REVIEW),
        "`work:review` in the epic's project, by a principal other than the task's authors",
    ),
    row(
        "acceptEpicTask",
        Gate::Widens(WORK_ACCEPT),
        "`work:accept` in the epic's project, once the review gate is open (WORK-2)",
    ),
    row("discoverRepositories", Gate::Required(CONFIG_READ), ""),
    row("importRepositories", Gate::Required(CONFIG_WRITE), ""),
    row(
        "startThread",
        Gate::Open,
        "a caller-mode run of the agent: its tools are the caller's, each call governed (RUN-9)",
    ),
    row(
        "sendMessage",
        Gate::Open,
        "the caller's own threads; anyone else's answers as one that does not exist (RUN-7)",
    ),
    row("listThreads", Gate::Open, "the caller's own threads"),
    row(
        "getThread",
        Gate::Open,
        "the caller's own threads; anyone else's answers as one that does not exist (RUN-7)",
    ),
    row(
        "deleteThread",
        Gate::Open,
        "the caller's own threads; anyone else's answers as one that does not exist (RUN-7)",
    ),
];

/// The row of `operation`.
pub(crate) fn row_of(operation: &str) -> Option<&'static Row> {
    TABLE.iter().find(|r| r.operation == operation)
}

/// Refuses unless `authority` holds `capability`: 403 naming it and what it is needed for.
pub(crate) fn require(authority: &Authority, capability: &str, what: &str) -> Result<(), ApiError> {
    if authority.holds(capability) {
        Ok(())
    } else {
        Err(ApiError::missing(capability, what))
    }
}

/// The caller's own authority, re-resolved from the current policy (RUN-8).
pub(crate) fn own_authority(
    state: &AppState,
    credential: &Credential,
) -> Result<Arc<Authority>, ApiError> {
    state
        .gateway
        .authority(credential, None)
        .map_err(|e| ApiError::forbidden(e.to_string()))
}

/// The caller's authority, after checking it holds `capability` for `what`.
pub(crate) fn caller_holding(
    state: &AppState,
    credential: &Credential,
    capability: &str,
    what: &str,
) -> Result<Arc<Authority>, ApiError> {
    let caller = own_authority(state, credential)?;
    require(&caller, capability, what)?;
    Ok(caller)
}
