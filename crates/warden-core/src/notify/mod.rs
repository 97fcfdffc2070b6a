//! Notifications (NOTIFY-1): the events found in the audit trail, what a delivery says, how it
//! is signed, and when a failed one is tried again. Pure; the server delivers
//! (`warden_server::notify`), the store keeps each delivery and its outcome.
//!
//! Events are read from the audit trail rather than raised where they happen: every one of
//! them is already a chained record (a parked call, a decision, an applied kill switch, a held
//! tool), whichever door or replica made it, so none is lost to a crash between the act and
//! the telling, and the call path pays nothing.

use std::time::Duration;

use hmac::{KeyInit, Mac};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::audit::{AuditRecord, RecordKind, to_hex};
use crate::time::{Millis, rfc3339};

#[cfg(test)]
mod tests;

/// The header carrying a delivery's signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>">`.
pub const SIGNATURE_HEADER: &str = "Warden-Signature";
/// The header carrying a delivery's id, the same on every attempt.
pub const DELIVERY_HEADER: &str = "Warden-Delivery";
/// The header naming a delivery's event.
pub const EVENT_HEADER: &str = "Warden-Event";
/// Attempts of a delivery before it is given up (about an hour, with [`retry_after`]).
pub const MOST_ATTEMPTS: u32 = 15;

/// What a notifier can be told of.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum Event {
    /// A call was parked for approval, or staged with a veto window.
    #[serde(rename = "approval.parked")]
    ApprovalParked,
    /// A parked call was approved, rejected, vetoed or expired.
    #[serde(rename = "approval.decided")]
    ApprovalDecided,
    /// A parked call has a quarter of its time left and nobody decided it.
    #[serde(rename = "approval.expiring")]
    ApprovalExpiring,
    /// A kill switch was pulled (or changed).
    #[serde(rename = "killswitch.pulled")]
    KillswitchPulled,
    /// A kill switch was released.
    #[serde(rename = "killswitch.released")]
    KillswitchReleased,
    /// An upstream tool's definition changed, or a new one appeared, and it is held out of
    /// every catalog until reviewed (GOV-9).
    #[serde(rename = "tool.quarantined")]
    ToolQuarantined,
}

impl Event {
    /// Every event.
    pub const ALL: [Event; 6] = [
        Event::ApprovalParked,
        Event::ApprovalDecided,
        Event::ApprovalExpiring,
        Event::KillswitchPulled,
        Event::KillswitchReleased,
        Event::ToolQuarantined,
    ];

