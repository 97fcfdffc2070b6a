//! The HTTP exit: `tools/call` to a Streamable HTTP upstream that speaks 2026-07-28, sent by
//! the calling task itself.
//!
//! That era is stateless: a call is one `POST` whose answer is a JSON body or an SSE stream
//! carrying the call's own notifications and then its result; no session, no server-to-client
//! request (those became `input_required` results). So the calling task can do the whole
//! exchange itself — serialize the request once, send it on a pooled connection, read the
//! answer — instead of handing it to rmcp's client worker task and back through two channels,
//! which rebuilds the header map and re-serializes the message for every request (measured in
//! docs/benchmarks.md: the largest single cost of a governed call). rmcp still connects,
//! discovers, lists and refreshes the upstream, and carries everything else (2025-11-25
//! upstreams, stdio, prompts, resources).
//!
//! The request is the one rmcp would send: the same `_meta` (protocol version, client info
//! and capabilities, progress token) and the same standard headers (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`), and the `Mcp-Param-*` headers of a tool whose input schema marks
//! arguments `x-mcp-header` (SEP-2243), written from the tool's own schema. An upstream with a
//! tool whose name cannot travel as a bare header value keeps its calls on rmcp, which
//! implements that encoding ([`HttpExit::new`] says no).
//!
//! For a plain `http://` URL the request goes over HTTP/1.1 on the calling task ([`pool`]);
//! reqwest carries it otherwise.

use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, InputRequiredResult, InputResponses, JsonObject,
    ProgressToken, ProtocolVersion, RequestMetaObject, ServerResult,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::value::RawValue;
use warden_core::config::HttpSpec;
use warden_core::tool::UpstreamTool;

use crate::client::{ClientContext, Relay, perform};
use crate::era::Era;
use warden_runtime::Secrets;

mod budget;
mod pool;

use pool::H1Pool;
pub use pool::serving_thread;

/// The `_meta` key of a request's client capabilities (2026-07-28).
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Largest JSON answer read (the same bound as rmcp's client).
const MAX_JSON_RESPONSE: usize = 16 * 1024 * 1024;
/// Largest message of an SSE answer read: each event, the result or a notification it relays.
const MAX_SSE_RESPONSE: usize = 64 * 1024 * 1024;
/// Largest error body read for its message.
const MAX_ERROR_RESPONSE: usize = 64 * 1024;

/// How calls reach an HTTP upstream without rmcp.
#[derive(Debug)]
pub(crate) struct HttpExit {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The same upstream over HTTP/1.1 on the calling task, for a plain `http://` URL (see
    /// [`pool`]); reqwest otherwise.
    h1: Option<H1Pool>,
    /// Configured headers plus the fixed ones of a `tools/call`.
    headers: HeaderMap,
    /// The `_meta` entries every request carries (protocol version, client info and
    /// capabilities), built once.
    meta: RequestMetaObject,
    /// [`Self::meta`] as JSON, written once: the `_meta` of every call that adds nothing to it.
    meta_json: Box<RawValue>,
    /// [`Self::meta_json`] for a client that declares no capability (`clientCapabilities: {}`).
    bare_json: Box<RawValue>,
    /// The arguments each tool mirrors in `Mcp-Param-*` headers, for the tools that do.
    mirrored: HashMap<String, std::sync::Arc<[warden_core::param_headers::HeaderArgument]>>,
    ids: AtomicU64,
}

/// Why a call produced no result.
#[derive(Debug)]
pub(crate) enum HttpCallError {
    /// The upstream answered with a JSON-RPC error: it executed the request and refused it.
    Refused(rmcp::ErrorData),
    /// The upstream could not be reached or answered something that is not an answer.
    Transport(String),
}

/// The configured headers of an HTTP upstream, secrets resolved.
pub(super) fn configured_headers(
    http: &HttpSpec,
    secrets: &Secrets,
) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut headers = HashMap::new();
    for (k, v) in &http.headers {
        let value = secrets.resolve(v)?;
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("`{k}` is not a valid header name"))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| format!("the value of header `{k}` is not valid"))?;
        headers.insert(name, value);
    }
    if let Some(credentials) = &http.url_credentials
        && !headers.contains_key(&http::header::AUTHORIZATION)
    {
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(credentials);
        let value = HeaderValue::from_str(&format!("Basic {basic}"))
            .map_err(|_| "the credentials of the URL cannot be sent".to_owned())?;
        headers.insert(http::header::AUTHORIZATION, value);
    }
    Ok(headers)
}

