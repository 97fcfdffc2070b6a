//! A 2025-11-25 upstream's questions for a 2026-07-28 client (XPORT-1): the upstream asks by
//! server-to-client request while it works (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`); a 2026-07-28 client takes no requests, only `input_required` results that
//! it answers by retrying. So Warden suspends the request: it stays in flight at the upstream
//! on a task of its own, the client gets `input_required` with the upstream's questions and a
//! `requestState` of Warden's, and its retry answers them and waits for the next questions or
//! the result — as many rounds as the upstream asks.
//!
//! A question the client did not declare it can answer is refused to the upstream, which
//! decides what its call does without the answer (as for a 2025-11-25 client). Questions the
//! upstream sends at once (within [`GATHER`] of each other) travel in one round; one the
//! retry leaves unanswered is asked again.
//!
//! The state is the memory of the process that holds the upstream request, as the upstream's
//! 2025-11-25 session is. A `requestState` is good for one retry of the same call (caller,
//! method, name and arguments) and is replaced every round; an unknown, replayed or foreign
//! one — or one whose call ended, or that reached another replica — is invalid params.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CancelledNotificationParam, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    RequestId, ServerResult,
};
use rmcp::service::{Peer, ServiceError};
use tokio::sync::{mpsc, oneshot};

use super::failure::CallError;
use super::relays::Registration;
use crate::client::{ClientContext, Relay, declares, perform};
use crate::http_client::request_failure;

/// How long after one question the upstream may send another for the same round.
const GATHER: Duration = Duration::from_millis(25);
/// At most this many gathering waits per round.
const GATHER_ROUNDS: usize = 10;
/// How long a finished call's result waits for the retry that collects it.
const KEEP_RESULT: Duration = Duration::from_secs(60);
/// The prefix of Warden's `requestState`s.
const STATE_PREFIX: &str = "warden-suspended-";

/// The upstream's answer to a request in flight.
pub(super) type Response =
    Pin<Box<dyn Future<Output = Result<ServerResult, ServiceError>> + Send + 'static>>;

/// A request in flight at a 2025-11-25 upstream: its answer to come, what the upstream sends
/// meanwhile, and its place in the upstream's table of calls in flight.
pub(super) struct InFlightRequest {
    pub(super) response: Response,
    pub(super) relays: mpsc::Receiver<Relay>,
    pub(super) _registration: Registration,
    pub(super) peer: Peer<RoleClient>,
    pub(super) id: RequestId,
}

impl InFlightRequest {
    /// Tells the upstream the request is cancelled.
    async fn cancel(self, why: &str) {
        let InFlightRequest { peer, id, .. } = self;
        let _ = peer
            .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(why.into())))
            .await;
    }
}

/// What a suspended request is: who asked, and what (`tools/call <name> <arguments hash>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Owner {
    caller: Arc<str>,
    request: String,
}

impl Owner {
    /// `method` of `name` with `arguments`, for `client`'s caller.
    pub(super) fn of(
        client: Option<&ClientContext>,
        method: &str,
        name: &str,
        arguments: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Self {
        Self {
            caller: client.map_or_else(|| Arc::from(""), |c| c.caller.clone()),
            request: format!(
                "{method} {name} {}",
                warden_core::audit::hash_arguments(arguments)
            ),
        }
    }
}

/// What a waiting client gets next.
enum Step {
    /// The upstream's questions, to answer by retrying with this `requestState`.
    Input(InputRequiredResult),
    /// The upstream's answer.
    Done(Box<Result<ServerResult, CallError>>),
    /// Another retry is already answering this `requestState`.
    Busy,
}

enum Resume {
    Answers {
        responses: InputResponses,
        client: Box<ClientContext>,
        reply: oneshot::Sender<Step>,
    },
    Cancel,
}

#[derive(Clone, Debug)]
struct Entry {
    owner: Owner,
    resume: mpsc::Sender<Resume>,
}

/// The suspended requests of one upstream, by their current `requestState`.
#[derive(Debug, Default)]
pub(super) struct Suspensions {
    entries: Mutex<HashMap<String, Entry>>,
}

impl Suspensions {
    /// Suspends `request` on a question for the 2026-07-28 `client` (`first`, a request the
    /// upstream sent): the rest runs on a task of its own. Returns the client's first step.
    pub(super) async fn suspend(
        self: &Arc<Self>,
        request: InFlightRequest,
        first: Relay,
        owner: Owner,
        client: &ClientContext,
    ) -> Result<ServerResult, CallError> {
        let (resume_tx, resume) = mpsc::channel(4);
        let (reply, step) = oneshot::channel();
        let mut driver = Driver {
            table: self.clone(),
            owner,
            resume_tx,
            state: None,
            request: Some(request),
            resume,
            client: client.clone(),
            waiter: Some(reply),
            pending: Vec::new(),
            asked: 0,
            done: None,
        };
        driver.question(first).await;
        let cancel = driver.resume_tx.clone();
        tokio::spawn(driver.run());
        wait(step, client, &cancel).await
    }

