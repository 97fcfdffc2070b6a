//! The governed call: one `tools/call` through the pipeline (GOV-2), executed by the built-in
//! tool sets or an upstream's exit, with the calling client's context carried to the exit.
//!
//! What operators see of each call (OPS-3): one INFO log line (tool, decision, code and rule
//! when denied, run, principal, duration — never argument values), the metrics
//! `warden_calls_total`, `warden_call_duration_seconds`, `warden_tool_call_duration_seconds`
//! and `warden_upstream_call_duration_seconds`, and, when traces are exported, a span for the
//! governed call with a child span for the upstream call. The spans have the target
//! [`TRACE_TARGET`], which the log never shows: with no trace exporter nobody is interested in
//! them, and they cost a check of their callsite's interest. The client's trace context is
//! the parent of the call's span, and the upstream is told the upstream span's
//! ([`crate::trace`]).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use serde_json::{Map, Value};
use tracing::Instrument as _;
use warden_core::authority::Authority;
use warden_core::contract::{CallOutcome, ToolOutput};
use warden_core::decision::DenyCode;
use warden_core::error::ExecError;
use warden_core::pipeline::{
    CallRequest, Clock, Execution, Executor, Governance, Pipeline, RunState,
};
use warden_core::tool::{ToolDescriptor, ToolSource};

use super::snapshot::Snapshot;
use super::state::Gateway;
use crate::builtin;
use crate::client::ClientContext;
use crate::upstream::Outgoing;

/// Executes admitted calls against one snapshot: built-in tools, or the upstream's exit.
#[derive(Debug)]
pub(super) struct GatewayExecutor<'a> {
    pub(super) gateway: &'a Gateway,
    pub(super) snapshot: &'a Snapshot,
}

impl Gateway {
    /// The pipeline over the store, the system clock and `executor`.
    pub(super) fn pipeline<'a>(
        &'a self,
        executor: &'a GatewayExecutor<'a>,
    ) -> Pipeline<
        'a,
        warden_store::Store,
        warden_store::Store,
        Arc<dyn Clock>,
        GatewayExecutor<'a>,
        warden_store::Store,
    > {
        Pipeline {
            audit: self.store.as_ref(),
            counters: self.store.as_ref(),
            clock: &self.clock,
            executor,
            approvals: self.store.as_ref(),
        }
    }

    /// The refusals of the last hour that left no audit record (GOV-2 steps 1 and 2), counted
    /// by this process.
    pub fn unaudited_refusals(&self) -> Vec<super::unaudited::Unaudited> {
        self.unaudited.last_hour(self.clock.now())
    }

    /// One `tools/call`, governed (GOV-2) or not (governance `off`, GOV-6), for the calling
    /// `client` (none for a call no client waits on).
    pub async fn call(
        &self,
        authority: &Authority,
        run: &RunState,
        name: &str,
        args: Option<Map<String, Value>>,
        governance: Governance,
        client: Option<ClientContext>,
    ) -> CallOutcome {
        let started = Instant::now();
        let snapshot = self.snapshot();
        let executor = GatewayExecutor {
            gateway: self,
            snapshot: &snapshot,
        };
        let parent = client.as_ref().and_then(|c| c.trace.clone());
        let request = CallRequest {
            call_id: format!("call_{}", uuid::Uuid::now_v7().simple()),
            name,
            args,
            governance,
            context: client,
        };
        let span = tracing::info_span!(
            target: TRACE_TARGET,
            "tools/call",
            otel.kind = "server",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = name,
            warden.run = run.id(),
            warden.principal = %authority.principal,
            warden.decision = tracing::field::Empty,
            warden.code = tracing::field::Empty,
        );
        crate::trace::adopt(&span, parent.as_ref());
        // Boxed where it is made, so that the trace span, the handler and the request futures
        // around it hold a pointer instead of moving its whole state (see `execute`).
        let outcome = Box::pin(self.pipeline(&executor).call(
            &snapshot.policy,
            &snapshot.catalog,
            authority,
            run,
            request,
        ))
        .instrument(span.clone())
        .await;
        let elapsed = started.elapsed();
        let (status, code) = outcome.status();
        span.record("warden.decision", status);
        span.record("warden.code", code.map(DenyCode::as_str));
        record_metrics(snapshot.catalog.get(name), status, code, elapsed);
        if let Some(code) = code
            && !outcome.audited
        {
            let tool = snapshot.catalog.get(name).map(|_| name);
            self.unaudited.note(self.clock.now(), code, tool);
        }
        tracing::info!(
            tool = name,
            decision = status,
            code = code.map(DenyCode::as_str),
            rule = outcome.denial().map(|d| d.rule.as_str()),
            // Only a run the call left records in: what `warden describe run` finds.
            run = outcome.audited.then_some(outcome.run_id.as_str()),
            principal = %authority.principal,
            // Whole microseconds, so that the number prints as it is (`1.234`).
            duration_ms = elapsed.as_micros() as f64 / 1e3,
            "tools/call"
        );
        outcome
    }
}

