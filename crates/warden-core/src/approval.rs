//! Approvals and staged actions (APR-1..APR-5): what the pipeline parks at step 7, and how a
//! parked action's requester is resolved again when it is decided or runs.

use std::fmt;
use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::authority::{Authority, resolve};
use crate::decision::{Denial, DenyCode};
use crate::error::EnvError;
use crate::name::Name;
use crate::policy::Policy;
use crate::principal::{
    Credential, CredentialKind, JWT_CREDENTIAL_PREFIX, Principal, PrincipalRef, Provenance,
    jwt_issuer,
};
use crate::time::Millis;

/// What kind of parked action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    /// Waits for a human decision (L1, dangerous at L2).
    Approval,
    /// Runs after a veto window unless vetoed (dangerous at L3).
    Staged,
}

impl ApprovalKind {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalKind::Approval => "approval",
            ApprovalKind::Staged => "staged",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        [ApprovalKind::Approval, ApprovalKind::Staged]
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    /// The status a parked action of this kind starts in.
    pub fn initial_status(self) -> ApprovalStatus {
        match self {
            ApprovalKind::Approval => ApprovalStatus::Pending,
            ApprovalKind::Staged => ApprovalStatus::Staged,
        }
    }
}

impl fmt::Display for ApprovalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a parked action stands. It moves forward only, each step taken by exactly one
/// writer (APR-6):
///
/// ```text
/// approval: pending ─► approved ─► executing ─► executed | failed
///           pending ─► rejected | expired;      approved ─► failed
/// staged:   staged ─► executing ─► executed | failed;       staged ─► vetoed
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a decision.
    Pending,
    /// Approved, not yet executing.
    Approved,
    /// Rejected by a decider.
    Rejected,
    /// Expired undecided.
    Expired,
    /// Staged: runs when its veto window ends.
    Staged,
    /// Vetoed before its window ended.
    Vetoed,
    /// Claimed for execution.
    Executing,
    /// Executed.
    Executed,
    /// Refused or failed at execution time.
    Failed,
}

