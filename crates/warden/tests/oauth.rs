//! Warden as an OAuth 2.1 resource server (AUTH-4, AUTH-5), against a real OpenID provider
//! started by the test (`oidc-provider`, tests/oidc/): RFC 9728 metadata and challenges, the
//! official SDK clients signing in (TypeScript: authorization code + PKCE, driven through the
//! login pages; Python: client credentials mapped to a service account), every refusal with
//! its status and `WWW-Authenticate`, key rotation without a restart, live re-evaluation
//! (RUN-8) and the per-address limit of failed authentications.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

#[path = "oauth/audience.rs"]
mod audience;
mod common;
#[path = "oauth/exchange.rs"]
mod exchange;
#[path = "oauth/keys.rs"]
mod keys;

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A provider process (`tests/oidc/run.sh`), killed when dropped.
struct Provider {
    child: std::process::Child,
    issuer: String,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Provider {
    /// Starts a provider whose access tokens live `ttl` seconds. When it does not start, the
    /// panic carries what it said on stderr.
    fn start(ttl: u64) -> Self {
        let mut child = Command::new("bash")
            .arg(repo().join("tests/oidc/run.sh"))
            .env("PORT", "0")
            .env("ACCESS_TOKEN_TTL", ttl.to_string())
            .env(
                "NODE22_PREFIX",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("node22"),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tests/oidc/run.sh");
        // Read all along, so that the provider never blocks on a full pipe.
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let said = std::thread::spawn(move || {
            let mut said = String::new();
            for line in stderr.lines().map_while(Result::ok) {
                if said.len() < 64 * 1024 {
                    said.push_str(&line);
                    said.push('\n');
                }
            }
            said
        });
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(issuer) = line.trim().strip_prefix("issuer: ").map(str::to_owned) else {
            let _ = child.kill();
            let status = child.wait().unwrap();
            panic!(
                "tests/oidc/run.sh did not start the provider ({status}); it printed {line:?} and on stderr:\n{}",
                said.join().unwrap()
            );
        };
        Self { child, issuer }
    }

    /// An access token for `resource` (`tests/oidc/token.mjs`): of a user signed in through
    /// the login pages, or (`login` = None) of the client-credentials client.
    fn token(&self, resource: &str, login: Option<&str>, scope: &str) -> String {
        let mut cmd = Command::new("node");
        cmd.arg(repo().join("tests/oidc/token.mjs")).args([
            &self.issuer,
            resource,
            "--scope",
            scope,
        ]);
        match login {
            Some(l) => cmd.args(["--login", l]),
            None => cmd.args(["--client", "deploy-pipeline:deploy-secret"]),
        };
        let out = cmd.output().expect("run tests/oidc/token.mjs");
        assert!(
            out.status.success(),
            "token.mjs: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    async fn admin(&self, what: &str) -> Value {
        reqwest::Client::new()
            .post(format!("{}/admin/{what}", self.issuer))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

fn issuer_yaml(name: &str, issuer: &str, extra: &str) -> String {
    format!(
        "kind: Issuer\nname: {name}\nissuer: \"{issuer}\"\nclaims: {{ user: sub, groups: groups }}\nclients: {{ deploy-pipeline: deploy-bot }}\n{extra}"
    )
}

fn config(issuer: &str) -> String {
    format!(
        r#"
kind: ServiceAccount
name: deploy-bot
---
kind: Role
name: demo-runner
permissions: ["run:projects:demo"]
---
kind: RoleBinding
name: deploy-bot-runs
role: demo-runner
subject: {{ serviceAccount: deploy-bot }}
---
kind: RoleBinding
name: sre-runs
role: demo-runner
subject: {{ group: sre }}
---
kind: Project
name: demo
---
{notes}
---
{issuer}
"#,
        notes = stdio_upstream("notes", "demo", ""),
        issuer = issuer_yaml("corp", issuer, "autoCreateUsers: true"),
    )
}

async fn apply(w: &TestWarden, yaml: &str) {
    let docs = warden_core::config::parse_documents("t.yaml", yaml).unwrap();
    w.store
        .store
        .apply(docs, "test", now())
        .await
        .unwrap()
        .unwrap();
    w.settle().await;
}

/// A 2025-11-25 `initialize` POSTed to `url`, with `token` if any.
async fn initialize(url: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "warden-tests", "version": "1"}}}));
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    request.send().await.unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// Asserts a refusal: its status, and its whole reason in the body and in the challenge
/// that points to `metadata`.
async fn refused(
    response: reqwest::Response,
    status: u16,
    error: &str,
    reason: &str,
    metadata: &str,
) {
    let got = response.status().as_u16();
    let header = challenge(&response);
    let body = response.text().await.unwrap();
    assert_eq!(
        (got, body.as_str()),
        (status, format!("{reason}\n").as_str())
    );
    let description: String = reason.chars().filter(|c| *c != '"' && *c != '\\').collect();
    assert_eq!(
        header,
        format!(
            "Bearer realm=\"warden\", resource_metadata=\"{metadata}\", scope=\"mcp\", error=\"{error}\", error_description=\"{description}\""
        )
    );
}

/// The value of a counter in `/metrics` (0 while it has no series).
async fn counter(w: &TestWarden, series: &str) -> u64 {
    let text = reqwest::get(format!("{}/metrics", w.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0, |v| v.parse().unwrap())
}

/// A client whose requests come from `ip` (any 127.0.0.0/8 address is this host's).
fn from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(ip))
        .build()
        .unwrap()
}

