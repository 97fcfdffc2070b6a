//! Tools and the catalog: every tool with its class, capability, risk and one input schema.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::{ArgumentsAudit, Path, sensitive_paths};
use crate::capability::Capability;
use crate::config::ToolPolicySpec;
pub use crate::config::{Risk, ToolClass};
use crate::name::Name;
use crate::schema::{InputSchema, SchemaText};

/// The separator between an upstream's prefix and its tool's name in catalog names.
pub const CATALOG_SEPARATOR: &str = "__";

/// Where a tool is implemented.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToolSource {
    /// A built-in tool set of Warden.
    Builtin {
        /// The tool set (`warden`).
        set: Name,
        /// The tool's name within the set.
        tool: String,
    },
    /// An upstream MCP server.
    Upstream {
        /// The upstream.
        upstream: Name,
        /// The tool's own name at the upstream.
        tool: String,
    },
}

/// How a tool's class was decided (shown by `warden tools inventory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClassSource {
    /// A ToolPolicy says so.
    Policy,
    /// The upstream's annotations (`readOnlyHint`).
    Annotations,
    /// Nothing said: unknown tools are mutations.
    Default,
    /// Declared by a built-in tool set.
    Builtin,
}

/// The governance status of a tool (GOV-5): every mutation is governed or explicitly
/// listed as ungoverned with a reason; anything else is refused at runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum GovernanceStatus {
    /// A read: never gated by autonomy.
    Read,
    /// A mutation with a governance decision (a ToolPolicy, or a built-in contract).
    Governed {
        /// What governs it: `ToolPolicy <key>` or `builtin`.
        by: String,
    },
    /// A mutation declared ungoverned, with the reason. Refused (`UNGOVERNED`) with
    /// governance `on`.
    Ungoverned {
        /// The stated reason.
        reason: String,
    },
    /// A mutation nobody decided on: refused (`UNGOVERNED`).
    Unmapped,
}

/// One tool as the catalog knows it.
#[derive(Clone, Debug)]
pub struct ToolDescriptor {
    /// The catalog name (`ledger__refund`), unique in the installation.
    pub name: Arc<str>,
    /// The owning project; `None` for built-in tools offered to every verified principal.
    pub project: Option<Name>,
    /// Where it is implemented.
    pub source: ToolSource,
    /// Display title.
    pub title: Option<String>,
    /// Description as advertised.
    pub description: Option<String>,
    /// The one input schema (GOV-1).
    pub schema: InputSchema,
    /// Output schema: the upstream's, admitting Warden's decisions too
    /// ([`crate::schema::output_schema_admitting_decisions`]).
    pub output_schema: Option<SchemaText>,
    /// Annotations as advertised by the upstream, passed through (shared: a catalog holds
    /// few distinct sets).
    pub annotations: Option<Arc<Value>>,
    /// Icons as advertised by the upstream, passed through.
    pub icons: Option<Arc<Value>>,
    /// `_meta` as advertised by the upstream, passed through.
    pub meta: Option<Arc<Value>>,
    /// Read or mutation.
    pub class: ToolClass,
    /// How the class was decided.
    pub class_source: ClassSource,
    /// Capability required in addition to the project's `run:projects:<p>`.
    pub capability: Option<Capability>,
    /// Risk of the mutation.
    pub risk: Risk,
    /// Calls per minute across all callers.
    pub rate_limit_per_minute: Option<u32>,
    /// If set, every call is refused (`TOOL_POLICY`) with this reason.
    pub deny: Option<String>,
    /// Governance status.
    pub governance: GovernanceStatus,
    /// The ToolPolicy that applied, by key.
    pub policy: Option<String>,
    /// JSON pointers of arguments naming projects (RUN-3).
    pub project_arguments: Vec<String>,
    /// What the audit trail keeps of the arguments (ToolPolicy `audit.arguments`; AUD-3).
    pub audit_arguments: ArgumentsAudit,
    /// The arguments the input schema marks secret (`writeOnly`, `format: password`), never
    /// kept whatever `audit_arguments` says.
    pub secret_arguments: Arc<[Path]>,
    /// The arguments mirrored in `Mcp-Param-*` headers (SEP-2243), checked on HTTP calls.
    pub header_arguments: Arc<[crate::param_headers::HeaderArgument]>,
    /// Its policy's conditions on the arguments (GOV-10), compiled.
    pub rules: crate::conditions::Rules,
    /// The issuer whose access token a caller must hold: the upstream is called with that
    /// token exchanged for it (AUTH-6).
    pub on_behalf_of: Option<Name>,
}

/// The argument paths `schema` marks secret; the text is parsed only when it can hold one.
pub fn secret_arguments(schema: &SchemaText) -> Arc<[Path]> {
    let text = schema.as_str();
    if !text.contains("writeOnly") && !text.contains("password") {
        return Arc::from([]);
    }
    Arc::from(sensitive_paths(&schema.to_object()))
}

