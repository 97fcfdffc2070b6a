//! Capabilities: permission strings such as `run:projects:payments` or `ledger:write`.
//!
//! Roles grant capability *patterns* (`run:projects:*`, `*`); a run *holds* a concrete
//! capability when a pattern of its grant matches it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::name::{Name, glob_match};

/// The capability prefix that lets a principal run tools of a project.
pub const RUN_PROJECTS: &str = "run:projects:";

/// The capability needed to decide approvals (APR-4).
pub const APPROVALS_DECIDE: &str = "approvals:decide";
/// Reading every approval, not only one's own.
pub const APPROVALS_READ: &str = "approvals:read";

/// Reading configuration resources of every kind, kill switches and agents included.
pub const CONFIG_READ: &str = "config:read";
/// Applying and deleting configuration resources.
pub const CONFIG_WRITE: &str = "config:write";
/// Pulling and releasing kill switches.
pub const KILLSWITCHES_WRITE: &str = "killswitches:write";

/// Listing tokens (never their secrets).
pub const TOKENS_READ: &str = "tokens:read";
/// Creating and revoking tokens of one's own principal (AUTH-2).
pub const TOKENS_WRITE: &str = "tokens:write";
/// Creating and revoking tokens of any principal (AUTH-2). Granted only by name or by `*`.
pub const TOKENS_ANY: &str = "tokens:any";

/// Reading, exporting and verifying the audit trail (AUD-4).
pub const AUDIT_READ: &str = "audit:read";
/// Archiving the audit trail: exporting the records before a time, then removing them from
/// the store (AUD-6).
pub const AUDIT_ARCHIVE: &str = "audit:archive";
/// Reading runs and their calls, unattended agent runs included.
pub const RUNS_READ: &str = "runs:read";
/// Starting agent runs by hand.
pub const AGENTS_RUN: &str = "agents:run";
/// Explaining calls of other principals, with the rules of hidden tools (GOV-7).
pub const EXPLAIN_ANY: &str = "explain:any";
/// Reading the tool inventory (GOV-5).
pub const TOOLS_INVENTORY: &str = "tools:inventory";
/// Reviewing changed tool definitions: accepting or rejecting them (GOV-9; in the upstream's
/// project).
pub const TOOLS_REVIEW: &str = "tools:review";
/// Reading the tasks of a workspace (per workspace, with the project's tools).
pub const TASKS_READ: &str = "tasks:read";
/// Creating tasks (per workspace, with the project's tools; TASK-2).
pub const TASKS_CREATE: &str = "tasks:create";
/// Reading the epics of a project and their tasks (WORK-1; in the epic's project).
pub const WORK_READ: &str = "work:read";
/// Creating and changing epics and their tasks, and moving them (WORK-1; in the project).
pub const WORK_WRITE: &str = "work:write";
/// Reviewing an epic task (WORK-2; in the project).
pub const WORK_REVIEW: &str = "work:review";
/// Accepting a reviewed epic task, which merges it (WORK-2; in the project).
pub const WORK_ACCEPT: &str = "work:accept";
/// The review a `critical` epic's tasks need one of (WORK-2).
pub const WORK_ACCEPT_CRITICAL: &str = "work:accept-critical";

/// Capabilities that let a principal act as another one. A pattern grants one of these only
/// when it names it exactly or is the whole `*`: `tokens:*` reads as "everything about my own
/// tokens", and a role written before such a capability existed must not gain it silently.
const NAMED_ONLY: &[&str] = &[TOKENS_ANY];

/// A capability or capability pattern (`*` matches any run of characters).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Capability(String);

impl Capability {
    /// Wraps a capability string. Validation of user input happens in the configuration
    /// layer ([`crate::config`]).
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// `run:projects:<project>`.
    pub fn run_project(project: &Name) -> Self {
        Self(format!("{RUN_PROJECTS}{project}"))
    }

    /// The capability string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this pattern matches the concrete capability `cap`. A capability that lets a
    /// principal act as another (`tokens:any`) is matched only by its own name or by `*`.
    pub fn matches(&self, cap: &str) -> bool {
        if NAMED_ONLY.contains(&cap) {
            return self.0 == cap || self.0 == "*";
        }
        glob_match(&self.0, cap)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// Checks that a capability string is well-formed: non-empty segments of lowercase letters,
/// digits, `-`, `_`, `.` or `*`, separated by `:`.
pub fn validate_capability(value: &str) -> Result<(), String> {
    if value == "*" {
        return Ok(());
    }
    if value.is_empty() {
        return Err("a capability cannot be empty".into());
    }
    for segment in value.split(':') {
        if segment.is_empty() {
            return Err(format!("`{value}` has an empty segment"));
        }
        let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.*".contains(c);
        if !segment.chars().all(ok) {
            return Err(format!(
                "`{value}` may only contain lowercase letters, digits, `-`, `_`, `.`, `*` and `:`"
            ));
        }
    }
    Ok(())
}

/// A set of capability patterns: what a principal, a role or a token scope grants.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CapabilitySet(Vec<Capability>);

impl CapabilitySet {
    /// An empty set: grants nothing.
    pub fn empty() -> Self {
        Self(Vec::new())
    }

    /// Builds a set, dropping duplicates and keeping a stable order.
    pub fn from_patterns(patterns: impl IntoIterator<Item = Capability>) -> Self {
        let mut v: Vec<Capability> = patterns.into_iter().collect();
        v.sort();
        v.dedup();
        Self(v)
    }

    /// Whether any pattern of the set matches `cap`.
    pub fn allows(&self, cap: &str) -> bool {
        self.0.iter().any(|p| p.matches(cap))
    }

    /// The first pattern that matches `cap`, to explain a decision.
    pub fn matching(&self, cap: &str) -> Option<&Capability> {
        self.0.iter().find(|p| p.matches(cap))
    }

    /// The patterns, sorted.
    pub fn patterns(&self) -> &[Capability] {
        &self.0
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds the patterns of `other`.
    pub fn extend(&mut self, other: &CapabilitySet) {
        self.0.extend(other.0.iter().cloned());
        self.0.sort();
        self.0.dedup();
    }
}

impl fmt::Debug for CapabilitySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0).finish()
    }
}

