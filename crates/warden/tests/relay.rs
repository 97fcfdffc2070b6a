//! Transparent proxying (XPORT-4): what an upstream sends during a call reaches the client
//! whose call caused it; a client's cancellation reaches the upstream.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]
#![allow(
    deprecated,
    reason = "sampling and logging are part of the 2025-11-25 protocol"
)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    Implementation, LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
    SamplingMessage,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, NotificationContext, PeerRequestOptions,
    RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

/// A client that answers elicitations and sampling with its own name, and records what it
/// hears.
#[derive(Clone, Default)]
struct Recorder {
    name: &'static str,
    heard: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Recorder {
    fn heard(&self) -> Vec<String> {
        self.heard
            .lock()
            .unwrap()
            .iter()
            .map(|(_, s)| s.clone())
            .collect()
    }

    /// What it heard once `n` progress notifications are in: the client handles
    /// notifications on tasks of their own, so the last may be heard just after the result.
    async fn with_progress(&self, n: usize) -> Vec<(Instant, String)> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let events = self.heard.lock().unwrap().clone();
            if progress_of(&events).len() >= n || Instant::now() > deadline {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn note(&self, s: String) {
        self.heard.lock().unwrap().push((Instant::now(), s));
    }
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(Default::default());
        capabilities.sampling = Some(Default::default());
        ClientConfig::new(capabilities, Implementation::new(self.name, "1"))
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.note(format!(
            "elicitation: {}",
            serde_json::to_value(&params).unwrap()["message"]
        ));
        Ok(ElicitResult::new(rmcp::model::ElicitationAction::Accept)
            .with_content(json!({"answer": format!("from {}", self.name)})))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        self.note("sampling".into());
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(format!("sampled by {}", self.name)),
            "test-model".into(),
        ))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        self.note(format!("progress {}", params.progress));
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        self.note(format!("log {}", params.data));
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.note("tools changed".into());
    }
}

async fn connect(
    url: &str,
    token: &str,
    name: &'static str,
) -> (RunningService<RoleClient, Recorder>, Recorder) {
    let recorder = Recorder {
        name,
        ..Recorder::default()
    };
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    let client = recorder
        .clone()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Initialize,
        )
        .await
        .unwrap();
    (client, recorder)
}

fn config(extra: &str) -> String {
    format!(
        "kind: Project\nname: alpha\n---\n{}\n---\n{}{extra}",
        stdio_upstream("alpha", "alpha", "protocol: \"2025-11-25\"\n"),
        stdio_upstream(
            "quiet",
            "alpha",
            "protocol: \"2025-11-25\"\nrelay: { elicitation: false, sampling: false }\n"
        ),
    )
}

