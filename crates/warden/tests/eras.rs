//! Both protocol eras in every pairing of client and upstream (XPORT-2, XPORT-4): Warden speaks
//! the client's era exactly, whatever era the upstream speaks.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use common::*;
use serde_json::{Value, json};

/// One JSON-RPC request over HTTP in `version`'s era (on `session` for 2025-11-25); its result.
async fn request(
    w: &TestWarden,
    version: &str,
    session: Option<&str>,
    method: &str,
    name: &str,
    params: Value,
) -> Value {
    let answer = answer(w, version, session, method, name, params).await;
    answer
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{method}: no result: {answer}"))
}

/// One JSON-RPC request over HTTP in `version`'s era (on `session` for 2025-11-25); the answer.
async fn answer(
    w: &TestWarden,
    version: &str,
    session: Option<&str>,
    method: &str,
    name: &str,
    params: Value,
) -> Value {
    answer_as(w, version, session, json!({}), method, name, params).await
}

/// [`answer`] from a client with `capabilities` (a 2026-07-28 request declares them).
async fn answer_as(
    w: &TestWarden,
    version: &str,
    session: Option<&str>,
    capabilities: Value,
    method: &str,
    name: &str,
    mut params: Value,
) -> Value {
    if version == "2026-07-28" {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "eras", "version": "1"}
        });
    }
    warden_mcp::http_client::install_tls();
    let mut request = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(&w.admin)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .header("mcp-method", method)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}));
    if !name.is_empty() {
        request = request.header("mcp-name", name);
    }
    if let Some(s) = session {
        request = request.header("mcp-session-id", s);
    }
    last_message(&request.send().await.unwrap().text().await.unwrap())
}

/// A Warden in front of the notes fixture (upstream `alpha`, `extra` added to its resource),
/// and a 2025-11-25 session open on it as the admin.
async fn notes_warden(extra: &str) -> (TestWarden, String) {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", extra)
    ))
    .await;
    let legacy = open_session(&w, &w.admin).await;
    (w, legacy)
}

/// Results passed through from an upstream carry `resultType` for a 2026-07-28 client — also
/// from a 2025-11-25-only upstream, which sends none (the official Python SDK and the
/// Inspector reject a result without it) — and none for a 2025-11-25 client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passed_through_results_carry_result_type_exactly_for_2026_clients() {
    // An upstream that speaks 2025-11-25 only, and one that speaks both eras.
    for upstream in ["protocol: \"2025-11-25\"\n", ""] {
        let (w, legacy) = notes_warden(upstream).await;
        let requests = [
            (
                "tools/call",
                "alpha__echo",
                json!({"name": "alpha__echo", "arguments": {"text": "x"}}),
            ),
            (
                "prompts/get",
                "alpha__summarize",
                json!({"name": "alpha__summarize"}),
            ),
            (
                "resources/read",
                "notes://all",
                json!({"uri": "notes://all"}),
            ),
        ];
        for (method, name, params) in requests {
            let modern = request(&w, "2026-07-28", None, method, name, params.clone()).await;
            assert_eq!(
                modern["resultType"], "complete",
                "{method} for a 2026-07-28 client, upstream `{upstream}`: {modern}"
            );
            let old = request(&w, "2025-11-25", Some(&legacy), method, name, params).await;
            assert!(
                old.get("resultType").is_none(),
                "{method} for a 2025-11-25 client, upstream `{upstream}`: {old}"
            );
        }
    }
}

/// What an upstream advertises of a tool beyond Warden's business — `_meta` (MCP Apps' `ui`)
/// — reaches clients of both eras unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_meta_passes_through_in_both_eras() {
    let (w, legacy) = notes_warden("").await;
    for (version, session) in [("2026-07-28", None), ("2025-11-25", Some(legacy.as_str()))] {
        let list = request(&w, version, session, "tools/list", "", json!({})).await;
        let echo = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "alpha__echo")
            .unwrap_or_else(|| panic!("{version}: no alpha__echo in {list}"));
        assert_eq!(
            echo["_meta"]["ui"]["resourceUri"], "ui://notes/echo",
            "{version}: {echo}"
        );
    }
}

