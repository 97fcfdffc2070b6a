//! APR-7 over URL elicitation: a 2025-11-25 client that declares URL elicitation
//! (`elicitation: {url: {}}`) is offered, for its parked call, the console's page of the
//! approval (`elicitation/create` in `url` mode, the approval's id as the elicitation id). When the client accepts, the call waits for the decision — while the
//! client stays connected, until the approval expires — then Warden sends
//! `notifications/elicitation/complete` and the call answers with what happened: the tool's
//! recorded result when it was executed, the denial otherwise. A client that declines, cancels
//! or cannot be asked gets `pending_approval` as any other client does.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ClientCapabilities, CustomNotification, ElicitRequestParams, ElicitationAction,
    ServerNotification, TaskPayload,
};
use rmcp::service::Peer;
use tokio_util::sync::CancellationToken;
use warden_core::authority::Authority;
use warden_core::contract::DecisionContract;

use crate::gateway::Gateway;
use crate::wire::DECISION_META;

/// How often a waiting call reads its approval.
const POLL: Duration = Duration::from_millis(500);

/// Whether the client takes URL elicitations.
pub fn supported(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.url.is_some())
}

/// Offers the approval's page to the client and waits for the decision; `None` when the
/// client did not take the offer (the caller answers `pending_approval`).
pub async fn offer_and_wait(
    gateway: &Gateway,
    authority: &Authority,
    peer: &Peer<RoleServer>,
    cancel: &CancellationToken,
    tool: &str,
    approval_id: &str,
) -> Option<CallToolResult> {
    let url = gateway.approval_url(approval_id)?;
    let params = ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message: format!(
            "`{tool}` waits for a human approval: it is decided at this page (approval `{approval_id}`)"
        ),
        url,
        elicitation_id: approval_id.to_owned(),
    };
    let answer = tokio::select! {
        answer = peer.create_elicitation(params) => answer.ok()?,
        () = cancel.cancelled() => return None,
    };
    if answer.action != ElicitationAction::Accept {
        return None;
    }
    let (decided, run_id) = loop {
        tokio::select! {
            () = cancel.cancelled() => return None,
            () = tokio::time::sleep(POLL) => {}
        }
        let approval = gateway.parked_call(authority, approval_id).await.ok()??;
        let task = crate::approval_tasks::detailed(&approval);
        match task.payload {
            TaskPayload::Working | TaskPayload::InputRequired { .. } => continue,
            payload => break (payload, approval.run_id),
        }
    };
    let complete = CustomNotification::new(
        "notifications/elicitation/complete",
        Some(serde_json::json!({ "elicitationId": approval_id })),
    );
    let _ = peer
        .send_notification(ServerNotification::CustomNotification(complete))
        .await;
    // The outcome, with its decision in `_meta` as every governed result has it.
    let (mut result, decision) = match decided {
        TaskPayload::Completed { result } => {
            let result: CallToolResult =
                serde_json::from_value(serde_json::Value::Object(result)).ok()?;
            let executed = DecisionContract {
                status: "executed",
                code: None,
                data: None,
                approval_id: None,
                run_id: Some(run_id),
                message: format!("executed `{tool}`"),
            };
            (result, serde_json::to_value(executed).ok()?)
        }
        TaskPayload::Failed { error } => {
            let denial = error.get("data").cloned().unwrap_or_default();
            let message = error
                .get("message")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("not executed")
                .to_owned();
            let mut result = CallToolResult::error(vec![rmcp::model::ContentBlock::text(message)]);
            result.structured_content = Some(denial.clone());
            (result, denial)
        }
        _ => return None,
    };
    result
        .meta
        .get_or_insert_with(Default::default)
        .insert(DECISION_META.into(), decision);
    Some(result)
}
