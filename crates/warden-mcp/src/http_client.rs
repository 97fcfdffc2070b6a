//! The HTTP client Warden reaches Streamable HTTP upstreams (and, in the bridge, a remote
//! Warden) with.
//!
//! rmcp's default client turns connection pooling off (`pool_max_idle_per_host(0)`), to dodge
//! a Nagle/delayed-ACK stall when a body was left unread. That costs a TCP connect and an
//! accept, and a new connection task on both sides, for every single message: measured in
//! docs/benchmarks.md, one new connection (and one `TIME-WAIT` socket) per governed call.
//! Warden's client keeps idle connections and sets `TCP_NODELAY`, which removes the stall at
//! its cause; a connection whose body was not read to the end is simply not reused.

use std::time::Duration;

/// Makes rustls with *ring* the process's TLS provider, which every HTTP client of the process
/// (reqwest's, rmcp's) uses for `https://`. Idempotent; called before any client is built:
/// by `warden`'s main and by [`upstream_http_client`].
pub fn install_tls() {
    // An error means a provider is installed already, which is all that is needed.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// How long an idle upstream connection is kept for reuse.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How many redirects one request may follow.
const MAX_REDIRECTS: usize = 10;
/// How long a TCP connect to an upstream may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The process's one upstream client (cloning it shares its connection pool).
pub fn shared() -> Result<reqwest::Client, String> {
    static CLIENT: std::sync::OnceLock<Result<reqwest::Client, String>> =
        std::sync::OnceLock::new();
    CLIENT.get_or_init(upstream_http_client).clone()
}

/// A pooled client with `TCP_NODELAY`. Only same-origin 307/308 redirects are followed (they
/// keep the method and the JSON-RPC body; any other redirect would drop the body or replay
/// the session and headers to another host), at most [`MAX_REDIRECTS`] of them.
pub fn upstream_http_client() -> Result<reqwest::Client, String> {
    install_tls();
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_idle_timeout(IDLE_TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        }))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// How a failure of rmcp's Streamable HTTP client reads for people: what happened, without
/// the transport's type names — `cannot connect (Connection refused (os error 111))`,
/// `the server refused the credential (HTTP 401: invalid token)`.
pub fn transport_failure(error: &rmcp::transport::DynamicTransportError) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError as E;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(e) = cause {
        if let Some(http) = e.downcast_ref::<E<reqwest::Error>>() {
            return match http {
                E::AuthRequired(e) => format!(
                    "the server refused the credential (HTTP 401{})",
                    described(&e.www_authenticate_header)
                ),
                E::InsufficientScope(e) => format!(
                    "the credential's scope is not enough (HTTP 403{})",
                    described(&e.www_authenticate_header)
                ),
                E::Client(e) => request(e),
                other => other.to_string(),
            };
        }
        if let Some(e) = e.downcast_ref::<reqwest::Error>() {
            return request(e);
        }
        cause = e.source();
    }
    error.error.to_string()
}

/// How a failed HTTP request reads.
fn request(e: &reqwest::Error) -> String {
    if e.is_connect() {
        format!("cannot connect ({})", root_cause(e))
    } else if e.is_timeout() {
        "no answer in time".to_owned()
    } else {
        root_cause(e)
    }
}

/// How a failed MCP handshake reads (see [`transport_failure`]).
pub fn handshake_failure(error: &rmcp::service::ClientInitializeError) -> String {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            transport_failure(error)
        }
        other => other.to_string(),
    }
}

/// How a failed request reads (see [`transport_failure`]).
pub fn request_failure(error: &rmcp::service::ServiceError) -> String {
    match error {
        rmcp::service::ServiceError::TransportSend(error) => transport_failure(error),
        other => other.to_string(),
    }
}

/// Whether a handshake failed because the server refused the credential (HTTP 401 or 403).
pub fn credential_refused(error: &rmcp::service::ClientInitializeError) -> bool {
    matches!(
        error,
        rmcp::service::ClientInitializeError::TransportError { error, .. } if refused(error)
    )
}

/// Whether a request failed because the server refused the credential (HTTP 401 or 403): a
/// token revoked meanwhile, say.
pub fn request_refused(error: &rmcp::service::ServiceError) -> bool {
    matches!(error, rmcp::service::ServiceError::TransportSend(error) if refused(error))
}

/// Whether the server answered 401 or 403 — with a challenge, or (a bare 403) without.
fn refused(error: &rmcp::transport::DynamicTransportError) -> bool {
    use rmcp::transport::streamable_http_client::StreamableHttpError as E;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(e) = cause {
        if let Some(http) = e.downcast_ref::<E<reqwest::Error>>() {
            return match http {
                E::AuthRequired(_) | E::InsufficientScope(_) => true,
                E::HttpStatus(s) => matches!(s.status, 401 | 403),
                E::UnexpectedServerResponse(m) => {
                    m.starts_with("HTTP 401") || m.starts_with("HTTP 403")
                }
                _ => false,
            };
        }
        cause = e.source();
    }
    false
}

/// `: <error_description>` of a `WWW-Authenticate` challenge, when it has one.
fn described(challenge: &str) -> String {
    challenge
        .split_once("error_description=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(description, _)| format!(": {description}"))
        .unwrap_or_default()
}

/// The innermost error of `e`'s chain: the cause people recognise.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