/// The `Mcp-Param-*` headers of a call's arguments (SEP-2243).
fn param_headers(
    mirrored: &[warden_core::param_headers::HeaderArgument],
    arguments: Option<&rmcp::model::JsonObject>,
) -> Result<Vec<(HeaderName, HeaderValue)>, HttpCallError> {
    warden_core::param_headers::headers_for(mirrored, arguments)
        .into_iter()
        .map(|(name, value)| {
            match (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                (Ok(name), Ok(value)) => Ok((name, value)),
                _ => Err(HttpCallError::Transport(format!(
                    "`{name}` cannot be sent as a header"
                ))),
            }
        })
        .collect()
}

/// rmcp's Streamable HTTP client for an upstream (connecting, listing, everything but the
/// calls of this exit), on the process's pooled client ([`crate::http_client`]). For the
/// 2025-11-25 `session` beside a 2026-07-28 connection, a session the server ended fails the
/// next request rather than being opened again unseen: the subscriptions it carried would be
/// lost without a word (the supervisor reconnects, and subscribes again).
pub(super) fn rmcp_transport(
    http: &HttpSpec,
    secrets: &Secrets,
    session: bool,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(http.url.clone())
        .custom_headers(configured_headers(http, secrets)?)
        .reinit_on_expired_session(!session);
    Ok(StreamableHttpClientTransport::with_client(
        crate::http_client::shared()?,
        config,
    ))
}

