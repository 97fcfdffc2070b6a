//! Autonomy and approvals end to end (APR-1..APR-7, GOV-2 steps 5-7 in their final form).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;
#[path = "approvals/four_eyes.rs"]
mod four_eyes;
#[path = "console/plain.rs"]
#[allow(
    dead_code,
    reason = "the console's helpers, of which four eyes uses some"
)]
mod plain;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

fn config(extra: &str) -> String {
    format!(
        r#"
kind: Project
name: payments
---
{ledger}
---
kind: ToolPolicy
project: payments
tool: ledger__add_note
class: mutation
capability: ledger:write
risk: dangerous
---
kind: ToolPolicy
project: payments
tool: ledger__slow
class: mutation
risk: dangerous
---
kind: ToolPolicy
project: payments
tool: ledger__echo
class: mutation
risk: ordinary
---
kind: User
name: alice
---
kind: User
name: bob
---
kind: User
name: carol
---
kind: User
name: dave
---
kind: Role
name: writer
permissions: ["run:projects:payments", "ledger:write"]
---
kind: Role
name: approver
permissions: ["approvals:decide"]
---
kind: Role
name: runner
permissions: ["run:projects:payments"]
---
kind: RoleBinding
name: alice-writer
role: writer
subject: {{ user: alice }}
---
kind: RoleBinding
role: writer
subject: {{ user: bob }}
---
kind: RoleBinding
role: approver
subject: {{ user: bob }}
---
kind: RoleBinding
role: writer
subject: {{ user: carol }}
---
kind: RoleBinding
role: runner
subject: {{ user: dave }}
---
kind: RoleBinding
role: approver
subject: {{ user: dave }}
{extra}
"#,
        ledger = stdio_upstream("ledger", "payments", ""),
    )
}

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    fn new(w: &TestWarden) -> Self {
        warden_mcp::http_client::install_tls();
        Self {
            base: w.base.clone(),
            http: reqwest::Client::new(),
        }
    }

    async fn post(&self, token: &str, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn decide(&self, token: &str, id: &str, verb: &str) -> (u16, Value) {
        self.post(
            token,
            &format!("/api/v1/approvals/{id}/{verb}"),
            json!({"reason": "test"}),
        )
        .await
    }

    async fn approval(&self, token: &str, id: &str) -> Value {
        self.get(token, &format!("/api/v1/approvals/{id}")).await.1
    }
}

async fn park(client: &Client, tool: &str, args: Value) -> String {
    let r = call(client, tool, args).await;
    let d = decision(&r);
    assert_eq!(d["status"], "pending_approval", "{r:?}");
    assert_eq!(r.is_error, Some(false));
    d["approvalId"].as_str().unwrap().to_owned()
}