/// Reading a resource nobody offers is invalid params naming the URI in `data.uri`
/// (SEP-2164), in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_resource_is_invalid_params_naming_its_uri() {
    let (w, legacy) = notes_warden("").await;
    let uri = "test://nonexistent-resource";
    for (version, session) in [("2026-07-28", None), ("2025-11-25", Some(legacy.as_str()))] {
        let a = answer(
            &w,
            version,
            session,
            "resources/read",
            uri,
            json!({"uri": uri}),
        )
        .await;
        assert_eq!(a["error"]["code"], -32602, "{version}: {a}");
        assert_eq!(a["error"]["data"]["uri"], uri, "{version}: {a}");
    }
}

/// A 2025-11-25 client that passes on the URIs of `notifications/resources/updated`.
#[derive(Clone)]
struct Updates(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _ctx: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_subscriptions_work_in_every_pairing_of_eras() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::time::Duration;
    // Upstream unpinned (the stdio fixture speaks 2026-07-28) and pinned to 2025-11-25; the
    // client subscribes in its era, a note is added, the client hears of `notes://all`.
    let policy = "---\nkind: ToolPolicy\nname: add\nproject: alpha\ntool: alpha__add_note\nclass: mutation\n";
    for upstream in ["", "protocol: \"2025-11-25\"\n"] {
        let (w, _session) = notes_warden(&format!("{upstream}{policy}")).await;
        let add = |text: &str| json!({"text": text});
        // 2025-11-25: resources/subscribe on a session.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let config =
            StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(w.admin.clone());
        let session = Updates(tx)
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .unwrap();
        #[allow(deprecated, reason = "resources/subscribe is the 2025-11-25 way")]
        session
            .subscribe(rmcp::model::SubscribeRequestParams::new("notes://all"))
            .await
            .unwrap_or_else(|e| panic!("subscribe ({upstream:?}): {e}"));
        // A note added until one is heard of: the fixture starts following a listen stream
        // only after acknowledging it, so the very first note may come before it listens.
        let heard = async {
            loop {
                call(&session, "alpha__add_note", add("one")).await;
                if let Ok(uri) = tokio::time::timeout(Duration::from_secs(1), rx.recv()).await {
                    break uri;
                }
            }
        };
        let uri = tokio::time::timeout(Duration::from_secs(10), heard)
            .await
            .unwrap_or_else(|_| panic!("2025 client, upstream {upstream:?}: no update"));
        assert_eq!(uri.as_deref(), Some("notes://all"));
        while rx.try_recv().is_ok() {}
        // 2026-07-28: subscriptions/listen.
        let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
        let filter = rmcp::model::SubscriptionFilter::builder()
            .resource_subscription("notes://all")
            .tools_list_changed()
            .build();
        let mut listen = client
            .listen(filter)
            .await
            .unwrap_or_else(|e| panic!("listen ({upstream:?}): {e}"));
        assert_eq!(
            listen.acknowledged().resource_subscriptions.as_deref(),
            Some(&["notes://all".to_owned()][..])
        );
        call(&client, "alpha__add_note", add("two")).await;
        let heard = tokio::time::timeout(Duration::from_secs(10), listen.next())
            .await
            .unwrap_or_else(|_| panic!("2026 client, upstream {upstream:?}: no update"))
            .unwrap();
        match heard {
            Some(rmcp::model::ServerNotification::ResourceUpdatedNotification(n)) => {
                assert_eq!(n.params.uri, "notes://all");
            }
            other => panic!("2026 client, upstream {upstream:?}: {other:?}"),
        }
    }
}

