//! `warden apply|get|describe|delete|kill|config`: declarative configuration (OPS-2), on the
//! store or through a server's admin API (`/api/v1/resources`, `/api/v1/killswitches`). Both
//! paths end in the same values — resources, what an apply changed, a kill switch's key, the
//! configuration's problems — and one function prints each.

use serde::Deserialize;
use serde_json::{Value, json};
use warden_control::{Caller, Refusal, killswitches};
use warden_core::config::{
    AgentSpec, BUILTIN_ADMIN_ROLE, Config, ConfigError, KillScope, KillSwitchSpec, Kind, Located,
    Resource, json_schema,
};
use warden_core::name::Name;
use warden_core::principal::Subject;
use warden_store::Location;

use crate::api::Failure;
use crate::cli::{ApplyArgs, ConfigCommand, DeleteArgs, GetArgs, KillArgs, Output};
use crate::common::{
    cli_actor, config_errors, control, open, open_existing, parse_config_texts, parse_kind,
    read_config_files, read_config_texts, usage,
};
use crate::output;
use crate::target::{Reach, Side, Target, resolve};

/// Where the configuration verbs work by default: the store.
const REACH: Reach = Reach::Both(Side::Store);

/// What an apply changed (or, on a dry run, would change), as `POST /api/v1/resources`
/// answers it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Applied {
    dry_run: bool,
    changes: Vec<Change>,
}

/// One resource of an apply.
#[derive(Debug, Deserialize)]
struct Change {
    kind: String,
    name: String,
    /// `created`, `configured` or `unchanged`.
    status: String,
}

pub(crate) async fn apply(args: ApplyArgs) -> anyhow::Result<()> {
    let files = read_config_texts(&args.files)?;
    let resources = parse_config_texts(&files)?;
    if resources.is_empty() {
        return Err(usage("the files hold no resources"));
    }
    let applied = match resolve(&args.target, REACH).await? {
        Target::Store(location) => {
            let control = control(open(&location).await?)
                .with_secrets(crate::common::store_secrets(&location));
            apply_on(control, resources, args.dry_run).await?
        }
        Target::Server(api) => {
            // The files as they are, named as here, so that the server's errors name them so.
            let files: Vec<Value> = files
                .iter()
                .map(|(name, content)| json!({"name": name, "content": content}))
                .collect();
            let query = [("dryRun", args.dry_run.to_string())];
            let answer = api
                .post(&["resources"], &query, json!({ "files": files }))
                .await?;
            serde_json::from_value(answer)
                .map_err(|e| anyhow::anyhow!("the server's answer to an apply: {e}"))?
        }
    };
    let dry = if applied.dry_run { " (dry run)" } else { "" };
    for c in &applied.changes {
        println!("{}/{} {}{dry}", c.kind, c.name, c.status);
    }
    Ok(())
}

/// An apply on the store, by the one service the admin API calls too.
async fn apply_on(
    control: warden_control::Control,
    resources: Vec<Located>,
    dry_run: bool,
) -> anyhow::Result<Applied> {
    let caller = Caller::Operator(cli_actor());
    let applied = warden_control::resources::apply(&control, &caller, resources, dry_run)
        .await
        .map_err(|e| match e {
            Refusal::Config { errors, .. } => config_errors(&errors),
            other => other.into(),
        })?;
    Ok(Applied {
        dry_run,
        changes: applied
            .changes
            .into_iter()
            .map(|c| Change {
                kind: c.kind.to_string(),
                name: c.key,
                status: c.status.as_str().to_owned(),
            })
            .collect(),
    })
}

/// The resources of an answer of `/api/v1/resources/…`.
fn resources_of(answer: Value) -> anyhow::Result<Vec<Resource>> {
    let list = match answer {
        Value::Array(list) => list,
        one => vec![one],
    };
    list.into_iter()
        .map(|r| {
            serde_json::from_value(r).map_err(|e| {
                anyhow::anyhow!("the server answered a resource this warden cannot read: {e}")
            })
        })
        .collect()
}