/// The target of the trace spans (see the module docs); the log filter of `warden` turns it
/// off by this name.
pub(super) const TRACE_TARGET: &str = "warden::otel";

/// Most label values kept per histogram family before the table starts over (tools are
/// bounded by the catalog; this bounds a catalog that keeps changing its names).
const MAX_SERIES: usize = 10_000;

/// Histograms by label value, each registered with the recorder once: looking one up by name
/// and labels on every call would allocate the labels and take the registry's lock. The
/// table is read without a lock; a new label value copies it (once per tool or upstream).
struct Registered(ArcSwap<HashMap<Arc<str>, Series>>);

/// One histogram, with the value of its second label (a tool's upstream) when it has one.
type Series = (Option<Arc<str>>, metrics::Histogram);

impl Registered {
    fn new() -> Self {
        Self(ArcSwap::from_pointee(HashMap::new()))
    }

    /// Records `value` in the histogram of `key` (whose second label is `with`), registered
    /// by `register` the first time.
    fn record(
        &self,
        key: &str,
        with: Option<&str>,
        value: f64,
        register: impl FnOnce() -> metrics::Histogram,
    ) {
        if let Some((registered_with, histogram)) = self.0.load().get(key)
            && registered_with.as_deref() == with
        {
            histogram.record(value);
            return;
        }
        let histogram = register();
        histogram.record(value);
        let (key, with): (Arc<str>, Option<Arc<str>>) = (key.into(), with.map(Into::into));
        self.0.rcu(|table| {
            let mut table = HashMap::clone(table);
            if table.len() >= MAX_SERIES {
                table.clear();
            }
            table.insert(key.clone(), (with.clone(), histogram.clone()));
            table
        });
    }
}

/// `warden_calls_total{decision, code}` and `warden_call_duration_seconds{decision}` of one
/// decision and code, registered with the recorder once (a handful of pairs): looked up by
/// name and labels on every call they allocated the labels and took the registry's lock.
type DecisionSeries = (metrics::Counter, metrics::Histogram);

/// The series by decision and code.
type ByDecision = HashMap<(&'static str, Option<&'static str>), DecisionSeries>;

static BY_DECISION: LazyLock<ArcSwap<ByDecision>> =
    LazyLock::new(|| ArcSwap::from_pointee(HashMap::new()));

fn record_decision(status: &'static str, code: Option<&'static str>, seconds: f64) {
    if let Some((calls, durations)) = BY_DECISION.load().get(&(status, code)) {
        calls.increment(1);
        durations.record(seconds);
        return;
    }
    let calls = match code {
        Some(code) => metrics::counter!("warden_calls_total", "decision" => status, "code" => code),
        None => metrics::counter!("warden_calls_total", "decision" => status),
    };
    let durations = metrics::histogram!("warden_call_duration_seconds", "decision" => status);
    calls.increment(1);
    durations.record(seconds);
    BY_DECISION.rcu(|table| {
        let mut table = HashMap::clone(table);
        table.insert((status, code), (calls.clone(), durations.clone()));
        table
    });
}

/// `warden_tool_call_duration_seconds{tool, upstream}`, by catalog name.
static TOOL_DURATIONS: LazyLock<Registered> = LazyLock::new(Registered::new);
/// `warden_upstream_call_duration_seconds{upstream}`, by upstream.
static UPSTREAM_DURATIONS: LazyLock<Registered> = LazyLock::new(Registered::new);

/// The metrics of one governed call. Per tool only for a name of the catalog (a name the
/// client made up would make a series of its own).
fn record_metrics(
    tool: Option<&Arc<ToolDescriptor>>,
    status: &'static str,
    code: Option<DenyCode>,
    elapsed: Duration,
) {
    let seconds = elapsed.as_secs_f64();
    record_decision(status, code.map(DenyCode::as_str), seconds);
    let Some(tool) = tool else { return };
    let upstream = match &tool.source {
        ToolSource::Upstream { upstream, .. } => Some(upstream.as_str()),
        ToolSource::Builtin { .. } => None,
    };
    TOOL_DURATIONS.record(&tool.name, upstream, seconds, || match upstream {
        Some(upstream) => metrics::histogram!(
            "warden_tool_call_duration_seconds",
            "tool" => tool.name.to_string(),
            "upstream" => upstream.to_owned()
        ),
        None => metrics::histogram!(
            "warden_tool_call_duration_seconds",
            "tool" => tool.name.to_string()
        ),
    });
}