/// A tool as an upstream advertises it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamTool {
    /// The upstream's own name for it.
    pub name: String,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Input schema, as text (PERF-3; shared with the catalog, not copied).
    pub input_schema: SchemaText,
    /// Output schema, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<SchemaText>,
    /// Annotations (`readOnlyHint`, `destructiveHint`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Arc<Value>>,
    /// Icons, as the upstream advertised them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Arc<Value>>,
    /// `_meta`, as the upstream advertised it (MCP Apps' `ui` among others).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Arc<Value>>,
}

/// Chooses the ToolPolicy that applies to `catalog_name` in `project`: an exact name beats a
/// glob; among globs the one with more literal characters wins; then the lowest key.
pub fn matching_policy<'a>(
    policies: impl IntoIterator<Item = (&'a str, &'a ToolPolicySpec)>,
    project: &Name,
    catalog_name: &str,
) -> Option<(&'a str, &'a ToolPolicySpec)> {
    policies
        .into_iter()
        .filter(|(_, p)| &p.project == project && crate::name::glob_match(&p.tool, catalog_name))
        .max_by(|(ka, a), (kb, b)| {
            let rank = |p: &ToolPolicySpec| {
                let exact = !p.tool.contains('*');
                (exact, p.tool.chars().filter(|c| *c != '*').count())
            };
            rank(a).cmp(&rank(b)).then_with(|| kb.cmp(ka))
        })
}

impl ToolDescriptor {
    /// Builds the descriptor of an upstream tool, classified by its ToolPolicy if any, else by
    /// its annotations, else as a mutation.
    pub fn for_upstream(
        project: &Name,
        upstream: &Name,
        catalog_name: &str,
        raw: &UpstreamTool,
        policy: Option<(&str, &ToolPolicySpec)>,
    ) -> Result<Self, String> {
        Self::for_upstream_after(project, upstream, catalog_name, raw, policy, None)
    }

    /// [`ToolDescriptor::for_upstream`], reusing the input schema of `previous` (the same
    /// tool in the catalog being replaced) when it was compiled from the same schema object.
    pub fn for_upstream_after(
        project: &Name,
        upstream: &Name,
        catalog_name: &str,
        raw: &UpstreamTool,
        policy: Option<(&str, &ToolPolicySpec)>,
        previous: Option<&ToolDescriptor>,
    ) -> Result<Self, String> {
        let strict = policy.is_some_and(|(_, p)| p.strict);
        let schema = match previous {
            Some(p) => p.schema.recompile(&raw.input_schema, strict)?,
            None => InputSchema::compile_shared(raw.input_schema.clone(), strict)?,
        };
        let read_only_hint = raw
            .annotations
            .as_ref()
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool);
        let (class, class_source) = match (policy.and_then(|(_, p)| p.class), read_only_hint) {
            (Some(c), _) => (c, ClassSource::Policy),
            (None, Some(true)) => (ToolClass::Read, ClassSource::Annotations),
            (None, Some(false)) => (ToolClass::Mutation, ClassSource::Annotations),
            (None, None) => (ToolClass::Mutation, ClassSource::Default),
        };
        let governance = match (class, policy) {
            (ToolClass::Read, _) => GovernanceStatus::Read,
            (ToolClass::Mutation, Some((_, p))) if p.ungoverned.is_some() => {
                GovernanceStatus::Ungoverned {
                    reason: p.ungoverned.clone().unwrap_or_default(),
                }
            }
            (ToolClass::Mutation, Some((key, _))) => GovernanceStatus::Governed {
                by: format!("ToolPolicy {key}"),
            },
            (ToolClass::Mutation, None) => GovernanceStatus::Unmapped,
        };
        Ok(Self {
            name: Arc::from(catalog_name),
            project: Some(project.clone()),
            source: ToolSource::Upstream {
                upstream: upstream.clone(),
                tool: raw.name.clone(),
            },
            title: raw.title.clone(),
            description: raw.description.clone(),
            schema,
            output_schema: raw.output_schema.as_ref().map(|o| {
                SchemaText::new(&crate::schema::output_schema_admitting_decisions(
                    &o.to_object(),
                ))
            }),
            annotations: raw.annotations.clone(),
            icons: raw.icons.clone(),
            meta: raw.meta.clone(),
            class,
            class_source,
            capability: policy.and_then(|(_, p)| p.capability.clone().map(Capability::new)),
            risk: policy.and_then(|(_, p)| p.risk).unwrap_or(Risk::Ordinary),
            rate_limit_per_minute: policy
                .and_then(|(_, p)| p.rate_limit.as_ref().map(|r| r.per_minute)),
            deny: policy.and_then(|(_, p)| p.deny.clone()),
            governance,
            policy: policy.map(|(k, _)| k.to_owned()),
            project_arguments: policy
                .map(|(_, p)| p.project_arguments.clone())
                .unwrap_or_default(),
            audit_arguments: policy
                .and_then(|(_, p)| p.audit.as_ref())
                .map(|a| a.arguments)
                .unwrap_or_default(),
            secret_arguments: match previous {
                Some(p) if p.schema.compiled_from(&raw.input_schema) => p.secret_arguments.clone(),
                _ => secret_arguments(&raw.input_schema),
            },
            header_arguments: match previous {
                Some(p) if p.schema.compiled_from(&raw.input_schema) => p.header_arguments.clone(),
                _ => crate::param_headers::header_arguments(&raw.input_schema),
            },
            rules: match policy {
                Some((key, p)) if !p.rules.is_empty() => {
                    crate::conditions::compile_rules(key, &p.rules)
                }
                _ => Arc::from([]),
            },
            on_behalf_of: None,
        })
    }

    /// Whether the tool writes.
    pub fn is_mutation(&self) -> bool {
        self.class == ToolClass::Mutation
    }
}