fn b64(v: &Value) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

fn unb64(part: &str) -> Value {
    use base64::Engine as _;
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap(),
    )
    .unwrap()
}

/// Node ≥ 22 for the provider, the Python venv for the SDK (shared with tests/interop.rs).
fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-venv");
    let status = Command::new("bash")
        .arg(repo().join("tests/interop/venv.sh"))
        .arg(&venv)
        .status()
        .unwrap();
    assert!(status.success(), "tests/interop/venv.sh failed");
    venv.join("bin/python")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_names_the_issuers_and_every_refusal_says_why() {
    let idp = Provider::start(3600);
    let w = TestWarden::start("").await;
    // Without an issuer there is nothing to sign in with: no metadata, no pointer to it.
    let meta = reqwest::get(format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        w.base
    ))
    .await
    .unwrap();
    assert_eq!(meta.status(), 404);
    let bare = initialize(&w.mcp(), None).await;
    assert_eq!(bare.status(), 401);
    assert_eq!(challenge(&bare), "Bearer realm=\"warden\"");

    apply(&w, &config(&idp.issuer)).await;
    apply(&w, "kind: Agent\nname: sre-bot\nmemberships: [demo]\n").await;
    let resource = w.mcp();
    let agent = format!("{}/mcp/agents/sre-bot", w.base);
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", w.base);
    for (path, expected) in [
        ("", w.base.clone()),
        ("/mcp", resource.clone()),
        ("/mcp/agents/sre-bot", agent.clone()),
    ] {
        let meta: Value = reqwest::get(format!(
            "{}/.well-known/oauth-protected-resource{path}",
            w.base
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        assert_eq!(meta["resource"], expected.as_str());
        assert_eq!(meta["authorization_servers"], json!([idp.issuer]));
        assert_eq!(meta["scopes_supported"], json!(["mcp"]));
    }
    let unknown = reqwest::get(format!(
        "{}/.well-known/oauth-protected-resource/mcp/agents/nobody",
        w.base
    ))
    .await
    .unwrap();
    assert_eq!(unknown.status(), 404);

    // No token: the challenge points to the metadata of exactly this resource, an agent's
    // endpoint to its own, whose `resource` is that endpoint.
    let bare = initialize(&resource, None).await;
    assert_eq!(bare.status(), 401);
    assert_eq!(
        challenge(&bare),
        format!("Bearer realm=\"warden\", resource_metadata=\"{metadata}\", scope=\"mcp\"")
    );
    let bare = initialize(&agent, None).await;
    assert_eq!(bare.status(), 401);
    let agent_metadata = format!(
        "{}/.well-known/oauth-protected-resource/mcp/agents/sre-bot",
        w.base
    );
    assert_eq!(
        challenge(&bare),
        format!("Bearer realm=\"warden\", resource_metadata=\"{agent_metadata}\", scope=\"mcp\"")
    );
    let meta: Value = reqwest::get(&agent_metadata)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(meta["resource"], agent.as_str());
    // A token for the agent's endpoint opens a run there.
    let for_agent = idp.token(&agent, None, "mcp");
    assert_eq!(initialize(&agent, Some(&for_agent)).await.status(), 200);

    let good = idp.token(&resource, None, "mcp");
    assert_eq!(initialize(&resource, Some(&good)).await.status(), 200);

    // A token minted for another resource (RFC 8707).
    let other = idp.token("http://127.0.0.1:9/mcp", None, "mcp");
    let failures = "warden_auth_failures_total{reason=\"invalid access token\"}";
    let failed = counter(&w, failures).await;
    refused(
        initialize(&resource, Some(&other)).await,
        401,
        "invalid_token",
        "the access token is for another resource (`aud` is http://127.0.0.1:9/mcp), not for this server",
        &metadata,
    )
    .await;
    // Counted as a failed authentication.
    assert!(counter(&w, failures).await > failed);

    // A bad signature: the payload changed after signing.
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    let mut sig = parts[2].clone().into_bytes();
    sig[10] = if sig[10] == b'A' { b'B' } else { b'A' };
    parts[2] = String::from_utf8(sig).unwrap();
    refused(
        initialize(&resource, Some(&parts.join("."))).await,
        401,
        "invalid_token",
        "the access token's signature does not verify",
        &metadata,
    )
    .await;

    // `alg: none`, and an HMAC algorithm (the public key as a shared secret).
    let payload = good.split('.').nth(1).unwrap();
    for alg in ["none", "HS256"] {
        let forged = format!("{}.{payload}.", b64(&json!({"alg": alg, "typ": "JWT"})));
        refused(
            initialize(&resource, Some(&forged)).await,
            401,
            "invalid_token",
            &format!("algorithm `{alg}` is not accepted for issuer `corp` (accepted: RS256, ES256, EdDSA)"),
            &metadata,
        )
        .await;
    }

    // A token of another kind than an access token (RFC 9068 `typ`) is refused for it, before
    // its signature is looked at; the provider's access tokens say `at+jwt`.
    let header: Value = unb64(good.split('.').next().unwrap());
    assert_eq!(header["typ"], "at+jwt");
    let mut header = header;
    header["typ"] = json!("logout+jwt");
    let retyped = format!(
        "{}.{payload}.{}",
        b64(&header),
        good.split('.').nth(2).unwrap()
    );
    refused(
        initialize(&resource, Some(&retyped)).await,
        401,
        "invalid_token",
        "the token is not an access token (`typ` is `logout+jwt`)",
        &metadata,
    )
    .await;

    // An issuer that is not configured.
    let stranger = Provider::start(3600);
    let foreign = stranger.token(&resource, None, "mcp");
    refused(
        initialize(&resource, Some(&foreign)).await,
        401,
        "invalid_token",
        &format!("issuer `{}` is not configured", stranger.issuer),
        &metadata,
    )
    .await;

    // No scope Warden understands: 403 naming the scope to ask for, counted by its reason.
    let narrow = idp.token(&resource, None, "tools:read");
    // No other test of this binary is refused for its scope.
    let scope_failures = "warden_auth_failures_total{reason=\"insufficient scope\"}";
    let failed = counter(&w, scope_failures).await;
    refused(
        initialize(&resource, Some(&narrow)).await,
        403,
        "insufficient_scope",
        "the token carries no scope Warden understands: ask the issuer for scope `mcp` (or `mcp:<capability>`)",
        &metadata,
    )
    .await;
    assert_eq!(counter(&w, scope_failures).await, failed + 1);

    // An expired token, presented for the first time or on a session it opened (RUN-8): a
    // second issuer whose tokens live one second, with no clock skew allowed.
    let brief = Provider::start(1);
    apply(&w, &issuer_yaml("brief", &brief.issuer, "clockSkew: 0s")).await;
    let unused = brief.token(&resource, None, "mcp");
    let short = brief.token(&resource, None, "mcp");
    let session = open_session(&w, &short).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    refused(
        initialize(&resource, Some(&unused)).await,
        401,
        "invalid_token",
        "the access token expired",
        &metadata,
    )
    .await;
    let on_session = reqwest::Client::new()
        .post(&resource)
        .bearer_auth(&short)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &session)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    refused(
        on_session,
        401,
        "invalid_token",
        "the access token expired",
        &metadata,
    )
    .await;

    // Access tokens are for the MCP endpoints; the admin API takes Warden's tokens.
    let api = reqwest::Client::new()
        .get(format!("{}/api/v1/runs", w.base))
        .bearer_auth(&good)
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_claims_bind_roles_and_are_reevaluated_on_every_call() {
    let idp = Provider::start(3600);
    let w = TestWarden::start(&config(&idp.issuer)).await;
    let resource = w.mcp();
    // sre-alice is in group `sre` (bound to `demo-runner`); she is created on first sight.
    let alice = idp.token(&resource, Some("sre-alice"), "mcp");
    let client = http_client(&resource, &alice, Era::Stateless).await;
    let names = tool_names(&client).await;
    assert!(names.contains(&"notes__list_notes".to_owned()), "{names:?}");
    let who = call(&client, "warden__whoami", json!({})).await;
    let who: Value = serde_json::from_str(&who.content[0].as_text().unwrap().text).unwrap();
    let who = &who["data"];
    assert_eq!(who["principal"], "user:sre-alice");
    assert_eq!(who["credential"], "jwt:corp:user:sre-alice");
    let (config, _) = w.store.store.load_config().await.unwrap();
    assert!(
        config.contains(warden_core::config::Kind::User, "sre-alice"),
        "created on first sight"
    );
    // The same token on a 2025-11-25 session, open across the change below.
    let session = http_client(&resource, &alice, Era::Sessions).await;
    assert_eq!(tool_names(&session).await, names);
    // bob is in `dev`: no binding, no tools.
    let bob = idp.token(&resource, Some("bob"), "mcp");
    let bobs = http_client(&resource, &bob, Era::Stateless).await;
    assert!(
        !tool_names(&bobs)
            .await
            .iter()
            .any(|t| t.starts_with("notes__"))
    );
    // A scope narrows like a token's scopes (AUTH-2): `mcp:run:projects:ops` holds nothing of
    // `demo`, whatever its user may do; `mcp:run:projects:demo` holds all of it.
    let elsewhere = idp.token(&resource, Some("sre-alice"), "mcp:run:projects:ops");
    let elsewhere = http_client(&resource, &elsewhere, Era::Stateless).await;
    let visible = tool_names(&elsewhere).await;
    assert!(
        !visible.iter().any(|t| t.starts_with("notes__")),
        "{visible:?}"
    );
    let denied = call(&elsewhere, "notes__list_notes", json!({})).await;
    assert_unknown(&denied, "notes__list_notes");
    let bot = idp.token(&resource, None, "mcp:run:projects:demo");
    let bots = http_client(&resource, &bot, Era::Stateless).await;
    assert!(
        tool_names(&bots)
            .await
            .contains(&"notes__list_notes".to_owned())
    );
    // The group loses its binding: alice loses the tools at her next call, same token,
    // stateless or on her open session (RUN-8).
    w.store
        .store
        .delete(
            warden_core::config::Kind::RoleBinding,
            "sre-runs",
            "test",
            now(),
        )
        .await
        .unwrap()
        .unwrap();
    w.settle().await;
    for client in [&client, &session] {
        let names = tool_names(client).await;
        assert!(!names.iter().any(|t| t.starts_with("notes__")), "{names:?}");
    }
    let denied = call(&session, "notes__list_notes", json!({})).await;
    assert_unknown(&denied, "notes__list_notes");
}

/// A call refused as for a tool that does not exist (RUN-6).
fn assert_unknown(result: &rmcp::model::CallToolResult, tool: &str) {
    let d = decision(result);
    assert_eq!(
        (
            d["status"].as_str(),
            d["code"].as_str(),
            d["message"].as_str()
        ),
        (
            Some("denied"),
            Some("UNKNOWN_TOOL"),
            Some(format!("unknown tool `{tool}`").as_str())
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_sign_in_through_the_provider() {
    let idp = Provider::start(3600);
    let w = TestWarden::start(&config(&idp.issuer)).await;
    let python = python();
    let out = Command::new(python)
        .arg(repo().join("tests/interop/python/oauth.py"))
        .env("WARDEN_URL", w.mcp())
        .env("OIDC_ISSUER", &idp.issuer)
        .env("OIDC_CLIENT_ID", "deploy-pipeline")
        .env("OIDC_CLIENT_SECRET", "deploy-secret")
        .env("EXPECT_PRINCIPAL", "serviceAccount:deploy-bot")
        .env("EXPECT_TOOL", "notes__list_notes")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python oauth.py:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 4, "{stdout}");

    let ts = repo().join("tests/interop/ts");
    if !ts.join("node_modules/@modelcontextprotocol/sdk").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&ts)
            .status()
            .unwrap();
        assert!(status.success(), "npm ci in tests/interop/ts");
    }
    let out = Command::new("node")
        .arg(ts.join("oauth.mjs"))
        .env("WARDEN_URL", w.mcp())
        .env("OIDC_LOGIN", "sre-alice")
        .env("EXPECT_PRINCIPAL", "user:sre-alice")
        .env("EXPECT_TOOL", "notes__list_notes")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node oauth.mjs:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 6, "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_bad_credentials_are_limited_per_address() {
    let idp = Provider::start(3600);
    let w = TestWarden::start(&config(&idp.issuer)).await;
    let resource = w.mcp();
    let good = idp.token(&resource, None, "mcp");
    let forged = format!("{}.x", &good[..good.rfind('.').unwrap()]);
    let one = from([127, 0, 0, 1]);
    let mut statuses = std::collections::BTreeMap::<u16, u32>::new();
    let mut retry_after = None;
    for i in 0..1000 {
        // Bad access tokens and bad Warden tokens alike.
        let bad = if i % 2 == 0 {
            forged.clone()
        } else {
            format!("wdn_{:064x}", i)
        };
        let response = one
            .post(&resource)
            .bearer_auth(&bad)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .send()
            .await
            .unwrap();
        if response.status() == 429 {
            retry_after = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
        }
        *statuses.entry(response.status().as_u16()).or_default() += 1;
    }
    assert_eq!(
        statuses,
        [
            (401, warden_server::DEFAULT_FAILURE_LIMIT),
            (429, 1000 - warden_server::DEFAULT_FAILURE_LIMIT)
        ]
        .into_iter()
        .collect()
    );
    assert!(
        retry_after.is_some_and(|s| (1..=60).contains(&s)),
        "{retry_after:?}"
    );
    // The limited address's valid credential still works (AUTH-5)…
    assert_eq!(initialize(&resource, Some(&good)).await.status(), 200);
    // …and another address is unaffected: its bad credential is told 401, not 429.
    let two = from([127, 0, 0, 2]);
    let other = two
        .post(&resource)
        .bearer_auth(&forged)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 401);
}
