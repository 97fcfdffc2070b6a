//! The user-facing configuration resources of SPEC Appendix A, as serde types.
//!
//! These are the *raw* shapes users write. [`super::Config::validate`] turns a set of them
//! into a [`super::Config`] that cannot be invalid (dangling references, bad patterns, …).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;

use crate::audit::ArgumentsAudit;
use serde::{Deserialize, Serialize};

use crate::name::Name;
use crate::principal::Subject;

use super::upstream::UpstreamSpec;

/// Every kind of resource, in the order they are applied and listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// [`UserSpec`]
    User,
    /// [`ServiceAccountSpec`]
    ServiceAccount,
    /// [`RoleSpec`]
    Role,
    /// [`RoleBindingSpec`]
    RoleBinding,
    /// [`ProjectSpec`]
    Project,
    /// [`UpstreamSpec`]
    Upstream,
    /// [`super::model::ModelSpec`]
    Model,
    /// [`AgentSpec`]
    Agent,
    /// [`ToolPolicySpec`]
    ToolPolicy,
    /// [`AutonomySpec`]
    Autonomy,
    /// [`WriteBudgetSpec`]
    WriteBudget,
    /// [`KillSwitchSpec`]
    KillSwitch,
    /// [`WorkspaceSpec`]
    Workspace,
    /// [`super::issuer::IssuerSpec`]
    Issuer,
    /// [`super::work::ReviewPolicySpec`]
    ReviewPolicy,
    /// [`super::work::GitProviderSpec`]
    GitProvider,
    /// [`super::work::ReconcilerSpec`]
    Reconciler,
    /// [`super::notifier::NotifierSpec`]
    Notifier,
}

impl Kind {
    /// All kinds, in application order.
    pub const ALL: [Kind; 18] = [
        Kind::User,
        Kind::ServiceAccount,
        Kind::Role,
        Kind::RoleBinding,
        Kind::Project,
        Kind::Upstream,
        Kind::Model,
        Kind::Agent,
        Kind::ToolPolicy,
        Kind::Autonomy,
        Kind::WriteBudget,
        Kind::KillSwitch,
        Kind::Workspace,
        Kind::Issuer,
        Kind::ReviewPolicy,
        Kind::GitProvider,
        Kind::Reconciler,
        Kind::Notifier,
    ];

