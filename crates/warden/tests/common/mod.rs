//! Shared fixtures of the end-to-end tests: an in-process Warden on 127.0.0.1:0, MCP clients
//! in both eras and over `warden stdio`, the fixture upstream.

#![allow(dead_code, unreachable_pub, reason = "each test binary uses a part")]

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use warden_core::capability::{Capability, CapabilitySet};
use warden_core::config::parse_documents;
use warden_core::name::Name;
use warden_core::pipeline::Clock;
use warden_core::principal::{CredentialKind, Principal};
use warden_core::time::Millis;
use warden_mcp::{Gateway, GatewayOptions};
use warden_server::{AppState, Bound, HostPolicy};
use warden_store::{Location, TokenRequest};
use warden_testkit::TestStore;

/// How often a test server's gateway reads the store's revision.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The binary under test.
pub const WARDEN: &str = env!("CARGO_BIN_EXE_warden");

/// YAML for an upstream served by the fixture server `warden_fixture notes` over stdio.
pub fn stdio_upstream(name: &str, project: &str, extra: &str) -> String {
    let fixture = warden_testkit::fixture_bin().display().to_string();
    format!(
        "kind: Upstream\nname: {name}\nproject: {project}\nstdio: {{ command: {fixture:?}, args: [\"notes\", \"--stdio\"] }}\n{extra}"
    )
}

/// YAML for an upstream served by `warden_fixture notes --stdio` with `flags` (such as
/// `--only-2025`, a server of that era alone).
pub fn stdio_upstream_with(name: &str, project: &str, flags: &[&str], extra: &str) -> String {
    let fixture = warden_testkit::fixture_bin().display().to_string();
    let args: Vec<String> = ["notes", "--stdio"]
        .iter()
        .chain(flags)
        .map(|a| format!("{a:?}"))
        .collect();
    format!(
        "kind: Upstream\nname: {name}\nproject: {project}\nstdio: {{ command: {fixture:?}, args: [{}] }}\n{extra}",
        args.join(", ")
    )
}

/// The processes whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            pids.push(pid);
        }
    }
    pids
}

/// An in-process Warden.
pub struct TestWarden {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// The address.
    pub addr: SocketAddr,
    /// The first admin's token.
    pub admin: String,
    /// The store (and its location, for the CLI).
    pub store: TestStore,
    /// The gateway.
    pub gateway: Arc<Gateway>,
    shutdown: CancellationToken,
}

impl TestWarden {
    /// Stops serving as a signal to `warden serve` does: open connections finish what they
    /// are answering, and no new one is taken.
    pub fn stop_serving(&self) {
        self.shutdown.cancel();
    }
}

impl Drop for TestWarden {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.gateway.shutdown();
    }
}

