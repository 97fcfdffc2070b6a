//! `warden serve --otlp-endpoint URL --otlp-audit` (AUD-5): the audit trail as OpenTelemetry
//! logs, beside the traces — each record one log record, sent over OTLP/HTTP (protobuf) to the
//! collector's `/v1/logs`, in the trail's order, a batch at a time.
//!
//! A batch counts as sent once the collector answered it with a success; only then does the
//! cursor — the last sequence number sent, in a file beside the audit key — move on. So a
//! collector that is down or refuses loses nothing: the same records are sent again, every
//! [`LOOK`], until it takes them; and a server that stops goes on from its cursor when it
//! starts again (records the CLI wrote meanwhile included). Without a cursor the first
//! server starts at the trail's head: what came before is `warden audit export`'s.
//!
//! The messages are built here with `opentelemetry-proto` rather than through the SDK's log
//! pipeline, whose batch processor drops what it cannot export and never says which records a
//! collector took — which the cursor needs to know.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;
use tokio_util::sync::CancellationToken;
use warden_core::audit::AuditRecord;
use warden_core::audit::export::{self, Format};
use warden_store::{AuditFilter, Store};

use crate::common::usage;

/// How often the trail is looked at for new records, and a failed batch sent again.
const LOOK: Duration = Duration::from_secs(1);
/// The most records one request carries.
const BATCH: i64 = 500;
/// How long one request may take; and how long a stopping server goes on sending.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The longest wait between tries while the collector does not take what it is sent.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// OpenTelemetry's severity numbers: INFO, and WARN for a denial.
const INFO: i32 = 9;
const WARN: i32 = 13;

/// The trail's sender to one collector.
#[derive(Debug)]
pub(crate) struct AuditLogs {
    client: reqwest::Client,
    url: String,
    headers: reqwest::header::HeaderMap,
    cursor: PathBuf,
}

impl AuditLogs {
    /// A sender of a trail to the collector at `endpoint` (its base URL, as `--otlp-endpoint`
    /// gives it), keeping its cursor in the file `cursor`.
    pub(crate) fn new(endpoint: &str, cursor: PathBuf) -> anyhow::Result<Self> {
        let base = crate::telemetry::collector_url(endpoint)?;
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .context("failed to build the audit log exporter's HTTP client")?;
        let (variable, list) = [
            "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
            "OTEL_EXPORTER_OTLP_HEADERS",
        ]
        .into_iter()
        .find_map(|v| std::env::var(v).ok().map(|list| (v, list)))
        .unwrap_or_default();
        Ok(Self {
            client,
            url: logs_url(base.as_str()),
            headers: headers(&list).map_err(|e| usage(format!("{variable}: {e}")))?,
            cursor,
        })
    }

    /// Sends `store`'s trail after the record `after` (from [`AuditLogs::start`]) as it grows
    /// until `cancel`, then for at most [`TIMEOUT`] what it holds at that moment.
    pub(crate) async fn send_while(self, store: Arc<Store>, after: i64, cancel: CancellationToken) {
        tracing::info!(url = %self.url, after, "sending the audit trail as OTLP logs");
        let mut sender = Sending {
            after,
            batch: BATCH,
            failed: None,
            wait: Duration::ZERO,
        };
        loop {
            let stopping = tokio::select! {
                () = cancel.cancelled() => true,
                () = tokio::time::sleep(LOOK + sender.wait) => false,
            };
            let until = std::time::Instant::now() + TIMEOUT;
            // Batch after batch while the trail has more (and the collector takes them); a
            // stop asked for during a catch-up ends it, for the final drain's bounded time.
            while self.send_next(&store, &mut sender).await
                && if stopping {
                    std::time::Instant::now() < until
                } else {
                    !cancel.is_cancelled()
                }
            {}
            if stopping {
                return;
            }
        }
    }

