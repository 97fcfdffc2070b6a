//! Notifications (NOTIFY-1), kept where every replica reads them: each delivery to a Notifier
//! from the event to its last attempt, and how far the audit trail has been read for events.
//!
//! A delivery's id is derived from its notifier and its event (`warden_core::notify`), so two
//! replicas that find one event insert one row; a replica claims a row for a while before it
//! sends it, so that one sends it. What the rows mean is the server's (`warden_server::notify`).

pub(crate) mod sql;
mod store;

use warden_core::time::Millis;

/// A delivery to insert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewDelivery {
    /// `dlv_…`.
    pub id: String,
    /// The Notifier's name.
    pub notifier: String,
    /// The event's name (`approval.parked`).
    pub event: String,
    /// What is sent.
    pub body: String,
    /// When the event was found.
    pub created_at: Millis,
}

/// Where a delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Not sent yet, or to be tried again.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Given up: out of attempts, or its notifier is gone.
    Failed,
}

impl DeliveryStatus {
    /// Its stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    pub(crate) fn parse(s: &str) -> Self {
        match s {
            "delivered" => Self::Delivered,
            "failed" => Self::Failed,
            _ => Self::Pending,
        }
    }
}

/// A stored delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// `dlv_…`, sent as `Warden-Delivery`.
    pub id: String,
    /// The Notifier's name.
    pub notifier: String,
    /// The event's name.
    pub event: String,
    /// What is sent.
    pub body: String,
    /// When the event was found.
    pub created_at: Millis,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts made.
    pub attempts: u32,
    /// The next attempt, while pending.
    pub next_at: Millis,
    /// The last attempt.
    pub last_at: Option<Millis>,
    /// What went wrong with the last attempt.
    pub last_error: Option<String>,
}

/// The outcome of one attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// When it was made.
    pub at: Millis,
    /// Where the delivery stands after it.
    pub status: DeliveryStatus,
    /// The next attempt, when it stays pending.
    pub next_at: Millis,
    /// What went wrong (none when delivered).
    pub error: Option<String>,
}

/// A notifier's deliveries in brief.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotifierDeliveries {
    /// Delivered ones kept (a week).
    pub delivered: i64,
    /// Pending ones.
    pub pending: i64,
    /// Given-up ones kept (a week).
    pub failed: i64,
    /// The last delivered one's time.
    pub last_delivered_at: Option<Millis>,
    /// The latest attempts that failed, newest first (at most five).
    pub last_failures: Vec<Delivery>,
}