pub fn now() -> Millis {
    Millis(chrono_now())
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// The notes fixture served over Streamable HTTP on a free port until `shutdown`, as an upstream
/// `name` of project `project` with `extra` configuration (`protocol: "2025-11-25"`).
pub async fn notes_over_http(
    name: &str,
    project: &str,
    extra: &str,
    shutdown: &CancellationToken,
) -> String {
    let addr = warden_testkit::notes::spawn_http_with(
        warden_testkit::notes::NotesServer::new(None),
        "127.0.0.1:0".parse().unwrap(),
        shutdown.clone(),
        false,
    )
    .await
    .unwrap();
    format!(
        "kind: Upstream\nname: {name}\nproject: {project}\n{extra}http: {{ url: \"http://{addr}/mcp\" }}\n"
    )
}

/// The tests' gateway options: the system clock, the store polled every [`POLL_INTERVAL`].
fn polling() -> GatewayOptions {
    GatewayOptions {
        poll_interval: POLL_INTERVAL,
        ..GatewayOptions::default()
    }
}

impl TestWarden {
    /// Starts on a fresh SQLite store with `config` applied.
    pub async fn start(config: &str) -> Self {
        Self::start_on(warden_testkit::sqlite_store().await, config).await
    }

    /// Starts on `store` with `config` applied.
    pub async fn start_on(store: TestStore, config: &str) -> Self {
        Self::start_polling(store, config, POLL_INTERVAL).await
    }

    /// Starts on `store` with `config` applied, its gateway reading the store's revision
    /// every `poll` (an hour: it sees only what its own requests make it read).
    pub async fn start_polling(store: TestStore, config: &str, poll: Duration) -> Self {
        let options = GatewayOptions {
            poll_interval: poll,
            ..GatewayOptions::default()
        };
        Self::start_with(store, config, options).await
    }

    /// Starts on a fresh SQLite store with `config` applied, its gateway and services reading
    /// `clock` (a `ManualClock` at now: time passes only when the test moves it).
    pub async fn start_with_clock(config: &str, clock: Arc<dyn Clock>) -> Self {
        let options = GatewayOptions {
            poll_interval: POLL_INTERVAL,
            clock,
            ..GatewayOptions::default()
        };
        Self::start_with(warden_testkit::sqlite_store().await, config, options).await
    }

    /// Starts on `store` with `config` applied and a gateway of `options`.
    async fn start_with(store: TestStore, config: &str, options: GatewayOptions) -> Self {
        // The process's TLS provider, which every HTTP client a test builds needs (rmcp's
        // default client among them); `warden` installs it in its main.
        warden_mcp::http_client::install_tls();
        let admin = store
            .store
            .bootstrap(now())
            .await
            .unwrap()
            .expect("new store")
            .secret;
        if !config.trim().is_empty() {
            let docs = parse_documents("test.yaml", config).unwrap_or_else(|e| panic!("{e:?}"));
            store
                .store
                .apply(docs, "test", now())
                .await
                .unwrap()
                .unwrap_or_else(|e| panic!("{e:?}"));
        }
        Self::serve(store, admin, options).await
    }

    /// Stops the server and its gateway (upstreams included) and starts new ones on the same
    /// store, as a restart would.
    pub async fn restart(mut self) -> Self {
        self.shutdown.cancel();
        self.gateway.shutdown();
        let store = std::mem::replace(&mut self.store, warden_testkit::sqlite_store().await);
        let admin = std::mem::take(&mut self.admin);
        drop(self);
        tokio::time::sleep(Duration::from_millis(100)).await;
        Self::serve(store, admin, polling()).await
    }

    /// Another replica: a server and gateway of their own on the same store.
    pub async fn replica(&self) -> Self {
        Self::serve(self.store.another().await, self.admin.clone(), polling()).await
    }

    async fn serve(store: TestStore, admin: String, mut options: GatewayOptions) -> Self {
        // As `warden serve` does: `secrets` in the data directory unless told otherwise.
        if options.secrets_dir.is_none()
            && let warden_store::Location::DataDir(dir) = &store.location
        {
            options.secrets_dir = Some(dir.join("secrets"));
        }
        let gateway = Gateway::start(
            Arc::new(
                warden_store::Store::open_serving(&store.location)
                    .await
                    .unwrap(),
            ),
            options,
        )
        .await;
        gateway.wait_for_upstreams(Duration::from_secs(15)).await;
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let state = Arc::new(AppState::new(
            gateway.clone(),
            HostPolicy::for_listener(addr, &[], &[]).unwrap(),
        ));
        state.runner.set_environments(match &store.location {
            warden_store::Location::DataDir(dir) => dir.join("environments"),
            warden_store::Location::Url(_) => {
                std::env::temp_dir().join(format!("warden-test-environments-{}", addr.port()))
            }
        });
        let bound = Bound::bind(addr, state).await.unwrap();
        let addr = bound.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        // As `warden serve` does: connections on serving threads of their own.
        tokio::spawn(bound.serve_on_threads(2, shutdown.clone()));
        Self {
            base: format!("http://{addr}"),
            addr,
            admin,
            store,
            gateway,
            shutdown,
        }
    }

    /// The MCP URL.
    pub fn mcp(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// A token of `user`, optionally bound to projects and narrowed by scopes, known to the
    /// running gateway when this returns.
    pub async fn token(
        &self,
        user: &str,
        projects: Option<&[&str]>,
        scopes: Option<&[&str]>,
    ) -> String {
        let secret = self
            .store
            .store
            .create_token(
                TokenRequest {
                    principal: Principal::User {
                        name: Name::new(user).unwrap(),
                    },
                    projects: projects.map(|p| p.iter().map(|n| Name::new(n).unwrap()).collect()),
                    scopes: scopes.map(|s| {
                        CapabilitySet::from_patterns(s.iter().map(|c| Capability::new(*c)))
                    }),
                    ttl: None,
                    description: None,
                    kind: CredentialKind::ApiKey,
                },
                "test",
                now(),
            )
            .await
            .unwrap()
            .secret;
        self.settle().await;
        secret
    }

    /// Revokes `token` as an operator does, with `warden token revoke` on the store.
    pub async fn revoke_with_cli(&self, token: &str) {
        let id = self
            .store
            .store
            .credential_for_token(token)
            .await
            .unwrap()
            .unwrap()
            .id;
        let out = cli(&["token", "revoke", &id], &self.store_args());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Waits until the gateway picked up the store's current revision.
    pub async fn settle(&self) {
        let target = self.store.store.revision().await.unwrap();
        for _ in 0..100 {
            if self.gateway.snapshot().revision >= target {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the gateway did not pick up revision {target}");
    }

    /// Accepts the definition tool `tool` offers (GOV-9) as the first admin, through the
    /// admin API, once Warden has recorded it: a tool that appeared after its upstream's first
    /// pinning is held until then. Answers the API's decision.
    pub async fn accept_tool(&self, tool: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let response = reqwest::Client::new()
                .post(format!("{}/api/v1/tools/changes/{tool}/accept", self.base))
                .bearer_auth(&self.admin)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            match status {
                200 => return body,
                404 if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => panic!("accepting `{tool}`: {status} {body}"),
            }
        }
    }

    /// `--data-dir …` / `--database-url …` for the CLI.
    pub fn store_args(&self) -> Vec<String> {
        match &self.store.location {
            Location::DataDir(d) => vec!["--data-dir".into(), d.display().to_string()],
            Location::Url(u) => vec!["--database-url".into(), u.clone()],
        }
    }
}

/// The protocol era a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28, stateless.
    Stateless,
    /// 2025-11-25, sessions.
    Sessions,
}

impl Era {
    fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Era::Stateless => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Era::Sessions => ClientLifecycleMode::Initialize,
        }
    }
}

/// An MCP client.
pub type Client = RunningService<RoleClient, ()>;

/// An MCP client over HTTP with a bearer token.
pub async fn http_client(url: &str, token: &str, era: Era) -> Client {
    warden_mcp::http_client::install_tls();
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    ().serve_with_lifecycle(
        StreamableHttpClientTransport::from_config(config),
        era.lifecycle(),
    )
    .await
    .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

/// An MCP client over `warden stdio` (embedded on the store at `store_args`).
pub async fn stdio_client(store_args: &[String], token: &str, extra: &[&str]) -> Client {
    let mut cmd = tokio::process::Command::new(WARDEN);
    cmd.arg("stdio")
        .args(store_args)
        .args(extra)
        .env("WARDEN_TOKEN", token)
        .env("WARDEN_LOG", "warn");
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    ().serve_with_lifecycle(transport, Era::Sessions.lifecycle())
        .await
        .unwrap()
}

/// Names of the tools a client sees.
pub async fn tool_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    names
}

/// Calls a tool.
pub async fn call<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(m) = args {
        params = params.with_arguments(m as JsonObject);
    }
    client
        .call_tool(params)
        .await
        .unwrap_or_else(|e| panic!("call {name}: {e}"))
}

