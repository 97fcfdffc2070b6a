//! An issuer's signing keys (AUTH-4, AUTH-5): a rotated key verifies without a restart, and a
//! key set that cannot be fetched is an outage (503) rather than a bad token.

use super::*;

/// Past the interval within which Warden does not fetch an issuer's keys again.
async fn past_the_refetch_interval() {
    tokio::time::sleep(Duration::from_millis(1100)).await;
}

/// A 2025-11-25 `initialize` POSTed by `client`.
async fn initialize_by(client: &reqwest::Client, url: &str, token: &str) -> reqwest::Response {
    client
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "warden-tests", "version": "1"}}}))
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_that_cannot_be_fetched_are_an_outage_not_a_bad_token() {
    let idp = Provider::start(3600);
    let w = TestWarden::start(&config(&idp.issuer)).await;
    let resource = w.mcp();
    let good = idp.token(&resource, None, "mcp");
    assert_eq!(initialize(&resource, Some(&good)).await.status(), 200);
    // The key set cannot be fetched, and the issuer signs with a new key.
    idp.admin("jwks-down").await;
    idp.admin("rotate-keys").await;
    let rotated = idp.token(&resource, None, "mcp");
    past_the_refetch_interval().await;
    // Unavailable, with when to try again, as many times as it is asked: nothing is served
    // (fail closed), and nothing counts as a failed authentication of the address.
    let one = from([127, 0, 0, 5]);
    for _ in 0..warden_server::DEFAULT_FAILURE_LIMIT + 10 {
        let response = initialize_by(&one, &resource, &rotated).await;
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()["retry-after"], "5");
        assert_eq!(response.headers().get("www-authenticate"), None);
        assert_eq!(
            response.text().await.unwrap(),
            format!(
                "the signing keys of issuer `corp` cannot be fetched (GET {}/jwks answered 503 Service Unavailable): tokens cannot be verified now; try again shortly\n",
                idp.issuer
            )
        );
    }
    let bad = format!("wdn_{}", "0".repeat(64));
    let told = initialize_by(&one, &resource, &bad).await;
    assert_eq!(told.status(), 401, "{}", told.text().await.unwrap());
    // The token verified before is still served meanwhile.
    assert_eq!(initialize_by(&one, &resource, &good).await.status(), 200);
    // Once the keys can be fetched, the rotated key verifies without a restart.
    idp.admin("jwks-up").await;
    past_the_refetch_interval().await;
    assert_eq!(initialize_by(&one, &resource, &rotated).await.status(), 200);
}
