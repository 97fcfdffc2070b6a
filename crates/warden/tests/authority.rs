//! Run authority end to end (RUN-1..RUN-6, RUN-8, AUTH-3): knowledge travels with the agent;
//! action is bounded by the authority of the run.

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

fn config(runner: &str) -> String {
    config_with_output(runner, "/dev/null")
}

fn config_with_output(runner: &str, out: &str) -> String {
    format!(
        r#"
kind: Project
name: payments
instructions: "Refunds over 500 EUR need a second pair of eyes."
prompts:
  - {{ name: review-checklist, description: "How to review a payment", text: "Check the amount, the payee and the reason." }}
documents:
  - {{ name: glossary, title: "Payments glossary", text: "Chargeback: a reversed card payment." }}
---
kind: Project
name: infra
instructions: "Deploys happen on Tuesdays only."
---
{ledger}
---
{nodes}
---
kind: ToolPolicy
project: payments
tool: "ledger__*_note"
class: mutation
---
kind: ToolPolicy
project: infra
tool: "nodes__*_note"
class: mutation
---
kind: ToolPolicy
project: payments
tool: ledger__list_notes
class: read
projectArguments: ["/project"]
---
kind: Agent
name: sre-bot
instructions: "You are the SRE reviewer."
memberships: [payments, infra]
runner: {{ command: "python3", args: ["-c", {runner:?}], env: {{ RUNNER_OUT: {out:?} }} }}
timeout: 30s
---
kind: User
name: alice
---
kind: Role
name: payments-runner
permissions: ["run:projects:payments"]
---
kind: RoleBinding
name: alice-payments
role: payments-runner
subject: {{ user: alice }}
---
kind: ServiceAccount
name: deploy-bot
---
kind: Role
name: infra-runner
permissions: ["run:projects:infra"]
---
kind: RoleBinding
role: infra-runner
subject: {{ serviceAccount: deploy-bot }}
"#,
        ledger = stdio_upstream("ledger", "payments", ""),
        nodes = stdio_upstream("nodes", "infra", ""),
    )
}

