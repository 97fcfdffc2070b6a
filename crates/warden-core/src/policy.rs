//! The policy snapshot: a validated configuration compiled for the call path. Immutable; a
//! new one is built on every configuration change and swapped in atomically.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::capability::Capability;
use crate::config::{
    AgentSpec, Approvals, AutonomySpec, AutonomySubject, BudgetPer, BudgetSubject, Config,
    GitProviderSpec, IssuerSpec, KillScope, KillSwitchSpec, Kind, ModelSpec, ProjectSpec,
    RECONCILER_INTENT, ReconcilerSpec, Resource, SelfApproval, ToolPolicySpec, WriteBudgetSpec,
};
use crate::name::{Name, glob_match};
use crate::principal::{Principal, Subject};
use crate::rbac::RbacBundle;
use crate::tool::ToolDescriptor;

/// Autonomy level when nothing is configured (APR-1).
pub const DEFAULT_AUTONOMY_LEVEL: u8 = 2;

/// Default veto window of level 3.
pub const DEFAULT_VETO_WINDOW: Duration = Duration::from_secs(600);

/// Default time an approval waits for a decision (levels 1 and 2).
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(3600);

/// Who a run acts as, as the policy's subjects (kill switches, autonomy, budgets) match it:
/// the principal, the agent of the run and the intent it serves.
#[derive(Clone, Copy, Debug)]
pub struct Actor<'a> {
    /// The principal.
    pub principal: &'a Principal,
    /// Groups its credential asserts, on top of those configuration gives it.
    pub groups: &'a [Name],
    /// The agent, for a run of an agent.
    pub agent: Option<&'a Name>,
    /// The intent served, for agent-role work.
    pub intent: Option<&'a str>,
    /// The highest autonomy level its mutations run at, for agent-role work.
    pub autonomy_cap: Option<u8>,
}

/// A compiled, immutable policy.
#[derive(Debug, Default)]
pub struct Policy {
    /// The store's configuration revision this policy was compiled from; recorded with every
    /// decision as the policy version.
    pub revision: u64,
    /// The validated configuration.
    pub config: Arc<Config>,
    /// Roles and bindings.
    pub rbac: RbacBundle,
    projects: BTreeMap<Name, ProjectSpec>,
    agents: BTreeMap<Name, AgentSpec>,
    models: BTreeMap<Name, ModelSpec>,
    tool_policies: Vec<(String, ToolPolicySpec)>,
    autonomy: Vec<(String, AutonomySpec)>,
    budgets: Vec<(String, WriteBudgetSpec)>,
    kill_switches: Vec<(String, KillSwitchSpec)>,
    issuers: Vec<IssuerSpec>,
}

/// The effective autonomy level of a call and the rule that set it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutonomyLevel {
    /// 0…4.
    pub level: u8,
    /// `autonomy:<key>`, `autonomy:default`, or `reconciler:<name>:autonomy-cap` where an agent
    /// role's cap lowers it.
    pub rule: String,
    /// The veto window (level 3).
    pub veto_window: Duration,
    /// How long an approval waits (levels 1 and 2).
    pub approval_ttl: Duration,
}

/// Who decides a parked call (APR-8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FourEyes {
    /// The rule that keeps the requester from deciding it (`tool-policy:<key>` or
    /// `autonomy:<key>`), if one does.
    pub self_denied_by: Option<String>,
    /// How many distinct deciders approve it (at least 1).
    pub deciders: u8,
}

/// A counter a call must take one unit from (rate limits, write budgets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    /// Store key of the counter.
    pub key: String,
    /// Units per window.
    pub limit: u32,
    /// Window length.
    pub window: Duration,
    /// The rule that set it, for the denial.
    pub rule: String,
}