    /// The kind as written in `kind:`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::User => "User",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::Role => "Role",
            Kind::RoleBinding => "RoleBinding",
            Kind::Project => "Project",
            Kind::Upstream => "Upstream",
            Kind::Model => "Model",
            Kind::Agent => "Agent",
            Kind::ToolPolicy => "ToolPolicy",
            Kind::Autonomy => "Autonomy",
            Kind::WriteBudget => "WriteBudget",
            Kind::KillSwitch => "KillSwitch",
            Kind::Workspace => "Workspace",
            Kind::Issuer => "Issuer",
            Kind::ReviewPolicy => "ReviewPolicy",
            Kind::GitProvider => "GitProvider",
            Kind::Reconciler => "Reconciler",
            Kind::Notifier => "Notifier",
        }
    }

    /// Parses a kind as written in YAML (`ToolPolicy`) or on the command line, where case,
    /// dashes and a plural `s` are forgiven (`toolpolicies`, `tool-policy`, `users`).
    pub fn parse_loose(s: &str) -> Option<Kind> {
        let norm: String = s
            .chars()
            .filter(|c| *c != '-' && *c != '_')
            .collect::<String>()
            .to_ascii_lowercase();
        Kind::ALL.into_iter().find(|k| {
            let base = k.as_str().to_ascii_lowercase();
            let plural = if let Some(stem) = base.strip_suffix('y') {
                format!("{stem}ies")
            } else if base.ends_with('s') || base.ends_with('h') {
                format!("{base}es")
            } else {
                format!("{base}s")
            };
            norm == base || norm == plural
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One configuration resource, tagged by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
pub enum Resource {
    /// A human user.
    User(UserSpec),
    /// A service account.
    ServiceAccount(ServiceAccountSpec),
    /// A named set of capabilities.
    Role(RoleSpec),
    /// Grants a role to a subject.
    RoleBinding(RoleBindingSpec),
    /// A project: knowledge and capability.
    Project(ProjectSpec),
    /// An upstream MCP server of a project.
    Upstream(UpstreamSpec),
    /// An OpenAI-compatible chat-completions endpoint agents are talked to through (RUN-9).
    Model(super::model::ModelSpec),
    /// A named agent persona.
    Agent(AgentSpec),
    /// Classification, capability, risk and limits of tools.
    ToolPolicy(ToolPolicySpec),
    /// The autonomy level of a subject (APR-1).
    Autonomy(AutonomySpec),
    /// A maximum number of writes per minute.
    WriteBudget(WriteBudgetSpec),
    /// A freeze on a scope.
    KillSwitch(KillSwitchSpec),
    /// A container of tasks.
    Workspace(WorkspaceSpec),
    /// `kind: Issuer`
    Issuer(super::issuer::IssuerSpec),
    /// The review gate's numbers in a project (WORK-2).
    ReviewPolicy(super::work::ReviewPolicySpec),
    /// A forge a project's repositories live in (WORK-3).
    GitProvider(super::work::GitProviderSpec),
    /// A periodic job moving stale work (WORK-4).
    Reconciler(super::work::ReconcilerSpec),
    /// Where approval, kill-switch and quarantine events are delivered (NOTIFY-1).
    Notifier(super::notifier::NotifierSpec),
}

impl Resource {
    /// The resource's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Resource::User(_) => Kind::User,
            Resource::ServiceAccount(_) => Kind::ServiceAccount,
            Resource::Role(_) => Kind::Role,
            Resource::RoleBinding(_) => Kind::RoleBinding,
            Resource::Project(_) => Kind::Project,
            Resource::Upstream(_) => Kind::Upstream,
            Resource::Model(_) => Kind::Model,
            Resource::Agent(_) => Kind::Agent,
            Resource::ToolPolicy(_) => Kind::ToolPolicy,
            Resource::Autonomy(_) => Kind::Autonomy,
            Resource::WriteBudget(_) => Kind::WriteBudget,
            Resource::KillSwitch(_) => Kind::KillSwitch,
            Resource::Workspace(_) => Kind::Workspace,
            Resource::Issuer(_) => Kind::Issuer,
            Resource::ReviewPolicy(_) => Kind::ReviewPolicy,
            Resource::GitProvider(_) => Kind::GitProvider,
            Resource::Reconciler(_) => Kind::Reconciler,
            Resource::Notifier(_) => Kind::Notifier,
        }
    }

    /// The resource's identity within its kind: its `name`, or for resources whose name is
    /// optional, a key derived from what they apply to.
    pub fn key(&self) -> String {
        match self {
            Resource::User(s) => s.name.to_string(),
            Resource::ServiceAccount(s) => s.name.to_string(),
            Resource::Role(s) => s.name.to_string(),
            Resource::RoleBinding(s) => s
                .name
                .as_ref()
                .map_or_else(|| format!("{}:{}", s.role, s.subject), Name::to_string),
            Resource::Project(s) => s.name.to_string(),
            Resource::Upstream(s) => s.name.to_string(),
            Resource::Model(s) => s.name.to_string(),
            Resource::Agent(s) => s.name.to_string(),
            Resource::ToolPolicy(s) => s
                .name
                .as_ref()
                .map_or_else(|| format!("{}/{}", s.project, s.tool), Name::to_string),
            Resource::Autonomy(s) => s
                .name
                .as_ref()
                .map_or_else(|| s.subject.to_string(), Name::to_string),
            Resource::WriteBudget(s) => s.name.as_ref().map_or_else(
                || match s.per {
                    BudgetPer::Subject => s.subject.to_string(),
                    BudgetPer::Run => format!("{}/run", s.subject),
                },
                Name::to_string,
            ),
            Resource::KillSwitch(s) => s
                .name
                .as_ref()
                .map_or_else(|| s.scope.to_string(), Name::to_string),
            Resource::Workspace(s) => s.name.to_string(),
            Resource::Issuer(s) => s.name.to_string(),
            Resource::ReviewPolicy(s) => s.project.to_string(),
            Resource::GitProvider(s) => s.name.to_string(),
            Resource::Reconciler(s) => s.name.to_string(),
            Resource::Notifier(s) => s.name.to_string(),
        }
    }
}

/// `kind: User`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserSpec {
    /// The user's name, as used in bindings and credentials.
    pub name: Name,
    /// Groups the user belongs to (role bindings may name a group).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Name>,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// `kind: ServiceAccount`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAccountSpec {
    /// The account's name.
    pub name: Name,
    /// What the account is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `kind: Role`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleSpec {
    /// The role's name.
    pub name: Name,
    /// Capability patterns granted, e.g. `run:projects:payments`, `ledger:*`.
    pub permissions: Vec<String>,
    /// What the role is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `kind: RoleBinding`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleBindingSpec {
    /// Optional name; by default `<role>:<subject>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// The role granted.
    pub role: Name,
    /// Who receives it.
    pub subject: Subject,
}