/// A 2025-11-25 client's subscription through an HTTP upstream that speaks both eras lives on
/// the 2025-11-25 session Warden opens beside its stateless connection, a session nothing else
/// may use for hours. Servers end idle sessions (rmcp after five minutes; this one after 45 s),
/// and the subscription with it: Warden keeps the session alive, so updates still arrive after
/// that long. An upstream that restarts has forgotten the session: Warden sees it (rather than
/// letting the SDK open a new one unseen) and subscribes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_outlasts_the_upstreams_idle_timeout_and_its_restart() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::time::Duration;
    const IDLE: Duration = Duration::from_secs(45);
    let upstream = |addr: std::net::SocketAddr, shutdown: tokio_util::sync::CancellationToken| {
        let server = warden_testkit::notes::NotesServer::new(None);
        warden_testkit::notes::spawn_http_idle(server, addr, shutdown, IDLE)
    };
    let shutdown = tokio_util::sync::CancellationToken::new();
    let addr = upstream("127.0.0.1:0".parse().unwrap(), shutdown.clone())
        .await
        .unwrap();
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\nkind: Upstream\nname: alpha\nproject: alpha\n\
         http: {{ url: \"http://{addr}/mcp\" }}\n---\nkind: ToolPolicy\nname: add\n\
         project: alpha\ntool: alpha__add_note\nclass: mutation\n"
    ))
    .await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let config =
        StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(w.admin.clone());
    let session = Updates(tx)
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    #[allow(deprecated, reason = "resources/subscribe is the 2025-11-25 way")]
    session
        .subscribe(rmcp::model::SubscribeRequestParams::new("notes://all"))
        .await
        .unwrap();
    // A note added each second until one is heard of, within `within` (a call while Warden
    // reconnects may fail).
    let note = rmcp::model::CallToolRequestParams::new("alpha__add_note")
        .with_arguments(json!({"text": "later"}).as_object().unwrap().clone());
    let heard = async |rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>, within| {
        let heard = async {
            loop {
                let _ = session.call_tool(note.clone()).await;
                if let Ok(uri) = tokio::time::timeout(Duration::from_secs(1), rx.recv()).await {
                    break uri;
                }
            }
        };
        tokio::time::timeout(within, heard).await.ok()
    };
    // Longer than the upstream keeps an idle session (the wait is the upstream's own clock).
    tokio::time::sleep(IDLE + Duration::from_secs(5)).await;
    let uri = heard(&mut rx, Duration::from_secs(10)).await;
    assert_eq!(
        uri.flatten().as_deref(),
        Some("notes://all"),
        "after the idle timeout"
    );
    // The upstream restarts on the same address, its sessions gone.
    shutdown.cancel();
    let restarted = tokio_util::sync::CancellationToken::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while let Err(e) = upstream(addr, restarted.clone()).await {
        assert!(
            std::time::Instant::now() < deadline,
            "restart on {addr}: {e}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    while rx.try_recv().is_ok() {}
    // Found at the next ping (every 30 s) at the latest.
    let uri = heard(&mut rx, Duration::from_secs(50)).await;
    assert_eq!(
        uri.flatten().as_deref(),
        Some("notes://all"),
        "after a restart"
    );
    restarted.cancel();
}

/// `tools/list` keeps each upstream's own order (XPORT-5), after Warden's built-in tools: a
/// client that takes "the first tool" gets the upstream's first, not the first by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_in_the_upstreams_own_order_after_wardens_own() {
    let (w, _) = notes_warden("").await;
    let list = request(&w, "2026-07-28", None, "tools/list", "", json!({})).await;
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let first_upstream = names.iter().position(|n| n.starts_with("alpha__")).unwrap();
    assert!(
        names[..first_upstream]
            .iter()
            .all(|n| n.starts_with("warden__")),
        "{names:?}"
    );
    assert_eq!(
        names[first_upstream..first_upstream + 6],
        [
            "alpha__list_notes",
            "alpha__add_note",
            "alpha__delete_note",
            "alpha__echo",
            "alpha__locate",
            "alpha__add"
        ],
        "{names:?}"
    );
}

/// A 2026-07-28 call over HTTP with its `Mcp-Param-*` headers (SEP-2243); the HTTP status and
/// the answer.
async fn call_with_headers(
    w: &TestWarden,
    token: &str,
    tool: &str,
    arguments: Value,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    warden_mcp::http_client::install_tls();
    let mut request = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": tool, "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "eras", "version": "1"}
                }
            }}),
        );
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, last_message(&response.text().await.unwrap()))
}

