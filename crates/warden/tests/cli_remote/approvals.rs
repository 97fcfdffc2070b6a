//! `approvals list|get` both ways (the arguments masked alike), and the decisions (approve,
//! reject, veto), which only a running server makes.

use serde_json::{Value, json};

use crate::common::{Era, TestWarden, call, decision, http_client};
use crate::support::{Both, config};

/// A time field (ms since the epoch) as the CLI's tables print it.
fn time(ms: &Value) -> String {
    chrono::DateTime::from_timestamp_millis(ms.as_i64().unwrap())
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

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
    // The table shows them too: a decider at the CLI sees what it approves.
    let table = cli.same(&["approvals", "get", &full]).stdout;
    assert!(
        table.contains("\narguments:   {\"text\":\"refund 42\"}\n"),
        "{table}"
    );
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
    // A rejection prints the approval as it now is: its whole view, as `approvals get` does.
    let before = cli
        .same(&["approvals", "get", &hashed, "-o", "json"])
        .json();
    let rejected = cli
        .api(&["approvals", "reject", &hashed, "--reason", "no"])
        .ok();
    assert_eq!(
        rejected.stdout,
        format!(
            "id:          {hashed}\n\
             kind:        approval\n\
             status:      rejected\n\
             tool:        alpha__delete_note\n\
             requester:   user:admin\n\
             run:         {run}\n\
             rule:        {rule}\n\
             args sha256: {hash}\n\
             reason:      no\n\
             outcome:     APPROVAL_REJECTED\n\
             message:     rejected by user:admin\n\
             due:         {due}\n",
            run = before["runId"].as_str().unwrap(),
            rule = before["rule"].as_str().unwrap(),
            hash = before["argsHash"].as_str().unwrap(),
            due = time(&before["dueAt"]),
        )
    );
    assert_eq!(
        cli.same(&["approvals", "get", &hashed]).stdout,
        rejected.stdout
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_call_vetoed_through_the_cli_never_runs_and_reads_the_same_both_ways() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    // Alice acts at autonomy level 3: her dangerous call is staged, to run after its veto
    // window (10 minutes) unless someone vetoes it.
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Stateless).await;
    let staged = call(&client, "alpha__add_note", json!({"text": "staged"})).await;
    let d = decision(&staged);
    assert_eq!(d["status"], "pending_approval", "{staged:?}");
    let id = d["approvalId"].as_str().unwrap().to_owned();
    for format in ["table", "json", "yaml"] {
        cli.same(&["approvals", "list", "--status", "staged", "-o", format])
            .ok();
        cli.same(&["approvals", "get", &id, "-o", format]).ok();
    }
    let waiting = cli.same(&["approvals", "get", &id, "-o", "json"]).json();
    assert_eq!(
        (&waiting["kind"], &waiting["status"]),
        (&json!("staged"), &json!("staged")),
        "{waiting}"
    );
    assert_eq!(waiting["arguments"], json!({"text": "staged"}), "{waiting}");
    let window = waiting["dueAt"].as_i64().unwrap() - waiting["createdAt"].as_i64().unwrap();
    assert_eq!(window, 600_000, "{waiting}");

    // A staged action is vetoed, not rejected; and only through a server.
    let wrong = cli.api(&["approvals", "reject", &id]);
    assert_eq!(wrong.code, Some(1), "{}", wrong.stderr);
    assert_eq!(
        wrong.stderr,
        format!("error: `{id}` is a staged action: veto it, or let it run\n")
    );
    let refused = cli.store(&["approvals", "veto", &id]);
    assert_eq!(refused.code, Some(2));
    assert_eq!(
        refused.stderr,
        "error: `warden approvals veto` works through a running server, not on a store: the server checks the decider's authority live (APR-4) and records the decision exactly once; give it --server URL (or WARDEN_SERVER) and a token in WARDEN_TOKEN\n"
    );
    let vetoed = cli
        .api(&["approvals", "veto", &id, "--reason", "not now"])
        .ok();
    assert_eq!(
        vetoed.stdout,
        format!(
            "id:          {id}\n\
             kind:        staged\n\
             status:      vetoed\n\
             tool:        alpha__add_note\n\
             requester:   user:alice\n\
             run:         {run}\n\
             rule:        {rule}\n\
             args sha256: {hash}\n\
             reason:      not now\n\
             outcome:     VETOED\n\
             message:     vetoed by user:admin\n\
             due:         {due}\n",
            run = d["runId"].as_str().unwrap(),
            rule = waiting["rule"].as_str().unwrap(),
            hash = waiting["argsHash"].as_str().unwrap(),
            due = time(&waiting["dueAt"]),
        )
    );
    assert_eq!(cli.same(&["approvals", "get", &id]).stdout, vetoed.stdout);
    for format in ["table", "json", "yaml"] {
        cli.same(&["approvals", "list", "-o", format]).ok();
        cli.same(&["approvals", "get", &id, "-o", format]).ok();
    }
    let done = cli.same(&["approvals", "get", &id, "-o", "json"]).json();
    assert_eq!(done["decidedBy"]["kind"], "principal", "{done}");
    assert_eq!(done["arguments"], Value::Null, "{done}");
    assert_eq!(done["result"], Value::Null, "{done}");
    // It never ran, and a second veto is refused.
    let count = call(&client, "alpha__call_count", json!({})).await;
    assert_eq!(count.structured_content.unwrap()["calls"], 0);
    let again = cli.api(&["approvals", "veto", &id]);
    assert_eq!(again.code, Some(1), "{}", again.stderr);
    assert_eq!(
        again.stderr,
        format!("error: approval `{id}` is vetoed, it cannot be vetoed\n")
    );
}

/// Issue 45 (observed: the README's tour could not park a call, so `approvals list` showed
/// none): `warden call` makes a governed call through the server's MCP endpoint as any client
/// does — it parks, executes or is denied (exit status 1) — and needs a running server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warden_call_parks_executes_and_is_denied_as_a_clients_call_is() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let parked = cli
        .api(&["call", "alpha__delete_note", "--args", r#"{"id": 1}"#])
        .ok();
    assert!(
        parked.stdout.starts_with("status:   pending_approval\n"),
        "{}",
        parked.stdout
    );
    let id = parked
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("approval: "))
        .expect("an approval id")
        .to_owned();
    let listed = cli.api(&["approvals", "list", "-o", "json"]).ok().json();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == id.as_str()),
        "{listed}"
    );
    let executed = cli
        .api(&["call", "alpha__list_notes", "-o", "json"])
        .ok()
        .json();
    assert_eq!(
        executed["_meta"]["warden/decision"]["status"], "executed",
        "{executed}"
    );
    let denied = cli.api(&["call", "alpha__nothing_here"]);
    assert_eq!(denied.code, Some(1), "{}", denied.stderr);
    assert!(
        denied.stdout.contains("code:     UNKNOWN_TOOL"),
        "{}",
        denied.stdout
    );
    let bad = cli.api(&["call", "alpha__add_note", "--args", "[1]"]);
    assert_eq!(bad.code, Some(2));
    assert!(
        bad.stderr.contains("--args: must be a JSON object"),
        "{}",
        bad.stderr
    );
    let on_store = cli.store(&["call", "alpha__add_note"]);
    assert_eq!(on_store.code, Some(2), "{}", on_store.stderr);
    assert!(
        on_store.stderr.contains("works through a running server"),
        "{}",
        on_store.stderr
    );
}