/// `kind: Project`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectSpec {
    /// The project's name.
    pub name: Name,
    /// Knowledge: how the project works, conventions, glossary (RUN-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Knowledge: prompts offered to runs of member agents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<PromptSpec>,
    /// Knowledge: context documents, offered as resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<DocumentSpec>,
}

/// A prompt of a project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptSpec {
    /// The prompt's name.
    pub name: Name,
    /// One line on what it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The prompt text.
    pub text: String,
}

/// A context document of a project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentSpec {
    /// The document's name (part of its resource URI).
    pub name: Name,
    /// A title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// MIME type of the text; `text/markdown` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The content.
    pub text: String,
}

/// `kind: Agent`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSpec {
    /// The agent's name.
    pub name: Name,
    /// The persona's own instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Projects the agent belongs to: it carries their knowledge into every run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memberships: Vec<Name>,
    /// The Model it is talked to through (RUN-9 chat); none: it cannot be chatted with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Name>,
    /// Unattended runs on a schedule (RUN-2 `agent` mode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<ScheduleSpec>,
    /// The program a manual run (`warden run agent NAME`) starts; by default the first
    /// schedule's runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<RunnerSpec>,
    /// How long a manual run may take before it is stopped (default 15m).
    #[serde(
        default,
        with = "crate::time::human_duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub timeout: Option<Duration>,
}

impl AgentSpec {
    /// The runner and timeout of a manual run.
    pub fn manual_runner(&self) -> Option<(&RunnerSpec, Option<Duration>)> {
        match &self.runner {
            Some(r) => Some((r, self.timeout)),
            None => self
                .schedules
                .first()
                .map(|s| (&s.runner, s.timeout.or(self.timeout))),
        }
    }
}

/// A schedule of an agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleSpec {
    /// Cron expression (five fields, UTC).
    pub cron: String,
    /// The program started for each run.
    pub runner: RunnerSpec,
    /// How long a run may take before it is stopped (default 15m).
    #[serde(
        default,
        with = "crate::time::human_duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub timeout: Option<Duration>,
}

/// A runner command.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunnerSpec {
    /// The program.
    pub command: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// Read or mutation.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolClass {
    /// No side effects.
    Read,
    /// Writes, updates, creates or deletes something.
    Mutation,
}

/// Risk of a mutation.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Runs at autonomy L2 and above.
    Ordinary,
    /// Parks for approval at L2, is staged at L3.
    Dangerous,
}

/// `kind: ToolPolicy`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolPolicySpec {
    /// Optional name; by default `<project>/<tool>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// The project whose tools this applies to.
    pub project: Name,
    /// A catalog name or a glob (`ledger__*`).
    pub tool: String,
    /// Read or mutation; by default from the tool's annotations, unknown = mutation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<ToolClass>,
    /// Capability required in addition to `run:projects:<project>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    /// Risk of the mutation (default ordinary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// Calls per minute across all callers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimitSpec>,
    /// Reject argument fields the schema does not declare, even if the upstream allows them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    /// Refuse every call of the matching tools (`TOOL_POLICY`), with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<String>,
    /// Declares matching mutations *ungoverned*, with the reason (GOV-5). Declaring a gap
    /// describes it; with governance `on` such calls are still refused (`UNGOVERNED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ungoverned: Option<String>,
    /// JSON pointers of arguments that name a project (RUN-3): each named project must be
    /// within the run's authority.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub project_arguments: Vec<String>,
    /// What the audit trail keeps of the matching tools' calls (AUD-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditSpec>,
    /// `deny`: the principal that parked a call of this tool does not decide it (APR-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_approval: Option<super::four_eyes::SelfApproval>,
    /// How many distinct deciders approve a parked call of this tool before it runs (1 to 5,
    /// default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<u8>,
    /// Conditions on the arguments (GOV-10), evaluated in order at step 5.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<super::rules::RuleSpec>,
}

/// What the audit trail keeps of a tool's calls (AUD-3). Results are kept as hashes only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditSpec {
    /// Of the arguments, beside their hash: `hash` (nothing more), `redacted` (the default: a
    /// copy without secret-looking values, long values cut) or `full`. Values the tool's schema
    /// marks `writeOnly` or `format: password` are never kept.
    #[serde(default)]
    pub arguments: ArgumentsAudit,
}

/// A rate limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimitSpec {
    /// Calls allowed per minute.
    pub per_minute: u32,
}

/// Who an autonomy level applies to.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum AutonomySubject {
    /// Runs of an agent.
    Agent(Name),
    /// A user.
    User(Name),
    /// A service account.
    ServiceAccount(Name),
    /// Every run's calls to tools of a project.
    Project(Name),
    /// Work done for an intent (agent roles).
    Intent(String),
}