/// A runner that lists its tools with its run credential and writes them to a file.
const RUNNER: &str = r#"
import json, os, urllib.request
url, token = os.environ["WARDEN_MCP_URL"], os.environ["WARDEN_RUN_TOKEN"]
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": {"name": "runner", "version": "1"}}
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}).encode()
req = urllib.request.Request(url, data=body, headers={"Authorization": "Bearer " + token, "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
tools = [t["name"] for t in json.load(urllib.request.urlopen(req))["result"]["tools"]]
with open(os.environ["RUNNER_OUT"], "w") as f:
    json.dump({"tools": tools, "token": token, "url": url, "run": os.environ["WARDEN_RUN_ID"]}, f)
"#;

async fn instructions_of(client: &Client) -> String {
    client
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_through_an_agent_gets_all_its_knowledge_and_only_the_tools_of_the_caller() {
    let w = TestWarden::start(&config(RUNNER)).await;
    let alice = w.token("alice", None, None).await;
    let url = format!("{}/mcp/agents/sre-bot", w.base);
    for era in [Era::Stateless, Era::Sessions] {
        let client = http_client(&url, &alice, era).await;
        let names = tool_names(&client).await;
        assert!(
            names.contains(&"ledger__echo".to_owned()),
            "{era:?}: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n.starts_with("nodes__")),
            "{era:?}: infra tools listed: {names:?}"
        );
        // An infra tool answers exactly like an unknown one.
        let hidden = call(&client, "nodes__echo", json!({"text": "x"})).await;
        let missing = call(&client, "nodes__echoo", json!({"text": "x"})).await;
        assert_eq!(decision(&hidden)["code"], "UNKNOWN_TOOL");
        assert_eq!(
            without_ids(&hidden)
                .to_string()
                .replace("nodes__echo`", "T`"),
            without_ids(&missing)
                .to_string()
                .replace("nodes__echoo`", "T`")
        );
        // Knowledge of both projects, the agent's persona, and a notice naming infra only.
        let text = instructions_of(&client).await;
        assert!(text.starts_with("You are the SRE reviewer."), "{text}");
        assert!(
            text.contains("Refunds over 500 EUR need a second pair of eyes."),
            "{text}"
        );
        assert!(text.contains("Deploys happen on Tuesdays only."), "{text}");
        let notice = text
            .lines()
            .find(|l| l.starts_with("Context boundary:"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(notice.contains("`infra`"), "{notice}");
        assert!(!notice.contains("payments"), "{notice}");
        // Knowledge also arrives as prompts and resources, for both projects of the agent.
        let prompts: Vec<String> = client
            .list_all_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert!(
            prompts.contains(&"payments/review-checklist".to_owned()),
            "{prompts:?}"
        );
        let resources: Vec<String> = client
            .list_all_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri)
            .collect();
        assert!(
            resources.contains(&"warden://projects/payments/documents/glossary".to_owned()),
            "{resources:?}"
        );
        let doc = client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(
                "warden://projects/payments/documents/glossary",
            ))
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&doc.contents[0]).unwrap()["text"],
            "Chargeback: a reversed card payment."
        );
        // whoami reports the mode and the scope with reasons.
        let me = call(&client, "warden__whoami", json!({})).await;
        let data = &me.structured_content.as_ref().unwrap()["data"];
        assert_eq!(data["mode"], "caller");
        assert_eq!(data["agent"], "sre-bot");
        assert_eq!(data["knowledgeOnly"][0]["project"], "infra");
        assert_eq!(
            data["knowledgeOnly"][0]["why"],
            "user:alice does not hold `run:projects:infra`"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_through_an_agent_gets_exactly_its_own_bindings_whatever_the_headers() {
    let w = TestWarden::start(&config(RUNNER)).await;
    let sa = w
        .store
        .store
        .create_token(
            warden_store::TokenRequest {
                principal: warden_core::principal::Principal::ServiceAccount {
                    name: warden_core::name::Name::new("deploy-bot").unwrap(),
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
    w.settle().await;
    let url = format!("{}/mcp/agents/sre-bot", w.base);
    // Identity headers are ignored: the credential alone decides.
    let mut headers = std::collections::HashMap::new();
    for (k, v) in [
        ("x-service-account", "admin"),
        ("x-user", "admin"),
        ("x-warden-principal", "user:admin"),
    ] {
        headers.insert(
            http::HeaderName::from_static(k),
            http::HeaderValue::from_static(v),
        );
    }
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(sa)
            .custom_headers(headers);
    use rmcp::service::ClientServiceExt as _;
    let client = ()
        .serve_with_lifecycle(
            rmcp::transport::StreamableHttpClientTransport::from_config(config),
            rmcp::service::ClientLifecycleMode::Initialize,
        )
        .await
        .unwrap();
    let names = tool_names(&client).await;
    assert!(names.contains(&"nodes__echo".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("ledger__")),
        "{names:?}"
    );
    let me = call(&client, "warden__whoami", json!({})).await;
    assert_eq!(
        me.structured_content.as_ref().unwrap()["data"]["mode"],
        "service-account"
    );
    assert_eq!(
        me.structured_content.as_ref().unwrap()["data"]["principal"],
        "serviceAccount:deploy-bot"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_agent_run_gets_the_memberships_and_its_credential_dies_with_it() {
    let out_dir = tempfile::tempdir().unwrap();
    let out_file = out_dir.path().join("runner.json");
    let w = TestWarden::start(&config_with_output(RUNNER, out_file.to_str().unwrap())).await;
    let out = tokio::process::Command::new(WARDEN)
        .args(["run", "agent", "sre-bot", "--wait", "--server", &w.base])
        .env("WARDEN_TOKEN", &w.admin)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(run_id.starts_with("run_"), "{run_id}");
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let tools: Vec<String> = serde_json::from_value(seen["tools"].clone()).unwrap();
    assert!(
        tools.contains(&"ledger__echo".to_owned()) && tools.contains(&"nodes__echo".to_owned()),
        "{tools:?}"
    );
    assert_eq!(seen["run"], run_id.as_str());
    assert!(
        seen["url"]
            .as_str()
            .unwrap()
            .ends_with("/mcp/agents/sre-bot")
    );
    // The credential is refused after the run.
    let token = seen["token"].as_str().unwrap();
    assert!(w.gateway.authenticate(token).is_err());
    // The run's lifecycle and calls are on record.
    let out = std::process::Command::new(WARDEN)
        .args(["describe", "run", &run_id, "-o", "json"])
        .args(w.store_args())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let detail: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(detail["lifecycle"]["status"], "succeeded");
    assert_eq!(detail["lifecycle"]["exitCode"], 0);
    assert_eq!(detail["lifecycle"]["trigger"], "manual");
    assert_eq!(detail["authority"]["mode"], "agent");
    let listed = std::process::Command::new(WARDEN)
        .args(["get", "runs"])
        .args(w.store_args())
        .output()
        .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&run_id) && l.contains("succeeded") && l.contains("sre-bot")),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_store_down_the_instructions_still_arrive_and_there_are_no_tools() {
    let w = TestWarden::start(&config(RUNNER)).await;
    let alice = w.token("alice", None, None).await;
    let url = format!("{}/mcp/agents/sre-bot", w.base);
    w.gateway.store().close().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while w.gateway.snapshot().store_ok {
        assert!(
            Instant::now() < deadline,
            "the gateway did not notice the store is down"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for era in [Era::Stateless, Era::Sessions] {
        let client = http_client(&url, &alice, era).await;
        let text = instructions_of(&client).await;
        assert!(text.contains("You are the SRE reviewer."), "{text}");
        assert!(text.contains("Refunds over 500 EUR"), "{text}");
        assert!(
            text.contains("This run has no tools at the moment: the store cannot be reached."),
            "{text}"
        );
        assert_eq!(tool_names(&client).await, Vec::<String>::new(), "{era:?}");
        // A call is refused; as the refusal cannot be recorded, it says governance is unavailable.
        let r = call(&client, "ledger__echo", json!({"text": "x"})).await;
        assert_eq!(decision(&r)["code"], "UNAVAILABLE");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_binding_refuses_the_next_call_of_an_open_session() {
    let w = TestWarden::start(&config(RUNNER)).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(
        &format!("{}/mcp/agents/sre-bot", w.base),
        &alice,
        Era::Sessions,
    )
    .await;
    assert_eq!(
        decision(&call(&client, "ledger__echo", json!({"text": "a"})).await)["status"],
        "executed"
    );
    let out = cli(
        &["delete", "rolebinding", "alice-payments"],
        &w.store_args(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    w.settle().await;
    let r = call(&client, "ledger__echo", json!({"text": "b"})).await;
    assert_eq!(decision(&r)["code"], "UNKNOWN_TOOL");
    assert!(
        tool_names(&client)
            .await
            .iter()
            .all(|t| t.starts_with("warden__"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_bound_to_payments_cannot_act_on_infra_by_naming_it_in_an_argument() {
    let w = TestWarden::start(&config(RUNNER)).await;
    // alice may run both projects now; her token is bound to payments.
    let cfg = "kind: Role\nname: everything\npermissions: [\"run:projects:*\"]\n---\nkind: RoleBinding\nrole: everything\nsubject: { user: alice }\n";
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), cfg).unwrap();
    assert!(
        cli(
            &["apply", "-f", file.path().to_str().unwrap()],
            &w.store_args()
        )
        .status
        .success()
    );
    let bound = w.token("alice", Some(&["payments"]), None).await;
    let client = http_client(
        &format!("{}/mcp/agents/sre-bot", w.base),
        &bound,
        Era::Stateless,
    )
    .await;
    let r = call(&client, "ledger__list_notes", json!({"project": "infra"})).await;
    assert_eq!(decision(&r)["code"], "CAPABILITY", "{r:?}");
    let r = call(
        &client,
        "ledger__list_notes",
        json!({"project": "payments"}),
    )
    .await;
    assert_eq!(decision(&r)["status"], "executed");
}
