//! The governed call: one `tools/call` through the pipeline (GOV-2), executed by the built-in
//! tool sets or an upstream's exit, with the calling client's context carried to the exit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use warden_core::authority::Authority;
use warden_core::contract::{CallOutcome, ToolOutput, Verdict};
use warden_core::error::ExecError;
use warden_core::pipeline::{CallRequest, Execution, Executor, Governance, Pipeline, RunState};
use warden_core::tool::ToolSource;

use super::live::{Live, Snapshot};
use crate::builtin;
use crate::client::ClientContext;
use crate::clock::SystemClock;
use crate::upstream::UpstreamAnswer;

/// Executes admitted calls against one snapshot: built-in tools, or the upstream's exit.
#[derive(Debug)]
pub(super) struct GatewayExecutor<'a> {
    pub(super) live: &'a Live,
    pub(super) snapshot: &'a Snapshot,
}

impl Live {
    /// The pipeline over the store, the system clock and `executor`.
    pub(super) fn pipeline<'a>(
        &'a self,
        executor: &'a GatewayExecutor<'a>,
    ) -> Pipeline<
        'a,
        warden_store::Store,
        warden_store::Store,
        SystemClock,
        GatewayExecutor<'a>,
        warden_store::Store,
    > {
        Pipeline {
            audit: self.store.as_ref(),
            counters: self.store.as_ref(),
            clock: &SystemClock,
            executor,
            approvals: self.store.as_ref(),
        }
    }

    /// One `tools/call`, governed (GOV-2) or not (governance `off`, GOV-6), for the calling
    /// `client` (none for a call no client waits on).
    pub(super) async fn call(
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
            live: self,
            snapshot: &snapshot,
        };
        let request = CallRequest {
            call_id: format!("call_{}", uuid::Uuid::now_v7().simple()),
            name,
            args,
            governance,
            context: client,
        };
        let outcome = self
            .pipeline(&executor)
            .call(&snapshot.policy, &snapshot.catalog, authority, run, request)
            .await;
        record_metrics(&outcome, started.elapsed());
        if let Verdict::Denied(d) = &outcome.verdict {
            tracing::info!(
                run = %outcome.run_id, principal = %authority.principal, tool = %name,
                code = %d.code, rule = %d.rule, "call denied"
            );
        }
        outcome
    }
}

fn record_metrics(outcome: &CallOutcome, elapsed: Duration) {
    let (status, code) = outcome.status();
    let code = code.map(|c| c.as_str()).unwrap_or("");
    metrics::counter!("warden_calls_total", "decision" => status, "code" => code).increment(1);
    metrics::histogram!("warden_call_duration_seconds", "decision" => status)
        .record(elapsed.as_secs_f64());
}

impl Executor for GatewayExecutor<'_> {
    type Context = Option<ClientContext>;

    async fn execute(
        &self,
        call: Execution<'_, Option<ClientContext>>,
    ) -> Result<ToolOutput, ExecError> {
        match &call.tool.source {
            ToolSource::Builtin { set, tool } if set.as_str() == builtin::tasks::SET => {
                crate::work::execute(
                    tool,
                    call.args,
                    call.authority,
                    &self.snapshot.policy,
                    &self.live.store,
                )
                .await
            }
            ToolSource::Builtin { tool, .. } => builtin::execute(
                tool,
                call.args,
                call.authority,
                &self.snapshot.policy,
                &self.snapshot.catalog,
            ),
            ToolSource::Upstream { upstream, tool } => {
                let slot: Arc<_> = self.live.upstreams.get(upstream.as_str()).ok_or_else(|| {
                    ExecError::Unavailable(format!("upstream `{upstream}` is not configured"))
                })?;
                let unreadable = || {
                    ExecError::Unavailable(format!(
                        "upstream `{upstream}` sent an unreadable result"
                    ))
                };
                match slot.call(tool, call.args, call.context.as_ref()).await? {
                    UpstreamAnswer::Complete(result) => {
                        let is_error = result.is_error.unwrap_or(false);
                        match serde_json::to_value(&result) {
                            Ok(Value::Object(result)) => {
                                Ok(ToolOutput::Upstream { result, is_error })
                            }
                            _ => Err(unreadable()),
                        }
                    }
                    UpstreamAnswer::InputRequired(needed) => match serde_json::to_value(&needed) {
                        Ok(Value::Object(result)) => Ok(ToolOutput::InputRequired { result }),
                        _ => Err(unreadable()),
                    },
                    UpstreamAnswer::Task(task) => match serde_json::to_value(&task) {
                        Ok(Value::Object(result)) => Ok(ToolOutput::Task { result }),
                        _ => Err(unreadable()),
                    },
                    UpstreamAnswer::Refused(error) => match serde_json::to_value(&error) {
                        Ok(Value::Object(error)) => Ok(ToolOutput::Refused { error }),
                        _ => Err(unreadable()),
                    },
                }
            }
        }
    }
}