/// `warden approvals approve ID --server …` as `token` exits 1 saying `why`.
fn cli_refuses_to_approve(w: &TestWarden, token: &str, id: &str, why: &str) {
    let out = std::process::Command::new(WARDEN)
        .args(["approvals", "approve", id, "--server", &w.base])
        .env("WARDEN_TOKEN", token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(why),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn calls_executed(client: &Client) -> u64 {
    let r = call(client, "ledger__call_count", json!({})).await;
    r.structured_content.unwrap()["calls"].as_u64().unwrap()
}

/// Issue 45 (observed: `warden approvals approve` printed `outcome: -` for a call that
/// executed): the CLI says what became of the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_with_the_cli_says_the_call_executed() {
    let w = TestWarden::start(&config("")).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let id = park(&client, "ledger__add_note", json!({"text": "refund 42"})).await;
    let out = std::process::Command::new(WARDEN)
        .args(["approvals", "approve", &id, "--server", &w.base])
        .env("WARDEN_TOKEN", &w.admin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome = stdout.lines().find(|l| l.starts_with("outcome:"));
    assert_eq!(
        outcome.and_then(|l| l.split_whitespace().nth(1)),
        Some("executed"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_executes_once_cannot_be_replayed_and_changed_arguments_need_a_new_one() {
    let w = TestWarden::start(&config("")).await;
    let (alice, bob) = (
        w.token("alice", None, None).await,
        w.token("bob", None, None).await,
    );
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let id = park(&client, "ledger__add_note", json!({"text": "refund 42"})).await;
    assert_eq!(
        api.approval(&alice, &id).await["status"],
        "pending",
        "the requester can read its approval"
    );
    let (status, a) = api.decide(&bob, &id, "approve").await;
    assert_eq!(status, 200, "{a}");
    assert_eq!(a["status"], "executed", "{a}");
    assert_eq!(a["result"]["structuredContent"], json!({"id": 1}));
    // The requester fetches the outcome later (APR-7).
    assert_eq!(
        api.approval(&alice, &id).await["result"]["structuredContent"],
        json!({"id": 1})
    );
    // Deciding again is refused; nothing runs twice.
    let (status, again) = api.decide(&bob, &id, "approve").await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(
        again["error"],
        format!("approval `{id}` is executed, it cannot be approved")
    );
    assert_eq!(calls_executed(&client).await, 1);
    // The same call with one argument changed parks a new approval.
    let other = park(&client, "ledger__add_note", json!({"text": "refund 43"})).await;
    assert_ne!(other, id);
    // The decision is in the audit chain, with both principals.
    let out = cli(
        &[
            "audit",
            "--decision",
            "approve",
            "--oldest-first",
            "-o",
            "json",
        ],
        &w.store_args(),
    );
    let line: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(line["principal"], "user:bob");
    assert_eq!(line["payload"]["requester"], "user:alice");
    assert!(cli(&["audit", "verify"], &w.store_args()).status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_approval_is_refused() {
    let clock = Arc::new(warden_testkit::memory::ManualClock::at(now()));
    let w = TestWarden::start_with_clock(
        &config("---\nkind: Autonomy\nsubject: { user: alice }\nlevel: 2\napprovalTtl: 1s\n"),
        clock.clone(),
    )
    .await;
    let (alice, bob) = (
        w.token("alice", None, None).await,
        w.token("bob", None, None).await,
    );
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &alice, Era::Stateless).await;
    let id = park(&client, "ledger__add_note", json!({"text": "late"})).await;
    // Past its one-second TTL, on the gateway's clock: no waiting.
    clock.advance(1300);
    let (status, body) = api.decide(&bob, &id, "approve").await;
    assert_eq!(status, 409, "{body}");
    let a = api.approval(&bob, &id).await;
    assert_eq!(a["status"], "expired");
    assert_eq!(a["outcomeCode"], "APPROVAL_EXPIRED");
    assert_eq!(calls_executed(&client).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requester_revoked_or_demoted_while_waiting_executes_nothing() {
    let w = TestWarden::start(&config("")).await;
    let (alice, bob) = (
        w.token("alice", None, None).await,
        w.token("bob", None, None).await,
    );
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let revoked = park(&client, "ledger__add_note", json!({"text": "a"})).await;
    let no_provenance = park(&client, "ledger__add_note", json!({"text": "b"})).await;
    // Revoke alice's token while her approval waits.
    w.revoke_with_cli(&alice).await;
    w.settle().await;
    let (_, a) = api.decide(&bob, &revoked, "approve").await;
    assert_eq!(a["status"], "failed", "{a}");
    assert_eq!(a["outcomeCode"], "REQUESTER_REVOKED");
    // An approval that does not say who asked is refused, never run as the decider.
    w.store
        .store
        .execute_raw(&format!(
            "UPDATE approvals SET requested_by = NULL WHERE id = '{no_provenance}'"
        ))
        .await
        .unwrap();
    let (_, a) = api.decide(&bob, &no_provenance, "approve").await;
    assert_eq!(a["outcomeCode"], "APPROVAL_PROVENANCE_MISSING", "{a}");
    // Demoted: a new token, then alice loses ledger:write.
    let alice2 = w.token("alice", None, None).await;
    let client2 = http_client(&w.mcp(), &alice2, Era::Sessions).await;
    let demoted = park(&client2, "ledger__add_note", json!({"text": "c"})).await;
    assert!(
        cli(&["delete", "rolebinding", "alice-writer"], &w.store_args())
            .status
            .success()
    );
    w.settle().await;
    let (_, a) = api.decide(&bob, &demoted, "approve").await;
    assert_eq!(a["status"], "failed", "{a}");
    assert_eq!(a["outcomeCode"], "CAPABILITY", "{a}");
    let bob_client = http_client(&w.mcp(), &bob, Era::Sessions).await;
    assert_eq!(calls_executed(&bob_client).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deciding_needs_the_capability_and_a_scope_covering_the_action_at_every_door() {
    let w = TestWarden::start(&config("")).await;
    let alice = w.token("alice", None, None).await;
    let carol = w.token("carol", None, None).await;
    let dave = w.token("dave", None, None).await;
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let id = park(&client, "ledger__add_note", json!({"text": "x"})).await;
    // carol could perform the action but may not approve it.
    let (status, body) = api.decide(&carol, &id, "approve").await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (
            403,
            "deciding approvals needs the `approvals:decide` capability"
        )
    );
    // dave may approve, but his own authority does not reach ledger:write.
    let (status, body) = api.decide(&dave, &id, "approve").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["error"],
        "your own authority does not cover `ledger__add_note` with these arguments, so you may not decide on it"
    );
    // The CLI door refuses the same way.
    for (token, why) in [
        (&carol, "needs the `approvals:decide` capability"),
        (
            &dave,
            "your own authority does not cover `ledger__add_note`",
        ),
    ] {
        cli_refuses_to_approve(&w, token, &id, why);
    }
    assert_eq!(api.approval(&w.admin, &id).await["status"], "pending");
    assert_eq!(calls_executed(&client).await, 0);
    // Someone else's approval answers like one that does not exist.
    let (status, _) = api.get(&carol, &format!("/api/v1/approvals/{id}")).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approved_action_runs_with_the_intersection_of_requester_and_decider() {
    // The decider can write X, the requester no longer can: refused.
    let w = TestWarden::start(&config("")).await;
    let (alice, bob) = (
        w.token("alice", None, None).await,
        w.token("bob", None, None).await,
    );
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let id = park(&client, "ledger__add_note", json!({"text": "x"})).await;
    let narrowed = "kind: Role\nname: writer\npermissions: [\"run:projects:payments\"]\n---\nkind: RoleBinding\nname: bob-ledger\nrole: bob-writes\nsubject: { user: bob }\n---\nkind: Role\nname: bob-writes\npermissions: [\"ledger:write\"]\n";
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), narrowed).unwrap();
    assert!(
        cli(
            &["apply", "-f", f.path().to_str().unwrap()],
            &w.store_args()
        )
        .status
        .success()
    );
    w.settle().await;
    let (_, a) = api.decide(&bob, &id, "approve").await;
    assert_eq!(
        (a["status"].as_str(), a["outcomeCode"].as_str()),
        (Some("failed"), Some("CAPABILITY")),
        "{a}"
    );
    // The requester can write X, the decider cannot: refused at the door (see the test above),
    // and with a token narrowed by scopes too.
    let bob_narrow = w
        .token("bob", None, Some(&["approvals:decide", "run:projects:*"]))
        .await;
    let alice2 = w.token("alice", None, None).await;
    let f2 = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        f2.path(),
        "kind: Role\nname: writer\npermissions: [\"run:projects:payments\", \"ledger:write\"]\n",
    )
    .unwrap();
    assert!(
        cli(
            &["apply", "-f", f2.path().to_str().unwrap()],
            &w.store_args()
        )
        .status
        .success()
    );
    w.settle().await;
    let client2 = http_client(&w.mcp(), &alice2, Era::Sessions).await;
    let id2 = park(&client2, "ledger__add_note", json!({"text": "y"})).await;
    let (status, _) = api.decide(&bob_narrow, &id2, "approve").await;
    assert_eq!(status, 403);
    assert_eq!(calls_executed(&client2).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_decisions_make_one_decision_and_one_execution() {
    let w = TestWarden::start(&config("")).await;
    let (alice, bob) = (
        w.token("alice", None, None).await,
        w.token("bob", None, None).await,
    );
    let api = std::sync::Arc::new(Api::new(&w));
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let id = park(&client, "ledger__add_note", json!({"text": "once"})).await;
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (api, bob, id) = (api.clone(), bob.clone(), id.clone());
            tokio::spawn(async move {
                api.decide(&bob, &id, if i % 4 == 3 { "reject" } else { "approve" })
                    .await
                    .0
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        15,
        "{statuses:?}"
    );
    let a = api.approval(&bob, &id).await;
    let decisions = cli(
        &[
            "audit",
            "--run",
            a["runId"].as_str().unwrap(),
            "--kind",
            "decision",
            "-o",
            "json",
        ],
        &w.store_args(),
    );
    let human: Vec<Value> = String::from_utf8_lossy(&decisions.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["decision"] == "approve" || d["decision"] == "reject")
        .collect();
    assert_eq!(human.len(), 1, "{human:?}");
    let executed = u64::from(a["status"] == "executed");
    assert_eq!(calls_executed(&client).await, executed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_action_runs_after_its_veto_window_also_across_a_restart_and_a_veto_stops_it() {
    let w = TestWarden::start(&config(
        "---\nkind: Autonomy\nsubject: { user: alice }\nlevel: 3\nvetoWindow: 2s\n",
    ))
    .await;
    let (alice, bob) = (
        w.token("alice", None, None).await,
        w.token("bob", None, None).await,
    );
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    // Vetoed inside the window: never runs.
    let vetoed = park(&client, "ledger__add_note", json!({"text": "vetoed"})).await;
    let (status, a) = api.decide(&bob, &vetoed, "veto").await;
    assert_eq!((status, a["status"].as_str()), (200, Some("vetoed")), "{a}");
    // Staged, then a restart inside the window: runs on time after it.
    let staged = park(&client, "ledger__add_note", json!({"text": "staged"})).await;
    let parked_at = Instant::now();
    assert_eq!(api.approval(&bob, &staged).await["status"], "staged");
    let w = w.restart().await;
    let api = Api::new(&w);
    loop {
        let a = api.approval(&w.admin, &staged).await;
        if a["status"] == "executed" {
            assert!(
                parked_at.elapsed() >= Duration::from_secs(2),
                "ran before its veto window ended"
            );
            assert_eq!(a["result"]["structuredContent"], json!({"id": 1}), "{a}");
            break;
        }
        assert!(
            parked_at.elapsed() < Duration::from_secs(15),
            "the staged action did not run: {a}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(api.approval(&w.admin, &vetoed).await["status"], "vetoed");
    let admin = http_client(&w.mcp(), &w.admin, Era::Sessions).await;
    assert_eq!(calls_executed(&admin).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_writers_against_a_budget_of_twenty_get_exactly_twenty() {
    let w = TestWarden::start(&config(
        "---\nkind: WriteBudget\nsubject: { all: true }\nmaxWritesPerMinute: 20\n",
    ))
    .await;
    let bob = w.token("bob", None, None).await;
    let url = w.mcp();
    let clients: Vec<Client> =
        futures::future::join_all((0..8).map(|_| http_client(&url, &bob, Era::Stateless))).await;
    let clients = std::sync::Arc::new(clients);
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let clients = clients.clone();
            tokio::spawn(async move {
                let r = call(
                    &clients[i % 8],
                    "ledger__echo",
                    json!({"text": i.to_string()}),
                )
                .await;
                decision(&r)["status"].as_str().unwrap().to_owned()
            })
        })
        .collect();
    let mut executed = 0;
    let mut over_budget = 0;
    for t in tasks {
        match t.await.unwrap().as_str() {
            "executed" => executed += 1,
            "denied" => over_budget += 1,
            other => panic!("{other}"),
        }
    }
    assert_eq!((executed, over_budget), (20, 44));
    assert_eq!(calls_executed(&clients[0]).await, 20);
}

struct Served {
    child: std::process::Child,
    base: String,
}

fn serve(dir: &std::path::Path, config: &std::path::Path) -> Served {
    serve_with(dir, config, &[])
}

fn serve_with(dir: &std::path::Path, config: &std::path::Path, env: &[(&str, &str)]) -> Served {
    use std::io::BufRead;
    let mut child = std::process::Command::new(WARDEN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-demo",
            "--data-dir",
        ])
        .arg(dir)
        .arg("--config")
        .arg(config)
        .env("WARDEN_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mcp = lines.next().unwrap().unwrap();
    let _console = lines.next().unwrap().unwrap();
    let base = mcp
        .trim_start_matches("mcp: ")
        .trim_end_matches("/mcp")
        .to_owned();
    std::thread::sleep(Duration::from_millis(200));
    Served { child, base }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_right_after_a_decision_runs_the_action_once_or_marks_it_failed_visibly() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("ledger-notes.json");
    let cfg = dir.path().join("warden.yaml");
    let config = config("").replace(
        r#"args: ["notes", "--stdio"]"#,
        &format!(
            r#"args: ["notes", "--stdio", "--file", {:?}]"#,
            notes.display().to_string()
        ),
    );
    std::fs::write(&cfg, config).unwrap();
    let store_args = vec!["--data-dir".to_owned(), dir.path().display().to_string()];
    let mut served = serve(dir.path(), &cfg);
    let token = |user: &str| {
        let out = cli(&["token", "create", "--user", user], &store_args);
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let (alice, bob) = (token("alice"), token("bob"));
    tokio::time::sleep(Duration::from_millis(600)).await;
    warden_mcp::http_client::install_tls();
    let http = reqwest::Client::new();
    for (round, delay_ms) in [0u64, 15, 40, 120, 400].into_iter().enumerate() {
        let client = http_client(&format!("{}/mcp", served.base), &alice, Era::Stateless).await;
        let text = format!("round {round}");
        let id = park(&client, "ledger__add_note", json!({"text": text})).await;
        drop(client);
        let url = format!("{}/api/v1/approvals/{id}/approve", served.base);
        let approve = tokio::spawn({
            let (http, bob) = (http.clone(), bob.clone());
            async move {
                http.post(url)
                    .bearer_auth(bob)
                    .json(&json!({}))
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
            }
        });
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        served.child.kill().unwrap();
        served.child.wait().unwrap();
        let _ = approve.await;
        // Restart on the same store.
        served = serve(dir.path(), &cfg);
        tokio::time::sleep(Duration::from_millis(700)).await;
        let api = Api {
            base: served.base.clone(),
            http: http.clone(),
        };
        let mut a = api.approval(&bob, &id).await;
        if a["status"] == "pending" {
            // The decision never became durable: deciding now works, and runs it once.
            a = api.decide(&bob, &id, "approve").await.1;
        }
        let on_file: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&notes).unwrap_or_else(|_| "[]".into()))
                .unwrap();
        let copies = on_file
            .iter()
            .filter(|n| n["text"] == text.as_str())
            .count();
        match a["status"].as_str().unwrap() {
            "executed" => assert_eq!(copies, 1, "round {round}: executed {copies} times"),
            "failed" => {
                assert!(copies <= 1, "round {round}: executed {copies} times");
                assert!(
                    a["outcomeMessage"]
                        .as_str()
                        .unwrap()
                        .starts_with("interrupted"),
                    "{a}"
                );
            }
            other => panic!("round {round}: the approval is `{other}` after the restart: {a}"),
        }
    }
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    let verify = cli(&["audit", "verify"], &store_args);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// REL-3, AUD-1: `kill -9` loses no acknowledged audit record. The server's inserter waits
/// ten minutes here, so every answered call's records are still only in the audit spool when
/// the server dies; the next process to open the store (the CLI) inserts them, once, and the
/// chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_loses_no_acknowledged_audit_record() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("warden.yaml");
    std::fs::write(&cfg, config("")).unwrap();
    let store_args = vec!["--data-dir".to_owned(), dir.path().display().to_string()];
    let mut served = serve_with(
        dir.path(),
        &cfg,
        &[("WARDEN_AUDIT_INSERT_DELAY_MS", "600000")],
    );
    let out = cli(&["token", "create", "--user", "bob"], &store_args);
    let bob = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let client = http_client(&format!("{}/mcp", served.base), &bob, Era::Stateless).await;
    for _ in 0..20 {
        let r = call(&client, "ledger__call_count", json!({})).await;
        assert_eq!(r.is_error, Some(false), "{r:?}");
    }
    let spool = dir.path().join("warden.db-spool");
    assert!(
        std::fs::metadata(&spool).unwrap().len() > 0,
        "the answered calls' records are in the spool"
    );
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    drop(client);
    let outcomes = |store_args: &[String]| -> usize {
        let out = cli(
            &["audit", "--kind", "outcome", "--oldest-first", "-o", "json"],
            store_args,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["tool"] == "ledger__call_count")
            .count()
    };
    assert_eq!(outcomes(&store_args), 20);
    assert_eq!(
        std::fs::metadata(&spool).unwrap().len(),
        0,
        "replayed and emptied"
    );
    assert_eq!(outcomes(&store_args), 20, "replayed once");
    let verify = cli(&["audit", "verify"], &store_args);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// One stateless 2026-07-28 request whose client declares the tasks extension; the answer.
async fn with_tasks(w: &TestWarden, token: &str, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "tasks", "version": "1"}
    });
    let mut request = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params}));
    let name = params.get("name").or_else(|| params.get("taskId"));
    if let Some(name) = name.and_then(Value::as_str) {
        request = request.header("mcp-name", name);
    }
    last_message(&request.send().await.unwrap().text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_declares_tasks_gets_a_parked_call_as_a_task_of_its_own() {
    // APR-7: the task is the approval; working until decided, then completed with the tool's
    // result, or failed with the denial; nobody else's task is visible.
    let w = TestWarden::start(&config("")).await;
    let (alice, bob) = (
        w.token("alice", None, None).await,
        w.token("bob", None, None).await,
    );
    let api = Api::new(&w);
    let park = |text: &'static str| {
        let (w, alice) = (&w, alice.clone());
        async move {
            let params = json!({"name": "ledger__add_note", "arguments": {"text": text}});
            with_tasks(w, &alice, "tools/call", params).await
        }
    };
    let created = park("refund 42").await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working", "{created}");
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("apr_"), "{created}");
    let get = |token: String, id: String| {
        let w = &w;
        async move { with_tasks(w, &token, "tasks/get", json!({"taskId": id})).await }
    };
    let working = get(alice.clone(), id.clone()).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    // Another credential: exactly as for a task that does not exist.
    let foreign = get(bob.clone(), id.clone()).await;
    let missing = get(bob.clone(), "apr_nope".into()).await;
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    assert_eq!(
        foreign["error"]["message"]
            .as_str()
            .unwrap()
            .replace(&id, "X"),
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .replace("apr_nope", "X")
    );
    // Approved: completed, with the tool's result.
    let (status, a) = api.decide(&bob, &id, "approve").await;
    assert_eq!(status, 200, "{a}");
    let done = get(alice.clone(), id.clone()).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"],
        json!({"id": 1}),
        "{done}"
    );
    // Rejected: failed, with the denial.
    let other = park("refund 43").await["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, r) = api.decide(&bob, &other, "reject").await;
    assert_eq!(status, 200, "{r}");
    let failed = get(alice.clone(), other.clone()).await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    assert_eq!(
        failed["result"]["error"]["data"]["status"], "denied",
        "{failed}"
    );
    assert_eq!(failed["result"]["error"]["data"]["approvalId"], other);
    // A client that does not declare tasks gets the decision contract, as before.
    let client = http_client(&w.mcp(), &alice, Era::Stateless).await;
    let r = call(&client, "ledger__add_note", json!({"text": "refund 44"})).await;
    assert_eq!(decision(&r)["status"], "pending_approval");
}

/// The tasks extension is 2026-07-28's: a 2025-11-25 client that declares it at `initialize`
/// (as the MCP Inspector does by default) and calls without asking for a task gets the
/// decision contract, `pending_approval` and the approval's id, as every 2025-11-25 client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_client_declaring_the_tasks_extension_gets_the_decision_contract() {
    let w = TestWarden::start(&config("")).await;
    let alice = w.token("alice", None, None).await;
    let session = open_session_with(
        &w,
        &alice,
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
    .await;
    // One raw 2025-11-25 request, on the session or before any; its answer.
    let post = |body: Value, session: Option<&str>| {
        let mut request = reqwest::Client::new()
            .post(w.mcp())
            .bearer_auth(&alice)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        async move { last_message(&request.send().await.unwrap().text().await.unwrap()) }
    };
    let answer = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "ledger__add_note", "arguments": {"text": "refund 45"}}}),
        Some(&session),
    )
    .await;
    let result = &answer["result"];
    assert!(result.get("taskId").is_none(), "{answer}");
    // Nor is a session offered the extension.
    let offered = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "clientInfo": {"name": "x", "version": "1"},
            "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}),
        None,
    )
    .await;
    assert!(
        offered["result"]["protocolVersion"].is_string(),
        "{offered}"
    );
    assert!(
        offered["result"]["capabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_none(),
        "{offered}"
    );
    let decision = &result["_meta"]["warden/decision"];
    assert_eq!(decision["status"], "pending_approval", "{answer}");
    assert!(
        decision["approvalId"]
            .as_str()
            .is_some_and(|id| id.starts_with("apr_")),
        "{answer}"
    );
}