/// A federated catalog: every tool of every project, by catalog name, in the order it was
/// built from — for the gateway, Warden's built-in tools, then each upstream's in the order
/// the upstream lists them (an upstream's order is its own, and passes through, XPORT-5).
#[derive(Clone, Default)]
pub struct Catalog {
    tools: HashMap<Arc<str>, Arc<ToolDescriptor>>,
    ordered: Vec<Arc<ToolDescriptor>>,
    /// Positions in `ordered` of each project's tools, ascending.
    by_project: HashMap<Name, Vec<usize>>,
    /// Positions in `ordered` of the tools no project owns (built-ins), ascending.
    unowned: Vec<usize>,
    /// Tools held out for review (GOV-9), by catalog name, with their project.
    held: HashMap<String, Name>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog")
            .field("tools", &self.ordered.len())
            .finish()
    }
}

/// A tool that could not join the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogConflict {
    /// The catalog name both wanted.
    pub name: String,
    /// The tool that was kept.
    pub kept: String,
    /// The tool that was dropped.
    pub dropped: String,
}

impl Catalog {
    /// Builds a catalog in the order of `tools`. A name taken twice keeps the first tool and
    /// reports the conflict.
    pub fn new(tools: impl IntoIterator<Item = ToolDescriptor>) -> (Self, Vec<CatalogConflict>) {
        let mut map: HashMap<Arc<str>, Arc<ToolDescriptor>> = HashMap::new();
        let mut ordered = Vec::new();
        let mut conflicts = Vec::new();
        for t in tools {
            if let Some(existing) = map.get(&t.name) {
                conflicts.push(CatalogConflict {
                    name: t.name.to_string(),
                    kept: describe_source(&existing.source),
                    dropped: describe_source(&t.source),
                });
                continue;
            }
            let t = Arc::new(t);
            map.insert(t.name.clone(), t.clone());
            ordered.push(t);
        }
        let mut by_project: HashMap<Name, Vec<usize>> = HashMap::new();
        let mut unowned = Vec::new();
        for (i, t) in ordered.iter().enumerate() {
            match &t.project {
                Some(p) => by_project.entry(p.clone()).or_default().push(i),
                None => unowned.push(i),
            }
        }
        (
            Self {
                tools: map,
                ordered,
                by_project,
                unowned,
                held: HashMap::new(),
            },
            conflicts,
        )
    }

    /// The tools of the given projects and the tools no project owns, in catalog order:
    /// positions found through a per-project index, so the cost follows what is returned,
    /// not the size of the catalog (PERF-3).
    pub fn of_projects<'a>(
        &self,
        projects: impl IntoIterator<Item = &'a Name>,
    ) -> Vec<Arc<ToolDescriptor>> {
        let mut positions = self.unowned.clone();
        for p in projects {
            if let Some(owned) = self.by_project.get(p) {
                positions.extend_from_slice(owned);
            }
        }
        positions.sort_unstable();
        positions
            .into_iter()
            .filter_map(|i| self.ordered.get(i).cloned())
            .collect()
    }

    /// This catalog, with `held` (catalog name → project) held out for review (GOV-9): not
    /// in it, refused like unknown tools, the rule `pin:changed:<tool>` for operators.
    #[must_use]
    pub fn holding(mut self, held: HashMap<String, Name>) -> Self {
        self.held = held;
        self
    }

    /// The project of a tool held out for review.
    pub fn held(&self, name: &str) -> Option<&Name> {
        self.held.get(name)
    }

    /// How many tools are held out for review.
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// Looks a tool up by catalog name.
    pub fn get(&self, name: &str) -> Option<&Arc<ToolDescriptor>> {
        self.tools.get(name)
    }

    /// Every tool, in catalog order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ToolDescriptor>> {
        self.ordered.iter()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.ordered.len()
    }

    /// Whether the catalog is empty.
    pub fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }
}

fn describe_source(source: &ToolSource) -> String {
    match source {
        ToolSource::Builtin { set, tool } => format!("built-in {set}/{tool}"),
        ToolSource::Upstream { upstream, tool } => format!("upstream {upstream}/{tool}"),
    }
}

/// The catalog name of an upstream tool: `<prefix>__<tool>`, or the tool's own name when the
/// prefix is empty. The default prefix is the upstream's name.
pub fn catalog_name(prefix: &str, tool: &str) -> String {
    if prefix.is_empty() {
        tool.to_owned()
    } else {
        format!("{prefix}{CATALOG_SEPARATOR}{tool}")
    }
}
