//! `kind: Upstream`: how Warden reaches an MCP server it proxies and how much of it it takes.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::issuer::IssuerSpec;
use super::reference::check_reference;
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
    /// How calls authenticate upstream on behalf of their caller (AUTH-6); an HTTP upstream
    /// only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<UpstreamAuth>,
}

/// How calls to an upstream authenticate as their caller (AUTH-6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpstreamAuth {
    /// RFC 8693 token exchange: each call carries a token the issuer minted for its caller.
    pub exchange: ExchangeSpec,
}

/// Where and for what the caller's access token is exchanged (AUTH-6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExchangeSpec {
    /// The `Issuer` that exchanges: callers must hold one of its access tokens, and it must
    /// say how Warden authenticates there (its `exchange`).
    pub issuer: Name,
    /// The audience (and resource) the upstream's tokens are for, usually its URL.
    pub audience: String,
    /// Scopes asked for; by default none (the issuer's default for the audience).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
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

    /// The issuer its calls act on behalf of the caller at (AUTH-6), if they do.
    pub fn on_behalf_of(&self) -> Option<&Name> {
        self.auth.as_ref().map(|a| &a.exchange.issuer)
    }

    /// What is wrong with how it is reached, as `(field, problem)` pairs; `issuer` finds an
    /// `Issuer` by name.
    pub fn problems<'c>(
        &self,
        issuer: impl Fn(&str) -> Option<&'c IssuerSpec>,
    ) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut fail = |field: &str, problem: String| out.push((field.to_owned(), problem));
        match (&self.stdio, &self.http) {
            (Some(_), Some(_)) => fail("http", "give either `stdio` or `http`, not both".into()),
            (None, None) => fail(
                "stdio",
                "give either `stdio` (a command) or `http` (a URL)".into(),
            ),
            (Some(s), None) => {
                if s.command.trim().is_empty() {
                    fail("stdio.command", "cannot be empty".into());
                }
                for (k, v) in &s.env {
                    if let Err(e) = check_reference(v) {
                        fail(&format!("stdio.env.{k}"), e);
                    }
                }
            }
            (None, Some(h)) => h.problems(&mut fail),
        }
        if let Some(prefix) = &self.prefix
            && !prefix.is_empty()
            && let Err(e) = Name::new(prefix)
        {
            fail("prefix", format!("{}; use \"\" for no prefix", e.reason));
        }
        if self.timeout.is_some_and(|t| t.is_zero()) {
            fail("timeout", "must be greater than zero".into());
        }
        if let Some(auth) = &self.auth {
            auth.exchange
                .problems(self.stdio.is_some(), &issuer, &mut fail);
            if self.protocol == Some(UpstreamProtocol::V2025_11_25) {
                fail(
                    "protocol",
                    "token exchange needs 2026-07-28, where each call carries its own bearer; \
                     2025-11-25 calls share a session"
                        .into(),
                );
            }
        }
        out
    }
}

impl ExchangeSpec {
    fn problems<'c>(
        &self,
        stdio: bool,
        issuer: &impl Fn(&str) -> Option<&'c IssuerSpec>,
        fail: &mut impl FnMut(&str, String),
    ) {
        if stdio {
            fail(
                "auth",
                "token exchange sends the caller's token over HTTP: a stdio upstream has no \
                 request to carry it"
                    .into(),
            );
        }
        match issuer(self.issuer.as_str()) {
            None => fail(
                "auth.exchange.issuer",
                format!(
                    "no Issuer named `{}`; apply it first or fix the name",
                    self.issuer
                ),
            ),
            Some(i) if i.exchange.is_none() => fail(
                "auth.exchange.issuer",
                format!(
                    "Issuer `{}` does not say how Warden authenticates there: give it \
                     `exchange: {{ clientId: …, clientSecret: \"${{secret:NAME}}\" }}`",
                    self.issuer
                ),
            ),
            Some(_) => {}
        }
        if self.audience.trim().is_empty() {
            fail(
                "auth.exchange.audience",
                "name the audience the upstream's tokens are for (usually its URL)".into(),
            );
        }
        for (i, scope) in self.scopes.iter().enumerate() {
            if scope.is_empty() || scope.contains(char::is_whitespace) {
                fail(
                    &format!("auth.exchange.scopes[{i}]"),
                    format!("`{scope}` is not one scope"),
                );
            }
        }
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
    fn problems(&self, fail: &mut impl FnMut(&str, String)) {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            fail(
                "http.url",
                format!(
                    "`{}` is not an http:// or https:// URL",
                    crate::url_credentials::redact(&self.url)
                ),
            );
        } else if crate::url_credentials::has_credentials(&self.url) {
            fail(
                "http.url",
                format!(
                    "`{}` carries credentials, which would be shown wherever the URL is; \
                     send them as a header whose value comes from a secret instead, e.g. \
                     `headers: {{ Authorization: \"${{secret:NAME}}\" }}`",
                    crate::url_credentials::redact(&self.url)
                ),
            );
        }
        for (k, v) in &self.headers {
            if let Err(e) = check_reference(v) {
                fail(&format!("http.headers.{k}"), e);
            }
        }
    }

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
