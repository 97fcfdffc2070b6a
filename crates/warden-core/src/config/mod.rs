//! Declarative configuration (OPS-2): YAML resources, parsed with errors that name the file,
//! the resource and the field, and validated as a whole into a [`Config`] that cannot hold
//! dangling references.

mod depth;
mod four_eyes;
mod input;
mod issuer;
mod model;
mod notifier;
mod reference;
mod resources;
pub mod rule_fields;
pub(crate) mod rules;
mod upstream;
mod work;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub use four_eyes::{MOST_DECIDERS, SelfApproval};
pub use issuer::*;
pub use model::*;
pub use notifier::NotifierSpec;
pub use reference::{check_reference, is_sole_reference};
pub use resources::*;
pub use rules::{RuleRisk, RuleSpec, VARIABLES};
pub use upstream::*;
pub use work::*;

use crate::capability::validate_capability;
use crate::name::Name;
use crate::principal::Subject;

/// The name of the built-in tool set; no upstream may use it as its name or prefix.
pub const RESERVED_TOOL_SET: &str = "warden";

/// The role every installation has: it grants every capability (`*`).
pub const BUILTIN_ADMIN_ROLE: &str = "admin";

/// Where a resource came from, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The file as the user named it, or `store` for resources already applied.
    pub file: String,
    /// 1-based index of the YAML document in the file.
    pub document: usize,
}

/// A resource with its origin.
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    /// Where it came from (`None` for resources created by Warden itself).
    pub source: Option<Source>,
    /// The resource.
    pub resource: Resource,
}

/// A configuration error: names the file, the resource and the field. Read back from the
/// admin API's `errors` (its `FieldError`) as it is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Deserialize)]
pub struct ConfigError {
    /// The file, if the resource came from one.
    pub file: Option<String>,
    /// 1-based document index within the file.
    pub document: Option<usize>,
    /// `Kind "key"`, when known.
    pub resource: Option<String>,
    /// Path of the offending field (`scope.project`, `permissions[1]`), when known.
    pub field: Option<String>,
    /// What is wrong and, where possible, what to do.
    pub message: String,
}

/// How a reference to a resource that does not exist ends its message.
const MISSING_HINT: &str = "; apply it first or fix the name";

impl ConfigError {
    /// Whether it names a reference to a resource that does not exist.
    pub fn is_missing_reference(&self) -> bool {
        self.message.ends_with(MISSING_HINT)
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        match (&self.file, self.document) {
            (Some(file), Some(doc)) => parts.push(format!("{file} (document {doc})")),
            (Some(file), None) => parts.push(file.clone()),
            (None, _) => {}
        }
        if let Some(r) = &self.resource {
            parts.push(r.clone());
        }
        if let Some(field) = &self.field {
            parts.push(format!("field `{field}`"));
        }
        parts.push(self.message.clone());
        f.write_str(&parts.join(": "))
    }
}

fn label(kind: Kind, key: &str) -> String {
    format!("{kind} `{key}`")
}

