//! Stateless 2026-07-28 `tools/call` and `tools/list` answered on the connection's own task.
//!
//! rmcp's Streamable HTTP server answers a stateless request by spawning a serve loop for it,
//! which spawns a task for the handler, and passing the answer back through two channels:
//! three tasks and as many thread wake-ups per request, measured as a quarter of the server's
//! CPU at 64 clients (docs/benchmarks.md). The two requests that make up nearly all of an
//! agent's traffic are served here instead, by the same [`McpHandler`] through rmcp's own
//! request dispatch (`Service::handle_request`: version checks, `_meta` validation, result
//! shaping), on the task that read the request.
//!
//! Only a request that needs nothing but its answer is taken: `POST`, no session, the
//! `MCP-Protocol-Version: 2026-07-28` header and the same version in a complete `_meta`, the
//! `Mcp-Method` (and for `tools/call`, `Mcp-Name`) header equal to the body, both media types
//! accepted, a JSON body of known length — and no `progressToken` or `logLevel`, so the client
//! asked for no notification that would need an event stream. Anything else, and any request
//! this module is unsure of, goes to rmcp unchanged, which also produces every error answer.
//! The answer is what rmcp writes for the same request: the JSON-RPC message as JSON, with the
//! HTTP status rmcp gives it.
//!
//! A client that disconnects mid-call cancels it as in rmcp: the call is not dropped half-way
//! but finishes on a task of its own with its cancellation token fired.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, StatusCode, header};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, GetExtensions, GetMeta, ListToolsResult,
    ProtocolVersion, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, Service};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use warden_mcp::{Gateway, McpHandler, SessionAuth};

use crate::mcp_sessions::SessionOwners;

/// The MCP headers read on every request, as names: a lookup by string parses it first.
static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
static MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
static MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The largest body read here; larger ones go to rmcp, which enforces its own limit.
const MAX_INLINE_BODY: u64 = crate::state::MAX_BODY_BYTES as u64;

/// The MCP endpoint: inline where it can, rmcp otherwise.
#[derive(Clone)]
pub(crate) struct McpEndpoint<S> {
    gateway: Arc<Gateway>,
    rmcp: S,
    sessions: Arc<SessionOwners>,
    peer: Arc<OnceLock<Peer<RoleServer>>>,
    served: Arc<Served>,
}

/// `warden_mcp_requests_total` by the path a request took, registered once: looked up by
/// name and label on every request, the counter showed in the profile. `stateless`: answered
/// here, on the connection's task; `streamable`: by rmcp's Streamable HTTP server (sessions,
/// event streams, every other request).
struct Served {
    inline: metrics::Counter,
    rmcp: metrics::Counter,
}

