//! `warden get runs` and `warden describe run ID` (and the dispatch of `describe`), on the
//! store or through `/api/v1/runs`: both paths give the API's shapes, printed by one function.

use serde_json::Value;
use warden_control::{Caller, runs};

use crate::cli::{DescribeArgs, GetArgs, Output};
use crate::common::{cli_actor, control, open_existing, parse_kind};
use crate::output;
use crate::target::{Reach, Side, Target, resolve};
use crate::views::{cell, field, items, time_cell, to_value, unstring};

/// Where runs are read by default: the store.
const REACH: Reach = Reach::Both(Side::Store);

/// The runs a listing shows, newest first.
const LIMIT: i64 = 100;

pub(crate) async fn list(args: GetArgs) -> anyhow::Result<()> {
    let answer = match resolve(&args.target, REACH).await? {
        Target::Store(location) => {
            let control = control(open_existing(&location).await?);
            let caller = Caller::Operator(cli_actor());
            to_value(&runs::list(&control, &caller, None, LIMIT).await?)?
        }
        Target::Server(api) => api.get(&["runs"], &[("limit", LIMIT.to_string())]).await?,
    };
    let mut runs = items(answer);
    if let Some(id) = &args.name {
        runs.retain(|r| field(r, "id").as_str() == Some(id.as_str()));
    }
    match args.output {
        Output::Json => output::json(&runs),
        Output::Yaml => output::yaml_docs(&runs),
        Output::Table => {
            let rows: Vec<Vec<String>> = runs
                .iter()
                .map(|r| {
                    vec![
                        cell(r, "id"),
                        time_cell(r, "at"),
                        cell(r, "mode"),
                        cell(r, "principal"),
                        cell(r, "agent"),
                        cell(r, "status"),
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
    let which = args.kind.to_ascii_lowercase();
    let kind = match which.as_str() {
        "run" | "runs" | "task" | "tasks" => None,
        _ => Some(parse_kind(&args.kind)?),
    };
    let target = resolve(&args.target, REACH).await?;
    if let Some(kind) = kind {
        return crate::config_cmd::describe(kind, &args.name, target, args.output).await;
    }
    if matches!(which.as_str(), "task" | "tasks") {
        return crate::tasks_cmd::describe(&args.name, target, args.output).await;
    }
    let run = match target {
        Target::Store(location) => {
            let control = control(open_existing(&location).await?);
            let caller = Caller::Operator(cli_actor());
            let run = runs::get(&control, &caller, &args.name).await?;
            let mut run = to_value(&run)?;
            if let Some(lifecycle) = run.get_mut("lifecycle") {
                unstring(lifecycle, &["requestedBy"]);
            }
            run
        }
        Target::Server(api) => api.get(&["runs", &args.name], &[]).await?,
    };
    match args.output {
        Output::Json => output::json(&run),
        Output::Yaml => output::yaml_docs(&[&run]),
        Output::Table => {
            let a = field(&run, "authority");
            let s = |k: &str| field(a, k).as_str().unwrap_or("-").to_owned();
            println!("run:        {}", cell(&run, "id"));
            println!("mode:       {}", s("mode"));
            println!("principal:  {}", s("principal"));
            println!("credential: {}", s("credential"));
            println!("agent:      {}", s("agent"));
            let l = field(&run, "lifecycle");
            if !l.is_null() {
                let schedule = field(l, "scheduleKey")
                    .as_str()
                    .map(|k| format!(" ({k})"))
                    .unwrap_or_default();
                println!("trigger:    {}{schedule}", cell(l, "trigger"));
                println!("status:     {}", cell(l, "status"));
                if let Some(code) = field(l, "exitCode").as_i64() {
                    println!("exit code:  {code}");
                }
                if let (Some(start), Some(end)) = (
                    field(l, "startedAt").as_i64(),
                    field(l, "finishedAt").as_i64(),
                ) {
                    println!("duration:   {} ms", end - start);
                }
                if let Some(e) = field(l, "error").as_str() {
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
            let rows: Vec<Vec<String>> = field(&run, "calls")
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| {
                            vec![
                                time_cell(c, "at"),
                                cell(c, "tool"),
                                cell(c, "decision"),
                                cell(c, "code"),
                                cell(c, "rule"),
                                cell(c, "outcome"),
                            ]
                        })
                        .collect()
                })
                .unwrap_or_default();
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