/// `warden get` of a configuration kind; runs and tasks are listed by their own modules.
pub(crate) async fn get(args: GetArgs) -> anyhow::Result<()> {
    let kind = parse_kind(&args.kind)?;
    if kind == Kind::Notifier && args.output == Output::Table {
        return crate::notifiers_cmd::table(args).await;
    }
    let resources = match resolve(&args.target, REACH).await? {
        Target::Store(location) => {
            let (config, _) = open_existing(&location).await?.load_config().await?;
            config.of_kind(kind).cloned().collect()
        }
        Target::Server(api) => resources_of(api.get(&["resources", kind.as_str()], &[]).await?)?,
    };
    show(kind, args.name.as_deref(), &resources, args.output)
}

/// Prints the resources of `kind` (or the one named `name`).
fn show(kind: Kind, name: Option<&str>, all: &[Resource], output: Output) -> anyhow::Result<()> {
    let mut resources: Vec<&Resource> = all.iter().collect();
    // The built-in role is no resource (it cannot be applied), but a listing of roles shows it.
    let builtin = kind == Kind::Role
        && output == Output::Table
        && name.is_none_or(|n| n == BUILTIN_ADMIN_ROLE);
    if let Some(name) = name {
        resources.retain(|r| r.key() == name);
        if resources.is_empty() && !builtin {
            return Err(anyhow::anyhow!("no {kind} named `{name}`"));
        }
    }
    match output {
        Output::Json => {
            if name.is_some() {
                output::json(&resources.first())
            } else {
                output::json(&resources)
            }
        }
        Output::Yaml => output::yaml_docs(&resources),
        Output::Table => {
            let (header, mut rows) = rows(kind, &resources);
            if builtin {
                rows.insert(
                    0,
                    vec![
                        BUILTIN_ADMIN_ROLE.to_owned(),
                        "*".into(),
                        "built-in: every capability".into(),
                    ],
                );
            }
            if rows.is_empty() {
                eprintln!("no {kind} resources");
            } else {
                output::table(&header, &rows);
            }
            Ok(())
        }
    }
}

/// `warden describe KIND NAME` of a configuration kind: the resource as JSON, else as YAML.
pub(crate) async fn describe(
    kind: Kind,
    name: &str,
    target: Target,
    output: Output,
) -> anyhow::Result<()> {
    let resource = match target {
        Target::Store(location) => {
            let (config, _) = open_existing(&location).await?.load_config().await?;
            config
                .get(kind, name)
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("no {kind} named `{name}`"))?
        }
        Target::Server(api) => {
            let answer = api.get(&["resources", kind.as_str(), name], &[]).await?;
            resources_of(answer)?
                .into_iter()
                .next()
                .ok_or_else(|| anyhow::anyhow!("no {kind} named `{name}`"))?
        }
    };
    match output {
        Output::Json => output::json(&resource),
        _ => output::yaml_docs(&[resource]),
    }
}