/// A condition on an argument (GOV-10) reads the body's arguments, the ones that execute: a
/// `Mcp-Param-*` header that disagrees with the body is refused as a mismatch before any
/// condition runs, whichever of the two the condition would have let through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condition_cannot_be_bypassed_by_a_parameter_header() {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}---\nkind: ToolPolicy\nproject: alpha\ntool: alpha__locate\nclass: read\n\
         rules:\n  - {{ name: no-mars, when: \"args.region == 'Mars'\", deny: \"Mars is out of reach\" }}\n",
        stdio_upstream("alpha", "alpha", "")
    ))
    .await;
    for (body, header) in [("Mars", "Earth"), ("Earth", "Mars")] {
        let (status, refused) = call_with_headers(
            &w,
            &w.admin,
            "alpha__locate",
            json!({"region": body}),
            &[("mcp-param-region", header)],
        )
        .await;
        assert_eq!(status, 400, "{body}/{header}: {refused}");
        assert_eq!(refused["error"]["code"], -32020, "{refused}");
    }
    let (status, denied) = call_with_headers(
        &w,
        &w.admin,
        "alpha__locate",
        json!({"region": "Mars"}),
        &[("mcp-param-region", "Mars")],
    )
    .await;
    assert_eq!(status, 200, "{denied}");
    assert_eq!(
        denied["result"]["structuredContent"]["code"], "TOOL_POLICY",
        "{denied}"
    );
    assert_eq!(
        denied["result"]["structuredContent"]["message"],
        "`alpha__locate` is refused by policy: Mars is out of reach"
    );
    // Operators see the rule that decided it.
    let records = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            code: Some("TOOL_POLICY".into()),
            ..warden_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert!(
        records.iter().any(|r| r
            .record
            .payload
            .contains("tool-policy:alpha/alpha__locate:rule:no-mars")),
        "{records:#?}"
    );
    let (status, ok) = call_with_headers(
        &w,
        &w.admin,
        "alpha__locate",
        json!({"region": "Earth"}),
        &[("mcp-param-region", "Earth")],
    )
    .await;
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok["result"]["content"][0]["text"], "region=Earth", "{ok}");
}

/// An upstream tool that mirrors an argument in an `Mcp-Param-*` header has that header
/// checked by Warden as the upstream would (it never sees the client's headers): a missing,
/// different or badly encoded header is a header mismatch (HTTP 400, -32020) — for a tool the
/// run may see; a hidden tool stays unknown whatever the headers say (RUN-6).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameter_headers_are_checked_for_visible_tools_as_the_upstream_would() {
    let (w, _) = notes_warden("").await;
    let args = json!({"region": "Hello"});
    let (status, ok) = call_with_headers(
        &w,
        &w.admin,
        "alpha__locate",
        args.clone(),
        &[("mcp-param-region", "Hello")],
    )
    .await;
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok["result"]["content"][0]["text"], "region=Hello", "{ok}");
    let (status, encoded) = call_with_headers(
        &w,
        &w.admin,
        "alpha__locate",
        args.clone(),
        &[("Mcp-Param-Region", "=?base64?SGVsbG8=?=")],
    )
    .await;
    assert_eq!(status, 200, "{encoded}");
    for (headers, reason) in [
        (
            &[("mcp-param-region", "Other")][..],
            "Mcp-Param-Region header `Other` does not match body value `Hello`",
        ),
        (&[][..], "missing Mcp-Param-Region header for `region`"),
        (
            &[("mcp-param-region", "=?base64?SGVsbG8?=")][..],
            "Mcp-Param-Region header is not valid Base64",
        ),
    ] {
        let (status, refused) =
            call_with_headers(&w, &w.admin, "alpha__locate", args.clone(), headers).await;
        assert_eq!(status, 400, "{headers:?}: {refused}");
        assert_eq!(refused["error"]["code"], -32020, "{headers:?}: {refused}");
        assert_eq!(
            refused["error"]["message"], reason,
            "{headers:?}: {refused}"
        );
    }
    // A token bound to another project does not see the tool: its headers are not checked,
    // and the call answers like one to a tool that does not exist.
    let bound = w.token("admin", Some(&["demo"]), None).await;
    let (status, hidden) = call_with_headers(
        &w,
        &bound,
        "alpha__locate",
        args,
        &[("mcp-param-region", "Other")],
    )
    .await;
    assert_eq!(status, 200, "{hidden}");
    assert_eq!(
        hidden["result"]["structuredContent"]["code"], "UNKNOWN_TOOL",
        "{hidden}"
    );
}