impl<S> McpEndpoint<S>
where
    S: tower::Service<Request, Error = std::convert::Infallible> + Clone + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send,
{
    /// The metrics recorder must be installed first: the counters are registered here.
    pub(crate) fn new(gateway: Arc<Gateway>, rmcp: S, sessions: Arc<SessionOwners>) -> Self {
        Self {
            gateway,
            rmcp,
            sessions,
            peer: Arc::new(OnceLock::new()),
            served: Arc::new(Served {
                inline: metrics::counter!("warden_mcp_requests_total", "path" => "stateless"),
                rmcp: metrics::counter!("warden_mcp_requests_total", "path" => "streamable"),
            }),
        }
    }

    /// Serves one HTTP request.
    pub(crate) async fn serve(self, request: Request) -> Response {
        if !candidate(&request) {
            // Boxed: rmcp's future is large, and held inline it would make the future of
            // every request as large, inline ones included, each move copying it whole.
            return Box::pin(self.delegate(request)).await;
        }
        self.serve_candidate(request).await
    }

    /// Serves a request whose headers passed [`candidate`].
    async fn serve_candidate(self, request: Request) -> Response {
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, MAX_INLINE_BODY as usize).await {
            Ok(bytes) => bytes,
            // The declared length was within the limit, so the body itself failed.
            Err(e) => {
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("Failed to read request body: {e}"),
                )
                    .into_response();
            }
        };
        match inline_request(&parts.headers, &bytes) {
            Some((id, request)) => {
                self.served.inline.increment(1);
                self.answer(id, request, parts).await
            }
            // Boxed: rmcp's path is taken by the rarer requests, and held inline it made the
            // future of every request — the fast path's too — as large as its own.
            None => Box::pin(self.delegate(Request::from_parts(parts, Body::from(bytes)))).await,
        }
    }

    /// Hands a request to rmcp, on the session its credential owns (`mcp_sessions.rs`), with
    /// JSON-RPC's own answer to a body that is no JSON-RPC request (`jsonrpc.rs`).
    async fn delegate(self, mut request: Request) -> Response {
        self.served.rmcp.increment(1);
        let screened = match self.sessions.screen(&mut request).await {
            Ok(screened) => screened,
            Err(refused) => return refused,
        };
        let mut sent = None;
        let delete = request.method() == http::Method::DELETE;
        if request.method() == http::Method::POST && json_content(request.headers()) {
            let (parts, body) = request.into_parts();
            let bytes = match axum::body::to_bytes(body, MAX_INLINE_BODY as usize).await {
                Ok(bytes) => bytes,
                Err(_) => {
                    return (
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("Payload Too Large: request body exceeds {MAX_INLINE_BODY} bytes"),
                    )
                        .into_response();
                }
            };
            sent = Some(bytes.clone());
            request = Request::from_parts(parts, Body::from(bytes));
        }
        let mut response = match self.rmcp.oneshot(request).await {
            Ok(response) => response.into_response(),
            Err(never) => match never {},
        };
        // A session ended by DELETE: 200, as the official SDKs' servers answer (rmcp says
        // 202, which the Python SDK reports as "Session termination failed").
        if delete && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        let settled = self.sessions.settle(screened, &response).await;
        if settled.prune {
            self.sessions.prune().await;
        }
        if let Some(refused) = settled.refused {
            return refused;
        }
        match sent {
            // With a JSON body, rmcp's 415 means that it is no JSON-RPC message.
            Some(body) if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                crate::jsonrpc::malformed(&body)
            }
            _ => response,
        }
    }

    /// Runs the request through rmcp's dispatch on this task and writes its answer.
    async fn answer(
        self,
        id: rmcp::model::RequestId,
        mut request: ClientRequest,
        parts: http::request::Parts,
    ) -> Response {
        let handler = McpHandler::new(self.gateway.clone(), SessionAuth::PerRequest, None);
        let mut context = RequestContext::new(id.clone(), self.peer(&handler));
        // The call's own token (not a child of another: nothing else cancels it, and a child
        // costs a node in a locked tree per request), fired if the client goes away.
        let ct = context.ct.clone();
        context.meta = std::mem::take(request.get_meta_mut());
        context.extensions = std::mem::take(request.extensions_mut());
        context.extensions.insert(parts);
        if matches!(request, ClientRequest::ListToolsRequest(_))
            && let Some(body) = handler
                .list_tools_json(&context)
                .and_then(|tools| list_answer(id.clone(), &tools))
        {
            return json_response(StatusCode::OK, body);
        }
        let call = FinishOnDrop::new(
            Box::pin(async move { handler.handle_request(request, context).await }),
            ct,
        );
        let message = match call.await {
            Ok(result) => ServerJsonRpcMessage::response(result, id),
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        };
        let status = status_of(&message);
        match serde_json::to_vec(&message) {
            Ok(body) => json_response(status, body),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Failed to serialize json response: {e}"),
            )
                .into_response(),
        }
    }

    /// The peer handed to inline requests: they asked for no notification, and a stateless
    /// client takes no server-to-client request, so it reaches no client. Anything sent
    /// through it fails as on a closed connection.
    fn peer(&self, handler: &McpHandler) -> Peer<RoleServer> {
        self.peer
            .get_or_init(|| {
                let (ours, theirs) = tokio::io::duplex(64);
                drop(theirs);
                let running =
                    rmcp::service::serve_directly(handler.clone(), tokio::io::split(ours), None);
                running.peer().clone()
            })
            .clone()
    }
}

/// Whether the body is declared JSON (`Content-Type: application/json`, any parameters).
fn json_content(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        })
}

