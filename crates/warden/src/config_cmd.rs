//! `warden apply|get|delete|kill|config`: declarative configuration on the store (OPS-2).

use warden_core::config::{
    AgentSpec, BUILTIN_ADMIN_ROLE, Config, ConfigError, KillScope, KillSwitchSpec, Kind, Located,
    Resource, json_schema,
};
use warden_core::name::Name;
use warden_core::principal::Subject;
use warden_store::Store;

use crate::cli::{ApplyArgs, ConfigCommand, DeleteArgs, GetArgs, KillArgs, Output};
use crate::common::{
    cli_actor, config_errors, location, now, open, open_existing, parse_kind, read_config_files,
    usage,
};
use crate::output;

pub(crate) async fn apply(args: ApplyArgs) -> anyhow::Result<()> {
    let resources = read_config_files(&args.files)?;
    if resources.is_empty() {
        return Err(usage("the files hold no resources"));
    }
    let store = open(&location(&args.store)?).await?;
    let (current, _) = store.load_config().await?;
    let changes: Vec<(&Located, &'static str)> = resources
        .iter()
        .map(|r| {
            let status = match current.get(r.resource.kind(), &r.resource.key()) {
                None => "created",
                Some(existing) if *existing == r.resource => "unchanged",
                Some(_) => "configured",
            };
            (r, status)
        })
        .collect();
    if args.dry_run {
        let base = current.resources().cloned().collect();
        Config::merge(base, resources.clone()).map_err(|e| config_errors(&e))?;
        for (r, status) in &changes {
            println!(
                "{}/{} {status} (dry run)",
                r.resource.kind(),
                r.resource.key()
            );
        }
        return Ok(());
    }
    let to_write: Vec<Located> = changes
        .iter()
        .filter(|(_, status)| *status != "unchanged")
        .map(|(r, _)| (*r).clone())
        .collect();
    if !to_write.is_empty() {
        store
            .apply(to_write, &cli_actor(), now())
            .await?
            .map_err(|e| config_errors(&e))?;
    } else {
        // Still validate: an unchanged file may reference something deleted since.
        let base = current.resources().cloned().collect();
        Config::merge(base, resources.clone()).map_err(|e| config_errors(&e))?;
    }
    for (r, status) in &changes {
        println!("{}/{} {status}", r.resource.kind(), r.resource.key());
    }
    Ok(())
}

pub(crate) async fn get(args: GetArgs) -> anyhow::Result<()> {
    match args.kind.to_ascii_lowercase().as_str() {
        "run" | "runs" => return crate::runs_cmd::list(args).await,
        "task" | "tasks" => return crate::tasks_cmd::list(args).await,
        _ => {}
    }
    let kind = parse_kind(&args.kind)?;
    let store = open_existing(&location(&args.store)?).await?;
    let (config, _) = store.load_config().await?;
    let mut resources: Vec<&Resource> = config.of_kind(kind).collect();
    // The built-in role is no resource (it cannot be applied), but a listing of roles shows it.
    let builtin = kind == Kind::Role
        && args.output == Output::Table
        && args.name.as_deref().is_none_or(|n| n == BUILTIN_ADMIN_ROLE);
    if let Some(name) = &args.name {
        resources.retain(|r| &r.key() == name);
        if resources.is_empty() && !builtin {
            return Err(anyhow::anyhow!("no {kind} named `{name}`"));
        }
    }
    match args.output {
        Output::Json => {
            if args.name.is_some() {
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
        Kind::Agent => vec!["NAME", "MEMBERSHIPS", "SCHEDULES"],
        Kind::ToolPolicy => vec!["NAME", "PROJECT", "TOOL", "CLASS", "CAPABILITY", "RISK"],
        Kind::Autonomy => vec!["NAME", "SUBJECT", "LEVEL"],
        Kind::WriteBudget => vec!["NAME", "SUBJECT", "WRITES/MIN", "PER"],
        Kind::KillSwitch => vec!["NAME", "SCOPE", "REASON"],
        Kind::Workspace => vec!["NAME", "MODE", "PROJECT"],
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
                Resource::Workspace(w) => vec![
                    key,
                    format!("{:?}", w.mode).to_lowercase(),
                    w.project.to_string(),
                ],
            }
        })
        .collect();
    (header, rows)
}

pub(crate) async fn delete(args: DeleteArgs) -> anyhow::Result<()> {
    let kind = parse_kind(&args.kind)?;
    let store = open_existing(&location(&args.store)?).await?;
    delete_resource(&store, kind, &args.name).await?;
    println!("{kind}/{} deleted", args.name);
    Ok(())
}

/// Deletes one resource, or says what still references it (exit status 2).
pub(crate) async fn delete_resource(store: &Store, kind: Kind, key: &str) -> anyhow::Result<()> {
    if kind == Kind::Role && key == BUILTIN_ADMIN_ROLE {
        return Err(usage(format!(
            "role `{key}` is built in and cannot be deleted"
        )));
    }
    let (config, _) = store.load_config().await?;
    if !config.contains(kind, key) {
        return Err(anyhow::anyhow!("no {kind} named `{key}`"));
    }
    store
        .delete(kind, key, &cli_actor(), now())
        .await?
        .map_err(|errors| usage(still_referenced(kind, key, &errors)))?;
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
    let resource = Resource::KillSwitch(KillSwitchSpec {
        name,
        scope,
        reason: args.reason.clone(),
    });
    let key = resource.key();
    let store = open(&location(&args.store)?).await?;
    store
        .apply(
            vec![Located {
                source: None,
                resource,
            }],
            &cli_actor(),
            now(),
        )
        .await?
        .map_err(|e| config_errors(&e))?;
    println!("KillSwitch/{key} pulled: {}", args.reason);
    println!("release it with: warden delete killswitch {key}");
    Ok(())
}

pub(crate) fn config(cmd: ConfigCommand) -> anyhow::Result<()> {
    match cmd {
        ConfigCommand::Schema => output::json(&json_schema()),
        ConfigCommand::Validate(args) => {
            let resources = read_config_files(&args.files)?;
            let n = resources.len();
            Config::validate(resources).map_err(|e| config_errors(&e))?;
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