impl Policy {
    /// Compiles a policy from a validated configuration at a store revision.
    pub fn compile(config: Config, revision: u64) -> Self {
        let mut policy = Policy {
            revision,
            rbac: RbacBundle::compile(&config),
            ..Policy::default()
        };
        for located in config.resources() {
            let key = located.resource.key();
            match &located.resource {
                Resource::Project(p) => {
                    policy.projects.insert(p.name.clone(), p.clone());
                }
                Resource::Agent(a) => {
                    policy.agents.insert(a.name.clone(), a.clone());
                }
                Resource::Model(m) => {
                    policy.models.insert(m.name.clone(), m.clone());
                }
                Resource::ToolPolicy(t) => policy.tool_policies.push((key, t.clone())),
                Resource::Autonomy(a) => policy.autonomy.push((key, a.clone())),
                Resource::WriteBudget(w) => policy.budgets.push((key, w.clone())),
                Resource::KillSwitch(k) => policy.kill_switches.push((key, k.clone())),
                Resource::Issuer(i) => policy.issuers.push(i.clone()),
                _ => {}
            }
        }
        policy.config = Arc::new(config);
        policy
    }

    /// The review gate's numbers in `project` (WORK-2): its ReviewPolicy's, or the defaults.
    pub fn approvals(&self, project: &str) -> Approvals {
        match self.config.get(Kind::ReviewPolicy, project) {
            Some(Resource::ReviewPolicy(r)) => r.approvals,
            _ => Approvals::default(),
        }
    }

    /// The GitProvider `name` (WORK-3).
    pub fn git_provider(&self, name: &str) -> Option<&GitProviderSpec> {
        match self.config.get(Kind::GitProvider, name) {
            Some(Resource::GitProvider(g)) => Some(g),
            _ => None,
        }
    }

    /// Every project.
    pub fn projects(&self) -> &BTreeMap<Name, ProjectSpec> {
        &self.projects
    }

    /// One agent.
    pub fn agent(&self, name: &str) -> Option<&AgentSpec> {
        self.agents.get(name)
    }

    /// Every agent.
    pub fn agents(&self) -> &BTreeMap<Name, AgentSpec> {
        &self.agents
    }

    /// One Model (RUN-9).
    pub fn model(&self, name: &str) -> Option<&ModelSpec> {
        self.models.get(name)
    }

    /// The configured issuers of OAuth access tokens (AUTH-4).
    pub fn issuers(&self) -> &[IssuerSpec] {
        &self.issuers
    }

    /// The issuer whose tokens carry `iss` (compared without a trailing `/`).
    pub fn issuer(&self, iss: &str) -> Option<&IssuerSpec> {
        let iss = iss.trim_end_matches('/');
        self.issuers
            .iter()
            .find(|i| i.issuer.trim_end_matches('/') == iss)
    }

    /// Whether a user exists.
    pub fn has_user(&self, name: &str) -> bool {
        self.config.contains(Kind::User, name)
    }

    /// Whether a service account exists.
    pub fn has_service_account(&self, name: &str) -> bool {
        self.config.contains(Kind::ServiceAccount, name)
    }

    /// Whether the principal still exists in configuration.
    pub fn principal_exists(&self, principal: &Principal) -> bool {
        match principal {
            Principal::User { name } => self.has_user(name.as_str()),
            Principal::ServiceAccount { name } => self.has_service_account(name.as_str()),
            Principal::AgentRun { agent, .. } => self.agents.contains_key(agent),
            Principal::AgentRole { .. } => self.reconciler_of(principal).is_some(),
        }
    }

    /// The Reconciler `name` (WORK-4).
    pub fn reconciler(&self, name: &str) -> Option<&ReconcilerSpec> {
        match self.config.get(Kind::Reconciler, name) {
            Some(Resource::Reconciler(r)) => Some(r),
            _ => None,
        }
    }

    /// Every Reconciler.
    pub fn reconcilers(&self) -> impl Iterator<Item = &ReconcilerSpec> {
        self.config
            .of_kind(Kind::Reconciler)
            .filter_map(|r| match r {
                Resource::Reconciler(r) => Some(r),
                _ => None,
            })
    }