impl ApprovalStatus {
    /// Every status.
    pub const ALL: [ApprovalStatus; 9] = [
        ApprovalStatus::Pending,
        ApprovalStatus::Approved,
        ApprovalStatus::Rejected,
        ApprovalStatus::Expired,
        ApprovalStatus::Staged,
        ApprovalStatus::Vetoed,
        ApprovalStatus::Executing,
        ApprovalStatus::Executed,
        ApprovalStatus::Failed,
    ];

    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::Expired => "expired",
            ApprovalStatus::Staged => "staged",
            ApprovalStatus::Vetoed => "vetoed",
            ApprovalStatus::Executing => "executing",
            ApprovalStatus::Executed => "executed",
            ApprovalStatus::Failed => "failed",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call parked at step 7, bound to its run, principal, tool, canonical-argument hash,
/// policy version and expiry (APR-2).
#[derive(Clone, Debug, PartialEq)]
pub struct Parked {
    /// Approval or staged.
    pub kind: ApprovalKind,
    /// The run.
    pub run_id: String,
    /// The call within the run.
    pub call_id: String,
    /// The tool (catalog name).
    pub tool: String,
    /// The tool's project.
    pub project: Option<Name>,
    /// The arguments, kept to execute the exact call later.
    pub args: Option<Map<String, Value>>,
    /// SHA-256 of their canonical form.
    pub args_hash: String,
    /// Who asked, by reference (APR-3).
    pub requested_by: Provenance,
    /// The principal, for display.
    pub principal: String,
    /// The agent of the run.
    pub agent: Option<String>,
    /// The policy version in force.
    pub policy_revision: u64,
    /// When parked.
    pub created_at: Millis,
    /// Approvals: when they expire undecided. Staged: when they execute.
    pub due_at: Millis,
    /// The rule that parked it.
    pub rule: String,
    /// Who decides it (APR-8), as the policy in force said when it was parked.
    pub four_eyes: crate::policy::FourEyes,
}

/// Where parked calls go (the store).
pub trait ApprovalQueue: Send + Sync {
    /// Records a parked call durably; returns its id (`apr_…`).
    fn park(&self, parked: &Parked) -> impl Future<Output = Result<String, EnvError>> + Send;
}

/// The reference recorded for the requester of a call (APR-3): never a snapshot of
/// capabilities.
pub fn provenance_of(authority: &Authority) -> Provenance {
    match (&authority.principal, &authority.credential_id) {
        (Principal::AgentRole { role, intent }, _) => Provenance::AgentRole {
            role: role.clone(),
            intent_id: intent.clone(),
            autonomy_cap: authority
                .autonomy_cap
                .unwrap_or(crate::policy::DEFAULT_AUTONOMY_LEVEL),
        },
        (Principal::AgentRun { agent, run }, _) => Provenance::AgentRole {
            role: agent.clone(),
            intent_id: run.clone(),
            autonomy_cap: crate::policy::DEFAULT_AUTONOMY_LEVEL,
        },
        (owner, Some(id)) if id.starts_with(JWT_CREDENTIAL_PREFIX) => Provenance::Principal {
            reference: PrincipalRef::Jwt {
                id: id.clone(),
                owner: owner.clone(),
                scopes: authority.grant.ceiling.clone(),
                groups: authority.groups.clone(),
                expires_at: authority.expires_at,
            },
        },
        (owner, Some(id)) => Provenance::Principal {
            reference: PrincipalRef::ApiKey {
                id: id.clone(),
                owner: owner.clone(),
            },
        },
        (Principal::User { name }, None) => Provenance::Principal {
            reference: PrincipalRef::User { name: name.clone() },
        },
        (Principal::ServiceAccount { name }, None) => Provenance::Principal {
            reference: PrincipalRef::ServiceAccount { name: name.clone() },
        },
    }
}

/// Resolves the requester of a parked call again, now (APR-3, APR-5): its authority as it
/// stands at decision or execution time, or the denial that refuses the action. Never falls
/// back to the decider's authority alone.
pub fn resolve_requester(
    policy: &Policy,
    requested_by: Option<&str>,
    agent: Option<&str>,
    credential: impl Fn(&str) -> Option<Credential>,
    now: Millis,
) -> Result<Authority, Denial> {
    let Some(raw) = requested_by.filter(|r| !r.trim().is_empty() && r.trim() != "null") else {
        return Err(Denial::new(
            DenyCode::ApprovalProvenanceMissing,
            "provenance:missing",
            "the approval does not say who asked for it; it is refused",
        ));
    };
    let provenance: Provenance = serde_json::from_str(raw).map_err(|e| {
        Denial::new(
            DenyCode::ApprovalProvenanceInvalid,
            "provenance:invalid",
            format!("the approval's requester reference cannot be read ({e}); it is refused"),
        )
    })?;
    let failed = |why: String| {
        Denial::new(
            DenyCode::RequesterResolutionFailed,
            "provenance:unresolved",
            why,
        )
    };
    match provenance {
        Provenance::Principal { reference } => {
            let credential = match reference {
                PrincipalRef::ApiKey { id, owner } => {
                    let c = credential(&id).ok_or_else(|| {
                        Denial::new(
                            DenyCode::RequesterRevoked,
                            "provenance:credential-gone",
                            format!("the requester's credential `{id}` no longer exists"),
                        )
                    })?;
                    if c.principal != owner {
                        return Err(Denial::new(
                            DenyCode::ApprovalProvenanceInvalid,
                            "provenance:owner-mismatch",
                            "the approval's requester does not match its credential",
                        ));
                    }
                    c.check_usable(now).map_err(|e| {
                        Denial::new(
                            DenyCode::RequesterRevoked,
                            "provenance:credential-unusable",
                            format!("the requester's credential `{id}` is not usable: {e}"),
                        )
                    })?;
                    c
                }
                PrincipalRef::Jwt {
                    id,
                    owner,
                    scopes,
                    groups,
                    expires_at,
                } => {
                    let issuer = jwt_issuer(&id).unwrap_or_default();
                    if !policy.issuers().iter().any(|i| i.name.as_str() == issuer) {
                        return Err(Denial::new(
                            DenyCode::RequesterRevoked,
                            "provenance:issuer-gone",
                            format!("the requester's issuer `{issuer}` is no longer configured"),
                        ));
                    }
                    let c = Credential {
                        id,
                        kind: CredentialKind::Jwt,
                        scopes,
                        groups,
                        expires_at,
                        ..Credential::synthetic("requester", owner)
                    };
                    c.check_usable(now).map_err(|e| {
                        Denial::new(
                            DenyCode::RequesterRevoked,
                            "provenance:credential-unusable",
                            format!("the requester's access token is not usable: {e}"),
                        )
                    })?;
                    c
                }
                PrincipalRef::User { name } => {
                    Credential::synthetic("requester", Principal::User { name })
                }
                PrincipalRef::ServiceAccount { name } => {
                    Credential::synthetic("requester", Principal::ServiceAccount { name })
                }
            };
            if !policy.principal_exists(&credential.principal) {
                return Err(Denial::new(
                    DenyCode::RequesterRevoked,
                    "provenance:principal-gone",
                    format!("the requester {} no longer exists", credential.principal),
                ));
            }
            resolve(policy, &credential, agent)
                .map_err(|e| failed(format!("the requester's authority cannot be resolved: {e}")))
        }
        Provenance::AgentRole {
            role, intent_id, ..
        } if intent_id.starts_with(crate::config::RECONCILER_INTENT) => {
            // A reconciler's work: its reconciler and role must still exist and agree.
            let principal = Principal::AgentRole {
                role: role.clone(),
                intent: intent_id.clone(),
            };
            if !policy.principal_exists(&principal) {
                return Err(Denial::new(
                    DenyCode::RequesterRoleUnavailable,
                    "provenance:role-gone",
                    format!(
                        "the requesting agent role `{role}` of `{intent_id}` no longer exists: its reconciler or role was removed or changed"
                    ),
                ));
            }
            let credential = Credential::synthetic("requester", principal);
            resolve(policy, &credential, None).map_err(|e| {
                failed(format!(
                    "the agent role's authority cannot be resolved: {e}"
                ))
            })
        }
        Provenance::AgentRole {
            role, intent_id, ..
        } => {
            if policy.agent(role.as_str()).is_none() {
                return Err(Denial::new(
                    DenyCode::RequesterRoleUnavailable,
                    "provenance:role-gone",
                    format!("the requesting agent role `{role}` no longer exists"),
                ));
            }
            let credential = Credential::synthetic(
                "requester",
                Principal::AgentRun {
                    agent: role.clone(),
                    run: intent_id,
                },
            );
            resolve(policy, &credential, Some(role.as_str())).map_err(|e| {
                failed(format!(
                    "the agent role's authority cannot be resolved: {e}"
                ))
            })
        }
    }
}
