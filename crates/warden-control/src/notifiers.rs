//! Notifiers (NOTIFY-1) and how their deliveries fare — `warden get notifiers`, the API's
//! `listNotifiers`. Configuring one is `apply` (`resources.rs`); delivering is the server's.

use serde::Serialize;
use warden_core::capability::CONFIG_READ;
use warden_core::config::{Kind, Resource};
use warden_core::notify::{Event, Format};
use warden_store::Delivery;

use crate::{Caller, Control, Refusal};

/// A notifier and its deliveries in brief, as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notifier {
    /// Its name.
    pub name: String,
    /// Where deliveries go, as configured (a reference stays a reference).
    pub url: String,
    /// The events it is told of.
    pub events: Vec<Event>,
    /// The body's shape.
    pub format: Format,
    /// Deliveries delivered (kept a week).
    pub delivered: i64,
    /// Deliveries waiting for their first or next attempt.
    pub pending: i64,
    /// Deliveries given up (kept a week).
    pub failed: i64,
    /// The last delivery (ms since the epoch).
    pub last_delivered_at: Option<i64>,
    /// The latest deliveries whose last attempt failed, newest first.
    pub last_failures: Vec<FailedDelivery>,
}

/// A delivery whose last attempt failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedDelivery {
    /// `dlv_…`, sent as `Warden-Delivery`.
    pub id: String,
    /// The event (`approval.parked`).
    pub event: String,
    /// `pending` (to be tried again), `failed` (given up) or `delivered` (at a later attempt).
    pub status: String,
    /// Attempts made.
    pub attempts: u32,
    /// The last failed attempt (ms since the epoch).
    pub at: Option<i64>,
    /// What went wrong.
    pub error: Option<String>,
}

impl From<Delivery> for FailedDelivery {
    fn from(d: Delivery) -> Self {
        Self {
            id: d.id,
            event: d.event,
            status: d.status.as_str().to_owned(),
            attempts: d.attempts,
            at: d.last_at.map(|m| m.0),
            error: d.last_error,
        }
    }
}

/// Every notifier, by name, with its deliveries. Needs `config:read`.
pub async fn list(control: &Control, caller: &Caller) -> Result<Vec<Notifier>, Refusal> {
    caller.require(CONFIG_READ, "listing notifiers")?;
    let store = control.store();
    let (config, _) = store.load_config().await?;
    let mut deliveries = store.notifier_deliveries().await?;
    let mut out: Vec<Notifier> = config
        .of_kind(Kind::Notifier)
        .filter_map(|r| match r {
            Resource::Notifier(n) => Some(n),
            _ => None,
        })
        .map(|spec| {
            let d = deliveries.remove(spec.name.as_str()).unwrap_or_default();
            Notifier {
                name: spec.name.to_string(),
                url: spec.url.clone(),
                events: spec.events.clone(),
                format: spec.format,
                delivered: d.delivered,
                pending: d.pending,
                failed: d.failed,
                last_delivered_at: d.last_delivered_at.map(|m| m.0),
                last_failures: d
                    .last_failures
                    .into_iter()
                    .map(FailedDelivery::from)
                    .collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