/// Parses every YAML document of `text` (the content of `file`) into resources.
///
/// Returns every error found, not only the first, so one run of `warden apply` shows them all.
pub fn parse_documents(file: &str, text: &str) -> Result<Vec<Located>, Vec<ConfigError>> {
    if let Some(at) = depth::too_deep(text, depth::MAX_DEPTH) {
        let (document, line, column) = depth::position(text, at);
        return Err(vec![ConfigError {
            file: Some(file.to_owned()),
            document: Some(document),
            resource: None,
            field: None,
            message: format!(
                "nested deeper than {} levels at line {line} column {column}; no configuration needs that",
                depth::MAX_DEPTH
            ),
        }]);
    }
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, doc) in yaml_serde::Deserializer::from_str(text).enumerate() {
        let document = i + 1;
        let err = |resource: Option<String>, field: Option<String>, message: String| ConfigError {
            file: Some(file.to_owned()),
            document: Some(document),
            resource,
            field,
            message,
        };
        let value = match <yaml_serde::Value as serde::Deserialize>::deserialize(doc) {
            Ok(v) => v,
            Err(e) => {
                errors.push(err(None, None, format!("not valid YAML: {e}")));
                // A syntax error ends the stream: later documents cannot be located reliably.
                break;
            }
        };
        if value.is_null() {
            continue;
        }
        match parse_one(value).and_then(input::check) {
            Ok(resource) => out.push(Located {
                source: Some(Source {
                    file: file.to_owned(),
                    document,
                }),
                resource,
            }),
            Err((resource, field, message)) => errors.push(err(resource, field, message)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

type ParseFailure = (Option<String>, Option<String>, String);

fn parse_one(value: yaml_serde::Value) -> Result<Resource, ParseFailure> {
    let yaml_serde::Value::Mapping(mut map) = value else {
        return Err((
            None,
            None,
            "a resource must be a mapping with a `kind` field".into(),
        ));
    };
    let kind_value = map.remove("kind").ok_or_else(|| {
        (
            None,
            Some("kind".to_owned()),
            format!("missing; expected one of {}", kind_list()),
        )
    })?;
    let kind_str = kind_value.as_str().unwrap_or_default().to_owned();
    let kind = Kind::ALL
        .into_iter()
        .find(|k| k.as_str() == kind_str)
        .ok_or_else(|| {
            let hint = Kind::parse_loose(&kind_str)
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            (
                None,
                Some("kind".to_owned()),
                format!(
                    "unknown kind `{kind_str}`{hint}; expected one of {}",
                    kind_list()
                ),
            )
        })?;
    let name_hint = map.get("name").and_then(|v| v.as_str()).map(str::to_owned);
    let field_str = |f: &str| map.get(f).and_then(|v| v.as_str()).map(str::to_owned);
    // Resources without a name are labelled by what they apply to, as their key would be.
    let derived = match kind {
        Kind::ToolPolicy => field_str("project")
            .zip(field_str("tool"))
            .map(|(p, t)| format!("{p}/{t}")),
        _ => None,
    };
    let label = Some(match name_hint.or(derived) {
        Some(n) => label(kind, &n),
        None => kind.to_string(),
    });
    // Through JSON values: YAML values spell enums as tags (`!user alice`), configuration
    // spells them as one-key maps (`{ user: alice }`), which is what JSON values do.
    let value = serde_json::to_value(yaml_serde::Value::Mapping(map)).map_err(|e| {
        (
            label.clone(),
            None,
            format!("cannot be read as configuration: {e}"),
        )
    })?;
    let fail = |e: serde_path_to_error::Error<serde_json::Error>| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        let field = match unknown_field_name(&message) {
            Some(f) if path == "." => Some(f),
            Some(f) if path == f || path.ends_with(&format!(".{f}")) => Some(path),
            Some(f) => Some(format!("{path}.{f}")),
            None if path == "." => None,
            None => Some(path),
        };
        (label.clone(), field, message)
    };
    macro_rules! parse_as {
        ($variant:ident) => {
            serde_path_to_error::deserialize(value)
                .map(Resource::$variant)
                .map_err(fail)
        };
    }
    match kind {
        Kind::User => parse_as!(User),
        Kind::ServiceAccount => parse_as!(ServiceAccount),
        Kind::Role => parse_as!(Role),
        Kind::RoleBinding => parse_as!(RoleBinding),
        Kind::Project => parse_as!(Project),
        Kind::Upstream => parse_as!(Upstream),
        Kind::Model => parse_as!(Model),
        Kind::Agent => parse_as!(Agent),
        Kind::ToolPolicy => parse_as!(ToolPolicy),
        Kind::Autonomy => parse_as!(Autonomy),
        Kind::WriteBudget => parse_as!(WriteBudget),
        Kind::KillSwitch => parse_as!(KillSwitch),
        Kind::Workspace => parse_as!(Workspace),
        Kind::Issuer => parse_as!(Issuer),
        Kind::ReviewPolicy => parse_as!(ReviewPolicy),
        Kind::GitProvider => parse_as!(GitProvider),
        Kind::Reconciler => parse_as!(Reconciler),
        Kind::Notifier => parse_as!(Notifier),
    }
}

fn kind_list() -> String {
    Kind::ALL
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn unknown_field_name(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let end = rest.find('`')?;
    rest.get(..end).map(str::to_owned)
}

/// A validated configuration: every reference resolves, every pattern is well-formed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    resources: BTreeMap<(Kind, String), Located>,
}

impl Config {
    /// Merges `overlay` (new or changed resources) over `base` (what is applied already) by
    /// kind and key, then validates the result. Two resources of `overlay` with the same kind
    /// and key are an error.
    pub fn merge(base: Vec<Located>, overlay: Vec<Located>) -> Result<Config, Vec<ConfigError>> {
        let mut map: BTreeMap<(Kind, String), Located> = BTreeMap::new();
        for r in base {
            map.insert((r.resource.kind(), r.resource.key()), r);
        }
        let mut seen = BTreeSet::new();
        let mut errors = Vec::new();
        for r in overlay {
            let id = (r.resource.kind(), r.resource.key());
            if !seen.insert(id.clone()) {
                errors.push(error_at(
                    &r,
                    None,
                    "defined more than once in this apply; keep one definition".into(),
                ));
                continue;
            }
            map.insert(id, r);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Config::validate_map(map)
    }

    /// Validates a complete set of resources.
    pub fn validate(resources: Vec<Located>) -> Result<Config, Vec<ConfigError>> {
        Config::merge(Vec::new(), resources)
    }

    /// The configuration without the resource `kind`/`key`, validated: deleting a resource
    /// that others still reference is refused, naming them.
    pub fn without(&self, kind: Kind, key: &str) -> Result<Config, Vec<ConfigError>> {
        let mut map = self.resources.clone();
        if map.remove(&(kind, key.to_owned())).is_none() {
            return Err(vec![ConfigError {
                file: None,
                document: None,
                resource: Some(label(kind, key)),
                field: None,
                message: "not found".into(),
            }]);
        }
        Config::validate_map(map)
    }

    fn validate_map(map: BTreeMap<(Kind, String), Located>) -> Result<Config, Vec<ConfigError>> {
        let config = Config { resources: map };
        let errors = config.check();
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }

    /// Every resource, in kind order.
    pub fn resources(&self) -> impl Iterator<Item = &Located> {
        self.resources.values()
    }

    /// Looks up one resource.
    pub fn get(&self, kind: Kind, key: &str) -> Option<&Resource> {
        self.resources
            .get(&(kind, key.to_owned()))
            .map(|l| &l.resource)
    }

    /// Whether a resource exists.
    pub fn contains(&self, kind: Kind, key: &str) -> bool {
        self.resources.contains_key(&(kind, key.to_owned()))
    }

    /// Resources of one kind.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Resource> {
        self.resources
            .range((kind, String::new())..)
            .take_while(move |((k, _), _)| *k == kind)
            .map(|(_, l)| &l.resource)
    }

    fn check(&self) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        for located in self.resources.values() {
            check_resource(self, located, &mut errors);
        }
        // Report in the order the user wrote things.
        errors.sort_by(|a, b| (&a.file, a.document).cmp(&(&b.file, b.document)));
        errors
    }

    fn has_subject(&self, subject: &Subject) -> bool {
        match subject {
            Subject::User(n) => self.contains(Kind::User, n.as_str()),
            Subject::ServiceAccount(n) => self.contains(Kind::ServiceAccount, n.as_str()),
            Subject::Agent(n) => self.contains(Kind::Agent, n.as_str()),
            // Groups are declared by the users that list them; an empty group is harmless.
            Subject::Group(_) => true,
        }
    }
}

fn error_at(located: &Located, field: Option<&str>, message: String) -> ConfigError {
    ConfigError {
        file: located.source.as_ref().map(|s| s.file.clone()),
        document: located.source.as_ref().map(|s| s.document),
        resource: Some(label(located.resource.kind(), &located.resource.key())),
        field: field.map(str::to_owned),
        message,
    }
}

fn subject_kind(subject: &Subject) -> (&'static str, Kind) {
    match subject {
        Subject::User(_) => ("user", Kind::User),
        Subject::ServiceAccount(_) => ("serviceAccount", Kind::ServiceAccount),
        Subject::Group(_) => ("group", Kind::User),
        Subject::Agent(_) => ("agent", Kind::Agent),
    }
}

fn subject_name(subject: &Subject) -> &Name {
    match subject {
        Subject::User(n) | Subject::ServiceAccount(n) | Subject::Group(n) | Subject::Agent(n) => n,
    }
}

fn check_resource(config: &Config, located: &Located, errors: &mut Vec<ConfigError>) {
    let mut fail = |field: &str, message: String| {
        errors.push(error_at(located, Some(field), message));
    };
    let missing = |kind: Kind, name: &str| format!("no {kind} named `{name}`{MISSING_HINT}");
    let named = !matches!(
        located.resource.kind(),
        Kind::User | Kind::RoleBinding | Kind::KillSwitch
    );
    if named && located.resource.key().contains('@') {
        // Names of these kinds reach tool names, URLs and paths; `@` is for users.
        fail(
            "name",
            format!(
                "`{}` is not a valid name: `@` is allowed in user names only",
                located.resource.key()
            ),
        );
    }
    match &located.resource {
        Resource::User(_) | Resource::ServiceAccount(_) => {}
        Resource::Role(r) => {
            if r.name.as_str() == BUILTIN_ADMIN_ROLE {
                fail(
                    "name",
                    format!("`{BUILTIN_ADMIN_ROLE}` is a built-in role and cannot be redefined"),
                );
            }
            for (i, p) in r.permissions.iter().enumerate() {
                if let Err(e) = validate_capability(p) {
                    fail(&format!("permissions[{i}]"), e);
                }
            }
        }
        Resource::RoleBinding(b) => {
            if b.role.as_str() != BUILTIN_ADMIN_ROLE
                && !config.contains(Kind::Role, b.role.as_str())
            {
                fail("role", missing(Kind::Role, b.role.as_str()));
            }
            if !config.has_subject(&b.subject) {
                let (field, kind) = subject_kind(&b.subject);
                fail(
                    &format!("subject.{field}"),
                    missing(kind, subject_name(&b.subject).as_str()),
                );
            }
        }
        Resource::Project(p) => {
            let mut seen = BTreeSet::new();
            for (i, prompt) in p.prompts.iter().enumerate() {
                if !seen.insert(&prompt.name) {
                    fail(
                        &format!("prompts[{i}].name"),
                        format!("prompt `{}` is defined twice", prompt.name),
                    );
                }
            }
            let mut seen = BTreeSet::new();
            for (i, doc) in p.documents.iter().enumerate() {
                if !seen.insert(&doc.name) {
                    fail(
                        &format!("documents[{i}].name"),
                        format!("document `{}` is defined twice", doc.name),
                    );
                }
            }
        }
        Resource::Upstream(u) => {
            if u.name.as_str() == RESERVED_TOOL_SET
                || u.prefix.as_deref() == Some(RESERVED_TOOL_SET)
            {
                fail(
                    "name",
                    format!(
                        "`{RESERVED_TOOL_SET}` is the built-in tool set; choose another name or prefix"
                    ),
                );
            }
            if !config.contains(Kind::Project, u.project.as_str()) {
                fail("project", missing(Kind::Project, u.project.as_str()));
            }
            let issuer = |name: &str| match config.get(Kind::Issuer, name) {
                Some(Resource::Issuer(i)) => Some(i),
                _ => None,
            };
            for (field, problem) in u.problems(issuer) {
                fail(&field, problem);
            }
        }
        Resource::Model(m) => {
            for (field, problem) in m.problems() {
                fail(field, problem);
            }
        }
        Resource::Agent(a) => {
            if let Some(model) = &a.model
                && !config.contains(Kind::Model, model.as_str())
            {
                fail("model", missing(Kind::Model, model.as_str()));
            }
            for (i, m) in a.memberships.iter().enumerate() {
                if !config.contains(Kind::Project, m.as_str()) {
                    fail(
                        &format!("memberships[{i}]"),
                        missing(Kind::Project, m.as_str()),
                    );
                }
            }
            for (i, s) in a.schedules.iter().enumerate() {
                if let Err(e) = crate::cron::Schedule::parse(&s.cron) {
                    fail(&format!("schedules[{i}].cron"), e);
                }
                if s.runner.command.trim().is_empty() {
                    fail(
                        &format!("schedules[{i}].runner.command"),
                        "cannot be empty".into(),
                    );
                }
            }
        }
        Resource::ToolPolicy(t) => {
            if !config.contains(Kind::Project, t.project.as_str()) {
                fail("project", missing(Kind::Project, t.project.as_str()));
            }
            if let Some(problem) = four_eyes::deciders_problem(t.approvals) {
                fail("approvals", problem);
            }
            for (i, rule) in t.rules.iter().enumerate() {
                for (field, problem) in rule.problems(i) {
                    let at = match field {
                        "" => format!("rules[{i}]"),
                        f => format!("rules[{i}].{f}"),
                    };
                    fail(&at, problem);
                }
            }
            if t.tool.trim().is_empty() {
                fail(
                    "tool",
                    "give a catalog name or a glob such as `ledger__*`".into(),
                );
            }
            if let Some(c) = &t.capability
                && let Err(e) = validate_capability(c)
            {
                fail("capability", e);
            }
            if t.rate_limit.as_ref().is_some_and(|r| r.per_minute == 0) {
                fail(
                    "rateLimit.perMinute",
                    "must be at least 1; use `deny` to refuse every call".into(),
                );
            }
            if t.ungoverned.as_ref().is_some_and(|r| r.trim().is_empty()) {
                fail(
                    "ungoverned",
                    "state the reason the mutation is ungoverned".into(),
                );
            }
            if t.deny.as_ref().is_some_and(|r| r.trim().is_empty()) {
                fail("deny", "state the reason calls are refused".into());
            }
            for (i, p) in t.project_arguments.iter().enumerate() {
                if !p.starts_with('/') {
                    fail(
                        &format!("projectArguments[{i}]"),
                        format!("`{p}` is not a JSON pointer; write e.g. `/project`"),
                    );
                }
            }
        }
        Resource::Autonomy(a) => {
            if a.level > 4 {
                fail(
                    "level",
                    format!("{} is not a level; use 0, 1, 2, 3 or 4", a.level),
                );
            }
            let (field, kind, name) = match &a.subject {
                AutonomySubject::Agent(n) => ("subject.agent", Kind::Agent, n.as_str()),
                AutonomySubject::User(n) => ("subject.user", Kind::User, n.as_str()),
                AutonomySubject::ServiceAccount(n) => {
                    ("subject.serviceAccount", Kind::ServiceAccount, n.as_str())
                }
                AutonomySubject::Project(n) => ("subject.project", Kind::Project, n.as_str()),
                AutonomySubject::Intent(_) => ("subject.intent", Kind::Agent, ""),
            };
            if !name.is_empty() && !config.contains(kind, name) {
                fail(field, missing(kind, name));
            }
            if a.veto_window.is_some_and(|w| w.is_zero()) {
                fail("vetoWindow", "must be greater than zero".into());
            }
            if a.approval_ttl.is_some_and(|w| w.is_zero()) {
                fail("approvalTtl", "must be greater than zero".into());
            }
        }
        Resource::WriteBudget(w) => {
            let target = match &w.subject {
                BudgetSubject::Agent(n) => Some(("subject.agent", Kind::Agent, n)),
                BudgetSubject::User(n) => Some(("subject.user", Kind::User, n)),
                BudgetSubject::ServiceAccount(n) => {
                    Some(("subject.serviceAccount", Kind::ServiceAccount, n))
                }
                BudgetSubject::All(true) => None,
                BudgetSubject::All(false) => {
                    fail("subject.all", "write `all: true` or name a subject".into());
                    None
                }
            };
            if let Some((field, kind, name)) = target
                && !config.contains(kind, name.as_str())
            {
                fail(field, missing(kind, name.as_str()));
            }
        }
        Resource::KillSwitch(k) => {
            if k.reason.trim().is_empty() {
                fail("reason", "say why the scope is frozen".into());
            }
            match &k.scope {
                KillScope::All(true) => {}
                KillScope::All(false) => {
                    fail("scope.all", "write `all: true` or name a scope".into())
                }
                KillScope::Project(n) => {
                    if !config.contains(Kind::Project, n.as_str()) {
                        fail("scope.project", missing(Kind::Project, n.as_str()));
                    }
                }
                KillScope::Agent(n) => {
                    if !config.contains(Kind::Agent, n.as_str()) {
                        fail("scope.agent", missing(Kind::Agent, n.as_str()));
                    }
                }
                KillScope::Tool(t) => {
                    if t.trim().is_empty() {
                        fail("scope.tool", "give a catalog name or a glob".into());
                    }
                }
                KillScope::Principal(s) => {
                    if !config.has_subject(s) {
                        let (field, kind) = subject_kind(s);
                        fail(
                            &format!("scope.principal.{field}"),
                            missing(kind, subject_name(s).as_str()),
                        );
                    }
                }
            }
        }
        Resource::Issuer(i) => {
            for (field, problem) in i.problems() {
                fail(&field, problem);
            }
            for (client, account) in &i.clients {
                if !config.contains(Kind::ServiceAccount, account.as_str()) {
                    fail(
                        &format!("clients.{client}"),
                        missing(Kind::ServiceAccount, account.as_str()),
                    );
                }
            }
        }
        Resource::ReviewPolicy(r) => {
            if !config.contains(Kind::Project, r.project.as_str()) {
                fail("project", missing(Kind::Project, r.project.as_str()));
            }
            for (field, problem) in r.approvals.problems() {
                fail(&field, problem);
            }
        }
        Resource::GitProvider(g) => {
            if !config.contains(Kind::Project, g.project.as_str()) {
                fail("project", missing(Kind::Project, g.project.as_str()));
            }
            for (field, problem) in g.problems() {
                fail(&field, problem);
            }
        }
        Resource::Reconciler(r) => {
            if !config.contains(Kind::Project, r.project.as_str()) {
                fail("project", missing(Kind::Project, r.project.as_str()));
            }
            if r.role.as_str() != BUILTIN_ADMIN_ROLE
                && !config.contains(Kind::Role, r.role.as_str())
            {
                fail("role", missing(Kind::Role, r.role.as_str()));
            }
            for (field, problem) in r.problems() {
                fail(&field, problem);
            }
        }
        Resource::Notifier(n) => {
            for (field, problem) in n.problems() {
                fail(field, problem);
            }
        }
        Resource::Workspace(w) => {
            if !config.contains(Kind::Project, w.project.as_str()) {
                fail("project", missing(Kind::Project, w.project.as_str()));
            }
            let mut seen = std::collections::BTreeSet::new();
            for (i, r) in w.repositories.iter().enumerate() {
                if !seen.insert(r.name.as_str()) {
                    fail(
                        &format!("repositories[{i}].name"),
                        format!("`{}` is named twice", r.name),
                    );
                }
                if r.url.trim().is_empty() {
                    fail(
                        &format!("repositories[{i}].url"),
                        "give a local path or a URL `git clone` accepts".into(),
                    );
                }
                if r.branch.as_deref().is_some_and(|b| {
                    b.trim() != b || b.is_empty() || b.starts_with('-') || b.contains("..")
                }) {
                    fail(
                        &format!("repositories[{i}].branch"),
                        "give a branch name, or leave it out for the default branch".into(),
                    );
                }
            }
        }
    }
}

/// The JSON Schema of a configuration document, generated from the same types that parse it.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(Resource);
    serde_json::to_value(schema).unwrap_or_default()
}

#[cfg(test)]
mod tests;