/// Warden's decision attached to a result.
pub fn decision(result: &CallToolResult) -> Value {
    result
        .meta
        .as_ref()
        .and_then(|m| m.get("warden/decision").cloned())
        .unwrap_or(Value::Null)
}

/// A result as JSON with every run and approval id replaced, to compare answers "modulo ids".
pub fn without_ids(result: &CallToolResult) -> Value {
    let mut text = serde_json::to_string(result).unwrap();
    for prefix in ["run_", "apr_"] {
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find(prefix) {
            out.push_str(&rest[..i]);
            out.push_str(prefix);
            out.push('X');
            rest = &rest[i + prefix.len()..];
            let skip = rest
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            rest = &rest[skip..];
        }
        out.push_str(rest);
        text = out;
    }
    serde_json::from_str(&text).unwrap()
}

/// Runs the CLI.
pub fn cli(args: &[&str], store_args: &[String]) -> std::process::Output {
    let mut cmd = std::process::Command::new(WARDEN);
    cmd.args(args).args(store_args);
    for (k, _) in std::env::vars() {
        if k.starts_with("WARDEN_") {
            cmd.env_remove(k);
        }
    }
    cmd.output().unwrap()
}

/// Opens a 2025-11-25 session on `w` as `token` with raw HTTP (initialize, then initialized);
/// its `Mcp-Session-Id`.
pub async fn open_session(w: &TestWarden, token: &str) -> String {
    open_session_with(w, token, serde_json::json!({})).await
}

/// Opens a 2025-11-25 session as [`open_session`] does, its client declaring `capabilities`.
pub async fn open_session_with(w: &TestWarden, token: &str, capabilities: Value) -> String {
    warden_mcp::http_client::install_tls();
    let client = reqwest::Client::new();
    let post = |body: Value| {
        client
            .post(w.mcp())
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body)
    };
    let response = post(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "warden-tests", "version": "1"}}}),
    )
    .send()
    .await
    .unwrap();
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let done = post(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 202);
    session
}

