//! The decision function (RUN-6) and the closed set of denial codes (GOV-4).
//!
//! [`decide`] answers both "may this run see the tool" (`tools/list`) and "may it call it"
//! (`tools/call`, step 4 of GOV-2). The other steps of the pipeline are pure functions here
//! too; [`crate::pipeline`] runs them in the spec's order around the store and the upstream.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::authority::Authority;
use crate::policy::{AutonomyLevel, Policy};
use crate::tool::{Catalog, GovernanceStatus, Risk, ToolDescriptor};

/// Why a call was refused: a closed, documented set (GOV-4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DenyCode {
    /// A kill switch freezes the scope (step 1).
    KillSwitch,
    /// The arguments do not match the advertised schema (step 2).
    Validation,
    /// No such tool in this run's catalog — also for tools that exist but are hidden.
    UnknownTool,
    /// The run lacks a capability the tool requires, or an argument names a resource outside
    /// the run's authority (step 4).
    Capability,
    /// The tool's policy refuses the call (step 5).
    ToolPolicy,
    /// The tool's rate limit is exhausted (step 5).
    RateLimited,
    /// The write budget is exhausted (step 6).
    WriteBudget,
    /// Autonomy level 0: no side effects (step 7).
    AutonomyShadow,
    /// A human rejected the approval.
    ApprovalRejected,
    /// The approval expired undecided.
    ApprovalExpired,
    /// A staged action was vetoed.
    Vetoed,
    /// A mutation without a governance decision (GOV-5).
    Ungoverned,
    /// Governance could not run (store unreachable) or the upstream is unavailable.
    Unavailable,
    /// An approval without a requester reference (APR-5).
    ApprovalProvenanceMissing,
    /// An approval whose requester reference is malformed (APR-5).
    ApprovalProvenanceInvalid,
    /// The requester's credential was revoked (APR-5).
    RequesterRevoked,
    /// The requester's role no longer exists (APR-5).
    RequesterRoleUnavailable,
    /// The requester's authority could not be resolved (APR-5).
    RequesterResolutionFailed,
}

impl DenyCode {
    /// Every code, in the order of GOV-4.
    pub const ALL: [DenyCode; 18] = [
        DenyCode::KillSwitch,
        DenyCode::Validation,
        DenyCode::UnknownTool,
        DenyCode::Capability,
        DenyCode::ToolPolicy,
        DenyCode::RateLimited,
        DenyCode::WriteBudget,
        DenyCode::AutonomyShadow,
        DenyCode::ApprovalRejected,
        DenyCode::ApprovalExpired,
        DenyCode::Vetoed,
        DenyCode::Ungoverned,
        DenyCode::Unavailable,
        DenyCode::ApprovalProvenanceMissing,
        DenyCode::ApprovalProvenanceInvalid,
        DenyCode::RequesterRevoked,
        DenyCode::RequesterRoleUnavailable,
        DenyCode::RequesterResolutionFailed,
    ];

    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            DenyCode::KillSwitch => "KILL_SWITCH",
            DenyCode::Validation => "VALIDATION",
            DenyCode::UnknownTool => "UNKNOWN_TOOL",
            DenyCode::Capability => "CAPABILITY",
            DenyCode::ToolPolicy => "TOOL_POLICY",
            DenyCode::RateLimited => "RATE_LIMITED",
            DenyCode::WriteBudget => "WRITE_BUDGET",
            DenyCode::AutonomyShadow => "AUTONOMY_SHADOW",
            DenyCode::ApprovalRejected => "APPROVAL_REJECTED",
            DenyCode::ApprovalExpired => "APPROVAL_EXPIRED",
            DenyCode::Vetoed => "VETOED",
            DenyCode::Ungoverned => "UNGOVERNED",
            DenyCode::Unavailable => "UNAVAILABLE",
            DenyCode::ApprovalProvenanceMissing => "APPROVAL_PROVENANCE_MISSING",
            DenyCode::ApprovalProvenanceInvalid => "APPROVAL_PROVENANCE_INVALID",
            DenyCode::RequesterRevoked => "REQUESTER_REVOKED",
            DenyCode::RequesterRoleUnavailable => "REQUESTER_ROLE_UNAVAILABLE",
            DenyCode::RequesterResolutionFailed => "REQUESTER_RESOLUTION_FAILED",
        }
    }

    /// Parses the wire form.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for DenyCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: the code and message for the caller, the rule for operators.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// The code (GOV-4).
    pub code: DenyCode,
    /// The rule that decided, e.g. `kill-switch:incident-4411`. Operators only: for
    /// `UNKNOWN_TOOL` it would reveal why a hidden tool is hidden.
    pub rule: String,
    /// One line for the caller.
    pub message: String,
}

