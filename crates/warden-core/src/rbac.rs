//! The RBAC bundle: roles and bindings compiled into an immutable value.
//!
//! Capabilities come from the bundle, never from role-name strings. A new bundle is compiled
//! whenever configuration changes and swapped in atomically by the server.

use std::collections::HashMap;

use crate::capability::{Capability, CapabilitySet};
use crate::config::{BUILTIN_ADMIN_ROLE, Config, Kind, Resource};
use crate::name::Name;
use crate::principal::{Principal, Subject};

/// One role granted to a subject, kept to explain decisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleGrant {
    /// The role's name.
    pub role: Name,
    /// The subject the binding names (the user, or one of the user's groups, …); none for an
    /// agent role, which holds its role without a binding.
    pub via: Option<Subject>,
}

/// Roles and bindings compiled for lookup by principal.
#[derive(Clone, Debug, Default)]
pub struct RbacBundle {
    roles: HashMap<Name, CapabilitySet>,
    bindings: HashMap<Subject, Vec<Name>>,
    groups: HashMap<Name, Vec<Name>>,
}

impl RbacBundle {
    /// Compiles the bundle from a validated configuration.
    pub fn compile(config: &Config) -> Self {
        let mut roles = HashMap::new();
        roles.insert(
            Name::from_static(BUILTIN_ADMIN_ROLE),
            CapabilitySet::from_patterns([Capability::new("*")]),
        );
        for r in config.of_kind(Kind::Role) {
            if let Resource::Role(role) = r {
                roles.insert(
                    role.name.clone(),
                    CapabilitySet::from_patterns(role.permissions.iter().map(Capability::new)),
                );
            }
        }
        let mut bindings: HashMap<Subject, Vec<Name>> = HashMap::new();
        for r in config.of_kind(Kind::RoleBinding) {
            if let Resource::RoleBinding(b) = r {
                bindings
                    .entry(b.subject.clone())
                    .or_default()
                    .push(b.role.clone());
            }
        }
        let mut groups = HashMap::new();
        for r in config.of_kind(Kind::User) {
            if let Resource::User(u) = r {
                groups.insert(u.name.clone(), u.groups.clone());
            }
        }
        Self {
            roles,
            bindings,
            groups,
        }
    }

    /// The roles granted to a principal directly, through the groups configuration gives it,
    /// or through `asserted` groups its credential carries (a JWT's groups claim, AUTH-4).
    /// Only users have groups.
    pub fn role_grants_with(&self, principal: &Principal, asserted: &[Name]) -> Vec<RoleGrant> {
        let subject = match principal {
            Principal::AgentRole { role, .. } => {
                return vec![RoleGrant {
                    role: role.clone(),
                    via: None,
                }];
            }
            other => other.subject(),
        };
        let mut subjects: Vec<Subject> = subject.into_iter().collect();
        if let Principal::User { name } = principal {
            for g in self.groups.get(name).into_iter().flatten().chain(asserted) {
                let group = Subject::Group(g.clone());
                if !subjects.contains(&group) {
                    subjects.push(group);
                }
            }
        }
        let mut out = Vec::new();
        for s in subjects {
            for role in self.bindings.get(&s).into_iter().flatten() {
                out.push(RoleGrant {
                    role: role.clone(),
                    via: Some(s.clone()),
                });
            }
        }
        out
    }

    /// Every capability pattern the principal holds through its roles.
    pub fn capabilities(&self, principal: &Principal) -> CapabilitySet {
        self.capabilities_with(principal, &[])
    }

    /// [`Self::capabilities`], with groups the credential asserts ([`Self::role_grants_with`]).
    pub fn capabilities_with(&self, principal: &Principal, asserted: &[Name]) -> CapabilitySet {
        let mut set = CapabilitySet::empty();
        for g in self.role_grants_with(principal, asserted) {
            if let Some(caps) = self.roles.get(&g.role) {
                set.extend(caps);
            }
        }
        set
    }

    /// Explains why `principal` holds `cap`: the first role (and binding subject) granting it.
    pub fn explain(&self, principal: &Principal, cap: &str) -> Option<String> {
        self.explain_with(principal, &[], cap)
    }

    /// [`Self::explain`], with groups the credential asserts ([`Self::role_grants_with`]).
    pub fn explain_with(
        &self,
        principal: &Principal,
        asserted: &[Name],
        cap: &str,
    ) -> Option<String> {
        self.role_grants_with(principal, asserted)
            .into_iter()
            .find_map(|g| {
                let pattern = self.roles.get(&g.role)?.matching(cap)?;
                Some(match &g.via {
                    Some(via) => format!("role `{}` (bound to {via}) grants `{pattern}`", g.role),
                    None => format!("role `{}` (the agent role's) grants `{pattern}`", g.role),
                })
            })
    }

    /// The patterns of one role.
    pub fn role(&self, name: &str) -> Option<&CapabilitySet> {
        self.roles.get(name)
    }
}
