//! `warden tools changes|accept|reject` (GOV-9): the changed tool definitions held for review,
//! on the store or through `/api/v1/tools/changes`. Both paths give the API's view, printed by
//! one function; the rules are `warden_control::tools`'.

use std::sync::Arc;

use serde_json::{Value, json};
use warden_control::Caller;
use warden_control::tools::{self, Verdict};

use crate::cli::{Output, ToolChangesArgs, ToolReviewArgs};
use crate::common::{cli_actor, control, open_existing};
use crate::output;
use crate::target::{Reach, Side, Target, resolve};
use crate::views::{cell, field, time_cell, to_value};

/// Where the pins are by default: the store, as for the configuration they belong beside.
const REACH: Reach = Reach::Both(Side::Store);

/// `warden tools changes`.
pub(crate) async fn changes(args: ToolChangesArgs) -> anyhow::Result<()> {
    let list: Vec<Value> = match resolve(&args.target, REACH).await? {
        Target::Store(location) => {
            let store = Arc::new(open_existing(&location).await?);
            let caller = Caller::Operator(cli_actor());
            tools::changes(&control(store), &caller)
                .await?
                .iter()
                .map(to_value)
                .collect::<anyhow::Result<_>>()?
        }
        Target::Server(api) => match api.get(&["tools", "changes"], &[]).await? {
            Value::Object(mut o) => match o.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        },
    };
    match args.output {
        Output::Json => output::json(&list),
        Output::Yaml => output::yaml_docs(&list),
        Output::Table => {
            let rows: Vec<Vec<String>> = list
                .iter()
                .map(|c| {
                    vec![
                        cell(c, "tool"),
                        cell(c, "project"),
                        cell(c, "state"),
                        time_cell(c, "offeredAt"),
                        cell(c, "offeredHash"),
                        described(c),
                    ]
                })
                .collect();
            output::table(
                &[
                    "TOOL",
                    "PROJECT",
                    "STATE",
                    "SINCE",
                    "OFFERED",
                    "DESCRIPTION",
                ],
                &rows,
            );
            Ok(())
        }
    }
}

/// The offered description, on one line and cut short, for the table.
fn described(change: &Value) -> String {
    let text = field(field(change, "offered"), "description")
        .as_str()
        .unwrap_or("-")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// `warden tools accept|reject TOOL`.
pub(crate) async fn review(args: ToolReviewArgs, verdict: Verdict) -> anyhow::Result<()> {
    let decided = match resolve(&args.target, REACH).await? {
        Target::Store(location) => {
            let store = Arc::new(open_existing(&location).await?);
            let caller = Caller::Operator(cli_actor());
            let d = tools::decide(
                &control(store),
                &caller,
                &args.tool,
                verdict,
                args.hash.as_deref(),
            )
            .await?;
            to_value(&d)?
        }
        Target::Server(api) => {
            let verb = match verdict {
                Verdict::Accept => "accept",
                Verdict::Reject => "reject",
            };
            let body = match &args.hash {
                Some(hash) => json!({ "hash": hash }),
                None => json!({}),
            };
            api.post(&["tools", "changes", &args.tool, verb], &[], body)
                .await?
        }
    };
    match args.output {
        Output::Json => output::json(&decided),
        Output::Yaml => output::yaml_docs(&[decided]),
        Output::Table => {
            let then = match verdict {
                Verdict::Accept => "accepted: served again",
                Verdict::Reject => "rejected: held until its upstream offers another definition",
            };
            println!(
                "tool `{}` {then} (definition {}, revision {})",
                cell(&decided, "tool"),
                cell(&decided, "hash"),
                cell(&decided, "revision")
            );
            Ok(())
        }
    }
}
