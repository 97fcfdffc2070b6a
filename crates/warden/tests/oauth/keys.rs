//! An issuer's signing keys (AUTH-4, AUTH-5): a rotated key verifies without a restart, a key
//! set that cannot be fetched is an outage (503) rather than a bad token, a slow fetch holds
//! up no token signed with a known key, unknown key ids make Warden fetch a bounded number of
//! times, and an address past its failure limit makes it fetch nothing.

use std::time::Instant;

use super::*;

/// A token of `issuer` for `resource` naming key `kid`, with a signature nothing made.
fn unknown_key(issuer: &str, resource: &str, kid: &str) -> String {
    let now = now().0 / 1000;
    format!(
        "{}.{}.c2lnbmF0dXJl",
        b64(&json!({"alg": "RS256", "typ": "at+jwt", "kid": kid})),
        b64(
            &json!({"iss": issuer, "aud": resource, "iat": now, "exp": now + 3600,
            "client_id": "deploy-pipeline", "scope": "mcp"})
        ),
    )
}

/// How many requests the provider's `/jwks` got, and how many it answered.
async fn jwks(idp: &Provider) -> (u64, u64) {
    let counts = idp.admin("jwks-hits").await;
    (
        counts["hits"].as_u64().unwrap(),
        counts["answered"].as_u64().unwrap(),
    )
}

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

/// Asserts a 429 of the failure limit, whole.
async fn limited(response: reqwest::Response) {
    assert_eq!(response.status(), 429);
    let retry = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        response.text().await.unwrap(),
        format!("too many failed authentications from this address; try again in {retry} s\n")
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_key_fetch_holds_up_no_token_signed_with_a_known_key() {
    let idp = Provider::start(3600);
    let w = TestWarden::start(&config(&idp.issuer)).await;
    let resource = w.mcp();
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", w.base);
    let good = idp.token(&resource, None, "mcp");
    assert_eq!(initialize(&resource, Some(&good)).await.status(), 200);
    // Signed with the same key, never presented yet: it is verified, not remembered.
    let fresh = idp.token(&resource, None, "mcp");
    past_the_refetch_interval().await;
    idp.admin("jwks-slow").await;
    let (asked, answered) = jwks(&idp).await;
    // A token naming a key Warden does not know makes it fetch the keys, which takes 3 s.
    let spawn = |kid: &str| {
        let token = unknown_key(&idp.issuer, &resource, kid);
        let resource = resource.clone();
        tokio::spawn(async move { initialize(&resource, Some(&token)).await })
    };
    let slow = spawn("key-nobody-1");
    while jwks(&idp).await.0 == asked {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Another unknown key meanwhile waits for that fetch instead of starting one…
    let waiting = spawn("key-nobody-2");
    // …and a known key is served while the fetch is still unanswered.
    assert_eq!(initialize(&resource, Some(&fresh)).await.status(), 200);
    assert_eq!(jwks(&idp).await, (asked + 1, answered));
    for (kid, response) in [("key-nobody-1", slow), ("key-nobody-2", waiting)] {
        refused(
            response.await.unwrap(),
            401,
            "invalid_token",
            &format!("issuer `corp` has no signing key `{kid}`"),
            &metadata,
        )
        .await;
    }
    assert_eq!(jwks(&idp).await, (asked + 1, answered + 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_key_ids_fetch_the_keys_a_bounded_number_of_times() {
    let idp = Provider::start(3600);
    let w = TestWarden::start(&config(&idp.issuer)).await;
    let resource = w.mcp();
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", w.base);
    let good = idp.token(&resource, None, "mcp");
    assert_eq!(initialize(&resource, Some(&good)).await.status(), 200);
    let fresh = idp.token(&resource, None, "mcp");
    past_the_refetch_interval().await;
    // 50 tokens naming 50 keys nobody has, at once, from 50 addresses (none reaches its
    // failure limit).
    let (asked, _) = jwks(&idp).await;
    let started = Instant::now();
    let answers = futures::future::join_all((0..50u8).map(|i| {
        let token = unknown_key(&idp.issuer, &resource, &format!("key-nobody-{i}"));
        let resource = resource.clone();
        async move { initialize_by(&from([127, 0, 1, i + 1]), &resource, &token).await }
    }))
    .await;
    let elapsed = started.elapsed();
    for (i, response) in answers.into_iter().enumerate() {
        refused(
            response,
            401,
            "invalid_token",
            &format!("issuer `corp` has no signing key `key-nobody-{i}`"),
            &metadata,
        )
        .await;
    }
    // One fetch at a time, and none within a second of the last.
    let fetches = jwks(&idp).await.0 - asked;
    assert!(
        (1..=1 + elapsed.as_secs()).contains(&fetches),
        "{fetches} fetches in {elapsed:?}"
    );

    // An address past its failure limit makes Warden fetch nothing…
    let limited_address = from([127, 0, 0, 9]);
    for i in 0..warden_server::DEFAULT_FAILURE_LIMIT {
        let bad = format!("wdn_{i:064x}");
        let response = initialize_by(&limited_address, &resource, &bad).await;
        assert_eq!(response.status(), 401);
    }
    past_the_refetch_interval().await;
    let (asked, _) = jwks(&idp).await;
    let unknown = unknown_key(&idp.issuer, &resource, "key-nobody-limited");
    limited(initialize_by(&limited_address, &resource, &unknown).await).await;
    assert_eq!(jwks(&idp).await.0, asked);
    // …and its valid token, signed with a known key, is served (AUTH-5).
    assert_eq!(
        initialize_by(&limited_address, &resource, &fresh)
            .await
            .status(),
        200
    );
}
