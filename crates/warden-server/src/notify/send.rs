//! One attempt of one delivery: resolve the notifier's URL and key, sign, POST, record.

use std::sync::Arc;
use std::time::Duration;

use warden_core::config::NotifierSpec;
use warden_core::notify::{self, DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER};
use warden_core::url_credentials;
use warden_mcp::Gateway;
use warden_store::{Attempt, Delivery, DeliveryStatus};

/// How long a replica holds a delivery it sends; longer than an attempt may take.
pub(super) const CLAIM: Duration = Duration::from_secs(60);
/// How long one attempt may take, connecting included.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a refusing receiver's answer is kept with the failure.
const KEPT_ANSWER: usize = 200;

/// Sends deliveries.
#[derive(Clone)]
pub(super) struct Sender {
    gateway: Arc<Gateway>,
    client: Result<reqwest::Client, String>,
}

impl Sender {
    pub(super) fn new(gateway: Arc<Gateway>) -> Self {
        Self {
            gateway,
            client: warden_mcp::http_client::shared(),
        }
    }

    /// Makes one attempt of `delivery` to `notifier` (none: it was deleted; the loop waits a
    /// minute before it says so, for a replica that has not loaded a new notifier yet) and
    /// records it.
    pub(super) async fn send(&self, notifier: Option<NotifierSpec>, delivery: Delivery) {
        let outcome = match &notifier {
            None => Err((
                format!("notifier `{}` no longer exists", delivery.notifier),
                false,
            )),
            Some(n) => self.post(n, &delivery).await.map_err(|e| (e, true)),
        };
        let at = self.gateway.clock().now();
        let attempt = match outcome {
            Ok(()) => Attempt {
                at,
                status: DeliveryStatus::Delivered,
                next_at: at,
                error: None,
            },
            Err((error, retry)) => {
                let wait = notify::retry_after(delivery.attempts + 1).filter(|_| retry);
                tracing::warn!(
                    notifier = %delivery.notifier,
                    delivery = %delivery.id,
                    event = %delivery.event,
                    attempt = delivery.attempts + 1,
                    error = %error,
                    "a notification was not delivered{}",
                    if wait.is_some() { "; trying again" } else { "; given up" }
                );
                Attempt {
                    at,
                    status: if wait.is_some() {
                        DeliveryStatus::Pending
                    } else {
                        DeliveryStatus::Failed
                    },
                    next_at: wait.map_or(at, |w| at.plus(w)),
                    error: Some(error),
                }
            }
        };
        metrics::counter!(
            "warden_notifications_total",
            "notifier" => delivery.notifier.clone(),
            "outcome" => match attempt.status {
                DeliveryStatus::Delivered => "delivered",
                DeliveryStatus::Pending => "retried",
                DeliveryStatus::Failed => "failed",
            }
        )
        .increment(1);
        if let Err(e) = self
            .gateway
            .store()
            .finish_delivery(&delivery.id, &attempt)
            .await
        {
            // Its claim lapses and it is sent again: at least once, never lost.
            tracing::warn!(delivery = %delivery.id, error = %e, "a notification's attempt could not be recorded");
        }
    }

    /// POSTs `delivery` to `notifier`, signed at the current time.
    async fn post(&self, notifier: &NotifierSpec, delivery: &Delivery) -> Result<(), String> {
        let secrets = self.gateway.upstreams().secrets();
        let url = secrets.resolve(&notifier.url)?;
        let key = secrets.resolve(&notifier.secret)?;
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let t = self.gateway.clock().now().0.div_euclid(1000);
        let mut answer = client
            .post(&url)
            .timeout(ATTEMPT_TIMEOUT)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::USER_AGENT,
                concat!("warden/", env!("CARGO_PKG_VERSION")),
            )
            .header(
                SIGNATURE_HEADER,
                notify::signature(key.as_bytes(), t, &delivery.body),
            )
            .header(DELIVERY_HEADER, &delivery.id)
            .header(EVENT_HEADER, &delivery.event)
            .body(delivery.body.clone())
            .send()
            .await
            .map_err(|e| {
                // The URL as configured: a reference stays one (a Slack webhook's URL is a
                // secret).
                format!(
                    "POST {} failed: {}",
                    url_credentials::redact(&notifier.url),
                    without_url(&e)
                )
            })?;
        let status = answer.status();
        if status.is_success() {
            return Ok(());
        }
        // The first chunk only: a receiver's refusal is not read whole.
        let first = answer.chunk().await.ok().flatten().unwrap_or_default();
        let text: String = String::from_utf8_lossy(&first)
            .chars()
            .take(KEPT_ANSWER)
            .collect();
        Err(format!(
            "the receiver answered {status}{}",
            if text.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", text.trim())
            }
        ))
    }
}

/// A request's error without the URL reqwest puts in it (a Slack webhook's URL is a secret).
fn without_url(e: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut deepest = None;
    while let Some(s) = source {
        deepest = Some(s.to_string());
        source = s.source();
    }
    if e.is_timeout() {
        return format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs());
    }
    deepest.unwrap_or_else(|| "the request failed".into())
}
