//! Trace context end to end (OPS-3): a client's W3C trace context is the parent of Warden's
//! span for the call, and each upstream — a stdio child and an HTTP server — is told the
//! context of Warden's span for its round trip, so that the spans an OTLP collector receives
//! and what the upstreams were told make one trace from the client to the upstream. Without
//! an exporter, the client's context reaches the upstream unchanged.

use std::sync::Mutex;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use rmcp::model::{CallToolRequestParams, JsonObject, RequestMetaObject};
use warden_testkit::notes::{NotesServer, Seen, spawn_http_seen};

use super::*;

/// A span as the collector received it: trace, id, parent and name.
#[derive(Clone, Debug)]
struct Collected {
    trace: String,
    span: String,
    parent: String,
    name: String,
}

/// An OTLP/HTTP collector (protobuf) keeping every span it receives.
async fn spans_collector() -> (SocketAddr, Arc<Mutex<Vec<Collected>>>) {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let kept = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).unwrap();
                let mut kept = kept.lock().unwrap();
                for span in request
                    .resource_spans
                    .iter()
                    .flat_map(|r| &r.scope_spans)
                    .flat_map(|s| &s.spans)
                {
                    kept.push(Collected {
                        trace: hex(&span.trace_id),
                        span: hex(&span.span_id),
                        parent: hex(&span.parent_span_id),
                        name: span.name.clone(),
                    });
                }
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, spans)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `tool` called with `args` under the client's `traceparent`.
async fn traced_call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    args: Value,
    traceparent: &str,
) -> rmcp::model::CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(m) = args {
        params = params.with_arguments(m as JsonObject);
    }
    let mut meta = RequestMetaObject::default();
    meta.set_traceparent(traceparent);
    meta.set_tracestate("client=1");
    params.meta = Some(meta);
    client.call_tool(params).await.unwrap()
}

/// The `traceparent` an upstream's `echo` was called under (the fixture returns it in the
/// result's `_meta`).
fn told(result: &rmcp::model::CallToolResult) -> String {
    assert_eq!(decision(result)["status"], "executed", "{result:?}");
    let meta = result
        .meta
        .as_ref()
        .expect("the upstream was told a context");
    assert_eq!(
        meta.get_tracestate(),
        Some("client=1"),
        "tracestate passed on"
    );
    meta.get_traceparent().unwrap().to_owned()
}

/// A configuration with a stdio upstream `local` and an HTTP upstream `remote` (served here
/// until the token is cancelled, remembering its requests' headers).
async fn two_upstreams() -> (String, Seen, tokio_util::sync::CancellationToken) {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (addr, seen) = spawn_http_seen(
        NotesServer::new(None),
        "127.0.0.1:0".parse().unwrap(),
        shutdown.clone(),
    )
    .await
    .unwrap();
    let config = format!(
        "kind: Project\nname: t\n---\n{}---\nkind: Upstream\nname: remote\nproject: t\nhttp: {{ url: \"http://{addr}/mcp\" }}\n",
        stdio_upstream("local", "t", "")
    );
    (config, seen, shutdown)
}

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_runs_from_the_client_through_warden_to_each_upstream() {
    let (collector, spans) = spans_collector().await;
    let (config, seen, shutdown) = two_upstreams().await;
    let endpoint = format!("http://{collector}");
    let served = ServedBinary::start(&config, &["--otlp-endpoint", &endpoint]);
    let client = http_client(
        &format!("{}/mcp", served.base),
        &served.admin,
        Era::Stateless,
    )
    .await;
    let parent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let local = told(&traced_call(&client, "local__echo", json!({"text": "a"}), &parent).await);
    let remote = told(&traced_call(&client, "remote__echo", json!({"text": "b"}), &parent).await);
    // The HTTP upstream had it in the headers too.
    assert_eq!(
        seen.values("tools/call", "traceparent"),
        vec![Some(remote.clone())]
    );
    assert_eq!(
        seen.values("tools/call", "tracestate"),
        vec![Some("client=1".to_owned())]
    );
    drop(client);
    // SIGTERM: the exporter sends what it holds.
    assert!(served.stop().success());
    let spans = spans.lock().unwrap().clone();
    for (told, tool) in [(&local, "local__echo"), (&remote, "remote__echo")] {
        let told = TraceContextParts::of(told);
        assert_eq!(told.trace, CLIENT_TRACE, "{tool}: the client's trace");
        // The upstream's parent is Warden's upstream span, whose parent is Warden's span of
        // the call, whose parent is the client's.
        let upstream = spans
            .iter()
            .find(|s| s.span == told.span)
            .unwrap_or_else(|| panic!("{tool}: no collected span {}: {spans:?}", told.span));
        assert_eq!(
            (upstream.trace.as_str(), upstream.name.as_str()),
            (CLIENT_TRACE, "upstream tools/call")
        );
        let call = spans
            .iter()
            .find(|s| s.span == upstream.parent)
            .unwrap_or_else(|| panic!("{tool}: no parent span: {spans:?}"));
        assert_eq!(
            (
                call.trace.as_str(),
                call.name.as_str(),
                call.parent.as_str()
            ),
            (CLIENT_TRACE, "tools/call", CLIENT_SPAN)
        );
    }
    shutdown.cancel();
}

/// The fields of a `traceparent`.
struct TraceContextParts {
    trace: String,
    span: String,
}

impl TraceContextParts {
    fn of(traceparent: &str) -> Self {
        let parts: Vec<&str> = traceparent.split('-').collect();
        assert_eq!(parts.len(), 4, "{traceparent}");
        Self {
            trace: parts[1].to_owned(),
            span: parts[2].to_owned(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_exporter_the_clients_context_reaches_the_upstream_unchanged() {
    let (config, seen, shutdown) = two_upstreams().await;
    let w = TestWarden::start(&config).await;
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    let parent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    for tool in ["local__echo", "remote__echo"] {
        let result = traced_call(&client, tool, json!({"text": "a"}), &parent).await;
        assert_eq!(told(&result), parent, "{tool}");
    }
    assert_eq!(
        seen.values("tools/call", "traceparent"),
        vec![Some(parent.clone())]
    );
    // A request whose `_meta` has none: its `traceparent` header.
    let header = format!("00-{CLIENT_TRACE}-b7ad6b7169203331-00");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}});
    let answer: Value = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(&w.admin)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "remote__echo")
        .header("traceparent", &header)
        .json(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "remote__echo", "arguments": {"text": "h"}, "_meta": meta}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["result"]["_meta"]["traceparent"],
        header.as_str(),
        "{answer}"
    );
    assert_eq!(
        seen.values("tools/call", "traceparent").last(),
        Some(&Some(header))
    );
    // A call with no context carries none.
    let plain = call(&client, "remote__echo", json!({"text": "b"})).await;
    assert_eq!(decision(&plain)["status"], "executed");
    assert_eq!(plain.meta.as_ref().and_then(|m| m.get_traceparent()), None);
    assert_eq!(seen.values("tools/call", "traceparent").last(), Some(&None));
    shutdown.cancel();
}