impl Denial {
    /// Builds a denial.
    pub fn new(code: DenyCode, rule: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            rule: rule.into(),
            message: message.into(),
        }
    }

    /// The one refusal for a tool the run was never shown (RUN-6): identical for invented,
    /// misspelt and hidden names.
    pub fn unknown_tool(name: &str, rule: impl Into<String>) -> Self {
        Self::new(
            DenyCode::UnknownTool,
            rule,
            format!("unknown tool `{}`", truncate_name(name)),
        )
    }
}

fn truncate_name(name: &str) -> &str {
    let mut end = name.len().min(128);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.get(..end).unwrap_or_default()
}

/// The answer of the decision function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, by this rule.
    Allow {
        /// The rule that allowed it.
        rule: String,
    },
    /// Refused.
    Deny(Denial),
}

/// What the decision is for.
#[derive(Clone, Copy, Debug)]
pub enum Purpose<'a> {
    /// May the run see the tool (`tools/list`, and name resolution before `tools/call`)?
    List,
    /// May the run call it with these arguments (GOV-2 step 4)?
    Call {
        /// The call's arguments.
        args: Option<&'a Map<String, Value>>,
    },
}

/// The decision function (RUN-6): one function for both enforcement points.
pub fn decide(authority: &Authority, tool: &ToolDescriptor, purpose: Purpose<'_>) -> Decision {
    if sees(authority, tool) {
        return decide_visible(authority, tool, purpose);
    }
    // Hidden: why, for the audit trail (the caller sees `UNKNOWN_TOOL` either way).
    let rule = match (&authority.withheld, &tool.project) {
        (Some(reason), _) => format!("fail-closed:{reason}"),
        (None, Some(p)) => {
            let why = authority
                .knowledge_only
                .get(p)
                .map(|w| format!(" ({w})"))
                .unwrap_or_default();
            format!("scope:project-not-granted:{p}{why}")
        }
        (None, None) => "fail-closed:unreachable".to_owned(),
    };
    Decision::Deny(Denial::unknown_tool(&tool.name, rule))
}

/// The scope step of [`decide`] without building its rule: whether the run sees `tool` at all.
/// `decide(…, Purpose::List)` allows exactly the tools this accepts (tested), so filtering a
/// large catalog for `tools/list` allocates nothing for the tools it hides (PERF-3).
pub fn sees(authority: &Authority, tool: &ToolDescriptor) -> bool {
    authority.withheld.is_none()
        && tool
            .project
            .as_ref()
            .is_none_or(|p| authority.projects.contains_key(p))
}

/// The tools of `catalog` the run sees, in catalog order: exactly those [`sees`] accepts
/// (tested), found through the catalog's project index instead of a pass over every tool.
pub fn visible(authority: &Authority, catalog: &Catalog) -> Vec<Arc<ToolDescriptor>> {
    if authority.withheld.is_some() {
        return Vec::new();
    }
    catalog.of_projects(authority.projects.keys())
}