/// The last JSON-RPC message of an HTTP answer: its body, or its last server-sent event.
pub fn last_message(body: &str) -> Value {
    let message = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or(body);
    serde_json::from_str(message.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// A client that passes on which lists it heard changed (2025-11-25 notifications).
#[derive(Clone)]
pub struct ListChanges(pub tokio::sync::mpsc::UnboundedSender<&'static str>);

impl rmcp::ClientHandler for ListChanges {
    async fn on_tool_list_changed(
        &self,
        _ctx: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send("tools");
    }

    async fn on_prompt_list_changed(
        &self,
        _ctx: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send("prompts");
    }

    async fn on_resource_list_changed(
        &self,
        _ctx: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send("resources");
    }
}

/// Waits until every one of `wanted` came out of `heard`.
pub async fn hear_all(
    heard: &mut tokio::sync::mpsc::UnboundedReceiver<&'static str>,
    wanted: &[&str],
    who: &str,
) {
    let mut missing: Vec<&str> = wanted.to_vec();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !missing.is_empty() {
        match tokio::time::timeout_at(deadline, heard.recv()).await {
            Ok(Some(list)) => missing.retain(|m| *m != list),
            _ => panic!("{who}: never heard that {missing:?} changed"),
        }
    }
}

/// The lists a 2026-07-28 listen stream heard changed, until every one of `wanted` came.
pub async fn listen_for_all(listen: &mut rmcp::service::Subscription, wanted: &[&str], who: &str) {
    use rmcp::model::ServerNotification as N;
    let mut missing: Vec<&str> = wanted.to_vec();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !missing.is_empty() {
        let list = match tokio::time::timeout_at(deadline, listen.next()).await {
            Ok(Ok(Some(N::ToolListChangedNotification(_)))) => "tools",
            Ok(Ok(Some(N::PromptListChangedNotification(_)))) => "prompts",
            Ok(Ok(Some(N::ResourceListChangedNotification(_)))) => "resources",
            Ok(Ok(Some(_))) => continue,
            other => panic!("{who}: never heard that {missing:?} changed ({other:?})"),
        };
        missing.retain(|m| *m != list);
    }
}

/// A 2026-07-28 `subscriptions/listen` stream of `client` (any client's peer) for the changes
/// of every list.
pub async fn listen_to_every_list(
    client: &rmcp::service::Peer<RoleClient>,
) -> rmcp::service::Subscription {
    let filter = rmcp::model::SubscriptionFilter::builder()
        .tools_list_changed()
        .prompts_list_changed()
        .resources_list_changed()
        .build();
    client.listen(filter).await.unwrap()
}

/// `warden serve` as a child process, as an operator starts it: on a new data directory with
/// `config` applied at start (`--config`), JSON logs to a file.
pub struct ServedBinary {
    pub child: std::process::Child,
    pub base: String,
    pub admin: String,
    pub log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl ServedBinary {
    /// Starts it with `config` and `extra` arguments.
    pub fn start(config: &str, extra: &[&str]) -> Self {
        Self::start_with_env(config, extra, &[])
    }

    /// [`Self::start`] with these environment variables too.
    pub fn start_with_env(config: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        use std::io::BufRead as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("warden.yaml");
        std::fs::write(&file, config).unwrap();
        let log = dir.path().join("warden.log");
        let data = dir.path().join("data");
        let mut child = std::process::Command::new(WARDEN)
            .args(["serve", "--listen", "127.0.0.1:0", "--no-demo"])
            .arg("--data-dir")
            .arg(&data)
            .arg("--config")
            .arg(&file)
            .args(["--log-format", "json"])
            .args(extra)
            .env("WARDEN_LOG", "info,sqlx=warn,rmcp=warn")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut base, mut admin) = (String::new(), String::new());
        for _ in 0..3 {
            let line = lines.next().unwrap().unwrap();
            if let Some(url) = line.trim().strip_prefix("mcp: ") {
                base = url.trim_end_matches("/mcp").to_owned();
            } else if let Some(token) = line.trim().strip_prefix("admin token: ") {
                admin = token.to_owned();
            }
        }
        assert!(
            !base.is_empty() && !admin.is_empty(),
            "warden serve started"
        );
        Self {
            child,
            base,
            admin,
            log,
            _dir: dir,
        }
    }

    /// Its resident memory now, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// SIGTERM, as a service manager stops it; waits (at most 30 s) for the end.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let signalled = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(signalled.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "warden serve did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ServedBinary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
