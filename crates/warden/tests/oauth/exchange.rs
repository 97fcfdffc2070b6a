//! Acting as the caller at an upstream (AUTH-6): the caller's access token is exchanged at the
//! provider (RFC 8693, the grant `tests/oidc/provider.mjs` registers) for a token of the
//! upstream's audience, kept for the next calls, and sent as the bearer; a caller with no such
//! token is refused, and the audit names subject and actors.

use warden_testkit::notes::{NotesServer, Seen, spawn_http_seen};

use super::*;

/// The claims of a JWT, unverified.
fn claims(token: &str) -> Value {
    unb64(token.split('.').nth(1).unwrap())
}

/// The bearer tokens of the upstream's `tools/call` requests, in order.
fn bearers(seen: &Seen) -> Vec<String> {
    seen.values("tools/call", "authorization")
        .into_iter()
        .map(|v| {
            v.expect("a call acting as its caller carries a bearer")
                .strip_prefix("Bearer ")
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn acting_config(issuer: &str, upstream: &str) -> String {
    format!(
        r#"
kind: Project
name: ledger
---
kind: Role
name: ledger-runner
permissions: ["run:projects:ledger"]
---
kind: RoleBinding
name: dev-runs
role: ledger-runner
subject: {{ group: dev }}
---
kind: Issuer
name: corp
issuer: "{issuer}"
claims: {{ user: sub, groups: groups }}
autoCreateUsers: true
exchange: {{ clientId: warden, clientSecret: "${{secret:corp-exchange}}" }}
---
kind: Upstream
name: ledger
project: ledger
http: {{ url: "{upstream}" }}
auth: {{ exchange: {{ issuer: corp, audience: "{upstream}", scopes: [tools:call] }} }}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_acting_as_the_caller_gets_the_callers_exchanged_token() {
    let idp = Provider::start(3600);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (addr, seen) = spawn_http_seen(
        NotesServer::new(None),
        "127.0.0.1:0".parse().unwrap(),
        shutdown.clone(),
    )
    .await
    .unwrap();
    let upstream = format!("http://{addr}/mcp");
    let w = TestWarden::start(&acting_config(&idp.issuer, &upstream)).await;
    w.gateway
        .upstreams()
        .secrets()
        .put("corp-exchange", "warden-exchange-secret")
        .unwrap();
    let alice = idp.token(&w.mcp(), Some("alice"), "mcp");
    let client = http_client(&w.mcp(), &alice, Era::Stateless).await;
    let first = call(&client, "ledger__echo", json!({"text": "one"})).await;
    assert_eq!(decision(&first)["status"], "executed", "{first:?}");
    // The upstream got a token of its own audience for alice, minted for Warden's client —
    // not alice's token, which is Warden's.
    let sent = bearers(&seen);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_ne!(sent[0], alice);
    let got = claims(&sent[0]);
    assert_eq!(got["aud"], upstream.as_str(), "{got}");
    assert_eq!(got["sub"], "alice", "{got}");
    assert_eq!(got["act"]["sub"], "warden", "{got}");
    assert_eq!(got["iss"], idp.issuer.as_str(), "{got}");
    assert_eq!(claims(&alice)["aud"], w.mcp().as_str());
    // The next calls reuse the token, also from alice's 2025-11-25 session.
    let again = call(&client, "ledger__echo", json!({"text": "two"})).await;
    assert_eq!(decision(&again)["status"], "executed");
    let session = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let third = call(&session, "ledger__echo", json!({"text": "three"})).await;
    assert_eq!(decision(&third)["status"], "executed", "{third:?}");
    let sent = bearers(&seen);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent.iter().all(|t| *t == sent[0]), "one token reused");
    assert_eq!(idp.admin("exchanges").await["exchanges"], 1);
    assert_eq!(w.gateway.upstreams().exchanges_made(), 1);

    // A Warden token has no user of the issuer to act for: refused, and the upstream is not
    // asked.
    let admin = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    let refused = call(&admin, "ledger__echo", json!({"text": "shared key?"})).await;
    let d = decision(&refused);
    assert_eq!(
        (d["status"].as_str(), d["code"].as_str()),
        (Some("denied"), Some("CAPABILITY")),
        "{d}"
    );
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("ledger__echo") && message.contains("issuer `corp`"),
        "{message}"
    );
    assert_eq!(bearers(&seen).len(), 3, "the upstream was not asked");

    // The audit names whom the call acted for and who acted.
    let records = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            tool: Some("ledger__echo".into()),
            kind: Some("call".into()),
            principal: Some("user:alice".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(records.len(), 3);
    let payload: Value = serde_json::from_str(&records[0].record.payload).unwrap();
    assert_eq!(
        payload["on_behalf_of"],
        json!({"actor": [{"client": "warden"}], "issuer": "corp", "subject": "user:alice"}),
        "{payload}"
    );

    // The issuer refuses: the call is unavailable, naming the issuer and its reason; alice's
    // kept token still serves her.
    idp.admin("exchange-refuse").await;
    let carol = idp.token(&w.mcp(), Some("carol"), "mcp");
    let carols = http_client(&w.mcp(), &carol, Era::Stateless).await;
    let failed = call(&carols, "ledger__echo", json!({"text": "four"})).await;
    let d = decision(&failed);
    assert_eq!(
        (d["status"].as_str(), d["code"].as_str()),
        (Some("denied"), Some("UNAVAILABLE")),
        "{d}"
    );
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("issuer `corp`") && message.contains("invalid_grant"),
        "{message}"
    );
    let fifth = call(&client, "ledger__echo", json!({"text": "five"})).await;
    assert_eq!(decision(&fifth)["status"], "executed");
    assert_eq!(bearers(&seen).len(), 4);
    shutdown.cancel();
}
