//! Tool definitions held for review (GOV-9): what changed, and accepting or rejecting it — the
//! admin API, the console and `warden tools changes|accept|reject` alike.
//!
//! Reviewing needs `tools:review` and the upstream's project among the caller's; a change in
//! another project answers like one that does not exist. A decision binds to the definition
//! reviewed: given its hash, a definition that changed again meanwhile is not decided.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};
use warden_core::capability::TOOLS_REVIEW;
use warden_core::config::rule_fields::undeclared_fields;
use warden_core::config::{Config, ConfigError, Kind, Located, Resource, UpstreamSpec};
use warden_core::pins::{Definition, Pin, PinState};
use warden_core::time::Millis;
use warden_core::tool::catalog_name;
use warden_store::PinWrite;

use crate::{Caller, Control, Refusal};

/// A tool definition that differs from its pin.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The tool's catalog name (`notes__echo`).
    pub tool: String,
    /// Its upstream.
    pub upstream: String,
    /// The tool as the upstream names it.
    pub upstream_tool: String,
    /// The upstream's project.
    pub project: String,
    /// `changed`, `new` (appeared after the upstream's first pinning) or `rejected`.
    pub state: &'static str,
    /// The accepted definition; `null` for a new tool.
    pub pinned: Option<Value>,
    /// Its hash.
    pub pinned_hash: Option<String>,
    /// The definition the upstream offers now.
    pub offered: Value,
    /// Its hash, which a decision names.
    pub offered_hash: String,
    /// When it was first seen.
    pub offered_at: Millis,
    /// Who decided last, and when.
    pub decided_by: Option<String>,
    /// When.
    pub decided_at: Option<Millis>,
}

/// What a review decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The offered definition becomes the pin: the tool is served again.
    Accept,
    /// The offered definition stays out until the upstream offers another.
    Reject,
}

impl Verdict {
    fn action(self) -> &'static str {
        match self {
            Self::Accept => "tools.accept",
            Self::Reject => "tools.reject",
        }
    }
}

/// A decided review: the tool and where it stands now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decided {
    /// The catalog name.
    pub tool: String,
    /// `pinned` after an accept, `rejected` after a reject.
    pub state: &'static str,
    /// The definition decided on.
    pub hash: String,
    /// The configuration's revision after it.
    pub revision: u64,
}

/// The changes awaiting review (and those rejected) that `caller` may review, by tool name.
pub async fn changes(control: &Control, caller: &Caller) -> Result<Vec<Change>, Refusal> {
    caller.require(TOOLS_REVIEW, "reviewing changed tool definitions")?;
    let (mut changes, _) = read(control, caller).await?;
    changes.sort_by(|a, b| a.0.tool.cmp(&b.0.tool));
    Ok(changes.into_iter().map(|(c, _)| c).collect())
}

/// The change of tool `tool`, when `caller` may review it.
pub async fn change(control: &Control, caller: &Caller, tool: &str) -> Result<Change, Refusal> {
    caller.require(TOOLS_REVIEW, "reviewing changed tool definitions")?;
    let (changes, _) = read(control, caller).await?;
    Ok(one(changes, tool, None)?.0)
}

