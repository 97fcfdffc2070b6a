//! `warden get tasks` and `warden describe task ID`: the operators' view of tasks, their
//! environments and sessions, on the store directly.

use warden_store::TaskFilter;

use crate::cli::{DescribeArgs, GetArgs, Output};
use crate::common::{location, open_existing};
use crate::output;

pub(crate) async fn list(args: GetArgs) -> anyhow::Result<()> {
    let store = open_existing(&location(&args.store)?).await?;
    let mut tasks = store
        .tasks(&TaskFilter {
            limit: Some(1000),
            ..TaskFilter::default()
        })
        .await?;
    if let Some(id) = &args.name {
        tasks.retain(|t| &t.id == id);
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
                        t.id.clone(),
                        t.workspace.clone(),
                        t.state.to_string(),
                        t.parent_id.clone().unwrap_or_else(|| "-".into()),
                        t.workspace_mode.clone().unwrap_or_else(|| "-".into()),
                        t.title.clone(),
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

pub(crate) async fn describe(args: DescribeArgs) -> anyhow::Result<()> {
    let store = open_existing(&location(&args.store)?).await?;
    let task = store
        .task(&args.name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no task `{}`", args.name))?;
    let environment = warden_mcp::work::effective_environment(&store, &task).await?;
    let sessions = store.runs_of_task(&task.id).await?;
    let detail =
        serde_json::json!({"task": task, "environment": environment, "sessions": sessions});
    match args.output {
        Output::Json => output::json(&detail),
        Output::Yaml => output::yaml_docs(&[&detail]),
        Output::Table => {
            println!("task:        {}", task.id);
            println!("title:       {}", task.title);
            println!("workspace:   {}", task.workspace);
            println!("state:       {}", task.state);
            println!("parent:      {}", task.parent_id.as_deref().unwrap_or("-"));
            println!(
                "mode:        {}",
                task.workspace_mode.as_deref().unwrap_or("-")
            );
            println!("from office: {}", task.from_office);
            if let Some(session) = &task.created_in_session {
                println!("created in:  {session}");
            }
            match &environment {
                None => println!("environment: none yet"),
                Some(env) => {
                    let whose = if env.task_id == task.id {
                        String::new()
                    } else {
                        format!(" (inherited from {})", env.task_id)
                    };
                    println!(
                        "environment: {} {}{whose} at {}",
                        env.id, env.state, env.path
                    );
                    for r in &env.repositories {
                        println!(
                            "  {}@{} {} {}{}",
                            r.repository,
                            r.branch,
                            r.state,
                            r.path,
                            r.error
                                .as_ref()
                                .map(|e| format!(" ({e})"))
                                .unwrap_or_default()
                        );
                    }
                }
            }
            if sessions.is_empty() {
                println!("sessions:    none");
            } else {
                println!("sessions:");
                for s in &sessions {
                    println!("  {} {} {}", s.id, s.agent, s.status);
                }
            }
            Ok(())
        }
    }
}