    /// Its name, as configured and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::ApprovalParked => "approval.parked",
            Event::ApprovalDecided => "approval.decided",
            Event::ApprovalExpiring => "approval.expiring",
            Event::KillswitchPulled => "killswitch.pulled",
            Event::KillswitchReleased => "killswitch.released",
            Event::ToolQuarantined => "tool.quarantined",
        }
    }

    /// Every event's name, for messages.
    pub fn list() -> String {
        Event::ALL
            .iter()
            .map(|e| format!("`{}`", e.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A delivery's body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Warden's JSON: id, event, time, subject, link and a line of text.
    #[default]
    Json,
    /// A Slack incoming webhook's `{"text": …}`.
    Slack,
}

/// An event found, before it is addressed to notifiers.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    /// What happened.
    pub event: Event,
    /// What makes it this one and no other, the same on every replica: `seq:<n>[:<i>]` (the
    /// audit record) or `expiring:<approval id>`.
    pub source: String,
    /// When it happened.
    pub at: Millis,
    /// What it is about: ids, tool, project, principal — never argument values.
    pub subject: Map<String, Value>,
    /// The console page about it, from the console's root (`/approvals/apr_…`).
    pub page: String,
}

impl Notice {
    /// The approval it is about, for `approval.*` events.
    pub fn approval(&self) -> Option<&str> {
        match self.event {
            Event::ApprovalParked | Event::ApprovalDecided | Event::ApprovalExpiring => {
                self.subject.get("approval").and_then(Value::as_str)
            }
            _ => None,
        }
    }
}

/// The decisions of an approval's record that are an `approval.decided`.
const DECIDED: [&str; 4] = ["approve", "reject", "veto", "expire"];

/// The events `record` holds (most hold none).
pub fn notices(record: &AuditRecord) -> Vec<Notice> {
    let r = &record.record;
    let payload = || serde_json::from_str::<Value>(&r.payload).unwrap_or(Value::Null);
    let notice = |event: Event, i: usize, subject: Map<String, Value>, page: String| Notice {
        event,
        source: if i == 0 {
            format!("seq:{}", record.seq)
        } else {
            format!("seq:{}:{i}", record.seq)
        },
        at: r.at,
        subject,
        page,
    };
    let text = |v: &Value, key: &str| v.get(key).cloned().unwrap_or(Value::Null);
    match (r.kind, r.decision.as_deref(), r.tool.as_deref()) {
        (RecordKind::Decision, Some(d @ ("park" | "stage")), _) => {
            let p = payload();
            let Some(id) = p.get("approval_id").and_then(Value::as_str) else {
                return Vec::new();
            };
            let subject = object(json!({
                "approval": id,
                "kind": if d == "park" { "approval" } else { "staged" },
                "tool": r.tool,
                "principal": r.principal,
                "agent": r.agent,
                "run": r.run_id,
                "rule": text(&p, "rule"),
                "due_at": p.get("due_at").and_then(Value::as_i64).map(|t| rfc3339(Millis(t))),
            }));
            vec![notice(
                Event::ApprovalParked,
                0,
                subject,
                format!("/approvals/{id}"),
            )]
        }
        (RecordKind::Decision, Some(d), _) if DECIDED.contains(&d) => {
            let p = payload();
            let Some(id) = p.get("approval_id").and_then(Value::as_str) else {
                return Vec::new();
            };
            let subject = object(json!({
                "approval": id,
                "decision": d,
                "tool": r.tool,
                "principal": text(&p, "requester"),
                "decider": text(&p, "decider"),
                "reason": text(&p, "reason"),
                "run": r.run_id,
            }));
            vec![notice(
                Event::ApprovalDecided,
                0,
                subject,
                format!("/approvals/{id}"),
            )]
        }
        (RecordKind::Admin, _, Some("apply")) => {
            let p = payload();
            let keys = p
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str()?.strip_prefix("KillSwitch/"));
            keys.enumerate()
                .map(|(i, key)| {
                    let subject = object(json!({ "key": key, "by": r.principal }));
                    notice(Event::KillswitchPulled, i, subject, "/kill-switches".into())
                })
                .collect()
        }
        (RecordKind::Admin, _, Some("delete")) => {
            let p = payload();
            match p
                .get("resource")
                .and_then(Value::as_str)
                .and_then(|s| s.strip_prefix("KillSwitch/"))
            {
                Some(key) => {
                    let subject = object(json!({ "key": key, "by": r.principal }));
                    vec![notice(
                        Event::KillswitchReleased,
                        0,
                        subject,
                        "/kill-switches".into(),
                    )]
                }
                None => Vec::new(),
            }
        }
        (RecordKind::Admin, _, Some("tools.change")) => {
            let p = payload();
            let held = p
                .get("held")
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            held.enumerate()
                .filter_map(|(i, h)| {
                    let catalog = h.get("catalog")?.as_str()?;
                    let subject = object(json!({
                        "tool": catalog,
                        "upstream": text(h, "upstream"),
                        "upstream_tool": text(h, "tool"),
                        "state": text(h, "state"),
                        "project": text(h, "project"),
                    }));
                    Some(notice(
                        Event::ToolQuarantined,
                        i,
                        subject,
                        format!("/tools/changes/{catalog}"),
                    ))
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// When a parked approval created at `created_at` and expiring at `due_at` is told of as
/// expiring: when a quarter of its time is left.
pub fn expiring_from(created_at: Millis, due_at: Millis) -> Millis {
    Millis(due_at.0 - (due_at.0 - created_at.0).max(0) / 4)
}

/// The `approval.expiring` of approval `id`, whose other fields are in `subject`.
pub fn expiring(id: &str, at: Millis, mut subject: Map<String, Value>) -> Notice {
    subject.insert("approval".into(), Value::from(id));
    Notice {
        event: Event::ApprovalExpiring,
        source: format!("expiring:{id}"),
        at,
        subject,
        page: format!("/approvals/{id}"),
    }
}

/// The id of the delivery of the event `source` to `notifier`: the same on every replica, so
/// that an event found twice is delivered once.
pub fn delivery_id(notifier: &str, source: &str) -> String {
    let digest = Sha256::digest(format!("{notifier}\n{source}").as_bytes());
    let hex = to_hex(&digest);
    format!("dlv_{}", hex.get(..24).unwrap_or(&hex))
}

/// The body of delivery `id` of `notice`, in `format`; `console`: the console's root URL,
/// when known, that the link is built from.
pub fn body(format: Format, id: &str, notice: &Notice, console: Option<&str>) -> String {
    let link = console.map(|c| format!("{}{}", c.trim_end_matches('/'), notice.page));
    let text = summary(notice);
    let value = match format {
        Format::Json => json!({
            "id": id,
            "event": notice.event.as_str(),
            "at": rfc3339(notice.at),
            "subject": notice.subject,
            "link": link,
            "text": text,
        }),
        Format::Slack => json!({
            "text": match &link {
                Some(l) => format!("{text} <{l}|Open in Warden>"),
                None => text,
            },
        }),
    };
    value.to_string()
}

/// A line a human reads.
fn summary(n: &Notice) -> String {
    let s = |key: &str| n.subject.get(key).and_then(Value::as_str).unwrap_or("?");
    match n.event {
        Event::ApprovalParked => format!(
            "`{}` by {} waits for approval {} (rule {}) until {}",
            s("tool"),
            s("principal"),
            s("approval"),
            s("rule"),
            s("due_at")
        ),
        Event::ApprovalDecided => format!(
            "approval {} of `{}`: {} by {}",
            s("approval"),
            s("tool"),
            s("decision"),
            s("decider")
        ),
        Event::ApprovalExpiring => format!(
            "approval {} of `{}` by {} expires at {} undecided",
            s("approval"),
            s("tool"),
            s("principal"),
            s("due_at")
        ),
        Event::KillswitchPulled => format!("kill switch `{}` pulled by {}", s("key"), s("by")),
        Event::KillswitchReleased => {
            format!("kill switch `{}` released by {}", s("key"), s("by"))
        }
        Event::ToolQuarantined => format!(
            "tool `{}` of upstream `{}` is held out of every catalog until reviewed ({})",
            s("tool"),
            s("upstream"),
            s("state")
        ),
    }
}

/// The `Warden-Signature` of `body` sent at `t` (unix seconds), signed with `secret`.
pub fn signature(secret: &[u8], t: i64, body: &str) -> String {
    format!("t={t},v1={}", to_hex(&mac(secret, t, body)))
}

fn mac(secret: &[u8], t: i64, body: &str) -> Vec<u8> {
    // HMAC takes a key of any length; the error is unreachable.
    let Ok(mut mac) = hmac::Hmac::<Sha256>::new_from_slice(secret) else {
        return Vec::new();
    };
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// How long to wait before attempt `attempts + 1` after `attempts` failed ones: 1 s, doubling,
/// at most 10 minutes; none after [`MOST_ATTEMPTS`].
pub fn retry_after(attempts: u32) -> Option<Duration> {
    if attempts >= MOST_ATTEMPTS {
        return None;
    }
    let secs = 1u64 << attempts.saturating_sub(1).min(10);
    Some(Duration::from_secs(secs.min(600)))
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(mut m) => {
            m.retain(|_, v| !v.is_null());
            m
        }
        _ => Map::new(),
    }
}
