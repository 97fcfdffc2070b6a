//! `warden epic …` (WORK-1): each verb one request to a running server's `/api/v1/epics`, its
//! answer printed. The rules are the server's epics service, the same the `work` tools apply.

use serde_json::{Map, Value, json};

use crate::cli::{EpicCommand, EpicTaskCommand, Output};
use crate::output;
use crate::remote::server;
use crate::views::{cell, field, items, time_cell};

const WHY: &str =
    "the epics service decides by the caller's credential, which only the server verifies";

/// `key: value` into `body` for each value given.
fn given(body: &mut Map<String, Value>, fields: &[(&str, &Option<String>)]) {
    for (key, value) in fields {
        if let Some(v) = value {
            body.insert((*key).into(), json!(v));
        }
    }
}

pub(crate) async fn run(cmd: EpicCommand) -> anyhow::Result<()> {
    match cmd {
        EpicCommand::Create(a) => {
            let api = server(&a.target, "epic create", WHY).await?;
            let mut body = Map::new();
            body.insert("project".into(), json!(a.project));
            body.insert("title".into(), json!(a.title));
            given(
                &mut body,
                &[
                    ("description", &a.description),
                    ("tradeoffs", &a.tradeoffs),
                    ("risk", &a.risk),
                ],
            );
            if !a.criteria.is_empty() {
                body.insert("criteria".into(), json!(a.criteria));
            }
            let epic = api.post(&["epics"], &[], Value::Object(body)).await?;
            print_one(&epic, a.output, &["id"])
        }
        EpicCommand::List(a) => {
            let api = server(&a.target, "epic list", WHY).await?;
            let mut query = Vec::new();
            for (key, value) in [("project", &a.project), ("status", &a.status)] {
                if let Some(v) = value {
                    query.push((key, v.clone()));
                }
            }
            let epics = items(api.get(&["epics"], &query).await?);
            match a.output {
                Output::Json => output::json(&epics),
                Output::Yaml => output::yaml_docs(&epics),
                Output::Table => {
                    if epics.is_empty() {
                        eprintln!("no epics");
                        return Ok(());
                    }
                    let rows: Vec<Vec<String>> = epics
                        .iter()
                        .map(|e| {
                            ["id", "project", "state", "risk", "title"]
                                .iter()
                                .map(|k| cell(e, k))
                                .chain([time_cell(e, "updatedAt")])
                                .collect()
                        })
                        .collect();
                    output::table(
                        &["EPIC", "PROJECT", "STATE", "RISK", "TITLE", "CHANGED"],
                        &rows,
                    );
                    Ok(())
                }
            }
        }
        EpicCommand::Get(a) => {
            let api = server(&a.target, "epic get", WHY).await?;
            let detail = api.get(&["epics", &a.id], &[]).await?;
            match a.output {
                Output::Json => output::json(&detail),
                Output::Yaml => output::yaml_docs(&[&detail]),
                Output::Table => {
                    print_epic(&detail);
                    Ok(())
                }
            }
        }
        EpicCommand::Update(a) => {
            let api = server(&a.target, "epic update", WHY).await?;
            let mut body = Map::new();
            given(
                &mut body,
                &[
                    ("title", &a.title),
                    ("description", &a.description),
                    ("tradeoffs", &a.tradeoffs),
                    ("risk", &a.risk),
                    ("status", &a.status),
                ],
            );
            if !a.criteria.is_empty() {
                body.insert("criteria".into(), json!(a.criteria));
            }
            let epic = api.patch(&["epics", &a.id], Value::Object(body)).await?;
            print_one(&epic, a.output, &["id", "state"])
        }
        EpicCommand::Task(EpicTaskCommand::Add(a)) => {
            let api = server(&a.target, "epic task add", WHY).await?;
            let mut body = Map::new();
            for (key, value) in [
                ("title", &a.title),
                ("workspace", &a.workspace),
                ("repository", &a.repository),
                ("branch", &a.branch),
            ] {
                body.insert(key.into(), json!(value));
            }
            given(
                &mut body,
                &[
                    ("description", &a.description),
                    ("baseBranch", &a.base_branch),
                ],
            );
            let added = api
                .post(&["epics", &a.epic, "tasks"], &[], Value::Object(body))
                .await?;
            print_one(&added, a.output, &["id", "task"])
        }
        EpicCommand::Task(EpicTaskCommand::Move(a)) => {
            let api = server(&a.target, "epic task move", WHY).await?;
            let moved = api
                .post(&["epic-tasks", &a.id, "move"], &[], json!({ "to": a.to }))
                .await?;
            print_one(&moved, a.output, &["id", "state"])
        }
        EpicCommand::Task(EpicTaskCommand::Review(a)) => {
            let api = server(&a.target, "epic task review", WHY).await?;
            let mut body = Map::new();
            body.insert("verdict".into(), json!(a.verdict));
            given(&mut body, &[("comment", &a.comment)]);
            let review = api
                .post(&["epic-tasks", &a.id, "reviews"], &[], Value::Object(body))
                .await?;
            print_one(&review, a.output, &["verdict", "head"])
        }
        EpicCommand::Task(EpicTaskCommand::Accept(a)) => {
            let api = server(&a.target, "epic task accept", WHY).await?;
            let accepted = api
                .post(&["epic-tasks", &a.id, "accept"], &[], json!({}))
                .await?;
            if let Some(why) = field(&accepted, "notMerged").as_str() {
                let paths = items(field(&accepted, "conflicts").clone());
                let paths: Vec<&str> = paths.iter().filter_map(Value::as_str).collect();
                match paths.as_slice() {
                    [] => eprintln!("not merged: {why}"),
                    _ => eprintln!("not merged: {why}: {}", paths.join(", ")),
                }
            }
            let task = field(&accepted, "epicTask");
            let keys: &[&str] = if field(task, "mergeCommit").is_string() {
                &["id", "state", "mergeCommit"]
            } else {
                &["id", "state"]
            };
            match a.output {
                Output::Table => print_one(task, a.output, keys),
                _ => print_one(&accepted, a.output, &[]),
            }
        }
    }
}

/// One answer: as JSON or YAML, or its `keys` on one line.
fn print_one(answer: &Value, out: Output, keys: &[&str]) -> anyhow::Result<()> {
    match out {
        Output::Json => output::json(answer),
        Output::Yaml => output::yaml_docs(&[answer]),
        Output::Table => {
            let line: Vec<String> = keys.iter().map(|k| cell(answer, k)).collect();
            println!("{}", line.join(" "));
            Ok(())
        }
    }
}

/// An epic with its tasks, for reading.
fn print_epic(detail: &Value) {
    let epic = field(detail, "epic");
    println!(
        "{} {} ({}, risk {}) — {}",
        cell(epic, "id"),
        cell(epic, "state"),
        cell(epic, "project"),
        cell(epic, "risk"),
        cell(epic, "title")
    );
    for criterion in field(epic, "criteria").as_array().into_iter().flatten() {
        println!("  criterion: {}", criterion.as_str().unwrap_or_default());
    }
    let tasks = items(field(detail, "tasks").clone());
    if tasks.is_empty() {
        println!("no tasks");
        return;
    }
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| {
            [
                "id",
                "state",
                "taskId",
                "repository",
                "branch",
                "baseBranch",
                "title",
            ]
            .iter()
            .map(|k| cell(t, k))
            .collect()
        })
        .collect();
    output::table(
        &[
            "EPIC TASK",
            "STATE",
            "TASK",
            "REPOSITORY",
            "BRANCH",
            "BASE",
            "TITLE",
        ],
        &rows,
    );
}
