//! AUTH-4: a token is for this server only. Its resource URLs come from its own identity (the
//! listener here, `--public-url` behind a proxy), never from the request's `Host`.

use super::*;

/// A 2025-11-25 `initialize` to `url` with `token`, saying it is for `host`.
async fn initialize_as(url: &str, token: &str, host: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .header("host", host)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "warden-tests", "version": "1"}}}))
        .send()
        .await
        .unwrap()
}

/// The `resource` of `/mcp`'s metadata asked for with `host`.
async fn resource_for(w: &TestWarden, host: &str) -> Value {
    let meta: Value = reqwest::Client::new()
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            w.base
        ))
        .header("host", host)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    meta["resource"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_another_resource_on_this_host_is_refused_whatever_host_it_names() {
    let idp = Provider::start(3600);
    let w = TestWarden::start(&config(&idp.issuer)).await;
    let resource = w.mcp();
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", w.base);
    // Another port of this host, its bare origin, its default port: each with a `Host`
    // naming exactly that resource, which the host check lets through (it knows names, not
    // ports).
    for (other, host) in [
        ("http://127.0.0.1:9000/mcp", "127.0.0.1:9000"),
        ("http://127.0.0.1:9000", "127.0.0.1:9000"),
        ("http://127.0.0.1/mcp", "127.0.0.1"),
    ] {
        let token = idp.token(other, None, "mcp");
        refused(
            initialize_as(&resource, &token, host).await,
            401,
            "invalid_token",
            &format!(
                "the access token is for another resource (`aud` is {other}), not for this server"
            ),
            &metadata,
        )
        .await;
        // The metadata names this server whatever `Host` asks for it.
        assert_eq!(resource_for(&w, host).await, resource.as_str(), "{host}");
    }
    // This server's own token works, under either name of its loopback listener, and the
    // metadata asked for under `localhost` names that URL (MCP clients check it against
    // theirs).
    let good = idp.token(&resource, None, "mcp");
    let port = w.addr.port();
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        assert_eq!(
            initialize_as(&resource, &good, &host).await.status(),
            200,
            "{host}"
        );
    }
    assert_eq!(
        resource_for(&w, &format!("localhost:{port}")).await,
        format!("http://localhost:{port}/mcp").as_str()
    );
}
