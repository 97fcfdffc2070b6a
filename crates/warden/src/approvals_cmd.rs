//! `warden approvals list|get` on the store or through `/api/v1/approvals`, and
//! `approve|reject|veto` through a server, which executes the decision (APR-2..APR-7). Both
//! paths give the API's approval view, printed by one function.
//!
//! The view carries the arguments to decide on masked as the audit trail keeps them (AUD-3).
//! The server masks them with its live catalog; on the store, they are the very copy the audit
//! trail kept of the call that parked the approval, which the same rule made.

use std::sync::Arc;

use serde_json::{Value, json};
use warden_control::{Caller, approvals};
use warden_core::approval::ApprovalStatus;
use warden_store::{Approval, AuditFilter, Store};

use crate::api::Api;
use crate::cli::{ApprovalDecideArgs, ApprovalsCommand, Output};
use crate::common::{cli_actor, control, open_existing, usage};
use crate::output;
use crate::target::{Reach, Side, Target, resolve};
use crate::views::{cell, field, items, time_cell, to_value, unstring};

/// Where approvals are read by default: the server, as they always were.
const READ: Reach = Reach::Both(Side::Server);

pub(crate) async fn run(cmd: ApprovalsCommand) -> anyhow::Result<()> {
    match cmd {
        ApprovalsCommand::List(args) => {
            let status = args.status.as_deref().map(statuses).transpose()?;
            let list = match resolve(&args.target, READ).await? {
                Target::Store(location) => {
                    let store = Arc::new(open_existing(&location).await?);
                    let caller = Caller::Operator(cli_actor());
                    let mut list = Vec::new();
                    let control = control(store.clone());
                    for a in
                        approvals::list(&control, &caller, status.unwrap_or_default(), None).await?
                    {
                        list.push(view(&store, a).await?);
                    }
                    list
                }
                Target::Server(api) => {
                    let query: Vec<(&str, String)> =
                        args.status.iter().map(|s| ("status", s.clone())).collect();
                    items(api.get(&["approvals"], &query).await?)
                }
            };
            show_list(list, args.output)
        }
        ApprovalsCommand::Get(args) => {
            let a = match resolve(&args.target, READ).await? {
                Target::Store(location) => {
                    let store = Arc::new(open_existing(&location).await?);
                    let caller = Caller::Operator(cli_actor());
                    let a = approvals::get(&control(store.clone()), &caller, &args.id).await?;
                    view(&store, a).await?
                }
                Target::Server(api) => api.get(&["approvals", &args.id], &[]).await?,
            };
            show_one(a, args.output)
        }
        ApprovalsCommand::Approve(args) => decide(args, "approve").await,
        ApprovalsCommand::Reject(args) => decide(args, "reject").await,
        ApprovalsCommand::Veto(args) => decide(args, "veto").await,
    }
}

/// `--status pending,staged`, as the admin API reads it.
fn statuses(s: &str) -> anyhow::Result<Vec<ApprovalStatus>> {
    s.split(',')
        .map(|one| {
            ApprovalStatus::parse(one.trim()).ok_or_else(|| {
                let known: Vec<&str> = ApprovalStatus::ALL.iter().map(|st| st.as_str()).collect();
                usage(format!(
                    "`status`: `{one}` is not an approval status; use one of {}",
                    known.join(", ")
                ))
            })
        })
        .collect()
}

/// The admin API's view of a stored approval (`admin/approvals.rs`), its arguments from the
/// audit record of the call that parked it.
async fn view(store: &Store, a: Approval) -> anyhow::Result<Value> {
    let arguments = match &a.args {
        // Done: the approval no longer keeps them.
        None => Value::Null,
        Some(_) => store
            .audit(&AuditFilter {
                run_id: Some(a.run_id.clone()),
                kind: Some("call".into()),
                ..AuditFilter::default()
            })
            .await?
            .into_iter()
            .find(|r| r.record.call_id.as_deref() == Some(a.call_id.as_str()))
            .and_then(|r| serde_json::from_str::<Value>(&r.record.payload).ok())
            .map(|p| field(&p, "args").clone())
            .unwrap_or(Value::Null),
    };
    let mut v = to_value(&a)?;
    if let Some(fields) = v.as_object_mut() {
        fields.insert("arguments".into(), arguments);
    }
    Ok(v)
}

/// An approval as the CLI shows it: its references (`requestedBy`, `decidedBy`, APR-3) and
/// its `result` as the JSON they hold, not as strings of JSON.
fn shown(mut a: Value) -> Value {
    unstring(&mut a, &["requestedBy", "decidedBy", "result"]);
    a
}

