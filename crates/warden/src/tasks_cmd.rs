//! `warden get tasks` and `warden describe task ID`: the operators' view of tasks, their
//! environments and sessions, on the store or through `/api/v1/tasks` (which shows the tasks of
//! the workspaces the token may read; the store holds them all). Both paths give the API's
//! shapes, printed by one function.

use serde_json::{Value, json};
use warden_store::TaskFilter;

use crate::cli::{GetArgs, Output};
use crate::common::open_existing;
use crate::output;
use crate::target::{Reach, Side, Target, resolve};
use crate::views::{cell, field, items, to_value, unstring};

/// The tasks a listing shows, newest first (as the API's).
const LIMIT: i64 = 1000;

/// A task as the API shows it: its creator's reference as JSON.
fn task_view(task: &warden_store::Task) -> anyhow::Result<Value> {
    let mut v = to_value(task)?;
    unstring(&mut v, &["createdBy"]);
    Ok(v)
}

pub(crate) async fn list(args: GetArgs) -> anyhow::Result<()> {
    let mut tasks = match resolve(&args.target, Reach::Both(Side::Store)).await? {
        Target::Store(location) => open_existing(&location)
            .await?
            .tasks(&TaskFilter {
                limit: Some(LIMIT),
                ..TaskFilter::default()
            })
            .await?
            .iter()
            .map(task_view)
            .collect::<anyhow::Result<Vec<_>>>()?,
        Target::Server(api) => items(api.get(&["tasks"], &[]).await?),
    };
    if let Some(id) = &args.name {
        tasks.retain(|t| field(t, "id").as_str() == Some(id.as_str()));
    }
    match args.output {
        Output::Json => output::json(&tasks),
        Output::Yaml => output::yaml_docs(&tasks),
        Output::Table => {
            if tasks.is_empty() {
                eprintln!("no tasks");
                return Ok(());
            }
            let rows: Vec<Vec<String>> = tasks
                .iter()
                .map(|t| {
                    vec![
                        cell(t, "id"),
                        cell(t, "workspace"),
                        cell(t, "state"),
                        cell(t, "parentId"),
                        cell(t, "workspaceMode"),
                        cell(t, "title"),
                    ]
                })
                .collect();
            output::table(
                &["TASK", "WORKSPACE", "STATE", "PARENT", "MODE", "TITLE"],
                &rows,
            );
            Ok(())
        }
    }
}

pub(crate) async fn describe(id: &str, target: Target, output: Output) -> anyhow::Result<()> {
    let detail = match target {
        Target::Store(location) => {
            let store = open_existing(&location).await?;
            let task = store
                .task(id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no task `{id}`"))?;
            let environment = warden_work::tasks::effective_environment(&store, &task).await?;
            let mut sessions = to_value(&store.runs_of_task(&task.id).await?)?;
            if let Some(sessions) = sessions.as_array_mut() {
                for s in sessions {
                    unstring(s, &["requestedBy"]);
                }
            }
            json!({"task": task_view(&task)?, "environment": environment, "sessions": sessions})
        }
        Target::Server(api) => api.get(&["tasks", id], &[]).await?,
    };
    match output {
        Output::Json => output::json(&detail),
        Output::Yaml => output::yaml_docs(&[&detail]),
        Output::Table => {
            let task = field(&detail, "task");
            println!("task:        {}", cell(task, "id"));
            println!("title:       {}", cell(task, "title"));
            println!("workspace:   {}", cell(task, "workspace"));
            println!("state:       {}", cell(task, "state"));
            println!("parent:      {}", cell(task, "parentId"));
            println!("mode:        {}", cell(task, "workspaceMode"));
            println!("from office: {}", cell(task, "fromOffice"));
            if let Some(session) = field(task, "createdInSession").as_str() {
                println!("created in:  {session}");
            }
            let env = field(&detail, "environment");
            if env.is_null() {
                println!("environment: none yet");
            } else {
                let whose = if field(env, "taskId") == field(task, "id") {
                    String::new()
                } else {
                    format!(" (inherited from {})", cell(env, "taskId"))
                };
                println!(
                    "environment: {} {}{whose} at {}",
                    cell(env, "id"),
                    cell(env, "state"),
                    cell(env, "path")
                );
                for r in field(env, "repositories").as_array().into_iter().flatten() {
                    println!(
                        "  {}@{} {} {}{}",
                        cell(r, "repository"),
                        cell(r, "branch"),
                        cell(r, "state"),
                        cell(r, "path"),
                        field(r, "error")
                            .as_str()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    );
                }
            }
            let sessions = field(&detail, "sessions")
                .as_array()
                .cloned()
                .unwrap_or_default();
            if sessions.is_empty() {
                println!("sessions:    none");
            } else {
                println!("sessions:");
                for s in &sessions {
                    println!(
                        "  {} {} {}",
                        cell(s, "id"),
                        cell(s, "agent"),
                        cell(s, "status")
                    );
                }
            }
            Ok(())
        }
    }
}
