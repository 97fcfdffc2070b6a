//! `warden get notifiers` as a table (NOTIFY-1): each notifier with how its deliveries fare —
//! counts and the latest failure — on the store or through `/api/v1/notifiers`. Both paths give
//! the API's view, printed by one function; the rules are `warden_control::notifiers`'. As JSON
//! or YAML, `get` prints notifiers as every other resource: as configured, to apply again.

use std::sync::Arc;

use serde_json::Value;
use warden_control::{Caller, notifiers};

use crate::cli::GetArgs;
use crate::common::{cli_actor, control, open_existing};
use crate::output;
use crate::target::{Reach, Side, Target, resolve};
use crate::views::{cell, field, items, time_cell, to_value};

/// Where notifiers are read by default: the store, as for the rest of the configuration.
const REACH: Reach = Reach::Both(Side::Store);

/// `warden get notifiers [NAME]` (`-o table`).
pub(crate) async fn table(args: GetArgs) -> anyhow::Result<()> {
    let mut list: Vec<Value> = match resolve(&args.target, REACH).await? {
        Target::Store(location) => {
            let store = Arc::new(open_existing(&location).await?);
            let caller = Caller::Operator(cli_actor());
            notifiers::list(&control(store), &caller)
                .await?
                .iter()
                .map(to_value)
                .collect::<anyhow::Result<_>>()?
        }
        Target::Server(api) => {
            let mut answer = api.get(&["notifiers"], &[]).await?;
            items(answer.get_mut("items").map(Value::take).unwrap_or_default())
        }
    };
    if let Some(name) = &args.name {
        list.retain(|n| field(n, "name").as_str() == Some(name));
        if list.is_empty() {
            return Err(anyhow::anyhow!("no Notifier named `{name}`"));
        }
    }
    if list.is_empty() {
        eprintln!("no Notifier resources");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|n| {
            vec![
                cell(n, "name"),
                cell(n, "url"),
                events(n),
                cell(n, "format"),
                cell(n, "delivered"),
                cell(n, "pending"),
                cell(n, "failed"),
                time_cell(n, "lastDeliveredAt"),
                last_failure(n),
            ]
        })
        .collect();
    output::table(
        &[
            "NAME",
            "URL",
            "EVENTS",
            "FORMAT",
            "DELIVERED",
            "PENDING",
            "FAILED",
            "LAST DELIVERED",
            "LAST FAILURE",
        ],
        &rows,
    );
    Ok(())
}

fn events(n: &Value) -> String {
    field(n, "events")
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// The latest failure: when, of which event, what went wrong.
fn last_failure(n: &Value) -> String {
    match field(n, "lastFailures").as_array().and_then(|a| a.first()) {
        Some(f) => format!(
            "{} {} ({} attempts, {}): {}",
            time_cell(f, "at"),
            cell(f, "event"),
            cell(f, "attempts"),
            cell(f, "status"),
            cell(f, "error")
        ),
        None => "-".to_owned(),
    }
}
