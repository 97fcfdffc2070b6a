//! Logs and traces (OPS-3): structured logs on stderr (pretty or JSON), and, only when an
//! OTLP endpoint is configured (`--otlp-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`), the spans
//! of governed calls exported as OpenTelemetry traces over OTLP/HTTP.
//!
//! The spans (`warden_mcp`'s target `warden::otel`: the governed call and, inside it, the
//! upstream call) go to the exporter only, never to the log; without an exporter no layer
//! wants them and they cost nothing but a check. The exporter batches spans on a thread of
//! its own (the SDK's batch processor) and sends each batch with the workspace's `reqwest`
//! on the main runtime.

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::cli::LogFormat;
use crate::common::usage;

/// The target of the spans meant for traces (`warden_mcp::gateway::execution`).
const TRACE_TARGET: &str = "warden::otel";

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// What to shut down when the command ends: the trace exporter, which sends what it holds.
#[derive(Debug)]
pub(crate) struct Telemetry {
    traces: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Telemetry {
    /// Sends the spans not yet exported. Call it outside the runtime's `block_on`, with the
    /// runtime still alive: the export runs on it.
    pub(crate) fn shutdown(self) {
        if let Some(traces) = self.traces {
            let _ = traces.shutdown_with_timeout(EXPORT_TIMEOUT);
        }
    }
}

/// Installs the log and, with `otlp_endpoint`, the trace exporter. Call it inside the
/// runtime (`Runtime::enter`): the exporter sends on it.
pub(crate) fn init(
    format: LogFormat,
    filter: &str,
    otlp_endpoint: Option<&str>,
) -> anyhow::Result<Telemetry> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        .add_directive(
            format!("{TRACE_TARGET}=off")
                .parse()
                .context("failed to build the log filter")?,
        );
    let ansi = std::io::stderr().is_terminal();
    let log = match format {
        LogFormat::Pretty => tracing_subscriber::fmt::layer()
            .with_target(false)
            .with_ansi(ansi)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_ansi(ansi)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
    };
    let traces = otlp_endpoint.map(tracer_provider).transpose()?;
    let spans = traces.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("warden"))
            .with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_target(TRACE_TARGET, tracing::Level::TRACE),
            )
    });
    // Without an exporter there is no trace layer at all: an absent (`None`) layer stacked on
    // the filtered log layer made every disabled span and event be filtered again on every
    // call, where alone the log layer's filter is asked once per call site.
    let _ = match spans {
        Some(spans) => tracing_subscriber::registry()
            .with(log)
            .with(spans)
            .try_init(),
        None => tracing_subscriber::registry().with(log).try_init(),
    };
    if let Some(endpoint) = otlp_endpoint {
        tracing::info!(endpoint = %traces_url(endpoint), "exporting traces over OTLP/HTTP");
    }
    Ok(Telemetry { traces })
}

/// Where spans are sent: the OTLP/HTTP traces path under the collector's base URL (as
/// `OTEL_EXPORTER_OTLP_ENDPOINT` means it).
fn traces_url(endpoint: &str) -> String {
    format!("{}/v1/traces", endpoint.trim_end_matches('/'))
}

/// The collector's base URL `--otlp-endpoint` names: a usage error unless http(s).
pub(crate) fn collector_url(endpoint: &str) -> anyhow::Result<reqwest::Url> {
    reqwest::Url::parse(endpoint)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| {
            usage(format!(
                "--otlp-endpoint `{endpoint}`: not an http:// or https:// URL (e.g. http://127.0.0.1:4318)"
            ))
        })
}

fn tracer_provider(endpoint: &str) -> anyhow::Result<opentelemetry_sdk::trace::SdkTracerProvider> {
    let url = collector_url(endpoint)?;
    let client = Sender {
        client: reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .context("failed to build the trace exporter's HTTP client")?,
        runtime: tokio::runtime::Handle::try_current()
            .context("the trace exporter needs the runtime")?,
        failing: Arc::new(AtomicBool::new(false)),
        url: traces_url(url.as_str()),
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(client.url.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .with_http_client(client)
        .build()
        .map_err(|e| usage(format!("--otlp-endpoint `{endpoint}`: {e}")))?;
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("warden")
                .build(),
        )
        .build())
}

/// Sends the exporter's requests with `reqwest` on the runtime (the batch processor's thread
/// has none); says once when exports start failing, and when they work again.
#[derive(Debug)]
struct Sender {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    failing: Arc<AtomicBool>,
    url: String,
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Sender {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let sent = self
            .runtime
            .spawn(async move {
                let response = client.execute(request).await?;
                let status = response.status();
                let headers = response.headers().clone();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, headers, body))
            })
            .await?;
        let failed = match &sent {
            Ok((status, _, _)) if status.is_success() => None,
            Ok((status, _, _)) => Some(format!("the collector answered {status}")),
            Err(e) => Some(e.to_string()),
        };
        match failed {
            Some(why) if !self.failing.swap(true, Ordering::Relaxed) => {
                tracing::warn!(url = %self.url, error = %why, "cannot export traces; spans are dropped until the collector takes them");
            }
            None if self.failing.swap(false, Ordering::Relaxed) => {
                tracing::info!(url = %self.url, "exporting traces again");
            }
            _ => {}
        }
        let (status, headers, body) = sent?;
        let mut response = http::Response::builder().status(status).body(body)?;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::Cli;

    #[test]
    fn traces_are_off_unless_an_endpoint_is_given() {
        // Off by default: unless the environment asks for it, `serve` exports nothing.
        if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_none() {
            let cli = Cli::try_parse_from(["warden", "serve"]).unwrap();
            assert_eq!(cli.command.otlp_endpoint(), None);
        }
        let cli = Cli::try_parse_from([
            "warden",
            "serve",
            "--otlp-endpoint",
            "http://127.0.0.1:4318/",
        ])
        .unwrap();
        assert_eq!(cli.command.otlp_endpoint(), Some("http://127.0.0.1:4318/"));
        assert_eq!(
            traces_url("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/traces"
        );
        // Only commands that govern calls export.
        let cli = Cli::try_parse_from(["warden", "get", "roles"]).unwrap();
        assert_eq!(cli.command.otlp_endpoint(), None);
    }

    #[test]
    fn an_endpoint_that_is_no_url_is_a_usage_error() {
        let e = tracer_provider("collector:4318").unwrap_err();
        assert!(e.downcast_ref::<crate::UsageError>().is_some());
        assert_eq!(
            e.to_string(),
            "--otlp-endpoint `collector:4318`: not an http:// or https:// URL (e.g. http://127.0.0.1:4318)"
        );
    }
}
