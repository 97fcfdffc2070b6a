//! The built-in tool set `warden`, offered to every verified principal: `warden__whoami` and
//! `warden__explain`. Their schemas are derived from the argument types (GOV-1): only the
//! fields the handlers read, unknown fields rejected, no invented defaults.

use std::sync::Arc;

mod args_schema;
pub mod epics;
pub mod tasks;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use warden_core::authority::Authority;
use warden_core::contract::ToolOutput;
use warden_core::error::ExecError;
use warden_core::name::Name;
use warden_core::policy::Policy;
use warden_core::schema::InputSchema;
use warden_core::tool::{
    Catalog, ClassSource, GovernanceStatus, Risk, ToolClass, ToolDescriptor, ToolSource,
};

/// The name of the built-in tool set (reserved as an upstream name and prefix).
pub const BUILTIN_SET: &str = "warden";

/// Arguments of `warden__whoami`: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhoamiArgs {}

/// Arguments of `warden__explain`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainArgs {
    /// The catalog name of the tool to explain.
    pub tool: String,
    /// The arguments the call would carry.
    pub arguments: Option<Map<String, Value>>,
}

fn descriptor(tool: &str, description: &str, schema: Map<String, Value>) -> Option<ToolDescriptor> {
    described(BUILTIN_SET, tool, description, schema, None, None)
}

/// A built-in tool of `set`: a read, or with `mutation` a governed mutation of that risk;
/// `capability` is what calling it needs beyond seeing it.
fn described(
    set: &'static str,
    tool: &str,
    description: &str,
    schema: Map<String, Value>,
    capability: Option<&str>,
    mutation: Option<Risk>,
) -> Option<ToolDescriptor> {
    let schema = match InputSchema::compile(schema, true) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(tool, error = %e, "built-in tool schema does not compile");
            return None;
        }
    };
    let annotations = match mutation {
        None => json!({"readOnlyHint": true, "openWorldHint": false}),
        Some(risk) => json!({
            "readOnlyHint": false,
            "destructiveHint": risk == Risk::Dangerous,
            "openWorldHint": false,
        }),
    };
    Some(ToolDescriptor {
        name: Arc::from(format!("{set}__{tool}")),
        project: None,
        source: ToolSource::Builtin {
            set: Name::from_static(set),
            tool: tool.to_owned(),
        },
        title: None,
        description: Some(description.to_owned()),
        schema,
        output_schema: None,
        annotations: Some(std::sync::Arc::new(annotations)),
        icons: None,
        meta: None,
        class: if mutation.is_some() {
            ToolClass::Mutation
        } else {
            ToolClass::Read
        },
        class_source: ClassSource::Builtin,
        capability: capability.map(warden_core::capability::Capability::new),
        risk: mutation.unwrap_or(Risk::Ordinary),
        rate_limit_per_minute: None,
        deny: None,
        governance: match mutation {
            None => GovernanceStatus::Read,
            Some(_) => GovernanceStatus::Governed {
                by: "builtin".into(),
            },
        },
        policy: None,
        project_arguments: Vec::new(),
        audit_arguments: warden_core::audit::ArgumentsAudit::default(),
        secret_arguments: std::sync::Arc::from([]),
        header_arguments: std::sync::Arc::from([]),
        rules: std::sync::Arc::from([]),
        on_behalf_of: None,
    })
}

/// The built-in tools.
pub fn descriptors() -> Vec<ToolDescriptor> {
    [
        descriptor(
            "whoami",
            "Who this run acts as: the principal, the authority mode, the projects whose tools it may use and why, and the projects it knows without tools.",
            args_schema::schema::<WhoamiArgs>(),
        ),
        descriptor(
            "explain",
            "Explain, without executing or recording anything, what calling a tool with these arguments would decide for this run, step by step, with the rules.",
            args_schema::schema::<ExplainArgs>(),
        ),
    ]
    .into_iter()
    .flatten()
    .chain(
        tasks::tools()
            .into_iter()
            .map(|t| (tasks::SET, t))
            .chain(epics::tools().into_iter().map(|t| (epics::SET, t)))
            .filter_map(|(set, t)| {
        let risk = if t.dangerous { Risk::Dangerous } else { Risk::Ordinary };
        described(
            set,
            t.name,
            t.description,
            t.schema,
            Some(t.capability),
            t.mutation.then_some(risk),
        )
            }),
    )
    .collect()
}

/// Executes a built-in tool.
pub fn execute(
    tool: &str,
    args: Option<Map<String, Value>>,
    authority: &Authority,
    policy: &Policy,
    catalog: &Catalog,
    now: warden_core::time::Millis,
) -> Result<ToolOutput, ExecError> {
    let args = Value::Object(args.unwrap_or_default());
    match tool {
        "whoami" => Ok(ToolOutput::Data(whoami(authority))),
        "explain" => {
            let a: ExplainArgs = serde_json::from_value(args)
                .map_err(|e| ExecError::Unavailable(format!("invalid arguments: {e}")))?;
            let explanation = warden_core::explain::explain(
                policy,
                catalog,
                authority,
                &a.tool,
                a.arguments.as_ref(),
                false,
                now,
            );
            Ok(ToolOutput::Data(
                serde_json::to_value(explanation).unwrap_or_default(),
            ))
        }
        other => Err(ExecError::Unavailable(format!(
            "no built-in tool `{other}`"
        ))),
    }
}

/// What `whoami` reports.
pub fn whoami(authority: &Authority) -> Value {
    let projects: Vec<Value> = authority
        .projects
        .iter()
        .map(|(p, why)| json!({"project": p, "why": why}))
        .collect();
    let knowledge_only: Vec<Value> = authority
        .knowledge_only
        .iter()
        .map(|(p, why)| json!({"project": p, "why": why}))
        .collect();
    json!({
        "principal": authority.principal.to_string(),
        "mode": authority.mode,
        "credential": authority.credential_id,
        "agent": authority.agent,
        "projects": projects,
        "knowledgeOnly": knowledge_only,
        // The run's effective scope only: never the owner's grant for projects this credential
        // cannot reach.
        "capabilities": authority.effective_capabilities(),
        "scopes": authority.grant.ceiling.as_ref().map(|c| c.patterns().to_vec()),
        "toolsWithheld": authority.withheld,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// A `type` that is an array (`["object", "null"]`), or a `null` one, is not portable to
    /// clients that take the OpenAPI subset of JSON Schema (Gemini's among them): an optional
    /// argument of a built-in tool is omitted, never `null`.
    #[test]
    fn every_built_in_schema_names_one_type_per_value() {
        fn arrays_of_types(v: &Value, at: &str, found: &mut Vec<String>) {
            match v {
                Value::Object(map) => {
                    let null = Value::String("null".into());
                    if map.get("type").is_some_and(|t| t.is_array() || *t == null) {
                        found.push(at.to_owned());
                    }
                    for (k, v) in map {
                        arrays_of_types(v, &format!("{at}/{k}"), found);
                    }
                }
                Value::Array(items) => {
                    for (i, v) in items.iter().enumerate() {
                        arrays_of_types(v, &format!("{at}/{i}"), found);
                    }
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        for d in super::descriptors() {
            let schema = Value::Object(d.schema.advertised().to_object());
            arrays_of_types(&schema, d.name.as_ref(), &mut found);
        }
        assert!(found.is_empty(), "{found:?}");
    }
}
