//! The calling client's side of a call (XPORT-4): where what an upstream sends while the call
//! runs — progress, log messages, elicitation and sampling requests — goes, and the client's
//! cancellation.
//!
//! The handler builds a [`ClientContext`] for every `tools/call` and it travels with the call
//! as a value: in the pipeline's request, to the execution, to the upstream's exit. Relays are
//! performed by the call's own task, so that on Streamable HTTP they ride the stream of the
//! request that caused them.

// Sampling and logging are deprecated for the 2026 protocol but still part of 2025-11-25,
// which most clients and servers speak.
#![allow(deprecated, reason = "relaying 2025-11-25 sampling and logging")]

use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientResult, CreateMessageRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequest, ElicitRequestParams,
    ElicitResult, InputResponses, ListRootsRequest, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The calling client's side of one call.
#[derive(Clone, Debug)]
pub struct ClientContext {
    /// The client.
    pub peer: Peer<RoleServer>,
    /// The client's progress token for this call, if it asked for progress.
    pub progress_token: Option<ProgressToken>,
    /// Fires when the client cancels the call.
    pub cancel: CancellationToken,
    /// The run, for the audit trail of relays.
    pub run_id: String,
    /// Who calls: the credential and the agent route. A call an upstream suspended for this
    /// client's input resumes only for the same caller.
    pub caller: std::sync::Arc<str>,
    /// The client's era: a 2026-07-28 client takes `input_required` results and cannot be sent
    /// server-to-client requests.
    pub era: crate::era::Era,
    /// The client's answers to an earlier `input_required` result (2026-07-28 retry).
    pub retry: Option<Retry>,
    /// The least severe log message the client hears from this call: a 2026-07-28 client's
    /// `_meta` log level (none asked, none sent), a 2025-11-25 session's `logging/setLevel`
    /// (everything until it sets one, as from a 2025-11-25 server). A 2026-07-28 upstream is
    /// asked for exactly this level.
    pub log_level: Option<LoggingLevel>,
    /// The client's capabilities (its `initialize`, or the request's `_meta`): a 2026-07-28
    /// upstream is told these, narrowed by its relay policy, so that it asks the client only
    /// what the client can answer.
    pub capabilities: Option<ClientCapabilities>,
    /// The caller's own access token, for an upstream that acts as its caller (AUTH-6).
    pub subject: Option<crate::upstream::exchange::SubjectToken>,
    /// The client's W3C trace context, the parent of Warden's span for the call (OPS-3).
    pub trace: Option<crate::trace::TraceContext>,
}

/// How severe a log level is (`debug` 0 … `emergency` 7).
pub fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// A 2026-07-28 retry of a call that needed input: the client's answers and the upstream's
/// opaque state, passed to the upstream as they came.
#[derive(Clone, Debug)]
pub struct Retry {
    /// `inputResponses`.
    pub input_responses: InputResponses,
    /// `requestState`.
    pub request_state: Option<String>,
}

/// Where the answer to an upstream's request goes, and whether the upstream still wants it.
#[derive(Debug)]
pub struct Reply<T> {
    answer: oneshot::Sender<Result<T, rmcp::ErrorData>>,
    /// Fires when the upstream cancels its request.
    cancelled: CancellationToken,
}

impl<T> Reply<T> {
    /// A reply over `answer` to a request the upstream cancels with `cancelled`.
    pub fn new(
        answer: oneshot::Sender<Result<T, rmcp::ErrorData>>,
        cancelled: CancellationToken,
    ) -> Self {
        Self { answer, cancelled }
    }

    /// Answers the upstream (nothing when it stopped waiting).
    pub fn send(self, answer: Result<T, rmcp::ErrorData>) {
        let _ = self.answer.send(answer);
    }

    /// Whether the upstream cancelled its request.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }
}

/// Something an upstream sends during a call, for the calling client.
#[derive(Debug)]
pub enum Relay {
    /// `notifications/progress`.
    Progress(ProgressNotificationParam),
    /// `notifications/message`.
    Log(LoggingMessageNotificationParam),
    /// `elicitation/create`.
    Elicit(ElicitRequestParams, Reply<ElicitResult>),
    /// `sampling/createMessage`.
    Sample(Box<CreateMessageRequestParams>, Reply<CreateMessageResult>),
    /// `roots/list`.
    Roots(Reply<ListRootsResult>),
}

impl Relay {
    /// The client capability a request needs, by its capability name; `None` for a
    /// notification.
    pub fn needs(&self) -> Option<&'static str> {
        match self {
            Relay::Progress(_) | Relay::Log(_) => None,
            Relay::Elicit(..) => Some("elicitation"),
            Relay::Sample(..) => Some("sampling"),
            Relay::Roots(_) => Some("roots"),
        }
    }

    /// Whether this is a request the upstream has cancelled since.
    pub fn is_cancelled(&self) -> bool {
        match self {
            Relay::Progress(_) | Relay::Log(_) => false,
            Relay::Elicit(_, reply) => reply.is_cancelled(),
            Relay::Sample(_, reply) => reply.is_cancelled(),
            Relay::Roots(reply) => reply.is_cancelled(),
        }
    }

    /// Refuses a request (the upstream gets `error`); a notification is dropped.
    pub fn refuse(self, error: rmcp::ErrorData) {
        match self {
            Relay::Progress(_) | Relay::Log(_) => {}
            Relay::Elicit(_, reply) => reply.send(Err(error)),
            Relay::Sample(_, reply) => reply.send(Err(error)),
            Relay::Roots(reply) => reply.send(Err(error)),
        }
    }
}

