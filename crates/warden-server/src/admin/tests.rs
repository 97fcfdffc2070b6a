#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "tests"
)]

use std::collections::BTreeSet;

use serde_json::Value;

use super::access::{Gate, TABLE};
use super::*;

fn doc() -> Value {
    serde_json::from_slice(document()).unwrap()
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Every operation of the document: method, path, operation.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if METHODS.contains(&method.as_str()) {
                out.push((method.clone(), path.clone(), op.clone()));
            }
        }
    }
    out
}

/// Every `$ref` anywhere in `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// Asserts that `content` names at least one media type and gives each a schema: a `$ref`,
/// or an inline schema with a `type` or a composition.
fn assert_schemas(content: &Value, at: &str) {
    let media = content
        .as_object()
        .unwrap_or_else(|| panic!("{at}: no content: {content}"));
    assert!(!media.is_empty(), "{at}: no media type");
    for (media_type, m) in media {
        let schema = &m["schema"];
        let described = ["$ref", "type", "oneOf", "anyOf", "allOf"]
            .iter()
            .any(|k| schema.get(k).is_some());
        assert!(described, "{at} {media_type}: no schema: {m}");
    }
}

#[test]
fn every_operation_has_one_row_of_the_capability_table_and_every_row_an_operation() {
    let doc = doc();
    let ids: Vec<String> = operations(&doc)
        .iter()
        .map(|(m, p, op)| {
            op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{m} {p} has no operationId"))
                .to_owned()
        })
        .collect();
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "operation ids are unique: {ids:?}");
    let table: BTreeSet<&str> = TABLE.iter().map(|r| r.operation).collect();
    assert_eq!(table.len(), TABLE.len(), "one row per operation");
    let documented: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(
        documented, table,
        "the capability table and the document list the same operations"
    );
}

/// The capability table of docs/api.md ("Routes and capabilities"), as the document and
/// [`TABLE`] make it: the method and path of each operation, its capability and what it
/// means for it.
fn capability_table(doc: &Value) -> String {
    let ops = operations(doc);
    let mut out =
        String::from("| method | path | capability | operation id |\n|---|---|---|---|\n");
    for row in TABLE {
        let (method, path, _) = ops
            .iter()
            .find(|(_, _, op)| op["operationId"] == row.operation)
            .unwrap();
        let capability = match (row.gate, row.note) {
            (Gate::Required(c), "") => format!("`{c}`"),
            (Gate::Required(c), note) => format!("`{c}` {note}"),
            (Gate::Widens(_) | Gate::Open, "") => "any credential".to_owned(),
            (Gate::Widens(_) | Gate::Open, note) => format!("any credential; {note}"),
        };
        out.push_str(&format!(
            "| {} | `{path}` | {capability} | `{}` |\n",
            method.to_uppercase(),
            row.operation
        ));
    }
    out
}

#[test]
fn the_capability_table_of_the_docs_is_the_one_the_code_has() {
    let docs = include_str!("../../../../docs/api.md");
    let header = "| method | path | capability | operation id |";
    let start = docs
        .find(header)
        .unwrap_or_else(|| panic!("docs/api.md has no table starting `{header}`"));
    let table: String = docs[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .map(|l| format!("{l}\n"))
        .collect();
    let expected = capability_table(&doc());
    assert!(
        table == expected,
        "docs/api.md, \"Routes and capabilities\", should read:\n\n{expected}"
    );
}

#[test]
fn each_operation_names_its_capability_as_its_security_scope() {
    for (method, path, op) in operations(&doc()) {
        let id = op["operationId"].as_str().unwrap();
        let row = TABLE.iter().find(|r| r.operation == id).unwrap();
        let scopes = op["security"][0]["bearer"].as_array().unwrap().clone();
        match row.gate {
            Gate::Required(c) => {
                assert_eq!(scopes, [Value::from(c)], "{method} {path}");
                assert_eq!(op["x-warden-capability"], c, "{method} {path}");
                assert!(
                    op["description"]
                        .as_str()
                        .unwrap()
                        .contains(&format!("Needs `{c}`")),
                    "{method} {path}: {}",
                    op["description"]
                );
            }
            Gate::Widens(c) => {
                assert!(scopes.is_empty(), "{method} {path}");
                assert_eq!(op["x-warden-capability"], c, "{method} {path}");
            }
            Gate::Open => assert!(scopes.is_empty(), "{method} {path}"),
        }
    }
}

/// OpenAPI 3.1's structural rules the document must keep (those the spec states with
/// "REQUIRED" and "MUST"), and Warden's own: every success that has a body and every request
/// body has a schema. `crates/warden/tests/api/openapi.rs` also runs the reference validator
/// over the served document.
#[test]
fn the_document_is_structurally_valid_openapi_3_1() {
    let doc = doc();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "{}",
        doc["openapi"]
    );
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    assert!(doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer");
    for (method, path, op) in operations(&doc) {
        let at = format!("{method} {path}");
        assert!(path.starts_with("/api/v1/"), "{at}");
        // Every template parameter is declared, in the path, required; nothing else is in
        // the path.
        let template: BTreeSet<String> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}').map(str::to_owned))
            .collect();
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        let in_path: BTreeSet<String> = params
            .iter()
            .filter(|p| p["in"] == "path")
            .map(|p| {
                assert_eq!(p["required"], true, "{at}: {p}");
                p["name"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(in_path, template, "{at}");
        for p in &params {
            assert!(
                p["name"].is_string() && p["schema"].is_object(),
                "{at}: {p}"
            );
            assert!(
                ["query", "header", "path", "cookie"].contains(&p["in"].as_str().unwrap()),
                "{at}: {p}"
            );
        }
        let responses = op["responses"].as_object().unwrap();
        assert!(!responses.is_empty(), "{at}");
        for (status, response) in responses {
            assert!(
                status == "default"
                    || (status.len() == 3 && status.chars().all(|c| c.is_ascii_digit())),
                "{at}: {status}"
            );
            assert!(
                response["description"].is_string(),
                "{at} {status}: a response has a description"
            );
            if status.starts_with('4') || status.starts_with('5') {
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/ErrorBody",
                    "{at} {status}: every refusal has the one error shape"
                );
            }
        }
        let successes: Vec<(&String, &Value)> = responses
            .iter()
            .filter(|(s, _)| s.starts_with('2'))
            .collect();
        assert!(!successes.is_empty(), "{at}: a success is documented");
        for (status, response) in successes {
            // Every success has a body (none answers 204), so each has a schema.
            assert_ne!(status, "204", "{at}: a success without a body: {response}");
            assert_schemas(&response["content"], &format!("{at} {status}"));
        }
        // An operation that takes a body (every POST, PUT and PATCH of this API) documents
        // its schema; one that does not takes none.
        if ["post", "put", "patch"].contains(&method.as_str()) {
            let body = op
                .get("requestBody")
                .unwrap_or_else(|| panic!("{at}: its request body is not documented"));
            assert_schemas(&body["content"], &format!("{at} request body"));
        } else {
            assert_eq!(op.get("requestBody"), None, "{at}");
        }
    }
    // Every reference resolves.
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(all.len() > 50, "{}", all.len());
    for r in all {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("`{r}` points outside the document's schemas"));
        assert!(schemas.contains_key(name), "`{r}` resolves");
    }
    // No schema keeps a keyword of another dialect.
    let text = serde_json::to_string(&doc).unwrap();
    assert!(!text.contains("\"$defs\"") && !text.contains("\"$schema\""));
}

#[test]
fn the_configuration_and_task_schemas_are_the_ones_their_types_generate() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let resource = &schemas[openapi::RESOURCE_SCHEMA];
    assert!(
        resource["oneOf"].as_array().unwrap().len() >= 12,
        "{resource}"
    );
    let task = &schemas[openapi::CREATE_TASK_SCHEMA];
    assert!(task["properties"]["title"].is_object(), "{task}");
    assert!(schemas["Resource.KillScope"].is_object());
    let apply = &doc["paths"]["/api/v1/resources"]["post"]["requestBody"]["content"];
    assert!(apply["application/yaml"].is_object() && apply["application/json"].is_object());
}