fn show_list(list: Vec<Value>, output: Output) -> anyhow::Result<()> {
    let list: Vec<Value> = list.into_iter().map(shown).collect();
    match output {
        Output::Json => output::json(&list),
        Output::Yaml => output::yaml_docs(&list),
        Output::Table => {
            let rows: Vec<Vec<String>> = list
                .iter()
                .map(|a| {
                    vec![
                        cell(a, "id"),
                        cell(a, "kind"),
                        cell(a, "status"),
                        cell(a, "tool"),
                        cell(a, "principal"),
                        time_cell(a, "dueAt"),
                        cell(a, "outcomeCode"),
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

/// What became of an approval's call, in words: its denial code when it was refused at
/// execution, else `executed` or `failed` once it ran, else `-` (not run yet, or never).
fn outcome(a: &Value) -> String {
    if !field(a, "outcomeCode").is_null() {
        return cell(a, "outcomeCode");
    }
    match field(a, "status").as_str() {
        Some(status @ ("executed" | "failed")) => status.to_owned(),
        _ => "-".to_owned(),
    }
}

/// One approval: one object (JSON, YAML) or its fields (table).
fn show_one(a: Value, output: Output) -> anyhow::Result<()> {
    let a = &shown(a);
    match output {
        Output::Json => output::json(a),
        Output::Yaml => output::yaml_docs(std::slice::from_ref(a)),
        Output::Table => {
            for (label, key) in [
                ("id", "id"),
                ("kind", "kind"),
                ("status", "status"),
                ("tool", "tool"),
                ("requester", "principal"),
                ("run", "runId"),
                ("rule", "rule"),
                ("args sha256", "argsHash"),
            ] {
                println!("{:<12} {}", format!("{label}:"), cell(a, key));
            }
            // What is to be approved, as the console shows it.
            if !field(a, "arguments").is_null() {
                println!("{:<12} {}", "arguments:", field(a, "arguments"));
            }
            // Four eyes (APR-8): who approved so far, of how many.
            if let (Some(approvers), Some(needed)) = (
                field(a, "approvers").as_array(),
                field(a, "deciders").as_i64().filter(|n| *n > 1),
            ) {
                let names: Vec<&str> = approvers.iter().filter_map(Value::as_str).collect();
                println!(
                    "{:<12} {} of {needed}{}",
                    "approvals:",
                    names.len(),
                    if names.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", names.join(", "))
                    }
                );
            }
            if !field(a, "selfDeniedBy").is_null() {
                println!(
                    "{:<12} not by its requester ({})",
                    "four eyes:",
                    cell(a, "selfDeniedBy")
                );
            }
            println!("{:<12} {}", "reason:", cell(a, "reason"));
            println!("{:<12} {}", "outcome:", outcome(a));
            println!("{:<12} {}", "message:", cell(a, "outcomeMessage"));
            if field(a, "dueAt").is_i64() {
                println!("{:<12} {}", "due:", time_cell(a, "dueAt"));
            }
            if !field(a, "result").is_null() {
                println!("result:      {}", field(a, "result"));
            }
            Ok(())
        }
    }
}

/// Why a rejection or a veto is the server's to make: deciders are checked against live
/// authority (APR-4) and a decision is made exactly once, among the server's replicas (APR-6).
const REFUSAL_WHY: &str =
    "the server checks the decider's authority live (APR-4) and records the decision exactly once";

/// A decision is the server's to make: an approval executes the action with the server's live
/// catalog and upstreams.
async fn decide(args: ApprovalDecideArgs, verb: &'static str) -> anyhow::Result<()> {
    let reach = match verb {
        "approve" => Reach::ServerOnly(
            "approvals approve",
            "the server decides, executes the action with its live catalog and upstreams, and records it exactly once",
        ),
        "reject" => Reach::ServerOnly("approvals reject", REFUSAL_WHY),
        _ => Reach::ServerOnly("approvals veto", REFUSAL_WHY),
    };
    let Target::Server(api) = resolve(&args.target, reach).await? else {
        return Err(usage("a decision needs a running server (--server)"));
    };
    let a = decide_on(&api, &args.id, verb, args.reason).await?;
    show_one(a, args.output)
}

async fn decide_on(
    api: &Api,
    id: &str,
    verb: &str,
    reason: Option<String>,
) -> anyhow::Result<Value> {
    Ok(api
        .post(&["approvals", id, verb], &[], json!({ "reason": reason }))
        .await?)
}