/// [`decide`] for a tool the run sees.
fn decide_visible(authority: &Authority, tool: &ToolDescriptor, purpose: Purpose<'_>) -> Decision {
    let scope_rule = match &tool.project {
        None => "scope:builtin".to_owned(),
        Some(p) => format!("scope:project:{p}"),
    };
    let Purpose::Call { args } = purpose else {
        return Decision::Allow { rule: scope_rule };
    };
    if let Some(cap) = &tool.capability
        && !authority.holds(cap.as_str())
    {
        return Decision::Deny(Denial::new(
            DenyCode::Capability,
            format!("capability:{cap}"),
            format!(
                "this run lacks the capability `{cap}` that `{}` requires",
                tool.name
            ),
        ));
    }
    if let Some(issuer) = &tool.on_behalf_of
        && !authority.authenticated_by(issuer.as_str())
    {
        return Decision::Deny(Denial::new(
            DenyCode::Capability,
            format!("on-behalf-of:{issuer}"),
            format!(
                "`{}` acts as its caller (AUTH-6): call it with an access token of issuer \
                 `{issuer}`; this credential has no user of that issuer to act for",
                tool.name
            ),
        ));
    }
    for pointer in &tool.project_arguments {
        for named in named_projects(args, pointer) {
            let allowed = authority.projects.keys().any(|p| p.as_str() == named);
            if !allowed {
                return Decision::Deny(Denial::new(
                    DenyCode::Capability,
                    format!("ceiling:argument:{pointer}"),
                    format!(
                        "argument `{pointer}` names project `{}`, which is outside this run's authority",
                        truncate_name(named)
                    ),
                ));
            }
        }
    }
    Decision::Allow {
        rule: match &tool.capability {
            Some(cap) => format!("capability:{cap}"),
            None => scope_rule,
        },
    }
}

fn named_projects<'a>(args: Option<&'a Map<String, Value>>, pointer: &str) -> Vec<&'a str> {
    let Some(args) = args else { return Vec::new() };
    let Some(rest) = pointer.strip_prefix('/') else {
        return Vec::new();
    };
    let mut segments = rest.split('/');
    let first = segments.next().unwrap_or_default();
    let Some(mut value) = args.get(first) else {
        return Vec::new();
    };
    for seg in segments {
        match value.get(seg) {
            Some(v) => value = v,
            None => return Vec::new(),
        }
    }
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Name resolution before the pipeline (RUN-6): a name the run was never shown gets the same
/// refusal whether it is invented, misspelt or hidden.
pub fn resolve_tool<'c>(
    catalog: &'c Catalog,
    authority: &Authority,
    name: &str,
) -> Result<&'c std::sync::Arc<ToolDescriptor>, Denial> {
    let Some(tool) = catalog.get(name) else {
        // Held for review (GOV-9): the caller cannot tell; an operator sees why.
        let rule = match catalog.held(name) {
            Some(project)
                if authority.withheld.is_none() && authority.projects.contains_key(project) =>
            {
                crate::pins::rule(name)
            }
            _ => "resolve:no-such-tool".to_owned(),
        };
        return Err(Denial::unknown_tool(name, rule));
    };
    match decide(authority, tool, Purpose::List) {
        Decision::Allow { .. } => Ok(tool),
        Decision::Deny(d) => Err(d),
    }
}

/// GOV-2 step 1: a kill switch freezing this call.
pub fn kill_switch(
    policy: &Policy,
    authority: &Authority,
    tool: &ToolDescriptor,
) -> Option<Denial> {
    policy
        .kill_switch_for(authority.actor(), tool)
        .map(|(key, k)| {
            Denial::new(
                DenyCode::KillSwitch,
                format!("kill-switch:{key}"),
                format!("`{}` is frozen by a kill switch: {}", tool.name, k.reason),
            )
        })
}

/// GOV-2 step 2: schema validation.
pub fn validate(tool: &ToolDescriptor, args: Option<&Map<String, Value>>) -> Option<Denial> {
    tool.schema.validate(args).err().map(|failure| {
        Denial::new(
            DenyCode::Validation,
            format!("schema:{}", tool.name),
            failure.to_string(),
        )
    })
}

/// GOV-2 step 5, static part: governance status and explicit refusals.
pub fn tool_policy(tool: &ToolDescriptor) -> Option<Denial> {
    match &tool.governance {
        GovernanceStatus::Unmapped => {
            return Some(Denial::new(
                DenyCode::Ungoverned,
                "governance:unmapped",
                format!(
                    "`{}` is a mutation without a governance decision; an operator must classify it with a ToolPolicy",
                    tool.name
                ),
            ));
        }
        GovernanceStatus::Ungoverned { reason } => {
            return Some(Denial::new(
                DenyCode::Ungoverned,
                format!(
                    "governance:ungoverned:{}",
                    tool.policy.as_deref().unwrap_or_default()
                ),
                format!(
                    "`{}` is declared ungoverned ({reason}) and is not executed with governance on",
                    tool.name
                ),
            ));
        }
        GovernanceStatus::Read | GovernanceStatus::Governed { .. } => {}
    }
    tool.deny.as_ref().map(|reason| {
        Denial::new(
            DenyCode::ToolPolicy,
            format!(
                "tool-policy:{}:deny",
                tool.policy.as_deref().unwrap_or(&tool.name)
            ),
            format!("`{}` is refused by policy: {reason}", tool.name),
        )
    })
}

