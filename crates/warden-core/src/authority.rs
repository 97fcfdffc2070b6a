//! Run authority (RUN-2): the mode, the effective tool scope and the capabilities of a run,
//! derived from the verified credential alone — never from a request field.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::capability::{Capability, Grant, RUN_PROJECTS};
use crate::name::Name;
use crate::policy::{Actor, Policy};
use crate::principal::{Credential, Principal};

/// How a run's authority was derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// A user's token: agent memberships ∩ the caller's `run:projects` (∩ token ceiling).
    Caller,
    /// A run credential minted by Warden: exactly the agent's memberships.
    Agent,
    /// A service account credential: exactly the account's own bindings.
    ServiceAccount,
    /// An agent role's in-process work (a Reconciler's, WORK-4): exactly its role's
    /// capabilities, in its project only, at most at its autonomy cap.
    AgentRole,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Caller => "caller",
            Mode::Agent => "agent",
            Mode::ServiceAccount => "service-account",
            Mode::AgentRole => "agent-role",
        })
    }
}

/// The authority of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Authority {
    /// The mode.
    pub mode: Mode,
    /// Who acts.
    pub principal: Principal,
    /// Groups the credential asserts for the principal (a JWT's groups claim, AUTH-4), on
    /// top of those configuration gives it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Name>,
    /// The credential's public id.
    pub credential_id: Option<String>,
    /// When the credential expires, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<crate::time::Millis>,
    /// The agent run, if this is a run of an agent.
    pub agent: Option<Name>,
    /// The intent served, for agent-role work.
    pub intent: Option<String>,
    /// The highest autonomy level its mutations run at (APR-1): an agent role's intent's cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomy_cap: Option<u8>,
    /// Capabilities: the owner's grant narrowed by the credential's scopes.
    pub grant: Grant,
    /// Projects whose tools the run may see and call, each with the reason.
    pub projects: BTreeMap<Name, String>,
    /// Projects whose knowledge the run carries (RUN-1).
    pub knowledge: BTreeSet<Name>,
    /// Knowledge projects whose tools the run may not call, each with the reason (RUN-5).
    pub knowledge_only: BTreeMap<Name, String>,
    /// When set, the run gets knowledge and no tools at all (RUN-4), for this reason.
    pub withheld: Option<String>,
    /// For an approved action: the decider's grant. A capability is held only when both the
    /// requester's grant and this one hold it (APR-4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosigner: Option<Grant>,
}

/// Why no authority could be resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthorityError {
    /// The requested agent does not exist (or is not visible).
    #[error("no agent named `{0}`")]
    UnknownAgent(String),
    /// The credential's owner no longer exists in configuration.
    #[error("the credential's owner no longer exists")]
    OwnerGone,
    /// A run credential used for another agent than the one it was minted for.
    #[error("this run credential belongs to agent `{0}`")]
    WrongAgent(String),
}

impl Authority {
    /// Whether its credential is an access token of issuer `issuer` (AUTH-4): the only
    /// caller an upstream acting as its caller (AUTH-6) acts for.
    pub fn authenticated_by(&self, issuer: &str) -> bool {
        self.credential_id
            .as_deref()
            .and_then(crate::principal::jwt_issuer)
            == Some(issuer)
    }

    /// The capabilities this run holds, as patterns: the grant's (`owner ∩ scopes`, see
    /// [`Grant::effective`]) with its `run:projects:…` patterns replaced by the projects whose
    /// tools the run may use — so a token bound to one project shows that project only, never
    /// its owner's others.
    pub fn effective_capabilities(&self) -> Vec<Capability> {
        let mut held: Vec<Capability> = self
            .grant
            .effective()
            .into_iter()
            .filter(|c| !c.as_str().starts_with(RUN_PROJECTS))
            .collect();
        held.extend(self.projects.keys().map(Capability::run_project));
        held.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        held
    }

    /// Who this run acts as, for matching the policy's subjects.
    pub fn actor(&self) -> Actor<'_> {
        Actor {
            principal: &self.principal,
            groups: &self.groups,
            agent: self.agent.as_ref(),
            intent: self.intent.as_deref(),
            autonomy_cap: self.autonomy_cap,
        }
    }

    /// Whether the run holds the concrete capability `cap`.
    pub fn holds(&self, cap: &str) -> bool {
        self.withheld.is_none()
            && self.grant.holds(cap)
            && self.cosigner.as_ref().is_none_or(|c| c.holds(cap))
    }

    /// The authority an approved action executes with (APR-4): the requester's, narrowed to
    /// what the decider holds too — projects in both, capabilities held by both. The
    /// requester's own limits (token bindings, argument ceilings) stay as they are.
    pub fn intersect(&self, decider: &Authority) -> Authority {
        let mut out = self.clone();
        out.projects = self
            .projects
            .iter()
            .filter(|(p, _)| decider.projects.contains_key(*p))
            .map(|(p, why)| (p.clone(), why.clone()))
            .collect();
        for (p, _) in self
            .projects
            .iter()
            .filter(|(p, _)| !decider.projects.contains_key(*p))
        {
            out.knowledge_only.insert(
                p.clone(),
                format!("the decider {} has no authority over it", decider.principal),
            );
        }
        out.cosigner = Some(decider.grant.clone());
        if out.withheld.is_none() {
            out.withheld.clone_from(&decider.withheld);
        }
        out
    }

    /// An authority that carries knowledge and no tools (RUN-4 fail closed).
    pub fn withhold(mut self, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        for (p, _) in std::mem::take(&mut self.projects) {
            self.knowledge_only.insert(p, reason.clone());
        }
        self.grant = Grant::default();
        self.withheld = Some(reason);
        self
    }
}