/// A grant narrowed by an optional ceiling: a capability is held when the grant allows it
/// *and* the ceiling (a token's scopes), if any, allows it too (AUTH-2: `owner ∩ scopes`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// What the principal holds through its role bindings.
    pub owner: CapabilitySet,
    /// The credential's scopes; `None` means "all of the owner's capabilities".
    pub ceiling: Option<CapabilitySet>,
}

impl Grant {
    /// Whether the concrete capability `cap` is held.
    pub fn holds(&self, cap: &str) -> bool {
        self.owner.allows(cap) && self.ceiling.as_ref().is_none_or(|c| c.allows(cap))
    }

    /// The patterns held, `owner ∩ ceiling` as patterns: of an owner pattern and a scope
    /// pattern where one covers the other, the narrower one. Two patterns that overlap without
    /// either covering the other (`a:*:x` and `a:y:*`) give nothing: what is listed is held,
    /// never more.
    pub fn effective(&self) -> Vec<Capability> {
        let Some(ceiling) = &self.ceiling else {
            return self.owner.patterns().to_vec();
        };
        let mut held: Vec<Capability> = Vec::new();
        for owned in self.owner.patterns() {
            for scope in ceiling.patterns() {
                let narrower = if owned.matches(scope.as_str()) {
                    scope
                } else if scope.matches(owned.as_str()) {
                    owned
                } else {
                    continue;
                };
                if !held.contains(narrower) {
                    held.push(narrower.clone());
                }
            }
        }
        held.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(p: &[&str]) -> CapabilitySet {
        CapabilitySet::from_patterns(p.iter().map(|s| Capability::new(*s)))
    }

    #[test]
    fn tokens_any_is_granted_by_its_name_or_by_star_never_by_a_narrower_glob() {
        for (pattern, held) in [
            ("*", true),
            ("tokens:any", true),
            ("tokens:*", false),
            ("tok*", false),
            ("*:any", false),
        ] {
            assert_eq!(
                Capability::new(pattern).matches(TOKENS_ANY),
                held,
                "{pattern}"
            );
        }
        // The same glob still grants the ordinary token capabilities.
        assert!(Capability::new("tokens:*").matches(TOKENS_WRITE));
        let grant = Grant {
            owner: set(&["*"]),
            ceiling: Some(set(&["tokens:*"])),
        };
        assert!(grant.holds(TOKENS_WRITE));
        assert!(!grant.holds(TOKENS_ANY), "a scope `tokens:*` narrows `*`");
        assert!(
            grant.effective().iter().all(|c| c.as_str() != TOKENS_ANY),
            "{:?}",
            grant.effective()
        );
    }

    #[test]
    fn a_scoped_grant_is_the_intersection_of_owner_and_scopes() {
        let grant = Grant {
            owner: set(&["run:projects:*", "ledger:read"]),
            ceiling: Some(set(&["run:projects:payments", "ledger:*"])),
        };
        assert!(grant.holds("run:projects:payments"));
        assert!(!grant.holds("run:projects:infra"));
        assert!(grant.holds("ledger:read"));
        // the scope allows ledger:write but the owner does not hold it: never wider than the owner
        assert!(!grant.holds("ledger:write"));
    }

    #[test]
    fn the_effective_patterns_are_the_narrower_of_each_covering_pair() {
        let grant = Grant {
            owner: set(&["run:projects:*", "ledger:read", "tasks:create"]),
            ceiling: Some(set(&["run:projects:payments", "ledger:*"])),
        };
        let held = grant.effective();
        let held: Vec<&str> = held.iter().map(Capability::as_str).collect();
        assert_eq!(held, ["ledger:read", "run:projects:payments"]);
        let unscoped = Grant {
            owner: set(&["run:projects:*"]),
            ceiling: None,
        };
        assert_eq!(unscoped.effective(), [Capability::new("run:projects:*")]);
    }

    #[test]
    fn capability_strings_are_validated() {
        assert!(validate_capability("run:projects:payments").is_ok());
        assert!(validate_capability("*").is_ok());
        assert!(validate_capability("ledger:*").is_ok());
        assert_eq!(
            validate_capability("ledger::write").unwrap_err(),
            "`ledger::write` has an empty segment"
        );
        assert!(validate_capability("Ledger:Write").is_err());
    }
}