/// The fixture's `publish`, classified (a mutation).
const PUBLISH: &str =
    "---\nkind: ToolPolicy\nname: publish\nproject: alpha\ntool: alpha__publish\nclass: mutation\n";

/// Warden advertises that its prompt and resource lists change, and says so when they do: a
/// 2025-11-25 session hears `notifications/{prompts,resources}/list_changed`, a 2026-07-28
/// `subscriptions/listen` stream that asked for them hears them too — here when a 2025-11-25
/// upstream adds a prompt, a resource and a resource template.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_and_resource_list_changes_are_advertised_and_reach_clients_of_both_eras() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream_with("alpha", "alpha", &["--only-2025"], PUBLISH)
    ))
    .await;
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let config =
        StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(w.admin.clone());
    let session = ListChanges(tx)
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    let modern = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    for (era, info) in [("2025", session.peer_info()), ("2026", modern.peer_info())] {
        let capabilities = &info.unwrap().capabilities;
        let prompts = capabilities.prompts.as_ref().unwrap();
        let resources = capabilities.resources.as_ref().unwrap();
        assert_eq!(prompts.list_changed, Some(true), "{era}: {capabilities:?}");
        assert_eq!(
            resources.list_changed,
            Some(true),
            "{era}: {capabilities:?}"
        );
    }
    let filter = rmcp::model::SubscriptionFilter::builder()
        .prompts_list_changed()
        .resources_list_changed()
        .build();
    let mut listen = modern.listen(filter).await.unwrap();
    let acknowledged = listen.acknowledged();
    assert_eq!(
        acknowledged.prompts_list_changed,
        Some(true),
        "{acknowledged:?}"
    );
    assert_eq!(
        acknowledged.resources_list_changed,
        Some(true),
        "{acknowledged:?}"
    );

    call(&session, "alpha__publish", json!({"name": "fresh"})).await;
    hear_all(&mut heard, &["prompts", "resources"], "2025 session").await;
    // A tool that appears after its upstream's first pinning is held until accepted (GOV-9).
    w.accept_tool("alpha__published_fresh").await;
    hear_all(&mut heard, &["tools"], "2025 session").await;
    listen_for_all(&mut listen, &["prompts", "resources"], "2026 listen stream").await;
    let prompts = modern.list_all_prompts().await.unwrap();
    assert!(
        prompts.iter().any(|p| p.name == "alpha__fresh"),
        "{prompts:?}"
    );
    let resources = modern.list_all_resources().await.unwrap();
    assert!(
        resources.iter().any(|r| r.uri == "notes://published/fresh"),
        "{resources:?}"
    );
    let templates = modern.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "notes://published/fresh/{part}"),
        "{templates:?}"
    );
}

/// An upstream reached in 2026-07-28 — what Warden negotiates with a server that speaks it —
/// announces list changes only on a `subscriptions/listen` stream: Warden keeps one open, so
/// clients of both eras hear of a new tool, prompt or resource within seconds rather than at
/// the next periodic refresh (every 30 s), over stdio and Streamable HTTP alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_upstreams_list_changes_reach_clients_of_both_eras_at_once() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    for http in [false, true] {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let upstream = if http {
            let addr = warden_testkit::notes::spawn_http_with(
                warden_testkit::notes::NotesServer::new(None),
                "127.0.0.1:0".parse().unwrap(),
                shutdown.clone(),
                false,
            )
            .await
            .unwrap();
            format!(
                "kind: Upstream\nname: alpha\nproject: alpha\nhttp: {{ url: \"http://{addr}/mcp\" }}\n{PUBLISH}"
            )
        } else {
            stdio_upstream("alpha", "alpha", PUBLISH)
        };
        let w = TestWarden::start(&format!("kind: Project\nname: alpha\n---\n{upstream}")).await;
        let status = w.gateway.upstreams().get("alpha").unwrap().status();
        assert_eq!(
            status,
            warden_mcp::upstream::UpstreamStatus::Up {
                protocol: "2026-07-28".into()
            },
            "http: {http}"
        );
        let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let config =
            StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(w.admin.clone());
        let _session = ListChanges(tx)
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .unwrap();
        let modern = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
        let mut listen = listen_to_every_list(&modern).await;

        call(&modern, "alpha__publish", json!({"name": "fresh"})).await;
        let who = format!("http: {http}");
        hear_all(&mut heard, &["prompts", "resources"], &who).await;
        listen_for_all(&mut listen, &["prompts", "resources"], &who).await;
        // A tool that appears after its upstream's first pinning is held until accepted
        // (GOV-9).
        w.accept_tool("alpha__published_fresh").await;
        hear_all(&mut heard, &["tools"], &who).await;
        listen_for_all(&mut listen, &["tools"], &who).await;
        let tools = tool_names(&modern).await;
        assert!(
            tools.iter().any(|t| t == "alpha__published_fresh"),
            "{who}: {tools:?}"
        );
        shutdown.cancel();
    }
}

