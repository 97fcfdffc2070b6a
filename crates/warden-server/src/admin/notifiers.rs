//! Notifiers over the API (NOTIFY-1): each with how its deliveries fare — `warden get
//! notifiers`. The rules are `warden_control::notifiers`'.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, State};
use serde::Serialize;
use utoipa::ToSchema;
use warden_control::Caller;
use warden_control::notifiers;
use warden_mcp::Authenticated;

use super::access::own_authority;
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A delivery whose last attempt failed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FailedDelivery {
    /// `dlv_…`, sent as `Warden-Delivery`.
    id: String,
    /// The event (`approval.parked`).
    event: String,
    /// `pending` (to be tried again), `failed` (given up) or `delivered` (at a later attempt).
    status: String,
    /// Attempts made.
    attempts: u32,
    /// The last failed attempt (ms since the epoch).
    at: Option<i64>,
    /// What went wrong.
    error: Option<String>,
}

impl From<notifiers::FailedDelivery> for FailedDelivery {
    fn from(d: notifiers::FailedDelivery) -> Self {
        Self {
            id: d.id,
            event: d.event,
            status: d.status,
            attempts: d.attempts,
            at: d.at,
            error: d.error,
        }
    }
}

impl From<notifiers::Notifier> for NotifierView {
    fn from(n: notifiers::Notifier) -> Self {
        Self {
            name: n.name,
            url: n.url,
            events: n.events.iter().map(|e| e.as_str().to_owned()).collect(),
            format: match n.format {
                warden_core::notify::Format::Json => "json",
                warden_core::notify::Format::Slack => "slack",
            }
            .to_owned(),
            delivered: n.delivered,
            pending: n.pending,
            failed: n.failed,
            last_delivered_at: n.last_delivered_at,
            last_failures: n
                .last_failures
                .into_iter()
                .map(FailedDelivery::from)
                .collect(),
        }
    }
}

/// A notifier and its deliveries.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NotifierView {
    /// Its name.
    name: String,
    /// Where deliveries go, as configured (a reference stays a reference).
    url: String,
    /// The events it is told of.
    events: Vec<String>,
    /// `json` or `slack`.
    format: String,
    /// Deliveries delivered (kept a week).
    delivered: i64,
    /// Deliveries waiting for their first or next attempt.
    pending: i64,
    /// Deliveries given up (kept a week).
    failed: i64,
    /// The last delivery (ms since the epoch).
    last_delivered_at: Option<i64>,
    /// The latest deliveries whose last attempt failed, newest first.
    last_failures: Vec<FailedDelivery>,
}

/// Notifiers.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Notifiers {
    /// By name.
    items: Vec<NotifierView>,
}

/// Every notifier, with how its deliveries fare.
#[utoipa::path(get, path = "/notifiers", operation_id = "listNotifiers", tag = "notifiers",
    responses(
        (status = 200, description = "the notifiers", body = Notifiers),
        (status = 403, description = "without `config:read`", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
) -> Result<Json<Notifiers>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let items = notifiers::list(&state.control, &caller).await?;
    Ok(Json(Notifiers {
        items: items.into_iter().map(NotifierView::from).collect(),
    }))
}
