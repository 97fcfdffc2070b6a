//! JSON-RPC's own errors for a body that is not one JSON-RPC request (REL-1): HTTP 400 with a
//! JSON-RPC error object — parse error (-32700) for a body that is not JSON, invalid request
//! (-32600) for JSON that is not a request envelope (a batch, a missing or wrong `jsonrpc`, an
//! id that is neither a string nor an integer, no `method`). rmcp answers both with a bare 415,
//! which a JSON-RPC client cannot read; everything else rmcp answers stays its own.
//!
//! The answer's id is the request's when it has a valid one, else `null` (JSON-RPC 2.0, 5.1).

use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde_json::{Value, json};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// The answer to a JSON body rmcp could not take as a JSON-RPC message.
pub(crate) fn malformed(body: &[u8]) -> Response {
    let (code, message, id) = match serde_json::from_slice::<Value>(body) {
        Err(e) => (
            PARSE_ERROR,
            format!("parse error: the body is not JSON ({e})"),
            Value::Null,
        ),
        Ok(value) => {
            let id = value
                .get("id")
                .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
                .cloned()
                .unwrap_or(Value::Null);
            (INVALID_REQUEST, invalid(&value), id)
        }
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// What is wrong with a JSON value that is not a JSON-RPC message.
fn invalid(value: &Value) -> String {
    let prefix = "invalid request";
    let Some(object) = value.as_object() else {
        return if value.is_array() {
            format!("{prefix}: batches are not supported (MCP sends one message per request)")
        } else {
            format!("{prefix}: a JSON-RPC message is a JSON object")
        };
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return format!("{prefix}: `jsonrpc` must be \"2.0\"");
    }
    if let Some(id) = object.get("id")
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return format!("{prefix}: `id` must be a string or an integer");
    }
    match object.get("method") {
        Some(Value::String(_)) => {
            format!("{prefix}: the message does not match the MCP method's parameters")
        }
        Some(_) => format!("{prefix}: `method` must be a string"),
        None if object.contains_key("result") || object.contains_key("error") => {
            format!("{prefix}: a response with no request to answer")
        }
        None => format!("{prefix}: `method` is missing"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    async fn answer(body: &str) -> (StatusCode, Value) {
        let response = malformed(body.as_bytes());
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn a_body_that_is_not_json_is_a_parse_error() {
        let (status, body) = answer("{\"jsonrpc\": \"2.0\", ").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["code"], -32700);
        assert_eq!(body["id"], Value::Null);
    }

    #[tokio::test]
    async fn a_batch_a_bad_id_and_a_bad_version_are_invalid_requests() {
        for (body, message, id) in [
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                "invalid request: batches are not supported (MCP sends one message per request)",
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
                "invalid request: `id` must be a string or an integer",
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
                "invalid request: `jsonrpc` must be \"2.0\"",
                json!(7),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":7}"#,
                "invalid request: the message does not match the MCP method's parameters",
                json!("a"),
            ),
        ] {
            let (status, answer) = answer(body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(
                answer,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": message}}),
                "{body}"
            );
        }
    }
}
