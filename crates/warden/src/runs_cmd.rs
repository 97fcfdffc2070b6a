//! `warden get runs` and `warden describe run ID` (and `describe` of any resource), on the
//! store directly.

use serde_json::Value;

use crate::cli::{DescribeArgs, GetArgs, Output};
use crate::common::{location, open_existing};
use crate::output;

pub(crate) async fn list(args: GetArgs) -> anyhow::Result<()> {
    let store = open_existing(&location(&args.store)?).await?;
    let mut runs = store.runs(None, 100).await?;
    if let Some(id) = &args.name {
        runs.retain(|r| &r.id == id);
    }
    match args.output {
        Output::Json => output::json(&runs),
        Output::Yaml => output::yaml_docs(&runs),
        Output::Table => {
            let rows: Vec<Vec<String>> = runs
                .iter()
                .map(|r| {
                    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
                    vec![
                        r.id.clone(),
                        output::time(warden_core::time::Millis(r.at)),
                        dash(&r.mode),
                        dash(&r.principal),
                        dash(&r.agent),
                        dash(&r.status),
                    ]
                })
                .collect();
            if rows.is_empty() {
                eprintln!("no runs");
            } else {
                output::table(
                    &["RUN", "STARTED", "MODE", "PRINCIPAL", "AGENT", "STATUS"],
                    &rows,
                );
            }
            Ok(())
        }
    }
}

pub(crate) async fn describe(args: DescribeArgs) -> anyhow::Result<()> {
    if matches!(args.kind.to_ascii_lowercase().as_str(), "task" | "tasks") {
        return crate::tasks_cmd::describe(args).await;
    }
    let store = open_existing(&location(&args.store)?).await?;
    if !matches!(args.kind.to_ascii_lowercase().as_str(), "run" | "runs") {
        let kind = crate::common::parse_kind(&args.kind)?;
        let (config, _) = store.load_config().await?;
        let resource = config
            .get(kind, &args.name)
            .ok_or_else(|| anyhow::anyhow!("no {kind} named `{}`", args.name))?;
        return match args.output {
            Output::Json => output::json(resource),
            _ => output::yaml_docs(&[resource]),
        };
    }
    let run = store
        .describe_run(&args.name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no run `{}`", args.name))?;
    match args.output {
        Output::Json => output::json(&run),
        Output::Yaml => output::yaml_docs(&[&run]),
        Output::Table => {
            let a = run.authority.clone().unwrap_or(Value::Null);
            let s = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("-").to_owned();
            println!("run:        {}", run.id);
            println!("mode:       {}", s("mode"));
            println!("principal:  {}", s("principal"));
            println!("credential: {}", s("credential"));
            println!("agent:      {}", s("agent"));
            if let Some(l) = &run.lifecycle {
                println!(
                    "trigger:    {}{}",
                    l.trigger,
                    l.schedule_key
                        .as_ref()
                        .map(|k| format!(" ({k})"))
                        .unwrap_or_default()
                );
                println!("status:     {}", l.status);
                if let Some(code) = l.exit_code {
                    println!("exit code:  {code}");
                }
                if let (Some(start), Some(end)) = (l.started_at, l.finished_at) {
                    println!("duration:   {} ms", end - start);
                }
                if let Some(e) = &l.error {
                    println!("error:      {e}");
                }
            }
            println!("projects (tools):");
            match a.get("projects").and_then(Value::as_object) {
                Some(p) if !p.is_empty() => {
                    for (name, why) in p {
                        println!("  {name}: {}", why.as_str().unwrap_or_default());
                    }
                }
                _ => println!("  (none)"),
            }
            if let Some(k) = a
                .get("knowledge_only")
                .and_then(Value::as_object)
                .filter(|k| !k.is_empty())
            {
                println!("knowledge only (no tools):");
                for (name, why) in k {
                    println!("  {name}: {}", why.as_str().unwrap_or_default());
                }
            }
            println!();
            let rows: Vec<Vec<String>> = run
                .calls
                .iter()
                .map(|c| {
                    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
                    vec![
                        output::time(warden_core::time::Millis(c.at)),
                        dash(&c.tool),
                        dash(&c.decision),
                        dash(&c.code),
                        dash(&c.rule),
                        dash(&c.outcome),
                    ]
                })
                .collect();
            if rows.is_empty() {
                println!("no tool calls");
            } else {
                output::table(
                    &["TIME", "TOOL", "DECISION", "CODE", "RULE", "OUTCOME"],
                    &rows,
                );
            }
            Ok(())
        }
    }
}
