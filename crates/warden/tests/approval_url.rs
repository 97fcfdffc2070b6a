//! APR-7 over URL elicitation: a 2025-11-25 client that takes URL elicitations is offered the
//! console's page of its parked call, waits, and learns the outcome when it is decided.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CustomNotification,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, Implementation,
    UrlElicitationCapability,
};
use rmcp::service::ClientServiceExt as _;
use rmcp::service::{ClientLifecycleMode, NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

/// A client that takes URL elicitations (accepting or declining them) and records them and
/// the completions it hears.
#[derive(Clone, Default)]
struct UrlClient {
    accept: bool,
    urls: Arc<Mutex<Vec<(String, String)>>>,
    completed: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for UrlClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_url(UrlElicitationCapability::default()));
        ClientConfig::new(capabilities, Implementation::new("url-client", "1"))
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        if let ElicitRequestParams::UrlElicitationParams {
            url,
            elicitation_id,
            ..
        } = params
        {
            self.urls.lock().unwrap().push((url, elicitation_id));
        }
        Ok(ElicitResult::new(if self.accept {
            ElicitationAction::Accept
        } else {
            ElicitationAction::Decline
        }))
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _ctx: NotificationContext<RoleClient>,
    ) {
        if notification.method == "notifications/elicitation/complete" {
            self.completed
                .lock()
                .unwrap()
                .push(notification.params.unwrap_or_default());
        }
    }
}

async fn connect(
    w: &TestWarden,
    token: &str,
    client: UrlClient,
) -> RunningService<RoleClient, UrlClient> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(w.mcp()).auth_header(token.to_owned());
    client
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Initialize,
        )
        .await
        .unwrap()
}

fn config() -> String {
    format!(
        "kind: Project\nname: alpha\n---\n{}---\nkind: ToolPolicy\nproject: alpha\ntool: alpha__add_note\nclass: mutation\nrisk: dangerous\n",
        stdio_upstream("alpha", "alpha", "")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_client_waits_on_the_consoles_page_and_gets_the_outcome() {
    let w = TestWarden::start(&config()).await;
    let handler = UrlClient {
        accept: true,
        ..UrlClient::default()
    };
    let client = connect(&w, &w.admin, handler.clone()).await;
    let call = tokio::spawn(async move {
        let params = CallToolRequestParams::new("alpha__add_note").with_arguments(
            json!({"text": "approved by a human"})
                .as_object()
                .unwrap()
                .clone(),
        );
        let result = client.call_tool(params).await.unwrap();
        (client, result)
    });
    // The client is offered the approval's page while its call waits.
    let mut offered = None;
    for _ in 0..100 {
        if let Some(o) = handler.urls.lock().unwrap().first().cloned() {
            offered = Some(o);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (url, id) = offered.expect("no URL elicitation");
    assert!(id.starts_with("apr_"), "{id}");
    assert_eq!(url, format!("{}/approvals/{id}", w.base));
    assert!(!call.is_finished());
    // A human approves it (as a second admin credential, through the API).
    let decider = w.token("admin", None, None).await;
    let decided = reqwest::Client::new()
        .post(format!("{}/api/v1/approvals/{id}/approve", w.base))
        .bearer_auth(&decider)
        .json(&json!({"reason": "ok"}))
        .send()
        .await
        .unwrap();
    assert!(decided.status().is_success(), "{:?}", decided.text().await);
    let (_client, result) = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        result.structured_content.as_ref().unwrap()["id"],
        1,
        "the tool's own result: {result:?}"
    );
    // Its decision, as on every governed result.
    assert_eq!(decision(&result)["status"], "executed", "{result:?}");
    assert!(
        decision(&result)["runId"]
            .as_str()
            .is_some_and(|r| r.starts_with("run_")),
        "{result:?}"
    );
    // The completion travels on the session's own stream, not the call's, and the client
    // handles notifications on tasks of their own: it may be heard just after the answer.
    let mut completed = Vec::new();
    for _ in 0..100 {
        completed = handler.completed.lock().unwrap().clone();
        if !completed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(completed, vec![json!({"elicitationId": id})]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_url_elicitation_answers_pending_approval_at_once() {
    let w = TestWarden::start(&config()).await;
    let handler = UrlClient::default();
    let client = connect(&w, &w.admin, handler.clone()).await;
    let r = call(&client, "alpha__add_note", json!({"text": "x"})).await;
    assert_eq!(decision(&r)["status"], "pending_approval", "{r:?}");
    assert_eq!(handler.urls.lock().unwrap().len(), 1);
}