    /// Sends the next batch; whether one was sent. Failures are said when they change.
    async fn send_next(&self, store: &Store, sender: &mut Sending) -> bool {
        let why = match self.send_after(store, sender.after, sender.batch).await {
            Ok(Some(sent)) => {
                sender.after = sent;
                sender.wait = Duration::ZERO;
                if sender.failed.take().is_some() {
                    tracing::info!(url = %self.url, "sending the audit trail again");
                }
                return true;
            }
            Ok(None) => return false,
            Err(Failure::TooLarge) if sender.batch > 1 => {
                sender.batch /= 2;
                return true;
            }
            Err(Failure::TooLarge) => "the collector refuses a single record as too large".into(),
            Err(Failure::Other(why)) => why,
        };
        // Sent again later, waiting longer each time (up to a minute), until it is taken.
        sender.wait = (sender.wait * 2).clamp(LOOK, MAX_WAIT);
        if sender.failed.as_deref() != Some(why.as_str()) {
            tracing::warn!(url = %self.url, error = %why, after = sender.after, "cannot send the audit trail as OTLP logs; the records are sent again until the collector takes them");
            sender.failed = Some(why);
        }
        false
    }

    /// Where sending starts: after the cursor, or after the trail's head without one (kept as
    /// the cursor at once, so that what the server writes from now on is sent).
    pub(crate) async fn start(&self, store: &Store) -> anyhow::Result<i64> {
        let head = store.audit_head().await?;
        let cursor = match std::fs::read_to_string(&self.cursor) {
            Ok(text) => text.trim().parse::<i64>().with_context(|| {
                format!(
                    "{} does not hold a sequence number: write the last one sent into it (or delete it to start at the trail's head)",
                    self.cursor.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.keep(head)?;
                return Ok(head);
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", self.cursor.display()));
            }
        };
        if cursor > head {
            tracing::warn!(cursor, head, file = %self.cursor.display(), "the OTLP cursor is ahead of the audit trail's head (another store's?); sending from the head");
            self.keep(head)?;
            return Ok(head);
        }
        Ok(cursor)
    }

    /// Sends at most `batch` records after `after`; the last one sent, none when there was
    /// none.
    async fn send_after(
        &self,
        store: &Store,
        after: i64,
        batch: i64,
    ) -> Result<Option<i64>, Failure> {
        let filter = AuditFilter {
            after_seq: Some(after),
            limit: Some(batch),
            ..AuditFilter::default()
        };
        let records = store.audit(&filter).await.map_err(Failure::of)?;
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return Ok(None);
        };
        if first.seq > after + 1 {
            tracing::error!(
                missing = %format!("{}..={}", after + 1, first.seq - 1),
                "audit records were archived before they were sent as OTLP logs: they are in the archive files (the trail's `audit.archive` records name them), not in the logs"
            );
        }
        let last = last.seq;
        let body = request(&records).encode_to_vec();
        let answer = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .header(http::header::CONTENT_TYPE, "application/x-protobuf")
            .body(body)
            .send()
            .await
            .map_err(Failure::of)?;
        let status = answer.status();
        if status == http::StatusCode::PAYLOAD_TOO_LARGE {
            return Err(Failure::TooLarge);
        }
        if !status.is_success() {
            return Err(Failure::Other(format!("the collector answered {status}")));
        }
        // Records the collector took in but rejected are its own: sending them again would
        // not change its mind. Said, and passed.
        let answer = answer.bytes().await.unwrap_or_default();
        if let Some(partial) = ExportLogsServiceResponse::decode(answer)
            .ok()
            .and_then(|r| r.partial_success)
            .filter(|p| p.rejected_log_records > 0)
        {
            tracing::error!(rejected = partial.rejected_log_records, message = %partial.error_message, after, last, "the collector rejected audit records it was sent");
        }
        self.keep(last).map_err(Failure::of)?;
        Ok(Some(last))
    }

    /// Keeps `seq` as the cursor: a new file, on disk, renamed over the old.
    fn keep(&self, seq: i64) -> anyhow::Result<()> {
        let new = self.cursor.with_extension("new");
        let written = std::fs::File::create(&new).and_then(|mut f| {
            std::io::Write::write_all(&mut f, format!("{seq}\n").as_bytes())?;
            f.sync_all()
        });
        written
            .and_then(|()| std::fs::rename(&new, &self.cursor))
            .and_then(|()| match self.cursor.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => std::fs::File::open(dir)?.sync_all(),
                _ => Ok(()),
            })
            .with_context(|| format!("cannot write {}", self.cursor.display()))
    }
}

