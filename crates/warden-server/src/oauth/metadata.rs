//! RFC 9728 protected-resource metadata, and the `WWW-Authenticate` challenges that point
//! clients to it (AUTH-4).
//!
//! Served while at least one issuer is configured, at `/.well-known/oauth-protected-resource`
//! (the server as a whole) and its path-suffixed forms for `/mcp` and `/mcp/agents/{agent}`:
//! the `resource` is the URL the metadata was asked for, the authorization servers are the
//! configured issuers, the scopes those Warden understands. Without an issuer there is nothing
//! to sign in with: the metadata is not found and challenges do not point to it.
//!
//! Resource URLs are this server's own (`resource`): `--public-url` when it is set, else the
//! listener's; the request's `Host` only chooses among them, so that they are the URLs the
//! client used (MCP clients refuse metadata whose `resource` is not their server URL) and
//! always URLs whose tokens are accepted.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use warden_core::oauth::MCP_SCOPE;

use crate::state::AppState;

/// Where the metadata is.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata routes.
pub(crate) fn metadata_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(WELL_KNOWN, get(root))
        .route(&format!("{WELL_KNOWN}/mcp"), get(mcp))
        .route(&format!("{WELL_KNOWN}/mcp/agents/{{agent}}"), get(agent))
}

/// The origin a request reached, as the metadata and challenges name it: one of this
/// server's own ([`super::resource::Origins`]), chosen by `Host`.
fn origin<'s>(state: &'s AppState, headers: &HeaderMap) -> &'s str {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    state.origins().for_host(host)
}

/// The metadata URL for a request to `path`.
fn metadata_url(origin: &str, path: &str) -> String {
    let suffix = if path == "/mcp" || path.starts_with("/mcp/agents/") {
        path.trim_end_matches('/')
    } else {
        ""
    };
    format!("{origin}{WELL_KNOWN}{suffix}")
}

/// The `WWW-Authenticate` value of a refusal of `request`: `Bearer realm="warden"`, with the
/// metadata URL and the scope to ask for while an issuer is configured, and the error code
/// and its description when there is one (RFC 6750 §3).
pub(crate) fn challenge(
    state: &AppState,
    request: &Request,
    error: Option<(&str, &str)>,
) -> HeaderValue {
    let mut value = String::from("Bearer realm=\"warden\"");
    let mcp = request.uri().path().starts_with("/mcp");
    if mcp && !state.gateway.snapshot().policy.issuers().is_empty() {
        let origin = origin(state, request.headers());
        value.push_str(&format!(
            ", resource_metadata=\"{}\", scope=\"{MCP_SCOPE}\"",
            metadata_url(origin, request.uri().path())
        ));
    }
    if let Some((code, description)) = error {
        let description: String = description
            .chars()
            .filter(|c| *c != '"' && *c != '\\' && (' '..='~').contains(c))
            .take(300)
            .collect();
        value.push_str(&format!(
            ", error=\"{code}\", error_description=\"{description}\""
        ));
    }
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

async fn root(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let origin = origin(&state, &headers).to_owned();
    document(&state, origin)
}

async fn mcp(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let origin = origin(&state, &headers);
    document(&state, format!("{origin}/mcp"))
}

async fn agent(
    State(state): State<Arc<AppState>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    if state.gateway.snapshot().policy.agent(&agent).is_none() {
        return not_found(format!(
            "no agent named `{}`",
            agent.chars().take(64).collect::<String>()
        ));
    }
    let origin = origin(&state, &headers);
    document(&state, format!("{origin}/mcp/agents/{agent}"))
}

fn not_found(message: String) -> Response {
    let mut response = (
        StatusCode::NOT_FOUND,
        axum::Json(serde_json::json!({"error": message, "code": "NOT_FOUND"})),
    )
        .into_response();
    cors(&mut response);
    response
}

/// Anyone may read the metadata, browsers included.
fn cors(response: &mut Response) {
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
}

fn document(state: &AppState, resource: String) -> Response {
    let snapshot = state.gateway.snapshot();
    let issuers = snapshot.policy.issuers();
    if issuers.is_empty() {
        return not_found(
            "no issuer is configured: this server accepts its own `wdn_` tokens only (docs/oauth.md)"
                .into(),
        );
    }
    let mut response = axum::Json(serde_json::json!({
        "resource": resource,
        "authorization_servers": issuers.iter().map(|i| i.issuer.as_str()).collect::<Vec<_>>(),
        "scopes_supported": [MCP_SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "Warden",
    }))
    .into_response();
    cors(&mut response);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_the_resource_path() {
        let o = "http://127.0.0.1:8600";
        assert_eq!(
            metadata_url(o, "/mcp"),
            "http://127.0.0.1:8600/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url(o, "/mcp/agents/sre-bot"),
            "http://127.0.0.1:8600/.well-known/oauth-protected-resource/mcp/agents/sre-bot"
        );
        assert_eq!(
            metadata_url(o, "/api/v1/runs"),
            "http://127.0.0.1:8600/.well-known/oauth-protected-resource"
        );
    }
}
