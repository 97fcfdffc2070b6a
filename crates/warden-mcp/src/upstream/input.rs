//! A 2026-07-28 upstream's `input_required` answer: what it asks the client for (elicitation,
//! sampling, roots), checked against the upstream's relay policy and recorded.
//!
//! A 2026-07-28 client gets the answer as it is and retries (the retry is governed again); a
//! 2025-11-25 client is asked by Warden itself, on the call's own stream, and the upstream is
//! called again with the answers.

#![allow(
    deprecated,
    reason = "sampling is still part of the 2025-11-25 protocol"
)]

use rmcp::model::{CallToolResult, InputRequest, InputRequiredResult, InputResponses};
use warden_core::config::RelaySpec;

use tokio_util::sync::CancellationToken;

use super::failure::short;
use super::relays::{RelayLog, record_relay};
use crate::client::{ClientContext, Relay, Reply, perform};

/// The upstream side of an input round: who asks, under which policy, recorded where.
#[derive(Debug)]
pub(super) struct Inputs<'a> {
    pub(super) upstream: &'a str,
    pub(super) policy: &'a RelaySpec,
    pub(super) log: Option<&'a RelayLog>,
}

/// The kind of an input request, as relay records name it.
fn kind(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::Elicitation(_) => "elicitation/create",
        InputRequest::CreateMessage(_) => "sampling/createMessage",
        _ => "roots/list",
    }
}

impl Inputs<'_> {
    async fn record(&self, run_id: &str, request: &InputRequest, relayed: bool, detail: &str) {
        record_relay(
            self.log,
            self.upstream,
            run_id,
            kind(request),
            relayed,
            detail,
        )
        .await;
    }

    /// An error result when the relay policy refuses one of the input requests (recorded).
    pub(super) async fn refusal(
        &self,
        needed: &InputRequiredResult,
        run_id: &str,
    ) -> Option<CallToolResult> {
        self.refused(needed, run_id).await.map(error_result)
    }

    /// Why the relay policy refuses one of the input requests (recorded), if it does.
    pub(super) async fn refused(
        &self,
        needed: &InputRequiredResult,
        run_id: &str,
    ) -> Option<String> {
        for (_, request) in needed.input_requests.iter().flatten() {
            let allowed = match request {
                InputRequest::Elicitation(_) => self.policy.elicitation,
                InputRequest::CreateMessage(_) => self.policy.sampling,
                _ => self.policy.roots,
            };
            if !allowed {
                self.record(
                    run_id,
                    request,
                    false,
                    "relay disabled by the upstream's policy",
                )
                .await;
                return Some(format!(
                    "upstream `{}` asked for {}, which is not relayed for this upstream (relay policy)",
                    self.upstream,
                    kind(request)
                ));
            }
        }
        None
    }

    /// Records that the input requests go to a 2026-07-28 client as they are.
    pub(super) async fn passed_on(&self, needed: &InputRequiredResult, run_id: &str) {
        for (_, request) in needed.input_requests.iter().flatten() {
            self.record(
                run_id,
                request,
                true,
                "passed to the client as input_required",
            )
            .await;
        }
    }

    /// Asks a 2025-11-25 client the input requests, on the call's own stream, as the relays
    /// of a 2025-11-25 upstream are asked (its capabilities checked; a request cancelled at the
    /// client when the client cancels its call).
    pub(super) async fn ask(
        &self,
        client: &ClientContext,
        needed: &InputRequiredResult,
    ) -> Result<InputResponses, Unanswered> {
        let mut responses = InputResponses::new();
        for (key, request) in needed.input_requests.iter().flatten() {
            let answer = match request {
                InputRequest::Elicitation(r) => {
                    relayed(client, |reply| Relay::Elicit(r.params.clone(), reply)).await
                }
                InputRequest::CreateMessage(r) => {
                    relayed(client, |reply| {
                        Relay::Sample(Box::new(r.params.clone()), reply)
                    })
                    .await
                }
                _ => relayed(client, Relay::Roots).await,
            };
            match answer {
                Ok(value) => {
                    self.record(&client.run_id, request, true, "answered by the client")
                        .await;
                    responses.insert(key.clone(), value);
                }
                Err(e) => {
                    let why = format!(
                        "the client did not answer {}: {}",
                        kind(request),
                        short(&e.message)
                    );
                    self.record(&client.run_id, request, false, &why).await;
                    if client.cancel.is_cancelled() {
                        return Err(Unanswered::Cancelled);
                    }
                    return Err(Unanswered::Refused(why));
                }
            }
        }
        Ok(responses)
    }
}

/// Why a client's answers did not come.
#[derive(Debug)]
pub(super) enum Unanswered {
    /// The client cancelled its call meanwhile.
    Cancelled,
    /// The client could not or would not answer, and why.
    Refused(String),
}

/// One request asked of the client as a relay is, and its answer as JSON.
async fn relayed<T: serde::Serialize>(
    client: &ClientContext,
    make: impl FnOnce(Reply<T>) -> Relay,
) -> Result<serde_json::Value, rmcp::ErrorData> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    // Nobody upstream cancels it: the upstream's request already ended with its questions.
    let relay = make(Reply::new(tx, CancellationToken::new()));
    perform(Some(client), relay).await;
    rx.await
        .unwrap_or_else(|_| Err(rmcp::ErrorData::internal_error("no answer", None)))
        .map(|answer| serde_json::to_value(answer).unwrap_or_default())
}

/// A tool error result saying why a call could not finish.
pub(super) fn error_result(message: String) -> CallToolResult {
    let mut r = CallToolResult::error(vec![rmcp::model::ContentBlock::text(message)]);
    r.is_error = Some(true);
    r
}