/// Whether the headers allow an inline answer; the body decides the rest.
fn candidate(request: &Request) -> bool {
    let headers = request.headers();
    request.method() == http::Method::POST
        && !headers.contains_key(&MCP_SESSION_ID)
        && single(headers, &MCP_PROTOCOL_VERSION) == Some(ProtocolVersion::V_2026_07_28.as_str())
        && accepts_json_and_sse(headers)
        && json_content(headers)
        && headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|n| n <= MAX_INLINE_BODY)
}

fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let mut json = false;
    let mut sse = false;
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for range in value.split(',') {
            let essence = range.split(';').next().unwrap_or_default().trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// The only value of a header, when there is exactly one and it is text.
fn single<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

/// The request, when it is one this module answers exactly as rmcp would.
fn inline_request(
    headers: &HeaderMap,
    body: &[u8],
) -> Option<(rmcp::model::RequestId, ClientRequest)> {
    let method_header = single(headers, &MCP_METHOD)?;
    // Only a body its header calls a `tools/call` can be answered inline as one, so the fast
    // parse is tried only then, and a `tools/list` is parsed once.
    let fast = (method_header == "tools/call")
        .then(|| fast_call(body))
        .flatten();
    let (id, request) = match fast {
        Some(call) => call,
        None => match serde_json::from_slice(body).ok()? {
            ClientJsonRpcMessage::Request(request) => (request.id, request.request),
            _ => return None,
        },
    };
    let meta = request.get_meta();
    let wanted = ProtocolVersion::V_2026_07_28;
    if meta.protocol_version().as_ref() != Some(&wanted)
        || !meta.missing_required_keys(&wanted).is_empty()
        || meta.get_progress_token().is_some()
        || meta.0.contains_key("io.modelcontextprotocol/logLevel")
    {
        return None;
    }
    match &request {
        ClientRequest::CallToolRequest(call) => {
            (method_header == "tools/call" && single(headers, &MCP_NAME)? == call.params.name)
                .then_some(())?;
        }
        ClientRequest::ListToolsRequest(_) => (method_header == "tools/list").then_some(())?,
        _ => return None,
    }
    Some((id, request))
}

/// A `tools/call` request parsed straight into its parameters, or `None` when the body is
/// anything else, or anything rmcp might read differently; the caller then parses it as rmcp
/// does. rmcp's parse of a message (`ClientJsonRpcMessage`) buffers it to tell requests from
/// answers and buffers the parameters again to find the method's variant: 6 % of the server's
/// CPU at 64 clients, 2 % with this parse (docs/benchmarks.md). The result is what rmcp's
/// parse gives for the same body: the parameters without `_meta`, which goes to the
/// request's extensions.
fn fast_call(body: &[u8]) -> Option<(rmcp::model::RequestId, ClientRequest)> {
    /// A key that is present, whatever its value (`null` included).
    #[derive(Default)]
    struct FieldPresent(bool);
    impl<'de> serde::Deserialize<'de> for FieldPresent {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            serde::de::IgnoredAny::deserialize(d).map(|_| Self(true))
        }
    }
    /// `T` read from a JSON object only: a derived struct also reads an array, in field
    /// order, and rmcp reads the message and its parameters from objects only.
    struct Object<T>(T);
    impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Fields<T>(std::marker::PhantomData<T>);
            impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
                type Value = T;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                    T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                }
            }
            d.deserialize_map(Fields(std::marker::PhantomData))
                .map(Object)
        }
    }
    #[derive(serde::Deserialize)]
    struct Call {
        #[serde(rename = "jsonrpc")]
        _jsonrpc: rmcp::model::JsonRpcVersion2_0,
        id: rmcp::model::RequestId,
        #[serde(rename = "method")]
        _method: rmcp::model::CallToolRequestMethod,
        params: Object<rmcp::model::CallToolRequestParams>,
        // rmcp refuses a request that also carries `result` or `error`.
        #[serde(default)]
        result: FieldPresent,
        #[serde(default)]
        error: FieldPresent,
    }
    let Object(call) = serde_json::from_slice::<Object<Call>>(body).ok()?;
    if call.result.0 || call.error.0 {
        return None;
    }
    let Object(mut params) = call.params;
    let meta = params.meta.take();
    let mut request = rmcp::model::CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    Some((call.id, ClientRequest::CallToolRequest(request)))
}