/// Whether a tool name can be sent as a bare `Mcp-Name` value (rmcp base64-wraps the others).
fn bare_header_value(name: &str) -> bool {
    let padded = name.starts_with([' ', '\t']) || name.ends_with([' ', '\t']);
    let wrapped = name.starts_with("=?base64?") && name.ends_with("?=");
    !name.is_empty() && !padded && !wrapped && name.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

impl HttpExit {
    /// The exit for an upstream at `url` that negotiated `protocol` and offers `tools`, or
    /// `None` when its calls need rmcp: a protocol with sessions (anything before 2026-07-28),
    /// or a tool whose name needs an encoding (see the module documentation). An argument
    /// that cannot be sent as its `Mcp-Param-*` header fails its call.
    pub(crate) fn new(
        client: reqwest::Client,
        url: &str,
        custom: &HashMap<HeaderName, HeaderValue>,
        protocol: ProtocolVersion,
        info: &rmcp::model::ClientConfig,
        tools: &[UpstreamTool],
    ) -> Option<Self> {
        if Era::of(&protocol) == Era::V2025_11_25
            || tools.iter().any(|t| !bare_header_value(&t.name))
        {
            return None;
        }
        let mirrored = tools
            .iter()
            .map(|t| {
                let args = warden_core::param_headers::header_arguments(&t.input_schema);
                (t.name.clone(), args)
            })
            .filter(|(_, args)| !args.is_empty())
            .collect();
        let url = reqwest::Url::parse(url).ok()?;
        let mut headers = HeaderMap::with_capacity(custom.len() + 5);
        for (k, v) in custom {
            headers.insert(k.clone(), v.clone());
        }
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_str(protocol.as_str()).ok()?,
        );
        headers.insert(
            HeaderName::from_static("mcp-method"),
            HeaderValue::from_static("tools/call"),
        );
        let mut meta = RequestMetaObject::default();
        meta.set_protocol_version(protocol);
        meta.set_client_info(info.client_info.clone());
        meta.set_client_capabilities(info.capabilities.clone());
        let meta_json = serde_json::value::to_raw_value(&meta).ok()?;
        let mut bare = meta.clone();
        bare.set_client_capabilities(Default::default());
        let bare_json = serde_json::value::to_raw_value(&bare).ok()?;
        Some(Self {
            client,
            h1: H1Pool::for_url(&url),
            url,
            headers,
            meta,
            meta_json,
            bare_json,
            mirrored,
            ids: AtomicU64::new(1),
        })
    }

    /// A new request id for this upstream.
    pub(crate) fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends `tools/call` as request `id` and reads its answer, relaying the call's progress
    /// and log notifications to the calling client on the way.
    pub(crate) async fn call(
        &self,
        id: u64,
        params: &CallToolRequestParams,
        client: Option<&ClientContext>,
        bearer: Option<&str>,
    ) -> Result<ServerResult, HttpCallError> {
        let progress = client.and_then(|c| c.progress_token.as_ref()).map(|_| {
            ProgressToken(rmcp::model::NumberOrString::String(
                format!("warden-{id}").into(),
            ))
        });
        let encode = |e: serde_json::Error| {
            HttpCallError::Transport(format!("cannot encode the request: {e}"))
        };
        let name = HeaderValue::from_str(&params.name)
            .map_err(|_| HttpCallError::Transport("the tool name is not a valid header".into()))?;
        let body = serde_json::to_vec(&Envelope {
            jsonrpc: "2.0",
            id,
            method: "tools/call",
            params: &CallParams::new(
                params,
                &self.call_meta(params, progress.as_ref()).map_err(encode)?,
            ),
        })
        .map_err(encode)?;
        let mut params_headers = match self.mirrored.get(params.name.as_ref()) {
            Some(mirrored) => param_headers(mirrored, params.arguments.as_ref())?,
            None => Vec::new(),
        };
        // The trace context told in `_meta` goes in the W3C headers too (OPS-3).
        if let Some(meta) = &params.meta {
            for (name, value) in [
                ("traceparent", meta.get_traceparent()),
                ("tracestate", meta.get_tracestate()),
            ] {
                if let Some(v) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
                    params_headers.push((HeaderName::from_static(name), v));
                }
            }
        }
        let (status, content_type, answer) = self
            .post(name, &params_headers, bearer, Bytes::from(body))
            .await?;
        // What this call holds of the budget of large answers, until it returns.
        let mut held = budget::Held::new();
        if !status.is_success() {
            let body = read_limited(answer, MAX_ERROR_RESPONSE, &mut held)
                .await
                .unwrap_or_default();
            if let Ok(Message {
                error: Some(error), ..
            }) = serde_json::from_slice::<Message>(&body)
            {
                return Err(HttpCallError::Refused(error));
            }
            return Err(HttpCallError::Transport(format!("HTTP {status}")));
        }
        match content_type.as_str() {
            "application/json" => {
                let body = read_limited(answer, MAX_JSON_RESPONSE, &mut held)
                    .await
                    .map_err(HttpCallError::Transport)?;
                let message: Message = serde_json::from_slice(&body).map_err(|e| {
                    HttpCallError::Transport(format!("the answer is not JSON-RPC: {e}"))
                })?;
                message.answer(id).unwrap_or_else(|_| {
                    Err(HttpCallError::Transport("no answer to the call".into()))
                })
            }
            "text/event-stream" => {
                // Bytes read since the last whole event: the limit is each message's (the
                // result's), not the stream's — relayed progress does not count toward it.
                let since_event = std::sync::Arc::new(AtomicU64::new(0));
                let seen = since_event.clone();
                let holding = std::sync::Arc::new(std::sync::Mutex::new(budget::Held::new()));
                let held = holding.clone();
                let bytes = answer.then(move |chunk| {
                    let (seen, holding) = (seen.clone(), holding.clone());
                    async move {
                        let chunk = chunk.map_err(std::io::Error::other)?;
                        let read = seen.fetch_add(chunk.len() as u64, Ordering::Relaxed)
                            + chunk.len() as u64;
                        if read > MAX_SSE_RESPONSE as u64 {
                            return Err(std::io::Error::other(format!(
                                "a message of the answer exceeds {} MiB",
                                MAX_SSE_RESPONSE >> 20
                            )));
                        }
                        if read > budget::FREE as u64 {
                            let has = holding.lock().map_or(0, |h| h.len());
                            let len = usize::try_from(read).unwrap_or(usize::MAX);
                            let more = budget::more(has, len).await;
                            if let Ok(mut h) = holding.lock() {
                                h.extend(more);
                            }
                        }
                        Ok(chunk)
                    }
                });
                let events = sse_stream::SseStream::from_bytes_stream(bytes);
                let mut events = std::pin::pin!(events);
                while let Some(event) = events.next().await {
                    let event = event.map_err(|e| {
                        HttpCallError::Transport(format!("the answer stream failed: {e}"))
                    })?;
                    since_event.store(0, Ordering::Relaxed);
                    let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                        continue;
                    };
                    let Ok(message) = serde_json::from_str::<Message>(&data) else {
                        tracing::debug!("skipping an upstream SSE event that is not JSON-RPC");
                        continue;
                    };
                    match message.answer(id) {
                        Ok(answer) => return answer,
                        Err(message) => {
                            relay_notification(*message, progress.as_ref(), client).await;
                            if let Ok(mut h) = held.lock() {
                                h.clear();
                            }
                        }
                    }
                }
                Err(HttpCallError::Transport(
                    "the answer stream ended before the result".into(),
                ))
            }
            other => Err(HttpCallError::Transport(format!(
                "unexpected answer of type `{other}` (HTTP {status})"
            ))),
        }
    }

    /// The `_meta` of a call: the fixed entries, under what the call carries (its log level,
    /// its client's capabilities), and the progress token Warden relays under. Usually just
    /// the fixed entries — or them for a client that declares no capability — written once.
    fn call_meta(
        &self,
        params: &CallToolRequestParams,
        progress: Option<&ProgressToken>,
    ) -> serde_json::Result<Cow<'_, RawValue>> {
        if progress.is_none() {
            match &params.meta {
                None => return Ok(Cow::Borrowed(&*self.meta_json)),
                // A client that declares no capability: `{}` (looked at, not decoded).
                Some(m)
                    if m.len() == 1
                        && m.get(CLIENT_CAPABILITIES)
                            .and_then(serde_json::Value::as_object)
                            .is_some_and(serde_json::Map::is_empty) =>
                {
                    return Ok(Cow::Borrowed(&*self.bare_json));
                }
                Some(_) => {}
            }
        }
        let mut meta = self.meta.clone();
        if let Some(own) = &params.meta {
            meta.extend(own.clone());
        }
        if let Some(token) = progress {
            meta.set_progress_token(token.clone());
        }
        serde_json::value::to_raw_value(&meta).map(Cow::Owned)
    }

    /// `POST`s a call's `body` (its tool `name` in `Mcp-Name`) and returns the answer's
    /// status, media type and body: on the calling task over HTTP/1.1 when the upstream is
    /// plain `http://`, through reqwest otherwise and for a 307 or 308 (the request not
    /// executed, to be repeated elsewhere), which reqwest follows under its redirect policy.
    /// Any other answer, other redirects included, is the call's.
    async fn post(
        &self,
        name: HeaderValue,
        params: &[(HeaderName, HeaderValue)],
        bearer: Option<&str>,
        body: Bytes,
    ) -> Result<(StatusCode, String, Answer<'_>), HttpCallError> {
        // The caller's exchanged token (AUTH-6) replaces any configured `Authorization`.
        let authorization = match bearer {
            None => None,
            Some(token) => {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                        HttpCallError::Transport("the exchanged token is not a valid header".into())
                    })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let headers = || {
            let mut headers = self.headers.clone();
            headers.insert(HeaderName::from_static("mcp-name"), name.clone());
            for (k, v) in params {
                headers.insert(k.clone(), v.clone());
            }
            if let Some(value) = &authorization {
                headers.insert(http::header::AUTHORIZATION, value.clone());
            }
            headers
        };
        if let Some(h1) = &self.h1 {
            let (status, answer_headers, stream) = h1
                .post(headers(), body.clone())
                .await
                .map_err(HttpCallError::Transport)?;
            let repeat = matches!(
                status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            );
            if !repeat {
                return Ok((status, content_type(&answer_headers), Box::pin(stream)));
            }
        }
        let response = self
            .client
            .post(self.url.clone())
            .headers(headers())
            .body(body)
            .send()
            .await
            .map_err(|e| HttpCallError::Transport(transport_error(&e)))?;
        let status = response.status();
        let content_type = content_type(response.headers());
        let stream = response.bytes_stream().map(|chunk| {
            chunk.map_err(|e| format!("cannot read the answer: {}", transport_error(&e)))
        });
        Ok((status, content_type, Box::pin(stream)))
    }

    /// Tells the upstream, best effort, that request `id` was cancelled by its client.
    /// `bearer` is the call's own (AUTH-6), if it had one.
    pub(crate) async fn cancel(&self, id: u64, bearer: Option<&str>) {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "cancelled by the client"},
        });
        let mut headers = self.headers.clone();
        headers.insert(
            HeaderName::from_static("mcp-method"),
            HeaderValue::from_static("notifications/cancelled"),
        );
        if let Some(value) = bearer.and_then(|t| HeaderValue::from_str(&format!("Bearer {t}")).ok())
        {
            headers.insert(http::header::AUTHORIZATION, value);
        }
        let sent = self
            .client
            .post(self.url.clone())
            .headers(headers)
            .body(body.to_string())
            .send();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), sent).await;
    }
}

