//! The verbs that only a running server can do, through its admin API: `explain`, `tools
//! inventory` and `tools upstreams` (they need the live catalog and connections), `run agent`
//! (the server's runner) and `task create` (admission by the caller's verified credential);
//! and through its MCP endpoint, `call` (a governed call, as a client makes it). Given a store instead, they
//! say why they need `--server` (docs/cli.md).

use serde_json::{Value, json};

use crate::api::Api;
use crate::cli::{
    CallArgs, ExplainArgs, InventoryArgs, Output, RunAgentArgs, TargetArgs, TaskCreateArgs,
};
use crate::common::usage;
use crate::output;
use crate::target::{Reach, Target, resolve};
use crate::views::field as f;

/// The server of a verb that works through one only.
pub(crate) async fn server(
    target: &TargetArgs,
    verb: &'static str,
    why: &'static str,
) -> anyhow::Result<Api> {
    match resolve(target, Reach::ServerOnly(verb, why)).await? {
        Target::Server(api) => Ok(api),
        Target::Store(_) => Err(usage(format!(
            "`warden {verb}` needs a running server: {why}"
        ))),
    }
}

/// `--args`: a JSON object, or nothing.
fn json_arguments(text: Option<&str>) -> anyhow::Result<Option<Value>> {
    let arguments: Option<Value> = text
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| usage(format!("--args: not JSON: {e}")))?;
    if arguments.as_ref().is_some_and(|a| !a.is_object()) {
        return Err(usage("--args: must be a JSON object"));
    }
    Ok(arguments)
}

/// `warden call TOOL --args JSON`: the decision, and the result when it executed; exit
/// status 1 when the call was denied.
pub(crate) async fn call(args: CallArgs) -> anyhow::Result<()> {
    let arguments = json_arguments(args.arguments.as_deref())?;
    let api = server(
        &args.target,
        "call",
        "a call is executed, parked or denied by a running server",
    )
    .await?;
    let result = api.mcp_call(&args.tool, arguments).await?;
    match args.output {
        Output::Json => output::json(&result),
        Output::Yaml => output::yaml_docs(&[result]),
        Output::Table => {
            let decision = f(f(&result, "_meta"), "warden/decision");
            let s = |key: &str| f(decision, key).as_str().unwrap_or("-").to_owned();
            println!("status:   {}", s("status"));
            if let Some(code) = f(decision, "code").as_str() {
                println!("code:     {code}");
            }
            if let Some(id) = f(decision, "approvalId").as_str() {
                println!("approval: {id}");
            }
            println!("message:  {}", s("message"));
            println!("run:      {}", s("runId"));
            if s("status") == "executed" {
                match f(&result, "structuredContent") {
                    Value::Null => {
                        for block in f(&result, "content").as_array().into_iter().flatten() {
                            if let Some(text) = f(block, "text").as_str() {
                                println!("{text}");
                            }
                        }
                    }
                    data => println!("result:   {data}"),
                }
            }
            if s("status") == "denied" {
                return Err(anyhow::anyhow!("the call was denied ({})", s("code")));
            }
            Ok(())
        }
    }
}

pub(crate) async fn explain(args: ExplainArgs) -> anyhow::Result<()> {
    let arguments = json_arguments(args.arguments.as_deref())?;
    let mut body = serde_json::Map::new();
    body.insert("tool".into(), json!(args.tool));
    body.insert("arguments".into(), json!(arguments));
    for (key, value) in [
        ("user", &args.user),
        ("serviceAccount", &args.service_account),
        ("agent", &args.agent),
    ] {
        if let Some(v) = value {
            body.insert(key.into(), json!(v));
        }
    }
    if !args.projects.is_empty() {
        body.insert("projects".into(), json!(args.projects));
    }
    let api = server(
        &args.target,
        "explain",
        "the decision is made with the server's live catalog (the tools its upstreams advertise)",
    )
    .await?;
    let answer = api.post(&["explain"], &[], Value::Object(body)).await?;
    match args.output {
        Output::Json => output::json(&answer),
        Output::Yaml => output::yaml_docs(&[answer]),
        Output::Table => {
            let e = f(&answer, "explanation");
            let s = |v: &Value| v.as_str().unwrap_or("-").to_owned();
            println!(
                "principal: {} ({})",
                s(f(&answer, "principal")),
                s(f(&answer, "mode"))
            );
            println!("tool:      {}", s(f(e, "tool")));
            println!("visible:   {}", f(e, "visible"));
            println!("would:     {}", s(f(e, "would")));
            if let Some(code) = e.get("code").and_then(Value::as_str) {
                println!("code:      {code}");
                println!("message:   {}", s(f(e, "message")));
            }
            println!("rule:      {}", s(f(e, "rule")));
            let rows: Vec<Vec<String>> = f(e, "steps")
                .as_array()
                .map(|steps| {
                    steps
                        .iter()
                        .map(|st| {
                            vec![
                                s(f(st, "step")),
                                s(f(st, "outcome")),
                                s(f(st, "rule")),
                                s(f(st, "detail")),
                            ]
                        })
                        .collect()
                })
                .unwrap_or_default();
            println!();
            output::table(&["STEP", "OUTCOME", "RULE", "DETAIL"], &rows);
            Ok(())
        }
    }
}

