//! A lean MCP client over Streamable HTTP for load generation: JSON-RPC requests as the
//! protocol defines them, in either era, and nothing else.
//!
//! Why not the rmcp client: a load generator shares the machine with what it measures, so it
//! must spend as little as possible per request and must measure one request, not an SDK's
//! tasks, channels and caches. A request here is one HTTP POST on a kept-alive connection and a
//! scan of the answer for the response object.

use std::sync::Arc;

use serde_json::{Value, json};

/// The protocol era a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Era {
    /// 2025-11-25: `initialize`, then requests on an `Mcp-Session-Id` session.
    #[serde(rename = "2025-11-25")]
    V2025,
    /// 2026-07-28: stateless; protocol metadata in `_meta` and headers on every request.
    #[serde(rename = "2026-07-28")]
    V2026,
}

impl Era {
    /// The protocol version string.
    pub fn version(self) -> &'static str {
        match self {
            Self::V2025 => "2025-11-25",
            Self::V2026 => "2026-07-28",
        }
    }
}

/// Where requests go.
#[derive(Debug)]
pub struct Endpoint {
    /// The MCP URL (e.g. `http://127.0.0.1:8600/mcp`).
    pub url: String,
    /// A bearer token, if the endpoint needs one.
    pub token: Option<String>,
    /// The era to speak.
    pub era: Era,
}

/// Why a request failed, by kind (the kinds are what reports count).
#[derive(Debug)]
pub enum CallError {
    /// A non-2xx HTTP status.
    Http(u16),
    /// Connecting, sending or reading failed.
    Transport(String),
    /// A JSON-RPC error object.
    Rpc(i64, String),
    /// An answer that is not what the protocol says.
    Protocol(String),
}

impl CallError {
    /// A short, stable kind for reports: `http_401`, `transport`, `rpc_-32602`, `protocol`.
    pub fn kind(&self) -> String {
        match self {
            Self::Http(status) => format!("http_{status}"),
            Self::Transport(_) => "transport".into(),
            Self::Rpc(code, _) => format!("rpc_{code}"),
            Self::Protocol(_) => "protocol".into(),
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Http(status) => write!(f, "HTTP {status}"),
            Self::Transport(e) => write!(f, "transport: {e}"),
            Self::Rpc(code, message) => write!(f, "JSON-RPC error {code}: {message}"),
            Self::Protocol(e) => write!(f, "protocol: {e}"),
        }
    }
}

/// One client's connection: a session in 2025-11-25, nothing but headers in 2026-07-28.
#[derive(Debug)]
pub struct Conn {
    http: reqwest::Client,
    endpoint: Arc<Endpoint>,
    session: Option<String>,
    next_id: u64,
}

impl Conn {
    /// Opens a connection; in 2025-11-25 this is the `initialize` handshake.
    pub async fn open(http: reqwest::Client, endpoint: Arc<Endpoint>) -> Result<Self, CallError> {
        let mut conn = Self {
            http,
            endpoint,
            session: None,
            next_id: 1,
        };
        if conn.endpoint.era == Era::V2025 {
            let params = json!({
                "protocolVersion": Era::V2025.version(),
                "capabilities": {},
                "clientInfo": {"name": "warden-bench", "version": env!("CARGO_PKG_VERSION")},
            });
            let response = conn.post("initialize", None, Some(params), true).await?;
            conn.session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            read_result(response, 0).await?;
            if conn.session.is_none() {
                return Err(CallError::Protocol(
                    "no Mcp-Session-Id after initialize".into(),
                ));
            }
            let done = conn
                .post("notifications/initialized", None, None, false)
                .await?;
            if !done.status().is_success() {
                return Err(CallError::Http(done.status().as_u16()));
            }
        }
        Ok(conn)
    }

    /// `tools/call`: the result object.
    pub async fn call_tool(&mut self, name: &str, arguments: &Value) -> Result<Value, CallError> {
        self.request(
            "tools/call",
            Some(name),
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    /// `tools/list`: the result object.
    pub async fn list_tools(&mut self) -> Result<Value, CallError> {
        self.request("tools/list", None, json!({})).await
    }

    async fn request(
        &mut self,
        method: &str,
        name: Option<&str>,
        params: Value,
    ) -> Result<Value, CallError> {
        let id = self.next_id;
        self.next_id += 1;
        let response = self.post(method, name, Some(params), true).await?;
        read_result(response, id).await
    }

    /// Sends one JSON-RPC message (a request when `request`, else a notification).
    async fn post(
        &self,
        method: &str,
        name: Option<&str>,
        params: Option<Value>,
        request: bool,
    ) -> Result<reqwest::Response, CallError> {
        let era = self.endpoint.era;
        let mut body = serde_json::Map::new();
        body.insert("jsonrpc".into(), json!("2.0"));
        body.insert("method".into(), json!(method));
        if request {
            body.insert("id".into(), json!(self.next_id.saturating_sub(1)));
        }
        if let Some(mut params) = params {
            if era == Era::V2026
                && let Some(params) = params.as_object_mut()
            {
                params.insert(
                    "_meta".into(),
                    json!({
                        "io.modelcontextprotocol/protocolVersion": era.version(),
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/clientInfo": {"name": "warden-bench", "version": env!("CARGO_PKG_VERSION")},
                    }),
                );
            }
            body.insert("params".into(), params);
        }
        let body = Value::Object(body);
        let mut post = self
            .http
            .post(&self.endpoint.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if method != "initialize" {
            post = post.header("mcp-protocol-version", era.version());
        }
        if era == Era::V2026 {
            post = post.header("mcp-method", method);
            if let Some(name) = name {
                post = post.header("mcp-name", name);
            }
        }
        if let Some(session) = &self.session {
            post = post.header("mcp-session-id", session);
        }
        if let Some(token) = &self.endpoint.token {
            post = post.bearer_auth(token);
        }
        let response = post
            .send()
            .await
            .map_err(|e| CallError::Transport(e.to_string()))?;
        if !response.status().is_success() {
            return Err(CallError::Http(response.status().as_u16()));
        }
        Ok(response)
    }
}

/// The `result` of the response with `id`, from a JSON body or an SSE stream. An SSE stream is
/// read event by event and left as soon as the response arrives: waiting for the stream's end
/// would time the server's connection handling (and Nagle's algorithm), not the request.
async fn read_result(mut response: reqwest::Response, id: u64) -> Result<Value, CallError> {
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let message = if sse {
        let mut buffer: Vec<u8> = Vec::new();
        let mut found = None;
        'stream: while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| CallError::Transport(e.to_string()))?
        {
            buffer.extend_from_slice(&chunk);
            // Complete lines only; a partial last line waits for the next chunk.
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                if let Some(data) = line.trim_end().strip_prefix("data:")
                    && let Ok(m) = serde_json::from_str::<Value>(data.trim())
                    && m.get("id").and_then(Value::as_u64) == Some(id)
                {
                    found = Some(m);
                    break 'stream;
                }
            }
        }
        found.ok_or_else(|| CallError::Protocol("no response in the SSE stream".into()))?
    } else {
        let body = response
            .bytes()
            .await
            .map_err(|e| CallError::Transport(e.to_string()))?;
        serde_json::from_slice::<Value>(&body)
            .map_err(|e| CallError::Protocol(format!("unreadable JSON: {e}")))?
    };
    if let Some(error) = message.get("error") {
        return Err(CallError::Rpc(
            error.get("code").and_then(Value::as_i64).unwrap_or(0),
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ));
    }
    message
        .get("result")
        .cloned()
        .ok_or_else(|| CallError::Protocol("a response without a result".into()))
}