    /// A retry: answers the suspended request `state` belongs to with `responses` and waits
    /// for its next step. A 2025-11-25 upstream has no `requestState` of its own, so one that
    /// is not a suspended request of `owner` here is refused.
    pub(super) async fn resume(
        &self,
        state: &str,
        owner: &Owner,
        responses: InputResponses,
        client: &ClientContext,
    ) -> Result<ServerResult, CallError> {
        let entry = self
            .entries
            .lock()
            .ok()
            .and_then(|entries| entries.get(state).cloned());
        let unknown = || {
            Err(CallError::Refused(rmcp::ErrorData::invalid_params(
                "requestState is unknown, expired or belongs to another request; call again without it",
                None,
            )))
        };
        let Some(entry) = entry.filter(|e| &e.owner == owner) else {
            return unknown();
        };
        let (reply, step) = oneshot::channel();
        let answers = Resume::Answers {
            responses,
            client: Box::new(client.clone()),
            reply,
        };
        if entry.resume.send(answers).await.is_err() {
            return unknown();
        }
        wait(step, client, &entry.resume).await
    }

    fn rekey(&self, old: Option<&str>, new: &str, entry: Entry) {
        if let Ok(mut entries) = self.entries.lock() {
            if let Some(old) = old {
                entries.remove(old);
            }
            entries.insert(new.to_owned(), entry);
        }
    }

    fn remove(&self, state: Option<&str>) {
        if let (Some(state), Ok(mut entries)) = (state, self.entries.lock()) {
            entries.remove(state);
        }
    }
}

/// The client's side of a round: its next step, or — when the client goes away — the
/// request cancelled.
async fn wait(
    step: oneshot::Receiver<Step>,
    client: &ClientContext,
    resume: &mpsc::Sender<Resume>,
) -> Result<ServerResult, CallError> {
    let step = tokio::select! {
        step = step => step,
        () = client.cancel.cancelled() => {
            let _ = resume.send(Resume::Cancel).await;
            return Err(CallError::Cancelled);
        }
    };
    match step {
        Ok(Step::Input(needed)) => Ok(ServerResult::InputRequiredResult(needed)),
        Ok(Step::Done(done)) => *done,
        Ok(Step::Busy) => Err(CallError::Refused(rmcp::ErrorData::invalid_request(
            "another request is already answering this requestState",
            None,
        ))),
        Err(_) => Err(CallError::Unreachable(
            "the suspended request ended".to_owned(),
        )),
    }
}

/// A question of the upstream the client has not answered yet.
struct Pending {
    key: String,
    request: InputRequest,
    relay: Relay,
}

/// Drives one suspended request on its own task.
struct Driver {
    table: Arc<Suspensions>,
    owner: Owner,
    resume_tx: mpsc::Sender<Resume>,
    /// The current `requestState`, once the client was given one.
    state: Option<String>,
    /// `None` once the upstream answered (or was told to stop).
    request: Option<InFlightRequest>,
    resume: mpsc::Receiver<Resume>,
    /// The client of the latest round: progress and log messages go to it.
    client: ClientContext,
    /// The client waiting for the next step.
    waiter: Option<oneshot::Sender<Step>>,
    pending: Vec<Pending>,
    asked: usize,
    done: Option<Result<ServerResult, CallError>>,
}

impl Driver {
    async fn run(mut self) {
        loop {
            if self.waiter.is_some() {
                if let Some(done) = self.done.take() {
                    self.reply(Step::Done(Box::new(done)));
                    break;
                }
                // A question the upstream cancelled meanwhile is not asked.
                self.pending.retain(|p| !p.relay.is_cancelled());
                if !self.pending.is_empty() {
                    self.gather().await;
                    self.pending.retain(|p| !p.relay.is_cancelled());
                    self.ask();
                }
            }
            let Some(request) = self.request.as_mut() else {
                // Answered: wait for the retry that collects the result.
                match tokio::time::timeout(KEEP_RESULT, self.resume.recv()).await {
                    Ok(Some(message)) => self.resumed(message),
                    Ok(None) | Err(_) => break,
                }
                continue;
            };
            tokio::select! {
                answer = &mut request.response => {
                    self.done = Some(answer.map_err(failed));
                    self.request = None;
                }
                Some(relay) = request.relays.recv() => self.question(relay).await,
                message = self.resume.recv() => match message {
                    Some(Resume::Cancel) | None => {
                        self.stop("cancelled by the client").await;
                        break;
                    }
                    Some(message) => self.resumed(message),
                },
            }
        }
        self.table.remove(self.state.as_deref());
    }