impl crate::conditions::Holds for Authority {
    fn holds(&self, cap: &str) -> bool {
        Authority::holds(self, cap)
    }
}

/// Resolves the authority of a run from a verified credential and, for `/mcp/agents/{agent}`,
/// the agent. Credential validity (expiry, revocation) is checked by the caller.
pub fn resolve(
    policy: &Policy,
    credential: &Credential,
    agent: Option<&str>,
) -> Result<Authority, AuthorityError> {
    if !policy.principal_exists(&credential.principal) {
        return Err(AuthorityError::OwnerGone);
    }
    let agent_spec = match agent {
        Some(a) => Some(
            policy
                .agent(a)
                .ok_or_else(|| AuthorityError::UnknownAgent(a.to_owned()))?,
        ),
        None => None,
    };
    let all_projects: Vec<&Name> = policy.projects().keys().collect();

    let (mode, run_agent) = match &credential.principal {
        Principal::AgentRun { agent: own, .. } => {
            if agent_spec.is_some_and(|a| &a.name != own) {
                return Err(AuthorityError::WrongAgent(own.to_string()));
            }
            (Mode::Agent, Some(own.clone()))
        }
        Principal::User { .. } => (Mode::Caller, agent_spec.map(|a| a.name.clone())),
        Principal::ServiceAccount { .. } => {
            (Mode::ServiceAccount, agent_spec.map(|a| a.name.clone()))
        }
        Principal::AgentRole { .. } => (Mode::AgentRole, None),
    };
    // An agent role works in its reconciler's project only, at most at its cap.
    let reconciler = policy.reconciler_of(&credential.principal);
    let agent_spec = match &run_agent {
        Some(a) => Some(
            policy
                .agent(a.as_str())
                .ok_or_else(|| AuthorityError::UnknownAgent(a.to_string()))?,
        ),
        None => None,
    };

    let owner = match (mode, agent_spec) {
        (Mode::Agent, Some(spec)) => policy.agent_run_capabilities(spec, &credential.principal),
        _ => policy
            .rbac
            .capabilities_with(&credential.principal, &credential.groups),
    };
    let grant = Grant {
        owner,
        ceiling: credential.scopes.clone(),
    };

    // Projects the credential's owner may run, within the token ceiling (AUTH-2, RUN-3).
    let mut owner_projects = BTreeMap::new();
    let mut refused = BTreeMap::new();
    for p in &all_projects {
        let cap = Capability::run_project(p);
        if !grant.owner.allows(cap.as_str()) {
            refused.insert(
                (*p).clone(),
                format!("{} does not hold `{cap}`", credential.principal),
            );
            continue;
        }
        if !grant.holds(cap.as_str()) {
            refused.insert(
                (*p).clone(),
                format!("the credential's scopes exclude `{cap}`"),
            );
            continue;
        }
        if let Some(bound) = &credential.projects
            && !bound.contains(*p)
        {
            refused.insert(
                (*p).clone(),
                "the credential is not bound to this project".to_owned(),
            );
            continue;
        }
        let why = match mode {
            Mode::Agent => format!(
                "agent `{}` is a member",
                run_agent.as_ref().map(Name::as_str).unwrap_or_default()
            ),
            _ => policy
                .rbac
                .explain_with(&credential.principal, &credential.groups, cap.as_str())
                .unwrap_or_else(|| format!("granted `{cap}`")),
        };
        owner_projects.insert((*p).clone(), why);
    }

    if let Some(r) = reconciler {
        owner_projects.retain(|p, _| *p == r.project);
    }
    let (projects, knowledge, knowledge_only) = match agent_spec {
        None => {
            let knowledge = owner_projects.keys().cloned().collect();
            (owner_projects, knowledge, BTreeMap::new())
        }
        Some(spec) => {
            let members: BTreeSet<Name> = spec.memberships.iter().cloned().collect();
            let projects: BTreeMap<Name, String> = match mode {
                // Exactly the service account's own bindings (RUN-2), whatever the agent.
                Mode::ServiceAccount => owner_projects,
                // An agent run's reason already is the membership; a caller's says both.
                Mode::Agent => owner_projects
                    .into_iter()
                    .filter(|(p, _)| members.contains(p))
                    .collect(),
                Mode::Caller | Mode::AgentRole => owner_projects
                    .into_iter()
                    .filter(|(p, _)| members.contains(p))
                    .map(|(p, why)| {
                        let why = format!("agent `{}` is a member and {why}", spec.name);
                        (p, why)
                    })
                    .collect(),
            };
            let knowledge_only = members
                .iter()
                .filter(|p| !projects.contains_key(*p))
                .map(|p| {
                    let why = refused
                        .get(p)
                        .cloned()
                        .unwrap_or_else(|| "outside this run's authority".to_owned());
                    (p.clone(), why)
                })
                .collect();
            (projects, members, knowledge_only)
        }
    };

    Ok(Authority {
        mode,
        principal: credential.principal.clone(),
        groups: credential.groups.clone(),
        credential_id: Some(credential.id.clone()),
        expires_at: credential.expires_at,
        agent: run_agent,
        intent: reconciler.map(|r| r.intent()),
        autonomy_cap: reconciler.map(|r| r.autonomy_cap),
        grant,
        projects,
        knowledge,
        knowledge_only,
        withheld: None,
        cosigner: None,
    })
}
