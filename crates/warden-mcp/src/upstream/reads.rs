//! The read-only requests routed to an upstream — `prompts/get`, `resources/read`,
//! `completion/complete` — in the calling client's era, as a `tools/call` is (XPORT-1,
//! XPORT-4): they leave through the rmcp exit ([`super::peer`]) — a 2025-11-25 client's on
//! the upstream's 2025-11-25 session when it has one ([`super::supervise`]) — so the
//! upstream's progress and log messages reach the client, the client's cancellation reaches
//! the upstream, and what the upstream asks meanwhile is asked in the client's era.
//!
//! An upstream that needs input — a 2026-07-28 `input_required` answer, or a 2025-11-25
//! server-to-client request — is answered as for a tool call: a 2026-07-28 client gets
//! `input_required` (Warden's own `requestState` for a 2025-11-25 upstream, whose request it
//! suspends) and retries; a 2025-11-25 client is asked by Warden, which retries the upstream.
//! `completion/complete` cannot carry questions: a 2026-07-28 client's is refused them.

#![allow(
    deprecated,
    reason = "logging is still part of the 2025-11-25 protocol"
)]

use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, GetPromptRequest,
    GetPromptRequestParams, GetPromptResponse, InputResponses, JsonObject, ReadResourceRequest,
    ReadResourceRequestParams, ReadResourceResponse, RequestMetaObject, ServerResult,
};
use rmcp::service::PeerRequestOptions;

use super::failure::{CallError, short};
use super::input::{Inputs, Unanswered};
use super::relays::{narrowed, offered};
use super::slot::{DEFAULT_CALL_TIMEOUT, LIST_TIMEOUT, MAX_INPUT_ROUNDS, UpstreamSlot};
use super::suspend::Owner;
use crate::client::ClientContext;
use crate::era::Era;

/// A read-only request an upstream may answer with questions for the client first.
#[derive(Clone, Debug)]
enum Asked {
    Prompt(GetPromptRequestParams),
    Resource(ReadResourceRequestParams),
}

impl Asked {
    fn method(&self) -> &'static str {
        match self {
            Asked::Prompt(_) => "prompts/get",
            Asked::Resource(_) => "resources/read",
        }
    }

    /// What it asks for: the prompt's (upstream) name, the resource's URI.
    fn name(&self) -> &str {
        match self {
            Asked::Prompt(p) => &p.name,
            Asked::Resource(r) => &r.uri,
        }
    }

    fn arguments(&self) -> Option<&JsonObject> {
        match self {
            Asked::Prompt(p) => p.arguments.as_ref(),
            Asked::Resource(_) => None,
        }
    }

    fn owner(&self, client: Option<&ClientContext>) -> Owner {
        Owner::of(client, self.method(), self.name(), self.arguments())
    }

    /// Takes the client's answers and state of a retry out of the request.
    fn take_retry(&mut self) -> (Option<InputResponses>, Option<String>) {
        match self {
            Asked::Prompt(p) => (p.input_responses.take(), p.request_state.take()),
            Asked::Resource(r) => (r.input_responses.take(), r.request_state.take()),
        }
    }

    /// Puts answers and the upstream's state into the request, for the next round.
    fn answer(&mut self, responses: Option<InputResponses>, state: Option<String>) {
        match self {
            Asked::Prompt(p) => (p.input_responses, p.request_state) = (responses, state),
            Asked::Resource(r) => (r.input_responses, r.request_state) = (responses, state),
        }
    }

    fn request(&self) -> ClientRequest {
        match self {
            Asked::Prompt(p) => ClientRequest::GetPromptRequest(GetPromptRequest::new(p.clone())),
            Asked::Resource(r) => {
                ClientRequest::ReadResourceRequest(ReadResourceRequest::new(r.clone()))
            }
        }
    }
}

impl UpstreamSlot {
    /// Gets a prompt by the upstream's own name (read-only federation), for `client`.
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<GetPromptResponse, rmcp::ErrorData> {
        match self.ask(Asked::Prompt(params), client).await? {
            ServerResult::GetPromptResult(mut result) => {
                crate::wire::mark_complete(&mut result.result_type);
                Ok(GetPromptResponse::Complete(result))
            }
            ServerResult::InputRequiredResult(needed) => {
                Ok(GetPromptResponse::InputRequired(needed))
            }
            _ => Err(self.something_else("prompts/get")),
        }
    }

    /// Reads a resource of this upstream (read-only federation), for `client`.
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<ReadResourceResponse, rmcp::ErrorData> {
        match self.ask(Asked::Resource(params), client).await? {
            ServerResult::ReadResourceResult(mut result) => {
                crate::wire::mark_complete(&mut result.result_type);
                Ok(ReadResourceResponse::Complete(result))
            }
            ServerResult::InputRequiredResult(needed) => {
                Ok(ReadResourceResponse::InputRequired(needed))
            }
            _ => Err(self.something_else("resources/read")),
        }
    }