/// The fixture's `add_note`, classified (a mutation).
const ADD_NOTE: &str =
    "---\nkind: ToolPolicy\nname: add\nproject: alpha\ntool: alpha__add_note\nclass: mutation\n";

/// Resource subscriptions outlive their upstream's restart: Warden subscribes the new process
/// to every URI its clients follow, in that upstream's era — for an upstream that speaks
/// 2026-07-28 (a `subscriptions/listen` stream of Warden's) and one that speaks 2025-11-25
/// only (`resources/subscribe` on the new session) — and clients of both eras keep hearing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_subscriptions_survive_a_restart_of_their_upstream() {
    use rmcp::ServiceExt as _;
    use rmcp::model::ServerNotification;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::time::Duration;
    use tokio::time::{Instant, timeout_at};
    for only_2025 in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes.json").display().to_string();
        let mut flags = vec!["--file", file.as_str()];
        if only_2025 {
            flags.push("--only-2025");
        }
        let w = TestWarden::start(&format!(
            "kind: Project\nname: alpha\n---\n{}",
            stdio_upstream_with("alpha", "alpha", &flags, ADD_NOTE)
        ))
        .await;
        let (tx, mut old_updates) = tokio::sync::mpsc::unbounded_channel();
        let config =
            StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(w.admin.clone());
        let session = Updates(tx)
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .unwrap();
        #[allow(deprecated, reason = "resources/subscribe is the 2025-11-25 way")]
        session
            .subscribe(rmcp::model::SubscribeRequestParams::new("notes://all"))
            .await
            .unwrap();
        let modern = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
        let filter = rmcp::model::SubscriptionFilter::builder()
            .resource_subscription("notes://all")
            .build();
        let mut listen = modern.listen(filter).await.unwrap();

        // Heard by both, before and after the upstream process is killed and started anew.
        for leg in ["before the restart", "after the restart"] {
            let who = format!("2025-only upstream: {only_2025}, {leg}");
            if leg == "after the restart" {
                let pids = pids_with(&file);
                assert_eq!(pids.len(), 1, "{who}: {pids:?}");
                std::process::Command::new("kill")
                    .args(["-9", &pids[0].to_string()])
                    .status()
                    .unwrap();
                let deadline = Instant::now() + Duration::from_secs(20);
                while pids_with(&file).iter().all(|p| *p == pids[0])
                    || !matches!(
                        w.gateway.upstreams().get("alpha").unwrap().status(),
                        warden_mcp::upstream::UpstreamStatus::Up { .. }
                    )
                {
                    assert!(Instant::now() < deadline, "{who}: not restarted");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            let deadline = Instant::now() + Duration::from_secs(15);
            let (mut old_heard, mut new_heard) = (false, false);
            while !(old_heard && new_heard) {
                assert!(
                    Instant::now() < deadline,
                    "{who}: 2025 client heard: {old_heard}, 2026 client heard: {new_heard}"
                );
                call(&modern, "alpha__add_note", json!({"text": leg})).await;
                let wait = Instant::now() + Duration::from_secs(1);
                if !old_heard {
                    old_heard = timeout_at(wait, old_updates.recv()).await.is_ok();
                }
                if !new_heard {
                    new_heard = matches!(
                        timeout_at(wait, listen.next()).await,
                        Ok(Ok(Some(ServerNotification::ResourceUpdatedNotification(_))))
                    );
                }
            }
            // What a second note sent still waiting is not heard as the next leg's.
            tokio::time::sleep(Duration::from_millis(200)).await;
            while old_updates.try_recv().is_ok() {}
            while tokio::time::timeout(Duration::from_millis(200), listen.next())
                .await
                .is_ok()
            {}
        }
    }
}