/// GOV-2 step 5, conditions on the arguments (GOV-10): the refusal of the first rule that
/// refuses the call, or else the rule that made it dangerous, if one did.
pub fn conditions(
    authority: &Authority,
    tool: &ToolDescriptor,
    args: Option<&Map<String, Value>>,
    now: crate::time::Millis,
) -> Result<Option<String>, Denial> {
    if tool.rules.is_empty() {
        return Ok(None);
    }
    let verdict = crate::conditions::evaluate(&tool.rules, &facts(authority, tool, args, now));
    match verdict.refused {
        Some(r) => Err(Denial::new(
            if r.capability {
                DenyCode::Capability
            } else {
                DenyCode::ToolPolicy
            },
            r.rule,
            r.message,
        )),
        None => Ok(verdict.dangerous),
    }
}

/// What the conditions of `tool` read of a call by `authority`.
pub fn facts<'a>(
    authority: &'a Authority,
    tool: &'a ToolDescriptor,
    args: Option<&'a Map<String, Value>>,
    now: crate::time::Millis,
) -> crate::conditions::Facts<'a> {
    crate::conditions::Facts {
        args,
        principal: &authority.principal,
        agent: authority.agent.as_ref(),
        mode: authority.mode.to_string(),
        holds: authority,
        tool: &tool.name,
        project: tool.project.as_ref(),
        now,
    }
}

/// The outcome of GOV-2 step 7.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Execute now.
    Execute {
        /// The rule.
        rule: String,
    },
    /// Park for a human approval (L1 every mutation, L2 dangerous ones).
    Park {
        /// The rule.
        rule: String,
    },
    /// Stage for a veto window (L3 dangerous ones).
    Stage {
        /// The rule.
        rule: String,
        /// The window.
        window: std::time::Duration,
    },
    /// Refuse.
    Deny(Denial),
}

