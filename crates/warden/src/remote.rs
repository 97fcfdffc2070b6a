//! Commands that ask a running server through the admin API: `explain`, `tools inventory`.

use serde_json::{Value, json};

use crate::cli::{
    ApprovalsCommand, ExplainArgs, InventoryArgs, Output, RemoteArgs, RunAgentArgs, TaskCreateArgs,
};
use crate::common::usage;
use crate::output;

/// A field of a JSON object, or null.
fn f<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or(&Value::Null)
}

fn token() -> anyhow::Result<String> {
    std::env::var("WARDEN_TOKEN")
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| usage("WARDEN_TOKEN is not set: export a token (`warden token create`)"))
}

async fn request(
    remote: &RemoteArgs,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> anyhow::Result<Value> {
    let url = format!("{}{path}", remote.server.trim_end_matches('/'));
    let client = reqwest::Client::new();
    let mut req = client.request(method, &url).bearer_auth(token()?);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let response = req.send().await.map_err(|e| {
        anyhow::anyhow!(
            "cannot reach {}: {e}; is `warden serve` running there (--server)?",
            remote.server
        )
    })?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| text.trim().to_owned());
        return Err(anyhow::anyhow!("{url} answered {status}: {message}"));
    }
    serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{url} answered something that is not JSON: {e}"))
}

pub(crate) async fn explain(args: ExplainArgs) -> anyhow::Result<()> {
    let arguments: Option<Value> = args
        .arguments
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| usage(format!("--args: not JSON: {e}")))?;
    if arguments.as_ref().is_some_and(|a| !a.is_object()) {
        return Err(usage("--args: must be a JSON object"));
    }
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
    let body = Value::Object(body);
    let answer = request(
        &args.remote,
        reqwest::Method::POST,
        "/api/v1/explain",
        Some(body),
    )
    .await?;
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

pub(crate) async fn inventory(args: InventoryArgs) -> anyhow::Result<()> {
    let answer = request(
        &args.remote,
        reqwest::Method::GET,
        "/api/v1/tools/inventory",
        None,
    )
    .await?;
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
    let answer = request(
        &args.remote,
        reqwest::Method::POST,
        "/api/v1/tasks",
        Some(Value::Object(body)),
    )
    .await?;
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
    let run = request(
        &args.remote,
        reqwest::Method::POST,
        &format!("/api/v1/agents/{}/runs", args.name),
        args.task.as_ref().map(|task| json!({ "task": task })),
    )
    .await?;
    let id = f(&run, "id").as_str().unwrap_or_default().to_owned();
    println!("{id}");
    if !args.wait {
        return Ok(());
    }
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let detail = request(
            &args.remote,
            reqwest::Method::GET,
            &format!("/api/v1/runs/{id}"),
            None,
        )
        .await?;
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

/// An approval as the CLI shows it: its references (`requestedBy`, `decidedBy`, APR-3) and
/// its `result` as the JSON they hold, not as strings of JSON.
fn approval_view(mut a: Value) -> Value {
    if let Some(fields) = a.as_object_mut() {
        for key in ["requestedBy", "decidedBy", "result"] {
            if let Some(Value::String(text)) = fields.get(key)
                && let Ok(parsed) = serde_json::from_str::<Value>(text)
            {
                fields.insert(key.into(), parsed);
            }
        }
    }
    a
}

fn show_approvals(list: Vec<Value>, output: Output) -> anyhow::Result<()> {
    let list: Vec<Value> = list.into_iter().map(approval_view).collect();
    match output {
        Output::Json => output::json(&list),
        Output::Yaml => output::yaml_docs(&list),
        Output::Table => {
            let s = |v: &Value| v.as_str().map_or_else(|| "-".to_owned(), str::to_owned);
            let rows: Vec<Vec<String>> = list
                .iter()
                .map(|a| {
                    vec![
                        s(f(a, "id")),
                        s(f(a, "kind")),
                        s(f(a, "status")),
                        s(f(a, "tool")),
                        s(f(a, "principal")),
                        f(a, "dueAt")
                            .as_i64()
                            .map_or("-".into(), |t| output::time(warden_core::time::Millis(t))),
                        s(f(a, "outcomeCode")),
                    ]
                })
                .collect();
            if rows.is_empty() {
                eprintln!("no approvals");
            } else {
                output::table(
                    &["ID", "KIND", "STATUS", "TOOL", "REQUESTER", "DUE", "CODE"],
                    &rows,
                );
            }
            Ok(())
        }
    }
}

/// One approval: one object (JSON, YAML) or its fields (table).
fn show_approval(a: Value, output: Output) -> anyhow::Result<()> {
    let a = &approval_view(a);
    match output {
        Output::Json => output::json(a),
        Output::Yaml => output::yaml_docs(std::slice::from_ref(a)),
        Output::Table => {
            let s = |k: &str| {
                f(a, k)
                    .as_str()
                    .map_or_else(|| "-".to_owned(), str::to_owned)
            };
            for (label, key) in [
                ("id", "id"),
                ("kind", "kind"),
                ("status", "status"),
                ("tool", "tool"),
                ("requester", "principal"),
                ("run", "runId"),
                ("rule", "rule"),
                ("args sha256", "argsHash"),
                ("reason", "reason"),
                ("outcome", "outcomeCode"),
                ("message", "outcomeMessage"),
            ] {
                println!("{:<12} {}", format!("{label}:"), s(key));
            }
            if let Some(t) = f(a, "dueAt").as_i64() {
                println!(
                    "{:<12} {}",
                    "due:",
                    output::time(warden_core::time::Millis(t))
                );
            }
            if !f(a, "result").is_null() {
                println!("result:      {}", f(a, "result"));
            }
            Ok(())
        }
    }
}

pub(crate) async fn approvals(cmd: ApprovalsCommand) -> anyhow::Result<()> {
    match cmd {
        ApprovalsCommand::List(args) => {
            let path = match &args.status {
                Some(st) => format!("/api/v1/approvals?status={st}"),
                None => "/api/v1/approvals".into(),
            };
            let list = request(&args.remote, reqwest::Method::GET, &path, None).await?;
            show_approvals(
                match list {
                    Value::Array(list) => list,
                    _ => Vec::new(),
                },
                args.output,
            )
        }
        ApprovalsCommand::Get(args) => {
            let a = request(
                &args.remote,
                reqwest::Method::GET,
                &format!("/api/v1/approvals/{}", args.id),
                None,
            )
            .await?;
            show_approval(a, args.output)
        }
        ApprovalsCommand::Approve(args) => decide(args, "approve").await,
        ApprovalsCommand::Reject(args) => decide(args, "reject").await,
        ApprovalsCommand::Veto(args) => decide(args, "veto").await,
    }
}

async fn decide(args: crate::cli::ApprovalDecideArgs, verb: &str) -> anyhow::Result<()> {
    let body = json!({ "reason": args.reason });
    let a = request(
        &args.remote,
        reqwest::Method::POST,
        &format!("/api/v1/approvals/{}/{verb}", args.id),
        Some(body),
    )
    .await?;
    show_approval(a, args.output)
}
