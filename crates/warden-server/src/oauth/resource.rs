//! This server's own resource URLs (AUTH-4): what the RFC 9728 metadata names and, for an
//! issuer without `audiences`, what a token's `aud` must be.
//!
//! They are built from the server's own identity, never from a request: `--public-url` when
//! it is set, else the listener — its bound address and port, `localhost` at that port for a
//! loopback listener, and the names given with `--allowed-host` at that port. A request's
//! `Host` only chooses which of these the metadata and challenges name (MCP clients refuse
//! metadata whose `resource` is not their own server URL); a `Host` naming anything else —
//! another port on the same host, say — gets the first of them. So a token minted for another
//! resource on the same host is refused whatever `Host` comes with it.

use std::net::{IpAddr, SocketAddr};

use warden_core::policy::Policy;

/// The origins (`scheme://host[:port]`) this server is reached at, the canonical one first.
#[derive(Debug, Default)]
pub(crate) struct Origins(Vec<String>);

impl Origins {
    /// No origin yet: a server that does not listen (the router in tests) accepts no
    /// access token of an issuer without `audiences`.
    pub(crate) const NONE: Self = Self(Vec::new());

    /// `--public-url`: the one origin clients reach this server at (behind a proxy).
    pub(crate) fn public(url: &str) -> Self {
        Self(vec![url.trim_end_matches('/').to_owned()])
    }

    /// The origins of a listener bound to `addr` whose allowed host names are `names`
    /// (without `*`): the address itself (unless it is unspecified, `0.0.0.0`), `localhost`
    /// when it is a loopback address, and each name, all at the bound port.
    pub(crate) fn listener<'a>(addr: SocketAddr, names: impl IntoIterator<Item = &'a str>) -> Self {
        let port = match addr.port() {
            80 => String::new(),
            p => format!(":{p}"),
        };
        let at = |host: &str| {
            let host = host.to_ascii_lowercase();
            if host.contains(':') && !host.starts_with('[') {
                format!("http://[{host}]{port}")
            } else {
                format!("http://{host}{port}")
            }
        };
        let mut all: Vec<String> = Vec::new();
        if !addr.ip().is_unspecified() {
            all.push(at(&addr.ip().to_string()));
        }
        if addr.ip().is_loopback() {
            all.push(at("localhost"));
        }
        for name in names {
            // An address among the allowed names is this listener's only when it listens on
            // it: a loopback listener allows `[::1]` as a name, but on `127.0.0.1` it is not
            // reached there — another server may be.
            let ip = name.trim_matches(['[', ']']).parse::<IpAddr>();
            if ip.is_ok_and(|ip| !addr.ip().is_unspecified() && ip != addr.ip()) {
                continue;
            }
            let origin = at(name);
            if !all.contains(&origin) {
                all.push(origin);
            }
        }
        if all.is_empty() {
            // Listening on every interface, any Host allowed: no name is known to be this
            // server's. The address stands for it, so that nothing is accepted by accident.
            all.push(format!("http://{addr}"));
        }
        Self(all)
    }

    /// The origin the metadata and challenges name for a request with this `Host`: the one
    /// it names when it is one of this server's, else the canonical one.
    pub(crate) fn for_host(&self, host: Option<&str>) -> &str {
        let asked = host.map(|h| {
            let h = h.to_ascii_lowercase();
            format!("http://{}", h.strip_suffix(":80").unwrap_or(&h))
        });
        self.0
            .iter()
            .find(|o| asked.as_deref() == Some(o.as_str()))
            .or_else(|| self.0.first())
            .map_or("", String::as_str)
    }

    /// Whether `url` is one of this server's MCP resource URLs: an origin of it, its `/mcp`,
    /// or `/mcp/agents/<agent>` of an agent `policy` configures.
    pub(crate) fn is_resource(&self, policy: &Policy, url: &str) -> bool {
        self.0.iter().any(|o| match url.strip_prefix(o.as_str()) {
            Some("" | "/mcp") => true,
            Some(rest) => rest
                .strip_prefix("/mcp/agents/")
                .is_some_and(|agent| policy.agent(agent).is_some()),
            None => false,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn listener(addr: &str, names: &[&str]) -> Origins {
        Origins::listener(addr.parse().unwrap(), names.iter().copied())
    }

    #[test]
    fn a_loopback_listener_is_its_address_and_localhost_at_its_port() {
        let o = listener(
            "127.0.0.1:8600",
            &["localhost", "127.0.0.1", "::1", "[::1]"],
        );
        assert_eq!(o.0, ["http://127.0.0.1:8600", "http://localhost:8600"]);
        let o = listener("[::1]:8600", &["localhost", "::1"]);
        assert_eq!(o.0, ["http://[::1]:8600", "http://localhost:8600"]);
    }

    #[test]
    fn a_public_listener_is_its_allowed_names_at_its_port() {
        let o = listener("0.0.0.0:8600", &["warden.internal", "Other.Example"]);
        assert_eq!(
            o.0,
            ["http://warden.internal:8600", "http://other.example:8600"]
        );
        let o = listener("10.0.0.5:80", &["warden.internal"]);
        assert_eq!(o.0, ["http://10.0.0.5", "http://warden.internal"]);
        // Every interface and any Host: no name is known to be this server's.
        assert_eq!(listener("0.0.0.0:8600", &[]).0, ["http://0.0.0.0:8600"]);
    }

    #[test]
    fn the_host_chooses_among_the_servers_own_origins_only() {
        let o = listener("127.0.0.1:8600", &["localhost"]);
        assert_eq!(o.for_host(Some("LOCALHOST:8600")), "http://localhost:8600");
        assert_eq!(o.for_host(Some("127.0.0.1:8600")), "http://127.0.0.1:8600");
        // Another port, the bare host, no Host at all: the canonical origin.
        assert_eq!(o.for_host(Some("127.0.0.1:9000")), "http://127.0.0.1:8600");
        assert_eq!(o.for_host(Some("127.0.0.1")), "http://127.0.0.1:8600");
        assert_eq!(o.for_host(None), "http://127.0.0.1:8600");
        let public = Origins::public("https://warden.example.com/");
        assert_eq!(
            public.for_host(Some("127.0.0.1:8600")),
            "https://warden.example.com"
        );
        assert_eq!(Origins::NONE.for_host(Some("127.0.0.1:8600")), "");
    }

    #[test]
    fn resource_urls_are_the_origins_their_mcp_endpoints_and_configured_agents() {
        let docs = warden_core::config::parse_documents(
            "t.yaml",
            "kind: Project\nname: demo\n---\nkind: Agent\nname: sre-bot\nmemberships: [demo]\n",
        )
        .unwrap();
        let policy = Policy::compile(warden_core::config::Config::validate(docs).unwrap(), 1);
        let o = listener("127.0.0.1:8600", &["localhost"]);
        for ours in [
            "http://127.0.0.1:8600",
            "http://127.0.0.1:8600/mcp",
            "http://localhost:8600/mcp",
            "http://127.0.0.1:8600/mcp/agents/sre-bot",
        ] {
            assert!(o.is_resource(&policy, ours), "{ours}");
        }
        for other in [
            "http://127.0.0.1:9000/mcp",
            "http://127.0.0.1:9000",
            "http://127.0.0.1:86000/mcp",
            "http://127.0.0.1/mcp",
            "http://[::1]:8600/mcp",
            "http://127.0.0.1:8600/mcp/agents/nobody",
            "http://127.0.0.1:8600/other",
            "https://127.0.0.1:8600/mcp",
        ] {
            assert!(!o.is_resource(&policy, other), "{other}");
        }
    }
}