/// A reqwest error as one line, with its cause (reqwest's own message says only "error
/// sending request").
fn transport_error(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

/// An answer's body, from reqwest or from [`pool`].
type Answer<'a> = Pin<Box<dyn Stream<Item = Result<Bytes, String>> + Send + 'a>>;

/// The media type of an answer, lowercase, without parameters.
fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

/// The answer's body, at most `limit` bytes, within the budget of large answers (`held` holds
/// its part).
async fn read_limited(
    mut answer: Answer<'_>,
    limit: usize,
    held: &mut budget::Held,
) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = answer.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > limit {
            return Err(format!("the answer exceeds {} KiB", limit >> 10));
        }
        body.extend_from_slice(&chunk);
        if body.len() > budget::FREE {
            held.extend(budget::more(held.len(), body.len()).await);
        }
    }
    Ok(body)
}

/// A request on the wire.
#[derive(serde::Serialize)]
struct Envelope<'a, P> {
    jsonrpc: &'static str,
    id: u64,
    method: &'static str,
    params: &'a P,
}

/// `tools/call` parameters as rmcp writes [`CallToolRequestParams`] (field for field, in its
/// order), with a `_meta` already written: the fixed part of it is the same for every call.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct CallParams<'a> {
    #[serde(rename = "_meta")]
    meta: &'a RawValue,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a InputResponses>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a str>,
}

