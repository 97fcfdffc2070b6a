//! The OpenAPI 3.1 document of the admin API, served at `/api/v1/openapi.json`.
//!
//! The operations, their parameters and their request and response schemas come from the
//! handlers' `#[utoipa::path]` attributes and the Rust types they read and answer, collected by
//! the same route list that builds the router (`mod.rs`), so a route cannot be served without
//! being documented. This module finishes that document: the `/api/v1` prefix, the bearer
//! scheme, each operation's capability from the one table ([`super::access::TABLE`]), and the
//! schemas of types that describe themselves with `schemars` (configuration resources, the task
//! creation arguments), embedded under `components/schemas`.

use serde_json::{Map, Value, json};

use super::access::{Gate, row_of};

/// Where the admin API is mounted.
pub(crate) const PREFIX: &str = "/api/v1";

/// The name of the configuration resource schema in `components/schemas`.
pub(crate) const RESOURCE_SCHEMA: &str = "Resource";
/// The name of the task creation arguments' schema in `components/schemas`.
pub(crate) const CREATE_TASK_SCHEMA: &str = "CreateTaskArgs";

/// A `$ref` to the resource schema embedded by [`finish`], for the `schema_with` of a field.
pub(crate) fn resource_ref() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::Ref::from_schema_name(RESOURCE_SCHEMA).into()
}

/// A `$ref` to the kill switch scope of the resource schema.
pub(crate) fn kill_scope_ref() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::Ref::from_schema_name(format!("{RESOURCE_SCHEMA}.KillScope")).into()
}

/// The finished document, from the one utoipa collected from the routes.
pub(crate) fn finish(api: utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(api).unwrap_or_default();
    let Some(root) = doc.as_object_mut() else {
        return doc;
    };
    root.insert(
        "info".into(),
        json!({
            "title": "Warden admin API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "JSON over HTTP. Every operation needs `Authorization: Bearer wdn_…`; \
                each names the capability it needs (`security` scopes and `x-warden-capability`; \
                docs/api.md). Every refusal is `{\"error\": \"…\", \"code\": \"…\"}`.",
        }),
    );
    root.insert("security".into(), json!([{ "bearer": [] }]));
    let paths = root
        .remove("paths")
        .and_then(|p| match p {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    let mut prefixed = Map::new();
    for (path, mut item) in paths {
        if let Some(operations) = item.as_object_mut() {
            for operation in operations.values_mut() {
                gate(operation);
            }
        }
        prefixed.insert(format!("{PREFIX}{path}"), item);
    }
    root.insert("paths".into(), Value::Object(prefixed));
    let components = root
        .entry("components")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(components) = components {
        components.insert(
            "securitySchemes".into(),
            json!({ "bearer": { "type": "http", "scheme": "bearer", "bearerFormat": "wdn_…" } }),
        );
        let schemas = components
            .entry("schemas")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(schemas) = schemas {
            embed(schemas, RESOURCE_SCHEMA, warden_core::config::json_schema());
            // The very schema `tasks__create_task` advertises and `POST /tasks` validates
            // with (GOV-1).
            let create_task = warden_mcp::builtin::tasks::tools()
                .into_iter()
                .find(|t| t.name == "create_task")
                .map(|t| Value::Object(t.schema))
                .unwrap_or_default();
            embed(schemas, CREATE_TASK_SCHEMA, create_task);
            // The `work` tools' very schemas, less what a path names (WORK-1).
            for (tool, name, from_path) in [
                ("create_epic", "CreateEpicArgs", None),
                ("update_epic", "UpdateEpicArgs", Some("id")),
                ("add_task", "AddTaskArgs", Some("epic")),
                ("move_task", "MoveEpicTaskArgs", Some("id")),
                ("review", "ReviewArgs", Some("id")),
                ("accept", "AcceptArgs", Some("id")),
            ] {
                let schema = warden_mcp::builtin::epics::tools()
                    .into_iter()
                    .find(|t| t.name == tool)
                    .map(|t| without(t.schema, from_path))
                    .unwrap_or_default();
                embed(schemas, name, schema);
            }
        }
    }
    doc
}

/// `schema` without the property `field` (which the request's path gives).
fn without(mut schema: Map<String, Value>, field: Option<&str>) -> Value {
    if let Some(field) = field {
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.remove(field);
        }
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|r| r != field);
        }
    }
    Value::Object(schema)
}

/// Gives an operation its capability from the table: as the scope of its security
/// requirement when it is required, and as `x-warden-capability` and a sentence of its
/// description in every case.
fn gate(operation: &mut Value) {
    let Some(op) = operation.as_object_mut() else {
        return;
    };
    let Some(row) = op
        .get("operationId")
        .and_then(Value::as_str)
        .and_then(row_of)
    else {
        return;
    };
    let (scopes, capability, sentence) = match row.gate {
        Gate::Required(c) => (json!([c]), json!(c), format!("Needs `{c}`")),
        Gate::Widens(c) => (
            json!([]),
            json!(c),
            "Open to every verified credential".to_owned(),
        ),
        Gate::Open => (
            json!([]),
            Value::Null,
            "Open to every verified credential".to_owned(),
        ),
    };
    let sentence = if row.note.is_empty() {
        format!("{sentence}.")
    } else {
        format!("{sentence}; {}.", row.note)
    };
    // A doc comment's first paragraph, as one line.
    if let Some(Value::String(summary)) = op.get_mut("summary") {
        *summary = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    op.insert("security".into(), json!([{ "bearer": scopes }]));
    op.insert("x-warden-capability".into(), capability);
    let description = match op.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d}\n\n{sentence}"),
        _ => sentence,
    };
    op.insert("description".into(), Value::String(description));
}

/// Adds a JSON Schema (2020-12, the dialect of OpenAPI 3.1) made by `schemars` as
/// `components/schemas/{name}`, its definitions beside it as `{name}.{definition}`.
fn embed(schemas: &mut Map<String, Value>, name: &str, mut schema: Value) {
    let defs = schema
        .as_object_mut()
        .and_then(|o| {
            o.remove("$schema");
            o.remove("$defs")
        })
        .and_then(|d| match d {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    retarget(&mut schema, name);
    for (def, mut sub) in defs {
        retarget(&mut sub, name);
        schemas.insert(format!("{name}.{def}"), sub);
    }
    schemas.insert(name.to_owned(), schema);
}

/// Points every `#/$defs/X` of `value` at `#/components/schemas/{name}.X`.
fn retarget(value: &mut Value, name: &str) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key == "$ref"
                    && let Value::String(r) = v
                    && let Some(def) = r.strip_prefix("#/$defs/")
                {
                    *r = format!("#/components/schemas/{name}.{def}");
                } else {
                    retarget(v, name);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| retarget(v, name)),
        _ => {}
    }
}