/// GOV-2 step 7: risk and autonomy (APR-1). Reads are never gated. `risk` is the tool's, or
/// `dangerous` when a condition made this call so (GOV-10).
pub fn autonomy_gate(tool: &ToolDescriptor, risk: Risk, level: &AutonomyLevel) -> Gate {
    let rule = format!("{}:L{}", level.rule, level.level);
    if !tool.is_mutation() {
        return Gate::Execute {
            rule: "autonomy:read".into(),
        };
    }
    match (level.level, risk) {
        (0, _) => Gate::Deny(Denial::new(
            DenyCode::AutonomyShadow,
            rule,
            format!(
                "autonomy level 0 allows no side effects; `{}` was not executed",
                tool.name
            ),
        )),
        (1, _) | (2, Risk::Dangerous) => Gate::Park { rule },
        (3, Risk::Dangerous) => Gate::Stage {
            rule,
            window: level.veto_window,
        },
        _ => Gate::Execute { rule },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::Map;

    use super::*;
    use crate::schema::InputSchema;
    use crate::tool::{ClassSource, ToolSource};

    fn tool(class: crate::tool::ToolClass, risk: Risk) -> ToolDescriptor {
        ToolDescriptor {
            name: "t".into(),
            project: None,
            source: ToolSource::Builtin {
                set: crate::Name::from_static("warden"),
                tool: "t".into(),
            },
            title: None,
            description: None,
            schema: InputSchema::compile(Map::new(), false).unwrap(),
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
            class,
            class_source: ClassSource::Policy,
            capability: None,
            risk,
            rate_limit_per_minute: None,
            deny: None,
            governance: GovernanceStatus::Read,
            policy: None,
            project_arguments: Vec::new(),
            audit_arguments: crate::audit::ArgumentsAudit::default(),
            secret_arguments: std::sync::Arc::from([]),
            header_arguments: std::sync::Arc::from([]),
            rules: std::sync::Arc::from([]),
            on_behalf_of: None,
        }
    }

    #[test]
    fn visible_is_what_sees_accepts_in_catalog_order() {
        let named = |name: &str, project: Option<&str>| ToolDescriptor {
            name: name.into(),
            project: project.map(|p| crate::Name::new(p).unwrap()),
            ..tool(crate::tool::ToolClass::Read, Risk::Ordinary)
        };
        let (catalog, conflicts) = Catalog::new([
            named("b__two", Some("b")),
            named("warden__whoami", None),
            named("a__one", Some("a")),
            named("c__three", Some("c")),
            named("a__zed", Some("a")),
            named("b__aaa", Some("b")),
        ]);
        assert!(conflicts.is_empty());
        let mut authority = Authority {
            mode: crate::authority::Mode::Caller,
            principal: crate::principal::Principal::User {
                name: crate::Name::new("alice").unwrap(),
            },
            groups: Vec::new(),
            credential_id: None,
            expires_at: None,
            agent: None,
            intent: None,
            autonomy_cap: None,
            grant: crate::capability::Grant::default(),
            projects: [("a", "member"), ("b", "member"), ("zz", "no tools")]
                .into_iter()
                .map(|(p, why)| (crate::Name::new(p).unwrap(), why.to_owned()))
                .collect(),
            knowledge: Default::default(),
            knowledge_only: Default::default(),
            withheld: None,
            cosigner: None,
        };
        let names = |a: &Authority| -> Vec<String> {
            visible(a, &catalog)
                .iter()
                .map(|t| t.name.to_string())
                .collect()
        };
        let filtered = |a: &Authority| -> Vec<String> {
            catalog
                .iter()
                .filter(|t| sees(a, t))
                .map(|t| t.name.to_string())
                .collect()
        };
        // The order the catalog was built in, not by name.
        assert_eq!(
            names(&authority),
            ["b__two", "warden__whoami", "a__one", "a__zed", "b__aaa"]
        );
        assert_eq!(names(&authority), filtered(&authority));
        authority.projects.clear();
        assert_eq!(names(&authority), ["warden__whoami"]);
        assert_eq!(names(&authority), filtered(&authority));
        let withheld = authority.withhold("the store cannot be reached");
        assert!(names(&withheld).is_empty());
        assert_eq!(names(&withheld), filtered(&withheld));
    }

    fn gate(level: u8, class: crate::tool::ToolClass, risk: Risk) -> &'static str {
        let level = AutonomyLevel {
            level,
            rule: "autonomy:test".into(),
            veto_window: Duration::from_secs(2),
            approval_ttl: Duration::from_secs(60),
        };
        match autonomy_gate(&tool(class, risk), risk, &level) {
            Gate::Execute { .. } => "execute",
            Gate::Park { .. } => "park",
            Gate::Stage { .. } => "stage",
            Gate::Deny(d) if d.code == DenyCode::AutonomyShadow => "AUTONOMY_SHADOW",
            Gate::Deny(_) => "deny",
        }
    }

    #[test]
    fn autonomy_levels_gate_mutations_as_apr_1_says() {
        use crate::tool::ToolClass::{Mutation, Read};
        let table: Vec<(u8, [&str; 3])> = (0..=4)
            .map(|l| {
                (
                    l,
                    [
                        gate(l, Read, Risk::Ordinary),
                        gate(l, Mutation, Risk::Ordinary),
                        gate(l, Mutation, Risk::Dangerous),
                    ],
                )
            })
            .collect();
        // level: [read, ordinary mutation, dangerous mutation]
        assert_eq!(
            table,
            vec![
                (0, ["execute", "AUTONOMY_SHADOW", "AUTONOMY_SHADOW"]),
                (1, ["execute", "park", "park"]),
                (2, ["execute", "execute", "park"]),
                (3, ["execute", "execute", "stage"]),
                (4, ["execute", "execute", "execute"]),
            ]
        );
    }
}
