//! The admin API as the CLI calls it (OPS-5): one client for every verb that goes through a
//! server, and the one mapping from the server's answers to the CLI's errors and exit
//! statuses (docs/cli.md, "Exit status"): 400 and 422 are usage or configuration errors (2),
//! as the same problems are on a store; a refused token is one too (2, naming
//! `WARDEN_TOKEN`); every other refusal, an unreachable server and a 5xx are runtime failures
//! (1). The message is the server's own `error`, one line per problem, as a verb on the store
//! prints it.

use serde_json::Value;
use warden_core::config::ConfigError;

use crate::common::usage;

/// The admin API of one server, with the token the CLI calls it with.
#[derive(Debug)]
pub(crate) struct Api {
    server: String,
    base: reqwest::Url,
    token: String,
    client: reqwest::Client,
}

/// Why a call of the API did not succeed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The server refused (4xx but 401), in the admin API's error shape.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The error's `code` (`NOT_FOUND`, `IN_USE`, …).
        code: String,
        /// The error's `error`: one line per problem.
        message: String,
        /// The configuration problems it names, if any.
        errors: Vec<ConfigError>,
    },
    /// Anything else, as the CLI's error (with its exit status).
    Failed(anyhow::Error),
}

impl From<Failure> for anyhow::Error {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Failed(e) => e,
            Failure::Refused {
                status, message, ..
            } => {
                let lines = message.lines().collect::<Vec<_>>().join("\nerror: ");
                if matches!(status, 400 | 422) {
                    usage(lines)
                } else {
                    anyhow::anyhow!(lines)
                }
            }
        }
    }
}