pub(crate) async fn upstreams(args: InventoryArgs) -> anyhow::Result<()> {
    let api = server(
        &args.target,
        "tools upstreams",
        "an upstream's state is the running server's (its connections)",
    )
    .await?;
    let answer = api.get(&["tools", "upstreams"], &[]).await?;
    let upstreams = f(&answer, "upstreams")
        .as_array()
        .cloned()
        .unwrap_or_default();
    match args.output {
        Output::Json => output::json(&answer),
        Output::Yaml => output::yaml_docs(&upstreams),
        Output::Table => {
            let s = |v: &Value| match v {
                Value::String(s) => s.clone(),
                Value::Null => "-".to_owned(),
                other => other.to_string(),
            };
            let rows: Vec<Vec<String>> = upstreams
                .iter()
                .map(|u| {
                    [
                        "name", "project", "state", "protocol", "tools", "failures", "reason",
                    ]
                    .iter()
                    .map(|k| s(f(u, k)))
                    .collect()
                })
                .collect();
            output::table(
                &[
                    "UPSTREAM", "PROJECT", "STATE", "PROTOCOL", "TOOLS", "FAILURES", "REASON",
                ],
                &rows,
            );
            Ok(())
        }
    }
}

pub(crate) async fn inventory(args: InventoryArgs) -> anyhow::Result<()> {
    let api = server(
        &args.target,
        "tools inventory",
        "the inventory is the server's live catalog (the tools its upstreams advertise)",
    )
    .await?;
    let answer = api.get(&["tools", "inventory"], &[]).await?;
    let tools = f(&answer, "tools").as_array().cloned().unwrap_or_default();
    match args.output {
        Output::Json => output::json(&answer),
        Output::Yaml => output::yaml_docs(&tools),
        Output::Table => {
            let s = |v: &Value| v.as_str().map_or_else(|| "-".to_owned(), str::to_owned);
            let rows: Vec<Vec<String>> = tools
                .iter()
                .map(|t| {
                    vec![
                        s(f(t, "tool")),
                        s(f(t, "project")),
                        s(f(t, "class")),
                        s(f(t, "capability")),
                        s(f(t, "risk")),
                        s(f(t, "governance")),
                        s(f(t, "reason")),
                    ]
                })
                .collect();
            output::table(
                &[
                    "TOOL",
                    "PROJECT",
                    "CLASS",
                    "CAPABILITY",
                    "RISK",
                    "GOVERNANCE",
                    "REASON",
                ],
                &rows,
            );
            Ok(())
        }
    }
}

pub(crate) async fn create_task(args: TaskCreateArgs) -> anyhow::Result<()> {
    let mut body = serde_json::Map::new();
    body.insert("title".into(), json!(args.title));
    for (key, value) in [
        ("workspace_id", &args.workspace),
        ("description", &args.description),
        ("parent_id", &args.parent),
        ("workspace_mode", &args.workspace_mode),
        ("external_id", &args.external_id),
    ] {
        if let Some(v) = value {
            body.insert(key.into(), json!(v));
        }
    }
    if !args.repositories.is_empty() {
        let repositories: Vec<Value> = args
            .repositories
            .iter()
            .map(|r| match r.split_once('@') {
                Some((name, branch)) => json!({"repository": name, "branch": branch}),
                None => json!({ "repository": r }),
            })
            .collect();
        body.insert("repositories".into(), Value::Array(repositories));
    }
    let api = server(
        &args.target,
        "task create",
        "admission decides by the caller's credential, which only the server verifies",
    )
    .await?;
    let answer = api.post(&["tasks"], &[], Value::Object(body)).await?;
    match args.output {
        Output::Json => output::json(&answer),
        Output::Yaml => output::yaml_docs(&[&answer]),
        Output::Table => {
            println!(
                "{}",
                f(f(&answer, "task"), "id").as_str().unwrap_or_default()
            );
            Ok(())
        }
    }
}

pub(crate) async fn run_agent(args: RunAgentArgs) -> anyhow::Result<()> {
    let api = server(
        &args.target,
        "run agent",
        "the run is started by the server's runner, with a run credential it mints",
    )
    .await?;
    let body = match &args.task {
        Some(task) => json!({ "task": task }),
        None => json!({}),
    };
    let run = api.post(&["agents", &args.name, "runs"], &[], body).await?;
    let id = f(&run, "id").as_str().unwrap_or_default().to_owned();
    println!("{id}");
    if !args.wait {
        return Ok(());
    }
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let detail = api.get(&["runs", &id], &[]).await?;
        let lifecycle = f(&detail, "lifecycle");
        let status = f(lifecycle, "status").as_str().unwrap_or_default();
        match status {
            "queued" | "running" => continue,
            "succeeded" => return Ok(()),
            other => {
                let error = f(lifecycle, "error").as_str().unwrap_or_default();
                return Err(anyhow::anyhow!("run {id} {other}: {error}"));
            }
        }
    }
}