impl<'a> CallParams<'a> {
    fn new(params: &'a CallToolRequestParams, meta: &'a RawValue) -> Self {
        Self {
            meta,
            name: &params.name,
            arguments: params.arguments.as_ref(),
            input_responses: params.input_responses.as_ref(),
            request_state: params.request_state.as_deref(),
        }
    }
}

/// Any JSON-RPC message from the upstream, read once.
#[derive(serde::Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<serde_json::Value>,
    #[serde(default)]
    result: Option<serde_json::Value>,
    #[serde(default)]
    error: Option<rmcp::ErrorData>,
}

impl Message {
    /// The answer to request `id`, when this message is it (else the message itself).
    fn answer(self, id: u64) -> Result<Result<ServerResult, HttpCallError>, Box<Self>> {
        if self.method.is_some() || self.id.as_ref().and_then(serde_json::Value::as_u64) != Some(id)
        {
            // A JSON-RPC error without an id answers the request it could not read.
            return match self {
                Self {
                    method: None,
                    id: None,
                    error: Some(error),
                    ..
                } => Ok(Err(HttpCallError::Refused(error))),
                other => Err(Box::new(other)),
            };
        }
        if let Some(error) = self.error {
            return Ok(Err(HttpCallError::Refused(error)));
        }
        let Some(result) = self.result else {
            return Ok(Err(HttpCallError::Transport(
                "the answer has neither a result nor an error".into(),
            )));
        };
        let kind = result
            .get("resultType")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        Ok(match kind {
            "input_required" => serde_json::from_value::<InputRequiredResult>(result)
                .map(ServerResult::InputRequiredResult)
                .map_err(|e| {
                    HttpCallError::Transport(format!("not an input_required result: {e}"))
                }),
            // The tasks extension: the upstream runs the call as a task.
            "task" => serde_json::from_value::<rmcp::model::CreateTaskResult>(result)
                .map(ServerResult::CreateTaskResult)
                .map_err(|e| HttpCallError::Transport(format!("not a task: {e}"))),
            _ => serde_json::from_value::<CallToolResult>(result)
                .map(ServerResult::CallToolResult)
                .map_err(|e| HttpCallError::Transport(format!("not a tools/call result: {e}"))),
        })
    }
}

/// Relays a notification of the call's stream to the calling client: its progress (under the
/// client's own token) and log messages; anything else is not the client's business.
#[allow(
    deprecated,
    reason = "logging is still part of the 2025-11-25 protocol a client may speak"
)]
async fn relay_notification(
    message: Message,
    progress: Option<&ProgressToken>,
    client: Option<&ClientContext>,
) {
    let (Some(method), Some(params)) = (message.method, message.params) else {
        return;
    };
    if message.id.is_some() {
        tracing::debug!(%method, "an upstream sent a request on a 2026-07-28 call stream: ignored");
        return;
    }
    let relay = match method.as_str() {
        "notifications/progress" => {
            match serde_json::from_value::<rmcp::model::ProgressNotificationParam>(params) {
                Ok(p) if Some(&p.progress_token) == progress => Relay::Progress(p),
                _ => return,
            }
        }
        "notifications/message" => {
            match serde_json::from_value::<rmcp::model::LoggingMessageNotificationParam>(params) {
                Ok(l) => Relay::Log(l),
                Err(_) => return,
            }
        }
        _ => return,
    };
    perform(client, relay).await;
}

#[cfg(test)]
mod tests;
