//! `kind: Upstream`: how Warden reaches an MCP server it proxies and how much of it it takes.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::name::Name;

/// `kind: Upstream`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpstreamSpec {
    /// The upstream's name; unique across the installation. Its tools are named
    /// `<name>__<tool>` unless `prefix` says otherwise.
    pub name: Name,
    /// The project that owns it.
    pub project: Name,
    /// A child process speaking MCP over stdio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdio: Option<StdioSpec>,
    /// A remote Streamable HTTP MCP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpSpec>,
    /// Prefix of catalog names; `""` keeps the upstream's own tool names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Whether server-initiated requests of this upstream are relayed to clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<RelaySpec>,
    /// The protocol era to speak: `2026-07-28`, `2025-11-25`, or by default the newest the
    /// server supports. Elicitation and sampling requests of a server reach clients in
    /// `2025-11-25`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<UpstreamProtocol>,
    /// Timeout of one upstream call (default 60s).
    #[serde(
        default,
        with = "crate::time::human_duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub timeout: Option<Duration>,
    /// How much of the upstream's advertised metadata Warden takes (defaults below).
    #[serde(default, skip_serializing_if = "UpstreamLimits::is_default")]
    pub limits: UpstreamLimits,
    /// What a change of a tool's definition does (GOV-9): `enforce` (the default) holds the
    /// changed tool out of every catalog until it is reviewed; `warn` logs it and serves it;
    /// `off` does not pin.
    #[serde(default, skip_serializing_if = "Pinning::is_default")]
    pub pinning: Pinning,
}

/// What a change of an upstream tool's definition does (GOV-9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Pinning {
    /// Hold a changed or new tool out of every catalog until it is reviewed.
    #[default]
    Enforce,
    /// Log the change, record it for review, and serve the tool as it is now.
    Warn,
    /// Pin nothing: serve every tool as the upstream offers it.
    Off,
}

impl Pinning {
    fn is_default(&self) -> bool {
        *self == Self::Enforce
    }

    /// The configuration's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enforce => "enforce",
            Self::Warn => "warn",
            Self::Off => "off",
        }
    }
}

impl UpstreamSpec {
    /// The prefix of its tools' catalog names: its own, else its name.
    pub fn catalog_prefix(&self) -> String {
        self.prefix.clone().unwrap_or_else(|| self.name.to_string())
    }
}

/// How much of an upstream's advertised metadata Warden takes: a tool past a limit is left
/// out of every catalog, with a warning naming it (an upstream's 5 MB description went into
/// every client's `tools/list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct UpstreamLimits {
    /// Tools taken from the upstream; the rest are left out (default 1000).
    pub tools: usize,
    /// Bytes of one tool's description (default 65536).
    pub description_bytes: usize,
    /// Bytes of one tool's input or output schema, as JSON (default 262144).
    pub schema_bytes: usize,
}

impl Default for UpstreamLimits {
    fn default() -> Self {
        Self {
            tools: 1000,
            description_bytes: 64 * 1024,
            schema_bytes: 256 * 1024,
        }
    }
}

impl UpstreamLimits {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The protocol era an upstream is spoken to in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UpstreamProtocol {
    /// Sessions, `initialize`.
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// Stateless, `server/discover`.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

/// How to start a stdio upstream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StdioSpec {
    /// The program.
    pub command: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment; values may be `${env:NAME}` or `${secret:NAME}` references.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// How to reach an HTTP upstream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpSpec {
    /// The Streamable HTTP endpoint.
    pub url: String,
    /// Headers sent with every request; values may be `${env:NAME}` or `${secret:NAME}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// `user:password` that a configuration stored before such URLs were refused carried in
    /// `url` ([`HttpSpec::lift_url_credentials`]): sent as HTTP Basic authentication unless
    /// `headers` has an `Authorization`, never serialised, shown or logged.
    #[serde(skip)]
    #[schemars(skip)]
    pub url_credentials: Option<String>,
}

impl HttpSpec {
    /// Moves credentials out of `url` into [`Self::url_credentials`]; whether there were any.
    /// Only for configuration read back from the store: applying such a URL is refused.
    pub fn lift_url_credentials(&mut self) -> bool {
        match crate::url_credentials::split(&self.url) {
            Some((bare, credentials)) => {
                self.url = bare;
                self.url_credentials = Some(credentials);
                true
            }
            None => false,
        }
    }
}

/// Relay policy for server-initiated requests (XPORT-4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelaySpec {
    /// Relay `sampling/createMessage` (default true).
    #[serde(default = "yes")]
    pub sampling: bool,
    /// Relay `elicitation/create` (default true).
    #[serde(default = "yes")]
    pub elicitation: bool,
    /// Relay `roots/list`: the calling client's roots (default true).
    #[serde(default = "yes")]
    pub roots: bool,
}

fn yes() -> bool {
    true
}

impl Default for RelaySpec {
    /// All relayed, as when the field is left out.
    fn default() -> Self {
        Self {
            sampling: true,
            elicitation: true,
            roots: true,
        }
    }
}