fn join<T: ToString>(items: &[T]) -> String {
    if items.is_empty() {
        "-".into()
    } else {
        items
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".into(), ToString::to_string)
}

fn rows(kind: Kind, resources: &[&Resource]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header: Vec<&'static str> = match kind {
        Kind::User => vec!["NAME", "GROUPS"],
        Kind::ServiceAccount => vec!["NAME", "DESCRIPTION"],
        Kind::Role => vec!["NAME", "PERMISSIONS", "DESCRIPTION"],
        Kind::RoleBinding => vec!["NAME", "ROLE", "SUBJECT"],
        Kind::Project => vec!["NAME", "PROMPTS", "DOCUMENTS"],
        Kind::Upstream => vec!["NAME", "PROJECT", "TRANSPORT", "TARGET"],
        Kind::Model => vec!["NAME", "URL", "MODEL"],
        Kind::Agent => vec!["NAME", "MEMBERSHIPS", "SCHEDULES"],
        Kind::ToolPolicy => vec!["NAME", "PROJECT", "TOOL", "CLASS", "CAPABILITY", "RISK"],
        Kind::Autonomy => vec!["NAME", "SUBJECT", "LEVEL"],
        Kind::WriteBudget => vec!["NAME", "SUBJECT", "WRITES/MIN", "PER"],
        Kind::KillSwitch => vec!["NAME", "SCOPE", "REASON"],
        Kind::Workspace => vec!["NAME", "MODE", "PROJECT"],
        Kind::Issuer => vec!["NAME", "ISSUER", "CLIENTS"],
        Kind::ReviewPolicy => vec!["PROJECT", "LOW", "MEDIUM", "HIGH", "CRITICAL"],
        Kind::GitProvider => vec!["NAME", "PROJECT", "URL", "WEBHOOK"],
        Kind::Reconciler => vec![
            "NAME",
            "PROJECT",
            "SCHEDULE",
            "ROLE",
            "AUTONOMY CAP",
            "STALE AFTER",
        ],
        Kind::Notifier => vec!["NAME", "URL", "EVENTS", "FORMAT"],
    };
    let rows = resources
        .iter()
        .map(|r| {
            let key = r.key();
            match r {
                Resource::User(u) => vec![key, join(&u.groups)],
                Resource::ServiceAccount(s) => vec![key, opt(&s.description)],
                Resource::Role(x) => vec![key, join(&x.permissions), opt(&x.description)],
                Resource::RoleBinding(b) => vec![key, b.role.to_string(), b.subject.to_string()],
                Resource::Project(p) => vec![
                    key,
                    p.prompts.len().to_string(),
                    p.documents.len().to_string(),
                ],
                Resource::Upstream(u) => {
                    let (t, target) = match (&u.stdio, &u.http) {
                        (Some(s), _) => ("stdio", s.command.clone()),
                        (_, Some(h)) => ("http", h.url.clone()),
                        _ => ("-", "-".into()),
                    };
                    vec![key, u.project.to_string(), t.into(), target]
                }
                Resource::Agent(AgentSpec {
                    memberships,
                    schedules,
                    ..
                }) => {
                    let crons: Vec<&str> = schedules.iter().map(|s| s.cron.as_str()).collect();
                    vec![key, join(memberships), join(&crons)]
                }
                Resource::ToolPolicy(t) => vec![
                    key,
                    t.project.to_string(),
                    t.tool.clone(),
                    t.class
                        .map_or("-".into(), |c| format!("{c:?}").to_lowercase()),
                    opt(&t.capability),
                    t.risk
                        .map_or("-".into(), |r| format!("{r:?}").to_lowercase()),
                ],
                Resource::Autonomy(a) => vec![key, a.subject.to_string(), format!("L{}", a.level)],
                Resource::WriteBudget(w) => vec![
                    key,
                    w.subject.to_string(),
                    w.max_writes_per_minute.to_string(),
                    format!("{:?}", w.per).to_lowercase(),
                ],
                Resource::KillSwitch(k) => vec![key, k.scope.to_string(), k.reason.clone()],
                Resource::Model(m) => vec![
                    key,
                    warden_core::url_credentials::redact(&m.url),
                    m.model.clone(),
                ],
                Resource::Issuer(i) => vec![
                    key,
                    i.issuer.clone(),
                    i.clients.keys().cloned().collect::<Vec<_>>().join(","),
                ],
                Resource::Workspace(w) => vec![
                    key,
                    format!("{:?}", w.mode).to_lowercase(),
                    w.project.to_string(),
                ],
                Resource::ReviewPolicy(r) => {
                    let mut row = vec![key];
                    row.extend(
                        warden_core::work::Risk::ALL
                            .map(|risk| r.approvals.needed(risk).to_string()),
                    );
                    row
                }
                Resource::GitProvider(g) => vec![
                    key,
                    g.project.to_string(),
                    warden_core::url_credentials::redact(&g.url),
                    // The reference, never a value: a secret is never shown again.
                    g.webhook_secret().map_or("-".into(), |_| "signed".into()),
                ],
                Resource::Reconciler(x) => vec![
                    key,
                    x.project.to_string(),
                    x.schedule.clone(),
                    x.role.to_string(),
                    x.autonomy_cap.to_string(),
                    humantime::format_duration(x.stale_after()).to_string(),
                ],
                Resource::Notifier(n) => vec![
                    key,
                    n.url.clone(),
                    n.events
                        .iter()
                        .map(|e| e.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                    serde_json::to_value(n.format)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                ],
            }
        })
        .collect();
    (header, rows)
}

pub(crate) async fn delete(args: DeleteArgs) -> anyhow::Result<()> {
    let kind = parse_kind(&args.kind)?;
    let key = args.name.as_str();
    if kind == Kind::Role && key == BUILTIN_ADMIN_ROLE {
        return Err(usage(format!(
            "role `{key}` is built in and cannot be deleted"
        )));
    }
    match resolve(&args.target, REACH).await? {
        Target::Store(location) => delete_on(&location, kind, key).await?,
        Target::Server(api) => {
            // A kill switch is released where it is pulled, with `killswitches:write`.
            let path = if kind == Kind::KillSwitch {
                vec!["killswitches", key]
            } else {
                vec!["resources", kind.as_str(), key]
            };
            match api.delete(&path).await {
                Ok(_) => {}
                Err(Failure::Refused { code, errors, .. }) if code == "IN_USE" => {
                    return Err(usage(still_referenced(kind, key, &errors)));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    println!("{kind}/{key} deleted");
    Ok(())
}

/// Deletes one resource of the store, or says what still references it (exit status 2).
async fn delete_on(location: &Location, kind: Kind, key: &str) -> anyhow::Result<()> {
    let store = open_existing(location).await?;
    let caller = Caller::Operator(cli_actor());
    warden_control::resources::delete(&control(store), &caller, kind, key)
        .await
        .map_err(|e| match e {
            Refusal::Config { errors, .. } => usage(still_referenced(kind, key, &errors)),
            other => other.into(),
        })?;
    Ok(())
}

/// Why a resource cannot be deleted, from what the configuration without it gets wrong: the
/// resources (and fields) that name it. As `warden delete` spells kinds:
/// "project `demo` is still referenced by upstream `notes` (field `project`); delete that
/// first".
fn still_referenced(kind: Kind, key: &str, errors: &[ConfigError]) -> String {
    let mut by: Vec<String> = Vec::new();
    for e in errors {
        // `Upstream `notes``, as the configuration names resources.
        let resource = e.resource.as_deref().map_or_else(
            || "another resource".to_owned(),
            |r| match r.split_once(' ') {
                Some((kind, name)) => format!("{} {name}", kind.to_ascii_lowercase()),
                None => r.to_owned(),
            },
        );
        let line = match &e.field {
            Some(field) => format!("{resource} (field `{field}`)"),
            None => resource,
        };
        if !by.contains(&line) {
            by.push(line);
        }
    }
    let which = if by.len() == 1 { "that" } else { "those" };
    format!(
        "{} `{key}` is still referenced by {}; delete {which} first",
        kind.as_str().to_ascii_lowercase(),
        by.join(", ")
    )
}

fn name_arg(flag: &str, value: &str) -> anyhow::Result<Name> {
    Name::new(value).map_err(|e| usage(format!("--{flag}: {e}")))
}

pub(crate) async fn kill(args: KillArgs) -> anyhow::Result<()> {
    let scope = if args.all {
        KillScope::All(true)
    } else if let Some(p) = &args.project {
        KillScope::Project(name_arg("project", p)?)
    } else if let Some(a) = &args.agent {
        KillScope::Agent(name_arg("agent", a)?)
    } else if let Some(t) = &args.tool {
        KillScope::Tool(t.clone())
    } else if let Some(u) = &args.user {
        KillScope::Principal(Subject::User(name_arg("user", u)?))
    } else if let Some(s) = &args.service_account {
        KillScope::Principal(Subject::ServiceAccount(name_arg("service-account", s)?))
    } else {
        return Err(usage(
            "name a scope: --all, --project, --agent, --tool, --user or --service-account",
        ));
    };
    let name = args
        .name
        .as_deref()
        .map(|n| name_arg("name", n))
        .transpose()?;
    let spec = KillSwitchSpec {
        name,
        scope,
        reason: args.reason.clone(),
    };
    let pulled: Result<String, Vec<ConfigError>> = match resolve(&args.target, REACH).await? {
        Target::Store(location) => {
            let caller = Caller::Operator(cli_actor());
            match killswitches::pull(&control(open(&location).await?), &caller, spec).await {
                Ok(pulled) => Ok(pulled.key),
                Err(Refusal::Config { errors, .. }) => Err(errors),
                Err(e) => return Err(e.into()),
            }
        }
        Target::Server(api) => match api
            .post(&["killswitches"], &[], serde_json::to_value(&spec)?)
            .await
        {
            Ok(answer) => Ok(answer
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()),
            Err(Failure::Refused { errors, .. }) if !errors.is_empty() => Err(errors),
            Err(e) => return Err(e.into()),
        },
    };
    let key = pulled.map_err(|mut errors| {
        // No file was read: the problems name the kill switch and its field only.
        for e in &mut errors {
            e.file = None;
            e.document = None;
        }
        config_errors(&errors)
    })?;
    println!("KillSwitch/{key} pulled: {}", args.reason);
    println!("release it with: warden delete killswitch {key}");
    Ok(())
}

pub(crate) fn config(cmd: ConfigCommand) -> anyhow::Result<()> {
    match cmd {
        ConfigCommand::Schema => output::json(&json_schema()),
        ConfigCommand::Validate(args) => {
            let mut resources = read_config_files(&args.files)?;
            for r in &mut resources {
                if let Resource::GitProvider(p) = &mut r.resource {
                    p.stand_in_for_value();
                }
            }
            let n = resources.len();
            Config::validate(resources).map_err(|e| {
                if e.iter().any(ConfigError::is_missing_reference) {
                    // What the store holds is not looked at here.
                    let mut errors = e;
                    errors.push(ConfigError {
                        file: None,
                        document: None,
                        resource: None,
                        field: None,
                        message: "`warden config validate` checks the given files alone; \
                                  `warden apply --dry-run -f …` checks them against a store"
                            .into(),
                    });
                    config_errors(&errors)
                } else {
                    config_errors(&e)
                }
            })?;
            println!("{n} resources are valid");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_delete_names_what_still_references_it() {
        let error = |resource: &str, field: Option<&str>| ConfigError {
            file: Some("store".into()),
            document: None,
            resource: Some(resource.into()),
            field: field.map(Into::into),
            message: "no Project named `demo`".into(),
        };
        assert_eq!(
            still_referenced(
                Kind::Project,
                "demo",
                &[error("Upstream `notes`", Some("project"))]
            ),
            "project `demo` is still referenced by upstream `notes` (field `project`); delete that first"
        );
        assert_eq!(
            still_referenced(
                Kind::Project,
                "demo",
                &[
                    error("Upstream `notes`", Some("project")),
                    error("ToolPolicy `demo:notes__add_note`", Some("project")),
                    error("Upstream `notes`", Some("project")),
                ]
            ),
            "project `demo` is still referenced by upstream `notes` (field `project`), toolpolicy `demo:notes__add_note` (field `project`); delete those first"
        );
    }
}