    /// The Reconciler an agent-role principal works for, while it exists with that role and
    /// the role exists: otherwise the principal is gone (its parked work is refused, APR-5).
    pub fn reconciler_of(&self, principal: &Principal) -> Option<&ReconcilerSpec> {
        let Principal::AgentRole { role, intent } = principal else {
            return None;
        };
        let r = self.reconciler(intent.strip_prefix(RECONCILER_INTENT)?)?;
        (r.role == *role && self.rbac.role(role.as_str()).is_some()).then_some(r)
    }

    /// Tool policies with their keys.
    pub fn tool_policies(&self) -> impl Iterator<Item = (&str, &ToolPolicySpec)> {
        self.tool_policies.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The first kill switch that freezes this call, if any (GOV-2 step 1).
    pub fn kill_switch_for(
        &self,
        actor: Actor<'_>,
        tool: &ToolDescriptor,
    ) -> Option<(&str, &KillSwitchSpec)> {
        self.kill_switches
            .iter()
            .find(|(_, k)| match &k.scope {
                KillScope::All(all) => *all,
                KillScope::Project(p) => tool.project.as_ref() == Some(p),
                KillScope::Agent(a) => actor.agent == Some(a),
                KillScope::Tool(pattern) => glob_match(pattern, &tool.name),
                KillScope::Principal(subject) => self.actor_covered(subject, actor),
            })
            .map(|(key, k)| (key.as_str(), k))
    }

    /// Whether a configuration subject denotes the principal (directly or by group).
    pub fn subject_covers(&self, subject: &Subject, principal: &Principal) -> bool {
        match (subject, principal) {
            (Subject::User(a), Principal::User { name }) => a == name,
            (Subject::ServiceAccount(a), Principal::ServiceAccount { name }) => a == name,
            (Subject::Agent(a), Principal::AgentRun { agent, .. }) => a == agent,
            (Subject::Group(g), Principal::User { name }) => {
                matches!(self.config.get(Kind::User, name.as_str()), Some(Resource::User(u)) if u.groups.contains(g))
            }
            _ => false,
        }
    }

    /// Whether a configuration subject denotes the actor: [`Self::subject_covers`], or one
    /// of the groups its credential asserts.
    fn actor_covered(&self, subject: &Subject, actor: Actor<'_>) -> bool {
        self.subject_covers(subject, actor.principal)
            || matches!((subject, actor.principal), (Subject::Group(g), Principal::User { .. }) if actor.groups.contains(g))
    }

    /// The Autonomies that apply to a call of `tool` by `actor`, with their keys.
    fn applicable_autonomy<'a>(
        &'a self,
        actor: Actor<'a>,
        tool: &'a ToolDescriptor,
    ) -> impl Iterator<Item = &'a (String, AutonomySpec)> {
        self.autonomy.iter().filter(move |(_, a)| match &a.subject {
            AutonomySubject::Agent(n) => actor.agent == Some(n),
            AutonomySubject::User(n) => {
                matches!(actor.principal, Principal::User { name } if name == n)
            }
            AutonomySubject::ServiceAccount(n) => {
                matches!(actor.principal, Principal::ServiceAccount { name } if name == n)
            }
            AutonomySubject::Project(p) => tool.project.as_ref() == Some(p),
            AutonomySubject::Intent(i) => actor.intent == Some(i.as_str()),
        })
    }

    /// Who decides a call of `tool` that `actor` parked (APR-8): whether a rule keeps the
    /// requester out (a ToolPolicy or any applicable Autonomy with `selfApproval: deny`), and
    /// how many distinct deciders approve it.
    pub fn four_eyes(&self, actor: Actor<'_>, tool: &ToolDescriptor) -> FourEyes {
        let tool_policy = tool
            .policy
            .as_deref()
            .and_then(|key| self.tool_policies.iter().find(|(k, _)| k == key));
        let from_tool = tool_policy
            .filter(|(_, t)| t.self_approval == Some(SelfApproval::Deny))
            .map(|(key, _)| format!("tool-policy:{key}"));
        let self_denied_by = from_tool.or_else(|| {
            self.applicable_autonomy(actor, tool)
                .find(|(_, a)| a.self_approval == Some(SelfApproval::Deny))
                .map(|(key, _)| format!("autonomy:{key}"))
        });
        FourEyes {
            self_denied_by,
            deciders: tool_policy
                .and_then(|(_, t)| t.approvals)
                .unwrap_or(1)
                .max(1),
        }
    }

    /// The most restrictive autonomy level applicable to a call (APR-1), L2 when none.
    pub fn autonomy_for(&self, actor: Actor<'_>, tool: &ToolDescriptor) -> AutonomyLevel {
        let configured = self
            .applicable_autonomy(actor, tool)
            .min_by_key(|(_, a)| a.level)
            .map(|(key, a)| AutonomyLevel {
                level: a.level,
                rule: format!("autonomy:{key}"),
                veto_window: a.veto_window.unwrap_or(DEFAULT_VETO_WINDOW),
                approval_ttl: a.approval_ttl.unwrap_or(DEFAULT_APPROVAL_TTL),
            })
            .unwrap_or(AutonomyLevel {
                level: DEFAULT_AUTONOMY_LEVEL,
                rule: "autonomy:default".into(),
                veto_window: DEFAULT_VETO_WINDOW,
                approval_ttl: DEFAULT_APPROVAL_TTL,
            });
        // An agent role's intent caps it (WORK-4): never above its cap. A cap of 0 parks like
        // 1: what an agent role asks for reaches a human rather than vanishing into shadow (an
        // Autonomy at level 0 naming its intent still shadows it).
        match (actor.autonomy_cap.map(|c| c.max(1)), actor.intent) {
            (Some(cap), Some(intent)) if cap < configured.level => AutonomyLevel {
                level: cap,
                rule: format!("{intent}:autonomy-cap"),
                ..configured
            },
            _ => configured,
        }
    }

    /// The write budgets a mutation by this run must fit in (GOV-2 step 6).
    pub fn write_budgets_for(&self, actor: Actor<'_>, run_id: &str) -> Vec<CounterSpec> {
        self.budgets
            .iter()
            .filter(|(_, b)| match &b.subject {
                BudgetSubject::All(all) => *all,
                BudgetSubject::Agent(n) => actor.agent == Some(n),
                BudgetSubject::User(n) => {
                    matches!(actor.principal, Principal::User { name } if name == n)
                }
                BudgetSubject::ServiceAccount(n) => {
                    matches!(actor.principal, Principal::ServiceAccount { name } if name == n)
                }
            })
            .map(|(key, b)| CounterSpec {
                key: match b.per {
                    BudgetPer::Subject => format!("budget:{key}"),
                    BudgetPer::Run => format!("budget:{key}:run:{run_id}"),
                },
                limit: b.max_writes_per_minute,
                window: Duration::from_secs(60),
                rule: format!("write-budget:{key}"),
            })
            .collect()
    }

    /// The rate limit of a tool, if any (GOV-2 step 5).
    pub fn rate_limit_for(&self, tool: &ToolDescriptor) -> Option<CounterSpec> {
        tool.rate_limit_per_minute.map(|limit| CounterSpec {
            key: format!("rate:{}", tool.name),
            limit,
            window: Duration::from_secs(60),
            rule: format!(
                "tool-policy:{}:rate-limit",
                tool.policy.as_deref().unwrap_or(&tool.name)
            ),
        })
    }

    /// Capabilities an agent's unattended runs hold: its role bindings plus
    /// `run:projects:<p>` for each membership (RUN-2 `agent` mode).
    pub fn agent_run_capabilities(
        &self,
        agent: &AgentSpec,
        principal: &Principal,
    ) -> crate::capability::CapabilitySet {
        let mut caps = self.rbac.capabilities(principal);
        caps.extend(&crate::capability::CapabilitySet::from_patterns(
            agent.memberships.iter().map(Capability::run_project),
        ));
        caps
    }
}