/// The one change of `tool` (with the definition hashed `hash`, when given): two upstreams
/// whose catalog names meet (`prefix: ""`) are told apart by the hash.
fn one(
    changes: Vec<(Change, Pin)>,
    tool: &str,
    hash: Option<&str>,
) -> Result<(Change, Pin), Refusal> {
    let mut named: Vec<(Change, Pin)> = changes
        .into_iter()
        .filter(|(c, _)| c.tool == tool)
        .collect();
    if named.len() > 1
        && let Some(hash) = hash
    {
        named.retain(|(c, _)| c.offered_hash == hash);
    }
    match named.len() {
        0 => Err(none(tool)),
        1 => Ok(named.remove(0)),
        _ => Err(Refusal::Conflict(format!(
            "upstreams {} each offer a change of `{tool}`; name the one reviewed by its hash",
            named
                .iter()
                .map(|(c, _)| format!("`{}` ({})", c.upstream, c.offered_hash))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Accepts or rejects the definition tool `tool` offers — the one hashed `hash`, when given.
pub async fn decide(
    control: &Control,
    caller: &Caller,
    tool: &str,
    verdict: Verdict,
    hash: Option<&str>,
) -> Result<Decided, Refusal> {
    caller.require(TOOLS_REVIEW, "reviewing changed tool definitions")?;
    let (changes, revision) = read(control, caller).await?;
    let (change, pin) = one(changes, tool, hash)?;
    if let Some(hash) = hash
        && hash != change.offered_hash
    {
        return Err(Refusal::Conflict(format!(
            "tool `{tool}` changed again since that review: it now offers {}; review it again",
            change.offered_hash
        )));
    }
    let actor = caller.actor();
    let now = control.now();
    let decided = match verdict {
        Verdict::Accept => pin.accepted(&change.offered_hash, &actor, now),
        Verdict::Reject if change.state == PinState::Rejected.as_str() => {
            return Err(Refusal::Conflict(format!(
                "the definition tool `{tool}` offers is rejected already"
            )));
        }
        Verdict::Reject => pin.rejected(&change.offered_hash, &actor, now),
    }
    .ok_or_else(|| none(tool))?;
    let state = decided.state().as_str();
    let details = json!({
        "tool": tool,
        "upstream": change.upstream,
        "upstreamTool": change.upstream_tool,
        "project": change.project,
        "hash": change.offered_hash,
        "pinned": change.pinned_hash,
    });
    let write = PinWrite {
        first: Vec::new(),
        pins: vec![decided],
    };
    let revision = control
        .store()
        .write_pins(
            write,
            &actor,
            verdict.action(),
            details,
            now,
            Some(revision),
        )
        .await?;
    control.changed().await;
    Ok(Decided {
        tool: tool.to_owned(),
        state,
        hash: change.offered_hash,
        revision,
    })
}

fn none(tool: &str) -> Refusal {
    Refusal::not_found(format!("no change of tool `{tool}` awaits review"))
}

/// The changes `caller` may review with their pins, and the revision they were read at.
async fn read(control: &Control, caller: &Caller) -> Result<(Vec<(Change, Pin)>, u64), Refusal> {
    let (config, revision) = control.store().load_config().await?;
    let upstreams: HashMap<&str, &UpstreamSpec> = config
        .of_kind(Kind::Upstream)
        .filter_map(|r| match r {
            Resource::Upstream(u) => Some((u.name.as_str(), u)),
            _ => None,
        })
        .collect();
    let pins = control.store().pins().await?;
    let mut out = Vec::new();
    for pin in pins.iter() {
        let (Some(spec), Some(offered)) = (upstreams.get(pin.upstream.as_str()), &pin.offered)
        else {
            continue;
        };
        if !reviews(caller, spec.project.as_str()) {
            continue;
        }
        let prefix = spec.catalog_prefix();
        out.push((
            Change {
                tool: catalog_name(&prefix, &pin.tool),
                upstream: pin.upstream.clone(),
                upstream_tool: pin.tool.clone(),
                project: spec.project.to_string(),
                state: pin.state().as_str(),
                pinned: pin.pinned.as_ref().map(parsed),
                pinned_hash: pin.pinned.as_ref().map(|d| d.hash.clone()),
                offered: parsed(offered),
                offered_hash: offered.hash.clone(),
                offered_at: pin.offered_at.unwrap_or(Millis(0)),
                decided_by: pin.decided_by.clone(),
                decided_at: pin.decided_at,
            },
            pin.clone(),
        ));
    }
    Ok((out, revision))
}

/// Whether `caller` reviews the tools of `project`.
fn reviews(caller: &Caller, project: &str) -> bool {
    match caller {
        Caller::Operator(_) => true,
        Caller::Credential(authority) => authority.projects.keys().any(|p| p.as_str() == project),
    }
}

/// GOV-10 at apply: the rules among `resources` that read an argument their tool's input
/// schema does not declare, the schema being the tool's pinned definition (or the one
/// offered, for a tool never accepted) in `config`. A tool Warden has not seen yet is not
/// checked: its rules fail closed at run time instead.
pub(crate) async fn undeclared_arguments(
    control: &Control,
    config: &Config,
    resources: &[Located],
) -> Result<Vec<ConfigError>, Refusal> {
    let with_rules = resources
        .iter()
        .any(|r| matches!(&r.resource, Resource::ToolPolicy(t) if !t.rules.is_empty()));
    if !with_rules {
        return Ok(Vec::new());
    }
    let pins = control.store().pins().await?;
    let upstreams: Vec<&UpstreamSpec> = config
        .of_kind(Kind::Upstream)
        .filter_map(|r| match r {
            Resource::Upstream(u) => Some(u),
            _ => None,
        })
        .collect();
    Ok(undeclared_fields(resources, |project, tool| {
        let pin = upstreams
            .iter()
            .filter(|u| &u.project == project)
            .find_map(|u| {
                let prefix = u.catalog_prefix();
                pins.iter().find(|p| {
                    p.upstream == u.name.as_str() && catalog_name(&prefix, &p.tool) == tool
                })
            })?;
        let definition = parsed(pin.pinned.as_ref().or(pin.offered.as_ref())?);
        let schema = definition.get("inputSchema")?;
        // A schema that lets through more than its `properties` name is not checked.
        let open = [
            "patternProperties",
            "allOf",
            "anyOf",
            "oneOf",
            "$ref",
            "dependentSchemas",
            "if",
        ]
        .iter()
        .any(|k| schema.get(k).is_some())
            || schema
                .get("additionalProperties")
                .is_some_and(|a| a != &Value::Bool(false));
        if open {
            return None;
        }
        let properties = schema.get("properties")?.as_object()?;
        Some(properties.keys().cloned().collect())
    }))
}

fn parsed(d: &Definition) -> Value {
    serde_json::from_str(&d.json).unwrap_or(Value::Null)
}
