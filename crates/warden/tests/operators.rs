//! What an operator sees (issue 31, "Operators' surfaces"): the CLI's listings and messages,
//! its behaviour on a closed stdout, tokens usable at once, refusals without a run, metrics,
//! the log line of a governed call, traces, and a port already in use.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

#[path = "operators/audit_logs.rs"]
mod audit_logs;
mod common;
#[path = "operators/traces.rs"]
mod traces;

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use warden_core::name::Name;
use warden_core::principal::{CredentialKind, Principal};
use warden_store::TokenRequest;

/// The CLI with none of the caller's `WARDEN_*` or OpenTelemetry settings.
fn warden(args: &[&str]) -> Command {
    let mut cmd = Command::new(WARDEN);
    cmd.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("WARDEN_") || k.starts_with("OTEL_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

fn run(args: &[&str]) -> Output {
    warden(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `dir` as the value of `--data-dir`.
fn dir_arg(dir: &Path) -> String {
    dir.display().to_string()
}

/// A store in `dir` with `records` synthetic audit records.
fn filled(dir: &Path, records: u64) {
    let d = dir_arg(dir);
    let out = run(&[
        "bench",
        "fill-audit",
        "--records",
        &records.to_string(),
        "--data-dir",
        &d,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn seqs(json_lines: &str) -> Vec<i64> {
    json_lines
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_i64()
                .unwrap()
        })
        .collect()
}

#[test]
fn audit_lists_the_newest_records_first_and_says_when_more_match() {
    let tmp = tempfile::tempdir().unwrap();
    filled(tmp.path(), 5_300);
    let d = dir_arg(tmp.path());
    let out = run(&["audit", "-o", "json", "--data-dir", &d]);
    assert!(out.status.success());
    let listed = seqs(&text(&out.stdout));
    assert_eq!(listed, (5_201..=5_300).rev().collect::<Vec<_>>());
    assert_eq!(
        text(&out.stderr),
        "showing the newest 100 of 5300; use --limit or filters\n"
    );
    // Across pages of the store's reads, still newest first and without a gap.
    let out = run(&["audit", "-o", "json", "--limit", "5250", "--data-dir", &d]);
    assert_eq!(
        seqs(&text(&out.stdout)),
        (51..=5_300).rev().collect::<Vec<_>>()
    );
    assert_eq!(
        text(&out.stderr),
        "showing the newest 5250 of 5300; use --limit or filters\n"
    );
    // Everything fits: no notice.
    let out = run(&["audit", "-o", "json", "--limit", "6000", "--data-dir", &d]);
    assert_eq!(seqs(&text(&out.stdout)).len(), 5_300);
    assert_eq!(text(&out.stderr), "");
    // Filters count too, and the oldest come first when asked.
    let out = run(&[
        "audit",
        "-o",
        "json",
        "--kind",
        "run",
        "--oldest-first",
        "--limit",
        "2",
        "--data-dir",
        &d,
    ]);
    let runs = text(&out.stdout);
    assert_eq!(seqs(&runs), vec![1, 32]);
    let matching = 5_300_usize.div_ceil(31);
    assert_eq!(
        text(&out.stderr),
        format!("showing the oldest 2 of {matching}; use --limit or filters\n")
    );
    // The table too: its first row is the newest record.
    let out = run(&["audit", "--limit", "3", "--data-dir", &d]);
    let table = text(&out.stdout);
    let first: Vec<&str> = table.lines().take(2).collect();
    assert!(first[0].starts_with("SEQ "), "{table}");
    assert!(first[1].starts_with("5300 "), "{table}");
    assert_eq!(table.lines().count(), 4);
}

/// Spawns `args`, reads one line of its stdout and closes it; the exit status and stderr.
fn close_after_one_line(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = warden(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(!line.is_empty());
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap(), stderr)
}

#[test]
fn a_closed_stdout_ends_the_command_quietly_with_status_0() {
    let tmp = tempfile::tempdir().unwrap();
    // Far more than a pipe holds, so the command is still writing when the reader goes.
    filled(tmp.path(), 5_000);
    let d = dir_arg(tmp.path());
    // Buffered writes (JSON Lines) and the print macros (YAML, tables) alike.
    for format in ["json", "yaml", "table"] {
        let (status, stderr) =
            close_after_one_line(&["audit", "-o", format, "--limit", "5000", "--data-dir", &d]);
        assert_eq!(status.code(), Some(0), "-o {format}: {stderr}");
        assert_eq!(stderr, "", "-o {format}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_that_records_nothing_carries_no_run_id() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}---\nkind: KillSwitch\nscope: {{ tool: alpha__add }}\nreason: drill\n",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let client = http_client(&w.mcp(), &w.admin, Era::Sessions).await;
    // GOV-2 step 1: the kill switch writes nothing, so names no run.
    let frozen = call(&client, "alpha__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(
        decision(&frozen),
        json!({"status": "denied", "code": "KILL_SWITCH", "message": decision(&frozen)["message"]})
    );
    assert_eq!(
        frozen.structured_content.as_ref().unwrap().get("runId"),
        None
    );
    // Step 2: invalid input writes nothing either.
    let invalid = call(&client, "warden__whoami", json!({"as": "admin"})).await;
    assert_eq!(decision(&invalid)["code"], "VALIDATION");
    assert_eq!(decision(&invalid).get("runId"), None);
    // A recorded call names its run, and `describe run` finds it.
    let executed = call(&client, "alpha__echo", json!({"text": "hi"})).await;
    let run_id = decision(&executed)["runId"].as_str().unwrap().to_owned();
    w.settle().await;
    let described = cli(&["describe", "run", &run_id, "-o", "json"], &w.store_args());
    assert!(described.status.success(), "{}", text(&described.stderr));
    let described: Value = serde_json::from_slice(&described.stdout).unwrap();
    assert_eq!(described["id"], json!(run_id));
    assert_eq!(described["calls"][0]["tool"], "alpha__echo");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_another_process_created_works_at_once() {
    // A server whose poller would take an hour to see the new token.
    let store = warden_testkit::sqlite_store().await;
    let admin = store.store.bootstrap(now()).await.unwrap().unwrap().secret;
    let gateway = warden_mcp::Gateway::start(
        Arc::new(
            warden_store::Store::open_serving(&store.location)
                .await
                .unwrap(),
        ),
        warden_mcp::GatewayOptions {
            poll_interval: Duration::from_secs(3_600),
            ..warden_mcp::GatewayOptions::default()
        },
    )
    .await;
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let state = Arc::new(warden_server::AppState::new(
        gateway.clone(),
        warden_server::HostPolicy::for_listener(addr, &[], &[]).unwrap(),
    ));
    let bound = warden_server::Bound::bind(addr, state).await.unwrap();
    let addr = bound.local_addr().unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::spawn(bound.serve_on_threads(2, shutdown.clone()));
    // Both doors of authentication: a stateless 2026-07-28 request answered inline, and a
    // 2025-11-25 `initialize` through the router.
    let mcp = format!("http://{addr}/mcp");
    let answer = |token: String, stateless: bool| {
        let mcp = mcp.clone();
        async move {
            let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;
            let (version, method, body) = if stateless {
                (
                    "2026-07-28",
                    "tools/list",
                    format!(
                        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{meta}}}}}"#
                    ),
                )
            } else {
                (
                    "2025-11-25",
                    "initialize",
                    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.to_owned(),
                )
            };
            reqwest::Client::new()
                .post(&mcp)
                .bearer_auth(token)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", version)
                .header("mcp-method", method)
                .body(body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(answer(admin.clone(), true).await, 200);
    // Created through the store, as `warden token create --data-dir` does, and used at once.
    let create = || async {
        store
            .store
            .create_token(
                TokenRequest {
                    principal: Principal::User {
                        name: Name::new("admin").unwrap(),
                    },
                    projects: None,
                    scopes: None,
                    ttl: None,
                    description: None,
                    kind: CredentialKind::ApiKey,
                },
                "test",
                now(),
            )
            .await
            .unwrap()
            .secret
    };
    assert_eq!(answer(create().await, true).await, 200);
    assert_eq!(answer(create().await, false).await, 200);
    // A token that exists nowhere is refused as before, at both doors.
    let nobody = format!("wdn_{}", "0".repeat(64));
    assert_eq!(answer(nobody.clone(), true).await, 401);
    assert_eq!(answer(nobody, false).await, 401);
    shutdown.cancel();
    gateway.shutdown();
}

/// `2026-11-29T10:00:00Z`.
fn is_rfc3339_seconds(v: &Value) -> bool {
    let b = v.as_str().unwrap_or_default().as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

#[test]
fn token_create_and_list_print_one_shape_and_the_id_beside_the_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dir_arg(tmp.path());
    std::fs::write(tmp.path().join("u.yaml"), "kind: User\nname: alice\n").unwrap();
    let f = tmp.path().join("u.yaml").display().to_string();
    assert!(run(&["apply", "-f", &f, "--data-dir", &d]).status.success());
    // The secret alone on stdout; its id on stderr.
    let out = run(&["token", "create", "--user", "alice", "--data-dir", &d]);
    assert!(out.status.success());
    let secret = text(&out.stdout);
    assert!(
        secret.starts_with("wdn_") && secret.ends_with('\n'),
        "{secret}"
    );
    assert_eq!(secret.lines().count(), 1);
    let stderr = text(&out.stderr);
    let id = stderr
        .strip_prefix("created ")
        .and_then(|s| s.strip_suffix(" (shown once below)\n"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(id.starts_with("tok_"), "{id}");
    // JSON: the same fields, camelCase, RFC 3339 times; `secret` only when created.
    let out = run(&[
        "token",
        "create",
        "--user",
        "alice",
        "--ttl",
        "1d",
        "-o",
        "json",
        "--data-dir",
        &d,
    ]);
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = run(&["token", "list", "-o", "json", "--data-dir", &d]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    let same = listed.iter().find(|t| t["id"] == created["id"]).unwrap();
    let mut keys: Vec<&String> = created.as_object().unwrap().keys().collect();
    keys.retain(|k| *k != "secret");
    assert_eq!(keys, same.as_object().unwrap().keys().collect::<Vec<_>>());
    assert_eq!(
        keys,
        [
            "createdAt",
            "description",
            "expiresAt",
            "id",
            "kind",
            "principal",
            "projects",
            "revokedAt",
            "scopes",
            "status"
        ]
    );
    assert!(created["secret"].as_str().unwrap().starts_with("wdn_"));
    for t in [&created, same] {
        assert!(is_rfc3339_seconds(&t["createdAt"]), "{t}");
        assert!(is_rfc3339_seconds(&t["expiresAt"]), "{t}");
        assert_eq!(t["principal"], "user:alice");
        assert_eq!(t["status"], "active");
    }
    assert!(listed.iter().any(|t| t["id"] == json!(id)));
}

#[test]
fn roles_list_the_built_in_admin_and_a_refused_delete_names_what_references_it() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dir_arg(tmp.path());
    let config = "kind: Project\nname: demo\n---\nkind: Upstream\nname: notes\nproject: demo\nstdio: { command: /bin/true }\n---\nkind: Role\nname: reader\npermissions: [\"run:projects:demo\"]\n";
    std::fs::write(tmp.path().join("c.yaml"), config).unwrap();
    let f = tmp.path().join("c.yaml").display().to_string();
    assert!(run(&["apply", "-f", &f, "--data-dir", &d]).status.success());
    let out = run(&["get", "roles", "--data-dir", &d]);
    assert_eq!(
        text(&out.stdout),
        "NAME    PERMISSIONS        DESCRIPTION\n\
         admin   *                  built-in: every capability\n\
         reader  run:projects:demo  -\n"
    );
    let out = run(&["delete", "project", "demo", "--data-dir", &d]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: project `demo` is still referenced by upstream `notes` (field `project`); delete that first\n"
    );
    let out = run(&["delete", "role", "admin", "--data-dir", &d]);
    assert_eq!(
        text(&out.stderr),
        "error: role `admin` is built in and cannot be deleted\n"
    );
}

#[test]
fn the_cli_names_its_store_when_a_server_may_be_serving_another() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dir_arg(tmp.path());
    assert!(run(&["migrate", "--data-dir", &d]).status.success());
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.local_addr().unwrap());
    // The server the CLI would ask is the context's (WARDEN_SERVER beside WARDEN_DATA_DIR is
    // a usage error of its own, below).
    let config = tempfile::tempdir().unwrap();
    let set = warden(&["context", "set", "--server", &url])
        .env("XDG_CONFIG_HOME", config.path())
        .output()
        .unwrap();
    assert!(set.status.success(), "{}", text(&set.stderr));
    let with_env = |_server: &str| {
        warden(&["get", "roles"])
            .env("WARDEN_DATA_DIR", &d)
            .env("XDG_CONFIG_HOME", config.path())
            .output()
            .unwrap()
    };
    // From the environment, with a server listening that serves another store: said.
    let out = with_env(&url);
    assert_eq!(
        text(&out.stderr),
        format!(
            "using the store at {d} (from WARDEN_DATA_DIR), which the server at {url} does not serve: it will not see these changes (give the command the server's store with --data-dir, or --server {url} to work through that server)\n"
        )
    );
    // The server serving this very store (as `warden serve` notes in the data directory):
    // nothing to be confused about.
    let serving = tmp.path().join("serving");
    std::fs::write(&serving, format!("{}\n", server.local_addr().unwrap())).unwrap();
    assert_eq!(text(&with_env(&url).stderr), "");
    std::fs::remove_file(&serving).unwrap();
    // Named on the command line: not ambiguous.
    let out = warden(&["get", "roles", "--data-dir", &d])
        .env("WARDEN_SERVER", &url)
        .output()
        .unwrap();
    assert_eq!(text(&out.stderr), "");
    // Both a server and a store in the environment: which one is meant is not guessed.
    let out = warden(&["get", "roles"])
        .env("WARDEN_DATA_DIR", &d)
        .env("WARDEN_SERVER", &url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with("error: WARDEN_SERVER and WARDEN_DATA_DIR are both set"),
        "{}",
        text(&out.stderr)
    );
    // No server there: nothing to be confused with.
    drop(server);
    let out = with_env(&url);
    assert_eq!(text(&out.stderr), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_objects_with_references_and_runs_show_their_status() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}---\nkind: ToolPolicy\nproject: alpha\ntool: alpha__add_note\nclass: mutation\nrisk: dangerous\n",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    let parked = call(&client, "alpha__add_note", json!({"text": "x"})).await;
    assert_eq!(decision(&parked)["status"], "pending_approval");
    let id = decision(&parked)["approvalId"].as_str().unwrap().to_owned();
    let executed = call(&client, "alpha__echo", json!({"text": "hi"})).await;
    let denied = call(&client, "nope", json!({})).await;
    let remote = |args: &[&str]| {
        warden(args)
            .args(["--server", &w.base])
            .env("WARDEN_TOKEN", &w.admin)
            .output()
            .unwrap()
    };
    let one = remote(&["approvals", "get", &id, "-o", "json"]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    let one: Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!(one["id"], json!(id));
    assert_eq!(one["requestedBy"]["kind"], "principal", "{one}");
    let list = remote(&["approvals", "list", "-o", "json"]);
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list[0]["requestedBy"], one["requestedBy"]);
    // Each stateless call is a run of its own; each shows where it stands.
    w.settle().await;
    let runs = cli(&["get", "runs", "-o", "json"], &w.store_args());
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let status = |result: &rmcp::model::CallToolResult| {
        let run = decision(result)["runId"].clone();
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == run)
            .map(|r| r["status"].clone())
    };
    assert_eq!(status(&parked), Some(json!("pending_approval")));
    assert_eq!(status(&executed), Some(json!("executed")));
    assert_eq!(status(&denied), Some(json!("denied")));
    let table = text(&cli(&["get", "runs"], &w.store_args()).stdout);
    let header = table.lines().next().unwrap();
    let at = header.find("STATUS").unwrap();
    for row in table.lines().skip(1) {
        assert_ne!(row.get(at..).unwrap_or("-").trim(), "-", "{table}");
    }
}

async fn scrape(addr: SocketAddr) -> String {
    reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_described_bucketed_and_labelled_with_values() {
    // An upstream of its own: the recorder is the test binary's, shared by its tests.
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}---\nkind: ToolPolicy\nproject: alpha\ntool: metered__add_note\nclass: mutation\nrisk: dangerous\n---\nkind: KillSwitch\nscope: {{ tool: metered__add }}\nreason: drill\n",
        stdio_upstream("metered", "alpha", "")
    ))
    .await;
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    call(&client, "metered__echo", json!({"text": "hi"})).await;
    call(&client, "metered__echo", json!({"text": "again"})).await;
    call(&client, "metered__add_note", json!({"text": "parked"})).await;
    call(&client, "nope", json!({})).await;
    let metrics = scrape(w.addr).await;
    for name in [
        "warden_calls_total",
        "warden_call_duration_seconds",
        "warden_tool_call_duration_seconds",
        "warden_upstream_call_duration_seconds",
        "warden_store_up",
        "warden_upstream_up",
        "warden_upstream_tools",
        "warden_approvals_pending",
        "warden_kill_switches",
        "warden_mcp_requests_total",
    ] {
        assert!(
            metrics.contains(&format!("# HELP {name} ")),
            "{name}: {metrics}"
        );
    }
    for wanted in [
        "warden_calls_total{decision=\"executed\"} ",
        "warden_calls_total{decision=\"pending_approval\"} ",
        "warden_calls_total{decision=\"denied\",code=\"UNKNOWN_TOOL\"} ",
        "warden_tool_call_duration_seconds_count{tool=\"metered__echo\",upstream=\"metered\"} 2",
        "warden_tool_call_duration_seconds_bucket{tool=\"metered__echo\",upstream=\"metered\",le=\"+Inf\"} 2",
        "warden_upstream_call_duration_seconds_count{upstream=\"metered\"} 2",
        "warden_call_duration_seconds_bucket{decision=\"executed\",le=\"+Inf\"} ",
        "warden_approvals_pending{status=\"pending\"} 1",
        "warden_approvals_pending{status=\"staged\"} 0",
        "warden_kill_switches 1",
        "warden_store_up 1",
        "warden_mcp_requests_total{path=\"stateless\"}",
    ] {
        assert!(metrics.contains(wanted), "{wanted}: {metrics}");
    }
    // No empty label, no implementation detail, no quantiles that read 0.
    assert!(!metrics.contains("=\"\""), "{metrics}");
    assert!(!metrics.contains("served="), "{metrics}");
    assert!(!metrics.contains("quantile="), "{metrics}");
    // A made-up tool name makes no series of its own.
    assert!(!metrics.contains("tool=\"nope\""), "{metrics}");
}

/// An OTLP/HTTP collector that counts the requests to `/v1/traces`.
async fn collector() -> (SocketAddr, Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let posts = Arc::new(AtomicUsize::new(0));
    let counted = posts.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0_u8; 8192];
                loop {
                    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buffer.len() < end + 4 + length {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    }
                    if head.starts_with("post /v1/traces ") && length > 0 {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    buffer.drain(..end + 4 + length);
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if socket.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, posts)
}

/// `warden serve` as a child on a fresh data directory (the demo), logging JSON to `log`.
struct Served {
    child: std::process::Child,
    mcp: String,
    admin: String,
}

fn serve(data_dir: &Path, log: &Path, extra: &[&str]) -> Served {
    serve_with(data_dir, log, extra, &[])
}

/// [`serve`] with these environment variables.
fn serve_with(data_dir: &Path, log: &Path, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let d = dir_arg(data_dir);
    let mut child = warden(&["serve", "--listen", "127.0.0.1:0", "--data-dir", &d])
        .args(["--log-format", "json", "--threads", "2"])
        .args(extra)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut mcp, mut admin) = (String::new(), String::new());
    for _ in 0..3 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        if let Some(url) = line.trim().strip_prefix("mcp: ") {
            mcp = url.to_owned();
        } else if let Some(token) = line.trim().strip_prefix("admin token: ") {
            admin = token.to_owned();
        }
    }
    assert!(!mcp.is_empty() && !admin.is_empty());
    Served { child, mcp, admin }
}

impl Served {
    /// SIGTERM, as a service manager stops it; waits for the end.
    fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "warden serve did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Lines of a JSON log that are governed calls.
fn call_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["fields"]["message"] == "tools/call")
        .map(|l| l["fields"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_shows_its_own_tools_logs_each_call_and_exports_traces() {
    let (collector, posts) = collector().await;
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("serve.log");
    let endpoint = format!("http://{collector}");
    let served = serve(
        &tmp.path().join("data"),
        &log,
        &["--otlp-endpoint", &endpoint],
    );
    let client = http_client(&served.mcp, &served.admin, Era::Stateless).await;
    // What a new user sees: Warden's own tools and the demo's notebook, nothing for tests.
    assert_eq!(
        tool_names(&client).await,
        [
            "notes__add_note",
            "notes__delete_note",
            "notes__list_notes",
            "warden__explain",
            "warden__whoami"
        ]
    );
    let added = call(
        &client,
        "notes__add_note",
        json!({"text": "a secret argument"}),
    )
    .await;
    assert_eq!(decision(&added)["status"], "executed");
    let denied = call(&client, "warden__whoami", json!({"as": "x"})).await;
    assert_eq!(decision(&denied)["code"], "VALIDATION");
    drop(client);
    let serving = tmp.path().join("data").join("serving");
    let addr = served
        .mcp
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    assert_eq!(
        std::fs::read_to_string(&serving).unwrap(),
        format!("{addr}\n")
    );
    assert!(served.stop().success());
    assert!(!serving.exists());
    // Traces: spans reached the collector (the last ones when the process stopped).
    assert!(posts.load(Ordering::SeqCst) > 0, "no spans exported");
    // One line per governed call, with its fields, never an argument value or `Some(`.
    let log = std::fs::read_to_string(&log).unwrap();
    let calls = call_lines(&log);
    assert_eq!(calls.len(), 2, "{log}");
    let executed = &calls[0];
    assert_eq!(executed["tool"], "notes__add_note");
    assert_eq!(executed["decision"], "executed");
    assert_eq!(executed["principal"], "user:admin");
    assert_eq!(executed["run"], decision(&added)["runId"]);
    assert!(executed["duration_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(executed.get("code"), None);
    let refused = &calls[1];
    assert_eq!(refused["decision"], "denied");
    assert_eq!(refused["code"], "VALIDATION");
    assert!(refused["rule"].is_string());
    assert_eq!(refused.get("run"), None, "nothing was recorded: no run");
    assert!(!log.contains("Some("), "{log}");
    assert!(!log.contains("a secret argument"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_are_off_by_default() {
    // A collector of the test's own, named by the variables an OpenTelemetry exporter built
    // with its defaults would follow: without `--otlp-endpoint` or
    // `OTEL_EXPORTER_OTLP_ENDPOINT`, nothing is exported, there or anywhere (no exporter is
    // even set up, which the log would say).
    let (collector, posts) = collector().await;
    let tmp = tempfile::tempdir().unwrap();
    let governed_call = |served: &Served| {
        let (mcp, admin) = (served.mcp.clone(), served.admin.clone());
        async move {
            let client = http_client(&mcp, &admin, Era::Stateless).await;
            call(&client, "notes__list_notes", json!({})).await;
        }
    };
    let traces = format!("http://{collector}/v1/traces");
    let log = tmp.path().join("off.log");
    let served = serve_with(
        &tmp.path().join("off"),
        &log,
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &traces),
            ("OTEL_TRACES_EXPORTER", "otlp"),
        ],
    );
    governed_call(&served).await;
    assert!(served.stop().success());
    assert_eq!(posts.load(Ordering::SeqCst), 0, "spans were exported");
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("exporting traces"), "{log}");
    // The collector was listening: given the endpoint, the same call's spans reach it.
    let on = tmp.path().join("on.log");
    let endpoint = format!("http://{collector}");
    let served = serve_with(
        &tmp.path().join("on"),
        &on,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    governed_call(&served).await;
    assert!(served.stop().success());
    assert!(posts.load(Ordering::SeqCst) > 0, "no spans exported");
}

#[test]
fn a_port_in_use_is_refused_before_any_upstream_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let d = dir_arg(tmp.path());
    let marker = tmp.path().join("started");
    let config = format!(
        "kind: Project\nname: p\n---\nkind: Upstream\nname: u\nproject: p\nstdio: {{ command: /bin/sh, args: [\"-c\", \"touch {}; exec sleep 30\"] }}\n",
        marker.display()
    );
    std::fs::write(tmp.path().join("c.yaml"), config).unwrap();
    let f = tmp.path().join("c.yaml").display().to_string();
    assert!(run(&["apply", "-f", &f, "--data-dir", &d]).status.success());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let out = run(&["serve", "--listen", &addr.to_string(), "--data-dir", &d]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.ends_with(&format!(
            "error: cannot listen on {addr}: port {} is in use (another `warden serve`?); stop that process or choose another address with --listen\n",
            addr.port()
        )),
        "{stderr}"
    );
    assert!(!marker.exists(), "an upstream was started");
    // A new store is not even created: no admin token is handed out that nobody sees.
    let fresh = tmp.path().join("fresh");
    let out = run(&[
        "serve",
        "--listen",
        &addr.to_string(),
        "--data-dir",
        &dir_arg(&fresh),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!text(&out.stdout).contains("admin token"));
    assert!(!fresh.join(warden_store::SQLITE_FILE).exists());
}

/// Issue 45 (Ctrl-C took ~29 s): a request still being received holds the graceful shutdown
/// open; a second Ctrl-C stops `warden serve` at once (status 130) instead of waiting for it.
#[test]
fn a_second_signal_stops_at_once_while_a_request_holds_the_shutdown() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("warden.log");
    let mut served = serve(&dir.path().join("data"), &log, &[]);
    let addr = served
        .mcp
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // A body announced and never sent: once the server asks for it (100 Continue), the
    // request is being served, and stays so.
    let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        tcp,
        "POST /api/v1/resources HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\n\
         content-type: application/yaml\r\ncontent-length: 100000\r\nexpect: 100-continue\r\n\r\n",
        served.admin
    )
    .unwrap();
    let mut reader = BufReader::new(tcp.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 100"), "{line}");
    tcp.write_all(b"kind: Project\n").unwrap();
    let signal = |name: &str| {
        let pid = served.child.id().to_string();
        assert!(
            Command::new("kill")
                .args([&format!("-{name}"), &pid])
                .status()
                .unwrap()
                .success()
        );
    };
    signal("INT");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("shutting down")
    {
        assert!(Instant::now() < deadline, "no shutdown began");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal("INT");
    let status = loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the second signal did not stop it"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(130), "{logged}");
    assert!(logged.contains("second signal"), "{logged}");
}