    /// A relay of the upstream: a notification goes to the client of the latest round; a
    /// question is kept for the next round — or, when the client cannot answer it, refused
    /// to the upstream as for a 2025-11-25 client.
    async fn question(&mut self, relay: Relay) {
        let Some(needed) = relay.needs() else {
            perform(Some(&self.client), relay).await;
            return;
        };
        if self
            .client
            .capabilities
            .as_ref()
            .is_some_and(|caps| !declares(caps, needed))
        {
            perform(Some(&self.client), relay).await;
            return;
        }
        let Some(request) = as_input_request(&relay) else {
            relay.refuse(rmcp::ErrorData::internal_error(
                "the request could not be passed on",
                None,
            ));
            return;
        };
        self.asked += 1;
        self.pending.push(Pending {
            key: format!("{needed}-{}", self.asked),
            request,
            relay,
        });
    }
}

impl Driver {
    /// Questions the upstream sends right after one another travel in one round.
    async fn gather(&mut self) {
        for _ in 0..GATHER_ROUNDS {
            let Some(request) = self.request.as_mut() else {
                return;
            };
            match tokio::time::timeout(GATHER, request.relays.recv()).await {
                Ok(Some(relay)) => self.question(relay).await,
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// Gives the waiting client the questions not yet answered, under a new `requestState`.
    fn ask(&mut self) {
        let state = format!("{STATE_PREFIX}{}", uuid::Uuid::new_v4().simple());
        self.table.rekey(
            self.state.as_deref(),
            &state,
            Entry {
                owner: self.owner.clone(),
                resume: self.resume_tx.clone(),
            },
        );
        self.state = Some(state.clone());
        let requests: InputRequests = self
            .pending
            .iter()
            .map(|p| (p.key.clone(), p.request.clone()))
            .collect();
        self.reply(Step::Input(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )));
    }

    fn reply(&mut self, step: Step) {
        if let Some(waiter) = self.waiter.take() {
            let _ = waiter.send(step);
        }
    }

    /// A retry's answers go to the upstream's questions they name; the others stay asked.
    fn resumed(&mut self, message: Resume) {
        let Resume::Answers {
            responses,
            client,
            reply,
        } = message
        else {
            return;
        };
        if self.waiter.is_some() {
            let _ = reply.send(Step::Busy);
            return;
        }
        let (answered, open): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| responses.contains_key(&p.key));
        self.pending = open;
        for p in answered {
            if let Some(answer) = responses.get(&p.key) {
                answer_with(p.relay, answer.clone());
            }
        }
        self.client = *client;
        self.waiter = Some(reply);
    }

    /// Tells the upstream to stop, refusing what it still asks.
    async fn stop(&mut self, why: &str) {
        for p in self.pending.drain(..) {
            p.relay
                .refuse(rmcp::ErrorData::internal_error("the call ended", None));
        }
        if let Some(request) = self.request.take() {
            request.cancel(why).await;
        }
    }
}

/// A question as an `input_required` request: the same method and parameters.
fn as_input_request(relay: &Relay) -> Option<InputRequest> {
    let (method, params) = match relay {
        Relay::Elicit(params, _) => ("elicitation/create", serde_json::to_value(params).ok()?),
        Relay::Sample(params, _) => ("sampling/createMessage", serde_json::to_value(params).ok()?),
        Relay::Roots(_) => ("roots/list", serde_json::json!({})),
        Relay::Progress(_) | Relay::Log(_) => return None,
    };
    serde_json::from_value(serde_json::json!({"method": method, "params": params})).ok()
}

/// Answers a question of the upstream with the client's response, read as that request's
/// result (a response that is not one is refused to the upstream as invalid).
fn answer_with(relay: Relay, answer: serde_json::Value) {
    fn read<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, rmcp::ErrorData> {
        serde_json::from_value(v).map_err(|e| {
            rmcp::ErrorData::invalid_params(format!("the client's answer does not fit: {e}"), None)
        })
    }
    match relay {
        Relay::Elicit(_, reply) => reply.send(read(answer)),
        Relay::Sample(_, reply) => reply.send(read(answer)),
        Relay::Roots(reply) => reply.send(read(answer)),
        Relay::Progress(_) | Relay::Log(_) => {}
    }
}

/// What a failed upstream answer means for the call.
pub(super) fn failed(e: ServiceError) -> CallError {
    match e {
        // The stdio transport's own answer to a message it could not take.
        ServiceError::McpError(e)
            if e.data
                .as_ref()
                .is_some_and(|d| d.get(super::stdio::TOO_LARGE).is_some()) =>
        {
            CallError::Unreachable(e.message.into_owned())
        }
        ServiceError::McpError(e) => CallError::Refused(e),
        ServiceError::Timeout { .. } => CallError::TimedOut,
        e => CallError::Unreachable(request_failure(&e)),
    }
}