    /// `completion/complete` for one of this upstream's prompts or resource templates, for
    /// `client` (its progress, log messages and cancellation; no questions for a 2026-07-28
    /// client, which a completion cannot carry).
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
        client: Option<&ClientContext>,
    ) -> Result<CompleteResult, rmcp::ErrorData> {
        let (exit, era) = self.rmcp_route(client)?;
        let mut options = PeerRequestOptions::with_timeout(LIST_TIMEOUT);
        options.meta = self.told(client, era);
        let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
        let no_suspension: Option<fn() -> Owner> = None;
        match exit.request(request, options, client, no_suspension).await {
            Ok(ServerResult::CompleteResult(mut result)) => {
                crate::wire::mark_complete(&mut result.result_type);
                Ok(result)
            }
            Ok(_) => Err(self.something_else("completion/complete")),
            Err(e) => Err(self.request_error(e)),
        }
    }

    /// One read-only request and its input rounds: the upstream's final answer, or the
    /// `input_required` result for a 2026-07-28 client.
    async fn ask(
        &self,
        mut asked: Asked,
        client: Option<&ClientContext>,
    ) -> Result<ServerResult, rmcp::ErrorData> {
        let (exit, era) = self.rmcp_route(client)?;
        let timeout = self.spec.timeout.unwrap_or(DEFAULT_CALL_TIMEOUT);
        let modern = era == Era::V2026_07_28;
        let policy = self.spec.relay.clone().unwrap_or_default();
        let inputs = Inputs {
            upstream: self.spec.name.as_str(),
            policy: &policy,
            log: self.log.as_ref(),
        };
        // A retry: a 2026-07-28 upstream reads the answers itself; a 2025-11-25 upstream's
        // request is suspended here, waiting for them.
        let (responses, state) = asked.take_retry();
        let mut resumed = None;
        if modern {
            asked.answer(responses, state);
        } else if let (Some(c), Some(state)) = (client, state) {
            let owner = asked.owner(client);
            let responses = responses.unwrap_or_default();
            resumed = Some(self.suspended.resume(&state, &owner, responses, c).await);
        }
        let run_id = client.map_or("", |c| c.run_id.as_str());
        for _ in 0..MAX_INPUT_ROUNDS {
            let answer = match resumed.take() {
                Some(answer) => answer,
                None => {
                    let mut options = PeerRequestOptions::with_timeout(timeout);
                    options.meta = self.told(client, era);
                    let owner = || asked.owner(client);
                    exit.request(asked.request(), options, client, Some(owner))
                        .await
                }
            };
            let needed = match answer.map_err(|e| self.request_error(e))? {
                ServerResult::InputRequiredResult(needed) => needed,
                done => return Ok(done),
            };
            // A 2025-11-25 upstream's questions, suspended for a 2026-07-28 client: the relay
            // policy was applied (and recorded) when the upstream asked them.
            if !modern {
                return Ok(ServerResult::InputRequiredResult(needed));
            }
            if let Some(why) = inputs.refused(&needed, run_id).await {
                return Err(rmcp::ErrorData::invalid_request(why, None));
            }
            // A 2026-07-28 client answers itself; a 2025-11-25 client is asked by Warden.
            let Some(c) = client.filter(|c| c.era == Era::V2025_11_25) else {
                inputs.passed_on(&needed, run_id).await;
                return Ok(ServerResult::InputRequiredResult(needed));
            };
            let responses = inputs.ask(c, &needed).await.map_err(|e| match e {
                Unanswered::Cancelled => rmcp::ErrorData::internal_error("cancelled", None),
                Unanswered::Refused(why) => rmcp::ErrorData::internal_error(why, None),
            })?;
            asked.answer(Some(responses), needed.request_state);
        }
        Err(rmcp::ErrorData::internal_error(
            format!(
                "upstream `{}` still needed input after {MAX_INPUT_ROUNDS} rounds",
                self.spec.name
            ),
            None,
        ))
    }

    /// What Warden tells the upstream for one request of `client`: the client's capabilities
    /// narrowed by the relay policy (when they differ from what Warden offers on its own
    /// behalf), and to an upstream in 2026-07-28 (`era`) the level to log at.
    fn told(&self, client: Option<&ClientContext>, era: Era) -> Option<RequestMetaObject> {
        let c = client?;
        let mut meta = RequestMetaObject::default();
        if let Some(level) = c.log_level.filter(|_| era == Era::V2026_07_28) {
            meta.set_log_level(level);
        }
        if let Some(capabilities) = &c.capabilities {
            let policy = self.spec.relay.clone().unwrap_or_default();
            let told = narrowed(capabilities, &policy);
            if told != offered(&policy) {
                meta.set_client_capabilities(told);
            }
        }
        (!meta.is_empty()).then_some(meta)
    }

    fn something_else(&self, method: &str) -> rmcp::ErrorData {
        rmcp::ErrorData::internal_error(
            format!(
                "upstream `{}` answered {method} with something else",
                self.spec.name
            ),
            None,
        )
    }

    /// A failed request as the client's JSON-RPC error: the upstream's own, or one naming the
    /// upstream.
    fn request_error(&self, e: CallError) -> rmcp::ErrorData {
        let name = &self.spec.name;
        match e {
            CallError::Refused(error) => error,
            CallError::Unreachable(why) => rmcp::ErrorData::internal_error(
                format!("upstream `{name}` is unavailable: {}", short(&why)),
                None,
            ),
            CallError::TimedOut => {
                rmcp::ErrorData::internal_error(format!("upstream `{name}` did not answer"), None)
            }
            CallError::Cancelled => rmcp::ErrorData::internal_error("cancelled", None),
        }
    }
}
