//! The MCP gateway end to end: both eras, stdio and HTTP, real upstreams (issue: MCP gateway).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use warden_testkit::notes::{NotesServer, spawn_http};

fn two_projects(http_url: &str) -> String {
    format!(
        r#"
kind: Project
name: alpha
---
kind: Project
name: beta
---
kind: User
name: alice
---
kind: Role
name: runner
permissions: ["run:projects:*"]
---
kind: RoleBinding
role: runner
subject: {{ user: alice }}
---
{}
---
kind: Upstream
name: beta
project: beta
http: {{ url: "{http_url}" }}
---
kind: ToolPolicy
project: alpha
tool: "alpha__*_note"
class: mutation
"#,
        stdio_upstream("alpha", "alpha", "")
    )
}

async fn http_fixture() -> (String, CancellationToken) {
    let ct = CancellationToken::new();
    let addr = spawn_http(
        NotesServer::new(None),
        "127.0.0.1:0".parse().unwrap(),
        ct.clone(),
    )
    .await
    .unwrap();
    (format!("http://{addr}/mcp"), ct)
}

async fn check_bound_token(client: &Client, leg: &str) {
    let names = tool_names(client).await;
    assert!(
        names.contains(&"alpha__echo".to_owned()),
        "{leg}: {names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("beta__")),
        "{leg}: beta tools listed: {names:?}"
    );
    // A tool of project beta answers exactly like a tool that does not exist…
    let hidden = call(client, "beta__echo", json!({"text": "x"})).await;
    let missing = call(client, "beta__echoo", json!({"text": "x"})).await;
    assert_eq!(hidden.is_error, Some(true), "{leg}");
    assert_eq!(decision(&hidden)["code"], "UNKNOWN_TOOL", "{leg}");
    let mut expected = without_ids(&missing);
    expected["structuredContent"]["message"] = json!("unknown tool `beta__echo`");
    expected["_meta"]["warden/decision"]["message"] = json!("unknown tool `beta__echo`");
    let expected_text = serde_json::to_string(&expected["structuredContent"]).unwrap();
    expected["content"][0]["text"] = json!(expected_text);
    assert_eq!(
        without_ids(&hidden),
        expected,
        "{leg}: a hidden tool answers unlike an unknown one"
    );
    // …even with arguments its schema would refuse: it is never validated.
    let invalid = call(client, "beta__add", json!({"a": "not a number"})).await;
    assert_eq!(decision(&invalid)["code"], "UNKNOWN_TOOL", "{leg}");
    // The project's own tools work.
    let echo = call(client, "alpha__echo", json!({"text": "hi"})).await;
    assert_eq!(echo.is_error, Some(false), "{leg}: {echo:?}");
    assert_eq!(decision(&echo)["status"], "executed", "{leg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_bound_to_one_project_sees_and_reaches_nothing_of_another_in_both_eras_and_over_stdio()
 {
    let (http_url, _ct) = http_fixture().await;
    let w = TestWarden::start(&two_projects(&http_url)).await;
    let bound = w.token("alice", Some(&["alpha"]), None).await;
    let unbound = w.token("alice", None, None).await;
    for era in [Era::Stateless, Era::Sessions] {
        let client = http_client(&w.mcp(), &bound, era).await;
        check_bound_token(&client, &format!("{era:?}")).await;
        // The same owner without a binding reaches beta.
        let wide = http_client(&w.mcp(), &unbound, era).await;
        assert!(tool_names(&wide).await.contains(&"beta__echo".to_owned()));
        let r = call(&wide, "beta__echo", json!({"text": "x"})).await;
        assert_eq!(decision(&r)["status"], "executed");
    }
    let stdio = stdio_client(&w.store_args(), &bound, &[]).await;
    check_bound_token(&stdio, "stdio").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_lands_in_the_audit_trail_with_its_decision() {
    let (http_url, _ct) = http_fixture().await;
    let w = TestWarden::start(&two_projects(&http_url)).await;
    let token = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &token, Era::Stateless).await;
    call(&client, "alpha__list_notes", json!({})).await;
    call(&client, "alpha__add_note", json!({"text": "t"})).await;
    let out = cli(
        &[
            "audit",
            "-o",
            "json",
            "--kind",
            "decision",
            "--oldest-first",
        ],
        &w.store_args(),
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["tool"].as_str().unwrap().to_owned(),
                l["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("alpha__list_notes".into(), "allow".into()),
            ("alpha__add_note".into(), "allow".into())
        ]
    );
    assert!(cli(&["audit", "verify"], &w.store_args()).status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appendix_a_configuration_works_for_upstreams_and_tool_policies() {
    let (http_url, _ct) = http_fixture().await;
    let secrets = tempfile::tempdir().unwrap();
    std::fs::write(
        secrets.path().join("ledger-auth"),
        "Bearer not-checked-by-the-fixture\n",
    )
    .unwrap();
    let config = format!(
        r#"
kind: User
name: alice
---
kind: User
name: bob
---
kind: Role
name: payments-operator
permissions: ["run:projects:payments", "tasks:create"]
---
kind: Role
name: ledger-writer
permissions: ["run:projects:payments", "ledger:write"]
---
kind: RoleBinding
role: payments-operator
subject: {{ user: alice }}
---
kind: RoleBinding
role: ledger-writer
subject: {{ user: bob }}
---
kind: Project
name: payments
instructions: "How payments work here"
---
{stdio}
---
kind: Upstream
name: ledger-http
project: payments
http: {{ url: "{http_url}", headers: {{ Authorization: "${{secret:ledger-auth}}" }} }}
prefix: ""
---
kind: ToolPolicy
project: payments
tool: ledger__add_note
class: mutation
capability: ledger:write
risk: ordinary
rateLimit: {{ perMinute: 30 }}
strict: true
"#,
        stdio = stdio_upstream("ledger", "payments", "")
    );
    let store = warden_testkit::sqlite_store().await;
    let docs = warden_core::config::parse_documents("a.yaml", &config).unwrap();
    store.store.bootstrap(now()).await.unwrap();
    store
        .store
        .apply(docs, "test", now())
        .await
        .unwrap()
        .unwrap();
    // The gateway reads ${secret:…} from the secrets directory.
    let w = TestWardenWithSecrets::start(store, secrets.path().to_path_buf()).await;
    let alice = http_client(&w.mcp, &w.token("alice").await, Era::Stateless).await;
    let names = tool_names(&alice).await;
    // prefix "" keeps the upstream's own names; the stdio upstream gets `ledger__`.
    assert!(names.contains(&"list_notes".to_owned()), "{names:?}");
    assert!(names.contains(&"ledger__add_note".to_owned()), "{names:?}");
    // alice lacks ledger:write.
    let r = call(&alice, "ledger__add_note", json!({"text": "x"})).await;
    assert_eq!(decision(&r)["code"], "CAPABILITY");
    let bob = http_client(&w.mcp, &w.token("bob").await, Era::Sessions).await;
    // strict: unknown fields are refused even though the upstream schema allows them.
    let r = call(&bob, "ledger__add_note", json!({"text": "x", "extra": 1})).await;
    assert_eq!(decision(&r)["code"], "VALIDATION");
    assert!(
        decision(&r)["message"]
            .as_str()
            .unwrap()
            .contains("'extra' was unexpected")
    );
    let r = call(&bob, "ledger__add_note", json!({"text": "x"})).await;
    assert_eq!(decision(&r)["status"], "executed", "{r:?}");
    assert_eq!(r.structured_content, Some(json!({"id": 1})));
    // The advertised schema is the validated one (GOV-1).
    let tools = bob.list_all_tools().await.unwrap();
    let add = tools.iter().find(|t| t.name == "ledger__add_note").unwrap();
    assert_eq!(
        add.input_schema.get("additionalProperties"),
        Some(&json!(false))
    );
    // An unclassified mutation of the HTTP upstream is refused before any upstream call.
    let r = call(&bob, "add_note", json!({"text": "x"})).await;
    assert_eq!(decision(&r)["code"], "UNGOVERNED");
}

/// A Warden whose gateway reads secrets from a directory.
struct TestWardenWithSecrets {
    mcp: String,
    store: warden_testkit::TestStore,
    _gateway: std::sync::Arc<warden_mcp::Gateway>,
    _shutdown: tokio_util::sync::DropGuard,
}

impl TestWardenWithSecrets {
    async fn start(store: warden_testkit::TestStore, secrets: std::path::PathBuf) -> Self {
        use std::sync::Arc;
        let gateway = warden_mcp::Gateway::start(
            Arc::new(
                warden_store::Store::open_serving(&store.location)
                    .await
                    .unwrap(),
            ),
            warden_mcp::GatewayOptions {
                secrets_dir: Some(secrets),
                ..Default::default()
            },
        )
        .await;
        gateway.wait_for_upstreams(Duration::from_secs(15)).await;
        let addr: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        let state = Arc::new(warden_server::AppState::new(
            gateway.clone(),
            warden_server::HostPolicy::loopback(),
        ));
        let bound = warden_server::Bound::bind(addr, state).await.unwrap();
        let addr = bound.local_addr().unwrap();
        let ct = CancellationToken::new();
        tokio::spawn(bound.serve(ct.clone()));
        Self {
            mcp: format!("http://{addr}/mcp"),
            store,
            _gateway: gateway,
            _shutdown: ct.drop_guard(),
        }
    }

    async fn token(&self, user: &str) -> String {
        let secret = self
            .store
            .store
            .create_token(
                warden_store::TokenRequest {
                    principal: warden_core::principal::Principal::User {
                        name: warden_core::name::Name::new(user).unwrap(),
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
        let target = self.store.store.revision().await.unwrap();
        while self._gateway.snapshot().revision < target {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        secret
    }
}

async fn raw_http(addr: std::net::SocketAddr, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_listener_refuses_a_foreign_host_and_unauthenticated_calls() {
    let w = TestWarden::start("").await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let foreign = raw_http(
        w.addr,
        &format!("POST /mcp HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", w.admin, body.len()),
    )
    .await;
    assert!(foreign.starts_with("HTTP/1.1 403"), "{foreign}");
    assert!(
        foreign.ends_with("forbidden: Host `evil.example` is not allowed\n"),
        "{foreign}"
    );
    let origin = raw_http(w.addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\nConnection: close\r\n\r\n").await;
    assert!(origin.starts_with("HTTP/1.1 403"), "{origin}");
    let anonymous = raw_http(w.addr, &format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())).await;
    assert!(anonymous.starts_with("HTTP/1.1 401"), "{anonymous}");
    assert!(
        anonymous.ends_with("\r\n\r\nmissing bearer token: send `Authorization: Bearer wdn_…`\n"),
        "{anonymous}"
    );
    let bad = raw_http(w.addr, &format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wdn_{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", "0".repeat(64), body.len())).await;
    assert!(
        bad.starts_with("HTTP/1.1 401") && bad.ends_with("\r\n\r\ninvalid token\n"),
        "{bad}"
    );

    // The same refusals for a request the server answers inline (a stateless 2026-07-28
    // call, which skips the router): same checks, same order, same answers.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"warden__whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}"#;
    let inline = |host: &str, extra: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: warden__whoami\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{call}",
            call.len()
        )
    };
    let admin = format!("Authorization: Bearer {}\r\n", w.admin);
    let foreign = raw_http(w.addr, &inline("evil.example", &admin)).await;
    assert!(
        foreign.starts_with("HTTP/1.1 403")
            && foreign.ends_with("forbidden: Host `evil.example` is not allowed\n"),
        "{foreign}"
    );
    let origin = raw_http(
        w.addr,
        &inline(
            "127.0.0.1",
            &format!("{admin}Origin: https://evil.example\r\n"),
        ),
    )
    .await;
    assert!(
        origin.starts_with("HTTP/1.1 403")
            && origin.ends_with("forbidden: Origin `https://evil.example` is not allowed\n"),
        "{origin}"
    );
    let anonymous = raw_http(w.addr, &inline("127.0.0.1", "")).await;
    assert!(
        anonymous.starts_with("HTTP/1.1 401")
            && anonymous.contains("www-authenticate: Bearer realm=\"warden\"")
            && anonymous.ends_with("missing bearer token: send `Authorization: Bearer wdn_…`\n"),
        "{anonymous}"
    );
    let bad = raw_http(
        w.addr,
        &inline(
            "127.0.0.1",
            &format!("Authorization: Bearer wdn_{}\r\n", "0".repeat(64)),
        ),
    )
    .await;
    assert!(
        bad.starts_with("HTTP/1.1 401") && bad.ends_with("\r\n\r\ninvalid token\n"),
        "{bad}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_stdio_upstream_is_restarted_and_meanwhile_its_tools_are_unavailable() {
    let (http_url, _ct) = http_fixture().await;
    let marker = tempfile::tempdir().unwrap();
    let notes = marker.path().join("alpha-notes.json");
    let config = two_projects(&http_url).replace(
        r#"args: ["notes", "--stdio"]"#,
        &format!(
            r#"args: ["notes", "--stdio", "--file", {:?}]"#,
            notes.display().to_string()
        ),
    );
    let w = TestWarden::start(&config).await;
    let token = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &token, Era::Stateless).await;
    assert_eq!(
        decision(&call(&client, "alpha__echo", json!({"text": "a"})).await)["status"],
        "executed"
    );
    let marker_text = notes.display().to_string();
    let pids = pids_with(&marker_text);
    assert_eq!(pids.len(), 1, "{pids:?}");
    std::process::Command::new("kill")
        .args(["-9", &pids[0].to_string()])
        .status()
        .unwrap();
    // Meanwhile: UNAVAILABLE for alpha, beta keeps answering.
    let mut saw_unavailable = false;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = call(&client, "alpha__echo", json!({"text": "b"})).await;
        let d = decision(&r);
        if d["code"] == "UNAVAILABLE" {
            saw_unavailable = true;
            assert!(
                d["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("upstream `alpha` is unavailable"),
                "{d}"
            );
            let other = call(&client, "beta__echo", json!({"text": "c"})).await;
            assert_eq!(decision(&other)["status"], "executed");
        } else if d["status"] == "executed" && saw_unavailable {
            break;
        }
        assert!(Instant::now() < deadline, "the upstream was not restarted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A new process serves it.
    let after = pids_with(&marker_text);
    assert_eq!(after.len(), 1);
    assert_ne!(after[0], pids[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warden_stdio_writes_only_json_rpc_to_stdout() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let mut child = tokio::process::Command::new(WARDEN)
        .arg("stdio")
        .args(w.store_args())
        .env("WARDEN_TOKEN", &w.admin)
        .env("WARDEN_LOG", "debug")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"}}}),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}),
    ];
    for r in &requests {
        stdin.write_all(format!("{r}\n").as_bytes()).await.unwrap();
    }
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answered = 0;
    while answered < 4 {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON on stdout: {line:?}: {e}"));
        assert_eq!(msg["jsonrpc"], "2.0", "{line}");
        if msg.get("id").is_some() {
            answered += 1;
        }
    }
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    // Whatever else it printed after stdin closed is protocol too.
    while let Ok(Some(line)) = lines.next_line().await {
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON on stdout: {line:?}: {e}"));
        assert_eq!(msg["jsonrpc"], "2.0");
    }
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_created_by_the_cli_works_within_a_second_and_revoking_it_refuses_the_next_call() {
    let w = TestWarden::start("kind: User\nname: alice\n---\nkind: Project\nname: alpha\n---\nkind: Role\nname: r\npermissions: [\"run:projects:alpha\"]\n---\nkind: RoleBinding\nrole: r\nsubject: { user: alice }\n").await;
    let out = cli(&["token", "create", "--user", "alice"], &w.store_args());
    assert!(out.status.success());
    let created = Instant::now();
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    // STORE-1b: the running server accepts it within one second.
    loop {
        if w.gateway.authenticate(&token).is_ok() {
            break;
        }
        assert!(
            created.elapsed() < Duration::from_secs(1),
            "the new token was not accepted within a second"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let client = http_client(&w.mcp(), &token, Era::Sessions).await;
    let r = call(&client, "warden__whoami", json!({})).await;
    assert_eq!(
        r.structured_content.as_ref().unwrap()["data"]["principal"],
        "user:alice"
    );
    w.revoke_with_cli(&token).await;
    let revoked = Instant::now();
    loop {
        if w.gateway.authenticate(&token).is_err() {
            break;
        }
        assert!(
            revoked.elapsed() < Duration::from_secs(1),
            "the revoked token was still accepted after a second"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The open session's next call is refused.
    let refused = client
        .call_tool(rmcp::model::CallToolRequestParams::new("warden__whoami"))
        .await;
    assert!(refused.is_err(), "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_switch_pulled_by_the_cli_stops_the_next_call() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let client = http_client(&w.mcp(), &w.admin, Era::Sessions).await;
    assert_eq!(
        decision(&call(&client, "alpha__echo", json!({"text": "a"})).await)["status"],
        "executed"
    );
    assert!(
        cli(
            &["kill", "--project", "alpha", "--reason", "drill"],
            &w.store_args()
        )
        .status
        .success()
    );
    w.settle().await;
    let r = call(&client, "alpha__echo", json!({"text": "a"})).await;
    assert_eq!(decision(&r)["code"], "KILL_SWITCH");
    assert_eq!(
        decision(&r)["message"],
        "`alpha__echo` is frozen by a kill switch: drill"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inventory_has_a_governance_decision_for_every_mutation() {
    // GOV-5 tripwire, recomputed from the live registry: the built-in tool set and the demo
    // configuration `warden serve` loads into a new store.
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(WARDEN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mcp = lines.next().unwrap().unwrap();
    let _console = lines.next().unwrap().unwrap();
    let token = lines
        .next()
        .unwrap()
        .unwrap()
        .trim_start_matches("admin token: ")
        .to_owned();
    let base = mcp
        .trim_start_matches("mcp: ")
        .trim_end_matches("/mcp")
        .to_owned();
    let out = std::process::Command::new(WARDEN)
        .args(["tools", "inventory", "-o", "json", "--server", &base])
        .env("WARDEN_TOKEN", &token)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let inventory: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = inventory["tools"].as_array().unwrap();
    // The demo's read, ordinary mutation and dangerous mutation, and `warden`'s two reads.
    assert_eq!(tools.len(), 5, "{tools:?}");
    for t in tools {
        match (
            t["class"].as_str().unwrap(),
            t["governance"].as_str().unwrap(),
        ) {
            ("read", "read") => {}
            ("mutation", "governed") => {}
            ("mutation", "ungoverned") => assert!(
                !t["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("no ToolPolicy"),
                "a mutation without a governance decision: {t}"
            ),
            other => panic!("unexpected classification {other:?} for {t}"),
        }
    }
    let table = std::process::Command::new(WARDEN)
        .args(["tools", "inventory", "--server", &base])
        .env("WARDEN_TOKEN", &token)
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.starts_with("TOOL"), "{table}");
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("notes__delete_note "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..6],
        [
            "notes__delete_note",
            "demo",
            "mutation",
            "-",
            "dangerous",
            "governed"
        ],
        "{table}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_answers_without_executing_or_recording_anything() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}\n---\nkind: ToolPolicy\nproject: alpha\ntool: alpha__delete_note\nclass: mutation\nrisk: dangerous\n---\nkind: User\nname: alice\n",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let before = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            limit: Some(10_000),
            ..Default::default()
        })
        .await
        .unwrap()
        .len();
    let out = std::process::Command::new(WARDEN)
        .args([
            "explain",
            "--tool",
            "alpha__delete_note",
            "--args",
            r#"{"id": 1}"#,
            "-o",
            "json",
            "--server",
            &w.base,
        ])
        .env("WARDEN_TOKEN", &w.admin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["explanation"]["would"], "pending_approval");
    assert_eq!(e["explanation"]["rule"], "autonomy:default:L2");
    // For another principal, with the rule of a hidden tool (operators only).
    let out = std::process::Command::new(WARDEN)
        .args([
            "explain",
            "--tool",
            "alpha__echo",
            "--user",
            "alice",
            "-o",
            "json",
            "--server",
            &w.base,
        ])
        .env("WARDEN_TOKEN", &w.admin)
        .output()
        .unwrap();
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["explanation"]["visible"], false);
    assert_eq!(e["explanation"]["code"], "UNKNOWN_TOOL");
    assert_eq!(e["explanation"]["rule"], "scope:project-not-granted:alpha");
    // The built-in explain answers for the caller's own scope.
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    let r = call(
        &client,
        "warden__explain",
        json!({"tool": "alpha__echo", "arguments": {"text": "x"}}),
    )
    .await;
    assert_eq!(
        r.structured_content.as_ref().unwrap()["data"]["would"],
        "executed"
    );
    // Nothing executed, nothing recorded but the explain call itself.
    let after = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            limit: Some(10_000),
            ..Default::default()
        })
        .await
        .unwrap();
    let new: Vec<_> = after[before..]
        .iter()
        .filter_map(|r| r.record.tool.clone())
        .collect();
    assert!(new.iter().all(|t| t == "warden__explain"), "{new:?}");
    let count = call(&client, "alpha__call_count", json!({})).await;
    assert_eq!(count.structured_content, Some(json!({"calls": 0})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whoami_reports_the_mode_and_the_effective_scope_with_reasons() {
    let (http_url, _ct) = http_fixture().await;
    let w = TestWarden::start(&two_projects(&http_url)).await;
    let token = w.token("alice", Some(&["alpha"]), None).await;
    let client = http_client(&w.mcp(), &token, Era::Stateless).await;
    let r = call(&client, "warden__whoami", json!({})).await;
    let data = &r.structured_content.as_ref().unwrap()["data"];
    assert_eq!(data["principal"], "user:alice");
    assert_eq!(data["mode"], "caller");
    assert_eq!(
        data["projects"],
        json!([{"project": "alpha", "why": "role `runner` (bound to user:alice) grants `run:projects:*`"}])
    );
    // Unknown arguments are refused by the derived schema.
    let r = call(&client, "warden__whoami", json!({"as": "admin"})).await;
    assert_eq!(decision(&r)["code"], "VALIDATION");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_readiness_report_calls_and_upstreams() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    call(&client, "nope", json!({})).await;
    let metrics = raw_http(
        w.addr,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(
        metrics.contains("warden_calls_total{decision=\"denied\",code=\"UNKNOWN_TOOL\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("warden_upstream_up{upstream=\"alpha\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("warden_call_duration_seconds"),
        "{metrics}"
    );
    let ready = raw_http(
        w.addr,
        "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    let body: Value = serde_json::from_str(ready.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(
        body["upstreams"]["alpha"],
        json!({"protocol": "2026-07-28", "state": "up"}),
        "{ready}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_on_a_tool_with_an_output_schema_match_its_advertised_schema() {
    // Clients check structuredContent against a declared output schema (the Python SDK on
    // every result that is not an error, and refuses one without structuredContent; the
    // TypeScript SDK on every result that has one): the advertised schema admits the tool's
    // output and Warden's decisions, and every result carries structuredContent.
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}\n---\nkind: ToolPolicy\nname: add\nproject: alpha\ntool: alpha__add\nclass: mutation\n---\nkind: Autonomy\nsubject: {{ user: admin }}\nlevel: 1\n",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let client = http_client(&w.mcp(), &w.admin, Era::Sessions).await;
    let tools = client.list_all_tools().await.unwrap();
    let schema = tools
        .iter()
        .find(|t| t.name == "alpha__add")
        .unwrap()
        .output_schema
        .clone()
        .unwrap();
    assert_eq!(schema["type"], "object");
    let schema = Value::Object((*schema).clone());
    let valid = |v: &Value| jsonschema::validator_for(&schema).unwrap().is_valid(v);
    // Parked (L1): not an error, its approval id in structuredContent.
    let r = call(&client, "alpha__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(r.is_error, Some(false));
    let parked = r.structured_content.clone().unwrap();
    assert_eq!(parked["status"], "pending_approval");
    assert!(parked["approvalId"].as_str().unwrap().starts_with("apr_"));
    assert!(valid(&parked), "{parked} against {schema}");
    // Denied (arguments the schema refuses): an error, the same way.
    let r = call(&client, "alpha__add", json!({"a": "one", "b": 2})).await;
    assert_eq!(r.is_error, Some(true));
    let denied = r.structured_content.clone().unwrap();
    assert_eq!(denied["code"], "VALIDATION");
    assert!(valid(&denied), "{denied} against {schema}");
    let text: Value = serde_json::from_str(&r.content[0].as_text().unwrap().text).unwrap();
    assert_eq!(text, denied);
    // The tool's real output still matches; something else does not.
    assert!(valid(&json!({"sum": 3})));
    assert!(!valid(&json!({"total": 3})));
    // An unknown tool answers with the contract as structuredContent.
    let r = call(&client, "alpha__nope", json!({})).await;
    assert_eq!(
        r.structured_content.as_ref().unwrap()["code"],
        "UNKNOWN_TOOL"
    );
    // Executed upstream results pass through, without the upstream hop's protocol metadata.
    let echo = call(&client, "alpha__echo", json!({"text": "x"})).await;
    let meta = echo.meta.as_ref().unwrap();
    assert!(
        meta.keys()
            .all(|k| !k.starts_with("io.modelcontextprotocol/")),
        "{meta:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_prompts_and_resources_are_federated_read_only_under_project_authority() {
    let (http_url, _ct) = http_fixture().await;
    let w = TestWarden::start(&two_projects(&http_url)).await;
    let bound = w.token("alice", Some(&["alpha"]), None).await;
    for era in [Era::Stateless, Era::Sessions] {
        let client = http_client(&w.mcp(), &bound, era).await;
        let prompts: Vec<String> = client
            .list_all_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(
            prompts,
            ["alpha__summarize", "alpha__brief", "alpha__slow"],
            "{era:?}"
        );
        let p = client
            .get_prompt(rmcp::model::GetPromptRequestParams::new("alpha__summarize"))
            .await
            .unwrap();
        assert_eq!(p.messages.len(), 1);
        // beta's prompt answers exactly like one that does not exist.
        let hidden = client
            .get_prompt(rmcp::model::GetPromptRequestParams::new("beta__summarize"))
            .await
            .unwrap_err();
        let missing = client
            .get_prompt(rmcp::model::GetPromptRequestParams::new("beta__summarise"))
            .await
            .unwrap_err();
        assert_eq!(
            hidden.to_string().replace("beta__summarize", "X"),
            missing.to_string().replace("beta__summarise", "X")
        );
        let resources: Vec<String> = client
            .list_all_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri)
            .collect();
        assert_eq!(resources, ["notes://all", "notes://readme"], "{era:?}");
        let read = client
            .read_resource(rmcp::model::ReadResourceRequestParams::new("notes://all"))
            .await
            .unwrap();
        assert_eq!(read.contents.len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warden_stdio_bridges_to_a_remote_server_and_fails_closed_when_it_is_gone() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    // on: everything through the remote.
    let bridge = stdio_client(&w.store_args(), &w.admin, &["--remote", &w.mcp()]).await;
    assert!(
        tool_names(&bridge)
            .await
            .contains(&"alpha__echo".to_owned())
    );
    let r = call(&bridge, "alpha__echo", json!({"text": "via bridge"})).await;
    assert_eq!(decision(&r)["status"], "executed");
    let run = decision(&r)["runId"].as_str().unwrap().to_owned();
    let recorded = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            run_id: Some(run),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(!recorded.is_empty(), "the remote recorded the bridged call");
    // A remote that cannot be reached: `on` refuses, `auto` executes directly and says so.
    let dead = "http://127.0.0.1:9/mcp";
    let on = stdio_client(&w.store_args(), &w.admin, &["--remote", dead]).await;
    assert!(tool_names(&on).await.is_empty());
    let r = call(&on, "alpha__echo", json!({"text": "x"})).await;
    assert_eq!(decision(&r)["code"], "UNAVAILABLE");
    assert_eq!(r.is_error, Some(true));
    let auto = stdio_client(
        &w.store_args(),
        &w.admin,
        &["--remote", dead, "--governance", "auto"],
    )
    .await;
    let r = call(&auto, "alpha__echo", json!({"text": "x"})).await;
    assert_eq!(decision(&r)["status"], "executed");
    let recorded = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            kind: Some("decision".into()),
            newest_first: true,
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        recorded[0].record.payload.contains("governance:off"),
        "{:?}",
        recorded[0]
    );
}

/// An HTTP upstream that went away is named in plain words — the call's `UNAVAILABLE` and the
/// upstream's state in `/readyz` say it cannot be connected to, not which Rust types failed —
/// whichever exit its calls take (rmcp's client for a 2025-11-25 upstream, the direct path for
/// a 2026-07-28 one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_upstream_that_went_away_is_named_in_plain_words() {
    for only_2025 in [true, false] {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let addr = warden_testkit::notes::spawn_http(
            warden_testkit::notes::NotesServer::new(None).only_2025(only_2025),
            "127.0.0.1:0".parse().unwrap(),
            shutdown.clone(),
        )
        .await
        .unwrap();
        let w = TestWarden::start(&format!(
            "kind: Project\nname: alpha\n---\nkind: Upstream\nname: web\nproject: alpha\n\
             http: {{ url: \"http://{addr}/mcp\" }}\n"
        ))
        .await;
        let client = http_client(&w.mcp(), &w.admin, Era::Sessions).await;
        let r = call(&client, "web__echo", json!({"text": "a"})).await;
        assert_eq!(decision(&r)["status"], "executed", "{r:?}");
        shutdown.cancel();
        // Gone: its port refuses connections.
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            assert!(Instant::now() < deadline, "the upstream did not stop");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let plain = |why: &str| {
            why.contains("cannot connect")
                && why.contains("Connection refused")
                && !why.contains("rmcp::")
        };
        let r = call(&client, "web__echo", json!({"text": "b"})).await;
        let message = decision(&r)["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        // The call names the cause (refused, or a pooled connection closed under it), never
        // the transport's types.
        assert!(
            message.starts_with("upstream `web` is unavailable: ")
                && !message.contains("rmcp::")
                && !message.ends_with("Client error"),
            "2025-only {only_2025}: {r:?}"
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready: Value = reqwest::get(format!("{}/readyz", w.base))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let reason = ready.to_string();
            if reason.contains("Connection refused") {
                assert!(plain(&reason), "2025-only {only_2025}: {ready}");
                break;
            }
            assert!(Instant::now() < deadline, "2025-only {only_2025}: {ready}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Two upstreams of one project that offer the same resource URIs: `resources/list` and
/// `resources/templates/list` show each once — the first upstream's by name, which is the one
/// `resources/read` asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_two_upstreams_offer_is_listed_once_as_the_one_read() {
    let policy = "---\nkind: ToolPolicy\nproject: alpha\ntool: beta__add_note\nclass: mutation\n";
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}---\n{}{policy}",
        stdio_upstream("alpha", "alpha", ""),
        stdio_upstream("beta", "alpha", "")
    ))
    .await;
    let client = http_client(&w.mcp(), &w.admin, Era::Sessions).await;
    let uris: Vec<String> = client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    let unique: std::collections::BTreeSet<&String> = uris.iter().collect();
    assert!(uris.contains(&"notes://all".to_owned()), "{uris:?}");
    assert_eq!(unique.len(), uris.len(), "{uris:?}");
    let templates: Vec<String> = client
        .list_all_resource_templates()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.uri_template.clone())
        .collect();
    let unique: std::collections::BTreeSet<&String> = templates.iter().collect();
    assert!(!templates.is_empty());
    assert_eq!(unique.len(), templates.len(), "{templates:?}");
    // A note added to `beta` is not in what a read of `notes://all` answers: `alpha`'s.
    let r = call(&client, "beta__add_note", json!({"text": "in beta"})).await;
    assert_eq!(decision(&r)["status"], "executed", "{r:?}");
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new("notes://all"))
        .await
        .unwrap();
    assert!(!format!("{read:?}").contains("in beta"), "{read:?}");
}

/// An upstream pinned to an era it does not speak is down with a reason that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_pinned_to_an_era_it_does_not_speak_says_so() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream_with(
            "alpha",
            "alpha",
            &["--only-2025"],
            "protocol: \"2026-07-28\"\n"
        )
    ))
    .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = reqwest::get(format!("{}/readyz", w.base))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if ready.contains("-32601") {
            assert!(
                ready.contains("the upstream does not speak 2026-07-28, which its `protocol` pins"),
                "{ready}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{ready}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A token the remote refuses is the user's to fix, not an outage: `warden stdio --remote`
/// says so and exits 2 — with governance `auto` too, whose fallback is for a remote that
/// cannot be reached — as the embedded `warden stdio` does, which refuses a token nobody
/// issued before it starts any upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_ends_warden_stdio_at_once_naming_it() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let mcp = w.mcp();
    let remote = ["stdio", "--remote", mcp.as_str()];
    let auto = ["stdio", "--remote", mcp.as_str(), "--governance", "auto"];
    let store_args = w.store_args();
    let embedded: Vec<&str> = std::iter::once("stdio")
        .chain(store_args.iter().map(String::as_str))
        .collect();
    let (remote_said, embedded_said) = (
        "error: WARDEN_TOKEN: ".to_owned()
            + &mcp
            + " refused it: the server refused the credential (HTTP 401: invalid token)\n",
        "error: WARDEN_TOKEN: invalid token\n".to_owned(),
    );
    for (args, said) in [
        (&remote[..], &remote_said),
        (&auto[..], &remote_said),
        (&embedded[..], &embedded_said),
    ] {
        let out = tokio::process::Command::new(WARDEN)
            .args(args)
            .env("WARDEN_TOKEN", "wdn_not_issued")
            .env("WARDEN_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        // Its own line (rmcp's client may log its end around it).
        assert!(
            stderr.lines().any(|l| l == said.trim_end()),
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr.contains("upstream connected"),
            "{args:?} started an upstream: {stderr}"
        );
    }
}

/// A token revoked while `warden stdio --remote --governance auto` runs: its calls are refused
/// naming the refusal, and never fall back to direct execution — a refused token is not an
/// outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_under_the_bridge_gets_no_fallback() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let token = w.token("admin", None, None).await;
    let bridge = stdio_client(
        &w.store_args(),
        &token,
        &["--remote", &w.mcp(), "--governance", "auto"],
    )
    .await;
    let r = call(&bridge, "alpha__echo", json!({"text": "a"})).await;
    assert_eq!(decision(&r)["status"], "executed", "{r:?}");
    w.revoke_with_cli(&token).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = call(&bridge, "alpha__echo", json!({"text": "b"})).await;
        let d = decision(&r);
        if d["code"] == "UNAVAILABLE" {
            let message = d["message"].as_str().unwrap();
            assert!(message.contains("refused the token"), "{r:?}");
            assert!(message.contains("HTTP 401"), "{r:?}");
            break;
        }
        // Executed: by the remote, until it saw the revocation — or by a fallback.
        assert_eq!(d["status"], "executed", "{r:?}");
        assert!(
            Instant::now() < deadline,
            "the revoked token was still served (or fell back)"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `warden stdio --remote` advertises exactly what it serves — tools, prompts, resources and
/// resource templates, each list announced when it changes, no subscriptions, completions or
/// logging — and passes the remote's list changes on to its client, in the client's era.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_advertises_what_it_serves_and_passes_on_list_changes() {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
    let policy = "---\nkind: ToolPolicy\nname: publish\nproject: alpha\ntool: alpha__publish\nclass: mutation\n";
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", policy)
    ))
    .await;
    let bridge = |lifecycle: ClientLifecycleMode| {
        let mut cmd = tokio::process::Command::new(WARDEN);
        cmd.args(["stdio", "--remote", &w.mcp()])
            .env("WARDEN_TOKEN", &w.admin)
            .env("WARDEN_LOG", "warn");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
        async move {
            let client = ListChanges(tx)
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .unwrap();
            (client, rx)
        }
    };
    let (old, mut old_heard) = bridge(ClientLifecycleMode::Initialize).await;
    let (modern, _) = bridge(ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    })
    .await;
    for info in [old.peer_info().unwrap(), modern.peer_info().unwrap()] {
        let c = &info.capabilities;
        assert_eq!(c.tools.as_ref().unwrap().list_changed, Some(true), "{c:?}");
        assert_eq!(
            c.prompts.as_ref().unwrap().list_changed,
            Some(true),
            "{c:?}"
        );
        let resources = c.resources.as_ref().unwrap();
        assert_eq!(resources.list_changed, Some(true), "{c:?}");
        assert_eq!(resources.subscribe, None, "{c:?}");
        assert!(c.completions.is_none() && c.logging.is_none(), "{c:?}");
    }
    let mut listen = listen_to_every_list(&modern).await;

    call(&old, "alpha__publish", json!({"name": "bridged"})).await;
    let known = ["prompts", "resources"];
    hear_all(&mut old_heard, &known, "the 2025-11-25 client").await;
    listen_for_all(&mut listen, &known, "the 2026-07-28 client").await;
    // A tool that appears after its upstream's first pinning is held until accepted (GOV-9).
    w.accept_tool("alpha__published_bridged").await;
    hear_all(&mut old_heard, &["tools"], "the 2025-11-25 client").await;
    listen_for_all(&mut listen, &["tools"], "the 2026-07-28 client").await;
    let templates = modern.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "notes://published/bridged/{part}"),
        "{templates:?}"
    );
}

/// A stateless 2026-07-28 request over a raw connection: its body with a `Content-Length`
/// (answered inline) or chunked (answered by rmcp). Returns the status line and the body.
async fn stateless(
    w: &TestWarden,
    method: &str,
    name: Option<&str>,
    params: &str,
    chunked: bool,
) -> (String, Value) {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}"#;
    let sep = if params.is_empty() { "" } else { "," };
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{{params}{sep}{meta}}}}}"#
    );
    let framing = if chunked {
        format!(
            "Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        )
    } else {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    };
    let name = name.map_or(String::new(), |n| format!("Mcp-Name: {n}\r\n"));
    let response = raw_http(
        w.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}Connection: close\r\n{framing}",
            w.admin
        ),
    )
    .await;
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_calls_answered_inline_match_rmcps_answers_and_still_cancel() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    // The same requests, inline and through rmcp, get the same answers.
    let inline = stateless(&w, "tools/list", None, "", false).await;
    let rmcp = stateless(&w, "tools/list", None, "", true).await;
    assert_eq!(inline.0, "HTTP/1.1 200 OK");
    assert_eq!(inline, rmcp);
    assert!(
        inline.1["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "alpha__add"),
        "{inline:?}"
    );
    let add = r#""name":"alpha__add","arguments":{"a":2,"b":3}"#;
    let inline = stateless(&w, "tools/call", Some("alpha__add"), add, false).await;
    let rmcp = stateless(&w, "tools/call", Some("alpha__add"), add, true).await;
    assert_eq!(inline.0, "HTTP/1.1 200 OK");
    assert_eq!(
        inline.1["result"]["structuredContent"],
        json!({"sum": 5.0}),
        "{inline:?}"
    );
    assert_eq!(
        inline.1["result"]["structuredContent"],
        rmcp.1["result"]["structuredContent"]
    );
    assert_eq!(
        inline.1["result"]["resultType"],
        rmcp.1["result"]["resultType"]
    );
    let unknown = r#""name":"nope","arguments":{}"#;
    let inline = stateless(&w, "tools/call", Some("nope"), unknown, false).await;
    let rmcp = stateless(&w, "tools/call", Some("nope"), unknown, true).await;
    assert_eq!(inline.0, rmcp.0);
    assert_eq!(inline.1["result"]["isError"], json!(true), "{inline:?}");
    let without_run = |answer: &Value| {
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        let mut denial: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        denial.as_object_mut().map(|d| d.remove("runId"));
        denial
    };
    assert_eq!(without_run(&inline.1)["code"], json!("UNKNOWN_TOOL"));
    assert_eq!(without_run(&inline.1), without_run(&rmcp.1));
    // A header that contradicts the body is rmcp's -32020 answer, whatever the framing.
    let mismatch = stateless(&w, "tools/call", Some("alpha__echo"), add, false).await;
    assert_eq!(mismatch.0, "HTTP/1.1 400 Bad Request", "{mismatch:?}");
    assert_eq!(mismatch.1["error"]["code"], json!(-32020), "{mismatch:?}");
    let metrics = raw_http(
        w.addr,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(
        metrics.contains("warden_mcp_requests_total{path=\"stateless\"} 3"),
        "{metrics}"
    );

    // A client that goes away mid-call cancels it: the upstream hears of it.
    let addr = w.addr;
    let admin = w.admin.clone();
    let slow = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"alpha__slow","arguments":{{"ms":20000}},{meta}}}}}"#
        );
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {admin}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: alpha__slow\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        drop(stream);
    });
    slow.await.unwrap();
    let mut cancelled = Value::Null;
    for _ in 0..100 {
        let (_, answer) = stateless(
            &w,
            "tools/call",
            Some("alpha__cancellations"),
            r#""name":"alpha__cancellations","arguments":{}"#,
            false,
        )
        .await;
        cancelled = answer["result"]["content"][0]["text"].clone();
        if cancelled == json!("{\"cancellations\":1}") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cancelled, json!("{\"cancellations\":1}"));
}

/// How many clients hear list changes, once it settles at `want` (within 5 s).
async fn followers_settle_at(w: &TestWarden, want: usize, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while w.gateway.catalog_followers() != want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: {} clients hear list changes, not {want}",
            w.gateway.catalog_followers()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A 2025-11-25 session hears list changes while it lasts, and no longer: once it ends (its
/// client deletes it), nothing of it is left following the catalog — a server that sees many
/// short sessions and no change of its lists keeps none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_no_longer_follows_list_changes() {
    let w = TestWarden::start("").await;
    let before = w.gateway.catalog_followers();
    let clients = [
        http_client(&w.mcp(), &w.admin, Era::Sessions).await,
        http_client(&w.mcp(), &w.admin, Era::Sessions).await,
    ];
    followers_settle_at(&w, before + 2, "two open sessions").await;
    for client in clients {
        client.cancel().await.unwrap();
    }
    followers_settle_at(&w, before, "both sessions ended").await;
}
