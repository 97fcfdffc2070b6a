//! Four eyes (APR-8): with `selfApproval: deny` the principal that parked a call cannot decide
//! it, whichever of its credentials asks and at every door that decides — the API, the CLI and
//! the console (MCP offers no decision: docs/approvals.md) — and `approvals: 2` runs a call only
//! once two distinct deciders approved it.

use serde_json::json;

use crate::common::*;
use crate::plain::Plain;
use crate::{Api, calls_executed, cli_refuses_to_approve, config, park};

/// bob may write and decide, as an Autonomy keeping him from deciding what he asked for; carol
/// decides too; deleting a note needs two deciders, neither of them its requester.
const FOUR_EYES: &str = r#"
---
kind: Autonomy
subject: { user: bob }
level: 2
selfApproval: deny
---
kind: RoleBinding
role: approver
subject: { user: carol }
---
kind: ToolPolicy
project: payments
tool: ledger__delete_note
class: mutation
capability: ledger:write
risk: dangerous
approvals: 2
selfApproval: deny
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requester_cannot_decide_its_own_call_at_any_door() {
    let w = TestWarden::start(&config(FOUR_EYES)).await;
    let bob = w.token("bob", None, None).await;
    let bob_again = w.token("bob", None, None).await;
    let carol = w.token("carol", None, None).await;
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &bob, Era::Sessions).await;
    let id = park(&client, "ledger__add_note", json!({"text": "refund 42"})).await;
    let why = "four eyes: user:bob asked for this call, and `selfApproval: deny` (autonomy:user:bob) leaves its decision to someone else, whichever credential of user:bob asks";

    // The API, with the credential that parked it and with another of bob's.
    for token in [&bob, &bob_again] {
        for verb in ["approve", "reject"] {
            let (status, body) = api.decide(token, &id, verb).await;
            assert_eq!((status, body["error"].as_str()), (403, Some(why)), "{verb}");
        }
    }
    // The CLI.
    cli_refuses_to_approve(&w, &bob_again, &id, why);
    // The console.
    let session = Plain::sign_in(&w, &bob).await;
    let (status, page) = session
        .post(
            &format!("/approvals/{id}/decide"),
            &[("verb", "approve"), ("reason", "mine")],
        )
        .await;
    assert_eq!(status, 403, "{page}");
    assert!(
        page.contains("four eyes: user:bob asked for this call"),
        "{page}"
    );
    let (_, page) = session.get(&format!("/approvals/{id}")).await;
    assert!(
        page.contains("not decided by its requester (<code>autonomy:user:bob</code>)"),
        "{page}"
    );

    // Nothing ran; the approval says who may not decide it; someone else decides.
    let approval = api.approval(&w.admin, &id).await;
    assert_eq!(approval["status"], "pending");
    assert_eq!(approval["selfDeniedBy"], "autonomy:user:bob");
    assert_eq!(calls_executed(&client).await, 0);
    let (status, body) = api.decide(&carol, &id, "approve").await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("executed")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_deciders_are_two_distinct_principals() {
    let w = TestWarden::start(&config(FOUR_EYES)).await;
    let alice = w.token("alice", None, None).await;
    let bob = w.token("bob", None, None).await;
    let bob_again = w.token("bob", None, None).await;
    let carol = w.token("carol", None, None).await;
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    call(&client, "ledger__add_note", json!({"text": "old"})).await;
    let executed = calls_executed(&client).await;
    let id = park(&client, "ledger__delete_note", json!({"id": 1})).await;
    assert_eq!(api.approval(&w.admin, &id).await["deciders"], 2);

    // bob approves: counted, not run.
    let (status, body) = api.decide(&bob, &id, "approve").await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("pending")),
        "{body}"
    );
    assert_eq!(body["approvers"], json!(["user:bob"]));
    assert_eq!(
        calls_executed(&client).await,
        executed + 1,
        "the count only"
    );
    // bob again, with another credential: not a second decider.
    let (status, body) = api.decide(&bob_again, &id, "approve").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["error"],
        format!(
            "user:bob already approved `{id}`; it needs 2 approvals by distinct deciders and has 1"
        )
    );
    // The CLI shows where it stands.
    let out = std::process::Command::new(WARDEN)
        .args(["approvals", "get", &id, "--server", &w.base])
        .env("WARDEN_TOKEN", &w.admin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("approvals:   1 of 2 (user:bob)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "four eyes:   not by its requester (tool-policy:payments/ledger__delete_note)"
        ),
        "{stdout}"
    );
    // carol, a second principal, makes it run.
    let (status, body) = api.decide(&carol, &id, "approve").await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("executed")),
        "{body}"
    );
    assert_eq!(body["approvers"], json!(["user:bob", "user:carol"]));
    let audit = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            decision: Some("approve".into()),
            limit: Some(10),
            ..warden_store::AuditFilter::default()
        })
        .await
        .unwrap();
    let deciders: Vec<Option<String>> = audit.iter().map(|r| r.record.principal.clone()).collect();
    assert_eq!(
        deciders,
        [Some("user:bob".to_owned()), Some("user:carol".to_owned())],
        "each approval is in the audit trail"
    );
}

/// At autonomy level 3 a dangerous call is staged for a veto; one of a tool that needs two
/// deciders waits for them instead (APR-8 over APR-1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_needing_two_deciders_is_parked_even_where_it_would_be_staged() {
    let w = TestWarden::start(&config(&format!(
        "{FOUR_EYES}---\nkind: Autonomy\nsubject: {{ user: alice }}\nlevel: 3\n"
    )))
    .await;
    let alice = w.token("alice", None, None).await;
    let api = Api::new(&w);
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    call(&client, "ledger__add_note", json!({"text": "old"})).await;
    let id = park(&client, "ledger__delete_note", json!({"id": 1})).await;
    let approval = api.approval(&w.admin, &id).await;
    assert_eq!(
        (approval["kind"].as_str(), approval["status"].as_str()),
        (Some("approval"), Some("pending")),
        "{approval}"
    );
}