/// The answer to `tools/list` with the tools' JSON array: rmcp's own answer with no tools
/// (`ListToolsResult` with its cache hints filled, as rmcp's dispatch does), the array
/// spliced in. The list's JSON comes from a per-catalog cache, so no tool is serialized
/// again.
fn list_answer(id: rmcp::model::RequestId, tools: &[u8]) -> Option<Vec<u8>> {
    const EMPTY: &[u8] = br#""tools":[]"#;
    let mut result = ServerResult::ListToolsResult(ListToolsResult::with_all_items(Vec::new()));
    result.fill_missing_cache_hints();
    let envelope = serde_json::to_vec(&ServerJsonRpcMessage::response(result, id)).ok()?;
    let mut at = envelope
        .windows(EMPTY.len())
        .enumerate()
        .filter(|(_, w)| *w == EMPTY);
    let (start, _) = at.next()?;
    if at.next().is_some() {
        return None;
    }
    let mut body = Vec::with_capacity(envelope.len() + tools.len());
    body.extend_from_slice(envelope.get(..start + EMPTY.len() - 2)?);
    body.extend_from_slice(tools);
    body.extend_from_slice(envelope.get(start + EMPTY.len()..)?);
    Some(body)
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        Bytes::from(body),
    )
        .into_response()
}