impl fmt::Display for AutonomySubject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Agent(n) => write!(f, "agent:{n}"),
            Self::User(n) => write!(f, "user:{n}"),
            Self::ServiceAccount(n) => write!(f, "serviceAccount:{n}"),
            Self::Project(n) => write!(f, "project:{n}"),
            Self::Intent(n) => write!(f, "intent:{n}"),
        }
    }
}

/// `kind: Autonomy`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutonomySpec {
    /// Optional name; by default the subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// Who it applies to.
    pub subject: AutonomySubject,
    /// 0 (no side effects) … 4 (autopilot).
    pub level: u8,
    /// For level 3: how long a staged dangerous mutation waits for a veto (default 10m).
    #[serde(
        default,
        with = "crate::time::human_duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub veto_window: Option<Duration>,
    /// For levels 1 and 2: how long an approval waits for a decision before it expires
    /// (default 1h).
    #[serde(
        default,
        with = "crate::time::human_duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub approval_ttl: Option<Duration>,
    /// `deny`: a principal it applies to does not decide the calls it parked (APR-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_approval: Option<super::four_eyes::SelfApproval>,
}

/// Who a write budget applies to.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum BudgetSubject {
    /// Runs of an agent.
    Agent(Name),
    /// A user.
    User(Name),
    /// A service account.
    ServiceAccount(Name),
    /// Everyone (`all: true`).
    All(bool),
}

impl fmt::Display for BudgetSubject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Agent(n) => write!(f, "agent:{n}"),
            Self::User(n) => write!(f, "user:{n}"),
            Self::ServiceAccount(n) => write!(f, "serviceAccount:{n}"),
            Self::All(_) => write!(f, "all"),
        }
    }
}

/// What a write budget counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BudgetPer {
    /// All writes of the subject together.
    #[default]
    Subject,
    /// Each run of the subject separately.
    Run,
}

/// `kind: WriteBudget`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteBudgetSpec {
    /// Optional name; by default the subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// Who it applies to.
    pub subject: BudgetSubject,
    /// Mutations allowed per minute.
    pub max_writes_per_minute: u32,
    /// Count per subject (default) or per run.
    #[serde(default, skip_serializing_if = "is_default")]
    pub per: BudgetPer,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// What a kill switch freezes.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum KillScope {
    /// Everything (`all: true`).
    All(bool),
    /// Every tool of a project.
    Project(Name),
    /// Every run of an agent.
    Agent(Name),
    /// A tool by catalog name or glob.
    Tool(String),
    /// Everything a principal does.
    Principal(Subject),
}

impl fmt::Display for KillScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All(_) => write!(f, "all"),
            Self::Project(n) => write!(f, "project:{n}"),
            Self::Agent(n) => write!(f, "agent:{n}"),
            Self::Tool(t) => write!(f, "tool:{t}"),
            Self::Principal(s) => write!(f, "principal:{s}"),
        }
    }
}

/// `kind: KillSwitch`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KillSwitchSpec {
    /// Optional name; by default the scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// What is frozen.
    pub scope: KillScope,
    /// Why (shown to operators and in the denial message).
    pub reason: String,
}

/// Mode of a workspace (TASK-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceMode {
    /// An interactive board.
    Kanban,
    /// An organisation of persistent agents.
    Office,
}

/// `kind: Workspace`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceSpec {
    /// The workspace's name.
    pub name: Name,
    /// `kanban` or `office`.
    pub mode: WorkspaceMode,
    /// The project that owns it.
    pub project: Name,
    /// The repositories its tasks work in (TASK-1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repositories: Vec<WorkspaceRepository>,
}

/// A repository of a workspace: what a task's environment checks out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceRepository {
    /// Its name in the workspace (what tasks request).
    pub name: Name,
    /// A local path or anything `git clone` accepts.
    pub url: String,
    /// The branch tasks start from; the repository's default branch when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_loosely_on_the_command_line() {
        assert_eq!(Kind::parse_loose("toolpolicies"), Some(Kind::ToolPolicy));
        assert_eq!(Kind::parse_loose("ToolPolicy"), Some(Kind::ToolPolicy));
        assert_eq!(Kind::parse_loose("tool-policy"), Some(Kind::ToolPolicy));
        assert_eq!(Kind::parse_loose("users"), Some(Kind::User));
        assert_eq!(Kind::parse_loose("killswitches"), Some(Kind::KillSwitch));
        assert_eq!(Kind::parse_loose("autonomies"), Some(Kind::Autonomy));
        assert_eq!(Kind::parse_loose("rolebinding"), Some(Kind::RoleBinding));
        assert_eq!(Kind::parse_loose("nope"), None);
    }
}