impl Api {
    /// The API of the server at `server` (a base URL), called with `token`.
    pub(crate) fn new(server: &str, token: String) -> anyhow::Result<Self> {
        let base = reqwest::Url::parse(server)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && !u.cannot_be_a_base())
            .ok_or_else(|| {
                usage(format!(
                    "`{server}` is not a server's base URL; give one such as http://127.0.0.1:8600"
                ))
            })?;
        warden_mcp::http_client::install_tls();
        Ok(Self {
            server: server.trim_end_matches('/').to_owned(),
            base,
            token,
            client: reqwest::Client::new(),
        })
    }

    /// The URL of `/api/v1/<path…>` (each segment percent-encoded) with `query`.
    fn url(&self, path: &[&str], query: &[(&str, String)]) -> reqwest::Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments
                .pop_if_empty()
                .extend(["api", "v1"])
                .extend(path.iter().copied());
        }
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        url
    }

    /// `GET /api/v1/<path…>?<query>`.
    pub(crate) async fn get(
        &self,
        path: &[&str],
        query: &[(&str, String)],
    ) -> Result<Value, Failure> {
        self.json(reqwest::Method::GET, path, query, None).await
    }

    /// `POST /api/v1/<path…>?<query>` with a JSON body.
    pub(crate) async fn post(
        &self,
        path: &[&str],
        query: &[(&str, String)],
        body: Value,
    ) -> Result<Value, Failure> {
        self.json(reqwest::Method::POST, path, query, Some(body))
            .await
    }

    /// `PATCH /api/v1/<path…>` with a JSON body.
    pub(crate) async fn patch(&self, path: &[&str], body: Value) -> Result<Value, Failure> {
        self.json(reqwest::Method::PATCH, path, &[], Some(body))
            .await
    }

    /// `DELETE /api/v1/<path…>`.
    pub(crate) async fn delete(&self, path: &[&str]) -> Result<Value, Failure> {
        self.json(reqwest::Method::DELETE, path, &[], None).await
    }

    async fn json(
        &self,
        method: reqwest::Method,
        path: &[&str],
        query: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Value, Failure> {
        let response = self.send(method, path, query, body).await?;
        let text = response.text().await.map_err(|e| self.unreadable(&e))?;
        serde_json::from_str(&text).map_err(|e| {
            Failure::Failed(anyhow::anyhow!(
                "the server at {} answered something that is not JSON: {e}",
                self.server
            ))
        })
    }

    /// A `tools/call` of `tool` with `arguments` on the server's MCP endpoint, as an MCP client
    /// of 2026-07-28 sends it (stateless): governed like any other client's call. The result's
    /// JSON, or the JSON-RPC error as a refusal.
    pub(crate) async fn mcp_call(
        &self,
        tool: &str,
        arguments: Option<Value>,
    ) -> Result<Value, Failure> {
        const VERSION: &str = "2026-07-28";
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().push("mcp");
        }
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments.unwrap_or_else(|| serde_json::json!({})),
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "warden-cli", "version": env!("CARGO_PKG_VERSION")}
                }
            }
        });
        let mut request = self
            .client
            .post(url)
            .bearer_auth(&self.token)
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", "tools/call")
            .json(&body);
        // A name that cannot travel as a header value is left to the server to refuse.
        if let Ok(name) = reqwest::header::HeaderValue::from_str(tool) {
            request = request.header("mcp-name", name);
        }
        let response = request.send().await.map_err(|e| {
            Failure::Failed(anyhow::anyhow!(
                "cannot reach the server at {}: {e}; is `warden serve` running there (--server, WARDEN_SERVER)?",
                self.server
            ))
        })?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| self.unreadable(&e))?;
        // An event stream's last `data:` line is the answer; a JSON body is one.
        let answer = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .next_back()
            .unwrap_or(&text);
        let message: Value = serde_json::from_str(answer.trim()).map_err(|_| Failure::Refused {
            status,
            code: "UNEXPECTED".into(),
            message: format!(
                "the server at {} answered {status}: {}",
                self.server,
                text.trim()
            ),
            errors: Vec::new(),
        })?;
        if let Some(error) = message.get("error") {
            return Err(Failure::Refused {
                status,
                code: error
                    .get("code")
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the call was refused")
                    .to_owned(),
                errors: Vec::new(),
            });
        }
        Ok(message.get("result").cloned().unwrap_or(Value::Null))
    }

    /// `GET /api/v1/<path…>?<query>` answered in JSON Lines, each line handed to `each` as it
    /// arrives.
    pub(crate) async fn lines(
        &self,
        path: &[&str],
        query: &[(&str, String)],
        mut each: impl FnMut(Value) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let response = self.send(reqwest::Method::GET, path, query, None).await?;
        let line = |bytes: &[u8]| -> anyhow::Result<()> {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            let value = serde_json::from_slice(bytes).map_err(|e| {
                anyhow::anyhow!(
                    "the server at {} answered a line that is not JSON: {e}",
                    self.server
                )
            })?;
            each(value)
        };
        self.each_line(response, line).await
    }

    /// `POST /api/v1/<path…>` with a JSON body, answered as an event stream: each event's
    /// name and data handed to `each` as it arrives.
    pub(crate) async fn events(
        &self,
        path: &[&str],
        body: Value,
        mut each: impl FnMut(&str, Value) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let response = self
            .send_accepting(
                reqwest::Method::POST,
                path,
                &[],
                Some(body),
                Some("text/event-stream"),
            )
            .await?;
        let mut name = String::new();
        let mut data = String::new();
        self.each_line(response, |bytes| {
            let line = String::from_utf8_lossy(bytes);
            let line = line.trim_end_matches(['\r', '\n']);
            if let Some(v) = line.strip_prefix("event:") {
                v.trim().clone_into(&mut name);
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            } else if line.is_empty() && !data.is_empty() {
                let value = serde_json::from_str(&data).unwrap_or(Value::Null);
                each(&name, value)?;
                name.clear();
                data.clear();
            }
            Ok(())
        })
        .await
    }

    /// Hands each whole line of a streamed answer (its newline included; the last one
    /// perhaps without) to `line` as it arrives: bytes are kept until a line is whole, since
    /// a character may be split between chunks.
    async fn each_line(
        &self,
        mut response: reqwest::Response,
        mut line: impl FnMut(&[u8]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut pending: Vec<u8> = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| anyhow::Error::from(self.unreadable(&e)))?
        {
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let rest = pending.split_off(end + 1);
                line(&pending)?;
                pending = rest;
            }
        }
        line(&pending)
    }

    /// Sends a request; the answer when it succeeded, else why not.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &[&str],
        query: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<reqwest::Response, Failure> {
        self.send_accepting(method, path, query, body, None).await
    }

    /// [`Self::send`], asking for `accept`.
    async fn send_accepting(
        &self,
        method: reqwest::Method,
        path: &[&str],
        query: &[(&str, String)],
        body: Option<Value>,
        accept: Option<&str>,
    ) -> Result<reqwest::Response, Failure> {
        let mut request = self
            .client
            .request(method, self.url(path, query))
            .bearer_auth(&self.token);
        if let Some(accept) = accept {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| {
            Failure::Failed(anyhow::anyhow!(
                "cannot reach the server at {}: {e}; is `warden serve` running there (--server, WARDEN_SERVER)?",
                self.server
            ))
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response.text().await.unwrap_or_default();
        let body: Option<Value> = serde_json::from_str(&text).ok();
        let message = body
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
            .map_or_else(|| text.trim().to_owned(), str::to_owned);
        if status == reqwest::StatusCode::UNAUTHORIZED {
            return Err(Failure::Failed(usage(format!(
                "the server at {} refused the token ({message}): set WARDEN_TOKEN to a valid token (`warden token create`)",
                self.server
            ))));
        }
        if !status.is_client_error() {
            return Err(Failure::Failed(anyhow::anyhow!(
                "the server at {} answered {status}: {message}",
                self.server
            )));
        }
        let code = body
            .as_ref()
            .and_then(|v| v.get("code"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let errors = body
            .as_ref()
            .and_then(|v| v.get("errors").cloned())
            .and_then(|e| serde_json::from_value::<Vec<ConfigError>>(e).ok())
            .unwrap_or_default();
        Err(Failure::Refused {
            status: status.as_u16(),
            code,
            message,
            errors,
        })
    }

    fn unreadable(&self, e: &reqwest::Error) -> Failure {
        Failure::Failed(anyhow::anyhow!(
            "the answer of the server at {} could not be read: {e}",
            self.server
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_encoded_under_the_base_and_its_own_path() {
        let api = Api::new("http://127.0.0.1:8600/", "t".into()).unwrap();
        assert_eq!(
            api.url(&["resources", "toolpolicy", "payments/ledger__refund"], &[])
                .as_str(),
            "http://127.0.0.1:8600/api/v1/resources/toolpolicy/payments%2Fledger__refund"
        );
        let api = Api::new("https://example.com/warden", "t".into()).unwrap();
        assert_eq!(
            api.url(&["audit"], &[("principal", "user:a b".into())])
                .as_str(),
            "https://example.com/warden/api/v1/audit?principal=user%3Aa+b"
        );
        assert!(Api::new("127.0.0.1:8600", "t".into()).is_err());
    }

    #[test]
    fn refusals_keep_one_line_per_problem_and_their_exit_status() {
        let refused = |status| Failure::Refused {
            status,
            code: "X".into(),
            message: "one\ntwo".into(),
            errors: Vec::new(),
        };
        let e = anyhow::Error::from(refused(422));
        assert_eq!(e.to_string(), "one\nerror: two");
        assert!(e.downcast_ref::<crate::common::UsageError>().is_some());
        let e = anyhow::Error::from(refused(404));
        assert!(e.downcast_ref::<crate::common::UsageError>().is_none());
    }
}
