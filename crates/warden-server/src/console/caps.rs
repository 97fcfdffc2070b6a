//! What each page of the console needs: the admin API's capability names, with the same
//! meaning, so a credential sees and does in the console exactly what it could through the
//! API.

use warden_core::authority::Authority;

pub(crate) use warden_core::capability::APPROVALS_DECIDE;

/// Starting an agent's run by hand (Run now).
pub(crate) use warden_core::capability::AGENTS_RUN;

/// Reading configuration: agents and their schedules, kill switches.
pub(crate) use warden_core::capability::CONFIG_READ;
/// Pulling and releasing kill switches.
pub(crate) use warden_core::capability::KILLSWITCHES_WRITE;
/// Reading runs and their calls, unattended agent runs included; reading, exporting and
/// verifying the audit trail (AUD-4).
pub(crate) use warden_core::capability::{AUDIT_READ, RUNS_READ};
/// Explaining calls of other principals, with the rules of hidden tools (GOV-7); reading the
/// tool inventory (GOV-5).
pub(crate) use warden_core::capability::{EXPLAIN_ANY, TOOLS_INVENTORY};
/// Listing tokens; creating and revoking one's own.
pub(crate) use warden_core::capability::{TOKENS_ANY, TOKENS_READ, TOKENS_WRITE};

/// A page of the console, as its navigation lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Section {
    Overview,
    Approvals,
    Runs,
    Audit,
    KillSwitches,
    Explain,
    Tools,
    Agents,
    Tasks,
    Epics,
    Chat,
    Tokens,
}

impl Section {
    /// Every page, in the order of the navigation.
    pub(crate) const ALL: [Section; 12] = [
        Section::Overview,
        Section::Approvals,
        Section::Runs,
        Section::Audit,
        Section::KillSwitches,
        Section::Explain,
        Section::Tools,
        Section::Agents,
        Section::Tasks,
        Section::Epics,
        Section::Chat,
        Section::Tokens,
    ];

    pub(crate) fn path(self) -> &'static str {
        match self {
            Section::Overview => "/",
            Section::Approvals => "/approvals",
            Section::Runs => "/runs",
            Section::Audit => "/audit",
            Section::KillSwitches => "/kill-switches",
            Section::Explain => "/explain",
            Section::Tools => "/tools",
            Section::Agents => "/agents",
            Section::Tasks => "/tasks",
            Section::Epics => "/epics",
            Section::Chat => "/chat",
            Section::Tokens => "/tokens",
        }
    }

    pub(crate) fn title(self) -> &'static str {
        match self {
            Section::Overview => "Overview",
            Section::Approvals => "Approvals",
            Section::Runs => "Runs",
            Section::Audit => "Audit",
            Section::KillSwitches => "Kill switches",
            Section::Explain => "Explain",
            Section::Tools => "Tools",
            Section::Agents => "Agents",
            Section::Tasks => "Tasks",
            Section::Epics => "Epics",
            Section::Chat => "Chat",
            Section::Tokens => "Tokens",
        }
    }

    /// Whether `authority` may open the page. Overview, approvals (a requester sees its own),
    /// explain (of its own calls), tasks (of the workspaces it may read), epics (of the
    /// projects where it may read them) and chat (its own threads) are open to every
    /// signed-in credential; each shows only what the credential may see.
    pub(crate) fn open_to(self, authority: &Authority) -> bool {
        match self {
            Section::Overview
            | Section::Approvals
            | Section::Explain
            | Section::Tasks
            | Section::Epics
            | Section::Chat => true,
            Section::Runs => authority.holds(RUNS_READ),
            Section::Audit => authority.holds(AUDIT_READ),
            Section::KillSwitches => {
                authority.holds(KILLSWITCHES_WRITE) || authority.holds(CONFIG_READ)
            }
            Section::Tools => authority.holds(TOOLS_INVENTORY),
            Section::Agents => authority.holds(CONFIG_READ),
            Section::Tokens => authority.holds(TOKENS_READ) || authority.holds(TOKENS_WRITE),
        }
    }

    /// The capabilities that open the page, for the refusal that names them.
    pub(crate) fn needs(self) -> &'static str {
        match self {
            Section::Overview
            | Section::Approvals
            | Section::Explain
            | Section::Tasks
            | Section::Epics
            | Section::Chat => "",
            Section::Runs => "`runs:read`",
            Section::Audit => "`audit:read`",
            Section::KillSwitches => "`killswitches:write` or `config:read`",
            Section::Tools => "`tools:inventory`",
            Section::Agents => "`config:read`",
            Section::Tokens => "`tokens:read` or `tokens:write`",
        }
    }
}