/// Where a sender is.
#[derive(Debug)]
struct Sending {
    /// The last record sent.
    after: i64,
    /// Records a request carries (halved while the collector finds them too large).
    batch: i64,
    /// The failure said last, until sending works again.
    failed: Option<String>,
    /// How much longer than [`LOOK`] to wait before the next try.
    wait: Duration,
}

/// Why a batch was not sent.
#[derive(Debug)]
enum Failure {
    /// The collector answered 413.
    TooLarge,
    /// Anything else, in words.
    Other(String),
}

impl Failure {
    fn of(e: impl std::fmt::Display) -> Self {
        Self::Other(e.to_string())
    }
}

/// The OTLP/HTTP logs path under the collector's base URL.
fn logs_url(endpoint: &str) -> String {
    format!("{}/v1/logs", endpoint.trim_end_matches('/'))
}

/// The headers of an `OTEL_EXPORTER_OTLP_HEADERS` list: `key=value` pairs separated by
/// commas, values percent-encoded.
fn headers(list: &str) -> Result<reqwest::header::HeaderMap, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` is not `key=value`"))?;
        let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
        let name = reqwest::header::HeaderName::from_bytes(key.trim().as_bytes())
            .map_err(|_| format!("`{}` is not a header name", key.trim()))?;
        let value = reqwest::header::HeaderValue::from_str(&value)
            .map_err(|_| format!("the value of `{name}` is not a header value"))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// One request carrying `records`, from the resource `warden`, scope `warden.audit`.
fn request(records: &[AuditRecord]) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![text("service.name", "warden")],
                ..Resource::default()
            }),
            scope_logs: vec![ScopeLogs {
                scope: Some(InstrumentationScope {
                    name: "warden.audit".into(),
                    ..InstrumentationScope::default()
                }),
                log_records: records.iter().map(log_record).collect(),
                ..ScopeLogs::default()
            }],
            ..ResourceLogs::default()
        }],
    }
}

/// A record as a log record: its time, its line of `warden audit export` as the body, and the
/// fields a SIEM filters on as attributes.
fn log_record(record: &AuditRecord) -> LogRecord {
    let r = &record.record;
    let nanos = u64::try_from(r.at.0).unwrap_or_default() * 1_000_000;
    let denied = r.decision.as_deref() == Some("deny");
    let mut attributes = vec![
        KeyValue {
            key: "warden.seq".into(),
            value: Some(AnyValue {
                value: Some(Any::IntValue(record.seq)),
            }),
            ..KeyValue::default()
        },
        text("warden.hash", &record.hash),
        text("warden.kind", r.kind.as_str()),
        text("warden.run_id", &r.run_id),
    ];
    let optional = [
        ("warden.call_id", &r.call_id),
        ("enduser.id", &r.principal),
        ("warden.agent", &r.agent),
        ("warden.tool", &r.tool),
        ("warden.decision", &r.decision),
        ("warden.code", &r.code),
    ];
    attributes.extend(
        optional
            .into_iter()
            .filter_map(|(key, value)| value.as_deref().map(|v| text(key, v))),
    );
    LogRecord {
        time_unix_nano: nanos,
        observed_time_unix_nano: nanos,
        severity_number: if denied { WARN } else { INFO },
        severity_text: if denied { "WARN" } else { "INFO" }.into(),
        event_name: format!("warden.audit.{}", r.kind.as_str()),
        body: Some(AnyValue {
            value: Some(Any::StringValue(export::record_line(record, Format::Jsonl))),
        }),
        attributes,
        ..LogRecord::default()
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(Any::StringValue(value.into())),
        }),
        ..KeyValue::default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn collector_headers_are_read_as_the_sdk_reads_them() {
        let h = headers("api-key=s%3Dcret, x-tenant = acme ,").unwrap();
        assert_eq!(h["api-key"], "s=cret");
        assert_eq!(h["x-tenant"], "acme");
        assert!(headers("").unwrap().is_empty());
        assert_eq!(
            headers("novalue").unwrap_err(),
            "`novalue` is not `key=value`"
        );
        assert_eq!(
            headers("bad key=1").unwrap_err(),
            "`bad key` is not a header name"
        );
        assert_eq!(logs_url("http://c:4318/"), "http://c:4318/v1/logs");
    }
}