/// Whether `capabilities` declare `name` (`elicitation`, `sampling`, `roots`).
pub fn declares(capabilities: &ClientCapabilities, name: &str) -> bool {
    match name {
        "elicitation" => capabilities.elicitation.is_some(),
        "sampling" => capabilities.sampling.is_some(),
        "roots" => capabilities.roots.is_some(),
        _ => false,
    }
}

/// Performs a relay on the client side of the call (in the call's own task); with no client
/// attached, notifications are dropped and requests refused, and a request the client did not
/// declare it can answer is refused without asking it. A request the upstream cancels, or
/// whose call the client cancels, before the client answers is cancelled at the client too
/// (`notifications/cancelled`).
pub async fn perform(client: Option<&ClientContext>, relay: Relay) {
    if let (Some(c), Some(needed)) = (client, relay.needs())
        && c.capabilities
            .as_ref()
            .is_some_and(|caps| !declares(caps, needed))
    {
        relay.refuse(rmcp::ErrorData::invalid_request(
            format!("the calling client does not support {needed}"),
            None,
        ));
        return;
    }
    let Some(c) = client else {
        relay.refuse(rmcp::ErrorData::internal_error("no client to ask", None));
        return;
    };
    match relay {
        Relay::Progress(mut p) => {
            if let Some(token) = &c.progress_token {
                p.progress_token = token.clone();
                let _ = c.peer.notify_progress(p).await;
            }
        }
        Relay::Log(l) => {
            if c.log_level
                .is_some_and(|min| severity(l.level) >= severity(min))
            {
                let _ = c.peer.notify_logging_message(l).await;
            }
        }
        Relay::Elicit(params, reply) => {
            let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            let answer = ask(c, request, &reply.cancelled, "the elicitation").await;
            reply.send(answer.and_then(|a| match a {
                ClientResult::ElicitResult(r) => Ok(r),
                _ => Err(unexpected("the elicitation")),
            }));
        }
        Relay::Sample(params, reply) => {
            if let Err(why) = sampleable(c, &params) {
                reply.send(Err(why));
                return;
            }
            let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(*params));
            let answer = ask(c, request, &reply.cancelled, "the sampling request").await;
            reply.send(answer.and_then(|a| match a {
                ClientResult::CreateMessageResult(r) => Ok(*r),
                _ => Err(unexpected("the sampling request")),
            }));
        }
        Relay::Roots(reply) => {
            let request = ServerRequest::ListRootsRequest(ListRootsRequest {
                method: Default::default(),
                extensions: Default::default(),
            });
            let answer = ask(c, request, &reply.cancelled, "roots/list").await;
            reply.send(answer.and_then(|a| match a {
                ClientResult::ListRootsResult(r) => Ok(r),
                _ => Err(unexpected("roots/list")),
            }));
        }
    }
}

/// What rmcp checks of a sampling request before sending it to a client.
fn sampleable(
    c: &ClientContext,
    params: &CreateMessageRequestParams,
) -> Result<(), rmcp::ErrorData> {
    if (params.tools.is_some() || params.tool_choice.is_some()) && !c.peer.supports_sampling_tools()
    {
        return Err(rmcp::ErrorData::invalid_params(
            "tools or toolChoice provided but client does not support sampling tools capability",
            None,
        ));
    }
    params
        .validate()
        .map_err(|e| rmcp::ErrorData::invalid_params(e, None))
}

fn unexpected(what: &str) -> rmcp::ErrorData {
    rmcp::ErrorData::internal_error(
        format!("the client answered {what} with something else"),
        None,
    )
}

/// Sends `request` to the client of `c` and waits for its answer. When the upstream cancels
/// its request (`upstream`) or the client cancels its call first, the client is told that
/// `request` is cancelled, and the answer is an error.
async fn ask(
    c: &ClientContext,
    request: ServerRequest,
    upstream: &CancellationToken,
    what: &str,
) -> Result<ClientResult, rmcp::ErrorData> {
    let failed = |e: rmcp::service::ServiceError| {
        rmcp::ErrorData::internal_error(format!("the client did not answer {what}: {e}"), None)
    };
    if upstream.is_cancelled() || c.cancel.is_cancelled() {
        return Err(rmcp::ErrorData::internal_error("cancelled", None));
    }
    let handle = c
        .peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(failed)?;
    let id = handle.id.clone();
    let why = tokio::select! {
        answer = handle.await_response() => return answer.map_err(failed),
        () = upstream.cancelled() => "cancelled by the upstream",
        () = c.cancel.cancelled() => "the call was cancelled",
    };
    let _ = c
        .peer
        .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(why.into())))
        .await;
    Err(rmcp::ErrorData::internal_error(why, None))
}
