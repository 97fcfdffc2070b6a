//! What the admin API tests share: a client, a configuration, tokens with and without roles.

use reqwest::Method;
use serde_json::Value;

use crate::common::*;

/// The configuration of most tests: a project whose upstream is the fixture notebook, users
/// with roles, and a dangerous mutation that parks for approval (APR-1 L2).
pub(crate) fn config() -> String {
    format!(
        r#"
kind: Project
name: payments
---
{ledger}
---
kind: ToolPolicy
project: payments
tool: ledger__echo
class: mutation
risk: dangerous
---
kind: User
name: alice
---
kind: User
name: bob
---
kind: User
name: olivia
---
kind: User
name: nobody
---
kind: Role
name: writer
permissions: ["run:projects:payments", "ledger:write"]
---
kind: Role
name: approver
permissions: ["approvals:decide"]
---
kind: Role
name: token-operator
permissions: ["tokens:write", "run:projects:payments"]
---
kind: RoleBinding
role: writer
subject: {{ user: alice }}
---
kind: RoleBinding
role: writer
subject: {{ user: bob }}
---
kind: RoleBinding
role: approver
subject: {{ user: bob }}
---
kind: RoleBinding
role: token-operator
subject: {{ user: olivia }}
---
kind: Workspace
name: board
mode: kanban
project: payments
---
kind: Agent
name: nightly
memberships: [payments]
schedules: [ {{ cron: "0 3 1 1 *", runner: {{ command: "true" }} }} ]
runner: {{ command: "true" }}
"#,
        ledger = stdio_upstream("ledger", "payments", ""),
    )
}

/// A client of the admin API.
pub(crate) struct Api {
    base: String,
    http: reqwest::Client,
}

/// An answer: its status, its `content-type` and its body (JSON when it is JSON).
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) text: String,
    pub(crate) json: Value,
}

impl Api {
    pub(crate) fn new(w: &TestWarden) -> Self {
        warden_mcp::http_client::install_tls();
        Self {
            base: w.base.clone(),
            http: reqwest::Client::new(),
        }
    }

    /// `method path` as `token`, with a body of `content_type` when given.
    pub(crate) async fn send(
        &self,
        method: Method,
        token: Option<&str>,
        path: &str,
        body: Option<(&str, String)>,
    ) -> Answer {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some((content_type, body)) = body {
            request = request.header("content-type", content_type).body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let text = response.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            content_type,
            text,
            json,
        }
    }

    pub(crate) async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        let a = self.send(Method::GET, Some(token), path, None).await;
        (a.status, a.json)
    }

    pub(crate) async fn post(&self, token: &str, path: &str, body: Value) -> (u16, Value) {
        let a = self
            .send(
                Method::POST,
                Some(token),
                path,
                Some(("application/json", body.to_string())),
            )
            .await;
        (a.status, a.json)
    }

    pub(crate) async fn post_yaml(&self, token: &str, path: &str, yaml: &str) -> (u16, Value) {
        let a = self
            .send(
                Method::POST,
                Some(token),
                path,
                Some(("application/yaml", yaml.to_owned())),
            )
            .await;
        (a.status, a.json)
    }

    pub(crate) async fn delete(&self, token: &str, path: &str) -> (u16, Value) {
        let a = self.send(Method::DELETE, Some(token), path, None).await;
        (a.status, a.json)
    }
}

/// The refusal `{"error": message, "code": code}` with `status`.
pub(crate) fn refusal(status: u16, code: &str, message: &str) -> (u16, Value) {
    (
        status,
        serde_json::json!({ "error": message, "code": code }),
    )
}

/// A token of `nobody`, a user without any role: it holds no capability.
pub(crate) async fn nobody(w: &TestWarden) -> String {
    w.token("nobody", None, None).await
}