/// A request of `method` to `path` through the admin routes alone (no authentication), and
/// whether the router has no such route.
async fn unrouted(
    router: &axum::Router,
    method: &str,
    path: &str,
) -> Option<(axum::http::StatusCode, String)> {
    use tower::ServiceExt as _;
    let request = axum::http::Request::builder()
        .method(method.to_ascii_uppercase().as_str())
        .uri(path)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let body = String::from_utf8_lossy(&body).into_owned();
    (body.contains("no admin API route") || body.contains("METHOD_NOT_ALLOWED"))
        .then_some((status, body))
}

/// The paths the admin router serves, read from the router itself: axum lists no routes, but
/// its `Debug` shows each path of its path router (before its fallback router's).
fn served_paths(router: &axum::Router) -> BTreeSet<String> {
    let debug = format!("{router:?}");
    let paths_router = debug
        .split("fallback_router")
        .next()
        .and_then(|d| d.split("paths: {").nth(1))
        .unwrap_or_else(|| panic!("no paths in the router's Debug: {debug}"));
    let paths: BTreeSet<String> = paths_router
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(
        paths.iter().all(|p| p.starts_with('/')),
        "the router's Debug changed: {paths:?}"
    );
    paths
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_serves_exactly_the_documented_operations_and_nothing_else() {
    let store = warden_testkit::sqlite_store().await;
    let gateway = warden_mcp::Gateway::start(
        Arc::new(warden_store::Store::open(&store.location).await.unwrap()),
        warden_mcp::GatewayOptions::default(),
    )
    .await;
    let state = Arc::new(AppState::new(
        gateway.clone(),
        crate::hosts::HostPolicy::loopback(),
    ));
    let router = routes().with_state(state);
    let doc = doc();
    let ops = operations(&doc);
    assert_eq!(ops.len(), TABLE.len());
    let documented: BTreeSet<(String, String)> = ops
        .iter()
        .map(|(method, path, _)| {
            let path = path.strip_prefix(openapi::PREFIX).unwrap().to_owned();
            (method.clone(), path)
        })
        .collect();
    // Every method of every path the router serves (HEAD aside, which axum answers for
    // every GET): a plain `.route()`, undocumented, shows up here.
    let mut served = BTreeSet::new();
    for path in served_paths(&router) {
        let concrete = path
            .split('/')
            .map(|s| if s.starts_with('{') { "x" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        for method in METHODS.into_iter().filter(|m| *m != "head") {
            if unrouted(&router, method, &concrete).await.is_none() {
                served.insert((method.to_owned(), path.clone()));
            }
        }
    }
    assert_eq!(
        served, documented,
        "the routes served and the operations documented"
    );
    let (status, body) = unrouted(&router, "get", "/nothing/here").await.unwrap();
    assert_eq!(status, 404);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["code"], "NOT_FOUND");
    let (status, body) = unrouted(&router, "put", "/tokens").await.unwrap();
    assert_eq!(status, 405);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        serde_json::json!({
            "error": "this route does not serve PUT; see /api/v1/openapi.json",
            "code": "METHOD_NOT_ALLOWED"
        })
    );
    gateway.shutdown();
}
