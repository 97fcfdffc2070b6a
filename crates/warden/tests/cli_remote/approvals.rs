//! `approvals list|get` both ways (the arguments masked alike), and the decisions, which only
//! a running server makes.

use serde_json::{Value, json};

use crate::common::{Era, TestWarden, call, decision, http_client};
use crate::support::{Both, config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_read_the_same_both_ways_before_and_after_their_decision() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    let park = |r: &rmcp::model::CallToolResult| {
        let d = decision(r);
        assert_eq!(d["status"], "pending_approval", "{r:?}");
        d["approvalId"].as_str().unwrap().to_owned()
    };
    // One tool's arguments are kept in full, the other's as a hash only.
    let full = park(&call(&client, "alpha__add_note", json!({"text": "refund 42"})).await);
    let hashed = park(&call(&client, "alpha__delete_note", json!({"id": 1})).await);
    for format in ["table", "json", "yaml"] {
        cli.same(&["approvals", "list", "-o", format]).ok();
        cli.same(&[
            "approvals",
            "list",
            "--status",
            "pending,staged",
            "-o",
            format,
        ])
        .ok();
        cli.same(&["approvals", "get", &full, "-o", format]).ok();
    }
    let one = cli.same(&["approvals", "get", &full, "-o", "json"]).json();
    assert_eq!(one["arguments"], json!({"text": "refund 42"}), "{one}");
    assert_eq!(one["requestedBy"]["kind"], "principal", "{one}");
    let other = cli
        .same(&["approvals", "get", &hashed, "-o", "json"])
        .json();
    assert_eq!(other["arguments"], Value::Null, "{other}");
    assert!(other["argsHash"].as_str().is_some_and(|h| h.len() == 64));

    // Deciding executes the action with the server's catalog: on a store it is refused.
    let refused = cli.store(&["approvals", "approve", &full]);
    assert_eq!(refused.code, Some(2));
    assert_eq!(
        refused.stderr,
        "error: `warden approvals approve` works through a running server, not on a store: the server decides, executes the action with its live catalog and upstreams, and records it exactly once; give it --server URL (or WARDEN_SERVER) and a token in WARDEN_TOKEN\n"
    );
    let approved = cli
        .api(&[
            "approvals",
            "approve",
            &full,
            "--reason",
            "ok",
            "-o",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(approved["status"], "executed", "{approved}");
    cli.api(&["approvals", "reject", &hashed, "--reason", "no"])
        .ok();
    for format in ["table", "json", "yaml"] {
        cli.same(&["approvals", "list", "-o", format]).ok();
        cli.same(&["approvals", "get", &full, "-o", format]).ok();
        cli.same(&["approvals", "get", &hashed, "-o", format]).ok();
    }
    let done = cli.same(&["approvals", "get", &full, "-o", "json"]).json();
    assert_eq!(done["decidedBy"]["kind"], "principal", "{done}");
    assert!(done["result"].is_object(), "{done}");
    assert_eq!(done["arguments"], Value::Null, "{done}");

    cli.same_failure(
        &["approvals", "get", "apr_nope"],
        1,
        "error: no approval `apr_nope`\n",
    );
    cli.same_failure(
        &["approvals", "list", "--status", "bogus"],
        2,
        "error: `status`: `bogus` is not an approval status; use one of pending, approved, rejected, expired, staged, vetoed, executing, executed, failed\n",
    );
    // A decision already made is the server's refusal (409): exit 1, its message.
    let again = cli.api(&["approvals", "approve", &full]);
    assert_eq!(again.code, Some(1), "{}", again.stderr);
    assert_eq!(
        again.stderr,
        format!("error: approval `{full}` is executed, it cannot be approved\n")
    );
}