/// The HTTP status rmcp gives a stateless 2026-07-28 answer (`_meta` is complete here).
fn status_of(message: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

type Call = Pin<Box<dyn Future<Output = Result<ServerResult, ErrorData>> + Send>>;

/// A call polled in place; dropped before it finished (the client went away), it fires its
/// cancellation token and finishes on a task of its own, so that it records how it ended and
/// tells its upstream, as a call whose client cancelled it does.
struct FinishOnDrop {
    call: Option<Call>,
    cancel: CancellationToken,
}

impl FinishOnDrop {
    fn new(call: Call, cancel: CancellationToken) -> Self {
        Self {
            call: Some(call),
            cancel,
        }
    }
}

impl Future for FinishOnDrop {
    type Output = Result<ServerResult, ErrorData>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(call) = self.call.as_mut() else {
            return Poll::Pending;
        };
        let out = call.as_mut().poll(cx);
        if out.is_ready() {
            self.call = None;
        }
        out
    }
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.cancel.cancel();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = call.await;
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, http::HeaderValue::from_static(v));
        }
        h
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;

    fn call_body(extra_meta: &str) -> Vec<u8> {
        let meta = if extra_meta.is_empty() {
            META.to_owned()
        } else {
            META.replacen("{\"io.", &format!("{{{extra_meta},\"io."), 1)
        };
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"demo__read","arguments":{{}},{meta}}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn the_list_answer_is_rmcps_envelope_with_the_tools_spliced_in() {
        let body = list_answer(
            rmcp::model::RequestId::Number(3),
            br#"[{"name":"a","inputSchema":{"type":"object"}}]"#,
        )
        .unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["id"], 3);
        assert_eq!(answer["result"]["tools"][0]["name"], "a");
        assert_eq!(answer["result"]["ttlMs"], 0);
        assert_eq!(answer["result"]["cacheScope"], "private");
        let empty = list_answer(rmcp::model::RequestId::Number(3), b"[]").unwrap();
        let mut result = ServerResult::ListToolsResult(ListToolsResult::with_all_items(Vec::new()));
        result.fill_missing_cache_hints();
        let rmcp = serde_json::to_vec(&ServerJsonRpcMessage::response(
            result,
            rmcp::model::RequestId::Number(3),
        ))
        .unwrap();
        assert_eq!(empty, rmcp);
    }

    #[test]
    fn a_plain_call_with_matching_headers_is_inline() {
        let h = headers(&[("mcp-method", "tools/call"), ("mcp-name", "demo__read")]);
        assert!(inline_request(&h, &call_body("")).is_some());
        let list =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#);
        let h = headers(&[("mcp-method", "tools/list")]);
        assert!(inline_request(&h, list.as_bytes()).is_some());
    }

    #[test]
    fn what_needs_a_stream_or_an_error_answer_goes_to_rmcp() {
        let h = headers(&[("mcp-method", "tools/call"), ("mcp-name", "demo__read")]);
        // Progress or log messages asked for: they need an event stream.
        assert!(inline_request(&h, &call_body(r#""progressToken":1"#)).is_none());
        assert!(
            inline_request(
                &h,
                &call_body(r#""io.modelcontextprotocol/logLevel":"info""#)
            )
            .is_none()
        );
        // Header mismatches, missing or duplicated headers: rmcp's -32020 answers.
        for bad in [
            headers(&[("mcp-method", "tools/list"), ("mcp-name", "demo__read")]),
            headers(&[("mcp-method", "tools/call"), ("mcp-name", "other")]),
            headers(&[("mcp-method", "tools/call")]),
            headers(&[
                ("mcp-method", "tools/call"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "demo__read"),
            ]),
        ] {
            assert!(inline_request(&bad, &call_body("")).is_none(), "{bad:?}");
        }
        // Incomplete `_meta`, other methods, notifications, batches, bad JSON.
        let no_caps = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"demo__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(inline_request(&h, no_caps).is_none());
        let ping = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{{META}}}}}"#);
        assert!(inline_request(&headers(&[("mcp-method", "ping")]), ping.as_bytes()).is_none());
        assert!(
            inline_request(
                &h,
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
            )
            .is_none()
        );
        assert!(inline_request(&h, b"[").is_none());
    }

    #[test]
    fn the_fast_parse_of_a_call_is_rmcps_parse() {
        let bodies = [
            String::from_utf8(call_body("")).unwrap(),
            String::from_utf8(call_body(r#""progressToken":"p""#)).unwrap(),
            r#"{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"x"}}"#.into(),
            r#"{"id":1,"params":{"arguments":{"a":[1,{"b":null}]},"name":"x","requestState":"r","_meta":null},"method":"tools/call","jsonrpc":"2.0","extra":true}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":{}}}"#.into(),
        ];
        for body in &bodies {
            let (id, fast) = fast_call(body.as_bytes()).unwrap_or_else(|| panic!("{body}"));
            let Ok(ClientJsonRpcMessage::Request(rmcp)) = serde_json::from_str(body) else {
                panic!("rmcp does not read {body}");
            };
            assert_eq!(id, rmcp.id, "{body}");
            assert!(matches!(rmcp.request, ClientRequest::CallToolRequest(_)));
            assert_eq!(fast.get_meta(), rmcp.request.get_meta(), "{body}");
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&rmcp.request).unwrap(),
                "{body}"
            );
        }
        // Anything else is left to rmcp's parse: answers, other methods, bad envelopes.
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#,
            "[]",
            // Arrays: serde reads a struct from one, rmcp does not.
            r#"["2.0",1,"tools/call",{"name":"x"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[null,"x",null,null,null]}"#,
        ] {
            assert!(fast_call(body.as_bytes()).is_none(), "{body}");
        }
    }

    #[test]
    fn only_complete_2026_posts_are_candidates() {
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json; charset=utf-8"),
            ("content-length", "10"),
        ];
        let request = |method: &str, replace: Option<(&'static str, &'static str)>| {
            let mut r = Request::builder()
                .method(method)
                .body(Body::empty())
                .unwrap();
            for (k, v) in good {
                r.headers_mut().insert(k, http::HeaderValue::from_static(v));
            }
            if let Some((k, v)) = replace {
                if v.is_empty() {
                    r.headers_mut().remove(k);
                } else {
                    r.headers_mut().insert(k, http::HeaderValue::from_static(v));
                }
            }
            r
        };
        assert!(candidate(&request("POST", None)));
        assert!(!candidate(&request("GET", None)));
        for bad in [
            ("mcp-session-id", "s"),
            ("mcp-protocol-version", "2025-11-25"),
            ("accept", "application/json"),
            ("content-type", "text/plain"),
            ("content-length", ""),
            ("content-length", "99999999"),
        ] {
            assert!(!candidate(&request("POST", Some(bad))), "{bad:?}");
        }
    }
}