/// Waits until the upstream's `cancellations` tool reports one cancellation.
async fn wait_for_one_cancellation(a: &RunningService<RoleClient, Recorder>, tool: &'static str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = a.call_tool(CallToolRequestParams::new(tool)).await.unwrap();
        if r.structured_content.as_ref().unwrap()["cancellations"] == 1 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The progress notifications a client heard, with when.
fn progress_of(events: &[(Instant, String)]) -> Vec<&(Instant, String)> {
    events
        .iter()
        .filter(|(_, s)| s.starts_with("progress"))
        .collect()
}

fn text_of(r: &rmcp::model::CallToolResult) -> String {
    serde_json::to_string(r).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_reaches_the_calling_client_and_its_answer_reaches_the_upstream() {
    let w = TestWarden::start(&config("")).await;
    let (a, heard_a) = connect(&w.mcp(), &w.admin, "client-a").await;
    let (_b, heard_b) = connect(&w.mcp(), &w.admin, "client-b").await;
    let mut params = CallToolRequestParams::new("alpha__ask");
    params = params.with_arguments(
        json!({"question": "which account?"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = a.call_tool(params).await.unwrap();
    assert_eq!(
        r.structured_content
            .as_ref()
            .map(|s| s["content"]["answer"].clone()),
        Some(json!("from client-a")),
        "{}",
        text_of(&r)
    );
    assert_eq!(
        heard_a.heard(),
        vec!["elicitation: \"which account?\"".to_owned()]
    );
    assert!(
        heard_b.heard().is_empty(),
        "the other client was asked: {:?}",
        heard_b.heard()
    );
    // Sampling too.
    let params = CallToolRequestParams::new("alpha__sample")
        .with_arguments(json!({"prompt": "hi"}).as_object().unwrap().clone());
    let r = a.call_tool(params).await.unwrap();
    assert!(
        text_of(&r).contains("sampled by client-a"),
        "{}",
        text_of(&r)
    );
    // The relays are on record.
    let out = cli(
        &["audit", "--kind", "relay", "--oldest-first", "-o", "json"],
        &w.store_args(),
    );
    let relays: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(String, String)> = relays
        .iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap().to_owned(),
                r["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("elicitation/create".into(), "relayed".into()),
            ("sampling/createMessage".into(), "relayed".into())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_relay_off_the_upstream_gets_a_refusal_and_the_audit_shows_it() {
    let w = TestWarden::start(&config("")).await;
    let (a, heard) = connect(&w.mcp(), &w.admin, "client-a").await;
    let params = CallToolRequestParams::new("quiet__ask")
        .with_arguments(json!({"question": "q"}).as_object().unwrap().clone());
    let r = a.call_tool(params).await.unwrap();
    // The upstream saw a refusal and said so in its result.
    assert!(
        text_of(&r).contains("elicitation refused"),
        "{}",
        text_of(&r)
    );
    assert!(heard.heard().is_empty());
    let out = cli(
        &["audit", "--kind", "relay", "--oldest-first", "-o", "json"],
        &w.store_args(),
    );
    let line: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(line["decision"], "refused");
    assert_eq!(
        line["payload"]["detail"],
        "relay disabled by the upstream's policy"
    );
    assert_eq!(line["payload"]["upstream"], "quiet");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_stops_the_upstream_call_and_is_recorded() {
    let w = TestWarden::start(&config("")).await;
    let (a, _) = connect(&w.mcp(), &w.admin, "client-a").await;
    let params = CallToolRequestParams::new("alpha__slow")
        .with_arguments(json!({"ms": 20000}).as_object().unwrap().clone());
    let handle = a
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    // The upstream saw the cancellation.
    wait_for_one_cancellation(&a, "alpha__cancellations").await;
    // The audit records the call as cancelled.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let out = cli(
            &[
                "audit",
                "--kind",
                "outcome",
                "--tool",
                "alpha__slow",
                "-o",
                "json",
            ],
            &w.store_args(),
        );
        if let Some(line) = String::from_utf8_lossy(&out.stdout).lines().next() {
            let line: Value = serde_json::from_str(line).unwrap();
            assert_eq!(line["decision"], "cancelled", "{line}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no outcome recorded for the cancelled call"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_arrives_in_order_while_the_call_runs() {
    let w = TestWarden::start(&config("")).await;
    let (a, heard) = connect(&w.mcp(), &w.admin, "client-a").await;
    let params = CallToolRequestParams::new("alpha__progress").with_arguments(
        json!({"steps": 5, "delay_ms": 150})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = a.call_tool(params).await.unwrap();
    let done = Instant::now();
    assert_eq!(r.structured_content.as_ref().unwrap()["steps"], 5);
    let events = heard.with_progress(5).await;
    let progress = progress_of(&events);
    assert_eq!(
        progress.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>(),
        vec![
            "progress 1",
            "progress 2",
            "progress 3",
            "progress 4",
            "progress 5"
        ]
    );
    // Not all at the end: the first came well before the result (the call took 5 × 150 ms).
    assert!(
        done.duration_since(progress[0].0) >= Duration::from_millis(400),
        "progress was not relayed while the call ran"
    );
    // Log messages of the call were relayed too.
    assert!(
        events.iter().any(|(_, s)| s == "log {\"step\":1}"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_hears_when_its_catalog_changes() {
    let w = TestWarden::start(&config("")).await;
    let (_a, heard) = connect(&w.mcp(), &w.admin, "client-a").await;
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        f.path(),
        format!(
            "kind: Project\nname: beta\n---\n{}",
            stdio_upstream("beta", "beta", "")
        ),
    )
    .unwrap();
    assert!(
        cli(
            &["apply", "-f", f.path().to_str().unwrap()],
            &w.store_args()
        )
        .status
        .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !heard.heard().iter().any(|s| s == "tools changed") {
        assert!(Instant::now() < deadline, "no tools/list_changed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calling_client_is_told_apart_from_another_connected_at_the_same_time_over_2026() {
    // A 2026-era client that is not in a call is never asked.
    let w = TestWarden::start(&config("")).await;
    let (a, heard_a) = connect(&w.mcp(), &w.admin, "client-a").await;
    let recorder = Recorder {
        name: "client-c",
        ..Recorder::default()
    };
    let cfg = StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(w.admin.clone());
    let _c = recorder
        .clone()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(cfg),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    let params = CallToolRequestParams::new("alpha__ask")
        .with_arguments(json!({"question": "who?"}).as_object().unwrap().clone());
    let r = a.call_tool(params).await.unwrap();
    assert_eq!(
        r.structured_content
            .as_ref()
            .map(|s| s["content"]["answer"].clone()),
        Some(json!("from client-a")),
        "{}",
        text_of(&r)
    );
    assert_eq!(heard_a.heard().len(), 1);
    assert!(recorder.heard().is_empty());
}

/// A project whose upstreams speak 2026-07-28 (multi-round-trip requests, SEP-2322).
fn config_2026() -> String {
    format!(
        "kind: Project\nname: alpha\n---\n{}\n---\n{}",
        stdio_upstream("modern", "alpha", "protocol: \"2026-07-28\"\n"),
        stdio_upstream(
            "modernquiet",
            "alpha",
            "protocol: \"2026-07-28\"\nrelay: { elicitation: false }\n"
        ),
    )
}

async fn connect_2026(url: &str, token: &str) -> (RunningService<RoleClient, Recorder>, Recorder) {
    let recorder = Recorder {
        name: "client-2026",
        ..Recorder::default()
    };
    let cfg =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    let client = recorder
        .clone()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(cfg),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    (client, recorder)
}

fn outcomes(w: &TestWarden) -> Vec<(String, String)> {
    let out = cli(
        &["audit", "--kind", "outcome", "--oldest-first", "-o", "json"],
        &w.store_args(),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            (
                r["tool"].as_str().unwrap().to_owned(),
                r["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_result_reaches_a_2026_client_and_its_retry_is_governed_again() {
    let w = TestWarden::start(&config_2026()).await;
    let (client, heard) = connect_2026(&w.mcp(), &w.admin).await;
    let args = json!({"question": "which account?"})
        .as_object()
        .unwrap()
        .clone();
    let first = client
        .call_tool_once(CallToolRequestParams::new("modern__ask").with_arguments(args.clone()))
        .await
        .unwrap();
    let rmcp::model::CallToolResponse::InputRequired(needed) = first else {
        panic!("expected input_required, got {first:?}");
    };
    // Passed through intact: the upstream's input request and its opaque state.
    let requests = serde_json::to_value(&needed.input_requests).unwrap();
    assert_eq!(
        requests["answer"]["method"], "elicitation/create",
        "{requests}"
    );
    assert_eq!(requests["answer"]["params"]["message"], "which account?");
    assert_eq!(
        needed.request_state.as_deref(),
        Some("asked:which account?")
    );
    // Warden asked nobody: the client fulfils the request itself and retries.
    assert!(heard.heard().is_empty());
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(
        "answer".into(),
        json!({"action": "accept", "content": {"answer": "acct-7"}}),
    );
    let retry = CallToolRequestParams::new("modern__ask")
        .with_arguments(args)
        .with_input_responses(responses)
        .with_request_state(needed.request_state.clone().unwrap());
    let done = client.call_tool_once(retry).await.unwrap();
    let rmcp::model::CallToolResponse::Complete(done) = done else {
        panic!("expected a result, got {done:?}");
    };
    let data = done.structured_content.clone().unwrap();
    assert_eq!(data["answer"]["content"]["answer"], "acct-7", "{data}");
    assert_eq!(data["requestState"], "asked:which account?");
    // Both legs went through the pipeline: two decisions, two outcomes.
    assert_eq!(
        outcomes(&w),
        vec![
            ("modern__ask".into(), "input_required".into()),
            ("modern__ask".into(), "executed".into())
        ]
    );
    let out = cli(
        &[
            "audit",
            "--kind",
            "decision",
            "--oldest-first",
            "-o",
            "json",
        ],
        &w.store_args(),
    );
    let decisions = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("modern__ask"))
        .count();
    assert_eq!(decisions, 2);
    let out = cli(
        &["audit", "--kind", "relay", "--oldest-first", "-o", "json"],
        &w.store_args(),
    );
    let relay: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(relay["decision"], "relayed");
    assert_eq!(relay["tool"], "elicitation/create");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_client_is_asked_what_a_2026_upstream_needs() {
    let w = TestWarden::start(&config_2026()).await;
    let (client, heard) = connect(&w.mcp(), &w.admin, "client-a").await;
    let params = CallToolRequestParams::new("modern__ask").with_arguments(
        json!({"question": "which region?"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = client.call_tool(params).await.unwrap();
    let data = r.structured_content.clone().unwrap();
    assert_eq!(
        data["answer"]["content"]["answer"], "from client-a",
        "{data}"
    );
    assert_eq!(data["requestState"], "asked:which region?");
    assert_eq!(
        heard.heard(),
        vec!["elicitation: \"which region?\"".to_owned()]
    );
    assert_eq!(
        outcomes(&w),
        vec![("modern__ask".into(), "executed".into())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_relay_off_an_input_required_result_is_refused_and_recorded() {
    let w = TestWarden::start(&config_2026()).await;
    let (client, heard) = connect_2026(&w.mcp(), &w.admin).await;
    let params = CallToolRequestParams::new("modernquiet__ask")
        .with_arguments(json!({"question": "q"}).as_object().unwrap().clone());
    let r = client.call_tool_once(params).await.unwrap();
    let rmcp::model::CallToolResponse::Complete(r) = r else {
        panic!("expected a refusal result, got {r:?}");
    };
    assert_eq!(r.is_error, Some(true));
    assert!(text_of(&r).contains("relay policy"), "{}", text_of(&r));
    assert!(heard.heard().is_empty());
    let out = cli(
        &["audit", "--kind", "relay", "--oldest-first", "-o", "json"],
        &w.store_args(),
    );
    let relay: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(relay["decision"], "refused");
    assert_eq!(relay["payload"]["upstream"], "modernquiet");
}

/// An HTTP upstream speaking 2026-07-28 that answers with SSE streams: Warden's calls to it
/// take the HTTP exit (crates/warden-mcp/src/upstream/http/mod.rs), not rmcp's client worker (FED-1,
/// XPORT-4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_2026_http_upstream_progress_logs_input_and_cancellation_reach_their_call() {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let upstream = notes_over_http("web", "alpha", "protocol: \"2026-07-28\"\n", &shutdown).await;
    let w = TestWarden::start(&format!("kind: Project\nname: alpha\n---\n{upstream}")).await;

    // Progress, in order and while the call runs, and the call's log messages reach a
    // 2025-11-25 client.
    let (a, heard) = connect(&w.mcp(), &w.admin, "client-a").await;
    let params = CallToolRequestParams::new("web__progress").with_arguments(
        json!({"steps": 4, "delay_ms": 150})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = a.call_tool(params).await.unwrap();
    let done = Instant::now();
    assert_eq!(r.structured_content.as_ref().unwrap()["steps"], 4, "{r:?}");
    let events = heard.with_progress(4).await;
    let progress = progress_of(&events);
    assert_eq!(
        progress.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>(),
        vec!["progress 1", "progress 2", "progress 3", "progress 4"],
        "{events:?}"
    );
    assert!(
        done.duration_since(progress[0].0) >= Duration::from_millis(300),
        "progress was not relayed while the call ran"
    );
    assert!(
        events.iter().any(|(_, s)| s == "log {\"step\":1}"),
        "{events:?}"
    );

    // An input_required result reaches a 2026-07-28 client intact.
    let (modern, _) = connect_2026(&w.mcp(), &w.admin).await;
    let first = modern
        .call_tool_once(
            CallToolRequestParams::new("web__ask")
                .with_arguments(json!({"question": "which?"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let rmcp::model::CallToolResponse::InputRequired(needed) = first else {
        panic!("expected input_required, got {first:?}");
    };
    assert_eq!(needed.request_state.as_deref(), Some("asked:which?"));

    // A client's cancellation stops the upstream's work.
    let handle = a
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("web__slow")
                    .with_arguments(json!({"ms": 20000}).as_object().unwrap().clone()),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    wait_for_one_cancellation(&a, "web__cancellations").await;
    shutdown.cancel();
}

/// A 2025-11-25 client that takes elicitations and never answers one until it is cancelled
/// (`asked`, then `cancelled`), as a person who walked away from a dialog.
#[derive(Clone, Default)]
struct Hanger {
    heard: Arc<Mutex<Vec<&'static str>>>,
}

impl Hanger {
    async fn until_heard(&self, what: &str, who: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.heard.lock().unwrap().contains(&what) {
            assert!(Instant::now() < deadline, "{who}: never {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl ClientHandler for Hanger {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(Default::default());
        ClientConfig::new(capabilities, Implementation::new("hanger", "1"))
    }

    async fn create_elicitation(
        &self,
        _params: ElicitRequestParams,
        ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.heard.lock().unwrap().push("asked");
        tokio::select! {
            () = ctx.ct.cancelled() => self.heard.lock().unwrap().push("cancelled"),
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
        Err(rmcp::ErrorData::internal_error("no answer", None))
    }
}

/// A Warden in front of the notes fixture, unpinned, started with `flags`; a 2025-11-25
/// [`Hanger`] connected to it.
async fn hanging(flags: &[&str]) -> (TestWarden, RunningService<RoleClient, Hanger>, Hanger) {
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream_with("alpha", "alpha", flags, "")
    ))
    .await;
    let hanger = Hanger::default();
    let cfg = StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(w.admin.clone());
    let client = hanger
        .clone()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(cfg),
            ClientLifecycleMode::Initialize,
        )
        .await
        .unwrap();
    (w, client, hanger)
}

/// An upstream that cancels a question it asked (here: it stops waiting after 300 ms) has it
/// cancelled at the client Warden asked, and its call goes on at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_the_upstream_cancels_is_cancelled_at_the_client() {
    let (w, client, hanger) = hanging(&["--only-2025"]).await;
    let params = CallToolRequestParams::new("alpha__ask_briefly").with_arguments(
        json!({"question": "still there?", "ms": 300})
            .as_object()
            .unwrap()
            .clone(),
    );
    let r = tokio::time::timeout(Duration::from_secs(10), client.call_tool(params))
        .await
        .expect("the call waited for an answer its upstream no longer wanted")
        .unwrap();
    assert!(
        r.structured_content.as_ref().unwrap()["unanswered"].is_string(),
        "{}",
        text_of(&r)
    );
    hanger.until_heard("cancelled", "the client").await;
    drop(w);
}

/// A client that cancels its call while Warden waits for its answer to the upstream's
/// question has that question cancelled too, and the call ends `cancelled` — whether the
/// question is a 2025-11-25 upstream's request or a 2026-07-28 upstream's `input_required`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_while_its_client_is_asked_cancels_the_question() {
    for flags in [&["--only-2025"][..], &[][..]] {
        let who = format!("upstream flags {flags:?}");
        let (w, client, hanger) = hanging(flags).await;
        let params = CallToolRequestParams::new("alpha__ask")
            .with_arguments(json!({"question": "which?"}).as_object().unwrap().clone());
        let handle = client
            .send_cancellable_request(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .unwrap();
        hanger.until_heard("asked", &who).await;
        handle.cancel(Some("never mind".into())).await.unwrap();
        hanger.until_heard("cancelled", &who).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !outcomes(&w).contains(&("alpha__ask".to_owned(), "cancelled".to_owned())) {
            assert!(Instant::now() < deadline, "{who}: {:?}", outcomes(&w));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Cancellation reaches the upstream in the pairings not covered above: a `prompts/get`
/// cancelled by a 2025-11-25 client, against an upstream of either era, and a `tools/call`
/// cancelled by a 2026-07-28 client against an upstream that speaks 2025-11-25 only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_the_upstream_for_prompts_and_from_2026_clients() {
    for flags in [&[][..], &["--only-2025"][..]] {
        let w = TestWarden::start(&format!(
            "kind: Project\nname: alpha\n---\n{}",
            stdio_upstream_with("alpha", "alpha", flags, "")
        ))
        .await;
        let (client, _) = connect(&w.mcp(), &w.admin, "client-a").await;
        let mut arguments = serde_json::Map::new();
        arguments.insert("ms".into(), json!("20000"));
        let params =
            rmcp::model::GetPromptRequestParams::new("alpha__slow").with_arguments(arguments);
        let handle = client
            .send_cancellable_request(
                ClientRequest::GetPromptRequest(rmcp::model::GetPromptRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        handle.cancel(Some("changed my mind".into())).await.unwrap();
        wait_for_one_cancellation(&client, "alpha__cancellations").await;
    }
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\n{}",
        stdio_upstream_with("alpha", "alpha", &["--only-2025"], "")
    ))
    .await;
    let (modern, _) = connect_2026(&w.mcp(), &w.admin).await;
    let params = CallToolRequestParams::new("alpha__slow")
        .with_arguments(json!({"ms": 20000}).as_object().unwrap().clone());
    let handle = modern
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    wait_for_one_cancellation(&modern, "alpha__cancellations").await;
}

/// Progress an HTTP upstream reached in 2025-11-25 sends just before its answer reaches the
/// call, every time: rmcp's client hands notifications to tasks of their own and answers
/// straight to the call, and the last notification of three was lost once in the
/// conformance suite's `tools-call-with-progress` on a busy machine. The transport now puts
/// each on the call's queue as it reads it (crates/warden-mcp/src/upstream/delivery.rs), so
/// none can come after the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_sent_just_before_an_answer_over_2025_http_is_never_lost() {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let upstream = notes_over_http("web", "alpha", "protocol: \"2025-11-25\"\n", &shutdown).await;
    let w = TestWarden::start(&format!("kind: Project\nname: alpha\n---\n{upstream}")).await;
    let steps = 20;
    let client = reqwest::Client::new();
    for round in 0..40 {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "web__progress", "arguments": {"steps": steps, "delay_ms": 0},
        "_meta": {
            "progressToken": format!("round-{round}"),
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "relay-test", "version": "1"}
        }}});
        let text = client
            .post(w.mcp())
            .bearer_auth(&w.admin)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "web__progress")
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let messages: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect();
        let progress: Vec<f64> = messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"]["progress"].as_f64().unwrap())
            .collect();
        let expected: Vec<f64> = (1..=steps).map(f64::from).collect();
        assert_eq!(progress, expected, "round {round}: {text}");
        // Every progress notification comes before the answer. (A log message names no call:
        // a 2025-11-25 server sends it on its standalone stream, which races the answer, and
        // one that comes after it is passed on after it.)
        let answer = messages.iter().position(|m| m["result"].is_object());
        let last_progress = messages
            .iter()
            .rposition(|m| m["method"] == "notifications/progress");
        assert!(
            answer.is_some() && last_progress < answer,
            "round {round}: the answer comes after the progress: {text}"
        );
    }
    shutdown.cancel();
}