/// An upstream that ends its `subscriptions/listen` streams (as a 2026-07-28 server may, at
/// any time) is listened to again: its resource updates and list changes keep reaching
/// clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_ends_its_listen_streams_keeps_being_heard() {
    use rmcp::model::ServerNotification as N;
    use std::time::Duration;
    use tokio::time::{Instant, timeout_at};
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream("alpha", "alpha", &format!("{ADD_NOTE}{PUBLISH}"))
    ))
    .await;
    let modern = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    let filter = rmcp::model::SubscriptionFilter::builder()
        .resource_subscription("notes://all")
        .prompts_list_changed()
        .build();
    let mut listen = modern.listen(filter).await.unwrap();
    call(&modern, "alpha__end_streams", json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    let (mut updated, mut listed) = (false, false);
    let mut round = 0;
    while !(updated && listed) {
        assert!(
            Instant::now() < deadline,
            "resource updated heard: {updated}, prompts list changed heard: {listed}"
        );
        round += 1;
        call(&modern, "alpha__add_note", json!({"text": "again"})).await;
        let name = format!("p{}", "x".repeat(round));
        call(&modern, "alpha__publish", json!({"name": name})).await;
        let wait = Instant::now() + Duration::from_secs(1);
        while let Ok(Ok(Some(heard))) = timeout_at(wait, listen.next()).await {
            match heard {
                N::ResourceUpdatedNotification(_) => updated = true,
                N::PromptListChangedNotification(_) => listed = true,
                _ => {}
            }
        }
    }
}

/// What is not Warden's passes through unchanged, in both client eras and from an upstream of
/// either era (XPORT-5): a tool's annotations and `_meta`; a prompt's, a resource's and a resource template's titles,
/// descriptions, icons, `_meta` and annotations exactly as the upstream listed them (a prompt
/// renamed into the catalog only), and what `prompts/get` and `resources/read` answer with
/// their `_meta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_resources_and_templates_pass_through_unchanged_in_both_eras() {
    use warden_testkit::notes::showcase;
    let find = |list: &Value, key: &str, value: &str| -> Value {
        list.as_array()
            .unwrap()
            .iter()
            .find(|item| item[key] == value)
            .cloned()
            .unwrap_or_else(|| panic!("no {key} {value} in {list}"))
    };
    // The era's own fields of a result (2026-07-28: `resultType`, caching hints).
    let without_result_type = |mut result: Value| {
        let fields = result.as_object_mut().unwrap();
        for era_field in ["resultType", "ttlMs", "cacheScope"] {
            fields.remove(era_field);
        }
        result
    };
    for flags in [&[][..], &["--only-2025"][..]] {
        let w = TestWarden::start(&format!(
            "kind: Project\nname: alpha\n---\n{}",
            stdio_upstream_with("alpha", "alpha", flags, "")
        ))
        .await;
        let legacy = open_session(&w, &w.admin).await;
        for (version, session) in [("2026-07-28", None), ("2025-11-25", Some(legacy.as_str()))] {
            let who = format!("{version} client, upstream flags {flags:?}");
            let list = request(&w, version, session, "tools/list", "", json!({})).await;
            let echo = find(&list["tools"], "name", "alpha__echo");
            assert_eq!(
                (&echo["annotations"], &echo["_meta"]),
                (
                    &json!({"readOnlyHint": true, "openWorldHint": false}),
                    &json!({"ui": {"resourceUri": "ui://notes/echo"}})
                ),
                "{who}"
            );
            let list = request(&w, version, session, "prompts/list", "", json!({})).await;
            let mut expected = showcase::prompt();
            expected["name"] = json!("alpha__brief");
            assert_eq!(
                find(&list["prompts"], "name", "alpha__brief"),
                expected,
                "{who}"
            );
            let list = request(&w, version, session, "resources/list", "", json!({})).await;
            assert_eq!(
                find(&list["resources"], "uri", "notes://readme"),
                showcase::resource(),
                "{who}"
            );
            let list = request(
                &w,
                version,
                session,
                "resources/templates/list",
                "",
                json!({}),
            )
            .await;
            assert_eq!(
                find(
                    &list["resourceTemplates"],
                    "uriTemplate",
                    "notes://note/{id}"
                ),
                showcase::template(),
                "{who}"
            );
            let params = json!({"name": "alpha__brief"});
            let got = request(&w, version, session, "prompts/get", "alpha__brief", params).await;
            assert_eq!(without_result_type(got), showcase::prompt_result(), "{who}");
            let params = json!({"uri": "notes://readme"});
            let read = request(
                &w,
                version,
                session,
                "resources/read",
                "notes://readme",
                params,
            )
            .await;
            assert_eq!(
                without_result_type(read),
                showcase::resource_result(),
                "{who}"
            );
        }
    }
}

