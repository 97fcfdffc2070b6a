//! What a security and reliability review found wrong, each as the behaviour it must have now:
//! read-only commands never create a store, failed authentications never lock out a valid
//! credential (AUTH-5), a session belongs to its credential for every method, and a body that is
//! no JSON-RPC request gets JSON-RPC's own error (REL-1).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use common::*;
use serde_json::{Value, json};

fn http() -> reqwest::Client {
    warden_mcp::http_client::install_tls();
    reqwest::Client::new()
}

/// A POST to `/mcp` with the headers every MCP client sends.
fn post(
    client: &reqwest::Client,
    w: &TestWarden,
    token: &str,
    version: &str,
) -> reqwest::RequestBuilder {
    client
        .post(w.mcp())
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
}

/// Status and body of a request.
async fn answer(request: reqwest::RequestBuilder) -> (u16, String) {
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[test]
fn read_only_commands_refuse_a_missing_store_and_create_none() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    for args in [
        vec!["audit", "verify"],
        vec!["audit"],
        vec!["get", "projects"],
        vec!["token", "list"],
        vec!["describe", "run", "run_x"],
    ] {
        let out = std::process::Command::new(WARDEN)
            .args(&args)
            .arg("--data-dir")
            .arg(&missing)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim_end(),
            format!(
                "error: no Warden store at {} (no such file); `warden serve` or `warden migrate` creates one",
                missing.join("warden.db").display()
            ),
            "{args:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!missing.exists(), "{args:?} created {}", missing.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_from_an_address_never_lock_out_a_valid_one() {
    let w = TestWarden::start("").await;
    let client = http();
    let whoami = format!("{}/api/v1/whoami", w.base);
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let response = client
            .get(&whoami)
            .bearer_auth("wdn_not_a_real_token")
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    // Past the limit (30 a minute) a bad token is answered 429 instead of 401…
    assert_eq!(statuses[..30], [401; 30]);
    assert_eq!(statuses[30..], [429; 10]);
    // …and a valid one from the same address is served as ever.
    for _ in 0..3 {
        let response = client
            .get(&whoami)
            .bearer_auth(&w.admin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_created_a_moment_ago_is_served_to_an_address_past_its_limit() {
    // A server whose poller would take an hour to see a new token: only the store's re-read
    // for a token it does not know finds it.
    let w = TestWarden::start_polling(
        warden_testkit::sqlite_store().await,
        "",
        std::time::Duration::from_secs(3_600),
    )
    .await;
    let client = http();
    let whoami = format!("{}/api/v1/whoami", w.base);
    let status = |token: String| {
        let request = client.get(&whoami).bearer_auth(token);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    for i in 0..=warden_server::DEFAULT_FAILURE_LIMIT {
        let expected = if i < warden_server::DEFAULT_FAILURE_LIMIT {
            401
        } else {
            429
        };
        assert_eq!(status(format!("wdn_{i:064x}")).await, expected, "{i}");
    }
    // Created through the store, as `warden token create --data-dir` does, and used at once
    // from the limited address (AUTH-5: its neighbours' mistakes are not its own).
    let created = w
        .store
        .store
        .create_token(
            warden_store::TokenRequest {
                principal: warden_core::principal::Principal::User {
                    name: warden_core::name::Name::new("admin").unwrap(),
                },
                projects: None,
                scopes: None,
                ttl: None,
                description: None,
                kind: warden_core::principal::CredentialKind::ApiKey,
            },
            "test",
            now(),
        )
        .await
        .unwrap()
        .secret;
    assert_eq!(status(created).await, 200);
    // A token that exists nowhere is still told 429 there.
    assert_eq!(status(format!("wdn_{}", "f".repeat(64))).await, 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_credential_cannot_end_or_resume_a_session_it_does_not_own() {
    let w = TestWarden::start("").await;
    let client = http();
    let owner = w.token("admin", None, None).await;
    let other = w.token("admin", None, None).await;
    let session = open_session(&w, &owner).await;
    let unknown = "0190c6d2-0000-7000-8000-000000000000";
    for method in [reqwest::Method::DELETE, reqwest::Method::GET] {
        let on = |id: &str| {
            client
                .request(method.clone(), w.mcp())
                .bearer_auth(&other)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .header("mcp-session-id", id)
        };
        let foreign = answer(on(&session)).await;
        let nowhere = answer(on(unknown)).await;
        assert_eq!(foreign, nowhere, "{method}");
        assert_eq!(foreign.0, 404, "{method}");
    }
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let foreign = answer(
        post(&client, &w, &other, "2025-11-25")
            .header("mcp-session-id", &session)
            .json(&list),
    )
    .await;
    let nowhere = answer(
        post(&client, &w, &other, "2025-11-25")
            .header("mcp-session-id", unknown)
            .json(&list),
    )
    .await;
    assert_eq!(foreign, nowhere);
    // The owner's session is still there.
    let (status, body) = answer(
        post(&client, &w, &owner, "2025-11-25")
            .header("mcp-session-id", &session)
            .json(&list),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // A session's answer may come as a server-sent event.
    let json = body
        .lines()
        .find_map(|l| l.strip_prefix("data: ").filter(|d| d.starts_with('{')))
        .unwrap_or(&body);
    let body: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert!(body["result"]["tools"].is_array(), "{body}");
    // Its owner can end it: 200, as the official SDKs' servers answer (the Python SDK reports
    // anything but 200, 204 or 405 as a failed termination).
    let (status, _) = answer(
        client
            .delete(w.mcp())
            .bearer_auth(&owner)
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_no_json_rpc_request_gets_json_rpc_errors_with_400() {
    let w = TestWarden::start("").await;
    let client = http();
    for version in ["2026-07-28", "2025-11-25"] {
        for (body, code) in [
            (r#"{"jsonrpc": "2.0", "id": 1, "#, -32700),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#,
                -32600,
            ),
            (r#""tools/list""#, -32600),
        ] {
            let (status, answer) = answer(
                post(&client, &w, &w.admin, version)
                    .header("mcp-method", "tools/list")
                    .body(body),
            )
            .await;
            assert_eq!(status, 400, "{version} {body}: {answer}");
            let answer: Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(answer["jsonrpc"], "2.0");
            assert_eq!(answer["id"], Value::Null, "{version} {body}");
            assert_eq!(answer["error"]["code"], code, "{version} {body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whoami_shows_a_project_bound_token_its_effective_scope_only() {
    let config = r#"
kind: Project
name: payments
---
kind: Project
name: infra
---
kind: User
name: alice
---
kind: Role
name: everywhere
permissions: ["run:projects:*", "ledger:write"]
---
kind: RoleBinding
role: everywhere
subject: { user: alice }
"#;
    let w = TestWarden::start(config).await;
    let bound = w.token("alice", Some(&["payments"]), None).await;
    let unbound = w.token("alice", None, None).await;
    let client = http();
    let whoami = |token: String| {
        let client = client.clone();
        let url = format!("{}/api/v1/whoami", w.base);
        async move {
            let response = client.get(url).bearer_auth(token).send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.json::<Value>().await.unwrap()
        }
    };
    let me = whoami(bound).await;
    assert_eq!(
        me["capabilities"],
        json!(["ledger:write", "run:projects:payments"])
    );
    assert_eq!(me["projects"].as_array().unwrap().len(), 1, "{me}");
    let me = whoami(unbound).await;
    assert_eq!(
        me["capabilities"],
        json!([
            "ledger:write",
            "run:projects:infra",
            "run:projects:payments"
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_whose_files_are_removed_refuses_every_call_and_is_not_ready() {
    let notes = tempfile::tempdir().unwrap();
    let notes_file = notes.path().join("notes.json");
    let config = format!(
        "kind: Project\nname: alpha\n---\nkind: User\nname: alice\n---\nkind: Role\nname: r\npermissions: [\"run:projects:alpha\"]\n---\nkind: RoleBinding\nrole: r\nsubject: {{ user: alice }}\n---\n{}---\nkind: ToolPolicy\nproject: alpha\ntool: \"alpha__*_note\"\nclass: mutation\n",
        stdio_upstream("alpha", "alpha", "",).replace(
            r#"args: ["notes", "--stdio"]"#,
            &format!(
                r#"args: ["notes", "--stdio", "--file", {:?}]"#,
                notes_file.display().to_string()
            ),
        )
    );
    let w = TestWarden::start(&config).await;
    let token = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &token, Era::Stateless).await;
    let added = call(&client, "alpha__add_note", json!({"text": "before"})).await;
    assert_eq!(decision(&added)["status"], "executed", "{added:?}");
    let ready = http()
        .get(format!("{}/readyz", w.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);

    let warden_store::Location::DataDir(dir) = &w.store.location else {
        panic!("an embedded store")
    };
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("warden.db{suffix}")));
    }
    let notes_before = std::fs::read_to_string(&notes_file).unwrap();
    for i in 0..5 {
        let refused = call(
            &client,
            "alpha__add_note",
            json!({"text": format!("after {i}")}),
        )
        .await;
        let d = decision(&refused);
        assert_eq!(d["status"], "denied", "{refused:?}");
        assert_eq!(d["code"], "UNAVAILABLE", "{refused:?}");
        assert_eq!(refused.is_error, Some(true));
    }
    // Nothing reached the upstream.
    assert_eq!(std::fs::read_to_string(&notes_file).unwrap(), notes_before);
    let ready = http()
        .get(format!("{}/readyz", w.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    let body: Value = ready.json().await.unwrap();
    assert_eq!(body["ready"], false);
    let problem = body["storeProblem"].as_str().unwrap();
    assert!(
        problem.contains("was removed while Warden was running"),
        "{problem}"
    );
}

/// The call record of the latest call of `tool`: what the audit trail kept of its arguments.
async fn kept_arguments(w: &TestWarden, tool: &str) -> Value {
    let records = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            tool: Some(tool.to_owned()),
            kind: Some("call".into()),
            limit: Some(100_000),
            ..warden_store::AuditFilter::default()
        })
        .await
        .unwrap();
    let last = records.last().expect("a call record");
    let payload: Value = serde_json::from_str(&last.record.payload).unwrap();
    payload["args"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_arguments_are_never_kept_and_a_tool_policy_chooses_the_rest() {
    let config = format!(
        "kind: Project\nname: alpha\n---\nkind: User\nname: alice\n---\nkind: Role\nname: r\npermissions: [\"run:projects:alpha\"]\n---\nkind: RoleBinding\nrole: r\nsubject: {{ user: alice }}\n---\n{}---\nkind: ToolPolicy\nproject: alpha\ntool: alpha__list_notes\naudit: {{ arguments: hash }}\n---\nkind: ToolPolicy\nproject: alpha\ntool: alpha__add\naudit: {{ arguments: full }}\n",
        stdio_upstream("alpha", "alpha", "")
    );
    let w = TestWarden::start(&config).await;
    let token = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &token, Era::Stateless).await;
    let secrets = json!({"text": "hello", "prompt": "p", "bearer": "b", "pwd": "w",
        "session": "s", "pin": "1234", "ssn": "078-05-1120", "shipping": "kept"});
    let echoed = call(&client, "alpha__echo", secrets).await;
    assert_eq!(decision(&echoed)["status"], "executed", "{echoed:?}");
    assert_eq!(
        kept_arguments(&w, "alpha__echo").await,
        json!({"text": "hello", "prompt": "[redacted]", "bearer": "[redacted]",
            "pwd": "[redacted]", "session": "[redacted]", "pin": "[redacted]",
            "ssn": "[redacted]", "shipping": "kept"})
    );
    call(&client, "alpha__list_notes", json!({})).await;
    assert_eq!(kept_arguments(&w, "alpha__list_notes").await, Value::Null);
    call(&client, "alpha__add", json!({"a": 1, "b": 2, "token": "t"})).await;
    assert_eq!(
        kept_arguments(&w, "alpha__add").await,
        json!({"a": 1, "b": 2, "token": "t"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_allowed_before_a_crash_gets_an_interrupted_outcome_and_is_not_rerun() {
    use warden_core::audit::{NewRecord, RecordKind};
    let store = warden_testkit::sqlite_store().await;
    let record = |kind: RecordKind, call: &str, at: i64| NewRecord {
        at: warden_core::time::Millis(at),
        kind,
        run_id: "run_crashed".into(),
        call_id: Some(call.into()),
        principal: Some("user:alice".into()),
        agent: None,
        tool: Some("alpha__add_note".into()),
        decision: (kind == RecordKind::Decision).then(|| "allow".into()),
        code: None,
        payload: "{}".into(),
    };
    let now = now().0;
    // One decided ten minutes ago (its process died), one just now (it may still be running).
    store
        .store
        .append_audit(vec![
            record(RecordKind::Call, "call_old", now - 600_000),
            record(RecordKind::Decision, "call_old", now - 600_000),
            record(RecordKind::Call, "call_new", now),
            record(RecordKind::Decision, "call_new", now),
        ])
        .await
        .unwrap();
    let w = TestWarden::start_on(store, "").await;
    let outcomes = |call: &'static str| {
        let store = &w.store.store;
        async move {
            store
                .audit(&warden_store::AuditFilter {
                    run_id: Some("run_crashed".into()),
                    kind: Some("outcome".into()),
                    ..warden_store::AuditFilter::default()
                })
                .await
                .unwrap()
                .into_iter()
                .filter(|r| r.record.call_id.as_deref() == Some(call))
                .collect::<Vec<_>>()
        }
    };
    // The sweep at start; a bounded wait for it, not a timing assertion.
    let mut found = Vec::new();
    for _ in 0..100 {
        found = outcomes("call_old").await;
        if !found.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(found.len(), 1, "{found:?}");
    let outcome = &found[0].record;
    assert_eq!(outcome.decision.as_deref(), Some("interrupted"));
    assert_eq!(outcome.tool.as_deref(), Some("alpha__add_note"));
    let payload: Value = serde_json::from_str(&outcome.payload).unwrap();
    assert_eq!(payload["status"], "interrupted");
    assert!(outcomes("call_new").await.is_empty());
    // `warden describe run` shows it.
    let out = std::process::Command::new(WARDEN)
        .args(["describe", "run", "run_crashed", "-o", "json"])
        .args(w.store_args())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("interrupted"));
    // The verified chain holds it.
    assert!(w.store.store.verify_audit().await.unwrap().is_ok());
}

/// Starts `warden serve` on `dir`; returns the child, its base URL and the admin token.
fn serve(dir: &std::path::Path) -> (std::process::Child, String, String) {
    serve_with(dir, &[])
}

/// [`serve`] with more arguments.
fn serve_with(dir: &std::path::Path, args: &[&str]) -> (std::process::Child, String, String) {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(WARDEN)
        .args([
            "serve",
            "--no-demo",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
        ])
        .arg(dir)
        .args(args)
        .env("WARDEN_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mcp = lines.next().unwrap().unwrap();
    let _console = lines.next().unwrap().unwrap();
    let token = lines.next().unwrap().unwrap();
    let base = mcp
        .trim_start_matches("mcp: ")
        .trim_end_matches("/mcp")
        .to_owned();
    (
        child,
        base,
        token.trim_start_matches("admin token: ").to_owned(),
    )
}

/// Stops a `warden serve` the way an operator does (SIGTERM) and waits for it.
fn stop(mut child: std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_chain_is_named_by_its_signed_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (child, base, token) = serve(dir.path());
    let client = http();
    for id in 0..4 {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "warden__whoami", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}});
        let response = client
            .post(format!("{base}/mcp"))
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "warden__whoami")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    // Stopping signs a checkpoint of the head.
    stop(child);
    let store_args = vec!["--data-dir".to_owned(), dir.path().display().to_string()];
    let verified = cli(&["audit", "verify"], &store_args);
    let stdout = String::from_utf8_lossy(&verified.stdout).into_owned();
    assert!(verified.status.success(), "{stdout}");
    assert!(
        stdout.contains("its end anchored by the checkpoint of"),
        "{stdout}"
    );
    let exported = cli(&["audit", "checkpoint", "export"], &store_args);
    assert!(exported.status.success());
    let anchor = dir.path().join("kept-elsewhere.jsonl");
    std::fs::write(&anchor, &exported.stdout).unwrap();
    let checkpoint: Value = serde_json::from_slice(&exported.stdout).unwrap();
    let signed = checkpoint["seq"].as_i64().unwrap();
    assert!(
        std::fs::metadata(dir.path().join("audit.key"))
            .unwrap()
            .len()
            > 0
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("audit.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // Whoever can write the database cuts off the tail, moves the head back, and removes the
    // database's checkpoints: the chain that is left verifies on its own.
    let kept = signed - 3;
    {
        let db = rusqlite::Connection::open(dir.path().join("warden.db")).unwrap();
        db.execute_batch(&format!(
            "DROP TRIGGER audit_no_delete; DELETE FROM audit WHERE seq > {kept}; \
             UPDATE audit_head SET seq = {kept}, hash = (SELECT hash FROM audit WHERE seq = {kept}); \
             DELETE FROM audit_checkpoints;"
        ))
        .unwrap();
    }
    let expected = format!("records after seq {kept} are missing; the checkpoint of ");
    // The checkpoint file beside the key names it…
    let refused = cli(&["audit", "verify"], &store_args);
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: {expected}")),
        "{stderr}"
    );
    assert!(
        stderr.trim_end().ends_with(&format!("saw seq {signed}")),
        "{stderr}"
    );
    // …and so does an exported checkpoint kept elsewhere, when the file is gone too.
    std::fs::remove_file(dir.path().join("audit-checkpoints.jsonl")).unwrap();
    let anchored = cli(
        &["audit", "verify", "--anchor", &anchor.display().to_string()],
        &store_args,
    );
    let stderr = String::from_utf8_lossy(&anchored.stderr).into_owned();
    assert_eq!(anchored.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&expected), "{stderr}");
}

/// `initialize` as `token` on `base`: the status, the session id and the body.
async fn initialize(
    client: &reqwest::Client,
    base: &str,
    token: &str,
) -> (u16, Option<String>, String) {
    let response = client
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "flood", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (
        response.status().as_u16(),
        session,
        response.text().await.unwrap(),
    )
}

/// 2025-11-25 sessions are capped per principal and per server (`--max-sessions-per-principal`,
/// `--max-sessions`): an `initialize` past a cap is answered 429 with a JSON-RPC error naming
/// it, and no session is left open; an ended session frees its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_per_principal_and_in_total() {
    let dir = tempfile::tempdir().unwrap();
    let (child, base, admin) = serve_with(
        dir.path(),
        &["--max-sessions-per-principal", "3", "--max-sessions", "5"],
    );
    let client = http();
    let users = "kind: User\nname: bob\n";
    let applied = client
        .post(format!("{base}/api/v1/resources"))
        .bearer_auth(&admin)
        .header("content-type", "application/yaml")
        .body(users)
        .send()
        .await
        .unwrap();
    assert_eq!(applied.status(), 200);
    let created: Value = client
        .post(format!("{base}/api/v1/tokens"))
        .bearer_auth(&admin)
        .json(&json!({"user": "bob", "scopes": ["nothing:at-all"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bob = created["secret"].as_str().unwrap().to_owned();
    let mut admins = Vec::new();
    for _ in 0..3 {
        let (status, session, body) = initialize(&client, &base, &admin).await;
        assert_eq!(status, 200, "{body}");
        admins.push(session.unwrap());
    }
    let (status, session, body) = initialize(&client, &base, &admin).await;
    assert_eq!((status, session), (429, None), "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        error["error"]["message"],
        "too many open sessions for `user:admin`: 3 is the limit on this server; end sessions you no longer use (DELETE with their Mcp-Session-Id) or wait for idle ones to expire"
    );
    // Another principal, a token whose scopes grant nothing included, fills the server.
    for _ in 0..2 {
        assert_eq!(initialize(&client, &base, &bob).await.0, 200);
    }
    let (status, _, body) = initialize(&client, &base, &bob).await;
    assert_eq!(status, 429);
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        error["error"]["message"],
        "too many open sessions on this server: 5 is the limit; try again later"
    );
    // An ended session frees its place.
    let ended = client
        .delete(format!("{base}/mcp"))
        .bearer_auth(&admin)
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &admins[0])
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    assert_eq!(initialize(&client, &base, &admin).await.0, 200);
    stop(child);
}

/// Every connection must send its headers within `--header-read-timeout`: one that sends
/// nothing, one that sends half a request and one that adds a header line now and then are
/// all closed by the server then (unauthenticated, they held a connection for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_finish_their_headers_are_closed() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let dir = tempfile::tempdir().unwrap();
    let (child, base, _) = serve_with(dir.path(), &["--header-read-timeout", "1s"]);
    let addr = base.trim_start_matches("http://").to_owned();
    let silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut half = tokio::net::TcpStream::connect(&addr).await.unwrap();
    half.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut drip = tokio::net::TcpStream::connect(&addr).await.unwrap();
    drip.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let (drip_read, mut drip_write) = drip.into_split();
    tokio::spawn(async move {
        for i in 0.. {
            let line = format!("X-Slow-{i}: a\r\n");
            if drip_write.write_all(line.as_bytes()).await.is_err() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    });
    let closed = |mut reader: Box<dyn tokio::io::AsyncRead + Unpin + Send>| async move {
        let mut buf = Vec::new();
        // The server's answer, if any (a 408), then the end of the stream.
        tokio::time::timeout(
            std::time::Duration::from_secs(15),
            reader.read_to_end(&mut buf),
        )
        .await
        .is_ok()
    };
    let (silent, half, drip) = tokio::join!(
        closed(Box::new(silent)),
        closed(Box::new(half)),
        closed(Box::new(drip_read))
    );
    assert_eq!((silent, half, drip), (true, true, true));
    // A client that sends its request in time is served as ever.
    let health = http().get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    stop(child);
}