impl GatewayExecutor<'_> {
    /// The bearer of a call to an upstream that acts as its caller (AUTH-6): the caller's
    /// token exchanged at `issuer`. A failure is `UNAVAILABLE`, naming the issuer.
    async fn bearer(
        &self,
        issuer: &warden_core::name::Name,
        slot: &crate::upstream::UpstreamSlot,
        call: &Execution<'_, Option<ClientContext>>,
    ) -> Result<Arc<str>, ExecError> {
        let spec = self
            .snapshot
            .policy
            .issuers()
            .iter()
            .find(|i| i.name == *issuer)
            .ok_or_else(|| {
                ExecError::Unavailable(format!("issuer `{issuer}` is not configured"))
            })?;
        let subject = call.context.as_ref().and_then(|c| c.subject.as_ref());
        self.gateway
            .upstreams
            .bearer(
                spec,
                &slot.spec,
                call.authority,
                subject,
                self.gateway.clock.now(),
            )
            .await
            .map_err(ExecError::Unavailable)
    }
}

impl Executor for GatewayExecutor<'_> {
    type Context = Option<ClientContext>;

    async fn execute(
        &self,
        call: Execution<'_, Option<ClientContext>>,
    ) -> Result<ToolOutput, ExecError> {
        match &call.tool.source {
            ToolSource::Builtin { set, tool } if set.as_str() == builtin::tasks::SET => {
                // Boxed: the deepest future of the call path (its store round trips), which
                // otherwise nests every call's future past the compiler's depth limit once the
                // governed call runs inside its trace span. The tasks tools make several
                // store round trips per call; one allocation more is nothing beside them.
                Box::pin(warden_work::tasks::execute(
                    tool,
                    call.args,
                    call.authority,
                    &self.snapshot.policy,
                    &self.gateway.store,
                    self.gateway.clock.now(),
                ))
                .await
            }
            ToolSource::Builtin { set, tool } if set.as_str() == builtin::epics::SET => {
                // Boxed, as the `tasks` tools are: several store round trips per call.
                let forge = warden_work::epics::gate::Forge {
                    policy: &self.snapshot.policy,
                    secrets: self.gateway.upstreams().secrets(),
                };
                Box::pin(warden_work::epics::tool::execute(
                    tool,
                    call.args,
                    call.authority,
                    forge,
                    &self.gateway.store,
                    self.gateway.clock.now(),
                ))
                .await
            }
            ToolSource::Builtin { tool, .. } => builtin::execute(
                tool,
                call.args,
                call.authority,
                &self.snapshot.policy,
                &self.snapshot.catalog,
                self.gateway.clock.now(),
            ),
            ToolSource::Upstream { upstream, tool } => {
                let slot: Arc<_> =
                    self.gateway
                        .upstreams
                        .get(upstream.as_str())
                        .ok_or_else(|| {
                            ExecError::Unavailable(format!(
                                "upstream `{upstream}` is not configured"
                            ))
                        })?;
                let unreadable = || {
                    ExecError::Unavailable(format!(
                        "upstream `{upstream}` sent an unreadable result"
                    ))
                };
                // The caller's token exchanged first (AUTH-6): the issuer's time is not the
                // upstream hop's.
                let bearer = match &call.tool.on_behalf_of {
                    None => None,
                    Some(issuer) => Some(Box::pin(self.bearer(issuer, &slot, &call)).await?),
                };
                // A child of the governed call's span (entered while this runs), from here
                // until the answer is in. Not entered itself: one more wrapper around every
                // call's future is one more level in a type already nested deep.
                let span = tracing::info_span!(
                    target: TRACE_TARGET,
                    "upstream tools/call",
                    otel.kind = "client",
                    mcp.method.name = "tools/call",
                    gen_ai.tool.name = tool.as_str(),
                    warden.upstream = upstream.as_str(),
                );
                let started = Instant::now();
                let outgoing = Outgoing {
                    bearer,
                    trace: crate::trace::outgoing(
                        &span,
                        call.context.as_ref().and_then(|c| c.trace.as_ref()),
                    ),
                };
                // Boxed: the largest future of the call (every exit's state); held inline it
                // made each future around it as large, and each was copied whole where it was
                // moved — 40,000 instructions of memcpy per call, more than a tenth of its
                // cost (docs/benchmarks.md, "Where the call's CPU went").
                let answer =
                    Box::pin(slot.call(tool, call.args, call.context.as_ref(), &outgoing)).await;
                drop(span);
                UPSTREAM_DURATIONS.record(
                    upstream.as_str(),
                    None,
                    started.elapsed().as_secs_f64(),
                    || {
                        metrics::histogram!(
                            "warden_upstream_call_duration_seconds",
                            "upstream" => upstream.to_string()
                        )
                    },
                );
                crate::wire::upstream_output(answer?).ok_or_else(unreadable)
            }
        }
    }
}
