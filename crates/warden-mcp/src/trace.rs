//! W3C trace context through a governed call (OPS-3): the client's context (`_meta`
//! `traceparent` and `tracestate`, SEP-414, or the HTTP headers of the same names) is the
//! parent of Warden's span for the call, and the upstream is told the context of Warden's
//! span for its round trip — in `_meta` on every exit, and in the `traceparent` and
//! `tracestate` headers on HTTP — so that one trace runs from the client through Warden's
//! pipeline to the upstream.
//!
//! When Warden exports no traces its spans have no ids: the upstream is then told the
//! client's own context, unchanged, so the client's trace still reaches it. A call with no
//! context from its client and no exporter carries none (nothing to continue, and nothing
//! paid on the call path).

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The longest `tracestate` passed on (W3C Trace Context, "Tracestate Limits").
const MAX_TRACESTATE: usize = 512;

/// A W3C trace context: the `traceparent` fields and the `tracestate` that goes with them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace.
    pub trace_id: [u8; 16],
    /// The parent span: the caller's.
    pub span_id: [u8; 8],
    /// The trace flags (`01`: sampled).
    pub flags: u8,
    /// The vendors' `tracestate`, passed on as it came.
    pub state: Option<String>,
}

impl TraceContext {
    /// Parses a `traceparent` (and its `tracestate`); `None` for one the W3C format refuses:
    /// a version `ff`, an id of zeros or of other than lowercase hex, fields of other sizes.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let mut parts = traceparent.trim().split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        // Version 00 has exactly four fields; a later version may add some.
        if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
            return None;
        }
        let hex = |s: &str, n: usize| {
            (s.len() == n
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| hex::decode(s).ok())
            .flatten()
        };
        hex(version, 2)?;
        let trace_id: [u8; 16] = hex(trace, 32)?.try_into().ok()?;
        let span_id: [u8; 8] = hex(span, 16)?.try_into().ok()?;
        let flags = *hex(flags, 2)?.first()?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            flags,
            // W3C: at most 512 characters are propagated; a longer one is dropped whole.
            state: tracestate
                .map(str::trim)
                .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE)
                .map(str::to_owned),
        })
    }

    /// The `traceparent` value (version 00).
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex::encode(self.trace_id),
            hex::encode(self.span_id),
            self.flags
        )
    }

    /// As OpenTelemetry's context of a remote parent.
    fn as_parent(&self) -> opentelemetry::Context {
        let state = self
            .state
            .as_deref()
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
            TraceId::from_bytes(self.trace_id),
            SpanId::from_bytes(self.span_id),
            TraceFlags::new(self.flags),
            true,
            state,
        ))
    }
}

/// Makes the client's context the parent of `span`, Warden's span of the call. Nothing to do
/// when nobody records the span (no exporter).
pub(crate) fn adopt(span: &tracing::Span, client: Option<&TraceContext>) {
    if let Some(parent) = client
        && !span.is_disabled()
    {
        let _ = span.set_parent(parent.as_parent());
    }
}

/// The context the upstream is told for a round trip under `span`: the span's own when it is
/// recorded, else the client's as it came.
pub(crate) fn outgoing(
    span: &tracing::Span,
    client: Option<&TraceContext>,
) -> Option<TraceContext> {
    if !span.is_disabled() {
        let context = span.context();
        let own = context.span();
        let own = own.span_context();
        if own.is_valid() {
            return Some(TraceContext {
                trace_id: own.trace_id().to_bytes(),
                span_id: own.span_id().to_bytes(),
                flags: own.trace_flags().to_u8(),
                state: client.and_then(|c| c.state.clone()),
            });
        }
    }
    client.cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_read_as_the_w3c_format_says_and_written_back() {
        let t = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let parsed = TraceContext::parse(t, Some(" congo=t61rcWkgMzE ")).unwrap();
        assert_eq!(parsed.traceparent(), t);
        assert_eq!(parsed.flags, 1);
        assert_eq!(parsed.state.as_deref(), Some("congo=t61rcWkgMzE"));
        assert_eq!(TraceContext::parse(t, Some("")).unwrap().state, None);
        let long = "a=".to_owned() + &"b".repeat(511);
        assert_eq!(TraceContext::parse(t, Some(&long)).unwrap().state, None);
        // A later version may carry more fields; its first four are read.
        let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-extra";
        assert_eq!(
            TraceContext::parse(later, None).unwrap().traceparent(),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
        );
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333g-01",
            "0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad}");
        }
    }

    #[test]
    fn with_no_recorded_span_the_clients_context_goes_on_unchanged() {
        let client = TraceContext::parse(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            Some("a=b"),
        )
        .unwrap();
        let span = tracing::Span::none();
        adopt(&span, Some(&client));
        assert_eq!(outgoing(&span, Some(&client)), Some(client));
        assert_eq!(outgoing(&span, None), None);
    }
}
