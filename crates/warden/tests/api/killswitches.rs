//! Kill switches over the API: pulled, they stop the next call of a client already
//! connected (RUN-8); released, calls pass again.

use serde_json::json;

use crate::common::*;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_switch_pulled_over_http_stops_a_connected_clients_next_call_until_released() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let add = json!({"a": 1, "b": 2});
    assert_eq!(
        decision(&call(&client, "ledger__add", add.clone()).await)["status"],
        "executed"
    );
    let (status, pulled) = api
        .post(
            &w.admin,
            "/api/v1/killswitches",
            json!({"scope": {"tool": "ledger__add"}, "reason": "incident 4411"}),
        )
        .await;
    assert_eq!(status, 201, "{pulled}");
    assert_eq!(pulled["key"], "tool:ledger__add");
    assert_eq!(pulled["scope"], "tool:ledger__add");
    assert_eq!(
        pulled["resource"],
        json!({"kind": "KillSwitch", "scope": {"tool": "ledger__add"}, "reason": "incident 4411"})
    );
    // The same session's next call is refused, with nothing written (GOV-2 step 1).
    let refused = call(&client, "ledger__add", add.clone()).await;
    assert_eq!(decision(&refused)["code"], "KILL_SWITCH", "{refused:?}");
    assert_eq!(refused.is_error, Some(true));
    let (status, listed) = api.get(&w.admin, "/api/v1/killswitches").await;
    assert_eq!(status, 200);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["reason"], "incident 4411");
    assert!(listed[0].get("revision").is_none());
    // Pulled again with the same key: replaced, not added.
    let (status, _) = api
        .post(
            &w.admin,
            "/api/v1/killswitches",
            json!({"scope": {"tool": "ledger__add"}, "reason": "still on"}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, released) = api
        .delete(&w.admin, "/api/v1/killswitches/tool:ledger__add")
        .await;
    assert_eq!(status, 200, "{released}");
    assert_eq!(released["key"], "tool:ledger__add");
    assert_eq!(
        decision(&call(&client, "ledger__add", add).await)["status"],
        "executed"
    );
    assert_eq!(api.get(&w.admin, "/api/v1/killswitches").await.1, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_kill_switch_names_the_field_and_pulling_one_needs_killswitches_write() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let before = w.store.store.revision().await.unwrap();
    let (status, body) = api
        .post(
            &w.admin,
            "/api/v1/killswitches",
            json!({"scope": {"tol": "x"}, "reason": "r"}),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("INVALID_CONFIG"))
    );
    assert_eq!(body["errors"][0]["field"], "scope", "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("body (document 1): KillSwitch: field `scope`: "),
        "{body}"
    );
    let (status, body) = api
        .post(
            &w.admin,
            "/api/v1/killswitches",
            json!({"scope": {"project": "nowhere"}, "reason": "r"}),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (422, json!("CONFIG_REJECTED"))
    );
    assert!(
        body["error"].as_str().unwrap().contains("nowhere"),
        "{body}"
    );
    assert_eq!(w.store.store.revision().await.unwrap(), before);
    assert_eq!(
        api.delete(&w.admin, "/api/v1/killswitches/all").await,
        refusal(404, "NOT_FOUND", "no KillSwitch named `all`")
    );
    let nobody = nobody(&w).await;
    assert_eq!(
        api.post(
            &nobody,
            "/api/v1/killswitches",
            json!({"scope": {"all": true}, "reason": "r"})
        )
        .await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "pulling a kill switch needs the `killswitches:write` capability"
        )
    );
    assert_eq!(
        api.get(&nobody, "/api/v1/killswitches").await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "listing kill switches needs the `config:read` capability"
        )
    );
}