/// A 2025-11-25 client that answers every elicitation `{"answer": "blue"}`.
#[derive(Clone)]
struct Blue;

impl rmcp::ClientHandler for Blue {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities.elicitation = Some(Default::default());
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("blue", "1"))
    }

    async fn create_elicitation(
        &self,
        _params: rmcp::model::ElicitRequestParams,
        _ctx: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"answer": "blue"})),
        )
    }
}

/// `resources/read` is served in the client's era, as `tools/call` is: a resource whose
/// upstream needs the reader's answer first is read in every pairing of eras — a 2025-11-25
/// client is asked by elicitation (the upstream's own, or Warden's for a 2026-07-28
/// upstream's `input_required`), a 2026-07-28 client gets `input_required` and its retry's
/// answer reaches the upstream (its own state, or Warden's for a 2025-11-25 upstream).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_that_needs_the_readers_answer_is_read_in_every_pairing_of_eras() {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let uri = "notes://ask/color";
    let text = |result: &Value| {
        result["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for flags in [&[][..], &["--only-2025"][..]] {
        let w = TestWarden::start(&format!(
            "kind: Project\nname: alpha\n---\n{}",
            stdio_upstream_with("alpha", "alpha", flags, "")
        ))
        .await;
        let config =
            StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(w.admin.clone());
        let session = Blue
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .unwrap();
        let read = session
            .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
            .await
            .unwrap_or_else(|e| panic!("2025 client, upstream flags {flags:?}: {e}"));
        let read = serde_json::to_value(read).unwrap();
        assert!(
            text(&read).contains("blue"),
            "2025 client, upstream flags {flags:?}: {read}"
        );

        let eliciting = json!({"elicitation": {}});
        let params = json!({"uri": uri});
        let first = answer_as(
            &w,
            "2026-07-28",
            None,
            eliciting.clone(),
            "resources/read",
            uri,
            params,
        )
        .await;
        let who = format!("2026 client, upstream flags {flags:?}");
        let result = &first["result"];
        assert_eq!(result["resultType"], "input_required", "{who}: {first}");
        let questions = result["inputRequests"].as_object().unwrap();
        assert_eq!(questions.len(), 1, "{who}: {first}");
        let (key, question) = questions.iter().next().unwrap();
        assert_eq!(question["method"], "elicitation/create", "{who}: {first}");
        let retry = json!({
            "uri": uri,
            "inputResponses": {key: {"action": "accept", "content": {"answer": "blue"}}},
            "requestState": result["requestState"],
        });
        let done = answer_as(
            &w,
            "2026-07-28",
            None,
            eliciting,
            "resources/read",
            uri,
            retry,
        )
        .await;
        assert_eq!(done["result"]["resultType"], "complete", "{who}: {done}");
        assert!(text(&done["result"]).contains("blue"), "{who}: {done}");
    }
}
