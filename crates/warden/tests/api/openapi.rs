//! The OpenAPI document as served: its operations are those docs/api.md lists, every route in
//! it answers, refuses a credential without the capability it names, and the document
//! validates as OpenAPI 3.1 with the reference validator.

use std::collections::BTreeSet;
use std::process::Command;

use reqwest::Method;
use serde_json::Value;

use crate::common::*;
use crate::support::*;

/// Every operation of the served document: method, path, operation.
fn operations(doc: &Value) -> Vec<(Method, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if let Ok(m) = Method::from_bytes(method.to_ascii_uppercase().as_bytes())
                && op.get("operationId").is_some()
            {
                out.push((m, path.clone(), op.clone()));
            }
        }
    }
    out
}

/// The rows of docs/api.md's table of routes: method, path, capability, operation id.
fn rows_of_the_docs() -> Vec<[String; 4]> {
    let docs = include_str!("../../../../docs/api.md");
    let start = docs
        .find("| method | path | capability | operation id |")
        .unwrap();
    docs[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            let bare = |c: &str| c.trim_matches('`').to_owned();
            [
                bare(cells[0]),
                bare(cells[1]),
                cells[2].to_owned(),
                bare(cells[cells.len() - 1]),
            ]
        })
        .collect()
}

/// `path` with each `{param}` replaced.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { "x" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_route_refuses_a_credential_without_its_capability_naming_it() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let doc = api
        .send(Method::GET, None, "/api/v1/openapi.json", None)
        .await;
    assert_eq!(doc.status, 200, "served without a token");
    assert_eq!(doc.content_type, "application/json");
    let doc = doc.json;
    let nobody = nobody(&w).await;
    let ops = operations(&doc);
    // The operations served are those docs/api.md lists, no more, no fewer.
    let served: BTreeSet<(String, String, String)> = ops
        .iter()
        .map(|(method, path, op)| {
            let id = op["operationId"].as_str().unwrap().to_owned();
            (method.to_string(), path.clone(), id)
        })
        .collect();
    let rows = rows_of_the_docs();
    let documented: BTreeSet<(String, String, String)> = rows
        .iter()
        .map(|[method, path, _, id]| (method.clone(), path.clone(), id.clone()))
        .collect();
    assert_eq!(served, documented);
    let mut gated = 0;
    for (method, path, op) in &ops {
        let at = format!("{method} {path}");
        let scopes = op["security"][0]["bearer"].as_array().unwrap();
        let body = (*method == Method::POST).then(|| ("application/json", "{}".to_owned()));
        let answer = api
            .send(method.clone(), Some(&nobody), &concrete(path), body)
            .await;
        assert!(
            answer.content_type.starts_with("application/json"),
            "{at}: {}",
            answer.content_type
        );
        assert!(
            answer.json["error"].is_string() || answer.status < 400,
            "{at}: {}",
            answer.text
        );
        if let Some(capability) = scopes.first().and_then(Value::as_str) {
            gated += 1;
            assert_eq!(answer.status, 403, "{at}: {}", answer.text);
            assert_eq!(answer.json["code"], "MISSING_CAPABILITY", "{at}");
            let message = answer.json["error"].as_str().unwrap();
            assert!(
                message.ends_with(&format!("needs the `{capability}` capability")),
                "{at}: {message}"
            );
            // The admin, holding every capability, is not refused for it.
            let admin = api
                .send(
                    method.clone(),
                    Some(&w.admin),
                    &concrete(path),
                    (*method == Method::POST).then(|| ("application/json", "{}".to_owned())),
                )
                .await;
            assert_ne!(
                admin.json["code"], "MISSING_CAPABILITY",
                "{at}: {}",
                admin.text
            );
        } else {
            assert_ne!(answer.status, 403, "{at}: {}", answer.text);
        }
    }
    // As many as the docs' rows that need a capability (the others are open to any
    // credential).
    let required = rows.iter().filter(|r| r[2].starts_with('`')).count();
    assert_eq!(gated, required);
    // Without a token, the API refuses before any route.
    assert_eq!(
        api.send(Method::GET, None, "/api/v1/whoami", None)
            .await
            .status,
        401
    );
    assert_eq!(
        api.get(&w.admin, "/api/v1/nothing").await,
        refusal(
            404,
            "NOT_FOUND",
            "no admin API route `/api/v1/nothing`; see /api/v1/openapi.json"
        )
    );
}

/// The reference validator (`openapi-spec-validator`, pinned), in a virtual environment of
/// its own under the target directory, installed from PyPI on first use.
fn validator() -> std::path::PathBuf {
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("openapi-venv");
    let bin = venv.join("bin/openapi-spec-validator");
    if !bin.exists() {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(made.success(), "python3 -m venv");
        let installed = Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "openapi-spec-validator==0.9.0",
            ])
            .status()
            .unwrap();
        assert!(installed.success(), "pip install openapi-spec-validator");
    }
    bin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_document_validates_as_openapi_3_1() {
    let w = TestWarden::start("").await;
    let doc = Api::new(&w)
        .send(Method::GET, None, "/api/v1/openapi.json", None)
        .await;
    assert!(doc.json["openapi"].as_str().unwrap().starts_with("3.1."));
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("warden-openapi.json");
    std::fs::write(&file, &doc.text).unwrap();
    let out = Command::new(validator()).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(": OK"));
}
