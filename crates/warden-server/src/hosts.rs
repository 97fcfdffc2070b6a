//! DNS-rebinding protection (XPORT-2): `Host` and `Origin` checks on every request.
//!
//! A loopback listener accepts the loopback names (`localhost`, `127.0.0.1`, `[::1]`) by
//! default; any other listener needs an explicit allow-list (`--allowed-host`, `*` for any).
//! An `Origin`, when present, must name an allowed host or be allow-listed itself.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

const LOOPBACK: [&str; 4] = ["localhost", "127.0.0.1", "::1", "[::1]"];

/// Which `Host` and `Origin` values are accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPolicy {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl HostPolicy {
    /// The policy for a listener: loopback names for a loopback address, plus the given
    /// hosts and origins. A non-loopback listener without allowed hosts is refused, so that
    /// a public deployment states its names explicitly.
    pub fn for_listener(
        addr: SocketAddr,
        hosts: &[String],
        origins: &[String],
    ) -> Result<Self, String> {
        let mut all: Vec<String> = hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        if addr.ip().is_loopback() {
            all.extend(LOOPBACK.iter().map(|h| (*h).to_owned()));
        } else if all.is_empty() {
            return Err(format!(
                "listening on {addr} needs --allowed-host with the host names clients use (or --allowed-host '*' to accept any)"
            ));
        }
        Ok(Self {
            hosts: all,
            origins: origins
                .iter()
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        })
    }

    /// Loopback only.
    pub fn loopback() -> Self {
        Self {
            hosts: LOOPBACK.iter().map(|h| (*h).to_owned()).collect(),
            origins: Vec::new(),
        }
    }

    /// The allowed host names (without `*`), the loopback names of a loopback listener
    /// included.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.hosts.iter().map(String::as_str).filter(|h| *h != "*")
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = strip_port(&host.to_ascii_lowercase());
        self.hosts.iter().any(|h| h == "*" || *h == host)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        if self.origins.iter().any(|o| o == "*" || *o == origin) {
            return true;
        }
        match origin.split_once("://") {
            Some(("http" | "https", authority)) => self.host_allowed(authority),
            _ => false,
        }
    }
}

fn strip_port(host: &str) -> String {
    if let Some(rest) = host.strip_prefix('[') {
        // [::1]:8600 → [::1]
        return rest
            .split_once(']')
            .map_or_else(|| host.to_owned(), |(h, _)| format!("[{h}]"));
    }
    match host.rsplit_once(':') {
        Some((h, port)) if !h.contains(':') && port.chars().all(|c| c.is_ascii_digit()) => {
            h.to_owned()
        }
        _ => host.to_owned(),
    }
}

fn forbidden(message: String) -> Response {
    (StatusCode::FORBIDDEN, format!("{message}\n")).into_response()
}

/// The check itself: the answer that refuses the request, if it is refused.
#[expect(
    clippy::result_large_err,
    reason = "a refusal is moved once, straight into the answer"
)]
pub(crate) fn verify(hosts: &HostPolicy, request: &Request) -> Result<(), Response> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    match host {
        None => return Err((StatusCode::BAD_REQUEST, "missing Host header\n").into_response()),
        Some(h) if !hosts.host_allowed(&h) => {
            tracing::warn!(host = %h, "request refused: Host not allowed");
            return Err(forbidden(format!(
                "forbidden: Host `{}` is not allowed",
                h.chars().take(100).collect::<String>()
            )));
        }
        Some(_) => {}
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok())
        && !hosts.origin_allowed(origin)
    {
        tracing::warn!(%origin, "request refused: Origin not allowed");
        return Err(forbidden(format!(
            "forbidden: Origin `{}` is not allowed",
            origin.chars().take(100).collect::<String>()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_listeners_accept_loopback_names_only() {
        let p = HostPolicy::for_listener(addr("127.0.0.1:8600"), &[], &[]).unwrap();
        assert!(p.host_allowed("127.0.0.1:8600"));
        assert!(p.host_allowed("localhost"));
        assert!(p.host_allowed("[::1]:8600"));
        assert!(!p.host_allowed("evil.example"));
        assert!(!p.host_allowed("evil.example:8600"));
        assert!(p.origin_allowed("http://localhost:5173"));
        assert!(!p.origin_allowed("https://evil.example"));
        assert!(!p.origin_allowed("null"));
    }

    #[test]
    fn public_listeners_need_an_explicit_allow_list() {
        assert_eq!(
            HostPolicy::for_listener(addr("0.0.0.0:8600"), &[], &[]).unwrap_err(),
            "listening on 0.0.0.0:8600 needs --allowed-host with the host names clients use (or --allowed-host '*' to accept any)"
        );
        let p = HostPolicy::for_listener(
            addr("0.0.0.0:8600"),
            &["warden.example.com".into()],
            &["https://app.example.com".into()],
        )
        .unwrap();
        assert!(p.host_allowed("warden.example.com:443"));
        assert!(!p.host_allowed("localhost"));
        assert!(p.origin_allowed("https://app.example.com"));
        assert!(p.origin_allowed("https://warden.example.com"));
        assert!(!p.origin_allowed("https://other.example.com"));
    }
}
