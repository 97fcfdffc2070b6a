//! Approvals over the API: the arguments to decide on, masked exactly as the audit trail
//! masks them; deciding through the three doors of a parked call.

use serde_json::json;

use crate::common::*;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_shows_the_arguments_to_decide_on_masked_as_the_audit_masks_them() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let alice = w.token("alice", None, None).await;
    let bob = w.token("bob", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let parked = call(
        &client,
        "ledger__echo",
        json!({"text": "refund 42", "api_token": "s3cret"}),
    )
    .await;
    assert_eq!(
        decision(&parked)["status"],
        "pending_approval",
        "{parked:?}"
    );
    let id = decision(&parked)["approvalId"].as_str().unwrap().to_owned();
    let (status, approval) = api.get(&alice, &format!("/api/v1/approvals/{id}")).await;
    assert_eq!(status, 200, "{approval}");
    assert_eq!(approval["status"], "pending");
    assert_eq!(approval["tool"], "ledger__echo");
    assert_eq!(
        approval["arguments"],
        json!({"text": "refund 42", "api_token": "[redacted]"})
    );
    assert!(!approval.to_string().contains("s3cret"));
    // Exactly what the audit trail kept of the call.
    let (_, trail) = api
        .get(&w.admin, "/api/v1/audit?tool=ledger__echo&kind=call")
        .await;
    assert_eq!(
        trail["records"][0]["payload"]["args"],
        approval["arguments"]
    );
    // Listed with them; the requester sees its own, a stranger nothing.
    let (_, listed) = api.get(&bob, "/api/v1/approvals?status=pending").await;
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["arguments"], approval["arguments"]);
    let nobody = nobody(&w).await;
    assert_eq!(
        api.get(&nobody, "/api/v1/approvals").await,
        (200, json!([]))
    );
    assert_eq!(
        api.get(&nobody, &format!("/api/v1/approvals/{id}")).await,
        refusal(404, "NOT_FOUND", &format!("no approval `{id}`"))
    );
    assert_eq!(
        api.get(&bob, "/api/v1/approvals?status=maybe").await,
        refusal(
            400,
            "INVALID_INPUT",
            "`status`: `maybe` is not an approval status; use one of pending, approved, rejected, expired, staged, vetoed, executing, executed, failed"
        )
    );
    // Deciding needs approvals:decide; the approval runs once, with the full arguments it
    // kept, which it then forgets.
    assert_eq!(
        api.post(
            &nobody,
            &format!("/api/v1/approvals/{id}/approve"),
            json!({})
        )
        .await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "deciding approvals needs the `approvals:decide` capability"
        )
    );
    let (status, decided) = api
        .post(
            &bob,
            &format!("/api/v1/approvals/{id}/approve"),
            json!({"reason": "checked"}),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["status"], "executed");
    assert_eq!(decided["reason"], "checked");
    assert_eq!(decided["arguments"], json!(null));
    assert_eq!(decided["result"]["content"][0]["text"], "refund 42");
    let (status, body) = api
        .post(&bob, &format!("/api/v1/approvals/{id}/reject"), json!({}))
        .await;
    assert_eq!(
        (status, body["code"].clone(), body["error"].clone()),
        (
            409,
            json!("CONFLICT"),
            json!(format!(
                "approval `{id}` is executed, it cannot be rejected"
            ))
        )
    );
    let veto = api
        .send(
            reqwest::Method::POST,
            Some(&bob),
            &format!("/api/v1/approvals/{id}/veto"),
            None,
        )
        .await;
    assert_eq!(
        (veto.status, veto.json["code"].clone()),
        (409, json!("CONFLICT")),
        "{}",
        veto.text
    );
    assert_eq!(
        api.post(&bob, "/api/v1/approvals/apr_nothing/approve", json!({}))
            .await,
        refusal(404, "NOT_FOUND", "no approval `apr_nothing`")
    );
    assert_eq!(
        api.post(
            &bob,
            &format!("/api/v1/approvals/{id}/frobnicate"),
            json!({})
        )
        .await,
        refusal(
            404,
            "NOT_FOUND",
            &format!(
                "no admin API route `/api/v1/approvals/{id}/frobnicate`; see /api/v1/openapi.json"
            )
        )
    );
}

/// "Own" approvals are the principal's, read no further than the reading credential could act
/// (docs/approvals.md): a token of the requester whose scopes grant nothing lists none of
/// them, nor reads one, arguments included; one bound to the approval's project does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_reads_its_owners_approvals_only_as_far_as_its_own_scopes_reach() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let parked = call(&client, "ledger__echo", json!({"text": "refund 42"})).await;
    let id = decision(&parked)["approvalId"].as_str().unwrap().to_owned();
    let nothing = w.token("alice", None, Some(&["nothing:at-all"])).await;
    assert_eq!(
        api.get(&nothing, "/api/v1/approvals").await,
        (200, json!([]))
    );
    assert_eq!(
        api.get(&nothing, &format!("/api/v1/approvals/{id}")).await,
        refusal(404, "NOT_FOUND", &format!("no approval `{id}`"))
    );
    let elsewhere = w.token("alice", None, Some(&["ledger:write"])).await;
    assert_eq!(
        api.get(&elsewhere, "/api/v1/approvals").await,
        (200, json!([]))
    );
    for reader in [
        w.token("alice", Some(&["payments"]), None).await,
        w.token("alice", None, Some(&["run:projects:payments"]))
            .await,
    ] {
        let (status, listed) = api.get(&reader, "/api/v1/approvals").await;
        assert_eq!(
            (status, listed[0]["id"].clone()),
            (200, json!(id)),
            "{listed}"
        );
        assert_eq!(
            api.get(&reader, &format!("/api/v1/approvals/{id}")).await.0,
            200
        );
    }
}
